"""Results a person can read, and inputs as people type them.

Every result type a lecture or the README prints has a repr under one screen that shows its
headline numbers with their units, while the full data stay in its fields. A count takes a
whole-number float (``7e9``, ``4.0``) and refuses a fractional one with a ValueError naming
the argument; a sequence may be a numpy array; names match by case and by a unique prefix,
and an ambiguous prefix lists every match; an overloaded simulation and speedups given to
``fit_amdahl`` warn.
"""

from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from perfmodel import comms, distributed, hardware, ops, roofline, scaling, serving
from perfmodel import pipeline as pl
from perfmodel.serving.server import LoadTest

#: One screen, with room to spare over the 1 kB aim.
SCREEN = 1200


def readable(result: object, *needles: str) -> str:
    """``result``'s repr, checked to be short and to hold each needle (a regex)."""
    shown = repr(result)
    assert len(shown) < SCREEN, f"{len(shown)} characters: {shown[:300]}..."
    for needle in needles:
        assert re.search(needle, shown), f"{needle!r} not in {shown}"
    return shown


# --- reprs ------------------------------------------------------------------------------------


def test_a_simulation_shows_its_percentiles_and_utilization_not_every_request():
    run = serving.simulate(80, 0.010, 1, requests=20_000, seed=0)
    shown = readable(run, r"p50=[\d.]+ ms", r"p99=[\d.]+ ms", r"utilization=[\d.]+%",
                     r"requests=20,000", r"throughput=[\d.]+ requests/s")  # fmt: skip
    assert f"p99={run.p99_latency_s * 1e3:.3g} ms" in shown  # the number itself, rounded
    assert f"utilization={run.utilization:.1%}" in shown
    assert len(run.arrivals) == 20_000 and len(run.latencies) == 18_000  # the data stay


def test_a_replicated_run_shows_means_with_their_interval():
    runs = serving.simulate(80, 0.010, 1, requests=5_000, seed=0, replications=5)
    shown = readable(runs, r"runs=5", r"p50=[\d.]+ ms \([\d.]+ ms to [\d.]+ ms\)",
                     r"p99=[\d.]+ ms \([\d.]+ ms to [\d.]+ ms\)",
                     r"utilization=[\d.]+%")  # fmt: skip
    low, high = runs.interval("p99_latency_s")
    assert f"({low * 1e3:.3g} ms to {high * 1e3:.3g} ms)" in shown
    assert len(runs.runs) == 5 and all(len(r.arrivals) == 5_000 for r in runs.runs)


def test_a_load_test_shows_its_percentiles():
    arrivals = np.arange(100) * 0.01
    test = LoadTest(arrivals, arrivals, arrivals + 0.002, tuple([1] * 100), 100.0)
    readable(test, r"p50=2 ms", r"p99=2 ms", r"offered_rate=100 requests/s", r"requests=100")


def test_an_estimate_shows_its_time_and_bound():
    big = ops.matmul(8192, 8192, 8192, dtype="bf16")
    estimate = roofline.estimate(big, "H100 SXM", ceiling="measured")
    readable(estimate, r"time=1\.38 ms", r"bound='compute'", r"memory=163 µs",
             r"achieved=794 TFLOP/s", r"device='H100 SXM'")  # fmt: skip
    small = roofline.estimate(ops.matvec(4096, 4096, dtype="bf16"), "H100 SXM")
    readable(small, r"bound='memory'", r"time=[\d.]+ µs")
    sequence = roofline.estimate_sequence([big, ops.matvec(4096, 4096, dtype="bf16")], "H100 SXM")
    readable(sequence, r"steps=2", r"time=[\d.]+ ms", r"largest='matmul 8192x8192x8192'")


def test_training_memory_shows_gib_not_raw_bytes():
    memory = distributed.training_memory(7_000_000_000)
    shown = readable(memory, r"total=104\.3 GiB", r"weights=13\.0 GiB", r"optimizer=78\.2 GiB")
    assert "e+" not in shown and "000000" not in shown
    assert memory.total == 7e9 * 16  # bytes, in the field


def test_a_fit_shows_its_fraction_interval_and_doubt():
    fit = scaling.fit_amdahl([1, 2, 4, 8], [10 * (0.1 + 0.9 / p) for p in (1, 2, 4, 8)])
    readable(fit, r"alpha=0\.900", r"T1=10", r"doubt=''")
    doubtful = scaling.fit_amdahl([1, 2], [2.0, 2.6])
    readable(doubtful, r"alpha=0\.000", r"doubt='the best fit puts the parallel fraction")


def test_catalogue_entries_show_their_numbers_not_their_sources():
    readable(hardware.get("H100 SXM"), r"bf16 990 TFLOP/s", r"memory_bandwidth=3\.35 TB/s",
             r"memory_capacity=80 GB")  # fmt: skip
    assert "https://" not in repr(hardware.get("H100 SXM"))
    readable(hardware.get_link("NVLink 4"), r"bandwidth=450 GB/s", r"latency=1 µs")


# --- counts -----------------------------------------------------------------------------------


def test_a_whole_number_float_is_a_count():
    assert distributed.training_memory(7e9) == distributed.training_memory(7_000_000_000)
    assert comms.allreduce_time(1e9, 8.0, "NVLink 4") == comms.allreduce_time(1e9, 8, "NVLink 4")
    four = serving.simulate(300, 0.010, 4.0, requests=500, seed=0)
    assert four.workers == 4 and isinstance(four.workers, int)
    assert ops.matmul(np.float64(64.0), 64, 64) == ops.matmul(64, 64, 64)


@pytest.mark.parametrize(
    ("call", "argument", "given"),
    [
        (lambda: distributed.training_memory(7.5e9 + 0.5), "model", "7500000000.5"),
        (lambda: serving.simulate(1.0, 0.1, 4.5, requests=100), "workers", "4.5"),
        (lambda: comms.allreduce_time(1e9, 7.5, "NVLink 4"), "p", "7.5"),
        (lambda: ops.matmul(4, np.float64(4.25), 4), "k", "4.25"),
        (lambda: ops.matvec(float("nan"), 4), "m", "nan"),
    ],
)
def test_a_fractional_count_is_a_value_error_naming_it(call, argument, given):
    with pytest.raises(ValueError) as caught:
        call()
    assert str(caught.value) == f"`{argument}` must be an integer (got {given})."


def test_a_string_is_still_not_a_count():
    with pytest.raises(TypeError, match=r"`workers` must be an integer \(got str '4'\)"):
        serving.simulate(1.0, 0.1, "4", requests=100)


# --- sequences --------------------------------------------------------------------------------


def test_numpy_arrays_are_sequences():
    p = np.array([1, 2, 4, 8])
    times = 10 * (0.1 + 0.9 / p)
    from_array = scaling.fit_amdahl(p, times)
    from_list = scaling.fit_amdahl(p.tolist(), times.tolist())
    assert from_array == from_list and from_array.value == pytest.approx(0.9)
    speedups = scaling.amdahl_speedup(0.9, p)
    assert isinstance(speedups, np.ndarray)
    assert speedups.tolist() == [scaling.amdahl_speedup(0.9, int(n)) for n in p]
    assert scaling.gustafson_speedup(0.25, [1, 4]).tolist() == [1.0, 3.25]
    assert scaling.amdahl_speedup(np.float64(0.8), np.int64(4)) == 2.5
    assert pl.simulate(np.array([1.0, 2.0]), 4).makespan == pl.simulate([1.0, 2.0], 4).makespan
    fit = comms.fit_alpha_beta(np.array([8.0, 1e6, 1e8]), np.array([1e-5, 1e-3, 1e-1]), ranks=2)
    assert fit.bandwidth > 0


def test_a_bad_array_is_a_clear_error():
    with pytest.raises(ValueError, match=r"`processors` must be a 1-D sequence of numbers"):
        scaling.fit_amdahl(np.ones((2, 2)), [1.0, 2.0])
    with pytest.raises(ValueError, match=r"`p\[1\]` must be a number of processors >= 1"):
        scaling.amdahl_speedup(0.9, np.array([2.0, 0.5]))
    with pytest.raises(TypeError, match=r"`times` must be a sequence of numbers"):
        scaling.fit_amdahl([1, 2], "1,2")


# --- names ------------------------------------------------------------------------------------


def test_an_ambiguous_prefix_lists_every_match():
    with pytest.raises(ValueError) as caught:
        hardware.get("A100")
    message = str(caught.value)
    assert "'A100 SXM4 40GB', 'A100 SXM4 80GB'" in message and "`name`" in message
    assert "'A10'" not in message and "H100" not in message and "B200" not in message
    with pytest.raises(ValueError, match="'InfiniBand FDR', 'InfiniBand HDR', 'InfiniBand NDR'"):
        hardware.get_link("IB")


def test_a_unique_prefix_or_an_abbreviation_finds_the_entry():
    assert hardware.get("mi300").name == "MI300X"
    assert hardware.get("a100 sxm4 80").name == "A100 SXM4 80GB"
    assert hardware.get_link("IB NDR").name == "InfiniBand NDR"
    assert hardware.get_link("ib-hdr").name == "InfiniBand HDR"
    with pytest.raises(ValueError, match="no device named 'H101'"):
        hardware.get("H101")
    with pytest.raises(ValueError, match="no device named ''"):
        hardware.get("")


def test_choices_ignore_case():
    assert distributed.training_memory(7e9, optimizer="AdamW") == distributed.training_memory(7e9)
    assert distributed.training_memory(7e9, optimizer="SGD", precision="FP32").optimizer == 28e9
    ring = comms.allreduce_time(1e9, 8, "NVLink 4", algorithm="Ring")
    assert ring == comms.allreduce_time(1e9, 8, "NVLink 4", algorithm="ring")
    assert (
        roofline.estimate(ops.matvec(8, 8), "H100 SXM", ceiling="Nameplate").ceiling == "nameplate"
    )
    with pytest.raises(ValueError, match=r"`algorithm` must be one of 'ring', 'tree'"):
        comms.allreduce_time(1e9, 8, "NVLink 4", algorithm="rings")
    with pytest.raises(ValueError, match=r"`optimizer` must be one of 'adam', 'sgd'"):
        distributed.training_memory(7e9, optimizer="lion")


# --- warnings ---------------------------------------------------------------------------------


def test_an_overloaded_simulation_warns():
    with pytest.warns(serving.OverloadWarning, match=r"1\.25 times what 1 worker\(s\) can serve"):
        serving.simulate(125, 0.010, 1, requests=500, seed=0)
    assert issubclass(serving.OverloadWarning, UserWarning)
    batched = serving.linear_batch_time(0.008, 0.002)  # 10 ms alone, 24 ms for 8: 333/s
    with pytest.warns(serving.OverloadWarning, match=r"at batches of 8"):
        serving.simulate(400, 0.010, 1, batch_time=batched, max_batch=8, requests=500, seed=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # below capacity: silent
        serving.simulate(300, 0.010, 1, batch_time=batched, max_batch=8, requests=500, seed=0)
        serving.simulate(95, 0.010, 1, requests=500, seed=0)
    trace = np.arange(200) * 0.005  # 200 requests/s on a worker that serves 100
    with pytest.warns(serving.OverloadWarning, match=r"2\.00 times"):
        serving.simulate(1.0, 0.010, 1, arrivals=trace.tolist())


def test_speedups_given_as_times_warn():
    p = [1, 2, 4, 8]
    speedups = [scaling.amdahl_speedup(0.9, n) for n in p]
    with pytest.warns(UserWarning, match=r"`times` look like speedups") as caught:
        fit = scaling.fit_amdahl(p, speedups)
    assert caught[0].filename == __file__  # it points at the caller's line
    assert fit.value == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # times, or 1 / speedup, are silent
        assert scaling.fit_amdahl(p, [1 / s for s in speedups]).value == pytest.approx(0.9)
        scaling.fit_amdahl([1, 2], [2.0, 2.6])  # a slowdown in seconds is not a speedup
        scaling.fit_amdahl([1, 2], [1.0, 1.37])  # two counts cannot tell a slowdown from one


def test_a_data_parallel_step_a_link_fit_and_a_pipeline_schedule_show_their_times():
    from perfmodel.transformer import preset

    step = distributed.data_parallel_step(preset("Llama 2 7B"), batch_per_device=1, seq_len=2048,
                                          devices=64, gpus_per_node=8, device="H100 SXM",
                                          link="IB NDR", intra_link="NVLink 4")  # fmt: skip
    readable(step, r"step=[\d.]+ ms", r"communication=[\d.]+ ms", r"efficiency=[\d.]+%",
             r"memory=[\d.]+ GiB")  # fmt: skip
    fit = comms.fit_alpha_beta([8.0, 1e6, 1e8], [1e-5, 1e-3, 1e-1], ranks=2)
    readable(fit, r"latency=5 µs", r"bandwidth=1\.01 GB/s", r"points=3")
    schedule = pl.simulate([1.0, 2.0] * 50, 64)  # 100 stages: the start and end tables are long
    readable(schedule, r"stages=100", r"micro_batches=64", r"makespan=[\d.]+ s", r"bubble=[\d.]+%")
    assert len(schedule.end) == 100 and len(schedule.end[0]) == 64
