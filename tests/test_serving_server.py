"""The real numpy server: every request served once, in batches the rule allows, and the
simulator's prediction replaying the same arrivals. No assertion on wall-clock time."""

from __future__ import annotations

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
