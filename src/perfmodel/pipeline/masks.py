"""A graph's nodes as bit masks, for the searches that walk its downsets: bit ``u`` of a
mask is node ``u``.

>>> from perfmodel.pipeline.graph import Graph
>>> needs, feeds = node_masks(Graph([1, 1, 1], [0, 0, 0], [(0, 1), (0, 2)]))
>>> [bin(m) for m in feeds]
['0b110', '0b0', '0b0']
"""

from __future__ import annotations

import numpy as np

from perfmodel.pipeline.graph import Graph

__all__ = ["node_masks", "unpack_masks"]


def node_masks(graph: Graph) -> tuple[list[int], list[int]]:
    """Each node's predecessors and successors as bit masks (bit u set for node u).

    Parameters
    ----------
    graph : Graph
        The model graph.

    Returns
    -------
    tuple of (list of int, list of int)
        ``(needs, feeds)``: ``needs[v]`` has a bit set for each node v reads,
        ``feeds[v]`` one for each node that reads v.
    """
    needs = [sum(1 << u for u in graph.predecessors[v]) for v in range(graph.n)]
    feeds = [sum(1 << w for w in graph.successors[v]) for v in range(graph.n)]
    return needs, feeds


def unpack_masks(packed: np.ndarray, n: int) -> np.ndarray:
    """Bit masks packed as 64-bit words, as a boolean matrix.

    Parameters
    ----------
    packed : numpy.ndarray
        A (rows, words) array of uint64: bit t of row r (word ``t // 64``, bit ``t % 64``)
        set when row r holds node t.
    n : int
        The nodes, count.

    Returns
    -------
    numpy.ndarray
        A (rows, n) bool array.

    Examples
    --------
    >>> unpack_masks(np.array([[0b101]], dtype=np.uint64), 3).tolist()
    [[True, False, True]]
    """
    raw = packed.astype("<u8").view(np.uint8)
    return np.unpackbits(raw, axis=1, bitorder="little")[:, :n] > 0
