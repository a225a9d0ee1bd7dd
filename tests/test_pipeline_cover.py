"""The covering relaxation: sound (never cuts off a real split) and strong where it matters."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_pipeline import dags

from perfmodel import pipeline as pl
from perfmodel.pipeline.cover import Verdict, connected_sets, cover_probe


def is_connected(graph, nodes):
    nodes = set(nodes)
    reached, frontier = set(), [min(nodes)]
    while frontier:
        u = frontier.pop()
        if u in reached:
            continue
        reached.add(u)
        neighbours = set(graph.successors[u]) | set(graph.predecessors[u])
        frontier.extend(neighbours & nodes)
    return reached == nodes


@settings(max_examples=40, deadline=None)
@given(dags(max_nodes=7), st.floats(0.5, 30))
def test_connected_sets_are_exactly_the_connected_sets_that_fit(case, limit):
    graph, _ = case
    found = connected_sets(graph, limit)
    expected = [
        subset
        for size in range(1, graph.n + 1)
        for subset in itertools.combinations(range(graph.n), size)
        if is_connected(graph, subset) and pl.stage_cost(graph, subset) <= limit
    ]
    assert found == sorted(expected)


@settings(max_examples=40, deadline=None)
@given(dags(max_nodes=6), st.floats(1.0, 1.5))
def test_a_probe_at_or_above_the_optimum_is_never_infeasible(case, slack):
    graph, k = case
    optimum = pl.brute_force(graph, k).bottleneck
    if optimum == 0:
        return
    status = cover_probe(graph, k, optimum * slack, orders=[graph.order])
    assert status in (Verdict.OPEN, Verdict.UNKNOWN)


def test_the_covering_relaxation_sees_communication_the_work_bound_cannot():
    # Four 2 s layers, 1 s transfers: two stages need 2 + 2 + 1 = 5 s each, though the
    # work alone would fit in 4 s.
    g = pl.Graph.chain([2.0, 2.0, 2.0, 2.0], [1.0, 1.0, 1.0, 1.0])
    assert pl.combinatorial_lower_bound(g, 2) == 4.0
    assert cover_probe(g, 2, 4.9, orders=[g.order]) is Verdict.INFEASIBLE
    assert cover_probe(g, 2, 5.0, orders=[g.order]) is Verdict.OPEN


@pytest.mark.slow  # seconds of solver or measurement: make test, not test-fast
def test_the_mip_bound_certifies_a_random_dag_far_beyond_the_work_bound():
    from perfmodel.pipeline.bounds import mip_lower_bound
    from perfmodel.pipeline.zoo import random_layered_dag

    g = random_layered_dag(9, 4, seed=5)
    found = pl.search_orders(g, 16)
    proof = mip_lower_bound(g, 16, found.bottleneck)
    assert proof.complete  # bounded by work alone: the same numbers on any machine
    assert proof.lower_bound <= found.bottleneck
    assert proof.lower_bound / found.bottleneck > 0.9
    assert pl.combinatorial_lower_bound(g, 16) / found.bottleneck < 0.7
