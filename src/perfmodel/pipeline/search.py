"""Search over topological orders with a random-key genetic algorithm (BRKGA).

Any contiguous split of a topological order is feasible, and
:func:`perfmodel.pipeline.split.split_order` finds the best one exactly, so a good order is
all a good split needs. Each individual is a vector of random keys, one per node; it is
decoded into the topological order that always takes the ready node of smallest key.
Each generation keeps the elite, adds fresh random individuals (mutants) and fills the
rest with children of an elite and a non-elite parent that take each key from the elite
parent with probability 0.7 (Gonçalves and Resende, *J. Heuristics* 17, 2011).

Two things make it much stronger than the plain GA. Each decoded order's split is
*polished* (single nodes moved out of the bottleneck stage) and the polished order written
back into the individual's keys. And at the end a dynamic program runs over the family of
every prefix of every order the search saw (each also with one node added or removed): a
split can then take each cut from a different order. On the random DAGs of the benchmark
whose optimum is known, this finds it.

The search is seeded: the same graph, ``k`` and seed give the same split on any machine.

>>> from perfmodel.pipeline.zoo import inception_like
>>> g = inception_like(modules=2)
>>> found = search_orders(g, 4, generations=5)
>>> found.bottleneck <= split_order(g, g.order, 4).bottleneck
True
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from perfmodel._validate import count
from perfmodel.pipeline.budget import Deadline, check_deadline
from perfmodel.pipeline.graph import (
    Graph,
    Partition,
    bottleneck_of,
    check_k,
    stage_cost,
    stage_order,
)
from perfmodel.pipeline.masks import node_masks
from perfmodel.pipeline.split import split_downsets, split_order

__all__ = ["FAMILY_LIMIT", "decode", "polish", "search_orders"]

_ELITE, _MUTANTS, _INHERIT = 0.2, 0.15, 0.7
#: Most downsets in the family the final dynamic program mixes orders over.
FAMILY_LIMIT = 20_000
#: ... and gives up mixing when more (downset, smaller downset) pairs than this remain.
FAMILY_PAIR_LIMIT = 200_000_000


def decode(graph: Graph, keys: Sequence[float]) -> tuple[int, ...]:
    """The topological order that always takes the ready node with the smallest key.

    Parameters
    ----------
    graph : Graph
        The model graph.
    keys : sequence of float
        ``keys[v]``: node v's random key, dimensionless; ties go to the smaller index.

    Returns
    -------
    tuple of int
        Every node once, in a topological order.
    """
    indegree = [len(p) for p in graph.predecessors]
    ready = [(keys[v], v) for v in range(graph.n) if indegree[v] == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        _, u = heapq.heappop(ready)
        order.append(u)
        for v in graph.successors[u]:
            indegree[v] -= 1
            if indegree[v] == 0:
                heapq.heappush(ready, (keys[v], v))
    return tuple(order)


def _seed_keys(graph: Graph) -> list[np.ndarray]:
    """Keys for orders a person would try first: by index, depth-first, by depth."""
    n = graph.n
    by_index = np.arange(n) / n
    depth = np.zeros(n)
    for u in graph.order:
        for v in graph.successors[u]:
            depth[v] = max(depth[v], depth[u] + 1)
    by_depth = (depth + by_index) / (depth.max() + 2)
    position = np.empty(n)  # depth-first: finish each branch before starting the next
    stack, seen, visited = [u for u in reversed(graph.order) if not graph.predecessors[u]], set(), 0
    while stack:
        u = stack.pop()
        if u in seen:
            continue
        seen.add(u)
        position[u] = visited / n
        visited += 1
        stack.extend(reversed(graph.successors[u]))
    return [by_index, by_depth, position]


def polish(
    graph: Graph, stages: Sequence[Sequence[int]], *, deadline: Deadline | None = None
) -> tuple[tuple[int, ...], ...]:
    """Move single nodes out of the bottleneck stage while that makes it cheaper.

    A node of the bottleneck stage may move to the stage before it when none of its inputs
    is produced in the bottleneck stage, or to the stage after when none of its consumers
    is; the move is taken when both stages it touches end up cheaper than the bottleneck
    was (the best such move first). Every move keeps the split feasible, and the sorted
    stage costs fall at each step, so it stops (after at most ``4 n`` moves in any case).

    Parameters
    ----------
    graph : Graph
        The model graph.
    stages : sequence of sequence of int
        A feasible split, stages in pipeline order.
    deadline : Deadline, optional
        A wall-clock safety net: past it, no further move is weighed (on a graph of
        thousands of nodes in two stages, one move weighs a thousand stage costs).

    Returns
    -------
    tuple of tuple of int
        The polished split: each stage's nodes ascending, stages left empty dropped.

    >>> from perfmodel.pipeline.graph import Graph
    >>> g = Graph.chain([1.0, 5.0, 1.0, 1.0], [0.0] * 4)
    >>> polish(g, [(0, 1, 2), (3,)])
    ((0, 1), (2, 3))
    """
    members = [set(stage) for stage in stages]
    label = {v: s for s, stage in enumerate(members) for v in stage}
    costs = [stage_cost(graph, stage) for stage in members]
    deadline = check_deadline(deadline)
    for _ in range(4 * graph.n):
        top = max(costs)
        b = costs.index(top)
        move, value = None, top
        for v in sorted(members[b]):
            if deadline.expired():
                break
            targets = []
            if b > 0 and all(label[u] < b for u in graph.predecessors[v]):
                targets.append(b - 1)
            if b + 1 < len(members) and all(label[w] > b for w in graph.successors[v]):
                targets.append(b + 1)
            for t in targets:
                left = stage_cost(graph, members[b] - {v})
                right = stage_cost(graph, members[t] | {v})
                if max(left, right) < value:
                    move, value = (v, t, left, right), max(left, right)
        if move is None:
            break
        v, t, left, right = move
        members[b].discard(v)
        members[t].add(v)
        label[v] = t
        costs[b], costs[t] = left, right
    return tuple(tuple(sorted(stage)) for stage in members if stage)


def search_orders(
    graph: Graph,
    k: int,
    *,
    seed: int = 0,
    generations: int = 40,
    population: int = 24,
    patience: int = 12,
    evaluations: int | None = None,
    deadline: Deadline | None = None,
) -> Partition:
    """The best split found over many topological orders (never worse than the given one).

    Parameters
    ----------
    graph : Graph
        The model graph.
    k : int
        Most stages to use, count.
    seed : int
        Seed of the random keys; the result is a function of (graph, k, seed, budget).
    generations : int
        Most generations to breed.
    population : int
        Individuals per generation.
    patience : int
        Stop early after this many generations without improvement.
    evaluations : int, optional
        Most orders to split (each ``O(k·n²)``); by default ``2e8 / n²`` (at least 60),
        which keeps a 1,000-node graph to about 15 s.
    deadline : Deadline, optional
        A wall-clock safety net: when it passes, the search stops starting new
        evaluations (after at least one) and returns the best split so far, with
        ``complete=False``.

    Returns
    -------
    Partition
        With the combinatorial lower bound; :func:`perfmodel.pipeline.partition` adds
        the stronger ones.
    """
    k = check_k(graph, k)
    seed = count("seed", seed, minimum=0)
    generations = count("generations", generations, minimum=0)
    population = count("population", population, minimum=4)
    patience = count("patience", patience)
    if evaluations is not None:
        evaluations = count("evaluations", evaluations)
    rng = np.random.default_rng(seed)
    n = graph.n
    budget = evaluations if evaluations is not None else max(60, int(2e8 / n**2))
    cache: dict[tuple[int, ...], tuple[float, tuple[int, ...]]] = {}

    def fitness(keys: np.ndarray) -> float:
        """Split the decoded order, polish the split, and keep the polished order (Lamarck)."""
        order = decode(graph, keys.tolist())
        if order not in cache:
            split = split_order(graph, order, k)
            stages = polish(graph, split.stages, deadline=deadline)
            better = stage_order(graph, stages)
            cache[order] = (min(split.bottleneck, bottleneck_of(graph, stages)), better)
        value, better = cache[order]
        keys[list(better)] = np.arange(n) / n
        return value

    elite = max(1, round(_ELITE * population))
    mutants = max(1, round(_MUTANTS * population))
    seeds = _seed_keys(graph)
    deadline = check_deadline(deadline)

    def evaluate(pool: list[np.ndarray], done: list[float]) -> list[float]:
        """Scores of ``pool`` after ``done``, until the deadline (one at least, overall)."""
        scores = list(done)
        for keys in pool[len(done) :]:
            if scores and deadline.expired():
                break
            scores.append(fitness(keys))
        return scores

    pool = seeds + [rng.random(n) for _ in range(population - len(seeds))]
    scores = evaluate(pool, [])
    pool = pool[: len(scores)]
    best, stall = min(scores), 0
    for _ in range(generations):
        if len(cache) >= budget or len(pool) < population or deadline.expired():
            break
        ranked = np.argsort(scores, kind="stable")
        parents = [pool[i] for i in ranked]
        children = parents[:elite] + [rng.random(n) for _ in range(mutants)]
        while len(children) < population:
            first = parents[int(rng.integers(elite))]
            second = parents[int(rng.integers(elite, population))]
            children.append(np.where(rng.random(n) < _INHERIT, first, second))
        scores = evaluate(children, [scores[i] for i in ranked[:elite]])
        pool = children[: len(scores)]
        if min(scores) < best:
            best, stall = min(scores), 0
        else:
            stall += 1
            if stall >= patience:
                break
    winner = pool[int(np.argmin(scores))]
    found = split_order(graph, decode(graph, winner.tolist()), k)
    family = _prefix_family(graph, [better for _, better in sorted(cache.values())])
    mixed = None
    if not deadline.expired():  # mix the orders' cuts, time allowing
        mixed = split_downsets(
            graph,
            k,
            masks=family,
            upper=found.bottleneck,
            pair_limit=FAMILY_PAIR_LIMIT,
            deadline=deadline,
        )
    stages = found.stages if mixed is None else mixed.stages
    stages = polish(graph, stages, deadline=deadline)
    return Partition(
        stages=stages,
        bottleneck=bottleneck_of(graph, stages),
        lower_bound=found.lower_bound,
        method="random-key GA over topological orders",
        complete=not deadline.reached,
    )


def _prefix_family(graph: Graph, orders: list[tuple[int, ...]]) -> list[int]:
    """Every prefix of the orders (best first), and each with one node added or taken away.

    A chain of these downsets can take its first cut from one order and its next from
    another, so the dynamic program over the family mixes what the GA found. Orders are
    added, and the family grown by one node, only while it stays under
    :data:`FAMILY_LIMIT` downsets.
    """
    family = {0}
    for order in orders:
        if len(family) + graph.n > FAMILY_LIMIT:
            break
        mask = 0
        for v in order:
            mask |= 1 << v
            family.add(mask)
    if len(family) * (1 + graph.n // 8) <= FAMILY_LIMIT:
        needs, feeds = node_masks(graph)
        for ideal in list(family):
            for v in range(graph.n):
                if ideal >> v & 1:
                    if feeds[v] & ideal == 0:
                        family.add(ideal & ~(1 << v))
                elif needs[v] & ~ideal == 0:
                    family.add(ideal | 1 << v)
    return sorted(family, key=lambda mask: (mask.bit_count(), mask))
