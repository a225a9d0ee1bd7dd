"""The reduction before any proof: it keeps the optimum, and a finer drawing of the same
network gets the same certificate."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel import pipeline as pl
from perfmodel.pipeline import networks, zoo

times = st.sampled_from([0.0, 0.0, 0.5, 1.0, 2.0, 3.0, 7.0])


@st.composite
def mergeable_dags(draw, max_nodes=7):
    """Small DAGs with zero-work nodes and costly tensors, where the rules often apply;
    sometimes with memory on a device that binds."""
    n = draw(st.integers(1, max_nodes))
    work = draw(st.lists(times, min_size=n, max_size=n))
    comm = draw(st.lists(times, min_size=n, max_size=n))
    pairs = [(u, v) for u in range(n) for v in range(u + 1, n)]
    edges = draw(st.lists(st.sampled_from(pairs), max_size=len(pairs))) if pairs else []
    if draw(st.booleans()):
        memory = draw(st.lists(st.sampled_from([0.0, 0.0, 1.0, 2.0]), min_size=n, max_size=n))
        graph = pl.Graph(work, comm, edges, memory=memory, capacity=2.0)
    else:
        graph = pl.Graph(work, comm, edges)
    return graph, draw(st.integers(1, min(n, 3)))


def test_an_identity_and_a_concatenation_merge_and_the_split_maps_back():
    # 0 and 1 feed a concatenation 2 (no work, sends what they sent) read by 3, whose
    # output passes through an identity 4 (no work, the same tensor) to 5.
    g = pl.Graph(
        [3.0, 2.0, 0.0, 4.0, 0.0, 3.0],
        [1.0, 0.5, 1.5, 2.0, 2.0, 0.1],
        [(0, 2), (1, 2), (2, 3), (3, 4), (4, 5)],
    )
    reduction = pl.reduce_graph(g)
    assert reduction.reduced and reduction.groups == ((0,), (1,), (2, 3, 4), (5,))
    assert reduction.graph.edges == ((0, 2), (1, 2), (2, 3))
    assert reduction.graph.comm[2] == 2.0 and reduction.graph.work[2] == 4.0
    for k in (1, 2, 3):
        result = pl.partition(g, k)
        assert result.optimal and "reduced to 4 of 6 nodes" in result.method
        assert result.bottleneck == pytest.approx(pl.brute_force(g, k).bottleneck)
        assert pl.is_feasible(g, result.stages)


def test_a_cut_that_can_pay_is_kept():
    chain = pl.Graph.chain([4.0, 4.0, 4.0], [1.0, 1.0, 1.0])
    assert not pl.reduce_graph(chain).reduced
    assert pl.partition(chain, 3).bottleneck == 6.0  # every cut used


def test_memory_is_never_moved_onto_a_stage():
    # Node 1 is an identity, but it holds memory: moving it could overfill a stage.
    work, comm, edges = [1.0, 0.0, 1.0], [1.0, 1.0, 1.0], [(0, 1), (1, 2)]
    g = pl.Graph(work, comm, edges, memory=[1, 1, 1], capacity=2)
    assert g.limited and not pl.reduce_graph(g).reduced
    free = pl.Graph(work, comm, edges, memory=[1, 0, 1], capacity=1.5)
    assert free.limited
    assert pl.reduce_graph(free).groups == ((0, 1), (2,))


@settings(max_examples=150, deadline=None)
@given(mergeable_dags())
def test_the_reduced_graph_has_the_same_optimum(case):
    graph, k = case
    reduction = pl.reduce_graph(graph)
    small = reduction.graph
    best = pl.brute_force(graph, k)
    reduced = pl.brute_force(small, min(k, small.n))
    if math.isinf(best.bottleneck):  # nothing fits the device
        assert math.isinf(reduced.bottleneck)
        return
    assert math.isclose(reduced.bottleneck, best.bottleneck, rel_tol=1e-9, abs_tol=1e-12)
    stages = reduction.expand(reduced.stages)
    assert pl.is_feasible(graph, stages)
    assert math.isclose(
        pl.partition(graph, k).bottleneck, best.bottleneck, rel_tol=1e-9, abs_tol=1e-12
    )
    assert sorted(v for group in reduction.groups for v in group) == list(range(graph.n))


def _same_certificate(graph: pl.Graph, seed: int, stages=(2, 4, 8, 16)) -> None:
    finer = pl.redraw_finer(graph, seed=seed)
    assert finer.n > graph.n
    assert math.isclose(sum(finer.work), sum(graph.work), rel_tol=1e-9)
    for k in stages:
        if k > graph.n:
            continue
        drawn, fine = pl.partition(graph, k), pl.partition(finer, k)
        assert abs(fine.gap - drawn.gap) <= 0.01, (k, drawn.gap, fine.gap)
        assert pl.is_feasible(finer, fine.stages)
        assert fine.bottleneck <= drawn.bottleneck * (1 + 1e-9)  # the same network


@settings(max_examples=12, deadline=None)
@given(
    layers=st.integers(2, 6),
    width=st.integers(1, 3),
    seed=st.integers(0, 10_000),
    redraw=st.integers(0, 10_000),
)
def test_a_random_dag_redrawn_finer_has_the_same_certificate(layers, width, seed, redraw):
    _same_certificate(zoo.random_layered_dag(layers, width, seed=seed), redraw)


@pytest.mark.parametrize(
    "graph",
    [
        zoo.mlp(layers=6),
        zoo.inception_like(modules=2),
        zoo.gpt2_like(layers=2),
        networks.gnmt(layers=3),
    ],
    ids=["mlp", "inception_like", "gpt2_like", "gnmt"],
)
def test_a_zoo_graph_redrawn_finer_has_the_same_certificate(graph):
    _same_certificate(graph, seed=3)


def test_inception_v3_redrawn_finer_reduces_to_its_own_drawing():
    g = networks.inception_v3()
    finer = pl.redraw_finer(g, seed=5)
    assert pl.reduce_graph(finer).graph.n == pl.reduce_graph(g).graph.n < g.n < finer.n


def test_errors_name_the_argument():
    with pytest.raises(TypeError, match="`graph`"):
        pl.reduce_graph([1, 2])
    with pytest.raises(TypeError, match="`graph`"):
        pl.redraw_finer("chain")
    g = pl.Graph.chain([1.0, 1.0], [0.5, 0.5])
    with pytest.raises(ValueError, match="`identity_share`"):
        pl.redraw_finer(g, identity_share=1.5)
    with pytest.raises(TypeError, match="`concat_share`"):
        pl.redraw_finer(g, concat_share="half")
    with pytest.raises(ValueError, match="`seed`"):
        pl.redraw_finer(g, seed=-1)
