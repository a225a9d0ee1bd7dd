"""The covering relaxation: how many stage-sized pieces does it take to cover the graph?

In a split whose bottleneck is at most ``T`` every stage is a set of nodes costing at most
``T``, and a stage's cost depends on that set alone (its work, the tensors it receives,
the tensors it sends). So if no ``k`` sets of cost at most ``T`` can even *cover* the
nodes (order and feasibility forgotten), no split under ``T`` exists, and ``T`` is a lower
bound on the best bottleneck.

Counting the sets is itself hard, but the linear-programming relaxation of "cover every
node with the fewest sets" is a strong and valid proof: if its optimum exceeds ``k``, so
does every integer cover. The relaxation has one column per possible set, far too many
to write down, so it is solved by *column generation*: start from a few sets, solve the
restricted LP, and ask for a set whose nodes' dual prices sum to more than 1 (only such
a set can lower the LP). Cheap candidates come from contiguous pieces of known good
orders; when none is left, a small MIP (HiGHS) finds the best set exactly, and its bound
gives Farley's lower bound ``LP >= restricted LP / best price``, a proof at every step.

>>> from perfmodel.pipeline.graph import Graph
>>> g = Graph.chain([2.0, 2.0, 2.0, 2.0], [1.0, 1.0, 1.0, 1.0])
>>> cover_probe(g, 2, 4.5, orders=[g.order])  # two stages of 2+2+1 = 5
<Verdict.INFEASIBLE: 'infeasible'>
>>> cover_probe(g, 2, 5.0, orders=[g.order])
<Verdict.OPEN: 'open'>

References
----------
Farley, "A note on bounding a class of linear programming problems, including cutting
stock problems", Operations Research 38(5), 1990.
"""

from __future__ import annotations

import enum
import functools
import math
import operator
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from perfmodel.pipeline.budget import Deadline, check_deadline
from perfmodel.pipeline.graph import MEMORY_SLACK, Graph, stage_cost
from perfmodel.pipeline.masks import node_masks
from perfmodel.pipeline.mip import SparseRows
from perfmodel.pipeline.split import order_segment_costs

__all__ = ["ConnectedPool", "Verdict", "connected_pool", "connected_sets", "cover_probe"]


class Verdict(enum.Enum):
    """What a feasibility probe "is there a split with every stage under T?" concluded.

    ``Verdict("open")`` is :attr:`OPEN`: a member is looked up by its value.

    Attributes
    ----------
    INFEASIBLE
        Proven: no split under T exists, so T is a lower bound on the best bottleneck.
    FEASIBLE
        A split under T was found.
    OPEN
        The relaxation allows a split under T, so there is no proof either way.
    UNKNOWN
        The work (or the safety-net clock) ran out before a conclusion.
    """

    INFEASIBLE = "infeasible"  #: proven: no split under T exists (the bound rises to T)
    FEASIBLE = "feasible"  #: a split under T was found
    OPEN = "open"  #: the relaxation allows it, so no proof either way
    UNKNOWN = "unknown"  #: the work (or the safety-net clock) ran out first


_NEW_COLUMNS = 20  # candidate sets added per round of the cheap pricing
_POOL_LIMIT = 50_000  # most connected sets enumerated for the cheap pricing
_PAIR_POOL = 400  # best-priced connected sets tried in pairs
_EPSILON = 1e-7  # reduced costs below this count as zero (the LP's own tolerance)
#: Column-generation rounds one covering probe may take whose new column needed the
#: exact pricing MIP (the rounds priced cheaply, from known orders and the pool, are free).
LP_ROUNDS = 12
#: Branch-and-bound nodes the exact pricing MIP may explore.
PRICING_NODES = 2000


#: Seed the covering LP with every piece of the known orders that fits when there are at
#: most this many; beyond, only the maximal ones (NASNet-A Mobile has 175,000 pieces).
_SEED_PIECES = 20_000


def _price_exactly(
    graph: Graph, prices: np.ndarray, limit: float, deadline: Deadline
) -> tuple[tuple[int, ...] | None, float]:
    """The set of cost at most ``limit`` with the largest total price, by a small MIP.

    Returns the best set found and an upper bound on the largest total price (HiGHS's
    dual bound, valid even when the time limit stops it).
    """
    from scipy.optimize import Bounds, milp

    n = graph.n
    senders = [u for u in range(n) if graph.successors[u]]
    m = len(senders)
    rows = SparseRows()
    add = rows.add

    for j, u in enumerate(senders):
        for v in graph.successors[u]:
            add([(n + j, 1.0), (v, -1.0), (u, 1.0)], 0, math.inf)  # in the set: receives u
            add([(n + m + j, 1.0), (u, -1.0), (v, 1.0)], 0, math.inf)  # sends u out
    cost = [(v, graph.work[v] / limit) for v in range(n)]
    cost += [(n + j, graph.comm[u] / limit) for j, u in enumerate(senders)]
    cost += [(n + m + j, graph.comm[u] / limit) for j, u in enumerate(senders)]
    add(cost, -math.inf, 1.0)
    if graph.limited:  # a set that cannot fit on one device is no stage
        memory = [(v, graph.memory[v] / graph.capacity) for v in range(n)]
        add(memory, -math.inf, 1.0 + MEMORY_SLACK)
    size = n + 2 * m
    objective = np.zeros(size)
    objective[:n] = -prices
    integrality = np.zeros(size)
    integrality[:n] = 1
    result = milp(
        objective,
        integrality=integrality,
        bounds=Bounds(np.zeros(size), np.ones(size)),
        constraints=rows.constraint(size),
        options={"node_limit": PRICING_NODES, "time_limit": max(deadline.left(), 0.05)},
    )
    deadline.expired()  # note it, if the safety net (not the node limit) stopped HiGHS
    dual = getattr(result, "mip_dual_bound", None)
    if dual is None or not math.isfinite(dual):
        dual = result.fun if result.status == 0 else -float(np.sum(np.maximum(prices, 0)))
    found = None
    if result.x is not None:
        found = tuple(int(v) for v in np.flatnonzero(result.x[:n] > 0.5))
    return found, -float(dual)


def _neighbours(graph: Graph) -> list[int]:
    """Each node's neighbours, edges taken both ways, as bit masks."""
    needs, feeds = node_masks(graph)
    return [a | b for a, b in zip(needs, feeds, strict=True)]


def connected_sets(graph: Graph, limit: float, most: int = _POOL_LIMIT) -> list[tuple[int, ...]]:
    """Connected node sets (edges taken both ways) of cost at most ``limit``.

    Stops after looking at ``most`` sets: on a big graph with big stages there are far too
    many, and the pool only has to be a good start.

    Enumerated once per set by growing from its smallest node and only ever adding
    neighbours that are new to the set (Wernicke's ESU), pruned by work, which only grows.

    Parameters
    ----------
    graph : Graph
        The model graph.
    limit : float
        The most a set may cost (:func:`~perfmodel.pipeline.graph.stage_cost`), s.
    most : int
        Sets looked at, at most, count: each smallest node gets an equal share,
        ``max(1, most // n)``.

    Returns
    -------
    list of tuple of int
        The sets found, each as ascending node indices, in sorted order.

    >>> from perfmodel.pipeline.graph import Graph
    >>> connected_sets(Graph.chain([1.0, 1.0, 1.0], [0.0] * 3), 2.0)
    [(0,), (0, 1), (1,), (1, 2), (2,)]
    """
    return [nodes for nodes, _ in _priced_connected_sets(graph, limit, most, Deadline.none())]


def _nodes_of(mask: int) -> tuple[int, ...]:
    """The set bits of ``mask``, lowest first."""
    nodes = []
    while mask:
        low = mask & -mask
        nodes.append(low.bit_length() - 1)
        mask ^= low
    return tuple(nodes)


def _priced_connected_sets(
    graph: Graph, limit: float, most: int, deadline: Deadline
) -> list[tuple[tuple[int, ...], float]]:
    """:func:`connected_sets` with each set's cost, stopping early at the ``deadline``."""
    n = graph.n
    around = _neighbours(graph)
    work = graph.work
    found: list[tuple[tuple[int, ...], float]] = []
    share = max(1, most // n)  # an equal share of the budget for each smallest node
    for start in range(n):
        if work[start] > limit:
            continue
        if deadline.expired():
            break
        above = ~((1 << (start + 1)) - 1)
        stack = [(1 << start, around[start] & above, around[start] | 1 << start, work[start])]
        looked = 0
        while stack and looked < share:
            looked += 1
            members, extension, closed, held = stack.pop()
            nodes = _nodes_of(members)
            cost = stage_cost(graph, nodes)
            if cost <= limit:
                found.append((nodes, cost))
            while extension:
                bit = extension & -extension
                extension ^= bit
                w = bit.bit_length() - 1
                if held + work[w] > limit:
                    continue
                fresh = around[w] & ~closed & above
                stack.append((members | bit, extension | fresh, closed | around[w], held + work[w]))
    return sorted(found)


@dataclass(frozen=True)
class ConnectedPool:
    """Connected sets that fit under the limit, ready for pricing.

    Parameters
    ----------
    sets : list of tuple of int
        The connected node sets, each as ascending node indices.
    cost : numpy.ndarray
        ``cost[j]``: the :func:`~perfmodel.pipeline.graph.stage_cost` of ``sets[j]``, in
        seconds (s).
    incidence : scipy.sparse.csr_matrix
        A (sets x nodes) 0/1 matrix, 1 where the set holds the node: one product prices
        every set.
    masks : list of int
        Each set's nodes as a bit mask.
    reach : list of int
        Each set's nodes and their neighbours (edges taken both ways) as a bit mask.
    """

    sets: list[tuple[int, ...]]
    cost: np.ndarray
    incidence: Any  # sparse (sets x nodes): prices of all sets in one product
    masks: list[int]
    reach: list[int]  # each set's nodes and their neighbours

    @classmethod
    def build(cls, graph: Graph, limit: float, deadline: Deadline | None = None) -> ConnectedPool:
        """The connected sets of ``graph`` that cost at most ``limit``.

        As many as the ``deadline`` allows, and at most about 50,000 looked at: the pool
        only seeds the pricing, so a partial one is valid.

        Parameters
        ----------
        graph : Graph
            The model graph.
        limit : float
            The most a set may cost, s.
        deadline : Deadline, optional
            A wall-clock safety net; none by default.

        Returns
        -------
        ConnectedPool
            The sets, their costs and their index for pricing.
        """
        from scipy.sparse import csr_matrix

        deadline = check_deadline(deadline)
        kept = _priced_connected_sets(graph, limit, _POOL_LIMIT, deadline)
        sets = [s for s, _ in kept]
        around = _neighbours(graph)
        masks = [functools.reduce(operator.or_, (1 << v for v in s), 0) for s in sets]
        reach = [
            functools.reduce(operator.or_, (around[v] for v in s), m)
            for m, s in zip(masks, sets, strict=True)
        ]
        incidence = csr_matrix(
            (
                np.ones(sum(len(s) for s in sets)),
                ([j for j, s in enumerate(sets) for _ in s], [v for s in sets for v in s]),
            ),
            shape=(len(sets), graph.n),
        )
        return cls(sets, np.array([c for _, c in kept]), incidence, masks, reach)

    def under(self, limit: float) -> ConnectedPool:
        """The sets of this pool that cost at most ``limit``.

        Parameters
        ----------
        limit : float
            The most a set may cost, s.

        Returns
        -------
        ConnectedPool
            A new pool holding only those sets, in the same order.
        """
        keep = np.flatnonzero(self.cost <= limit)
        return ConnectedPool(
            [self.sets[j] for j in keep],
            self.cost[keep],
            self.incidence[keep],
            [self.masks[j] for j in keep],
            [self.reach[j] for j in keep],
        )

    def best(
        self,
        prices: np.ndarray,
        limit: float,
        add: Callable[[tuple[int, ...]], bool],
        deadline: Deadline | None = None,
    ) -> int:
        """Add the best-priced sets, or failing that the best unions of two apart.

        Up to 20 sets whose nodes' prices sum to more than 1 are offered to ``add``, best
        first. When none is, unions of two of the 400 best-priced sets, with no edge
        between them, a total cost within ``limit`` and a total price above 1, are offered
        until 20 have been added.

        Parameters
        ----------
        prices : numpy.ndarray
            Each node's dual price in the restricted covering LP, dimensionless.
        limit : float
            The most a set may cost, s.
        add : callable
            ``add(nodes)`` takes a set as a tuple of node indices and returns whether it
            was new and kept.
        deadline : Deadline, optional
            A wall-clock safety net: past it, no more unions are offered.

        Returns
        -------
        int
            The sets ``add`` kept, count.
        """
        if not self.sets:
            return 0
        value = self.incidence @ prices
        ranked = np.argsort(value)[::-1]
        added = sum(add(self.sets[j]) for j in ranked[:_NEW_COLUMNS] if value[j] > 1 + _EPSILON)
        if added:
            return added
        top = ranked[:_PAIR_POOL]  # with no edge between two sets, their costs simply add
        values, costs = value[top], self.cost[top]
        pair_value = values[:, None] + values[None, :]
        fits = (costs[:, None] + costs[None, :] <= limit) & (pair_value > 1 + _EPSILON)
        rows, cols = np.nonzero(np.triu(fits, 1))
        for tried, index in enumerate(np.argsort(pair_value[rows, cols])[::-1]):
            if deadline is not None and tried % 256 == 0 and deadline.expired():
                break
            first, second = int(top[rows[index]]), int(top[cols[index]])
            if not self.reach[first] & self.masks[second]:  # apart: no edge, no overlap
                added += add(self.sets[first] + self.sets[second])
                if added >= _NEW_COLUMNS:
                    break
        return added


def connected_pool(graph: Graph, limit: float, deadline: Deadline | None = None) -> ConnectedPool:
    """The connected sets of cost at most ``limit``, indexed for pricing (reuse it).

    Parameters
    ----------
    graph : Graph
        The model graph.
    limit : float
        The most a set may cost, s.
    deadline : Deadline, optional
        A wall-clock safety net; none by default.

    Returns
    -------
    ConnectedPool
        The pool (:meth:`ConnectedPool.build`).
    """
    return ConnectedPool.build(graph, limit, deadline)


def cover_probe(
    graph: Graph,
    k: int,
    limit: float,
    *,
    orders: Sequence[Sequence[int]],
    rounds: int = LP_ROUNDS,
    deadline: Deadline | None = None,
    segment_costs: list[np.ndarray] | None = None,
    pool: ConnectedPool | None = None,
) -> Verdict:
    """Can ``k`` sets of cost at most ``limit`` cover the graph, even fractionally?

    Returns :attr:`Verdict.INFEASIBLE` when the LP relaxation provably needs more than
    ``k`` sets (so no split under ``limit`` exists), :attr:`Verdict.OPEN` when it needs at
    most ``k`` (no proof either way), and :attr:`Verdict.UNKNOWN` when ``rounds`` of
    exact pricing (or the ``deadline``, a safety net) ran out first. ``orders`` are
    topological orders whose contiguous pieces seed and cheaply price the columns;
    ``segment_costs`` passes in their piece costs when they are already known, ``pool``
    the connected sets (:func:`connected_pool`, for this or any larger ``limit``).

    Parameters
    ----------
    graph : Graph
        The model graph.
    k : int
        The number of stages, count.
    limit : float
        The bottleneck T probed: the most a stage may cost, s.
    orders : sequence of sequence of int
        Topological orders of the graph, whose contiguous pieces seed the columns.
    rounds : int
        Column-generation rounds that may need the exact pricing MIP, count.
    deadline : Deadline, optional
        A wall-clock safety net; none by default.
    segment_costs : list of numpy.ndarray, optional
        For each order, its :func:`~perfmodel.pipeline.split.order_segment_costs` matrix,
        in seconds (s); computed when not given.
    pool : ConnectedPool, optional
        Connected sets built for ``limit`` or a larger one; built here when not given.

    Returns
    -------
    Verdict
        :attr:`Verdict.INFEASIBLE`, :attr:`Verdict.OPEN` or :attr:`Verdict.UNKNOWN`; this
        probe never returns :attr:`Verdict.FEASIBLE`.
    """
    from scipy.optimize import linprog
    from scipy.sparse import csc_matrix

    deadline = check_deadline(deadline)
    n = graph.n
    if segment_costs is None:
        segment_costs = [order_segment_costs(graph, order) for order in orders]
    pieces = [
        (np.asarray(order), costs <= limit)
        for order, costs in zip(orders, segment_costs, strict=True)
    ]
    columns: list[tuple[int, ...]] = []
    seen: set[tuple[int, ...]] = set()

    def add(column: tuple[int, ...], priced: bool = False) -> bool:
        """Keep ``column`` if new and within ``limit`` (known to be when ``priced``)."""
        key = tuple(sorted(column))
        if not key or key in seen or (not priced and stage_cost(graph, key) > limit):
            return False
        seen.add(key)
        columns.append(key)
        return True

    every = sum(int(fits.sum()) for _, fits in pieces) <= _SEED_PIECES
    for order, fits in pieces:  # the pieces of each order that fit (their costs are known):
        if every:  # all of them, when few: the LP then needs fewer rounds
            for a, b in zip(*np.nonzero(fits), strict=True):
                add(tuple(order[a : b + 1].tolist()), priced=True)
            continue
        # else the maximal ones: all columns cost 1, so a piece inside another adds nothing
        last = np.where(fits.any(axis=1), n - 1 - np.argmax(fits[:, ::-1], axis=1), -1)
        reach = np.maximum.accumulate(np.concatenate(([-1], last[:-1])))
        for a in np.flatnonzero(last > reach).tolist():
            add(tuple(order[a : last[a] + 1].tolist()), priced=True)
    connected = (connected_pool(graph, limit) if pool is None else pool).under(limit)
    priced = 0
    while priced < rounds and not deadline.expired():
        entries = [v for column in columns for v in column]
        owners = [j for j, column in enumerate(columns) for _ in column]
        matrix = csc_matrix(
            (
                np.ones(n + len(entries)),
                (list(range(n)) + entries, list(range(n)) + [n + j for j in owners]),
            ),
            shape=(n, n + len(columns)),
        )
        costs = np.concatenate((np.full(n, float(n)), np.ones(len(columns))))  # n: a stand-in
        solved = linprog(
            costs,
            A_ub=-matrix,
            b_ub=-np.ones(n),
            bounds=(0, None),
            method="highs",
            options={"time_limit": max(deadline.left(), 0.05)},
        )
        if solved.status != 0:
            return Verdict.UNKNOWN
        total, prices = float(solved.fun), np.maximum(-solved.ineqlin.marginals, 0.0)
        added = 0
        for order, fits in pieces:  # cheap pricing: the best pieces of the known orders
            running = np.concatenate(([0.0], np.cumsum(prices[order])))
            value = np.where(fits, running[None, 1:] - running[:-1, None], -math.inf)
            best = np.argsort(value, axis=None)[::-1][:_NEW_COLUMNS]
            for a, b in zip(*np.unravel_index(best, value.shape), strict=True):
                if value[a, b] > 1 + _EPSILON:
                    added += add(tuple(order[a : b + 1].tolist()), priced=True)
        if not added:
            added = connected.best(prices, limit, add, deadline)
        if added:
            continue
        priced += 1
        column, best_price = _price_exactly(graph, prices, limit, deadline)
        if total / max(1.0, best_price) > k * (1 + 1e-6):
            return Verdict.INFEASIBLE  # Farley: no fractional cover with k sets exists
        if best_price <= 1 + _EPSILON:
            return Verdict.OPEN  # the LP is solved and needs at most k sets
        if column is None or not add(column):
            return Verdict.UNKNOWN
    return Verdict.UNKNOWN
