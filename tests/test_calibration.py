"""The calibrated roofline: its pricing against closed forms, its fit, and a real sweep.

Pricing is checked on a hand-made device, so every expected time is a formula; the sweep of
real numpy ops is checked for what holds on any machine (every op measured, every time
positive), never for a time.
"""

from __future__ import annotations

import functools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfmodel import ops
from perfmodel.hardware import Device
from perfmodel.measure import calibration as cal
from perfmodel.measure import empirical
from perfmodel.measure.comparison import Comparison
from perfmodel.measure.held_out import held_out_ops, predict_vs_measure
from perfmodel.measure.microbench import KernelResult
from perfmodel.measure.timing import Measurement

TOY = Device(
    name="toy",
    kind="cpu",
    peak_flops_by_dtype={"fp64": 1e11},
    memory_bandwidth=2e10,
    measured_flops_by_dtype={"fp64": 5e10},
    measured_memory_bandwidth=2e10,
    measured_source="hand-made",
    memory_levels={"L1": 4e11, "L2": 2e11, "DRAM": 1e10},
    source="hand-made",
)
CALIBRATION = cal.Calibration(
    TOY,
    overhead_s=1e-6,
    blas_overhead_s=3e-6,
    vector_flops=4e9,
    exp_rate=1e8,
    caches=(("L1", 32 * 1024), ("L2", 1024 * 1024)),
)


def test_each_call_is_overhead_plus_the_slower_of_its_two_roofs():
    add = cal.Call(ops.elementwise(10_000, inputs=2, dtype="fp64"), "vector", 240_000)
    assert CALIBRATION.level(240_000) == ("L2", 2e11)
    assert CALIBRATION.call_time(add) == pytest.approx(1e-6 + max(1e4 / 4e9, 240_000 / 2e11))
    big = ops.matmul(512, 512, 512, dtype="fp64")
    gemm = cal.Call(big, "matrix", int(big.bytes))
    assert CALIBRATION.call_time(gemm) == pytest.approx(3e-6 + 2 * 512**3 / 5e10)
    exp = cal.Call(ops.elementwise(1000, dtype="fp64"), "exp", 16_000)
    assert CALIBRATION.call_time(exp) == pytest.approx(1e-6 + 1000 / 1e8)
    assert CALIBRATION.bound([exp]) == "compute (exp)"
    assert CALIBRATION.bound([cal.Call(ops.elementwise(1, dtype="fp64"), "vector", 16)]) == (
        "overhead"
    )


def test_main_memory_is_one_cores_for_numpy_loops_and_the_machines_for_blas():
    assert CALIBRATION.level(10**9, "vector") == ("DRAM", 1e10)
    assert CALIBRATION.level(10**9, "matrix") == ("DRAM", 2e10)


@given(st.integers(0, 10**10), st.integers(0, 10**10))
def test_a_bigger_footprint_is_never_served_faster(small, large):
    small, large = sorted((small, large))
    assert CALIBRATION.level(small)[1] >= CALIBRATION.level(large)[1]


def test_a_sequence_costs_the_sum_of_its_calls():
    calls = [cal.Call(ops.elementwise(n, dtype="fp64"), "vector", 16 * n) for n in (10, 10**6)]
    assert CALIBRATION.predict(calls) == pytest.approx(sum(map(CALIBRATION.call_time, calls)))


def _tiny(n: int, seconds: float) -> KernelResult:
    cost = ops.elementwise(n, inputs=2, dtype="fp64")
    return KernelResult(
        cost, Measurement(samples_s=[seconds], inner_loops=1), "tiny", f"add of {n}"
    )


@given(
    st.floats(1e-7, 1e-5),
    st.floats(1e-11, 1e-8),
    st.lists(st.integers(1, 100_000), min_size=2, max_size=6, unique=True),
)
def test_the_overhead_fit_recovers_a_line(overhead, per_element, sizes):
    fitted, slope = cal.fit_overhead([_tiny(n, overhead + per_element * n) for n in sizes])
    assert fitted == pytest.approx(overhead, rel=1e-6, abs=1e-12)
    assert slope == pytest.approx(per_element, rel=1e-6)


def test_the_overhead_fit_needs_two_sizes():
    with pytest.raises(ValueError, match="at least two sizes"):
        cal.fit_overhead([_tiny(8, 1e-6), _tiny(8, 2e-6)])


def test_every_held_out_op_prices_at_least_its_one_pass_work():
    cases = held_out_ops(quick=True)
    names = " ".join(case.name for case in cases)
    for op in ("matvec", "matmul", "softmax", "layer norm", "conv", "unfused", "fused", "add"):
        assert op in names
    for case in cases:
        flops = sum(call.cost.flops for call in case.calls)
        # numpy does the counted work (its layer norm reuses the centred values: 7 FLOPs per
        # element of the 8 that ops.layer_norm counts)
        assert 0.85 <= flops / case.cost.flops <= 1.0 + 1e-9, case.name
    chains = {case.name.split(",")[1].strip(): case for case in cases if "chain" in case.name}
    assert chains["fused"].cost.bytes == chains["unfused"].cost.bytes / 4


def test_the_numpy_ops_compute_what_they_claim():
    import numpy as np

    cases = {case.name.split()[0]: case for case in held_out_ops(quick=True)}
    assert cases["softmax"].run() is None  # it writes into its own buffer
    conv = cases["conv"].run()
    assert conv.shape == (1, 46, 46, 32) and np.isfinite(conv).all()


@functools.cache
def comparison() -> Comparison:
    profile = empirical.profile_machine(quick=True, progress=False)
    return predict_vs_measure(cal.calibrate(profile), progress=False, repeats=2, min_time_s=0.0)


@pytest.mark.slow  # seconds of solver or measurement: make test, not test-fast
def test_the_sweep_measures_every_op_and_predicts_each():
    result = comparison()
    assert len(result.rows) == len(held_out_ops(quick=True))
    for row in result.rows:
        assert row.measured_s > 0 and row.predicted_s >= row.roofline_s > 0
        assert row.ratio == pytest.approx(row.measured_s / row.predicted_s)
    # overhead, passes, units and caches bring the model far closer than one pass at the
    # roof (lecture 04's estimate misses softmax, tiny ops and the fused loop by 5-200x)
    assert result.median_abs_error < result.roofline_median_abs_error
    assert result.calibration.overhead_s >= 0 and result.calibration.exp_rate > 0


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: cal.Call("matmul"), TypeError, "`cost` must be an ops.Cost"),
        (lambda: cal.Call(ops.reduction(4), "gpu"), ValueError, "`unit` must be one of"),
        (lambda: CALIBRATION.level(-1), ValueError, "`footprint` must be"),
        (lambda: cal.calibrate(TOY), TypeError, "`profile` must be a MachineProfile"),
        (lambda: predict_vs_measure(TOY), TypeError, "`calibration` must be a Calibration"),
        (lambda: predict_vs_measure(CALIBRATION, []), ValueError, "at least one Case"),
        (
            lambda: cal.Calibration(TOY, -1.0, 0.0, 1e9, 1e8, ()),
            ValueError,
            "`overhead_s` must be",
        ),
    ],
)
def test_bad_arguments_are_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_a_broadcast_call_runs_at_its_own_rate_or_the_vector_one():
    import dataclasses

    subtract = cal.Call(ops.elementwise(10**6, dtype="fp64"), "broadcast", 16 * 10**6)
    slow = dataclasses.replace(CALIBRATION, broadcast_flops=1e9)
    assert slow.call_time(subtract) == pytest.approx(1e-6 + max(1e6 / 1e9, 16e6 / 1e10))
    assert CALIBRATION.rate("broadcast") == CALIBRATION.rate("vector") == 4e9


def test_bigger_matmuls_are_priced_at_the_rate_measured_near_their_size():
    import dataclasses

    sized = dataclasses.replace(CALIBRATION, matrix_rates=((1e6, 1e10), (1e9, 4e10)))
    assert sized.rate("matrix", 1e6) == 1e10 and sized.rate("matrix", 1e9) == 4e10
    assert sized.rate("matrix", 10**7.5) == pytest.approx(2.5e10)  # halfway in log FLOPs
    assert sized.rate("matrix", 10) == 1e10 and sized.rate("matrix", 1e15) == 4e10  # clamped


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: CALIBRATION.bound([]), ValueError,
         "`calls` must hold at least one Call (got none)"),
        (lambda: CALIBRATION.rate("matrix", -1e9), ValueError,
         "`flops` must be a non-negative number (got -1000000000.0)"),
        (lambda: CALIBRATION.rate("vector", float("nan")), ValueError,
         "`flops` must be a non-negative number (got nan)"),
        (lambda: CALIBRATION.rate("matrix", "1e9"), TypeError,
         "`flops` must be a number (got str '1e9')"),
    ],
)  # fmt: skip
def test_bound_and_rate_refuse_bad_input(call, error, message):
    import re

    with pytest.raises(error, match=re.escape(message)):
        call()


def test_a_negative_size_no_longer_reads_the_largest_matmuls_rate():
    import dataclasses

    sized = dataclasses.replace(CALIBRATION, matrix_rates=((1e6, 1e10), (1e9, 4e10)))
    with pytest.raises(ValueError, match="`flops`"):
        sized.rate("matrix", -5)  # read 4e10, the largest matmul's rate
    assert sized.rate("matrix", 0) == 1e10 and sized.rate("matrix") == 4e10
