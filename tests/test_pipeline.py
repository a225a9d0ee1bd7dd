"""Pipeline partitioning against a brute-force oracle, and its errors."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel import pipeline as pl

times = st.floats(min_value=0, max_value=10, allow_nan=False, allow_infinity=False)


@st.composite
def dags(draw, max_nodes=6):
    n = draw(st.integers(1, max_nodes))
    work = draw(st.lists(times, min_size=n, max_size=n))
    comm = draw(st.lists(times, min_size=n, max_size=n))
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n)]
    edges = draw(st.lists(st.sampled_from(pairs), max_size=len(pairs))) if pairs else []
    k = draw(st.integers(1, min(n, 4)))  # the oracle tries k**n assignments
    return pl.Graph(work, comm, edges), k


@st.composite
def chains(draw, max_nodes=7):
    n = draw(st.integers(1, max_nodes))
    work = draw(st.lists(times, min_size=n, max_size=n))
    comm = draw(st.lists(times, min_size=n, max_size=n))
    return pl.Graph.chain(work, comm), draw(st.integers(1, min(n, 4)))


def test_stage_cost_counts_each_tensor_once_per_stage():
    # 0 feeds 1 and 2; 1 and 2 feed 3. Stage {1, 2} receives 0's output once and sends
    # both its outputs to 3.
    g = pl.Graph([1, 2, 3, 4], [10, 20, 30, 40], [(0, 1), (0, 2), (1, 3), (2, 3)])
    assert pl.stage_cost(g, {1, 2}) == 2 + 3 + 10 + 20 + 30
    assert pl.stage_cost(g, {0, 1, 2, 3}) == 10  # nothing crosses the boundary


def test_feasibility():
    g = pl.Graph([1, 1, 1], [1, 1, 1], [(0, 1), (1, 2)])
    assert pl.is_feasible(g, [(0,), (1, 2)])
    assert not pl.is_feasible(g, [(1,), (0, 2)])  # edge 0 -> 1 goes backwards
    assert not pl.is_feasible(g, [(0, 1)])  # node 2 missing
    assert not pl.is_feasible(g, [(0, 1), (1, 2)])  # node 1 twice


def test_worked_chain():
    g = pl.Graph.chain([4, 1, 1, 4], [0.5, 0.5, 0.5, 0.5])
    result = pl.partition(g, 2)
    assert result.stages == ((0, 1), (2, 3)) and result.bottleneck == 5.5 and result.optimal
    assert result.throughput == pytest.approx(1 / 5.5)


@settings(max_examples=60, deadline=None)
@given(chains())
def test_chain_dp_is_optimal(case):
    graph, k = case
    result, oracle = pl.partition(graph, k), pl.brute_force(graph, k)
    assert result.bottleneck == pytest.approx(oracle.bottleneck)
    assert result.optimal and pl.is_feasible(graph, result.stages)
    assert len(result.stages) <= k


@settings(max_examples=40, deadline=None)
@given(dags())
def test_mip_equals_brute_force_and_bounds_hold(case):
    graph, k = case
    oracle = pl.brute_force(graph, k)
    mip = pl.solve_mip(graph, k)
    assert mip.bottleneck == pytest.approx(oracle.bottleneck, rel=10 * pl.MIP_REL_GAP, abs=1e-12)
    assert pl.is_feasible(graph, mip.stages)
    order = pl.split_order(graph, graph.order, k)
    assert pl.is_feasible(graph, order.stages)
    assert order.bottleneck >= oracle.bottleneck - 1e-9  # a heuristic never beats the optimum
    for bound in (pl.combinatorial_lower_bound(graph, k), order.lower_bound, mip.lower_bound):
        assert bound <= oracle.bottleneck * (1 + 1e-9) + 1e-12  # never above the optimum


def test_partition_is_exact_up_to_twelve_nodes():
    # A diamond-heavy 12-node graph: the DP over one order is not enough, the MIP is.
    work = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]
    comm = [0.5] * 12
    edges = [(0, i) for i in range(1, 11)] + [(i, 11) for i in range(1, 11)]
    result = pl.partition(pl.Graph(work, comm, edges), 3)
    assert result.optimal and result.method.startswith("MIP")
    assert result.lower_bound == pytest.approx(result.bottleneck, rel=10 * pl.MIP_REL_GAP)


def test_larger_graphs_report_a_gap():
    n = 20
    edges = [(i, i + 2) for i in range(n - 2)] + [(i, i + 1) for i in range(0, n - 1, 3)]
    g = pl.Graph([1.0 + (i % 3) for i in range(n)], [0.2] * n, edges)
    result = pl.partition(g, 4)
    assert 0 <= result.gap < 1 and result.lower_bound <= result.bottleneck
    assert pl.is_feasible(g, result.stages)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: pl.Graph([1, 2], [1], []), "one entry per node"),
        (lambda: pl.Graph([1, -2], [1, 1], []), r"`work\[1\]` must be a non-negative"),
        (lambda: pl.Graph([1, 2], [1, math.nan], []), r"`comm\[1\]` must be a non-negative"),
        (lambda: pl.Graph([1, 2], [1, 1], [(0, 0)]), "self-loop"),
        (lambda: pl.Graph([1, 2], [1, 1], [(0, 5)]), "outside 0..1"),
        (lambda: pl.Graph([1, 2], [1, 1], [(0, 1, 2)]), r"must be a pair \(u, v\)"),
        (lambda: pl.Graph([1, 2, 3], [1, 1, 1], [(0, 1), (1, 2), (2, 0)]), "has a cycle"),
        (lambda: pl.Graph([], [], []), "at least one node"),
    ],
)
def test_bad_graphs(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_bad_requests():
    g = pl.Graph.chain([1, 2, 3], [1, 1, 1])
    with pytest.raises(ValueError, match=r"between 1 and the number of nodes \(got k=4 for 3"):
        pl.partition(g, 4)
    with pytest.raises(ValueError, match="`k` must be a positive integer"):
        pl.partition(g, 0)
    with pytest.raises(ValueError, match="must be topological"):
        pl.split_order(g, [2, 1, 0], 2)
    with pytest.raises(TypeError, match="`graph` must be a pipeline.Graph"):
        pl.partition([1, 2, 3], 2)
