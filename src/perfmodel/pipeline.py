"""Split a model graph into a pipeline of k stages and bound how good the split is.

A model is a DAG: node ``i`` does ``work[i]`` seconds of compute and its output takes
``comm[i]`` seconds to send to another stage. A stage's cost is its work, plus the time to
receive every tensor produced outside it that it uses, plus the time to send every tensor
it produces that is used outside it (each tensor counted once per stage). A split is
feasible when no edge goes from a later stage to an earlier one. The pipeline's
throughput is set by its slowest stage, the *bottleneck*.

Finding the best split is NP-hard on general graphs (Archer et al., ICML 2024). This
module gives exact answers where they are cheap (any chain; any graph of at most 12 nodes,
through a mixed-integer program solved by HiGHS) and, elsewhere, the best contiguous split
of a topological order together with a lower bound, so every result says how far from
optimal it can be.

References
----------
Archer, Fahrbach, Liu and Prabhu, "Practical Performance Guarantees for Pipelined DNN
Inference", ICML 2024.

Examples
--------
>>> g = Graph.chain([4.0, 1.0, 1.0, 4.0], [0.5, 0.5, 0.5, 0.5])
>>> result = partition(g, 2)
>>> result.stages, result.bottleneck, result.optimal
(((0, 1), (2, 3)), 5.5, True)
"""

from __future__ import annotations

import itertools
import math
import numbers
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import numpy as np

__all__ = [
    "EXACT_NODE_LIMIT",
    "MIP_REL_GAP",
    "Graph",
    "Partition",
    "brute_force",
    "combinatorial_lower_bound",
    "is_feasible",
    "partition",
    "solve_mip",
    "split_order",
    "stage_cost",
]

#: Graphs this small are solved exactly by the MIP.
EXACT_NODE_LIMIT = 12
#: The MIP's split is proven within this relative distance of the optimum. HiGHS also stops
#: at an absolute gap of 1e-6, so the MIP is posed in units of the combinatorial lower
#: bound (the scaled optimum is >= 1) to keep that absolute gap a relative one too.
MIP_REL_GAP = 1e-6
_HIGHS_ABS_GAP = 1e-6  # HiGHS's default mip_abs_gap, which scipy does not expose


def _times(name: str, values: Iterable[object]) -> tuple[float, ...]:
    out: list[float] = []
    for index, value in enumerate(values):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            raise TypeError(f"`{name}[{index}]` must be a number of seconds (got {value!r}).")
        if not math.isfinite(value) or value < 0:
            raise ValueError(
                f"`{name}[{index}]` must be a non-negative finite time (got {value!r})."
            )
        out.append(float(value))
    return tuple(out)


@dataclass(frozen=True, slots=True)
class Graph:
    """A model graph: per-node compute time, per-node send time, and data dependences.

    Parameters
    ----------
    work : sequence of float
        ``work[i]``: compute time of node i, seconds.
    comm : sequence of float
        ``comm[i]``: time to send node i's output to another stage, seconds.
    edges : iterable of (int, int)
        ``(u, v)``: node v reads node u's output.

    Raises
    ------
    ValueError
        On mismatched lengths, negative or non-finite times, unknown nodes, self-loops or
        a cycle.
    """

    work: tuple[float, ...]
    comm: tuple[float, ...]
    edges: tuple[tuple[int, int], ...]
    successors: tuple[tuple[int, ...], ...] = field(init=False, repr=False)
    predecessors: tuple[tuple[int, ...], ...] = field(init=False, repr=False)
    order: tuple[int, ...] = field(init=False, repr=False)

    def __init__(
        self, work: Sequence[float], comm: Sequence[float], edges: Iterable[tuple[int, int]]
    ) -> None:
        work_t, comm_t = _times("work", work), _times("comm", comm)
        if not work_t:
            raise ValueError("`work` must list at least one node.")
        if len(work_t) != len(comm_t):
            raise ValueError(
                f"`work` and `comm` must have one entry per node (got {len(work_t)} and "
                f"{len(comm_t)})."
            )
        n = len(work_t)
        edge_set: list[tuple[int, int]] = []
        for edge in cast(Iterable[Any], edges):
            try:
                first, second = edge
            except (TypeError, ValueError):
                raise ValueError(f"edge {edge!r} must be a pair (u, v) of node indices.") from None
            if not all(
                isinstance(end, numbers.Integral) and not isinstance(end, bool)
                for end in (first, second)
            ):
                raise ValueError(f"edge {edge!r} must be a pair (u, v) of node indices.")
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
        object.__setattr__(self, "work", work_t)
        object.__setattr__(self, "comm", comm_t)
        object.__setattr__(self, "edges", unique)
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
    def chain(cls, work: Sequence[float], comm: Sequence[float]) -> Graph:
        """A chain of layers, each reading the previous one's output."""
        return cls(work, comm, [(i, i + 1) for i in range(len(work) - 1)])

    @property
    def n(self) -> int:
        return len(self.work)

    @property
    def is_chain(self) -> bool:
        return self.edges == tuple((i, i + 1) for i in range(self.n - 1))


@dataclass(frozen=True, slots=True, kw_only=True)
class Partition:
    """A split into stages (node indices, in pipeline order) and how good it is.

    ``lower_bound`` never exceeds the best possible bottleneck; ``gap`` is the fraction by
    which ``bottleneck`` could at most exceed it; ``optimal`` says the split is proven best.
    """

    stages: tuple[tuple[int, ...], ...]
    bottleneck: float
    lower_bound: float
    method: str

    @property
    def gap(self) -> float:
        return 0.0 if self.bottleneck == 0 else 1 - self.lower_bound / self.bottleneck

    @property
    def optimal(self) -> bool:
        """Proven optimal, up to the MIP's relative gap and float rounding."""
        return self.gap <= 10 * MIP_REL_GAP

    @property
    def throughput(self) -> float:
        """Inputs per second in steady state: one per bottleneck time."""
        return math.inf if self.bottleneck == 0 else 1 / self.bottleneck


def stage_cost(graph: Graph, stage: Iterable[int]) -> float:
    """Work of the stage plus each tensor it receives and each tensor it sends, once."""
    members = set(stage)
    cost = sum(graph.work[i] for i in members)
    producers = {u for v in members for u in graph.predecessors[v] if u not in members}
    senders = {u for u in members if any(v not in members for v in graph.successors[u])}
    return cost + sum(graph.comm[u] for u in producers | senders)


def is_feasible(graph: Graph, stages: Sequence[Sequence[int]]) -> bool:
    """Every node in exactly one stage, and no edge from a later stage to an earlier one."""
    where: dict[int, int] = {}
    for index, stage in enumerate(stages):
        for node in stage:
            if node in where:
                return False
            where[node] = index
    if sorted(where) != list(range(graph.n)):
        return False
    return all(where[u] <= where[v] for u, v in graph.edges)


def _bottleneck(graph: Graph, stages: Sequence[Sequence[int]]) -> float:
    return max(stage_cost(graph, s) for s in stages)


def _check_k(graph: Graph, k: object) -> int:
    if isinstance(k, bool) or not isinstance(k, numbers.Integral) or int(k) < 1:
        raise ValueError(f"`k` must be a positive integer number of stages (got k={k!r}).")
    if int(k) > graph.n:
        raise ValueError(
            f"`k` must be between 1 and the number of nodes (got k={k} for {graph.n} nodes)."
        )
    return int(k)


def combinatorial_lower_bound(graph: Graph, k: int) -> float:
    """``max(total work / k, largest node work)``: no split into k stages can beat it."""
    k = _check_k(graph, k)
    return max(sum(graph.work) / k, max(graph.work))


def _segment_costs(graph: Graph, order: Sequence[int], end: int) -> np.ndarray:
    """Costs of the segments ``order[a..end]`` for every ``a <= end``, by growing leftwards."""
    position = {node: i for i, node in enumerate(order)}
    costs = np.empty(end + 1)
    work = incoming = outgoing = 0.0
    producers: set[int] = set()
    for a in range(end, -1, -1):
        node = order[a]
        work += graph.work[node]
        if node in producers:  # it fed the segment from outside; now it is inside
            producers.discard(node)
            incoming -= graph.comm[node]
        for u in graph.predecessors[node]:
            if u not in producers:
                producers.add(u)
                incoming += graph.comm[u]
        if any(position[v] > end for v in graph.successors[node]):
            outgoing += graph.comm[node]
        costs[a] = work + incoming + outgoing
    return costs


def split_order(graph: Graph, order: Sequence[int], k: int) -> Partition:
    """The best split of a topological ``order`` into at most ``k`` contiguous stages.

    Dynamic programming over (stages used, last node): ``O(k·n²)`` arithmetic after
    ``O(n²·degree)`` to price the segments. Contiguous pieces of a topological order are
    always feasible; for a chain, whose only order is 0..n-1, the result is optimal.
    """
    k = _check_k(graph, k)
    if sorted(order) != list(range(graph.n)):
        raise ValueError("`order` must list every node exactly once.")
    position = {node: i for i, node in enumerate(order)}
    if any(position[u] > position[v] for u, v in graph.edges):
        raise ValueError("`order` must be topological: every edge must point forwards.")
    n = graph.n
    best = np.full((k + 1, n + 1), math.inf)  # best[j][b]: first b nodes in j stages
    start = np.zeros((k + 1, n + 1), dtype=int)
    best[0][0] = 0.0
    for end in range(n):
        costs = _segment_costs(graph, order, end)  # costs[a] for segment a..end
        for j in range(1, k + 1):
            candidates = np.maximum(best[j - 1][: end + 1], costs)
            a = int(np.argmin(candidates))
            best[j][end + 1], start[j][end + 1] = candidates[a], a
    used = int(np.argmin(best[:, n]))
    bottleneck = float(best[used][n])
    stages, end, j = [], n, used
    while end > 0:
        a = int(start[j][end])
        stages.append(tuple(order[a:end]))
        end, j = a, j - 1
    stages.reverse()
    bound = bottleneck if graph.is_chain else combinatorial_lower_bound(graph, k)
    return Partition(
        stages=tuple(stages),
        bottleneck=bottleneck,
        lower_bound=min(bound, bottleneck),
        method="chain dynamic programming" if graph.is_chain else "topological-order DP",
    )


def brute_force(graph: Graph, k: int) -> Partition:
    """The optimum by trying every assignment of nodes to stages (tiny graphs only).

    An oracle for tests: ``k ** n`` assignments, so keep ``n`` at 8 or below.
    """
    k = _check_k(graph, k)
    if graph.n > 10:
        raise ValueError(f"brute force is for graphs of at most 10 nodes (got {graph.n}).")
    best: tuple[float, tuple[tuple[int, ...], ...]] = (math.inf, ())
    for labels in itertools.product(range(k), repeat=graph.n):
        if any(labels[u] > labels[v] for u, v in graph.edges):
            continue
        stages = tuple(tuple(i for i in range(graph.n) if labels[i] == s) for s in range(k))
        stages = tuple(s for s in stages if s)
        cost = _bottleneck(graph, stages)
        if cost < best[0]:
            best = (cost, stages)
    return Partition(stages=best[1], bottleneck=best[0], lower_bound=best[0], method="brute force")


def solve_mip(graph: Graph, k: int, *, time_limit_s: float = 30.0) -> Partition:
    """Minimise the bottleneck exactly with a mixed-integer program (scipy's HiGHS).

    Variables: ``x[i,s] = 1`` when node i is in stage s; ``r[u,s]`` and ``t[u,s]`` mark that
    stage s receives, or sends, node u's output; ``B`` the bottleneck. Constraints:
    each node in one stage; for each edge (u, v), stage(u) <= stage(v),
    ``r[u,s] >= x[v,s] - x[u,s]`` and ``t[u,s] >= x[u,s] - x[v,s]``; every stage's work
    plus its received and sent times is at most B. Minimise B.

    On a time limit the best split found is returned with HiGHS's dual bound as the lower
    bound, which is still a proof: no split is better than it.
    """
    from scipy.optimize import Bounds, LinearConstraint, milp

    k = _check_k(graph, k)
    n = graph.n
    # Pose the MIP in units of the combinatorial bound (the scaled optimum is then >= 1), but
    # never below 1e-9 of the largest time, or HiGHS rejects the coefficients.
    largest = max(max(graph.work), max(graph.comm))
    unit = max(combinatorial_lower_bound(graph, k), 1e-9 * largest) or 1.0
    work = [w / unit for w in graph.work]
    comm = [c / unit for c in graph.comm]
    senders = [u for u in range(n) if graph.successors[u]]
    nx, nr = n * k, len(senders) * k
    size = nx + 2 * nr + 1

    def x(i: int, s: int) -> int:  # node i in stage s
        return i * k + s

    def r(j: int, s: int) -> int:  # stage s receives the output of the j-th sender
        return nx + j * k + s

    def t(j: int, s: int) -> int:  # stage s sends the output of the j-th sender
        return nx + nr + j * k + s

    rows, lower, upper = [], [], []

    def add(coefficients: dict[int, float], lo: float, hi: float) -> None:
        row = np.zeros(size)
        for index, value in coefficients.items():
            row[index] += value
        rows.append(row)
        lower.append(lo)
        upper.append(hi)

    for i in range(n):
        add({x(i, s): 1.0 for s in range(k)}, 1, 1)
    for j, u in enumerate(senders):
        for v in graph.successors[u]:
            add({**{x(u, s): float(s) for s in range(k)}, **{x(v, s): -float(s) for s in range(k)}},
                -math.inf, 0)  # fmt: skip
            for s in range(k):
                add({r(j, s): 1.0, x(v, s): -1.0, x(u, s): 1.0}, 0, math.inf)
                add({t(j, s): 1.0, x(u, s): -1.0, x(v, s): 1.0}, 0, math.inf)
    for s in range(k):
        stage = {x(i, s): work[i] for i in range(n)}
        for j, u in enumerate(senders):
            stage[r(j, s)] = comm[u]
            stage[t(j, s)] = comm[u]
        stage[size - 1] = -1.0
        add(stage, -math.inf, 0)
    objective = np.zeros(size)
    objective[-1] = 1.0
    integrality = np.zeros(size)
    integrality[:nx] = 1
    bounds_hi = np.ones(size)
    bounds_hi[-1] = math.inf
    result = milp(
        objective,
        integrality=integrality,
        bounds=Bounds(np.zeros(size), bounds_hi),
        constraints=LinearConstraint(np.array(rows), lower, upper),
        options={"time_limit": time_limit_s, "mip_rel_gap": MIP_REL_GAP},
    )
    if result.x is None:
        raise RuntimeError(f"the MIP found no split within {time_limit_s:g} s: {result.message}")
    labels = [int(np.argmax(result.x[x(i, 0) : x(i, 0) + k])) for i in range(n)]
    stages = tuple(
        s for s in (tuple(i for i in range(n) if labels[i] == stage) for stage in range(k)) if s
    )
    bottleneck = _bottleneck(graph, stages)
    proven = result.status == 0
    # HiGHS stops once the incumbent is within max(1e-6, MIP_REL_GAP x incumbent) of its
    # bound, and may then report the incumbent itself as the "dual bound". Only the
    # incumbent minus that tolerance is a proof that no split is better.
    incumbent = float(result.fun)
    slack = max(_HIGHS_ABS_GAP, MIP_REL_GAP * incumbent)
    dual = getattr(result, "mip_dual_bound", None)
    proof = min(float(dual) if dual is not None else 0.0, incumbent - slack) * unit
    bound = max(proof, combinatorial_lower_bound(graph, k))
    return Partition(
        stages=stages,
        bottleneck=bottleneck,
        lower_bound=min(bound, bottleneck),
        method="MIP (HiGHS)" + ("" if proven else ", time limit"),
    )


def partition(graph: Graph, k: int, *, time_limit_s: float = 30.0) -> Partition:
    """Split ``graph`` into at most ``k`` pipeline stages, minimising the bottleneck.

    A chain is solved exactly by dynamic programming; a graph of at most
    :data:`EXACT_NODE_LIMIT` nodes exactly by the MIP; a larger graph by the best split of
    its topological order, with the combinatorial lower bound.
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"`graph` must be a pipeline.Graph (got {type(graph).__name__}).")
    _check_k(graph, k)
    if graph.is_chain:
        return split_order(graph, graph.order, k)
    if graph.n <= EXACT_NODE_LIMIT:
        return solve_mip(graph, k, time_limit_s=time_limit_s)
    return split_order(graph, graph.order, k)
