"""The real numpy server: every request served once, in batches the rule allows, and the
simulator's prediction replaying the same arrivals. No assertion on wall-clock time."""

from __future__ import annotations

import math

import numpy as np
import pytest

from perfmodel.serving.server import MLP, Server, load_test, measure_batch_times, predict


@pytest.fixture(scope="module")
def model() -> MLP:
    return MLP(width=128, layers=2)


def test_the_mlp_is_seeded_and_keeps_its_shape(model):
    x = np.ones((5, 128), dtype=np.float32)
    assert model(x).shape == (5, 128)
    assert np.array_equal(model(x), MLP(width=128, layers=2)(x))
    assert not np.array_equal(model(x), MLP(width=128, layers=2, seed=1)(x))


def test_a_load_test_serves_every_request_once_in_allowed_batches(model):
    run = load_test(model, arrival_rate=400, requests=300, workers=2, max_batch=4,
                    max_wait_s=0.002, seed=3)  # fmt: skip
    assert len(run.arrivals) == 300 and sum(run.batch_sizes) == 300
    assert max(run.batch_sizes) <= 4
    assert np.all(run.starts >= run.arrivals) and np.all(run.completions > run.starts)
    assert len(run.latencies) == 270  # the first 10% are warm-up
    assert run.p99_latency_s >= run.p50_latency_s > 0


def test_the_prediction_replays_the_same_arrivals(model):
    run = load_test(model, arrival_rate=300, requests=100, workers=1, seed=1)
    times = measure_batch_times(model, [1, 2])
    sim = predict(run, times, workers=1, max_batch=2, max_wait_s=0.001)
    assert np.array_equal(sim.arrivals, run.arrivals)
    assert max(sim.batch_sizes) <= 2 and sim.throughput == pytest.approx(
        len(run.arrivals) / sim.span_s)  # fmt: skip


def test_bad_input_is_a_clear_error(model):
    with pytest.raises(TypeError, match="`model`"):
        Server(3.0)
    with pytest.raises(ValueError, match="`arrival_rate`"):
        load_test(model, arrival_rate=0)
    with pytest.raises(TypeError, match="`width`"):
        load_test(lambda x: x, arrival_rate=10)
    with pytest.raises(ValueError, match="`batch_times`"):
        predict(load_test(model, arrival_rate=500, requests=20), {}, workers=1)


def test_tail_report_counts_where_measured_latencies_land():
    """A hand-made pair: measured p50 1.2x and p99 1.5x its prediction at one load, below both
    at the other. The line counts each, as lecture 11 prints it."""
    from types import SimpleNamespace

    from perfmodel.serving.server import tail_report

    def run(p50: float, p99: float) -> SimpleNamespace:
        return SimpleNamespace(p50_latency_s=p50, p99_latency_s=p99)

    above = (run(1.2, 3.0), run(1.0, 2.0))
    below = (run(0.9, 1.8), run(1.0, 2.0))
    assert tail_report([above, below]) == (
        "the measured p50 is above its prediction at 1 of 2 loads, the p99 at 1 of 2, "
        "by a larger factor than the p50 at 1 of 2"
    )
    with pytest.raises(TypeError, match="`pairs` must be a sequence"):
        tail_report(above[0])
    with pytest.raises(ValueError, match="`pairs` must hold at least one"):
        tail_report([])
    with pytest.raises(TypeError, match=r"`pairs\[1\]` must be a \(measured, predicted\)"):
        tail_report([above, (run(1, 2),)])
    with pytest.raises(TypeError, match=r"`pairs\[0\]`"):
        tail_report([(run(1, 2), "fast")])


def test_a_simulated_run_gives_each_requests_batch_time_as_a_load_test_does():
    from perfmodel.serving import linear_batch_time, simulate

    run = simulate(100, 0.01, 1, distribution="deterministic", max_batch=4, max_wait_s=0.01,
                   batch_time=linear_batch_time(0.004, 0.001), requests=200, seed=0)  # fmt: skip
    assert len(run.service_times_s) == 200
    allowed = {round(0.004 + 0.001 * b, 9) for b in range(1, 5)}
    assert {round(t, 9) for t in run.service_times_s} <= allowed


def test_a_load_test_stops_at_its_time_limit_even_between_arrivals():
    small = MLP(width=8, layers=1)
    # seed 0 at 0.5 requests/s: the first arrival is due at 1.36 s, past the 0.2 s limit.
    with pytest.raises(ValueError, match="no request was sent within `time_limit_s`"):
        load_test(small, arrival_rate=0.5, requests=10, time_limit_s=0.2)
    # seed 0 at 50 requests/s: 9 arrivals are due by 0.2 s, the 10th at 0.28 s.
    run = load_test(small, arrival_rate=50, requests=40, time_limit_s=0.2)
    assert 1 <= len(run.arrivals) <= 9 and sum(run.batch_sizes) == len(run.arrivals)


def test_one_request_has_no_arrival_rate_but_everything_else():
    # seed 0 at 50 requests/s: the first arrival is due at 0.014 s, the second at 0.034 s.
    run = load_test(MLP(width=8, layers=1), arrival_rate=50, requests=10, time_limit_s=0.025)
    assert len(run.arrivals) == 1 and math.isnan(run.arrival_rate)
    assert run.throughput > 0 and run.mean_batch == 1
