"""Thread-pool numpy: the parallel versions compute exactly what the serial ones do, and the
scaling sweeps measure every point they promise (never a time)."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfmodel.measure import parallel

QUICK = {"repeats": 2, "min_time_s": 0.0, "min_sample_s": 1e-4}


@given(st.integers(1, 5000), st.integers(1, 8))
def test_the_blocked_scan_is_a_prefix_sum(n, threads):
    x = np.random.default_rng(n).integers(-5, 5, n).astype(float)
    out = np.empty_like(x)
    parallel.parallel_cumsum(x, out, threads=threads)
    assert np.array_equal(out, np.cumsum(x))  # integers in floats: exact in any order


@given(st.integers(1, 5000), st.integers(1, 8))
def test_a_sliced_ufunc_is_the_ufunc(n, threads):
    x = np.linspace(-3, 3, n)
    out = np.empty_like(x)
    parallel.parallel_apply(np.sin, x, out, threads=threads)
    assert np.array_equal(out, np.sin(x))


def test_branches_return_in_order_either_way():
    branches = [lambda i=i: i * i for i in range(4)]
    assert parallel.run_branches(branches, concurrent=True) == [0, 1, 4, 9]
    assert parallel.run_branches(branches, concurrent=False) == [0, 1, 4, 9]


def test_the_operation_sweep_has_every_point_and_speedup_one_on_one_thread():
    points = parallel.operation_scaling([500, 5000], [2], progress=False, **QUICK)
    assert {(p.operation, p.n, p.threads) for p in points} == {
        (op, n, t) for op in ("sin", "cumsum") for n in (500, 5000) for t in (1, 2)
    }
    assert all(p.speedup == 1 for p in points if p.threads == 1)
    assert all(p.measurement.threads == p.threads for p in points)


def test_the_branch_sweep_times_both_ways():
    (point,) = parallel.branch_scaling([24], progress=False, **QUICK)
    assert point.n == 24 and point.concurrent.threads == 2
    assert point.speedup == point.sequential.minimum_s / point.concurrent.minimum_s


def test_a_scaling_run_keeps_every_sample_for_the_fits():
    from perfmodel import scaling

    run = parallel.measure_scaling(parallel.elementwise_work(20_000), [2], progress=False, **QUICK)
    assert set(run.processors) == {1, 2} and len(run.times) == len(run.processors)
    fit = scaling.fit_amdahl(run.processors, run.times)
    assert 0 <= fit.value <= 1 and fit.points == len(run.times)
    weak = parallel.measure_scaling(
        parallel.matmul_work(32, weak=True), [2], progress=False, **QUICK
    )
    processors, speedups = weak.scaled_points()
    assert set(processors) == {2} and len(speedups) == len(weak.measurements[1].samples_s)
    assert weak.scaled_speedup(2) == statistics.median(speedups)  # what fit_gustafson sees


def test_the_three_serial_bottlenecks_run_on_any_thread_count(tmp_path):
    path = tmp_path / "x.npy"
    makers = {
        "io": parallel.io_then_compute_work(10_000, str(path)),
        "lock": parallel.locked_work(10_000, held=0.5),
        "memory": parallel.memory_bound_work(10_000),
    }
    assert path.exists()  # the I/O workload reads a real file
    for make in makers.values():
        for t in (1, 2, 3):
            make(t)()  # runs to the end, whatever the split
    expected = np.sin(np.linspace(0.0, 1.0, 10_000)).sum()
    assert all(makers["lock"](t)() == pytest.approx(expected) for t in (1, 2, 3))
    run = parallel.measure_scaling(makers["lock"], [2], progress=False, **QUICK)
    assert sorted(set(run.processors)) == [1, 2]


def _points(gains: dict[str, list[float]], lengths=(10, 100, 1000), samples=(1.0, 1.0, 1.0)):
    from perfmodel.measure.timing import Measurement

    m = Measurement(samples_s=samples, inner_loops=1, threads=2)
    return [
        parallel.ScalingPoint(op, n, 2, m, s)
        for op, speedups in gains.items()
        for n, s in zip(lengths, speedups, strict=True)
    ]


def test_the_gap_says_what_the_speedups_show_and_nothing_more():
    catch_up = parallel.compare_operations(
        _points({"sin": [0.5, 1.5, 1.8], "cumsum": [0.4, 0.9, 1.9]}), "cumsum", "sin", 2
    ).findings()
    assert catch_up[0].endswith("both lose")
    assert catch_up[1].startswith("sin: best 1.80x (at 1,000)")
    assert catch_up[2] == "cumsum gains as much as sin or more at 1,000"
    assert catch_up[3].endswith("rises from 80% to 106% (not at every step): the gap closes")
    flat = parallel.compare_operations(
        _points({"sin": [0.9, 1.9, 1.8], "cumsum": [1.2, 0.9, 0.5]}), "cumsum", "sin", 2
    ).findings()
    assert flat[0].endswith("only sin loses") and flat[1].startswith("sin: best 1.90x (at 100)")
    assert flat[2] == "cumsum gains as much as sin or more at 10"
    assert flat[3].endswith("does not rise (133% to 28%): the gap does not narrow on this run")


def test_a_gap_with_one_noisy_speedup_is_not_read():
    points = _points({"sin": [0.5, 1.5, 1.8], "cumsum": [0.2, 0.9, 1.5]})
    noisy = _points({"sin": [1.7]}, lengths=(1000,), samples=(1.0, 1.6, 1.0, 1.9))
    points = [p for p in points if (p.operation, p.n) != ("sin", 1000)] + noisy
    gap = parallel.compare_operations(points, "cumsum", "sin", 2)
    assert gap.untrusted == "1 of 6 speedups not trusted (noisy)"
    assert gap.findings() == ["not read: 1 of 6 speedups not trusted (noisy); run the cell again"]
    assert gap.shares == pytest.approx((0.4, 0.6, 1.5 / 1.7))


def test_compare_operations_refuses_a_bad_thread_count():
    points = _points({"sin": [0.5, 1.5, 1.8], "cumsum": [0.2, 0.9, 1.5]})
    with pytest.raises(TypeError, match="`threads`"):
        parallel.compare_operations(points, "cumsum", "sin", "2")
    with pytest.raises(ValueError, match="`threads`"):
        parallel.compare_operations(points, "cumsum", "sin", 0)
    with pytest.raises(ValueError, match="on 4 threads"):
        parallel.compare_operations(points, "cumsum", "sin", 4)


def test_a_scaling_run_reports_the_most_other_programs_used():
    from perfmodel.measure.timing import Measurement

    def run(*others):
        return parallel.ScalingRun("sin", tuple(
            Measurement(samples_s=(1.0,), inner_loops=1, threads=t, others=o)
            for t, o in enumerate(others, start=1)
        ))  # fmt: skip

    assert run(0.05, 0.2).others == 0.2 and not run(0.05, 0.2).doubt
    assert run(None, None).others is None
    assert "busy, other programs used up to 40%" in run(0.1, 0.4).doubt


def test_the_io_workload_reads_back_a_file_of_any_name(tmp_path):
    path = tmp_path / "x.bin"  # np.save would have written x.bin.npy and the load failed
    run = parallel.io_then_compute_work(1000, str(path))(2)
    run()
    assert path.exists() and not (tmp_path / "x.bin.npy").exists()
    with pytest.raises(TypeError, match="`path` must be a str or os.PathLike"):
        parallel.io_then_compute_work(1000, 3)  # never a file descriptor


@pytest.mark.parametrize(
    ("held", "error", "message"),
    [
        (1.5, ValueError, "`held` must be a number in [0, 1] (got 1.5)"),
        (-0.1, ValueError, "`held` must be a number in [0, 1] (got -0.1)"),
        (float("nan"), ValueError, "`held` must be a number in [0, 1] (got nan)"),
        ("half", TypeError, "`held` must be a number (got str 'half')"),
    ],
)
def test_the_locked_workload_refuses_a_share_outside_zero_to_one(held, error, message):
    import re

    with pytest.raises(error, match=re.escape(message)):
        parallel.locked_work(100, held=held)


def test_a_scaling_run_refuses_a_thread_count_it_never_measured():
    import re

    from perfmodel.measure.timing import Measurement

    def run(*threads):
        return parallel.ScalingRun("sin", tuple(
            Measurement(samples_s=(1.0, 1.1), inner_loops=1, threads=t) for t in threads
        ))  # fmt: skip

    measured = run(1, 2)
    assert measured.speedup(np.int64(2)) == 1.0  # the same samples on both counts
    for method in ("speedup", "scaled_speedup"):
        with pytest.raises(
            ValueError,
            match=re.escape("`threads` must be a measured thread count, one of 1, 2 (got 4)"),
        ):
            getattr(measured, method)(4)
        with pytest.raises(ValueError, match=re.escape("no measurement on one thread")):
            getattr(run(2, 4), method)(2)
