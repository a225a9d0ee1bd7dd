"""The pipeline-partitioning problem: a model graph, a split of it, and what a split costs.

The model is described in :mod:`perfmodel.pipeline`; this module holds the data types
(:class:`Graph`, :class:`Partition`), the stage cost every algorithm is judged by, and the
checks every entry point shares.

>>> g = Graph([1, 2, 3], [0.5, 0.5, 0.5], [(0, 1), (0, 2)])
>>> stage_cost(g, [1, 2])  # work 5, receives node 0's output once
5.5
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from typing import Any, cast, overload

import numpy as np

from perfmodel._validate import count, non_negative, positive

__all__ = [
    "MEMORY_SLACK",
    "MIP_REL_GAP",
    "Graph",
    "Partition",
    "bottleneck_of",
    "check_k",
    "check_per_node",
    "check_time_limit",
    "combinatorial_lower_bound",
    "fits_memory",
    "is_feasible",
    "stage_cost",
    "stage_order",
    "stage_parts",
]

#: The MIP's split is proven within this relative distance of the optimum; a result whose
#: gap is within ten times this is reported as optimal.
MIP_REL_GAP = 1e-6


#: A stage fits its device when its memory is at most ``capacity * (1 + MEMORY_SLACK)``: every
#: solver sums a stage's memory in its own order, and the slack keeps their last-bit rounding
#: from deciding whether a stage that fills the device exactly fits.
MEMORY_SLACK = 1e-9


@overload
def fits_memory(total: float, capacity: float) -> bool: ...
@overload
def fits_memory(total: np.ndarray, capacity: float) -> np.ndarray: ...
def fits_memory(total: float | np.ndarray, capacity: float) -> bool | np.ndarray:
    """Whether ``total`` bytes fit in ``capacity`` bytes, up to :data:`MEMORY_SLACK`.

    Parameters
    ----------
    total : float or numpy.ndarray
        A stage's memory, B (or an array of them).
    capacity : float
        One device's memory, B.

    Returns
    -------
    bool or numpy.ndarray
        ``total <= capacity * (1 + MEMORY_SLACK)``, elementwise for an array.

    Examples
    --------
    >>> fits_memory(0.4 + 0.2 + 1.1 - 0.4, 1.3)  # 1.3000000000000003
    True
    """
    return total <= capacity * (1 + MEMORY_SLACK)


def check_per_node(
    name: str, values: object, check: Callable[[str, object], Any], unit: str, n: int | None = None
) -> tuple[Any, ...]:
    """``values`` as a tuple, each entry passed through ``check(f"{name}[i]", entry)``.

    Parameters
    ----------
    name : str
        The argument's name, for the messages.
    values : sequence
        One entry per node (not a string, mapping or set: a TypeError).
    check : callable
        Checks one entry, given its name and value, and returns it as kept.
    unit : str
        What the entries are, for the TypeError (``"seconds"``, ``"bytes"``...).
    n : int, optional
        The node count the entries must match (a ValueError); unchecked when None.

    Returns
    -------
    tuple
        The checked entries, in order.

    Examples
    --------
    >>> check_per_node("params", [3, 4], lambda name, v: count(name, v, minimum=0), "counts", 2)
    (3, 4)
    """
    if isinstance(values, (str, bytes, Mapping, Set)) or not isinstance(values, Iterable):
        raise TypeError(
            f"`{name}` must be a sequence of {unit}, one per node (got {type(values).__name__})."
        )
    checked = tuple(check(f"{name}[{i}]", value) for i, value in enumerate(values))
    if n is not None and len(checked) != n:
        raise ValueError(f"`{name}` must have one entry per node: {n} (got {len(checked)}).")
    return checked


@dataclass(frozen=True, slots=True)
class Graph:
    """A model graph: per-node compute time, per-node send time, and data dependences.

    Parameters
    ----------
    work : sequence of float
        ``work[i]``: compute time of node i, s.
    comm : sequence of float
        ``comm[i]``: time to send node i's output to another stage, s.
    edges : iterable of (int, int)
        ``(u, v)``: node v reads node u's output. Repeated edges count once.
    memory : sequence of float, optional
        ``memory[i]``: the bytes node i keeps on its device (its weights and the activations
        in flight), B; zeros by default.
    capacity : float
        The bytes one device holds, B; a stage whose nodes' ``memory`` adds up to more
        cannot run, so it costs ``inf``. ``inf`` (no limit) by default.

    Attributes
    ----------
    successors : tuple of tuple of int
        ``successors[u]``: the nodes that read node u's output, ascending.
    predecessors : tuple of tuple of int
        ``predecessors[v]``: the nodes whose output node v reads, ascending.
    order : tuple of int
        A topological order of the nodes; among ready nodes the smallest index comes first.

    Raises
    ------
    ValueError
        On mismatched lengths, negative or non-finite times, unknown nodes, self-loops, a
        cycle, or a node whose ``memory`` alone exceeds ``capacity``.
    """

    work: tuple[float, ...]
    comm: tuple[float, ...]
    edges: tuple[tuple[int, int], ...]
    memory: tuple[float, ...]
    capacity: float
    _limited: bool = field(init=False, repr=False, compare=False)
    successors: tuple[tuple[int, ...], ...] = field(init=False, repr=False)
    predecessors: tuple[tuple[int, ...], ...] = field(init=False, repr=False)
    order: tuple[int, ...] = field(init=False, repr=False)

    def __init__(
        self,
        work: Sequence[float],
        comm: Sequence[float],
        edges: Iterable[tuple[int, int]],
        *,
        memory: Sequence[float] | None = None,
        capacity: float = math.inf,
    ) -> None:
        work_t = check_per_node("work", work, non_negative, "seconds")
        comm_t = check_per_node("comm", comm, non_negative, "seconds")
        if not work_t:
            raise ValueError("`work` must list at least one node.")
        if len(work_t) != len(comm_t):
            raise ValueError(
                f"`work` and `comm` must have one entry per node (got {len(work_t)} and "
                f"{len(comm_t)})."
            )
        n = len(work_t)
        memory_t = (0.0,) * n
        if memory is not None:
            memory_t = check_per_node("memory", memory, non_negative, "bytes", n)
        capacity = positive("capacity", capacity, allow_infinity=True)
        if memory_t and not fits_memory(max(memory_t), capacity):
            node = memory_t.index(max(memory_t))
            raise ValueError(
                f"`capacity` must hold every node on its own: node {node} needs "
                f"{memory_t[node]:.3g} B (got capacity {capacity:.3g} B)."
            )
        edge_set: list[tuple[int, int]] = []
        given: object = edges
        if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
            raise TypeError(
                f"`edges` must be an iterable of (u, v) pairs (got {type(given).__name__})."
            )
        for edge in cast(Iterable[Any], edges):
            try:
                first, second = edge
            except (TypeError, ValueError):
                raise TypeError(
                    f"`edges` must hold pairs (u, v) of node indices (got {edge!r})."
                ) from None
            if not (type(first) is int and type(second) is int) and not all(  # int: quick
                isinstance(end, numbers.Integral) and not isinstance(end, bool)
                for end in (first, second)
            ):
                raise TypeError(f"`edges` must hold pairs (u, v) of node indices (got {edge!r}).")
            u, v = int(first), int(second)
            if not (0 <= u < n and 0 <= v < n):
                raise ValueError(f"edge {edge!r} names a node outside 0..{n - 1}.")
            if u == v:
                raise ValueError(f"edge {edge!r} is a self-loop; a node cannot read itself.")
            edge_set.append((u, v))
        unique = tuple(sorted(set(edge_set)))
        succ: list[list[int]] = [[] for _ in range(n)]
        pred: list[list[int]] = [[] for _ in range(n)]
        for u, v in unique:
            succ[u].append(v)
            pred[v].append(u)
        # What the programs add up at most: all the work, and each tensor sent once and
        # received by every consumer, each of those counted in up to four prefix sums.
        most = sum(work_t) + 4 * sum(c * (1 + len(s)) for c, s in zip(comm_t, succ, strict=True))
        if not math.isfinite(most):
            raise ValueError(
                "`work` and `comm` must add up to a finite time: the stages' costs are sums "
                f"of them (got a total of {most} s)."
            )
        object.__setattr__(self, "work", work_t)
        object.__setattr__(self, "comm", comm_t)
        object.__setattr__(self, "edges", unique)
        object.__setattr__(self, "memory", memory_t)
        object.__setattr__(self, "capacity", capacity)
        object.__setattr__(self, "_limited", not fits_memory(math.fsum(memory_t), capacity))
        object.__setattr__(self, "successors", tuple(tuple(s) for s in succ))
        object.__setattr__(self, "predecessors", tuple(tuple(p) for p in pred))
        object.__setattr__(self, "order", self._topological_order())

    def _topological_order(self) -> tuple[int, ...]:
        indegree = [len(p) for p in self.predecessors]
        ready = [i for i in range(self.n) if indegree[i] == 0]
        order: list[int] = []
        while ready:
            node = min(ready)  # smallest index first: deterministic
            ready.remove(node)
            order.append(node)
            for v in self.successors[node]:
                indegree[v] -= 1
                if indegree[v] == 0:
                    ready.append(v)
        if len(order) != self.n:
            stuck = sorted(set(range(self.n)) - set(order))
            raise ValueError(f"the graph has a cycle through nodes {stuck[:6]}; a model is a DAG.")
        return tuple(order)

    @classmethod
    def chain(
        cls,
        work: Sequence[float],
        comm: Sequence[float],
        *,
        memory: Sequence[float] | None = None,
        capacity: float = math.inf,
    ) -> Graph:
        """A chain of layers, each reading the previous one's output.

        Parameters
        ----------
        work : sequence of float
            ``work[i]``: compute time of layer i, s.
        comm : sequence of float
            ``comm[i]``: time to send layer i's output to another stage, s.
        memory : sequence of float, optional
            ``memory[i]``: the bytes layer i keeps on its device, B; zeros by default.
        capacity : float
            The bytes one device holds, B; ``inf`` by default.

        Returns
        -------
        Graph
            The chain, with the edges ``(i, i + 1)``.
        """
        edges = [(i, i + 1) for i in range(len(work) - 1)]
        return cls(work, comm, edges, memory=memory, capacity=capacity)

    @property
    def limited(self) -> bool:
        """Whether the device capacity can bind: some stage could need more than it."""
        return self._limited

    @property
    def n(self) -> int:
        """The number of nodes, count."""
        return len(self.work)

    @property
    def is_chain(self) -> bool:
        """Whether the edges are exactly ``(i, i + 1)`` for every node i but the last."""
        return self.edges == tuple((i, i + 1) for i in range(self.n - 1))


@dataclass(frozen=True, slots=True, kw_only=True)
class Partition:
    """A split into stages (node indices, in pipeline order) and how good it is.

    ``lower_bound`` never exceeds the best possible bottleneck; ``gap`` is the fraction by
    which ``bottleneck`` could at most exceed it; ``optimal`` says the split is proven best.
    ``complete`` is False when a wall-clock cap stopped the search before its work bounds
    did: the split and the bound are still valid, but another machine may find others.

    Parameters
    ----------
    stages : tuple of tuple of int
        The stages in pipeline order, each a tuple of node indices.
    bottleneck : float
        The costliest stage's :func:`stage_cost`: the pipeline's time per input, s.
    lower_bound : float
        A time no split of the graph into the requested number of stages can beat, s;
        0.0 when the method proves none.
    method : str
        The algorithm that found the split (``"brute force"``, ``"MIP (HiGHS)"``, ...).
    complete : bool
        False when a wall-clock cap stopped the search before its work bounds did.
    """

    stages: tuple[tuple[int, ...], ...]
    bottleneck: float
    lower_bound: float
    method: str
    complete: bool = True

    @property
    def gap(self) -> float:
        """``1 - lower_bound / bottleneck``: the share of the bottleneck the optimum may be
        below it, fraction (0.0 when the bottleneck is 0)."""
        return 0.0 if self.bottleneck == 0 else 1 - self.lower_bound / self.bottleneck

    @property
    def optimal(self) -> bool:
        """Proven optimal, up to the MIP's relative gap and float rounding."""
        return self.gap <= 10 * MIP_REL_GAP

    @property
    def throughput(self) -> float:
        """Inputs per second in steady state: one per bottleneck time."""
        return math.inf if self.bottleneck == 0 else 1 / self.bottleneck


def stages_from_labels(labels: Sequence[int], k: int) -> tuple[tuple[int, ...], ...]:
    """Each node's stage number to the stages themselves, in order, empty stages dropped.

    >>> stages_from_labels([0, 0, 2, 2], 3)
    ((0, 1), (2, 3))
    """
    stages: list[list[int]] = [[] for _ in range(k)]
    for node, stage in enumerate(labels):
        stages[stage].append(node)
    return tuple(tuple(stage) for stage in stages if stage)


def bisect_threshold(
    fits: Callable[[float], bool], low: float, high: float, *, rel_tol: float
) -> tuple[float, float]:
    """Narrow ``[low, high]`` around the smallest value that ``fits``, by halving.

    ``fits`` must be monotone (False below a threshold, True from it on) and ``fits(high)``
    true. Stops when the bracket is within ``rel_tol`` of ``high``, or after 200 halvings
    (which also ends on subnormal numbers, where the midpoint stalls). Returns the final
    ``(low, high)``: ``high`` fits; nothing below ``low`` does, if ``low`` did not.

    >>> low, high = bisect_threshold(lambda x: x * x >= 2, 1.0, 2.0, rel_tol=1e-12)
    >>> round(high, 9)
    1.414213562
    """
    for _ in range(200):
        middle = (low + high) / 2
        if high - low <= rel_tol * high or not low < middle < high:
            break
        if fits(middle):
            high = middle
        else:
            low = middle
    return low, high


def stage_parts(graph: Graph, stage: Iterable[int]) -> tuple[float, float, float]:
    """``(compute, receive, send)`` seconds of a stage; each tensor counted once.

    Parameters
    ----------
    graph : Graph
        The model graph.
    stage : iterable of int
        The stage's node indices.

    Returns
    -------
    tuple of float
        ``(compute, receive, send)``, s: the members' work, the ``comm`` of every outside
        node a member reads, and the ``comm`` of every member some outside node reads.
    """
    members = set(stage)
    producers = {u for v in members for u in graph.predecessors[v] if u not in members}
    senders = {u for u in members if any(v not in members for v in graph.successors[u])}
    return (
        sum((graph.work[i] for i in members), 0.0),
        sum((graph.comm[u] for u in producers), 0.0),
        sum((graph.comm[u] for u in senders), 0.0),
    )


def stage_cost(graph: Graph, stage: Iterable[int]) -> float:
    """Work of the stage plus each tensor it receives and each tensor it sends, once.

    ``inf`` when the stage's ``memory`` exceeds the graph's ``capacity``: it cannot run.

    Parameters
    ----------
    graph : Graph
        The model graph.
    stage : iterable of int
        The stage's node indices.

    Returns
    -------
    float
        The stage's time per input, s: the sum of :func:`stage_parts`, or ``inf``.
    """
    members = set(stage)
    if not fits_device(graph, members):
        return math.inf
    compute, receive, send = stage_parts(graph, members)
    return compute + receive + send


def fits_device(graph: Graph, members: set[int]) -> bool:
    """Whether a stage's nodes fit one device: the memory test every solver decides by.

    Parameters
    ----------
    graph : Graph
        The model graph.
    members : set of int
        The stage's node indices.

    Returns
    -------
    bool
        True when the graph has no binding capacity or the members' ``memory``, added up
        in the set's own order, fits it (:func:`fits_memory`).
    """
    if not graph.limited:
        return True
    return bool(fits_memory(sum(graph.memory[i] for i in members), graph.capacity))


def stage_order(graph: Graph, stages: Iterable[Iterable[int]]) -> tuple[int, ...]:
    """The stages one after another, each in the graph's topological order.

    The result is a topological order of the whole graph whenever the split is feasible.

    Parameters
    ----------
    graph : Graph
        The model graph.
    stages : iterable of iterable of int
        The stages in pipeline order, each a collection of node indices.

    Returns
    -------
    tuple of int
        Every stage's nodes, stage after stage.
    """
    position = {v: i for i, v in enumerate(graph.order)}
    return tuple(v for stage in stages for v in sorted(stage, key=position.__getitem__))


def is_feasible(graph: Graph, stages: Sequence[Sequence[int]]) -> bool:
    """Every node in exactly one stage, and no edge from a later stage to an earlier one.

    Parameters
    ----------
    graph : Graph
        The model graph.
    stages : sequence of sequence of int
        The stages in pipeline order, each a sequence of node indices.

    Returns
    -------
    bool
        Whether the split is feasible.
    """
    where: dict[int, int] = {}
    for index, stage in enumerate(stages):
        for node in stage:
            if node in where:
                return False
            where[node] = index
    if sorted(where) != list(range(graph.n)):
        return False
    return all(where[u] <= where[v] for u, v in graph.edges)


def bottleneck_of(graph: Graph, stages: Sequence[Sequence[int]]) -> float:
    """The costliest stage's cost: the time per input of the whole pipeline.

    Parameters
    ----------
    graph : Graph
        The model graph.
    stages : sequence of sequence of int
        The stages, at least one, each a sequence of node indices.

    Returns
    -------
    float
        The largest :func:`stage_cost`, s.
    """
    return max(stage_cost(graph, s) for s in stages)


def check_k(graph: Graph, k: object) -> int:
    """``k`` as an int, or a clear error when it is not a stage count this graph allows.

    Parameters
    ----------
    graph : Graph
        The model graph (a TypeError if it is not a :class:`Graph`).
    k : int
        The number of stages: from 1 to the graph's node count, count.

    Returns
    -------
    int
        ``k``, checked, count.
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"`graph` must be a pipeline.Graph (got {type(graph).__name__}).")
    return count("k", k, minimum=1, maximum=graph.n)


def check_time_limit(time_limit_s: object) -> float:
    """``time_limit_s`` as a float: a positive number of seconds (``inf`` for no cap).

    Parameters
    ----------
    time_limit_s : float
        A wall-clock cap, s; positive, or ``math.inf`` for none.

    Returns
    -------
    float
        The cap, checked, s.
    """
    return positive("time_limit_s", time_limit_s, allow_infinity=True)


def combinatorial_lower_bound(graph: Graph, k: int) -> float:
    """``max(total work / k, largest node work)``: no split into k stages can beat it.

    Parameters
    ----------
    graph : Graph
        The model graph.
    k : int
        The number of stages, from 1 to the graph's node count, count.

    Returns
    -------
    float
        A lower bound on the best bottleneck, s.
    """
    k = check_k(graph, k)
    return max(sum(graph.work) / k, max(graph.work))
