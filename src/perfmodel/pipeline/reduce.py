"""Draw a graph as coarsely as its optimum allows, before any proof is tried.

A profiler may record one layer as several nodes (a convolution, its bias, its batch
norm), or add nodes that do no work (an identity, a concatenation): the same network,
drawn finer. The finer drawing has more downsets and more nodes, so every method grows
slower and every bound weaker, although the best split is the same. :func:`reduce_graph`
undoes what it can *prove* changes nothing: it merges a node into its neighbour when
some optimal split keeps the two in one stage, and :func:`partition
<perfmodel.pipeline.partition.partition>` runs every method on the merged graph and maps
the split back.

Two exchange rules, each an edge ``u -> v`` that some optimal split never cuts. Write
``P`` for ``u``'s predecessors and ``c`` for ``comm``; a stage's cost is its work, the
tensors it receives and the tensors it sends (:func:`~perfmodel.pipeline.graph.stage_cost`).

* **Forward** (``u`` into ``v``): ``v`` is ``u``'s only successor and
  ``work[u] + c(P) <= c[u]``. Take a split with ``u`` in stage ``S`` and ``v`` in a later
  stage ``T``, and move ``u`` to ``T`` (its predecessors are in ``S`` or earlier, so the
  split stays feasible). ``S`` loses ``work[u]`` and the send of ``c[u]``, and at worst
  starts sending the tensors of ``P`` it holds: its cost changes by at most
  ``-work[u] - c[u] + c(P) <= 0``. ``T`` gains ``work[u]``, at worst receives every tensor
  of ``P``, and no longer receives ``c[u]``: at most ``work[u] + c(P) - c[u] <= 0``. No
  other stage changes: only ``S`` and ``T`` hold ``u`` or read it.
* **Backward** (``v`` into ``u``): ``u``'s only successor is ``v``, ``v``'s only
  predecessor is ``u``, and ``work[v] + c[v] <= c[u]``. Move ``v`` back to ``u``'s stage
  ``S``: ``S`` changes by at most ``work[v] + c[v] - c[u] <= 0`` (it no longer sends
  ``c[u]``, and sends ``c[v]`` instead), and ``T`` by at most
  ``-work[v] - c[u] + c[v] <= 0`` (it no longer receives ``c[u]``, and may receive
  ``c[v]`` instead of sending it).

So every split can be made one that keeps ``u`` and ``v`` together, no stage costing
more and no stage added: some optimal split never cuts the edge, and the graph with the
two merged (work added up; the merged node sends what the later one sent and reads what
either read from outside) has the same optimum. The merged graph's stage costs are the
original's for the same nodes, so a split found on it, mapped back by
:meth:`Reduction.expand`, costs the same, and a lower bound proven on it (no split of
the merged graph beats it) holds for the original, whose optimum is the same. Applied
one after another, the rules keep that: each is valid on the graph the last one left.

What they merge: a zero-work identity after a node (it sends the same tensor:
backward); a zero-work concatenation before a node, sending what its inputs sent
(forward); a chain of operators whose inner tensors cost at least what is left of the
chain and its output (backward, link by link). A chain whose inner cut can pay (a
cheaper tensor, a lot of work on either side) is kept as it is: its cut points can be
in an optimal split, and the exact program prices them. When the device memory can
bind, only a node that holds no memory is moved, so that no stage gains any.

:func:`redraw_finer` is the inverse, for tests and benchmarks: the same network with each
node split into a chain of two or three, and identities and concatenations added.

>>> from perfmodel.pipeline.graph import Graph
>>> g = Graph([1.0, 0.0, 2.0], [0.5, 0.5, 0.5], [(0, 1), (1, 2)])  # 1 is an identity
>>> reduction = reduce_graph(g)
>>> reduction.graph.n, reduction.groups
(2, ((0, 1), (2,)))
>>> reduction.expand([(0,), (1,)])
((0, 1), (2,))
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from perfmodel._validate import count
from perfmodel.pipeline.graph import Graph

__all__ = ["Reduction", "reduce_graph", "redraw_finer"]


@dataclass(frozen=True, slots=True)
class Reduction:
    """A graph with the nodes merged that some optimal split keeps together.

    Parameters
    ----------
    graph : Graph
        The merged graph: node ``i`` stands for the original nodes ``groups[i]``.
    groups : tuple of tuple of int
        Each merged node's original nodes, ascending; the groups in the order of their
        first node, so the merged graph keeps the original's order.
    original : Graph
        The graph that was reduced.
    """

    graph: Graph
    groups: tuple[tuple[int, ...], ...]
    original: Graph

    @property
    def reduced(self) -> bool:
        """Whether any node was merged."""
        return self.graph.n < self.original.n

    def expand(self, stages: Iterable[Iterable[int]]) -> tuple[tuple[int, ...], ...]:
        """A split of the merged graph as the same split of the original.

        Parameters
        ----------
        stages : iterable of iterable of int
            Stages of merged nodes, in pipeline order.

        Returns
        -------
        tuple of tuple of int
            The same stages as original nodes, each ascending.
        """
        return tuple(
            tuple(sorted(v for node in stage for v in self.groups[node])) for stage in stages
        )


class _Merging:
    """The graph as mutable sets while nodes are merged: ``alive`` nodes stand for their
    ``members``."""

    def __init__(self, graph: Graph) -> None:
        self.work = list(graph.work)
        self.comm = list(graph.comm)
        self.memory = list(graph.memory)
        self.succ = [set(s) for s in graph.successors]
        self.pred = [set(p) for p in graph.predecessors]
        self.members = [[v] for v in range(graph.n)]
        self.alive = [True] * graph.n
        self.limited = graph.limited

    def movable(self, v: int) -> bool:
        """Whether moving ``v`` to another stage cannot break the device's memory."""
        return not self.limited or self.memory[v] == 0

    def absorb(self, keep: int, gone: int) -> None:
        """Merge ``gone`` into ``keep`` along the edge between them (either way round)."""
        self.work[keep] += self.work[gone]
        self.memory[keep] += self.memory[gone]
        self.members[keep] += self.members[gone]
        self.alive[gone] = False
        if gone in self.pred[keep]:  # forward: keep reads what gone read
            self.pred[keep].discard(gone)
            for p in self.pred[gone]:
                self.succ[p].discard(gone)
                self.succ[p].add(keep)
                self.pred[keep].add(p)
        else:  # backward: keep sends what gone sent
            self.succ[keep].discard(gone)
            self.comm[keep] = self.comm[gone]
            for w in self.succ[gone]:
                self.pred[w].discard(gone)
                self.pred[w].add(keep)
                self.succ[keep].add(w)

    def step(self, u: int) -> int | None:
        """Merge ``u`` with a neighbour if a rule allows; the node kept, or None."""
        if len(self.succ[u]) != 1:
            return None
        (v,) = self.succ[u]
        inputs = math.fsum(self.comm[p] for p in self.pred[u])
        if self.movable(u) and self.work[u] + inputs <= self.comm[u]:
            self.absorb(v, u)  # forward: u joins v's stage
            return v
        if (
            len(self.pred[v]) == 1
            and self.movable(v)
            and self.work[v] + self.comm[v] <= self.comm[u]
        ):
            self.absorb(u, v)  # backward: v joins u's stage
            return u
        return None


def reduce_graph(graph: Graph) -> Reduction:
    """Merge every edge the forward and backward rules prove some optimal split keeps.

    See the module's docstring for the rules and their proof. The merged graph has the
    same optimum as ``graph``, for any number of stages; a split of it maps back
    (:meth:`Reduction.expand`) to a split of ``graph`` with the same stage costs (up to
    the rounding of work added in another order), and a lower bound proven on it holds
    for ``graph``.

    Parameters
    ----------
    graph : Graph
        The model graph (a TypeError otherwise).

    Returns
    -------
    Reduction
        The merged graph and each merged node's original nodes; the graph itself, one
        node per group, when no rule applies.

    Examples
    --------
    >>> from perfmodel.pipeline.graph import Graph
    >>> chain = Graph.chain([1.0, 1.0, 1.0], [0.1, 0.1, 0.1])  # every cut can pay
    >>> reduce_graph(chain).reduced
    False
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"`graph` must be a pipeline.Graph (got {type(graph).__name__}).")
    state = _Merging(graph)
    queue = deque(graph.order)
    queued = set(queue)
    while queue:
        u = queue.popleft()
        queued.discard(u)
        if not state.alive[u]:
            continue
        kept = state.step(u)
        if kept is None:
            continue
        # the kept node and its neighbours may now meet a rule they did not before
        for w in (kept, *state.pred[kept], *state.succ[kept]):
            if w not in queued:
                queued.add(w)
                queue.append(w)
    nodes = [v for v in range(graph.n) if state.alive[v]]
    if len(nodes) == graph.n:
        return Reduction(graph, tuple((v,) for v in range(graph.n)), graph)
    groups = sorted((tuple(sorted(state.members[v])), v) for v in nodes)
    index = {v: i for i, (_, v) in enumerate(groups)}
    reduced = Graph(
        [state.work[v] for _, v in groups],
        [state.comm[v] for _, v in groups],
        [(index[u], index[w]) for _, u in groups for w in state.succ[u]],
        memory=[state.memory[v] for _, v in groups],
        capacity=graph.capacity,
    )
    return Reduction(reduced, tuple(group for group, _ in groups), graph)


def redraw_finer(
    graph: Graph,
    *,
    seed: int = 0,
    identity_share: float = 0.3,
    concat_share: float = 0.5,
) -> Graph:
    """The same network drawn finer: each node a chain of 2 or 3, identities and concats added.

    Each node becomes a chain of two or three parts (seeded), its work divided among them
    at random, its memory on the first part. The first part reads the node's inputs and
    the last sends its output; an inner part's tensor costs ``comm + work`` of the node
    (an operator's intermediate costs at least what finishing it and sending its output
    does), so cutting inside a node never beats cutting at its ends: the same network,
    with the same best split. A share of the nodes pass their output through an identity
    (no work, the same tensor), and a share of those with several inputs read them
    through a concatenation (no work, sending what its inputs sent).

    Parameters
    ----------
    graph : Graph
        The model graph (a TypeError otherwise).
    seed : int
        The random generator's seed, count (0 or more): the same seed, the same drawing.
    identity_share : float
        The chance that a node's output passes through an identity, fraction (0 to 1).
    concat_share : float
        The chance that a node of several inputs reads them through a concatenation,
        fraction (0 to 1).

    Returns
    -------
    Graph
        The finer graph; each original node's parts are consecutive, in the original's
        topological order (``graph.order``), and it keeps the original's ``capacity``.

    Examples
    --------
    >>> g = Graph([1.0, 2.0, 3.0], [0.5, 0.5, 0.5], [(0, 2), (1, 2)])
    >>> fine = redraw_finer(g, seed=1)
    >>> fine.n > g.n, round(sum(fine.work), 12)
    (True, 6.0)
    >>> reduce_graph(fine).graph.n
    3
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"`graph` must be a pipeline.Graph (got {type(graph).__name__}).")
    seed = count("seed", seed, minimum=0)
    for name, share in (("identity_share", identity_share), ("concat_share", concat_share)):
        if not isinstance(share, (int, float)) or isinstance(share, bool):
            raise TypeError(f"`{name}` must be a number from 0 to 1 (got {type(share).__name__}).")
        if not 0 <= share <= 1:
            raise ValueError(f"`{name}` must be from 0 to 1 (got {share!r}).")
    rng = np.random.default_rng(seed)
    work: list[float] = []
    comm: list[float] = []
    memory: list[float] = []
    edges: list[tuple[int, int]] = []
    out = [0] * graph.n  # the node that sends each original node's output

    def add(w: float, c: float, m: float = 0.0) -> int:
        work.append(w)
        comm.append(c)
        memory.append(m)
        return len(work) - 1

    for v in graph.order:  # every input is drawn before its reader
        inputs: Sequence[int] = [out[u] for u in graph.predecessors[v]]
        if len(inputs) > 1 and rng.random() < concat_share:
            concat = add(0.0, math.fsum(comm[u] for u in inputs))
            edges.extend((u, concat) for u in inputs)
            inputs = [concat]
        w, c = graph.work[v], graph.comm[v]
        parts = int(rng.integers(2, 4))
        shares = rng.uniform(0.2, 1.0, parts)
        shares /= shares.sum()
        pieces = [w * float(s) for s in shares[:-1]]
        pieces.append(max(0.0, w - math.fsum(pieces)))
        previous = -1
        for i, piece in enumerate(pieces):
            last = i == len(pieces) - 1
            node = add(piece, c if last else c + w, graph.memory[v] if i == 0 else 0.0)
            edges.extend((u, node) for u in (inputs if i == 0 else [previous]))
            previous = node
        if rng.random() < identity_share:
            identity = add(0.0, c)
            edges.append((previous, identity))
            previous = identity
        out[v] = previous
    return Graph(work, comm, edges, memory=memory, capacity=graph.capacity)
