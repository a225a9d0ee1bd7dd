"""Lower bounds on the best bottleneck: proofs that no split can be faster.

A lower bound ``L`` turns any split of bottleneck ``B`` into a certificate: it is at most
``B / L - 1`` worse than the optimum. Three bounds, each at least as strong as the last:

* the *combinatorial* bound ``max(total work / k, largest node)``;
* the *window* bound: under a bottleneck ``T`` the ancestors of node v fill at least
  ``ceil(work(ancestors) / T)`` stages, so v sits in stage ``ceil(work(ancestors)/T) - 1``
  or later, and by the same argument on its descendants in stage
  ``k - ceil(work(descendants)/T)`` or earlier. When some node's window is empty, no split
  under ``T`` exists; bisection finds the smallest ``T`` that passes;
* the *MIP* bounds, by bisection on ``T``. Where ``nodes x stages`` is small, first the
  feasibility problem "every stage under ``T``" itself, as a mixed-integer program in
  cumulative variables ``z[v, s] = [stage(v) <= s]`` with every ``z`` outside the
  windows fixed, handed to HiGHS with a node limit: a proof of infeasibility raises the
  bound to ``T``, a feasible answer is a better split and lowers the upper end. Where it
  does not fit or runs out of nodes, the covering relaxation of
  :mod:`perfmodel.pipeline.cover` (can ``k`` sets of cost ``T`` cover the nodes, even
  fractionally?), the strongest proof on wide graphs cut into many stages; an open or
  undecided probe moves the bisection down.

Two more bounds live beside these: :mod:`~perfmodel.pipeline.cuts` charges every stage
boundary the tensors that must cross it, and :mod:`~perfmodel.pipeline.threshold` answers
"is there a split under ``T``?" exactly where stages are small; :func:`mip_lower_bound`
starts from whatever they proved (its ``lower``).

>>> from perfmodel.pipeline.zoo import random_layered_dag
>>> from perfmodel.pipeline.graph import combinatorial_lower_bound
>>> g = random_layered_dag(6, 3, seed=1)
>>> window_lower_bound(g, 4) >= combinatorial_lower_bound(g, 4)
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from perfmodel._validate import count, non_negative
from perfmodel.pipeline.budget import Deadline
from perfmodel.pipeline.cover import (
    LP_ROUNDS,
    ConnectedPool,
    Verdict,
    connected_pool,
    cover_probe,
)
from perfmodel.pipeline.graph import (
    MEMORY_SLACK,
    Graph,
    Partition,
    bisect_threshold,
    bottleneck_of,
    check_k,
    check_time_limit,
    combinatorial_lower_bound,
    stages_from_labels,
)
from perfmodel.pipeline.mip import SparseRows
from perfmodel.pipeline.split import order_segment_costs

__all__ = [
    "MipBound",
    "closure_works",
    "mip_lower_bound",
    "stage_windows",
    "window_lower_bound",
    "windows",
]

_TOLERANCE = 1e-9  # relative: never claim a bound closer than this to a float tie
#: The compact MIP is tried only when ``nodes x stages`` is at most this: a node limit
#: bounds its search, but not its root (presolve and cuts), which grows fast with size.
#: Up to it, the MIP probes first and the covering LP only where it runs out of nodes: on
#: the benchmark's testbed the LP, asked first, proved nothing more there and took the
#: time the MIP needed (benchmarks/partition.py's 38 x 2 DAG at k = 2: bound / best 0.9965
#: when the 20 s safety net stopped it, 0.9991 in 3 s with the MIP first).
MIP_SIZE_LIMIT = 200
#: Most bisection probes of :func:`mip_lower_bound`.
PROBES = 16
#: Most branch-and-bound nodes of one compact MIP.
MIP_NODES = 200


def _closure_work(
    graph: Graph, order: tuple[int, ...], neighbours: tuple[tuple[int, ...], ...]
) -> np.ndarray:
    """Work of each node's closure (itself and everything reachable along ``neighbours``)."""
    n = graph.n
    reach = [0] * n
    for v in order:
        mask = 1 << v
        for u in neighbours[v]:
            mask |= reach[u]
        reach[v] = mask
    work = np.array(graph.work)
    bits = np.array([[m >> i & 1 for i in range(n)] for m in reach], dtype=bool)
    return np.asarray(bits @ work)


def closure_works(graph: Graph) -> tuple[np.ndarray, np.ndarray]:
    """The work of each node's ancestors and of its descendants, each including the node:
    what :func:`stage_windows` reads, computed once per graph.

    Parameters
    ----------
    graph : Graph
        The model graph.

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray)
        ``(ancestors, descendants)``, s of work, one entry per node.
    """
    return (
        _closure_work(graph, graph.order, graph.predecessors),
        _closure_work(graph, graph.order[::-1], graph.successors),
    )


def stage_windows(
    reach: tuple[np.ndarray, np.ndarray], k: int, limit: float
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`windows` from the closure works already computed (:func:`closure_works`), for
    the methods that probe many limits on one graph.

    Parameters
    ----------
    reach : tuple of (numpy.ndarray, numpy.ndarray)
        What :func:`closure_works` returned for the graph, s.
    k : int
        The number of stages, count.
    limit : float
        The bottleneck, s.

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray)
        ``(earliest, latest)`` stage of every node, as int arrays.
    """
    ancestors, descendants = reach
    scale = limit * (1 + _TOLERANCE)
    with np.errstate(over="ignore"):  # a tiny limit: stage counts past 2**40 are all too many
        before = np.minimum(ancestors / scale, 2.0**40)
        after = np.minimum(descendants / scale, 2.0**40)
    earliest = np.ceil(before).astype(np.int64) - 1
    latest = k - np.ceil(after).astype(np.int64)
    return earliest, latest


def windows(graph: Graph, k: int, limit: float) -> tuple[np.ndarray, np.ndarray]:
    """Earliest and latest stage of every node in any split whose bottleneck is at most ``limit``.

    Empty windows (earliest > latest) prove that no such split exists.

    Parameters
    ----------
    graph : Graph
        The model graph.
    k : int
        The number of stages, count.
    limit : float
        The bottleneck, positive, s.

    Returns
    -------
    tuple of (numpy.ndarray, numpy.ndarray)
        ``(earliest, latest)``: for each node, the first and the last stage (numbered
        from 0) it may sit in, as int arrays.
    """
    if not limit > 0:
        raise ValueError(f"`limit` must be a positive bottleneck in seconds (got {limit!r}).")
    return stage_windows(closure_works(graph), k, limit)


def window_lower_bound(
    graph: Graph, k: int, *, reach: tuple[np.ndarray, np.ndarray] | None = None
) -> float:
    """The smallest bottleneck for which every node still has a stage window (bisection).

    Parameters
    ----------
    graph : Graph
        The model graph.
    k : int
        The number of stages, from 1 to the node count, count.
    reach : tuple of (numpy.ndarray, numpy.ndarray), optional
        The graph's :func:`closure_works`, where the caller has them already.

    Returns
    -------
    float
        A lower bound on the best bottleneck, never below
        :func:`~perfmodel.pipeline.graph.combinatorial_lower_bound`, s.
    """
    k = check_k(graph, k)
    return _window_bound(graph, k, closure_works(graph) if reach is None else reach)


def _window_bound(graph: Graph, k: int, reach: tuple[np.ndarray, np.ndarray]) -> float:
    """:func:`window_lower_bound` from the closure works already computed."""

    def fits(limit: float) -> bool:
        earliest, latest = stage_windows(reach, k, limit)
        return bool(np.all(earliest <= latest))

    low = combinatorial_lower_bound(graph, k)
    high = max(sum(graph.work), low) * (1 + 2 * _TOLERANCE)
    if low == 0 or fits(low):
        return low
    low, _ = bisect_threshold(fits, low, high, rel_tol=1e-9)
    return low


def _feasibility_mip(
    graph: Graph,
    k: int,
    limit: float,
    nodes: int,
    deadline: Deadline,
    reach: tuple[np.ndarray, np.ndarray],
) -> tuple[Verdict, list[int] | None]:
    """Solve "every stage costs at most ``limit``" exploring at most ``nodes`` branch-and-bound
    nodes; returns the verdict and, when feasible, each node's stage."""
    from scipy.optimize import Bounds, milp

    n = graph.n
    earliest, latest = stage_windows(reach, k, limit)
    if np.any(earliest > latest):
        return Verdict.INFEASIBLE, None
    unit = limit  # pose it in units of the limit: costs are fractions of 1
    senders = [u for u in range(n) if graph.successors[u]]
    nz = n * k
    size = nz + 2 * len(senders) * k

    def z(i: int, s: int) -> int:  # node i sits in stage s or earlier
        return i * k + s

    def received(j: int, s: int) -> int:
        return nz + j * k + s

    def sent(j: int, s: int) -> int:
        return nz + (len(senders) + j) * k + s

    rows = SparseRows()
    add = rows.add

    def x(i: int, s: int, sign: float = 1.0) -> list[tuple[int, float]]:  # in stage s exactly
        return [(z(i, s), sign)] + ([(z(i, s - 1), -sign)] if s else [])

    for i in range(n):
        for s in range(k - 1):
            add([(z(i, s), 1.0), (z(i, s + 1), -1.0)], -math.inf, 0)  # z grows with s
    for j, u in enumerate(senders):
        for v in graph.successors[u]:
            for s in range(k - 1):
                add([(z(v, s), 1.0), (z(u, s), -1.0)], -math.inf, 0)  # u no later than v
            for s in range(k):
                add([(received(j, s), 1.0), *x(v, s, -1.0), *x(u, s)], 0, math.inf)
                add([(sent(j, s), 1.0), *x(u, s, -1.0), *x(v, s)], 0, math.inf)
    for s in range(k):
        terms = [term for i in range(n) for term in x(i, s, graph.work[i] / unit)]
        for j, u in enumerate(senders):
            terms += [(received(j, s), graph.comm[u] / unit), (sent(j, s), graph.comm[u] / unit)]
        add(terms, -math.inf, 1.0)
        if graph.limited:  # and every stage within the device's memory
            memory = [t for i in range(n) for t in x(i, s, graph.memory[i] / graph.capacity)]
            add(memory, -math.inf, 1.0 + MEMORY_SLACK)
    low, high = np.zeros(size), np.ones(size)
    for i in range(n):
        for s in range(k):
            if s < earliest[i]:
                high[z(i, s)] = 0
            if s >= latest[i]:
                low[z(i, s)] = 1
    integrality = np.zeros(size)
    integrality[:nz] = 1
    result = milp(
        np.zeros(size),
        integrality=integrality,
        bounds=Bounds(low, high),
        constraints=rows.constraint(size),
        # The node limit bounds the work; the time limit is only the safety net.
        options={"node_limit": nodes, "time_limit": max(deadline.left(), 0.05)},
    )
    deadline.expired()
    if result.status == 2:
        return Verdict.INFEASIBLE, None
    if result.x is None:
        return Verdict.UNKNOWN, None
    cumulative = result.x[:nz].reshape(n, k) > 0.5
    return Verdict.FEASIBLE, [int(np.argmax(row)) for row in cumulative]


@dataclass(frozen=True, slots=True)
class MipBound:
    """Result of :func:`mip_lower_bound`: the proven bound and the best split seen.

    ``complete`` is False when the wall-clock safety net stopped the search before its
    work bounds did; the bound is still valid, but another machine may find another.

    Parameters
    ----------
    lower_bound : float
        No split into ``k`` stages has a smaller bottleneck, s.
    split : Partition or None
        A split better than the given ``upper`` found by a probe, or None.
    probes : int
        Values of T tried, count.
    complete : bool
        False when the wall-clock safety net cut the work short.
    source : str
        What proved ``lower_bound``: ``"combinatorial bound"``, ``"window bound"``,
        ``"covering LP"``, ``"compact MIP"`` or the ``lower_source`` of a given bound.
    """

    lower_bound: float
    split: Partition | None
    probes: int
    complete: bool
    source: str = "combinatorial bound"


def mip_lower_bound(
    graph: Graph,
    k: int,
    upper: float,
    *,
    probes: int = PROBES,
    rounds: int = LP_ROUNDS,
    mip_nodes: int = MIP_NODES,
    orders: Sequence[Sequence[int]] = (),
    lower: float = 0.0,
    lower_source: str = "threshold search",
    time_limit_s: float = math.inf,
    deadline: Deadline | None = None,
) -> MipBound:
    """Raise the window bound by bisection on feasibility probes between it and ``upper``.

    Each probe ``T`` first asks the compact MIP where ``nodes x stages`` is at most
    :data:`MIP_SIZE_LIMIT` (it either proves that no split under ``T`` exists or finds
    one); where it does not fit or runs out of nodes, the covering relaxation
    (:func:`perfmodel.pipeline.cover.cover_probe`): can ``k`` sets of cost ``T`` cover the
    graph, even fractionally? The search is bounded by work, so its answer
    is the same on any machine; the clock is only a safety net.

    Parameters
    ----------
    graph : Graph
        The model graph.
    k : int
        The number of stages, from 1 to the node count, count.
    upper : float
        The bottleneck of a known split, s.
    probes : int
        Most values of ``T`` to try (each halves the interval still open).
    rounds : int
        Most column-generation rounds per covering probe.
    mip_nodes : int
        Most branch-and-bound nodes per compact MIP; a probe that runs out proves nothing.
    orders : sequence of sequences of int
        Good topological orders (the graph's own is always added); their contiguous pieces
        seed the covering relaxation.
    lower : float
        A bound already proven by other means, s; the bisection starts above it.
    lower_source : str
        What proved ``lower``, reported as ``source`` when no probe beats it.
    time_limit_s : float
        Wall-clock safety net, s (default: none); see :mod:`perfmodel.pipeline.budget`.
    deadline : Deadline, optional
        A deadline shared with the caller, used instead of ``time_limit_s``.

    Returns
    -------
    MipBound
        ``lower_bound`` (never above the optimum), ``split`` (a split better than
        ``upper`` found on the way, or None), ``probes`` (how many values of T were tried),
        ``complete`` (False if the safety net cut the work short) and ``source`` (which
        bound proved it).
    """
    k = check_k(graph, k)
    probes = count("probes", probes)
    rounds = count("rounds", rounds)
    mip_nodes = count("mip_nodes", mip_nodes)
    upper = non_negative("upper", upper)
    if deadline is None:
        deadline = Deadline(check_time_limit(time_limit_s))
    lower = non_negative("lower", lower)
    if deadline.expired():  # no time even for the window bound: the combinatorial one is free
        free = combinatorial_lower_bound(graph, k)
        if lower > free:
            return MipBound(min(lower, upper), None, 0, False, lower_source)
        return MipBound(min(free, upper), None, 0, False)
    reach = closure_works(graph)
    low = _window_bound(graph, k, reach)
    source = "window bound" if low > combinatorial_lower_bound(graph, k) else "combinatorial bound"
    if lower > low:
        low, source = lower, lower_source
    high, ceiling = upper, upper
    split: Partition | None = None
    tried = 0
    if not upper > 0:
        return MipBound(min(low, upper), None, 0, True, source)
    if deadline.expired():
        return MipBound(min(low, upper), None, 0, False, source)
    known = [tuple(graph.order), *(tuple(order) for order in orders)]
    relaxation: tuple[list[np.ndarray], ConnectedPool] | None = None  # built when first asked
    while ceiling - low > 1e-3 * high and tried < probes and not deadline.expired():
        probe = (low + ceiling) / 2
        tried += 1
        status, labels, prover = Verdict.UNKNOWN, None, "compact MIP"
        if graph.n * k <= MIP_SIZE_LIMIT:  # the exact program first, where it fits
            status, labels = _feasibility_mip(graph, k, probe, mip_nodes, deadline, reach)
        if status is Verdict.UNKNOWN and not deadline.expired():  # then the relaxation
            if relaxation is None:
                costs = [order_segment_costs(graph, order) for order in known]
                relaxation = costs, connected_pool(graph, upper, deadline)
            status = cover_probe(
                graph,
                k,
                probe,
                orders=known,
                rounds=rounds,
                deadline=deadline,
                segment_costs=relaxation[0],
                pool=relaxation[1],
            )
            prover = "covering LP"
        if status is Verdict.INFEASIBLE:
            low, source = probe * (1 - _TOLERANCE), prover
        elif status is Verdict.FEASIBLE and labels is not None:
            stages = stages_from_labels(labels, k)
            found = bottleneck_of(graph, stages)
            if math.isinf(found):  # over capacity within HiGHS's tolerance: no answer
                ceiling = probe
                continue
            if found < high:
                high = found
                split = Partition(
                    stages=stages, bottleneck=found, lower_bound=0.0, method="MIP probe"
                )
            ceiling = min(ceiling, found)
        else:
            ceiling = probe  # undecided: look lower, where a proof is easier
    return MipBound(min(low, high), split, tried, not deadline.reached, source)
