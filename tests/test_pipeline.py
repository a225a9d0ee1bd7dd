"""Pipeline partitioning against a brute-force oracle, and its errors."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel import pipeline as pl

times = st.floats(  # subnormal times (below 1e-308 s) only test float rounding
    min_value=0, max_value=10, allow_nan=False, allow_infinity=False, allow_subnormal=False
)


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


def test_the_mip_certificate_holds_where_presolve_once_broke_it():
    # HiGHS with presolve returned bottleneck 12 as "optimal" here; the singleton split gives 11.
    graph = pl.Graph((2, 4, 1.75, 5), (2, 4, 2, 0), ((0, 1), (0, 2), (1, 2), (1, 3), (2, 3)))
    mip = pl.solve_mip(graph, 4)
    assert mip.bottleneck == pytest.approx(pl.brute_force(graph, 4).bottleneck) == 11
    assert mip.lower_bound <= 11


def test_partition_is_exact_up_to_twelve_nodes():
    # A diamond-heavy 12-node graph: the DP over one order is not enough; the downset DP is.
    work = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]
    comm = [0.5] * 12
    edges = [(0, i) for i in range(1, 11)] + [(i, 11) for i in range(1, 11)]
    g = pl.Graph(work, comm, edges)
    result = pl.partition(g, 3)
    assert result.optimal and result.method.startswith("dynamic programming on downsets")
    assert result.bottleneck < pl.split_order(g, g.order, 3).bottleneck


def test_the_mip_matches_the_downset_dp_on_twelve_wide_nodes():
    # 12 nodes, one edge: 3 x 2**10 = 3072 downsets, still exact; the MIP must agree.
    work = [3, 1, 4, 1, 5, 9, 2, 6, 5, 3, 5, 8]
    g = pl.Graph(work, [0.5] * 12, [(0, 1)])
    exact, mip = pl.partition(g, 3), pl.solve_mip(g, 3)
    assert exact.method.startswith("dynamic programming on downsets") and exact.optimal
    assert mip.optimal and pl.is_feasible(g, mip.stages)
    assert mip.bottleneck == pytest.approx(exact.bottleneck, rel=10 * pl.MIP_REL_GAP)


def test_too_many_downsets_is_a_none_not_a_hang():
    from perfmodel.pipeline.zoo import random_layered_dag

    g = random_layered_dag(10, 6, seed=1)
    assert pl.split_downsets(g, 4) is None


@settings(max_examples=60, deadline=None)
@given(dags(max_nodes=7))
def test_downset_dp_equals_brute_force(case):
    graph, k = case
    result, oracle = pl.split_downsets(graph, k), pl.brute_force(graph, k)
    assert result is not None and pl.is_feasible(graph, result.stages)
    assert len(result.stages) <= k
    assert result.bottleneck == pytest.approx(oracle.bottleneck, rel=1e-9, abs=1e-12)
    assert result.lower_bound <= oracle.bottleneck * (1 + 1e-9) + 1e-12


def contiguous_oracle(graph, order, k):
    """Best split of ``order`` into at most k contiguous pieces, by trying every cut set."""
    best = math.inf
    for pieces in range(1, k + 1):
        for cuts in itertools.combinations(range(1, graph.n), pieces - 1):
            bounds = [0, *cuts, graph.n]
            stages = [order[a:b] for a, b in itertools.pairwise(bounds)]
            best = min(best, max(pl.stage_cost(graph, s) for s in stages))
    return best


@settings(max_examples=60, deadline=None)
@given(dags(max_nodes=8), st.integers(0, 10**6))
def test_order_dp_equals_trying_every_cut_of_any_order(case, seed):
    from perfmodel.pipeline.search import decode

    graph, k = case
    keys = np.random.default_rng(seed).random(graph.n).tolist()
    order = decode(graph, keys)  # a random topological order
    result = pl.split_order(graph, order, k)
    assert pl.is_feasible(graph, result.stages)
    assert result.bottleneck == pytest.approx(
        contiguous_oracle(graph, order, k), rel=1e-9, abs=1e-12
    )


@settings(max_examples=80, deadline=None)
@given(
    st.integers(2, 60), st.integers(1, 9), st.integers(0, 10**6), st.booleans(),
    st.sampled_from([1, 4, 128]),
)  # fmt: skip
def test_the_even_split_bound_never_changes_the_split(n, k, seed, limited, band):
    """The order DP skips pieces dearer than an even split's bottleneck, in bands of rows;
    the split, its bottleneck and its bound are those of the DP that skips nothing."""
    from unittest import mock

    from perfmodel.pipeline import split

    rng = np.random.default_rng(seed)
    work = rng.choice([0.0, 1.0, 3.0], n) * rng.random(n)  # zeros and ties, as real graphs have
    comm = rng.choice([0.0, 1.0, 5.0], n) * rng.random(n)
    edges = [(u, v) for v in range(1, n) for u in rng.integers(max(0, v - 6), v, 2).tolist()]
    memory = rng.random(n)
    capacity = max(memory.max(), memory.sum() / rng.uniform(1.2, 8)) if limited else math.inf
    graph = pl.Graph(work.tolist(), comm.tolist(), edges, memory=memory.tolist(),
                     capacity=capacity)  # fmt: skip
    k = min(k, n)
    with mock.patch.object(split, "_BAND", band):
        bounded = pl.split_order(graph, list(graph.order), k)
        with mock.patch.object(split, "_even_split_bottleneck", lambda *_: math.inf):
            plain = pl.split_order(graph, list(graph.order), k)
    assert bounded.stages == plain.stages
    assert bounded.bottleneck == plain.bottleneck
    assert bounded.lower_bound == plain.lower_bound


@settings(max_examples=60, deadline=None)
@given(dags(max_nodes=12), st.integers(0, 10**6), st.floats(1.0, 4.0))
def test_every_piece_costs_what_stage_cost_says_memory_limits_included(case, seed, room):
    from perfmodel.pipeline.search import decode
    from perfmodel.pipeline.split import order_segment_costs

    graph, _ = case
    rng = np.random.default_rng(seed)
    memory = rng.random(graph.n).tolist()
    limited = pl.Graph(graph.work, graph.comm, graph.edges, memory=memory,
                       capacity=max(memory) * room)  # fmt: skip
    for g in (graph, limited):
        order = decode(g, rng.random(g.n).tolist())  # a random topological order
        costs = order_segment_costs(g, order)
        for a in range(g.n):
            for b in range(g.n):
                expected = pl.stage_cost(g, order[a : b + 1]) if a <= b else math.inf
                assert costs[a, b] == pytest.approx(expected, rel=1e-9, abs=1e-12), (a, b)


@settings(max_examples=30, deadline=None)
@given(dags(max_nodes=7), st.integers(0, 100))
def test_order_search_is_feasible_deterministic_and_never_below_the_optimum(case, seed):
    graph, k = case
    found = pl.search_orders(graph, k, seed=seed, generations=3, population=6)
    again = pl.search_orders(graph, k, seed=seed, generations=3, population=6)
    assert found == again and pl.is_feasible(graph, found.stages)
    assert found.bottleneck >= pl.brute_force(graph, k).bottleneck * (1 - 1e-9) - 1e-12
    assert found.bottleneck <= pl.split_order(graph, graph.order, k).bottleneck + 1e-12


@settings(max_examples=25, deadline=None)
@given(dags(max_nodes=6))
def test_window_and_mip_bounds_never_exceed_the_optimum(case):
    from perfmodel.pipeline.bounds import mip_lower_bound, window_lower_bound

    graph, k = case
    optimum = pl.brute_force(graph, k).bottleneck
    assert window_lower_bound(graph, k) <= optimum * (1 + 1e-9) + 1e-12
    upper = pl.split_order(graph, graph.order, k).bottleneck
    proof = mip_lower_bound(graph, k, upper)
    assert proof.complete
    assert proof.lower_bound <= optimum * (1 + 1e-9) + 1e-12
    if proof.split is not None:
        assert pl.is_feasible(graph, proof.split.stages) and proof.split.bottleneck < upper


@pytest.mark.slow  # seconds of solver or measurement: make test, not test-fast
def test_mip_bound_closes_most_of_the_gap_on_a_random_dag():
    from perfmodel.pipeline.bounds import mip_lower_bound
    from perfmodel.pipeline.zoo import random_layered_dag

    g = random_layered_dag(6, 3, seed=2)
    found = pl.search_orders(g, 6)
    proof = mip_lower_bound(g, 6, found.bottleneck)
    best = min(found.bottleneck, proof.split.bottleneck if proof.split else math.inf)
    assert proof.lower_bound / best > 0.95  # 0.976
    assert pl.combinatorial_lower_bound(g, 6) / best < 0.8  # 0.735


def test_the_compact_mip_probes_first_and_the_covering_lp_only_where_it_runs_out(monkeypatch):
    from perfmodel.pipeline import bounds
    from perfmodel.pipeline.zoo import random_layered_dag

    small = random_layered_dag(8, 3, seed=0)  # 24 nodes x 2 stages: the MIP decides each probe
    upper = pl.search_orders(small, 2).bottleneck
    asked = []
    real = bounds.cover_probe
    monkeypatch.setattr(bounds, "cover_probe", lambda *a, **kw: asked.append(1) or real(*a, **kw))
    proof = bounds.mip_lower_bound(small, 2, upper)
    assert proof.source == "compact MIP" and not asked
    assert proof.lower_bound / upper > 0.999  # 0.9994
    wide = random_layered_dag(6, 3, seed=2)  # at k = 6 the MIP runs out of nodes: the LP proves
    proof = bounds.mip_lower_bound(wide, 6, pl.search_orders(wide, 6).bottleneck)
    assert proof.source == "covering LP" and asked


def test_a_long_chain_splits_fast_and_exactly():
    rng = np.random.default_rng(0)
    g = pl.Graph.chain(rng.uniform(1, 10, 10_000).tolist(), rng.uniform(0, 5, 10_000).tolist())
    result = pl.partition(g, 64)  # its speed is measured in benchmarks/partition.py
    assert len(result.stages) == 64 and result.optimal
    assert result.bottleneck == pytest.approx(
        max(pl.stage_cost(g, stage) for stage in result.stages)
    )


def test_the_same_inputs_give_the_same_bound_whatever_the_clock():
    # Work bounds, not seconds: a generous and a tight-but-unreached safety net agree.
    from perfmodel.pipeline.bounds import mip_lower_bound
    from perfmodel.pipeline.zoo import random_layered_dag

    g = random_layered_dag(6, 3, seed=2)  # small enough for the compact MIP (HiGHS) too
    upper = pl.search_orders(g, 6).bottleneck
    first = mip_lower_bound(g, 6, upper, probes=3, time_limit_s=600)
    second = mip_lower_bound(g, 6, upper, probes=3, time_limit_s=60)
    assert first.complete and second.complete
    assert (first.lower_bound, first.probes) == (second.lower_bound, second.probes)


def test_a_time_limit_cuts_the_whole_call_short_and_says_so():
    from perfmodel.pipeline.zoo import random_layered_dag

    g = random_layered_dag(60, 10, edge_probability=0.05, seed=7)
    result = pl.partition(g, 16, time_limit_s=0.5)
    assert not result.complete
    assert pl.is_feasible(g, result.stages)
    assert result.lower_bound <= result.bottleneck


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
        (lambda: pl.Graph([1, 2], [1, 1], [(0, 1, 2)]), r"must hold pairs \(u, v\)"),
        (lambda: pl.Graph([1, 2, 3], [1, 1, 1], [(0, 1), (1, 2), (2, 0)]), "has a cycle"),
        (lambda: pl.Graph([], [], []), "at least one node"),
        (lambda: pl.Graph([1e308, 0, 0], [1e308] * 3, [(0, 1), (1, 2)]), "add up to a finite"),
    ],
)
def test_bad_graphs(build, message):
    with pytest.raises((TypeError, ValueError), match=message):
        build()


def test_bad_requests():
    g = pl.Graph.chain([1, 2, 3], [1, 1, 1])
    with pytest.raises(ValueError, match=r"`k` must be an integer from 1 to 3 \(got 4\)"):
        pl.partition(g, 4)
    with pytest.raises(ValueError, match=r"`k` must be an integer from 1 to 3 \(got 0\)"):
        pl.partition(g, 0)
    with pytest.raises(ValueError, match="must be topological"):
        pl.split_order(g, [2, 1, 0], 2)
    with pytest.raises(TypeError, match="`graph` must be a pipeline.Graph"):
        pl.partition([1, 2, 3], 2)
    with pytest.raises(ValueError, match="must be a chain"):
        pl.split_chain(pl.Graph([1, 1, 1], [1, 1, 1], [(0, 2)]), 2)
    with pytest.raises(ValueError, match="`population` must be an integer >= 4"):
        pl.search_orders(g, 2, population=2)
    with pytest.raises(ValueError, match="`evaluations` must be a positive integer"):
        pl.search_orders(g, 2, evaluations=0)
    with pytest.raises(ValueError, match="`time_limit_s` must be a positive number"):
        pl.partition(g, 2, time_limit_s=0)
    with pytest.raises(TypeError, match="`time_limit_s` must be a number"):
        pl.solve_mip(g, 2, time_limit_s="10")


def test_subnormal_times_still_terminate():
    from perfmodel.pipeline.bounds import window_lower_bound

    tiny = pl.Graph.chain([5e-324, 5e-324, 0.0], [5e-324, 0.0, 1e-320])
    assert pl.partition(tiny, 2).bottleneck <= 1e-322
    assert window_lower_bound(pl.Graph([5e-324, 1e-323], [0, 0], [(0, 1)]), 2) <= 1e-322
