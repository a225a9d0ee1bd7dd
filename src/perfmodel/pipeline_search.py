"""Search over topological orders with a random-key genetic algorithm (BRKGA).

Any contiguous split of a topological order is feasible, and
:func:`perfmodel.pipeline_split.split_order` finds the best one exactly, so a good order is
all a good split needs. Each individual is a vector of random keys, one per node; it is
decoded into the topological order that always takes the ready node of smallest key.
Each generation keeps the elite, adds fresh random individuals (mutants) and fills the
rest with children of an elite and a non-elite parent that take each key from the elite
parent with probability 0.7 (Gonçalves and Resende, *J. Heuristics* 17, 2011).

The search is seeded: the same graph, ``k`` and seed give the same split on any machine.

>>> from perfmodel.pipeline_zoo import inception_like
>>> g = inception_like(modules=2)
>>> found = search_orders(g, 4, generations=5)
>>> found.bottleneck <= split_order(g, g.order, 4).bottleneck
True
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence

import numpy as np

from perfmodel.pipeline_graph import Graph, Partition, check_k
from perfmodel.pipeline_split import order_bottleneck, split_order

__all__ = ["decode", "search_orders"]

_ELITE, _MUTANTS, _INHERIT = 0.2, 0.15, 0.7


def decode(graph: Graph, keys: Sequence[float]) -> tuple[int, ...]:
    """The topological order that always takes the ready node with the smallest key."""
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
    stack, seen, count = [u for u in reversed(graph.order) if not graph.predecessors[u]], set(), 0
    while stack:
        u = stack.pop()
        if u in seen:
            continue
        seen.add(u)
        position[u] = count / n
        count += 1
        stack.extend(reversed(graph.successors[u]))
    return [by_index, by_depth, position]


def search_orders(
    graph: Graph,
    k: int,
    *,
    seed: int = 0,
    generations: int = 40,
    population: int = 24,
    patience: int = 12,
    evaluations: int | None = None,
) -> Partition:
    """The best split found over many topological orders (never worse than the given one).

    Parameters
    ----------
    graph : Graph
    k : int
        Most stages to use.
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

    Returns
    -------
    Partition
        With the combinatorial lower bound; :func:`perfmodel.pipeline.partition` adds
        the stronger ones.
    """
    k = check_k(graph, k)
    for name, value, least in (
        ("generations", generations, 0),
        ("population", population, 4),
        ("patience", patience, 1),
    ):
        if not isinstance(value, int) or value < least:
            raise ValueError(f"`{name}` must be an integer >= {least} (got {value!r}).")
    if evaluations is not None and (not isinstance(evaluations, int) or evaluations < 1):
        raise ValueError(f"`evaluations` must be a positive integer (got {evaluations!r}).")
    rng = np.random.default_rng(seed)
    n = graph.n
    budget = evaluations if evaluations is not None else max(60, int(2e8 / n**2))
    cache: dict[tuple[int, ...], float] = {}

    def fitness(keys: np.ndarray) -> float:
        order = decode(graph, keys.tolist())
        if order not in cache:
            cache[order] = order_bottleneck(graph, order, k)
        return cache[order]

    elite = max(1, round(_ELITE * population))
    mutants = max(1, round(_MUTANTS * population))
    seeds = _seed_keys(graph)
    pool = seeds + [rng.random(n) for _ in range(population - len(seeds))]
    scores = [fitness(keys) for keys in pool]
    best, stall = min(scores), 0
    for _ in range(generations):
        if len(cache) >= budget:
            break
        ranked = np.argsort(scores, kind="stable")
        parents = [pool[i] for i in ranked]
        children = parents[:elite] + [rng.random(n) for _ in range(mutants)]
        while len(children) < population:
            first = parents[int(rng.integers(elite))]
            second = parents[int(rng.integers(elite, population))]
            children.append(np.where(rng.random(n) < _INHERIT, first, second))
        pool = children
        scores = [scores[i] for i in ranked[:elite]] + [fitness(keys) for keys in pool[elite:]]
        if min(scores) < best:
            best, stall = min(scores), 0
        else:
            stall += 1
            if stall >= patience:
                break
    winner = pool[int(np.argmin(scores))]
    found = split_order(graph, decode(graph, winner.tolist()), k)
    return Partition(
        stages=found.stages,
        bottleneck=found.bottleneck,
        lower_bound=found.lower_bound,
        method="random-key GA over topological orders",
    )
