"""Exact feasibility under a threshold: a breadth-first search over downsets, stage by stage.

"Is there a split into at most ``k`` stages with every stage costing at most ``T``?" has
an exact answer by search. A split is a chain of downsets ``{} = D0 < D1 < ... < Dm = V``,
so start from the empty downset and, level by level, add every stage ``S`` that keeps
``D | S`` a downset and costs at most ``T``; the answer is yes exactly when the whole
graph is reached within ``k`` levels. A downset reached once need not be kept again at a
later level: whatever finishes from it later also finishes from it sooner.

Four facts keep the search small where the plain downset program cannot run (random
DAGs three or four nodes wide, whose downsets number in the millions and whose pairs of
downsets in the billions):

* a stage's *work* only grows as nodes join it, so the stages of a downset are
  enumerated by include-or-exclude over its ready nodes, dropping every branch whose work
  (or memory) is already over the limit; under a tight ``T`` a stage holds a handful of
  nodes;
* the stage windows of :func:`perfmodel.pipeline.bounds.windows` say which nodes may sit
  in stage ``j`` and which must be placed by then;
* the work left after a stage must fit in the stages left, ``T`` each;
* so must the tensors still to cross a boundary: the downset's own outgoing tensors, and
  the boundary cuts of :mod:`perfmodel.pipeline.cuts` for the boundaries still to come.

So each probe is exact but bounded by a count of search steps: it answers *feasible*
(with the split), *infeasible* (a proof: ``T`` is a lower bound) or *unknown* when the
steps run out. :func:`threshold_search` bisects on ``T`` with such probes, asking first
whether the incumbent can be beaten at all. Where stages hold a few nodes the probes
settle quickly; where they hold dozens the stages to enumerate explode and the answer is
*unknown*, which is why :func:`~perfmodel.pipeline.partition.partition` runs the search
only where stages are small.

>>> from perfmodel.pipeline.zoo import random_layered_dag
>>> from perfmodel.pipeline.partition import partition
>>> g = random_layered_dag(5, 3, seed=4)
>>> best = partition(g, 3)
>>> threshold_probe(g, 3, best.bottleneck)[0].value
'feasible'
>>> threshold_probe(g, 3, best.bottleneck * 0.999)[0].value
'infeasible'
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_array

from perfmodel._validate import count, non_negative, positive
from perfmodel.pipeline.bounds import stage_windows
from perfmodel.pipeline.budget import Deadline, check_deadline
from perfmodel.pipeline.cover import Verdict
from perfmodel.pipeline.cuts import CutNetwork
from perfmodel.pipeline.graph import (
    MEMORY_SLACK,
    Graph,
    Partition,
    bottleneck_of,
    check_k,
    fits_device,
)
from perfmodel.pipeline.masks import node_masks, unpack_masks

__all__ = [
    "MOST_PROBES",
    "PROBE_STEPS",
    "SEARCH_STEPS",
    "ThresholdBound",
    "threshold_probe",
    "threshold_search",
]

#: Most search steps (stages tried) of one probe before it answers "unknown".
PROBE_STEPS = 2_000_000
#: Most search steps of all the probes of one :func:`threshold_search`.
SEARCH_STEPS = 6_000_000
#: Most probes of one :func:`threshold_search` (a probe that ends at once, on an empty
#: stage window, takes no steps).
MOST_PROBES = 40
_TOLERANCE = 1e-9  # relative: a proof at T certifies T * (1 - this), below any float tie
_ROUNDING = 1e-12  # relative: a stage summed in another order may differ in its last bits
_BELOW = 1e-9  # relative: "can the incumbent be beaten?" is asked at incumbent * (1 - this)
_BATCH = 4096  # downsets checked against the boundary cuts at once (a bool row of n each)


@dataclass(frozen=True, slots=True)
class ThresholdBound:
    """What :func:`threshold_search` proved and found.

    Parameters
    ----------
    lower_bound : float
        No split into ``k`` stages has a smaller bottleneck, s.
    split : Partition or None
        A split better than the given ``upper``, or None.
    probes : int
        Values of T tried, count.
    steps : int
        Search steps taken over all probes, count.
    complete : bool
        False when the wall-clock safety net cut the work short.
    """

    lower_bound: float
    split: Partition | None
    probes: int
    steps: int
    complete: bool


class _Problem:
    """The graph as bit masks and plain lists, shared by every probe of one search."""

    def __init__(self, graph: Graph, k: int) -> None:
        self.graph, self.k, self.n = graph, k, graph.n
        self.needs, self.feeds = node_masks(graph)
        self.total = math.fsum(graph.work)
        self.full = (1 << graph.n) - 1
        self.bytes = 8 * ((graph.n + 63) // 64)  # whole 64-bit words, as unpack_masks reads
        self.network = CutNetwork(graph)
        self.reach = self.network.reach
        heads = [u for u, _ in graph.edges]
        tails = [v for _, v in graph.edges]
        ones = np.ones(len(graph.edges))  # readers[u, v] = 1: v reads u
        self.readers = csr_array((ones, (heads, tails)), shape=(graph.n, graph.n))
        self.comm = np.asarray(graph.comm)

    def unpack(self, masks: list[int]) -> np.ndarray:
        """Bit masks as a (len(masks), n) boolean matrix."""
        raw = b"".join(m.to_bytes(self.bytes, "little") for m in masks)
        return unpack_masks(np.frombuffer(raw, "<u8").reshape(len(masks), -1), self.n)

    def comm_of(self, mask: int) -> float:
        """The ``comm`` of every node in ``mask``, added up."""
        comm = self.graph.comm
        return sum((comm[v] for v in _bits(mask)), 0.0)


def threshold_probe(
    graph: Graph,
    k: int,
    limit: float,
    *,
    steps: int = PROBE_STEPS,
    deadline: Deadline | None = None,
) -> tuple[Verdict, Partition | None, int]:
    """Whether some split into at most ``k`` stages keeps every stage within ``limit``.

    Parameters
    ----------
    graph : Graph
        The model graph.
    k : int
        The most stages, from 1 to the node count, count.
    limit : float
        The bottleneck asked about, s; positive.
    steps : int
        Most search steps (stages tried), count; past them the answer is UNKNOWN.
    deadline : Deadline, optional
        A wall-clock safety net shared with the caller; none by default.

    Returns
    -------
    tuple of (Verdict, Partition or None, int)
        FEASIBLE with a split whose bottleneck is at most ``limit`` (up to float rounding),
        INFEASIBLE (a proof: every split costs more than ``limit``) or UNKNOWN, and the
        steps taken, count.
    """
    k = check_k(graph, k)
    limit = positive("limit", limit)
    steps = count("steps", steps)
    return _probe(_Problem(graph, k), limit, steps, check_deadline(deadline))


def _probe(
    problem: _Problem, limit: float, steps: int, deadline: Deadline
) -> tuple[Verdict, Partition | None, int]:
    """:func:`threshold_probe` on a graph already prepared."""
    graph, k = problem.graph, problem.k
    earliest, latest = stage_windows(problem.reach, k, limit)
    if np.any(earliest > latest):
        return Verdict.INFEASIBLE, None, 0
    n, work, memory = graph.n, graph.work, graph.memory
    successors, needs, feeds = graph.successors, problem.needs, problem.feeds
    # a branch is dropped past the capacity with room for rounding; the stage itself is
    # judged at its leaf by the very sum stage_cost uses
    capacity = graph.capacity * (1 + 2 * MEMORY_SLACK) if graph.limited else math.inf
    allowed, placed = [0] * k, [0] * k  # nodes that may sit / must sit in stages 0..j
    for v in range(n):
        for j in range(max(int(earliest[v]), 0), k):
            allowed[j] |= 1 << v
        for j in range(max(int(latest[v]), 0), k):
            placed[j] |= 1 << v
    ceiling = limit * (1 + _ROUNDING)
    slack = (problem.total + k * limit) * _ROUNDING  # absolute: the work left is a difference
    cuts = problem.network.cuts(k, limit, deadline)
    if cuts is None:
        return Verdict.INFEASIBLE, None, 0
    crossed = np.concatenate([[0.0], np.cumsum(cuts)])  # crossed[i]: boundaries 0 .. i-1
    taken = 0
    parent: dict[int, int] = {0: -1}
    level: list[tuple[int, float]] = [(0, 0.0)]
    for j in range(k):
        may, must = allowed[j], placed[j]
        following: list[tuple[int, float]] = []
        for done, done_work in level:
            # the stage must leave at most (k - j - 1) * limit of work for the stages after it
            least = problem.total - done_work - (k - j - 1) * limit - slack
            stages: list[tuple[int, float]] = []
            ready = [v for v in range(n) if may >> v & 1 and not done >> v & 1]
            ready = [v for v in ready if not needs[v] & ~done]
            # include-or-exclude over the ready nodes: (ready, stage, its work, its memory)
            stack: list[tuple[list[int], int, float, float]] = [(ready, 0, 0.0, 0.0)]
            while stack:
                pending, stage, stage_work, stage_memory = stack.pop()
                taken += 1
                if taken > steps or (not taken & 0xFFF and deadline.expired()):
                    return Verdict.UNKNOWN, None, taken
                if not pending:
                    if stage and stage_work >= least and not must & ~(done | stage):
                        received, sent, rest = 0, 0, stage
                        while rest:
                            low = rest & -rest
                            v = low.bit_length() - 1
                            rest ^= low
                            received |= needs[v]
                            if feeds[v] & ~stage:
                                sent |= low
                        cost = (
                            stage_work + problem.comm_of(received & ~stage) + problem.comm_of(sent)
                        )
                        if cost <= ceiling and (
                            not graph.limited or fits_device(graph, _members(stage))
                        ):
                            stages.append((stage, stage_work))
                    continue
                v, rest_pending = pending[-1], pending[:-1]
                stack.append((rest_pending, stage, stage_work, stage_memory))  # without v
                grown_work, grown_memory = stage_work + work[v], stage_memory + memory[v]
                if grown_work <= ceiling and grown_memory <= capacity:
                    grown = stage | 1 << v
                    inside = done | grown
                    freed = [w for w in successors[v] if may >> w & 1 and not needs[w] & ~inside]
                    stack.append((rest_pending + freed, grown, grown_work, grown_memory))
            fresh = []
            for stage, stage_work in stages:
                reached = done | stage
                if reached == problem.full:
                    parent[reached] = done
                    return Verdict.FEASIBLE, _split(graph, parent, reached), taken
                if reached not in parent:
                    parent[reached] = done  # kept even if hopeless: it is hopeless later too
                    fresh.append((reached, done_work + stage_work))
            for start in range(0, len(fresh), _BATCH):
                batch = fresh[start : start + _BATCH]
                following.extend(_hopeful(problem, batch, j + 1, limit, crossed))
        level = following
        if not level:
            break
    return Verdict.INFEASIBLE, None, taken


def _hopeful(
    problem: _Problem,
    fresh: list[tuple[int, float]],
    placed: int,
    limit: float,
    crossed: np.ndarray,
) -> list[tuple[int, float]]:
    """The downsets (after ``placed`` stages) that the boundary cuts leave room to finish.

    The stages still to come do the work left and receive every tensor that leaves the
    downset; the tensors they send each other are sent and received, and cross their own
    boundaries (weighted, as in :mod:`perfmodel.pipeline.cuts`) less whatever of those
    crossings the downset's own tensors already account for.
    """
    k = problem.k
    if placed >= k:
        return []
    inside = problem.unpack([reached for reached, _ in fresh])
    outside_readers = (problem.readers @ (~inside).T.astype(float)).T  # (fresh, n)
    leaving = (inside & (outside_readers > 0)).astype(float) @ problem.comm
    left = problem.total - np.array([done_work for _, done_work in fresh])
    stages = np.arange(1, k - placed + 1)  # stages still to come
    between = crossed[placed + stages - 1] - crossed[placed]  # their boundaries' cuts
    received = np.maximum(leaving[:, None], 2 * between[None, :] - leaving[:, None])
    room = stages * limit * (1 + _TOLERANCE)
    keep = np.any(left[:, None] + received <= room[None, :], axis=1)
    return [state for state, kept in zip(fresh, keep, strict=True) if kept]


def _bits(mask: int) -> Iterator[int]:
    """The nodes of a bit mask, ascending."""
    while mask:
        low = mask & -mask
        yield low.bit_length() - 1
        mask ^= low


def _members(mask: int) -> set[int]:
    """The nodes of a bit mask, as a set."""
    return set(_bits(mask))


def _split(graph: Graph, parent: dict[int, int], reached: int) -> Partition:
    """The split whose downsets lead to ``reached``, read back along ``parent``."""
    stages: list[tuple[int, ...]] = []
    while reached:
        before = parent[reached]
        stage = reached & ~before
        stages.append(tuple(v for v in range(graph.n) if stage >> v & 1))
        reached = before
    stages.reverse()
    found = tuple(stages)
    return Partition(
        stages=found, bottleneck=bottleneck_of(graph, found), lower_bound=0.0, method="threshold"
    )


def threshold_search(
    graph: Graph,
    k: int,
    lower: float,
    upper: float,
    *,
    steps: int = SEARCH_STEPS,
    probe_steps: int = PROBE_STEPS,
    deadline: Deadline | None = None,
) -> ThresholdBound:
    """Close the gap between a proven ``lower`` and a split of bottleneck ``upper``.

    The first probe asks whether anything beats ``upper`` at all (an infeasible answer
    proves the incumbent optimal); then bisection, where an unknown answer moves the
    search down, to where proofs are cheaper, and a feasible one brings a better split.

    Parameters
    ----------
    graph : Graph
        The model graph.
    k : int
        The most stages, from 1 to the node count, count.
    lower : float
        A proven lower bound on the best bottleneck, s.
    upper : float
        The bottleneck of a known split, s.
    steps : int
        Most search steps of all probes together, count.
    probe_steps : int
        Most search steps of one probe, count.
    deadline : Deadline, optional
        A wall-clock safety net shared with the caller; none by default.

    Returns
    -------
    ThresholdBound
        The raised lower bound, a better split if one was found, and the work done.

    Examples
    --------
    >>> from perfmodel.pipeline.zoo import random_layered_dag
    >>> from perfmodel.pipeline.search import search_orders
    >>> g = random_layered_dag(10, 3, seed=2)
    >>> found = search_orders(g, 8)
    >>> result = threshold_search(g, 8, 0.0, found.bottleneck)
    >>> best = result.split.bottleneck if result.split else found.bottleneck
    >>> result.lower_bound / best > 0.999999  # proven optimal
    True
    """
    k = check_k(graph, k)
    low, high = non_negative("lower", lower), non_negative("upper", upper)
    steps, probe_steps = count("steps", steps), count("probe_steps", probe_steps)
    deadline = check_deadline(deadline)
    problem = _Problem(graph, k)
    split: Partition | None = None
    ceiling, taken, probes = high, 0, 0
    while high > 0 and low < high * (1 - 2 * _TOLERANCE) and taken < steps:
        if deadline.expired() or probes >= MOST_PROBES:
            break
        close = high - low <= 0.01 * high
        top = ceiling >= high and (probes == 0 or close)
        if top:
            probe = high * (1 - _BELOW)  # can the incumbent be beaten at all?
        elif ceiling - low > 1e-4 * high:
            probe = (low + ceiling) / 2
        else:
            break
        if not low < probe < high:  # no float left between them (subnormal times)
            break
        probes += 1
        verdict, found, used = _probe(problem, probe, min(probe_steps, steps - taken), deadline)
        taken += used
        if verdict is Verdict.INFEASIBLE:
            low = max(low, probe * (1 - _TOLERANCE))
            if top:
                break  # nothing beats the incumbent: proven optimal
        elif verdict is Verdict.FEASIBLE and found is not None and found.bottleneck < high:
            high = found.bottleneck
            split = found
            ceiling = min(ceiling, high)
        else:
            ceiling = probe  # undecided: look lower, where a proof is cheaper
    return ThresholdBound(min(low, high), split, probes, taken, not deadline.reached)
