"""Split a model graph into a pipeline of k stages and bound how good the split is.

A model is a DAG: node ``i`` does ``work[i]`` seconds of compute and its output takes
``comm[i]`` seconds to send to another stage. A stage's cost is its work, plus the time to
receive every tensor produced outside it that it uses, plus the time to send every tensor
it produces that is used outside it (each tensor counted once per stage). A split is
feasible when no edge goes from a later stage to an earlier one. The pipeline's
throughput is set by its slowest stage, the *bottleneck*.

Finding the best split is NP-hard on general graphs (Archer et al., ICML 2024), so
:func:`partition` picks the strongest method the graph allows and always reports a lower
bound next to the split, so every answer says how far from optimal it can be:

=====================================  ============================================
graph                                  method
=====================================  ============================================
a chain                                exact: bisection and a stage sweep
few downsets (transformers, CNNs, any  exact: dynamic programming over downsets
graph of at most 12 nodes)
anything else                          random-key GA over orders, MIP lower bound
=====================================  ============================================

This module is the public face; the pieces live in ``pipeline_graph`` (the problem),
``pipeline_split`` (dynamic programs), ``pipeline_search`` (the order search),
``pipeline_mip`` (the exact MIP), ``pipeline_bounds`` and ``pipeline_cover`` (lower
bounds), ``pipeline_baselines``, ``pipeline_zoo``, ``pipeline_schedule`` and
``pipeline_plots``.

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

from perfmodel.pipeline_bounds import mip_lower_bound
from perfmodel.pipeline_graph import (
    MIP_REL_GAP,
    Graph,
    Partition,
    bottleneck_of,
    check_k,
    check_time_limit,
    combinatorial_lower_bound,
    is_feasible,
    stage_cost,
    stage_order,
)
from perfmodel.pipeline_mip import solve_mip
from perfmodel.pipeline_search import search_orders
from perfmodel.pipeline_split import downsets, split_chain, split_downsets, split_order

__all__ = [
    "EXACT_NODE_LIMIT",
    "MIP_REL_GAP",
    "Graph",
    "Partition",
    "brute_force",
    "combinatorial_lower_bound",
    "is_feasible",
    "partition",
    "search_orders",
    "solve_mip",
    "split_chain",
    "split_downsets",
    "split_order",
    "stage_cost",
]

#: Graphs this small are always solved exactly.
EXACT_NODE_LIMIT = 12


def brute_force(graph: Graph, k: int) -> Partition:
    """The optimum by trying every assignment of nodes to stages (tiny graphs only).

    An oracle for tests: ``k ** n`` assignments, so keep ``n`` at 8 or below.
    """
    k = check_k(graph, k)
    if graph.n > 10:
        raise ValueError(f"brute force is for graphs of at most 10 nodes (got {graph.n}).")
    best: tuple[float, tuple[tuple[int, ...], ...]] = (math.inf, ())
    for labels in itertools.product(range(k), repeat=graph.n):
        if any(labels[u] > labels[v] for u, v in graph.edges):
            continue
        stages = tuple(tuple(i for i in range(graph.n) if labels[i] == s) for s in range(k))
        stages = tuple(s for s in stages if s)
        cost = bottleneck_of(graph, stages)
        if cost < best[0]:
            best = (cost, stages)
    return Partition(stages=best[1], bottleneck=best[0], lower_bound=best[0], method="brute force")


def partition(graph: Graph, k: int, *, seed: int = 0, time_limit_s: float = 30.0) -> Partition:
    """Split ``graph`` into at most ``k`` pipeline stages, minimising the bottleneck.

    Exact for chains and for graphs with few enough downsets, which includes every graph
    of at most :data:`EXACT_NODE_LIMIT` nodes (at most 4,096 downsets); otherwise the best
    split the order search finds, with the strongest lower bound available (see
    :mod:`perfmodel.pipeline_bounds`).

    Parameters
    ----------
    graph : Graph
    k : int
        Most stages to use; a split may use fewer when extra cuts cost more than they save.
    seed : int
        Seed of the order search: the same inputs give the same split.
    time_limit_s : float
        Cap on the lower-bound search for graphs that are not solved exactly; the bound is
        valid whenever it stops, and only gets tighter with more time.

    Returns
    -------
    Partition
        ``stages`` in pipeline order, ``bottleneck``, ``lower_bound``, ``gap`` and
        ``method``; ``optimal`` when the gap is closed.
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"`graph` must be a pipeline.Graph (got {type(graph).__name__}).")
    k = check_k(graph, k)
    time_limit_s = check_time_limit(time_limit_s)
    if graph.is_chain:
        return split_chain(graph, k)
    masks = downsets(graph)
    if masks is not None:
        exact = split_downsets(graph, k, masks=masks)
        if exact is not None:
            return exact
    found = search_orders(graph, k, seed=seed)
    if masks is not None:  # too many pairs under the order's split: try the GA's, tighter
        exact = split_downsets(graph, k, masks=masks, upper=found.bottleneck)
        if exact is not None:
            return exact
    proof = mip_lower_bound(
        graph,
        k,
        found.bottleneck,
        time_limit_s=time_limit_s,
        orders=[stage_order(graph, found.stages)],
    )
    if proof.split is not None and proof.split.bottleneck < found.bottleneck:
        found = proof.split
    return Partition(
        stages=found.stages,
        bottleneck=found.bottleneck,
        lower_bound=min(proof.lower_bound, found.bottleneck),
        method=found.method + " + MIP bound",
    )
