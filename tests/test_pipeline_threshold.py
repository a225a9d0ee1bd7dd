"""The threshold search and the cut bound, against brute force and the downset program."""

from __future__ import annotations

import importlib
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_pipeline import dags

from perfmodel import pipeline as pl
from perfmodel.pipeline.bounds import window_lower_bound
from perfmodel.pipeline.cover import Verdict
from perfmodel.pipeline.cuts import boundary_cuts, cut_lower_bound
from perfmodel.pipeline.threshold import MOST_PROBES, threshold_probe, threshold_search
from perfmodel.pipeline.zoo import random_layered_dag

partition_module = importlib.import_module("perfmodel.pipeline.partition")


def with_memory(graph: pl.Graph, seed: int, room: float) -> pl.Graph:
    """``graph`` with random node memories and a device of ``room`` x the largest."""
    memory = np.random.default_rng(seed).random(graph.n).tolist()
    return pl.Graph(graph.work, graph.comm, graph.edges, memory=memory, capacity=max(memory) * room)


@settings(max_examples=80, deadline=None)
@given(dags(max_nodes=7), st.integers(0, 10**6), st.sampled_from([math.inf, 1.0, 1.5, 3.0]))
def test_a_probe_is_exact_against_brute_force(case, seed, room):
    graph, k = case
    if math.isfinite(room):
        graph = with_memory(graph, seed, room)
    try:
        optimum = pl.brute_force(graph, k).bottleneck
    except ValueError:
        return
    if math.isinf(optimum):  # no split fits the devices: nothing is feasible
        assert threshold_probe(graph, k, 1e9)[0] is Verdict.INFEASIBLE
        return
    if optimum == 0:
        return
    verdict, split, _ = threshold_probe(graph, k, optimum)
    assert verdict is Verdict.FEASIBLE
    assert split is not None and pl.is_feasible(graph, split.stages) and len(split.stages) <= k
    assert split.bottleneck == pytest.approx(optimum, rel=1e-9)
    assert threshold_probe(graph, k, optimum * (1 - 1e-6))[0] is Verdict.INFEASIBLE


@pytest.mark.parametrize("seed", range(12))
def test_a_probe_is_exact_against_the_downset_program_on_wider_dags(seed):
    graph = random_layered_dag(4 + seed % 4, 2 + seed % 3, edge_probability=0.3, seed=seed)
    for k in (2, 3, 5, 8):
        optimum = pl.split_downsets(graph, k).bottleneck
        assert threshold_probe(graph, k, optimum)[0] is Verdict.FEASIBLE
        assert threshold_probe(graph, k, optimum * (1 - 1e-6))[0] is Verdict.INFEASIBLE


@settings(max_examples=40, deadline=None)
@given(dags(max_nodes=7), st.floats(1.0, 3.0))
def test_the_search_never_bounds_above_the_optimum_and_its_split_is_real(case, slack):
    graph, k = case
    optimum = pl.brute_force(graph, k).bottleneck
    if optimum == 0:
        return
    result = threshold_search(graph, k, 0.0, optimum * slack)
    assert result.lower_bound <= optimum * (1 + 1e-9)
    if result.split is not None:
        assert pl.is_feasible(graph, result.split.stages)
        assert result.split.bottleneck < optimum * slack
    # with room to work, the gap closes: the bound meets the optimum
    assert result.lower_bound >= optimum * (1 - 1e-6)


def test_a_probe_stops_at_its_step_count_and_says_unknown():
    graph = random_layered_dag(30, 4, seed=3)
    verdict, split, taken = threshold_probe(graph, 4, sum(graph.work) / 3, steps=500)
    assert verdict is Verdict.UNKNOWN and split is None
    assert taken == 501  # the step that went over is the last


def test_the_search_is_deterministic_and_bounded_by_its_steps():
    graph = random_layered_dag(25, 3, seed=5)
    upper = pl.search_orders(graph, 16).bottleneck
    first = threshold_search(graph, 16, 0.0, upper, steps=20_000, probe_steps=5_000)
    second = threshold_search(graph, 16, 0.0, upper, steps=20_000, probe_steps=5_000)
    assert first == second
    assert first.steps <= 20_000 + first.probes  # each probe may overrun by its last step
    assert first.complete


def test_partition_proves_the_optimum_by_threshold_search_when_the_downset_program_cannot_run(
    monkeypatch,
):
    graph = random_layered_dag(8, 3, edge_probability=0.2, seed=9)
    exact = pl.split_downsets(graph, 12)
    monkeypatch.setattr(partition_module, "lattice_blocks", lambda *_, **__: None)
    result = pl.partition(graph, 12)
    assert "bound: threshold search" in result.method
    assert result.optimal and result.bottleneck == pytest.approx(exact.bottleneck, rel=1e-9)


@settings(max_examples=60, deadline=None)
@given(dags(max_nodes=7), st.integers(0, 10**6), st.sampled_from([math.inf, 1.0, 2.0]))
def test_the_cut_bound_never_exceeds_the_optimum(case, seed, room):
    graph, k = case
    if math.isfinite(room):
        graph = with_memory(graph, seed, room)
    optimum = pl.brute_force(graph, k).bottleneck
    bound = cut_lower_bound(graph, k)
    assert window_lower_bound(graph, k) * (1 - 1e-9) <= bound <= optimum * (1 + 1e-9)


def test_the_cut_bound_sees_the_tensors_every_boundary_must_send():
    # a chain of equal layers with heavy tensors: any two stages pay a send and a receive
    graph = pl.Graph.chain([1.0] * 8, [3.0] * 8)
    optimum = pl.split_chain(graph, 2).bottleneck  # 4 + 3 = 7 per stage
    assert window_lower_bound(graph, 2) == 4.0
    assert cut_lower_bound(graph, 2) == pytest.approx(min(optimum, (8 + 2 * 3) / 2), rel=2e-4)
    cuts = boundary_cuts(graph, 2, 7.0)
    assert cuts is not None and cuts.tolist() == pytest.approx([3.0], rel=1e-6)
    assert boundary_cuts(graph, 2, 3.0) is None  # no stage window under 3 s


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda g: threshold_probe(g, 0, 1.0), ValueError, "`k`"),
        (lambda g: threshold_probe(g, 2, -1.0), ValueError, "`limit`"),
        (lambda g: threshold_probe(g, 2, float("nan")), ValueError, "`limit`"),
        (lambda g: threshold_probe(g, 2, "1"), TypeError, "`limit`"),
        (lambda g: threshold_probe(g, 2, 1.0, steps=0), ValueError, "`steps`"),
        (lambda g: threshold_search(g, 2, -1.0, 1.0), ValueError, "`lower`"),
        (lambda g: threshold_search(g, 2, 0.0, 1.0, probe_steps=1.5), ValueError, "`probe_steps`"),
        (lambda g: threshold_probe([1, 2], 2, 1.0), TypeError, "`graph`"),
        (lambda g: threshold_probe(g, 2, 1.0, deadline=5), TypeError, "`deadline`"),
        (lambda g: threshold_search(g, 2, 0.0, float("nan")), ValueError, "`upper`"),
        (lambda g: cut_lower_bound(g, 2, deadline="soon"), TypeError, "`deadline`"),
        (lambda g: boundary_cuts(g, 2, 0.0), ValueError, "`limit`"),
        (lambda g: boundary_cuts(g, 2, float("nan")), ValueError, "`limit`"),
    ],
)
def test_bad_arguments_get_clear_errors(call, error, message):
    graph = random_layered_dag(3, 2, seed=1)
    with pytest.raises(error, match=message):
        call(graph)


@pytest.mark.parametrize("scale", [1.0, 1e-300, 5e-324])
def test_the_search_ends_on_its_own_even_where_no_float_lies_between_its_bounds(scale):
    # subnormal times leave no float between the bound and the incumbent: no deadline needed
    graph = pl.Graph([3 * scale, 2 * scale, 0.0], [scale, 0.0, 0.0], [(0, 1)])
    result = threshold_search(graph, 2, 0.0, 3 * scale)
    assert result.probes <= MOST_PROBES and result.complete
    assert result.lower_bound <= pl.brute_force(graph, 2).bottleneck


def test_a_stage_at_the_capacity_edge_is_judged_as_stage_cost_judges_it():
    # the three memories add up to the capacity within one rounding step, in one order
    # under it and in another over it: the probe must agree with stage_cost either way
    memory = [0.24030927323372037, 0.4542301210811698, 0.4291323856929842]
    tied = pl.Graph([1.0, 1.0, 1.0, 3.0], [0.0] * 4, [], memory=[*memory, 0.01],
                    capacity=1.1236717788842023)  # fmt: skip
    assert pl.brute_force(tied, 2).bottleneck == 3.0
    assert threshold_probe(tied, 2, 3.5)[0] is Verdict.FEASIBLE
    assert threshold_search(tied, 2, 0.0, 4.0).lower_bound <= 3.0
    memory = [0.297542878628348, 0.24100921789594001, 0.3530671537511604]
    over = pl.Graph([1.0] * 3, [0.0] * 3, [], memory=memory, capacity=0.891619249383829)
    assert math.isinf(pl.brute_force(over, 1).bottleneck)
    assert threshold_probe(over, 1, 5.0)[0] is Verdict.INFEASIBLE


def test_the_cut_bound_stays_below_a_float_tie_with_the_optimum():
    graph = pl.Graph([0.2, 0.2, 0.2], [0.0] * 3, [])  # 0.6 / 3 rounds to 0.20000000000000004
    assert cut_lower_bound(graph, 3) <= pl.brute_force(graph, 3).bottleneck
