"""Split a model graph into a pipeline of k stages and bound how good the split is.

A model is a DAG: node ``i`` does ``work[i]`` seconds of compute and its output takes
``comm[i]`` seconds to send to another stage. A stage's cost is its work, plus the time to
receive every tensor produced outside it that it uses, plus the time to send every tensor
it produces that is used outside it (each tensor counted once per stage). A split is
feasible when no edge goes from a later stage to an earlier one. The pipeline's
throughput is set by its slowest stage, the *bottleneck*.

Finding the best split is NP-hard on general graphs (Archer et al., ICML 2024), so
:func:`partition` picks the strongest method the graph allows and always reports a lower
bound next to the split, so every answer says how far from optimal it can be. Before any
method runs, :func:`~perfmodel.pipeline.reduce.reduce_graph` merges the nodes some
optimal split keeps together (an identity, a concatenation, an operator split into
parts whose inner cut cannot pay), so the answer does not depend on how finely the
graph is drawn; the split is mapped back and priced on the graph as given.

=====================================  ============================================
graph                                  method
=====================================  ============================================
a chain                                exact: bisection and a stage sweep
few downsets per block between series  exact: dynamic programming over downsets,
points (transformers, CNNs, Inception  block by block (:mod:`~perfmodel.pipeline.
-v3, any graph of at most 12 nodes)    lattice`)
anything else                          random-key GA over orders; the boundary-cut
                                       bound (:mod:`~perfmodel.pipeline.cuts`); where
                                       stages are small, the threshold search (exact
                                       feasibility probes, :mod:`~perfmodel.pipeline.
                                       threshold`); then the MIP bound.
                                       ``method`` says why the exact program was
                                       not run
=====================================  ============================================

Each proof earns its place: on the testbed of ``benchmarks/partition.py`` (issue 51's
ablation; lower bound / best with the method and without it, at its 20 s limit) the block
program proves Inception-v3 at k = 4 (1 against 0.934); the threshold search a 69-node
random DAG at k = 16 (0.928 against 0.769); the boundary cuts, from which the threshold
search starts, the same DAG at k = 8 (0.960 against 0.938); the compact MIP a 75-node DAG at
k = 2 (1.000 against 0.973); and the covering LP that DAG at k = 32 (0.953 against 0.850),
where a wide graph is cut into many stages.

A graph whose nodes carry ``memory`` and a ``capacity`` (see
:meth:`perfmodel.pipeline.model.Model.with_memory`) is split with every stage within the
capacity, by every method; a ValueError says when no split found fits.

This module holds the entry point; the pieces live beside it in :mod:`perfmodel.pipeline`:
``graph`` (the problem), ``split`` (dynamic programs), ``search`` (the order search),
``mip`` (the exact MIP), ``threshold`` (exact feasibility probes), ``bounds``, ``cuts`` and
``cover`` (lower bounds), ``baselines``, ``zoo`` and ``schedule``; the pictures are in
:mod:`perfmodel.plotting.pipeline`.

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
from dataclasses import replace

from perfmodel._validate import count
from perfmodel.pipeline.blocks import BLOCK_LIMIT, LATTICE_LIMIT, lattice_blocks
from perfmodel.pipeline.bounds import mip_lower_bound
from perfmodel.pipeline.budget import Deadline
from perfmodel.pipeline.cuts import cut_lower_bound
from perfmodel.pipeline.graph import (
    MIP_REL_GAP,
    Graph,
    Partition,
    bottleneck_of,
    check_k,
    check_time_limit,
    stage_order,
    stages_from_labels,
)
from perfmodel.pipeline.lattice import LATTICE_PAIR_LIMIT, split_lattice
from perfmodel.pipeline.reduce import reduce_graph
from perfmodel.pipeline.search import search_orders
from perfmodel.pipeline.split import split_chain, split_order
from perfmodel.pipeline.threshold import threshold_search

__all__ = ["BRUTE_FORCE_NODE_LIMIT", "EXACT_NODE_LIMIT", "brute_force", "partition"]

#: Graphs this small are always solved exactly.
EXACT_NODE_LIMIT = 12
#: The largest graph :func:`brute_force` accepts.
BRUTE_FORCE_NODE_LIMIT = 10
#: The threshold search (:mod:`perfmodel.pipeline.threshold`) runs when the stages hold
#: at most this many nodes on average: it enumerates stages, so it pays where they are small.
THRESHOLD_STAGE_NODES = 24


def brute_force(graph: Graph, k: int) -> Partition:
    """The optimum by trying every assignment of nodes to stages (tiny graphs only).

    An oracle for tests: ``k ** n`` assignments, so it refuses graphs of more than
    :data:`BRUTE_FORCE_NODE_LIMIT` nodes (10: up to 10 billion assignments at k = 10;
    keep ``k ** n`` near a million for a test that runs in seconds).

    Parameters
    ----------
    graph : Graph
        The model graph, of at most 10 nodes (a ValueError otherwise).
    k : int
        The most stages, from 1 to the node count, count.

    Returns
    -------
    Partition
        An optimal split; its ``lower_bound`` equals its ``bottleneck``.
    """
    k = check_k(graph, k)
    if graph.n > BRUTE_FORCE_NODE_LIMIT:
        raise ValueError(
            f"`graph` must have at most {BRUTE_FORCE_NODE_LIMIT} nodes for brute force "
            f"(got {graph.n})."
        )
    best: tuple[float, tuple[tuple[int, ...], ...]] = (math.inf, ())
    for labels in itertools.product(range(k), repeat=graph.n):
        if any(labels[u] > labels[v] for u, v in graph.edges):
            continue
        stages = stages_from_labels(labels, k)
        cost = bottleneck_of(graph, stages)
        if cost < best[0]:
            best = (cost, stages)
    return Partition(stages=best[1], bottleneck=best[0], lower_bound=best[0], method="brute force")


def partition(graph: Graph, k: int, *, seed: int = 0, time_limit_s: float = 60.0) -> Partition:
    """Split ``graph`` into at most ``k`` pipeline stages, minimising the bottleneck.

    Exact for chains and for graphs with few enough downsets, which includes every graph
    of at most :data:`EXACT_NODE_LIMIT` nodes (at most 4,096 downsets); otherwise the best
    split the order search finds, with the strongest lower bound available (see
    :mod:`perfmodel.pipeline.bounds`). Every method runs on the graph
    :func:`~perfmodel.pipeline.reduce.reduce_graph` leaves, whose optimum is the same (so
    its lower bound holds here); its split is mapped back and priced on ``graph``.

    Every step is bounded by work (evaluations, probes, simplex rounds, branch-and-bound
    nodes), so the same inputs give the same split and the same bound on any machine.

    Parameters
    ----------
    graph : Graph
        The model graph.
    k : int
        Most stages to use, count; a split may use fewer when extra cuts cost more than
        they save.
    seed : int
        Seed of the order search: the same inputs give the same split.
    time_limit_s : float
        A safety net on the whole call's wall-clock time, s: past it, no new step starts and
        the best split so far is returned with ``complete=False`` (its numbers may then
        differ between machines). The lectures never reach it.

    Returns
    -------
    Partition
        ``stages`` in pipeline order, ``bottleneck``, ``lower_bound``, ``gap``, ``method``
        and ``complete``; ``optimal`` when the gap is closed.
    """
    if not isinstance(graph, Graph):
        raise TypeError(f"`graph` must be a pipeline.Graph (got {type(graph).__name__}).")
    k = check_k(graph, k)
    seed = count("seed", seed, minimum=0)
    deadline = Deadline(check_time_limit(time_limit_s))
    reduction = reduce_graph(graph)
    if not reduction.reduced:
        return _solve(graph, k, seed, deadline)
    # At most as many stages as merged nodes hold any: a bound for fewer holds for k.
    found = _solve(reduction.graph, min(k, reduction.graph.n), seed, deadline)
    stages = reduction.expand(found.stages)
    bottleneck = bottleneck_of(graph, stages)  # the same costs, up to the order of sums
    return Partition(
        stages=stages,
        bottleneck=bottleneck,
        lower_bound=min(found.lower_bound, bottleneck),
        method=f"{found.method}; on the graph reduced to {reduction.graph.n} of {graph.n} nodes",
        complete=found.complete,
    )


def _solve(graph: Graph, k: int, seed: int, deadline: Deadline) -> Partition:
    """:func:`partition` once the graph is reduced: the strongest method it allows."""
    if graph.is_chain:
        return _fits(graph, k, split_chain(graph, k), deadline)
    upper = split_order(graph, graph.order, k).bottleneck
    blocks = lattice_blocks(graph, deadline=deadline)
    skipped = f"over {LATTICE_LIMIT:,} downsets, or {BLOCK_LIMIT:,} in one block"
    if deadline.reached:
        skipped = "out of time"
    if blocks is not None:
        exact = split_lattice(graph, k, upper=upper, blocks=blocks, deadline=deadline)
        if exact is not None:
            return exact
        skipped = (
            "out of time" if deadline.reached else f"over {LATTICE_PAIR_LIMIT:,} pairs in one block"
        )
    found = _fits(graph, k, search_orders(graph, k, seed=seed, deadline=deadline), deadline)
    if blocks is not None and found.bottleneck < upper and not deadline.expired():
        # too many pairs under the order's split: try again under the search's, tighter
        exact = split_lattice(graph, k, upper=found.bottleneck, blocks=blocks, deadline=deadline)
        if exact is not None:
            return exact
    lower, lower_source = 0.0, "boundary cuts"
    if not deadline.expired():
        lower = cut_lower_bound(graph, k, deadline=deadline)
    if graph.n <= THRESHOLD_STAGE_NODES * k and not deadline.expired():
        threshold = threshold_search(graph, k, lower, found.bottleneck, deadline=deadline)
        if threshold.split is not None and threshold.split.bottleneck < found.bottleneck:
            found = replace(threshold.split, method=f"{found.method}, then the threshold search")
        if threshold.lower_bound > lower:
            lower, lower_source = threshold.lower_bound, "threshold search"
    if lower >= found.bottleneck * (1 - MIP_REL_GAP):  # proven: the MIP bound has nothing to add
        return Partition(
            stages=found.stages,
            bottleneck=found.bottleneck,
            lower_bound=min(lower, found.bottleneck),
            method=f"{found.method}; bound: {lower_source} (exact program not run: {skipped})",
            complete=not deadline.reached,
        )
    proof = mip_lower_bound(
        graph,
        k,
        found.bottleneck,
        orders=[stage_order(graph, found.stages)],
        lower=lower,
        lower_source=lower_source,
        deadline=deadline,
    )
    if proof.split is not None and proof.split.bottleneck < found.bottleneck:
        found = proof.split
    return Partition(
        stages=found.stages,
        bottleneck=found.bottleneck,
        lower_bound=min(proof.lower_bound, found.bottleneck),
        method=f"{found.method}; bound: {proof.source} (exact program not run: {skipped})",
        complete=not deadline.reached,
    )


def _fits(graph: Graph, k: int, found: Partition, deadline: Deadline) -> Partition:
    """``found``, or a ValueError when it does not fit the devices' memory."""
    if math.isinf(found.bottleneck) and deadline.reached:
        raise ValueError(
            f"`time_limit_s` ran out before any split into at most {k} stages that fits "
            f"`capacity` ({graph.capacity:.3g} B) was found; raise the limit."
        )
    if math.isinf(found.bottleneck):
        raise ValueError(
            f"`k` must allow a split whose every stage fits `capacity`: none found into at "
            f"most {k} stages of {graph.capacity:.3g} B for {sum(graph.memory):.3g} B in all."
        )
    return found
