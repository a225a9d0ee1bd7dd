"""Running a partitioned model as a pipeline: GPipe's fill-and-drain schedule.

A batch is cut into ``m`` micro-batches; stage ``s`` starts micro-batch ``i`` when it has
finished micro-batch ``i - 1`` and stage ``s - 1`` has finished micro-batch ``i``. With
``p`` equal stages the pipeline idles for a *bubble* fraction ``(p - 1) / (m + p - 1)``
of its time: the start-up and wind-down, when some stages have nothing to do.

* :func:`simulate`: the schedule for given per-micro-batch stage times.
* :func:`simulate_batch`: cut a batch of a zoo model into micro-batches, price one
  micro-batch (the roofline at its own size), split it into stages and simulate.

References
----------
Huang et al., "GPipe: Efficient Training of Giant Neural Networks using Pipeline
Parallelism", NeurIPS 2019.

>>> run = simulate([1.0, 1.0, 1.0, 1.0], micro_batches=8)
>>> run.makespan, round(run.bubble_fraction, 4), bubble_fraction(4, 8) == run.bubble_fraction
(11.0, 0.2727, True)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from perfmodel._show import percent, seconds, shown
from perfmodel._validate import count, non_negative, sequence
from perfmodel.pipeline.graph import Graph, stage_cost
from perfmodel.pipeline.partition import partition

__all__ = ["Schedule", "bubble_fraction", "simulate", "simulate_batch"]


def bubble_fraction(stages: int, micro_batches: int) -> float:
    """Idle fraction of a fill-and-drain pipeline of equal stages: (p-1)/(m+p-1).

    Parameters
    ----------
    stages : int
        Pipeline stages p, count.
    micro_batches : int
        Micro-batches m per batch, count.

    Returns
    -------
    float
        The share of stage-time spent idle, fraction.
    """
    stages, micro_batches = count("stages", stages), count("micro_batches", micro_batches)
    return (stages - 1) / (micro_batches + stages - 1)


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Schedule:
    """When each stage ran each micro-batch: ``start[s][i]`` and ``end[s][i]``, seconds.

    Parameters
    ----------
    stage_times : tuple of float
        ``stage_times[s]``: stage s's time for one micro-batch, s.
    start : tuple of tuple of float
        ``start[s][i]``: when stage s started micro-batch i, s (time 0 is the first start).
    end : tuple of tuple of float
        ``end[s][i]``: when stage s finished micro-batch i, s.
    """

    stage_times: tuple[float, ...]
    start: tuple[tuple[float, ...], ...]
    end: tuple[tuple[float, ...], ...]

    @property
    def makespan(self) -> float:
        """When the last stage finished the last micro-batch: the run's time, s."""
        return self.end[-1][-1]

    @property
    def latency(self) -> float:
        """Time for one micro-batch to cross every stage (the first one's, with no waiting)."""
        return self.end[-1][0]

    @property
    def throughput(self) -> float:
        """Micro-batches per second over the whole run, fill and drain included."""
        return len(self.end[0]) / self.makespan if self.makespan else math.inf

    @property
    def bubble_fraction(self) -> float:
        """Share of stage-time spent idle between time 0 and the makespan."""
        busy = sum(t * len(self.end[0]) for t in self.stage_times)
        capacity = self.makespan * len(self.stage_times)
        return 1 - busy / capacity if capacity else 0.0

    def __repr__(self) -> str:
        return shown("Schedule", stages=str(len(self.stage_times)),
                     micro_batches=str(len(self.end[0]) if self.end else 0),
                     makespan=seconds(self.makespan), latency=seconds(self.latency),
                     bubble=percent(self.bubble_fraction))  # fmt: skip


def simulate(stage_times: Sequence[float], micro_batches: int) -> Schedule:
    """Simulate fill-and-drain over stages with the given per-micro-batch times.

    Parameters
    ----------
    stage_times : sequence of float
        Each stage's time for one micro-batch, in pipeline order, at least one, s.
    micro_batches : int
        Micro-batches sent through, count.

    Returns
    -------
    Schedule
        When each stage started and finished each micro-batch.
    """
    given = sequence("stage_times", stage_times, "seconds")
    times = [non_negative(f"stage_times[{i}]", t) for i, t in enumerate(given)]
    if not times:
        raise ValueError("`stage_times` must list at least one stage (got none).")
    micro_batches = count("micro_batches", micro_batches)
    start = [[0.0] * micro_batches for _ in times]
    end = [[0.0] * micro_batches for _ in times]
    for s, duration in enumerate(times):
        for i in range(micro_batches):
            ready = end[s - 1][i] if s else 0.0
            free = end[s][i - 1] if i else 0.0
            start[s][i] = max(ready, free)
            end[s][i] = start[s][i] + duration
    return Schedule(
        stage_times=tuple(times),
        start=tuple(tuple(row) for row in start),
        end=tuple(tuple(row) for row in end),
    )


def simulate_batch(
    build: Callable[..., Graph], *, batch: int, micro_batches: int, stages: int, **options: Any
) -> Schedule:
    """Cut a batch into equal micro-batches and run them through the best split of one.

    One micro-batch holds ``batch // micro_batches`` inputs. ``build(batch=that, **options)``
    prices the model for exactly that many (a :mod:`perfmodel.pipeline.zoo` builder: the
    roofline at the micro-batch's own size, so a layer that reads its weights for every
    micro-batch does not get ``micro_batches`` times cheaper); :func:`partition` splits it
    into at most ``stages`` stages; :func:`simulate` runs the ``micro_batches`` micro-batches
    through them. The ``makespan`` is then the time of the whole batch.

    Parameters
    ----------
    build : callable
        Returns the model graph for a ``batch=`` keyword, such as ``zoo.gpt2_like``.
    batch : int
        Inputs in the whole batch (sequences, images).
    micro_batches : int
        How many micro-batches to cut it into; must divide ``batch``.
    stages : int
        Most pipeline stages (the split may use fewer, when cuts cost more than they save).
    **options
        Passed on to ``build`` (``seq_len=128``, ``device=...``, ``link=...``).

    Returns
    -------
    Schedule
        ``stage_times`` per micro-batch, and when each stage ran each micro-batch.

    Examples
    --------
    Four micro-batches of 1,024 vectors finish a 4,096-vector batch sooner than one does;
    eight of 8 vectors finish a 64-vector batch later, because each re-reads every weight:

    >>> from perfmodel.pipeline import zoo
    >>> for batch, m in ((4096, 1), (4096, 4), (64, 1), (64, 8)):
    ...     run = simulate_batch(zoo.mlp, batch=batch, micro_batches=m, stages=2, layers=4)
    ...     print(f"{batch} in {m}: bubble {run.bubble_fraction:.0%}, {run.makespan * 1e6:.0f} µs")
    4096 in 1: bubble 50%, 707 µs
    4096 in 4: bubble 20%, 445 µs
    64 in 1: bubble 50%, 46 µs
    64 in 8: bubble 11%, 191 µs
    """
    if not callable(build):
        raise TypeError(
            f"`build` must be a model builder such as zoo.gpt2_like (got {type(build).__name__})."
        )
    batch, micro_batches = count("batch", batch), count("micro_batches", micro_batches)
    stages = count("stages", stages)
    if batch % micro_batches:
        raise ValueError(
            f"`micro_batches` must divide `batch` = {batch} into equal micro-batches "
            f"(got {micro_batches})."
        )
    graph = build(batch=batch // micro_batches, **options)
    split = partition(graph, min(stages, graph.n))
    return simulate([stage_cost(graph, stage) for stage in split.stages], micro_batches)
