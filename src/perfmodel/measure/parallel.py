"""Run numpy work on several threads, and measure what that buys: the face of four modules.

* :mod:`~perfmodel.measure.threads`: the work on threads (:func:`sliced`,
  :func:`parallel_apply`, :func:`parallel_cumsum` and its :func:`blocked_scan_additions`,
  :func:`run_branches`);
* :mod:`~perfmodel.measure.speedups`: what the measurements record (:class:`ScalingPoint`,
  :class:`BranchPoint`, :class:`ScalingRun`), :func:`speedup_share`, and whether each can be
  trusted (:func:`untrusted`);
* :mod:`~perfmodel.measure.scaling_runs`: the strong and weak scaling runs
  (:func:`operation_scaling` and :func:`branch_scaling`, the measurements lecture 07 plots;
  :func:`measure_scaling` and the workloads it times);
* :mod:`~perfmodel.measure.payoff`: the speedups read (:func:`compare_operations`,
  :func:`where_it_pays`).

Every name is importable from here, as before the split: ``from perfmodel.measure import
parallel``, then ``parallel.measure_scaling(parallel.matmul_work(1024), [2, 4])``.

Examples
--------
>>> import numpy as np
>>> x = np.arange(10.0)
>>> out = np.empty_like(x)
>>> parallel_cumsum(x, out, threads=3)
>>> bool(np.array_equal(out, np.cumsum(x)))
True
"""

from __future__ import annotations

from perfmodel.measure.payoff import Gap, Payoff, compare_operations, where_it_pays
from perfmodel.measure.scaling_runs import (
    branch_scaling,
    elementwise_work,
    io_then_compute_work,
    locked_work,
    matmul_work,
    measure_scaling,
    memory_bound_work,
    operation_scaling,
)
from perfmodel.measure.speedups import (
    BranchPoint,
    ScalingPoint,
    ScalingRun,
    speedup_share,
    untrusted,
)
from perfmodel.measure.threads import (
    blocked_scan_additions,
    parallel_apply,
    parallel_cumsum,
    run_branches,
    sliced,
)

__all__ = [
    "BranchPoint",
    "Payoff",
    "ScalingPoint",
    "ScalingRun",
    "Gap",
    "blocked_scan_additions",
    "branch_scaling",
    "compare_operations",
    "elementwise_work",
    "io_then_compute_work",
    "locked_work",
    "matmul_work",
    "memory_bound_work",
    "measure_scaling",
    "operation_scaling",
    "parallel_apply",
    "parallel_cumsum",
    "run_branches",
    "sliced",
    "speedup_share",
    "untrusted",
    "where_it_pays",
]
