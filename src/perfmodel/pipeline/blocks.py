"""A network as blocks in series: its series points, and the downsets of each block.

Call node ``c`` a *series point* when every other node is an ancestor or a descendant of
``c`` and no edge jumps over it (Inception's concatenations and ResNet's additions are).
Then every downset of the graph is "everything up to the last series point it holds, plus a
downset of the next block's interior", so the downsets are counted, and enumerated, block
by block: :func:`lattice_blocks` gives each block's own downsets as bit masks, and
:func:`lattice_size` their count. :func:`perfmodel.pipeline.lattice.split_lattice` prices
stages across and inside the blocks.

>>> from perfmodel.pipeline import zoo
>>> g = zoo.inception_like(modules=3)
>>> len(series_points(g)), lattice_size(g)
(4, 164)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from perfmodel._validate import count
from perfmodel.pipeline.budget import Deadline
from perfmodel.pipeline.graph import (
    Graph,
)
from perfmodel.pipeline.masks import unpack_masks

__all__ = [
    "BLOCK_LIMIT",
    "LATTICE_LIMIT",
    "Block",
    "lattice_blocks",
    "lattice_size",
    "series_points",
]

#: :func:`split_lattice` gives up on graphs with more downsets than this, in all blocks ...
LATTICE_LIMIT = 1_000_000

#: ... or in any one block (whose pairs are priced one by one).
BLOCK_LIMIT = 100_000


def series_points(graph: Graph) -> list[int]:
    """The nodes every other node is an ancestor or descendant of, with no edge over them.

    Parameters
    ----------
    graph : Graph
        The model graph.

    Returns
    -------
    list of int
        The series points in topological order.

    Examples
    --------
    >>> from perfmodel.pipeline.graph import Graph
    >>> series_points(Graph([1, 1, 1, 1], [0, 0, 0, 0], [(0, 1), (0, 2), (1, 3), (2, 3)]))
    [0, 3]
    """
    n, order = graph.n, graph.order
    position = [0] * n
    for p, v in enumerate(order):
        position[v] = p
    ancestors, descendants = [0] * n, [0] * n
    for v in order:
        for u in graph.predecessors[v]:
            ancestors[v] |= ancestors[u] | 1 << u
    for v in reversed(order):
        for w in graph.successors[v]:
            descendants[v] |= descendants[w] | 1 << w
    points, reach = [], -1  # reach: the furthest position an earlier node's edge lands on
    for p, c in enumerate(order):
        if reach <= p and ancestors[c].bit_count() == p and descendants[c].bit_count() == n - 1 - p:
            points.append(c)
        reach = max(reach, *(position[w] for w in graph.successors[c]), p)
    return points


@dataclass(frozen=True, slots=True)
class Block:
    """The nodes strictly between two series points, and the downsets of those nodes.

    Parameters
    ----------
    nodes : numpy.ndarray
        The interior's nodes (graph indices), in topological order.
    entry : int or None
        The series point before them; None for the first block.
    exit : int or None
        The series point after them; None for the last block.
    member : numpy.ndarray
        A (d, s) bool array: ``member[i, t]`` when the i-th downset holds ``nodes[t]``;
        the downsets by size, the empty one first and the whole interior last.
    packed : numpy.ndarray
        The same downsets as (d, words) uint64 bit masks.
    """

    nodes: np.ndarray
    entry: int | None
    exit: int | None
    member: np.ndarray
    packed: np.ndarray


def _interiors(graph: Graph) -> list[tuple[list[int], int | None, int | None]]:
    points = series_points(graph)
    where = {v: p for p, v in enumerate(graph.order)}
    cuts = [-1, *(where[c] for c in points), graph.n]
    blocks = []
    for b in range(len(cuts) - 1):
        nodes = list(graph.order[cuts[b] + 1 : cuts[b + 1]])
        entry = graph.order[cuts[b]] if b > 0 else None
        exit_ = graph.order[cuts[b + 1]] if cuts[b + 1] < graph.n else None
        blocks.append((nodes, entry, exit_))
    return blocks


def _local_downsets(
    graph: Graph, nodes: list[int], limit: int, deadline: Deadline | None = None
) -> np.ndarray | None:
    """The interior's downsets as (d, words) uint64 bit masks, level by level (by size)."""
    s = len(nodes)
    words = max(1, (s + 63) // 64)
    local = {v: t for t, v in enumerate(nodes)}
    needs = np.zeros((s, words), dtype=np.uint64)
    for t, v in enumerate(nodes):
        for u in graph.predecessors[v]:
            if u in local:
                needs[t, local[u] // 64] |= np.uint64(1) << np.uint64(local[u] % 64)
    above, below = [0] * s, [0] * s  # each node's ancestors and descendants in the block
    for t, v in enumerate(nodes):  # nodes are in topological order
        for u in graph.predecessors[v]:
            if u in local:
                above[t] |= above[local[u]] | 1 << local[u]
    for t in reversed(range(s)):
        for w in graph.successors[nodes[t]]:
            if w in local:
                below[t] |= below[local[w]] | 1 << local[w]
    first = np.array([a.bit_count() for a in above])  # the smallest downset holding t
    last = s - 1 - np.array([b.bit_count() for b in below])  # the largest, less one
    level = np.zeros((1, words), dtype=np.uint64)
    levels, total = [level], 1
    for size in range(s):
        grown: list[np.ndarray] = []
        raw = 0
        for t in np.flatnonzero((first <= size) & (size <= last)).tolist():
            if deadline is not None and deadline.expired():
                return None
            bit = np.uint64(1) << np.uint64(t % 64)
            ready = ((level[:, t // 64] & bit) == 0) & ((level & needs[t]) == needs[t]).all(axis=1)
            if ready.any():
                bigger = level[ready].copy()
                bigger[:, t // 64] |= bit
                grown.append(bigger)
                raw += len(bigger)
                if raw > 4 * (limit - total):  # drop repeats early, to stop in time
                    grown = [np.unique(np.concatenate(grown), axis=0)]
                    raw = len(grown[0])
                    if total + raw > limit:
                        return None
        if not grown:
            break
        level = np.unique(np.concatenate(grown), axis=0)
        total += len(level)
        if total > limit:
            return None
        levels.append(level)
    return np.concatenate(levels)


def lattice_blocks(
    graph: Graph, limit: int = LATTICE_LIMIT, *, deadline: Deadline | None = None
) -> list[Block] | None:
    """The graph's blocks between series points, each with its interior's downsets.

    Parameters
    ----------
    graph : Graph
        The model graph.
    limit : int
        The most downsets, all blocks together, count (at most :data:`BLOCK_LIMIT` in one).
    deadline : Deadline, optional
        A wall-clock safety net; none by default.

    Returns
    -------
    list of Block or None
        The blocks in pipeline order; None when there are too many downsets or the
        deadline passed.
    """
    limit = count("limit", limit)
    blocks, total = [], 0
    for nodes, entry, exit_ in _interiors(graph):
        packed = _local_downsets(graph, nodes, min(BLOCK_LIMIT, limit - total), deadline)
        if packed is None or total + len(packed) > limit:
            return None
        total += len(packed)
        member = unpack_masks(packed, len(nodes))
        blocks.append(Block(np.array(nodes, dtype=int), entry, exit_, member, packed))
    return blocks


def lattice_size(graph: Graph, limit: int = LATTICE_LIMIT) -> int | None:
    """How many downsets the graph has, or None when there are more than ``limit``.

    Parameters
    ----------
    graph : Graph
        The model graph.
    limit : int
        The most downsets to count, count.

    Returns
    -------
    int or None
        The downsets, the empty set and the whole graph included, count; None also when
        one block has more than :data:`BLOCK_LIMIT`.
    """
    blocks = lattice_blocks(graph, limit)
    if blocks is None:
        return None
    return sum(len(block.packed) for block in blocks)
