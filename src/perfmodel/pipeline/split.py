"""Exact splits by dynamic programming: of a chain, of a fixed order, and over downsets.

Three exact algorithms, each for a different shape of problem:

* :func:`split_chain`: a chain of layers. Bisection on the bottleneck ``T``; for each ``T``
  a reachability sweep over stages in ``O(k·n)`` vectorised steps. A 10,000-layer chain
  splits into 64 stages in a fraction of a second.
* :func:`split_order`: the best split of a given topological order into contiguous pieces.
  The cost of every piece comes from a 2-D difference array (``O(n² + edges)``), then a
  min-max dynamic program over (stages, prefix). Feasible by construction, optimal for that
  order, and the inner loop of the order search in :mod:`perfmodel.pipeline.search`.
* :func:`split_downsets`: the optimum over *all* feasible splits. A feasible split is a
  chain of downsets (sets closed under predecessors), one per stage boundary, so a dynamic
  program over the downsets is exact. Transformer and CNN graphs are narrow and have few
  downsets (GPT-2-like: one per node plus one); a wide random DAG has too many, and the
  function says so by returning ``None``.

>>> from perfmodel.pipeline.graph import Graph
>>> g = Graph.chain([4.0, 1.0, 1.0, 4.0], [0.5, 0.5, 0.5, 0.5])
>>> split_chain(g, 2).stages
((0, 1), (2, 3))
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np

from perfmodel._validate import count
from perfmodel.pipeline.budget import Deadline
from perfmodel.pipeline.graph import (
    Graph,
    Partition,
    bisect_threshold,
    bottleneck_of,
    check_k,
    combinatorial_lower_bound,
    fits_memory,
)
from perfmodel.pipeline.masks import node_masks, unpack_masks

__all__ = [
    "DOWNSET_LIMIT",
    "PAIR_LIMIT",
    "downsets",
    "order_segment_costs",
    "split_chain",
    "split_downsets",
    "split_order",
]

#: :func:`split_downsets` gives up on graphs with more downsets than this.
DOWNSET_LIMIT = 50_000
#: ... or more (downset, smaller downset) pairs of similar work than this.
PAIR_LIMIT = 400_000_000
_ROUNDING = 1e-12  # relative slack for sums taken in a different order


def _partition(graph: Graph, stages: list[tuple[int, ...]], bound: float, method: str) -> Partition:
    bottleneck = bottleneck_of(graph, stages)
    return Partition(
        stages=tuple(stages),
        bottleneck=bottleneck,
        lower_bound=min(max(bound, 0.0), bottleneck),
        method=method,
    )


def _walk_back(previous: Callable[[int, int], int], end: int, used: int) -> list[tuple[int, int]]:
    """Follow a dynamic program's back-pointers from ``end`` through ``used`` stages.

    ``previous(j, end)`` is where the ``j``-th stage, ending at ``end``, starts. Returns each
    stage's ``(start, end)``, first stage first.

    >>> _walk_back(lambda j, end: {4: 2, 2: 0}[end], 4, 2)
    [(0, 2), (2, 4)]
    """
    spans = []
    for j in range(used, 0, -1):
        start = previous(j, end)
        spans.append((start, end))
        end = start
    spans.reverse()
    return spans


def split_chain(graph: Graph, k: int) -> Partition:
    """The optimal split of a chain ``0 -> 1 -> ... -> n-1`` into at most ``k`` stages.

    Stage ``[a, b)`` costs ``work[a:b]`` plus ``comm[a-1]`` (received, unless it is the first
    stage) plus ``comm[b-1]`` (sent, unless it is the last). Because of the two ``comm``
    terms that cost is not monotone in ``b``, so a greedy cut is wrong; instead a stage
    ``[a, b)`` fits under ``T`` exactly when ``key[a] >= need[b]`` with
    ``key[a] = P[a] - comm[a-1]`` and ``need[b] = P[b] + comm[b-1] - T`` (``P`` the prefix
    sums of work), and a running maximum of ``key`` over the prefixes reachable with
    ``j - 1`` stages gives every prefix reachable with ``j``. Bisection on ``T`` stops when
    the bracket is within ``1e-12`` of the answer.

    Parameters
    ----------
    graph : Graph
        A chain: its edges are exactly ``(i, i + 1)`` (a ValueError otherwise).
    k : int
        The most stages, from 1 to the node count, count.

    Returns
    -------
    Partition
        The optimal split, proven by its lower bound to within a relative ``1e-12`` or so.
        When the graph's memory capacity can bind, :func:`split_order` of the chain's one
        order finds it instead (``O(k·n²)``).
    """
    k = check_k(graph, k)
    if not graph.is_chain:
        raise ValueError("`graph` must be a chain 0 -> 1 -> ... -> n-1; use split_order.")
    if graph.limited:  # the sweep does not know memory; the order's DP does, in O(k·n²)
        return split_order(graph, range(graph.n), k)
    n = graph.n
    work, comm = np.array(graph.work), np.array(graph.comm)
    prefix = np.concatenate(([0.0], np.cumsum(work)))
    key = prefix[:n] - np.concatenate(([0.0], comm[:-1]))  # stage starting at a
    reach_cost = prefix[1:] + np.concatenate((comm[:-1], [0.0]))  # stage ending at b (1..n)
    positions = np.arange(n)

    def sweep(limit: float) -> list[np.ndarray] | None:
        """Back-pointers of a split under ``limit``, or None when none exists."""
        need = reach_cost - limit
        reachable = np.zeros(n + 1, dtype=bool)
        reachable[0] = True
        pointers = []
        for _ in range(k):
            masked = np.where(reachable[:n], key, -math.inf)
            running = np.maximum.accumulate(masked)
            best_start = np.maximum.accumulate(np.where(masked >= running, positions, 0))
            reachable = np.concatenate(([False], running >= need))
            pointers.append(best_start)
            if reachable[n]:
                return pointers
        return None

    total = float(prefix[-1])
    low = combinatorial_lower_bound(graph, k) * (1 - _ROUNDING)
    high = total * (1 + _ROUNDING) + 1e-300  # one stage holding everything always fits
    low, high = bisect_threshold(lambda t: sweep(t) is not None, low, high, rel_tol=_ROUNDING)
    pointers = sweep(high)
    assert pointers is not None  # high is always feasible
    spans = _walk_back(lambda j, end: int(pointers[j - 1][end - 1]), n, len(pointers))
    stages = [tuple(range(start, end)) for start, end in spans]
    return _partition(graph, stages, low * (1 - _ROUNDING), "chain dynamic programming")


def order_segment_costs(graph: Graph, order: Sequence[int]) -> np.ndarray:
    """``C[a, b]``: the cost of the stage ``order[a..b]`` (inclusive); ``inf`` when a > b.

    Node u at position p with consumers at positions ``c_1 < ... < c_m`` is *sent* by every
    segment ``a <= p <= b < c_m`` and *received* by every segment with ``p < a`` that holds
    some consumer: ``c_(i-1) < a <= c_i <= b``. Each of those regions is a rectangle in
    (a, b), so all of them together are one 2-D difference array and two cumulative sums.

    Parameters
    ----------
    graph : Graph
        The model graph.
    order : sequence of int
        Every node once; the stages are its contiguous pieces.

    Returns
    -------
    numpy.ndarray
        An (n, n) array of floats: ``C[a, b]`` is the :func:`stage_cost` of the nodes at
        positions ``a..b``, s; ``inf`` below the diagonal, and where the piece's memory
        exceeds the graph's capacity. (A transposed view: see :func:`_costs_by_end`.)
    """
    costs: np.ndarray = _costs_by_end(graph, order).T
    return costs


def _costs_by_end(graph: Graph, order: Sequence[int]) -> np.ndarray:
    """:func:`order_segment_costs` transposed, ``E[b, a] = C[a, b]``, in row-major order, so
    that the pieces ending at b are one row: what the min-max program reads. Built so, no
    (n, n) array is copied to turn it round, and each sum is taken in the same order as
    row by row over ``C`` (down a, then along b), so the costs are the same to the bit."""
    n = graph.n
    position = np.empty(n, dtype=int)
    position[list(order)] = np.arange(n)
    ends: list[int] = []
    starts: list[int] = []
    vals: list[float] = []

    def rectangle(a0: int, a1: int, b0: int, b1: int, value: float) -> None:
        starts.extend((a0, a1 + 1, a0, a1 + 1))
        ends.extend((b0, b0, b1 + 1, b1 + 1))
        vals.extend((value, -value, -value, value))

    for u in range(n):
        if not graph.successors[u] or graph.comm[u] == 0:
            continue
        p, c = int(position[u]), graph.comm[u]
        consumers = sorted(int(position[v]) for v in graph.successors[u])
        rectangle(0, p, p, consumers[-1] - 1, c)
        previous = p
        for ci in consumers:
            if ci > previous:
                rectangle(previous + 1, ci, ci, n - 1, c)
                previous = ci
    # each cell's corners summed in the order given (as np.add.at would), in one pass
    corners = np.array(ends, dtype=np.intp) * (n + 1) + np.array(starts, dtype=np.intp)
    grid = np.bincount(corners, weights=np.array(vals, dtype=float), minlength=(n + 1) ** 2)
    grid = grid.reshape(n + 1, n + 1)
    np.cumsum(grid, axis=1, out=grid)  # down the starts a first...
    for b in range(1, n + 1):  # ...then along the ends b, a row at a time (numpy's axis-0
        grid[b] += grid[b - 1]  # cumsum reads strided, at a quarter of the speed)
    prefix = np.concatenate(([0.0], np.cumsum(np.array(graph.work)[list(order)])))
    costs = prefix[1:, None] - prefix[None, :-1]
    costs += grid[:n, :n]
    if graph.limited:  # a piece that cannot fit on one device cannot run
        held = np.concatenate(([0.0], np.cumsum(np.array(graph.memory)[list(order)])))
        costs[~fits_memory(held[1:, None] - held[None, :-1], graph.capacity)] = math.inf
    costs[np.arange(n)[None, :] > np.arange(n)[:, None]] = math.inf  # a piece ends after it starts
    return costs


#: Rows of piece costs the min-max program takes at a time.
_BAND = 128


def _even_split_bottleneck(ends: np.ndarray, work: np.ndarray, k: int) -> float:
    """The bottleneck of one split the min-max program can do no worse than: at most ``k``
    pieces of about equal work (compute time alone, the sends ignored), priced by ``ends``
    (:func:`_costs_by_end`), each piece's order ``work`` given in order."""
    n = len(work)
    prefix = np.cumsum(work)
    cuts = np.searchsorted(prefix, prefix[-1] * np.arange(1, k) / k, side="left") + 1
    bounds = np.unique(np.concatenate(([0], np.clip(cuts, 1, n), [n])))
    return float(max(ends[b - 1, a] for a, b in zip(bounds[:-1], bounds[1:], strict=True)))


def _min_max_dp(ends: np.ndarray, k: int, most: float = math.inf) -> tuple[np.ndarray, np.ndarray]:
    """``best[j, e]``: least bottleneck of the first e positions in j stages, and argmins,
    from the piece costs by end, ``ends[b, a]`` (:func:`_costs_by_end`).

    ``most`` is the bottleneck of some split into at most k pieces, so no better split uses
    a piece costing more: pieces starting left of every piece of cost ``<= most`` in a band
    of rows are skipped. Every ``best[j, e] <= most`` and its argmin are as without it (a
    larger entry may be larger still, or ``inf``), so the best split is the same."""
    n = ends.shape[0]
    best = np.full((k + 1, n + 1), math.inf)
    start = np.zeros((k + 1, n + 1), dtype=int)
    best[0, 0] = 0.0
    candidates = np.empty_like(ends)
    # each row's first start a of a piece costing at most ``most`` (0 if none does)
    first = np.argmax(ends <= most, axis=1) if math.isfinite(most) else np.zeros(n, dtype=int)
    # Row b is finite only for a <= b: rows are taken in bands, each from the band's first
    # useful start up to its last row's diagonal (the first a of least bottleneck is the
    # same: every a past the band's edge costs inf in every row of the band).
    bands = []
    for low in range(0, n, _BAND):
        high = min(low + _BAND, n)
        bands.append((low, high, int(first[low:high].min())))
    for j in range(1, k + 1):
        for low, high, left in bands:
            band = candidates[low:high, left:high]
            np.maximum(ends[low:high, left:high], best[j - 1, None, left:high], out=band)  # [b, a]
            picked = np.argmin(band, axis=1)  # the first a of least bottleneck
            start[j, low + 1 : high + 1] = picked + left
            best[j, low + 1 : high + 1] = band[np.arange(high - low), picked]
    return best, start


def split_order(graph: Graph, order: Sequence[int], k: int) -> Partition:
    """The best split of a topological ``order`` into at most ``k`` contiguous stages.

    Contiguous pieces of a topological order are always feasible; for a chain, whose only
    order is ``0..n-1``, the result is optimal. ``O(k·n²)`` vectorised work; the lower bound
    reported is the combinatorial one (the split is only the best *for this order*).

    Parameters
    ----------
    graph : Graph
        The model graph.
    order : sequence of int
        A topological order: every node once, every edge pointing forwards (a ValueError
        otherwise).
    k : int
        The most stages, from 1 to the node count, count.

    Returns
    -------
    Partition
        The best split of ``order``; its lower bound is the chain optimum (less a relative
        ``1e-12``) for a chain, else :func:`combinatorial_lower_bound`. When no ``k``
        pieces of the order fit the memory capacity, one stage of bottleneck ``inf``.
    """
    k = check_k(graph, k)
    if sorted(order) != list(range(graph.n)):
        raise ValueError("`order` must list every node exactly once.")
    position = {node: i for i, node in enumerate(order)}
    if any(position[u] > position[v] for u, v in graph.edges):
        raise ValueError("`order` must be topological: every edge must point forwards.")
    ends = _costs_by_end(graph, order)
    most = _even_split_bottleneck(ends, np.array(graph.work)[list(order)], k)
    best, start = _min_max_dp(ends, k, most)
    used = int(np.argmin(best[:, -1]))
    if math.isinf(best[used, -1]):  # no k pieces fit the memory: say so by an inf bottleneck
        return _partition(graph, [tuple(order)], 0.0, "topological-order DP (nothing fits)")
    spans = _walk_back(lambda j, end: int(start[j, end]), graph.n, used)
    stages = [tuple(order[a:b]) for a, b in spans]
    bound = combinatorial_lower_bound(graph, k)
    if graph.is_chain:
        bound = float(best[used, -1]) * (1 - _ROUNDING)
    method = "chain dynamic programming" if graph.is_chain else "topological-order DP"
    return _partition(graph, stages, bound, method)


def downsets(
    graph: Graph, limit: int = DOWNSET_LIMIT, *, deadline: Deadline | None = None
) -> list[int] | None:
    """Every downset (set closed under predecessors) as a bit mask, smallest first.

    ``None`` when there are more than ``limit``, or more than ``max(1000, 5e6 / n)``
    (enumerating costs ``n`` steps per downset): a wide graph has exponentially many. Also
    ``None`` when a ``deadline`` (a wall-clock safety net) passes first.

    Parameters
    ----------
    graph : Graph
        The model graph.
    limit : int
        The most downsets to enumerate before giving up, count.
    deadline : Deadline, optional
        A wall-clock safety net; none by default.

    Returns
    -------
    list of int or None
        The downsets as bit masks (bit v set for node v), by size then value, the empty
        set first and the whole graph last; ``None`` when there are too many or the
        deadline passed.
    """
    limit = min(count("limit", limit), max(1000, 5_000_000 // graph.n))
    needs, _ = node_masks(graph)
    seen = {0}
    frontier = [0]
    while frontier:
        if deadline is not None and deadline.expired():
            return None
        grown = []
        for ideal in frontier:
            for v in range(graph.n):
                if not ideal >> v & 1 and needs[v] & ~ideal == 0:
                    bigger = ideal | 1 << v
                    if bigger not in seen:
                        seen.add(bigger)
                        grown.append(bigger)
            if len(seen) > limit:
                return None
        frontier = grown
    return sorted(seen, key=lambda mask: (mask.bit_count(), mask))


def _packed(masks: list[int], n: int) -> np.ndarray:
    """Bit masks as a (len(masks), words) array of 64-bit words."""
    words = (n + 63) // 64
    raw = b"".join(m.to_bytes(8 * words, "little") for m in masks)
    return np.frombuffer(raw, dtype="<u8").reshape(len(masks), words)


def split_downsets(
    graph: Graph,
    k: int,
    *,
    limit: int = DOWNSET_LIMIT,
    upper: float | None = None,
    masks: list[int] | None = None,
    pair_limit: int = PAIR_LIMIT,
    deadline: Deadline | None = None,
) -> Partition | None:
    """The optimal split over all feasible splits, or ``None`` if there are too many downsets.

    A feasible split into stages ``S_1, ..., S_j`` is the same thing as a chain of downsets
    ``∅ ⊂ D_1 ⊂ ... ⊂ D_j = V`` with ``S_i = D_i \\ D_(i-1)``. For a stage ``S = D \\ D'``
    every tensor it receives comes from ``D'`` and every consumer outside it lies outside
    ``D``, so its cost follows from the two masks. The dynamic program is over
    (stages used, downset). Only pairs whose stage does at most ``upper`` seconds of work
    can be in a split at least as good as ``upper`` (by default the best split of the
    graph's own order), which leaves ``O(d·d/k)`` pairs rather than ``O(d²)``. Returns
    ``None`` also when more than ``pair_limit`` pairs remain. ``masks`` passes in the
    downsets when they are already known (or any family of downsets holding the empty
    set and the whole graph: the result is then the best split whose cuts all come from
    the family). A ``deadline`` (a wall-clock safety net) that passes mid-way also gives
    ``None``.

    Parameters
    ----------
    graph : Graph
        The model graph.
    k : int
        The most stages, from 1 to the node count, count.
    limit : int
        The most downsets to enumerate when ``masks`` is not given, count.
    upper : float, optional
        A bottleneck some feasible split reaches, s; by default that of
        ``split_order(graph, graph.order, k)``.
    masks : list of int, optional
        Downsets as bit masks, by size as :func:`downsets` returns them (the empty set
        first, the whole graph last); enumerated when not given.
    pair_limit : int
        The most (downset, smaller downset) pairs, times the 64-bit words of a mask, to
        consider, count.
    deadline : Deadline, optional
        A wall-clock safety net; none by default.

    Returns
    -------
    Partition or None
        The best split whose cuts are all among the downsets (so the optimum when
        ``masks`` holds them all), its lower bound that bottleneck less a relative
        ``1e-12``; or ``None`` when there are too many downsets or pairs, or the deadline
        passed.
    """
    k = check_k(graph, k)
    if masks is None:
        masks = downsets(graph, limit)
    if masks is None:
        return None
    if upper is None:
        upper = split_order(graph, graph.order, k).bottleneck
    n = graph.n
    packed = _packed(masks, n)
    member = unpack_masks(packed, n)
    adjacency = np.zeros((n, n), dtype=np.float32)  # adjacency[u, v]: v reads u
    for u, v in graph.edges:
        adjacency[u, v] = 1.0
    work, comm, memory = np.array(graph.work), np.array(graph.comm), np.array(graph.memory)
    size = member.sum(axis=1)
    held = member @ work  # work inside each downset
    by_work = np.argsort(held, kind="stable")
    sorted_work = held[by_work]
    reach = upper * (1 + 1e-9) + 1e-300
    lows = np.searchsorted(sorted_work, held - reach, side="left")
    highs = np.searchsorted(sorted_work, held * (1 + 1e-12) + 1e-300, side="right")
    if int((highs - lows).sum()) * packed.shape[1] > pair_limit:
        return None
    d = len(masks)
    best = np.full((k + 1, d), math.inf)
    choice = np.zeros((k + 1, d), dtype=int)
    best[0, 0] = 0.0
    for i in range(1, d):
        if deadline is not None and i % 256 == 0 and deadline.expired():
            return None
        inside = member[i]
        band = by_work[lows[i] : highs[i]]
        band = band[size[band] < size[i]]
        smaller = band[~(packed[band] & ~packed[i]).any(axis=1)]
        if not len(smaller):
            continue
        stage = inside & ~member[smaller]  # one candidate last stage per smaller downset
        sends = (adjacency @ ~inside).astype(bool)  # has a consumer outside the downset
        feeds = (stage.astype(np.float32) @ adjacency.T) > 0  # u feeds the candidate stage
        cost = stage @ work + (stage & sends) @ comm + (member[smaller] & feeds) @ comm
        if graph.limited:
            cost[~fits_memory(stage @ memory, graph.capacity)] = math.inf
        candidates = np.maximum(best[:-1, smaller], cost)
        picked = np.argmin(candidates, axis=1)
        best[1:, i] = candidates[np.arange(k), picked]
        choice[1:, i] = smaller[picked]
    used = int(np.argmin(best[:, d - 1]))
    if not math.isfinite(best[used, d - 1]):  # rounding kept the order's own split out
        return split_order(graph, graph.order, k)
    spans = _walk_back(lambda j, i: int(choice[j, i]), d - 1, used)
    stages = [tuple(np.flatnonzero(member[b] & ~member[a]).tolist()) for a, b in spans]
    optimum = float(best[used, d - 1])
    return _partition(graph, stages, optimum * (1 - _ROUNDING), "dynamic programming on downsets")
