"""Measuring this machine: everything that runs and times code here.

* :mod:`~perfmodel.measure.timing`: the harness (warm-up, repeats, median and spread, whether
  the machine was busy) and the clock every measurement reads;
* :mod:`~perfmodel.measure.load`: what else the machine does meanwhile (other programs' share
  of the CPUs, this process's wait for a core);
* :mod:`~perfmodel.measure.microbench`: micro-benchmarks with exact costs (STREAM, matmuls,
  working sets, tiny ops);
* :mod:`~perfmodel.measure.empirical`: the machine as a catalogue ``Device``, its measured
  roofline, and real numpy ops predicted then measured;
* :mod:`~perfmodel.measure.calibration`: the roofline calibrated on it (overheads, rates by
  size), :mod:`~perfmodel.measure.comparison`: predictions set beside measurements, and
  :mod:`~perfmodel.measure.held_out`: real numpy ops it never saw, predicted then measured;
* :mod:`~perfmodel.measure.parallel`: threads on this machine (splitting an operation,
  running branches at once, strong and weak scaling runs), the face of its four parts:
  :mod:`~perfmodel.measure.threads` (the work on threads), :mod:`~perfmodel.measure.speedups`
  (what the runs record, and whether to trust it), :mod:`~perfmodel.measure.scaling_runs`
  (the runs and their workloads) and :mod:`~perfmodel.measure.payoff` (where it pays);
* :mod:`~perfmodel.measure.gpu`: a GPU measured with the same harness, where one is present;
* :mod:`~perfmodel.measure.environment`: what the machine and its libraries are.

The models elsewhere in the package never measure; this room is where numbers come from.
Its modules load on first use: ``from perfmodel.measure import timing``.
"""

from __future__ import annotations

from perfmodel._lazy import lazy_face

__all__ = [
    "calibration",
    "comparison",
    "empirical",
    "environment",
    "gpu",
    "held_out",
    "load",
    "microbench",
    "parallel",
    "payoff",
    "scaling_runs",
    "speedups",
    "threads",
    "timing",
]
#: The two functions lectures call by name, besides the modules.
_FUNCTIONS = {
    "environment_report": "environment:environment_report",
    "fit_overhead": "calibration:fit_overhead",
}
__all__ += sorted(_FUNCTIONS)
__getattr__, __dir__ = lazy_face(__name__, {**{name: name for name in __all__}, **_FUNCTIONS})
