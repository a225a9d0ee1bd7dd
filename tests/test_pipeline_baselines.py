"""Baselines and the GPipe schedule: worked cases and invariants."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel import pipeline as pl
from perfmodel.pipeline import zoo
from perfmodel.pipeline.baselines import balance_by_params, balance_by_time, equal_layers
from perfmodel.pipeline.schedule import bubble_fraction, simulate, simulate_batch


def test_equal_layers_splits_counts_evenly():
    g = pl.Graph.chain([1.0] * 10, [0.0] * 10)
    result = equal_layers(g, 3)
    assert [len(stage) for stage in result.stages] == [3, 4, 3]


def test_balance_by_params_cuts_at_parameter_quantiles():
    g = pl.Graph.chain([1.0] * 4, [0.0] * 4)
    result = balance_by_params(g, 2, params=[10, 10, 10, 30])
    assert result.stages == ((0, 1, 2), (3,))
    with pytest.raises(ValueError, match="`params` must give a count for each of the 4 nodes"):
        balance_by_params(g, 2, params=[1, 2])
    with pytest.raises(ValueError, match=r"`params\[1\]` must be a non-negative finite number"):
        balance_by_params(g, 2, params=[1, -2, 3, 4])


def test_balance_by_time_ignores_communication_and_pays_for_it():
    # Cutting after node 1 balances compute (2 + 2) but crosses the costly edge 1 -> 2.
    g = pl.Graph.chain([1.0, 1.0, 1.0, 1.0], [0.0, 5.0, 0.0, 0.0])
    naive, best = balance_by_time(g, 2), pl.partition(g, 2)
    assert naive.stages == ((0, 1), (2, 3)) and naive.bottleneck == 7.0
    assert best.bottleneck == 3.0 and best.optimal


@settings(max_examples=40, deadline=None)
@given(
    work=st.lists(
        st.floats(0, 10, allow_nan=False, allow_subnormal=False), min_size=2, max_size=12
    ),
    comm_scale=st.floats(0, 3, allow_nan=False, allow_subnormal=False),
    k=st.integers(1, 6),
)
def test_the_optimal_chain_split_beats_every_baseline(work, comm_scale, k):
    k = min(k, len(work))
    g = pl.Graph.chain(work, [comm_scale * (i % 3) for i in range(len(work))])
    best = pl.partition(g, k)
    for baseline in (equal_layers(g, k), balance_by_time(g, k),
                     balance_by_params(g, k, params=[1.0] * len(work))):  # fmt: skip
        assert pl.is_feasible(g, baseline.stages) and len(baseline.stages) <= k
        assert best.bottleneck <= baseline.bottleneck + 1e-9


def test_gpipe_equal_stages_match_the_bubble_formula():
    run = simulate([2.0] * 4, micro_batches=12)
    assert run.makespan == 2.0 * (12 + 4 - 1)
    assert run.bubble_fraction == pytest.approx(bubble_fraction(4, 12)) == pytest.approx(3 / 15)
    assert run.latency == 8.0 and run.throughput == pytest.approx(12 / 30)


def test_gpipe_slowest_stage_sets_the_pace():
    run = simulate([1.0, 3.0, 1.0], micro_batches=10)
    gaps = [b - a for a, b in zip(run.end[-1], run.end[-1][1:], strict=False)]
    assert gaps == pytest.approx([3.0] * 9)  # steady state: one micro-batch per bottleneck


@given(times=st.lists(st.floats(0.1, 5, allow_nan=False), min_size=1, max_size=6),
       m=st.integers(1, 20))  # fmt: skip
def test_schedule_respects_dependences(times, m):
    run = simulate(times, m)
    for s in range(len(times)):
        for i in range(m):
            if s:
                assert run.start[s][i] >= run.end[s - 1][i] - 1e-12
            if i:
                assert run.start[s][i] >= run.end[s][i - 1] - 1e-12
    assert run.makespan >= max(times) * m - 1e-9


def test_schedule_errors():
    with pytest.raises(ValueError, match="`micro_batches` must be a positive integer"):
        simulate([1.0], 0)
    with pytest.raises(ValueError, match="`stage_times` must list at least one stage"):
        simulate([], 3)
    with pytest.raises(ValueError, match="`stages` must be a positive integer"):
        bubble_fraction(0, 4)


def linear_chain(*, batch, layers=4):
    """Equal layers that cost their batch in seconds and send for free: costs scale with it."""
    return pl.Graph.chain([1.0 * batch] * layers, [0.0] * layers)


@pytest.mark.parametrize("m", [1, 2, 4, 8])
def test_simulate_batch_cuts_the_batch_and_prices_each_micro_batch_at_its_size(m):
    run = simulate_batch(linear_chain, batch=8, micro_batches=m, stages=4)
    whole = [pl.stage_cost(linear_chain(batch=8), s)
             for s in pl.partition(linear_chain(batch=8), 4).stages]  # fmt: skip
    assert len(run.start[0]) == m
    assert run.stage_times == pytest.approx([t / m for t in whole])  # costs scale with 1/m here
    # Equal stages: the batch is done after (m + p - 1) slots of one micro-batch's stage time.
    assert run.makespan == pytest.approx((m + 3) * max(whole) / m)
    assert run.bubble_fraction == pytest.approx(bubble_fraction(4, m))


def test_simulate_batch_of_one_micro_batch_is_the_whole_batch_through_its_best_split():
    graph = zoo.gpt2_like(layers=2, seq_len=128, batch=4)
    best = pl.partition(graph, 3)
    run = simulate_batch(zoo.gpt2_like, batch=4, micro_batches=1, stages=3, layers=2, seq_len=128)
    assert run.stage_times == pytest.approx([pl.stage_cost(graph, s) for s in best.stages])
    assert run.makespan == pytest.approx(sum(run.stage_times)) and run.bubble_fraction > 0


def test_smaller_micro_batches_cost_more_per_input_when_weights_are_read_each_time():
    # 128-token sequences: one sequence's matmuls are memory-bound, so the slowest stage of
    # a micro-batch of 1 costs more than an eighth of the whole batch's.
    per_input = [
        max(simulate_batch(zoo.gpt2_like, batch=8, micro_batches=m, stages=4, seq_len=128)
            .stage_times) / (8 // m)
        for m in (1, 8)
    ]  # fmt: skip
    assert per_input[1] > 1.5 * per_input[0]


def test_simulate_batch_errors():
    with pytest.raises(ValueError, match="`micro_batches` must divide `batch` = 8"):
        simulate_batch(linear_chain, batch=8, micro_batches=3, stages=2)
    with pytest.raises(TypeError, match="`build` must be a model builder"):
        simulate_batch("gpt2_like", batch=8, micro_batches=2, stages=2)
    with pytest.raises(ValueError, match="`stages` must be a positive integer"):
        simulate_batch(linear_chain, batch=8, micro_batches=2, stages=0)


@settings(max_examples=40, deadline=None)
@given(
    work=st.lists(st.floats(0.1, 5.0), min_size=2, max_size=7),
    comm=st.lists(st.floats(0.0, 3.0), min_size=7, max_size=7),
    k=st.integers(1, 4),
)
def test_greedy_cuts_never_beat_the_exact_split_and_stay_feasible(work, comm, k):
    from perfmodel.pipeline.baselines import greedy_cuts

    chain = pl.Graph.chain(work, comm[: len(work)])
    k = min(k, len(work))
    found = greedy_cuts(chain, k)
    assert len(found.stages) <= k and pl.is_feasible(chain, found.stages)
    assert found.bottleneck == pytest.approx(max(pl.stage_cost(chain, s) for s in found.stages))
    assert found.bottleneck >= pl.brute_force(chain, k).bottleneck * (1 - 1e-12)
