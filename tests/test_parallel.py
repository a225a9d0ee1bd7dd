"""Thread-pool numpy: the parallel versions compute exactly what the serial ones do, and the
scaling sweeps measure every point they promise (never a time)."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfmodel import parallel

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
