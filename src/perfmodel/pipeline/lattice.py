"""The exact downset dynamic program at Inception scale: blocks in series, priced apart.

A feasible split is a chain of downsets (sets closed under predecessors), so a dynamic
program over the downsets is exact (:func:`perfmodel.pipeline.split.split_downsets`). It
weighs each downset against every smaller one, so its cost grows with the square of the
downsets: Inception-v3, at one node per convolution, batch norm and ReLU, has 35,682
downsets, some 6 x 10^8 pairs.

Real networks are built from blocks in series. Call node ``c`` a *series point* when every
other node is an ancestor or a descendant of ``c`` and no edge jumps over it: every edge
from an ancestor of ``c`` ends at ``c`` or at another ancestor (Inception's concatenations
and ResNet's additions are series points). Then every downset is "everything up to the
last series point it holds, plus a downset of the next block's interior", and a stage that
leaves block ``a`` and ends in a later block ``b`` costs

``out[a][L'] + (work of the whole blocks between) + in[b][L]``,

where ``out`` depends only on where the stage starts (``L'`` in block ``a``) and ``in``
only on where it ends (``L`` in block ``b``): what the stage receives comes from block
``a`` and what it sends goes to block ``b``. So the best way to reach ``L`` from block
``a`` in ``j`` stages, ``min over L' of max(best[j-1][L'], out[a][L'] + X)``, needs only
the Pareto front of ``(best, out)`` over block ``a`` and a binary search: ``O(d log d)``
instead of ``O(d²)`` per pair of blocks. Pairs inside one block are priced directly, with
the block's own small bit masks.

A graph with no series points is one block and the program is the plain one. Its memory
is ``(k + 1)`` float64 values and two int32 back-pointers per downset, 16 B each: for
:data:`LATTICE_LIMIT` downsets at ``k = 64``, about 1.0 GB.

>>> from perfmodel.pipeline import zoo
>>> g = zoo.inception_like(modules=3)
>>> from perfmodel.pipeline.blocks import lattice_size
>>> lattice_size(g)   # downsets, block by block
164
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from perfmodel._validate import count, number
from perfmodel.pipeline.blocks import Block, lattice_blocks
from perfmodel.pipeline.budget import Deadline
from perfmodel.pipeline.graph import (
    Graph,
    Partition,
    bottleneck_of,
    check_k,
    fits_memory,
)

__all__ = ["LATTICE_PAIR_LIMIT", "split_lattice"]

#: ... or more (downset, smaller downset) pairs inside one block than this.
LATTICE_PAIR_LIMIT = 300_000_000

_ROUNDING = 1e-12  # relative slack for sums taken in a different order


@dataclass(frozen=True, slots=True)
class _Prices:
    """A block's local arrays: work and the cost of a stage ending or starting in it."""

    work: np.ndarray  # (s,) each interior node's work
    comm: np.ndarray  # (s,) each interior node's send time
    reads: np.ndarray  # (s, s) float: reads[u, v] = 1 when v reads u
    feeds_exit: np.ndarray  # (s,) bool: the exit point reads the node
    entry_readers: np.ndarray  # (s,) bool: the node reads the entry point
    entry_comm: float  # the entry point's send time (0.0 without one)
    held: np.ndarray  # (d,) work inside each local downset
    sends: np.ndarray  # (d, s) bool: in the downset and read outside it
    ends_here: np.ndarray  # (d,) a stage entering the block and ending at the downset
    starts_here: np.ndarray  # (d,) a stage starting after the downset, leaving the block
    whole: float  # the whole block's work, exit point included
    memory_held: np.ndarray  # (d,) memory inside each local downset
    memory_starts: np.ndarray  # (d,) memory of a stage starting after the downset, to the exit
    memory_whole: float  # the whole block's memory, exit point included


def _prices(graph: Graph, block: Block) -> _Prices:
    nodes, member = block.nodes, block.member
    s = len(nodes)
    local = {int(v): t for t, v in enumerate(nodes)}
    work = np.array([graph.work[v] for v in nodes], dtype=float)
    comm = np.array([graph.comm[v] for v in nodes], dtype=float)
    reads = np.zeros((s, s), dtype=np.float32)
    feeds_exit = np.zeros(s, dtype=bool)
    entry_readers = np.zeros(s, dtype=bool)
    for t, v in enumerate(nodes):
        for w in graph.successors[int(v)]:
            if w in local:
                reads[t, local[w]] = 1.0
            elif w == block.exit:
                feeds_exit[t] = True
    entry_comm, entry_to_exit = 0.0, False
    if block.entry is not None:
        entry_comm = graph.comm[block.entry]
        for w in graph.successors[block.entry]:
            if w in local:
                entry_readers[local[w]] = True
            entry_to_exit |= w == block.exit
    held = member @ work if s else np.zeros(len(member))
    outside = (~member).astype(np.float32)
    sends = member & (((outside @ reads.T) > 0) | feeds_exit)
    entry_sends = (~member & entry_readers).any(axis=1) | entry_to_exit
    border = sends @ comm + entry_comm * entry_sends
    exit_work = graph.work[block.exit] if block.exit is not None else 0.0
    total = float(work.sum())
    memory = np.array([graph.memory[v] for v in nodes], dtype=float)
    memory_held = member @ memory if s else np.zeros(len(member))
    exit_memory = graph.memory[block.exit] if block.exit is not None else 0.0
    return _Prices(
        work=work,
        comm=comm,
        reads=reads,
        feeds_exit=feeds_exit,
        entry_readers=entry_readers,
        entry_comm=entry_comm,
        held=held,
        sends=sends,
        ends_here=held + border,
        starts_here=(total - held) + exit_work + border,
        whole=total + exit_work,
        memory_held=memory_held,
        memory_starts=float(memory.sum()) - memory_held + exit_memory,
        memory_whole=float(memory.sum()) + exit_memory,
    )


def _front(best: np.ndarray, starts: np.ndarray, upper: float) -> tuple[np.ndarray, ...]:
    """The Pareto front of (best so far, cost of leaving) over a block's downsets."""
    alive = np.flatnonzero(best <= upper)
    if not len(alive):
        return (np.empty(0), np.empty(0), np.empty(0, dtype=int))
    by_best = alive[np.lexsort((starts[alive], best[alive]))]
    leave = starts[by_best]
    lowest = np.minimum.accumulate(leave)
    keep = np.concatenate(([True], leave[1:] < lowest[:-1]))
    chosen = by_best[keep]
    return best[chosen], starts[chosen], chosen


@dataclass(frozen=True)
class _Fronts:
    """The fronts of one block for ``j - 1 = 0, 1, ..., k - 1`` stages before it, end to end.

    Only the rows from the first to the last with a front are kept: row ``r``'s front (see
    :func:`_front`) is ``best[starts[r]:starts[r + 1]]`` and the same slice of ``leave`` and
    ``chosen``; ``keys`` is ``best - leave``, increasing within each row, and ``row`` each
    entry's row. ``reached`` is the rows of the block's ``best`` reached from them, ``j``.
    """

    best: np.ndarray
    leave: np.ndarray
    chosen: np.ndarray
    keys: np.ndarray
    row: np.ndarray
    starts: np.ndarray
    reached: slice

    @classmethod
    def of(cls, best: np.ndarray, starts: np.ndarray, upper: float) -> _Fronts:
        """The fronts of ``best[r]`` for the rows ``r`` that have one (see :func:`_front`)."""
        fronts = [_front(best[r], starts, upper) for r in range(len(best))]
        lengths = np.array([len(front[0]) for front in fronts], dtype=np.int64)
        used = np.flatnonzero(lengths)
        low, high = (int(used[0]), int(used[-1]) + 1) if len(used) else (0, 0)
        fronts, lengths = fronts[low:high], lengths[low:high]
        parts = [np.concatenate([np.empty(0), *(front[i] for front in fronts)]) for i in range(3)]
        return cls(
            best=parts[0],
            leave=parts[1],
            chosen=parts[2].astype(np.int64),
            keys=parts[0] - parts[1],
            row=np.repeat(np.arange(len(fronts)), lengths),
            starts=np.concatenate(([0], np.cumsum(lengths))),
            reached=slice(low + 1, high + 1),
        )


#: The most cells one vectorised step works on at once (stage counts times downsets in
#: :func:`_through_fronts`; stage counts, or the block's nodes, times pairs in
#: :func:`_inside`), count.
_CELLS = 1 << 20


def _through_fronts(
    fronts: _Fronts, extra: np.ndarray, ascending: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``min over row r's front of max(best, leave + extra)`` for each ``extra``, and its argmin.

    Returns two arrays of shape ``(rows, len(extra))``. ``ascending`` sorts ``extra``. On a
    front, sorted by ``best``, ``best - leave`` increases, so the best entry for ``extra`` is
    the first with ``best >= leave + extra`` or the one before it: a binary search. Each
    row's search (the count of its keys below each ``extra``) is worked out for all rows
    together: every key is placed among the sorted ``extra`` once, and a running count
    along them gives every row's answer.
    """
    rows, d = len(fronts.starts) - 1, len(extra)
    value = np.full((rows, d), math.inf)
    origin = np.zeros((rows, d), dtype=np.int64)
    if not len(fronts.best) or not d:
        return value, origin
    in_order = extra[ascending]
    # A key below extra[ascending[q]] is one placed at or before q.
    placed = np.searchsorted(in_order, fronts.keys, side="right")
    step = max(1, _CELLS // (d + 1))
    for low in range(0, rows, step):
        high = min(low + step, rows)
        mine = slice(fronts.starts[low], fronts.starts[high])
        cells = (fronts.row[mine] - low) * (d + 1) + placed[mine]
        below = np.bincount(cells, minlength=(high - low) * (d + 1)).reshape(high - low, d + 1)
        at = np.empty((high - low, d), dtype=np.int64)
        at[:, ascending] = np.cumsum(below, axis=1)[:, :d]
        # The first entry of the row at or above extra (if any), and the one before (if any).
        above = fronts.starts[low:high, None] + at
        last = len(fronts.best) - 1
        right = np.where(above < fronts.starts[low + 1 : high + 1, None],
                         fronts.best[np.minimum(above, last)], math.inf)  # fmt: skip
        left = np.where(at > 0, fronts.leave[above - 1] + extra, math.inf)
        use_left = left < right
        value[low:high] = np.where(use_left, left, right)
        origin[low:high] = fronts.chosen[np.minimum(above - use_left, last)]
    return value, origin


def _through_all(
    best: np.ndarray,
    start: _Prices,
    extra: np.ndarray,
    extra_memory: np.ndarray,
    capacity: float,
    reach: float,
) -> tuple[np.ndarray, np.ndarray]:
    """As :func:`_through_fronts` for one row, but pair by pair, each stage within
    ``capacity``."""
    alive = np.flatnonzero(best <= reach)
    value = np.full(len(extra), math.inf)
    origin = np.zeros(len(extra), dtype=int)
    if not len(alive):
        return value, origin
    step = max(1, 2_000_000 // len(alive))
    for low in range(0, len(extra), step):
        high = min(low + step, len(extra))
        leave = start.starts_here[alive, None] + extra[None, low:high]
        candidates = np.maximum(best[alive, None], leave)
        memory = start.memory_starts[alive, None] + extra_memory[None, low:high]
        candidates[~fits_memory(memory, capacity)] = math.inf
        picked = np.argmin(candidates, axis=0)
        value[low:high] = candidates[picked, np.arange(high - low)]
        origin[low:high] = alive[picked]
    return value, origin


def split_lattice(
    graph: Graph,
    k: int,
    *,
    upper: float,
    blocks: list[Block] | None = None,
    pair_limit: int = LATTICE_PAIR_LIMIT,
    deadline: Deadline | None = None,
) -> Partition | None:
    """The optimal split over all feasible splits, block by block; None if too large.

    Every stage stays within the graph's memory ``capacity``. Exact: the optimum over
    every chain of downsets, the same answer as
    :func:`perfmodel.pipeline.split.split_downsets` (ties may fall differently), at the
    cost of the pairs *inside* each block rather than across the whole graph.

    Parameters
    ----------
    graph : Graph
        The model graph.
    k : int
        The most stages, from 1 to the node count, count.
    upper : float
        The bottleneck of a split known to exist, s: pairs and states above it are pruned.
    blocks : list of Block, optional
        The graph's :func:`lattice_blocks`, when already known.
    pair_limit : int
        The most (downset, smaller downset) pairs of similar work inside one block, times
        the 64-bit words of its masks, count.
    deadline : Deadline, optional
        A wall-clock safety net; none by default.

    Returns
    -------
    Partition or None
        The optimal split, its lower bound that bottleneck less a relative ``1e-12``;
        ``None`` when there are more than :data:`LATTICE_LIMIT` downsets or
        ``pair_limit`` pairs in a block, when the deadline passed, or when rounding left
        no split under ``upper``.
    """
    k = check_k(graph, k)
    upper = number("upper", upper, minimum=0.0, allow_infinity=True, what="a bottleneck >= 0, s")
    pair_limit = count("pair_limit", pair_limit)
    if blocks is not None and (
        not isinstance(blocks, list) or not all(isinstance(b, Block) for b in blocks)
    ):
        raise TypeError(
            f"`blocks` must be the list of Block that lattice_blocks returns "
            f"(got {type(blocks).__name__})."
        )
    if blocks is None:
        blocks = lattice_blocks(graph, deadline=deadline)
    if blocks is None:
        return None
    reach = upper * (1 + 1e-9) + 1e-300
    prices = [_prices(graph, block) for block in blocks]
    for block, price in zip(blocks, prices, strict=True):
        order = np.sort(price.held)
        lows = np.searchsorted(order, price.held - reach, side="left")
        if int((np.arange(len(order)) - lows).clip(0).sum()) * block.packed.shape[1] > pair_limit:
            return None
    best = [np.full((k + 1, len(block.packed)), math.inf) for block in blocks]
    came_block = [np.full((k + 1, len(block.packed)), -1, dtype=np.int32) for block in blocks]
    came_local = [np.zeros((k + 1, len(block.packed)), dtype=np.int32) for block in blocks]
    best[0][0, 0] = 0.0
    fronts: dict[int, _Fronts] = {}
    for b, (block, price) in enumerate(zip(blocks, prices, strict=True)):
        between = between_memory = 0.0  # work and memory of the whole blocks between a and b
        ascending = np.argsort(price.ends_here, kind="stable")  # and so every extra below
        for a in range(b - 1, -1, -1):
            if between > reach or not fits_memory(between_memory, graph.capacity):
                break
            extra = between + price.ends_here
            if deadline is not None and deadline.expired():
                return None
            if graph.limited:
                value = np.full((k, len(extra)), math.inf)
                origin = np.zeros((k, len(extra)), dtype=np.int64)
                for j in range(1, k + 1):
                    value[j - 1], origin[j - 1] = _through_all(
                        best[a][j - 1],
                        prices[a],
                        extra,
                        between_memory + price.memory_held,
                        graph.capacity,
                        reach,
                    )
            else:
                if a not in fronts:
                    fronts[a] = _Fronts.of(best[a][:k], prices[a].starts_here, reach)
                value, origin = _through_fronts(fronts[a], extra, ascending)
            rows = slice(1, k + 1) if graph.limited else fronts[a].reached
            better = value < best[b][rows]
            best[b][rows][better] = value[better]
            came_block[b][rows][better] = a
            came_local[b][rows][better] = origin[better]
            between += prices[a].whole
            between_memory += prices[a].memory_whole
        capacity = graph.capacity if graph.limited else math.inf
        if not _inside(
            block, price, best[b], came_block[b], came_local[b], b, reach, capacity, deadline
        ):
            return None
    last = best[-1][:, -1]
    used = int(np.argmin(last))
    if not math.isfinite(last[used]):
        return None
    stages = _walk_back(graph, blocks, came_block, came_local, used)
    optimum = float(last[used])
    bottleneck = bottleneck_of(graph, stages)
    return Partition(
        stages=tuple(stages),
        bottleneck=bottleneck,
        lower_bound=min(optimum * (1 - _ROUNDING), bottleneck),
        method="dynamic programming on downsets",
    )


def _drop_dominated(best: np.ndarray) -> None:
    """Forget reaching a downset in j stages when fewer stages reach it no worse.

    Whatever follows j stages can follow the fewer, with no more stages in all and no worse
    bottleneck, so the optimum never needs the dominated entry (set to ``inf`` in place).
    """
    fewer = np.minimum.accumulate(best[:-1], axis=0)
    best[1:][best[1:] >= fewer] = math.inf


def _inside(
    block: Block,
    price: _Prices,
    best: np.ndarray,
    came_block: np.ndarray,
    came_local: np.ndarray,
    b: int,
    reach: float,
    capacity: float,
    deadline: Deadline | None,
) -> bool:
    """Stages that start and end inside one block; False if the deadline passed.

    A downset is reached from the smaller ones inside it, so the downsets of one size (none
    holds another) are priced together, a few thousand pairs at a time, once every smaller
    downset's best is final.
    """
    size = block.member.sum(axis=1)  # ascending: the block lists its downsets by size
    by_work = np.argsort(price.held, kind="stable")
    sorted_work = price.held[by_work]
    lows = np.searchsorted(sorted_work, price.held - reach, side="left")
    highs = np.searchsorted(sorted_work, price.held * (1 + 1e-12) + 1e-300, side="right")
    _drop_dominated(best)
    # the stage counts j at which each downset is reached within ``reach``: first[d]..last[d]
    alive = best <= reach
    first = np.where(alive.any(axis=0), alive.argmax(axis=0), len(best))
    last = np.where(alive.any(axis=0), len(best) - 1 - alive[::-1].argmax(axis=0), -1)
    band = highs - lows
    most = max(1, _CELLS // max(len(best), len(block.nodes)))  # pairs a chunk holds

    def reach_ends(ends: np.ndarray) -> None:
        """The best way to reach each downset of ``ends`` (all of one size) with a stage
        that starts at a smaller downset of the block, min over those of ``max(best, cost)``;
        ``first`` and ``last`` are kept up to date."""
        member, packed = block.member, block.packed
        # Each pair (end, start), the starts of one end in by_work's order, ends in turn.
        counts = band[ends]
        owner = np.repeat(np.arange(len(ends)), counts)
        starts = by_work[
            np.arange(len(owner)) + np.repeat(lows[ends] - np.cumsum(counts) + counts, counts)
        ]
        keep = (size[starts] < size[ends[0]]) & (last[starts] >= 0)
        keep &= first[starts] < len(best) - 1  # a stage more must still fit in k
        owner, starts = owner[keep], starts[keep]
        keep = ~(packed[starts] & ~packed[ends[owner]]).any(axis=1)  # inside the end
        owner, starts = owner[keep], starts[keep]
        if not len(owner):
            return
        end = ends[owner]
        stage = member[end] & ~member[starts]
        feeds = (stage.astype(np.float32) @ price.reads.T) > 0  # u feeds the stage
        cost = (
            price.held[end]
            - price.held[starts]
            + _comm_of(stage & price.sends[end], price.comm)
            + _comm_of(member[starts] & feeds, price.comm)
            + price.entry_comm * (stage & price.entry_readers).any(axis=1)
        )
        if capacity < math.inf:
            stage_memory = price.memory_held[end] - price.memory_held[starts]
            cost[~fits_memory(stage_memory, capacity)] = math.inf
        # Each end's pairs are contiguous; the stage counts its starts are reached at.
        new_end = np.concatenate(([True], owner[1:] != owner[:-1]))
        group = np.flatnonzero(new_end)
        column_of = np.cumsum(new_end) - 1  # each pair's end, among the ends reached
        low = np.minimum.reduceat(first[starts], group)
        high = np.minimum(np.maximum.reduceat(last[starts], group), len(best) - 2)
        rows = np.arange(len(best) - 1)[:, None]
        candidates = np.maximum(best[:-1, starts], cost)
        candidates[(rows < low[column_of]) | (rows > high[column_of])] = math.inf
        value = np.minimum.reduceat(candidates, group, axis=1)
        at_min = np.where(candidates == value[:, column_of], np.arange(len(owner)), len(owner))
        picked = np.minimum.reduceat(at_min, group, axis=1)  # the first start at the minimum
        column = end[group]
        better = value < best[1:, column]
        best[1:, column] = np.where(better, value, best[1:, column])
        came_block[1:, column] = np.where(better, b, came_block[1:, column])
        came_local[1:, column] = np.where(better, starts[picked], came_local[1:, column])
        kept = best[:, column]
        _drop_dominated(kept)
        best[:, column] = kept
        within = kept <= reach
        any_within = within.any(axis=0)
        first[column[any_within]] = within[:, any_within].argmax(axis=0)
        last[column[any_within]] = len(best) - 1 - within[::-1, any_within].argmax(axis=0)

    for level in np.split(np.arange(1, len(size)), np.flatnonzero(np.diff(size[1:])) + 1):
        start = 0
        while start < len(level):  # as many of the level's downsets as fit in ``most`` pairs
            stop = start + max(1, int(np.searchsorted(np.cumsum(band[level[start:]]), most)))
            if deadline is not None and deadline.expired():
                return False
            reach_ends(level[start:stop])
            start = stop
    return True


def _comm_of(sends: np.ndarray, comm: np.ndarray) -> np.ndarray:
    """``sends @ comm`` for a (pairs, nodes) bool ``sends``, each row summed on its own.

    A matrix product may sum a row in another order depending on how many rows it is
    given, so a pair's cost, and so a tie, would depend on how pairs are chunked.
    """
    summed: np.ndarray = np.where(sends, comm, 0.0).sum(axis=1)
    return summed


def _walk_back(
    graph: Graph,
    blocks: list[Block],
    came_block: list[np.ndarray],
    came_local: list[np.ndarray],
    used: int,
) -> list[tuple[int, ...]]:
    """The stages of the best chain of downsets ending at the whole graph, first first."""
    starts = []  # each block's first position in the topological order
    position = 0
    for block in blocks:
        starts.append(position)
        position += len(block.nodes) + (block.exit is not None)

    def nodes_of(b: int, i: int) -> set[int]:
        before = {v for v in graph.order[: starts[b]]}
        return before | {int(v) for v in blocks[b].nodes[blocks[b].member[i]]}

    b, i = len(blocks) - 1, len(blocks[-1].packed) - 1
    stages = []
    for j in range(used, 0, -1):
        a, start = int(came_block[b][j, i]), int(came_local[b][j, i])
        stage = nodes_of(b, i) - nodes_of(a, start)
        stages.append(tuple(sorted(stage)))
        b, i = a, start
    stages.reverse()
    return stages
