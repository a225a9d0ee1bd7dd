"""The boundary-cut bound: every stage boundary costs the tensors that cross it, twice.

The work bounds forget that a cut costs time. But every tensor that leaves its stage is
sent once and received at least once, so a split's stages add up to at least

``total work + 2 x (comm of every tensor that crosses some stage boundary)``.

Which tensors cross is unknown, but not free. Under a bottleneck ``T`` the stage windows
(:func:`perfmodel.pipeline.bounds.windows`) say which nodes must lie before boundary ``i``
(the downset ``D_i`` of the first ``i + 1`` stages) and which must lie after, so the cheapest
set of tensors crossing boundary ``i`` is a minimum cut, found exactly by maximum flow
(:func:`scipy.sparse.csgraph.maximum_flow`): a downset is a *closure*, and a tensor is
paid once however many of its readers lie beyond. A tensor can cross several boundaries,
at most as many as the windows of its producer and readers span, so each is counted at
``comm / span`` per boundary, and the sum over boundaries never exceeds what the tensors
really cost. If for every number of stages ``m <= k`` the stages would add up to more
than ``m x T``, no split under ``T`` exists; bisection finds the smallest ``T`` that passes.

>>> from perfmodel.pipeline.zoo import random_layered_dag
>>> from perfmodel.pipeline.bounds import window_lower_bound
>>> g = random_layered_dag(30, 4, seed=40)
>>> cut_lower_bound(g, 16) > window_lower_bound(g, 16)
True
"""

from __future__ import annotations

import math

import numpy as np
from scipy.sparse import csr_array
from scipy.sparse.csgraph import maximum_flow

from perfmodel._validate import positive
from perfmodel.pipeline.bounds import closure_works, stage_windows, window_lower_bound
from perfmodel.pipeline.budget import Deadline, check_deadline
from perfmodel.pipeline.graph import Graph, bisect_threshold, check_k

__all__ = ["CutNetwork", "boundary_cuts", "cut_lower_bound"]

_UNITS = 5e8  # the weighted tensors, all together, in integer flow units (int32 capacities)
_FOREVER = 2**30  # an edge no cut may take: more than all finite capacities together
_TOLERANCE = 1e-9  # relative: a proof at T certifies T * (1 - this), below any float tie


class CutNetwork:
    """The closure network of a graph, built once for many probes: node ``u``, its tensor
    ``n + u``, source, sink.

    Parameters
    ----------
    graph : Graph
        The model graph.
    """

    def __init__(self, graph: Graph) -> None:
        n = graph.n
        self.graph, self.n = graph, n
        self.senders = np.array([u for u in range(n) if graph.successors[u]], dtype=np.int64)
        heads, tails = [], []
        for u in self.senders:
            for v in graph.successors[u]:
                heads += [n + u, v]  # tensor u reaches reader v; v in the downset needs u
                tails += [v, u]
        self.heads, self.tails = np.array(heads, np.int64), np.array(tails, np.int64)
        self.reach = closure_works(graph)
        self.readers = [np.array(graph.successors[u], dtype=np.int64) for u in self.senders]

    def cuts(self, k: int, limit: float, deadline: Deadline | None = None) -> np.ndarray | None:
        """The weighted minimum cut of each boundary ``0 .. k - 2`` under ``limit``, s.

        Parameters
        ----------
        k : int
            The number of stages, count.
        limit : float
            The bottleneck, s.
        deadline : Deadline, optional
            Past it, the boundaries not yet cut count as free (still a bound).

        Returns
        -------
        numpy.ndarray or None
            One cut per boundary, s; None when some node has no stage window: nothing fits
            under ``limit`` at all.
        """
        n = self.n
        earliest, latest = stage_windows(self.reach, k, limit)
        if np.any(earliest > latest):
            return None
        if not len(self.senders):
            return np.zeros(max(k - 1, 0))
        spans = np.array(
            [
                max(1, int(latest[r].max()) - int(earliest[u]))
                for u, r in zip(self.senders, self.readers, strict=True)
            ]
        )
        weights = np.asarray(self.graph.comm)[self.senders] / spans
        total = float(weights.sum())
        if total == 0:
            return np.zeros(max(k - 1, 0))
        capacity = np.floor(weights / total * _UNITS).astype(
            np.int64
        )  # rounded down: still a bound
        heads = np.concatenate([self.senders, self.heads])
        tails = np.concatenate([self.senders + n, self.tails])
        caps = np.concatenate([capacity, np.full(len(self.heads), _FOREVER, np.int64)])
        source, sink, size = 2 * n, 2 * n + 1, 2 * n + 2
        found = np.zeros(max(k - 1, 0))
        for i in range(k - 1):
            if deadline is not None and deadline.expired():
                break
            before = np.flatnonzero(latest <= i)  # must be in the first i + 1 stages
            after = np.flatnonzero(earliest > i)  # must be in a later stage
            rows = np.concatenate([heads, np.full(len(before), source), after])
            cols = np.concatenate([tails, before, np.full(len(after), sink)])
            values = np.concatenate([caps, np.full(len(before) + len(after), _FOREVER)])
            network = csr_array((values.astype(np.int32), (rows, cols)), shape=(size, size))
            network.sum_duplicates()
            found[i] = maximum_flow(network, source, sink).flow_value / _UNITS * total
        return found


def _fits(network: CutNetwork, k: int, limit: float, work: float, deadline: Deadline) -> bool:
    """Whether the cuts leave room for some split into ``m <= k`` stages under ``limit``."""
    cuts = network.cuts(k, limit, deadline)
    if cuts is None:
        return False
    paid = work + 2 * np.concatenate([[0.0], np.cumsum(cuts)])  # m stages: m - 1 boundaries
    stages = np.arange(1, k + 1)
    return bool(np.any(paid[:k] <= stages * limit * (1 + _TOLERANCE)))


def boundary_cuts(graph: Graph, k: int, limit: float) -> np.ndarray | None:
    """Each stage boundary's cheapest crossing under a bottleneck ``limit``, weighted.

    Parameters
    ----------
    graph : Graph
        The model graph.
    k : int
        The most stages, from 1 to the node count, count.
    limit : float
        The bottleneck, s; positive.

    Returns
    -------
    numpy.ndarray or None
        ``k - 1`` values, s: boundary ``i``'s minimum cut, each tensor's ``comm`` divided by
        the most boundaries it can cross; None when no split under ``limit`` exists because
        some node has no stage window.
    """
    k = check_k(graph, k)
    return CutNetwork(graph).cuts(k, positive("limit", limit))


def cut_lower_bound(graph: Graph, k: int, *, deadline: Deadline | None = None) -> float:
    """The smallest bottleneck whose boundary cuts still leave room for the work.

    Parameters
    ----------
    graph : Graph
        The model graph.
    k : int
        The number of stages, from 1 to the node count, count.
    deadline : Deadline, optional
        A wall-clock safety net shared with the caller; past it the bisection stops
        raising the bound (which stays valid). None by default.

    Returns
    -------
    float
        A lower bound on the best bottleneck, never below the window bound, s.
    """
    k = check_k(graph, k)
    deadline = check_deadline(deadline)
    network = CutNetwork(graph)
    low = window_lower_bound(graph, k, reach=network.reach)
    work = math.fsum(graph.work)
    high = max(work + 2 * math.fsum(graph.comm), low) * 1.01

    def fits(limit: float) -> bool:  # out of time: no proof, so it "fits"
        return deadline.expired() or _fits(network, k, limit, work, deadline)

    if low > 0 and not fits(low):
        low, _ = bisect_threshold(fits, low, high, rel_tol=1e-4)
    return low * (1 - _TOLERANCE)  # below any float tie with the optimum
