"""The serving simulator against queueing theory, a brute-force recursion, and Little's law."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel import serving
from perfmodel.serving.simulator import Replicated


def replicated(*args, confidence=0.99, **kwargs) -> Replicated:
    run = serving.simulate(*args, replications=10, **kwargs)
    return Replicated(run.runs, confidence=confidence)


@pytest.mark.parametrize(("rho", "servers"), [(0.5, 1), (0.8, 1), (0.8, 2), (0.9, 4), (0.7, 8)])
def test_mmc_mean_wait_is_erlang_c(rho, servers):
    rate = rho * servers  # mean service 1 s
    run = replicated(rate, 1.0, servers, requests=20_000, seed=11)
    low, high = run.interval("mean_wait_s")
    theory = serving.mmc_wait(rate, 1.0, servers)
    assert low <= theory <= high
    assert run.mean_wait_s == pytest.approx(theory, rel=0.08)


@pytest.mark.parametrize("rho", [0.3, 0.6, 0.85])
def test_md1_mean_wait_is_pollaczek_khinchine(rho):
    run = replicated(rho, 1.0, 1, distribution="deterministic", requests=20_000, seed=5)
    low, high = run.interval("mean_wait_s")
    assert low <= serving.md1_wait(rho, 1.0) <= high
    # fixed service waits half as long as exponential service at the same load
    assert serving.md1_wait(rho, 1.0) == pytest.approx(serving.mmc_wait(rho, 1.0, 1) / 2)


@settings(max_examples=25, deadline=None)
@given(
    rho=st.floats(0.1, 0.95),
    workers=st.integers(1, 4),
    servers=st.integers(1, 3),
    policy=st.sampled_from(serving.POLICIES),
    max_batch=st.integers(1, 8),
    max_wait=st.sampled_from([0.0, 0.1, 1.0]),
    distribution=st.sampled_from(serving.DISTRIBUTIONS),
    seed=st.integers(0, 1000),
)
def test_littles_law_and_utilization_hold_on_every_run(
    rho, workers, servers, policy, max_batch, max_wait, distribution, seed
):
    rate = rho * workers * servers
    run = serving.simulate(rate, 1.0, workers, servers=servers, policy=policy,
                           max_batch=max_batch, max_wait_s=max_wait, distribution=distribution,
                           requests=2000, seed=seed, warmup=0.0)  # fmt: skip
    # Little: the time-average number present (a sweep over events) is throughput x latency
    assert run.mean_in_system == pytest.approx(run.throughput * run.mean_latency_s, rel=1e-9)
    # busy time is what the requests brought: n·E[S] on average, so utilization ≈ λE[S]/c
    assert 0 < run.utilization <= 1 + 1e-12
    assert np.all(run.starts >= run.arrivals) and np.all(run.completions > run.starts)
    assert sum(run.batch_sizes) == 2000 and max(run.batch_sizes) <= max_batch


def test_utilization_is_lambda_times_service_over_servers():
    run = replicated(2.4, 1.0, 3, requests=20_000, seed=2)
    low, high = run.interval("utilization")
    assert low <= serving.utilization(2.4, 1.0, 3) <= high


def test_one_worker_without_batching_is_lindleys_recursion():
    run = serving.simulate(0.9, 1.0, 1, distribution="deterministic", requests=5000, seed=8,
                           warmup=0.0)  # fmt: skip
    arrivals = run.arrivals
    wait = np.zeros(len(arrivals))
    for k in range(1, len(arrivals)):
        wait[k] = max(0.0, wait[k - 1] + 1.0 - (arrivals[k] - arrivals[k - 1]))
    assert np.allclose(run.waits, wait, atol=1e-9)


def test_the_same_seed_gives_the_same_run_and_another_seed_does_not():
    one = serving.simulate(0.7, 1.0, 2, requests=3000, seed=4, max_batch=4, max_wait_s=0.2)
    two = serving.simulate(0.7, 1.0, 2, requests=3000, seed=4, max_batch=4, max_wait_s=0.2)
    other = serving.simulate(0.7, 1.0, 2, requests=3000, seed=5, max_batch=4, max_wait_s=0.2)
    assert np.array_equal(one.completions, two.completions)
    assert not np.array_equal(one.completions, other.completions)


def test_batching_that_shares_a_fixed_cost_raises_capacity():
    cost = serving.linear_batch_time(0.008, 0.002)  # 10 ms alone, 24 ms for 8
    # 120 requests/s: alone the worker would need 1.2 s per second; batched it keeps up
    with pytest.warns(serving.OverloadWarning, match="1.20 times"):  # so it says so
        alone = serving.simulate(120, 0.010, 1, batch_time=cost, requests=5000, seed=1)
    batched = serving.simulate(120, 0.010, 1, batch_time=cost, max_batch=8, max_wait_s=0.005,
                               requests=5000, seed=1)  # fmt: skip
    assert alone.utilization > 0.99 and alone.p99_latency_s > 5  # the backlog only grows
    assert batched.mean_batch > 1.5 and batched.utilization < 0.8 and batched.p99_latency_s < 0.2


def test_smarter_balancers_cut_the_tail():
    p99 = {
        policy: serving.simulate(0.9 * 8, 1.0, 1, servers=8, policy=policy, requests=20_000,
                                 seed=6).p99_latency_s
        for policy in serving.POLICIES
    }  # fmt: skip
    assert p99["power_of_two"] < 0.6 * p99["random"]
    assert p99["least_loaded"] <= p99["power_of_two"]


def test_a_spike_multiplies_the_rate_inside_its_window():
    run = serving.simulate(10, 0.01, 4, arrivals="spike", spike=(5.0, 100.0, 20.0),
                           requests=5000, seed=0)  # fmt: skip
    inside = np.sum((run.arrivals >= 100) & (run.arrivals < 120))
    before = np.sum(run.arrivals < 100)
    assert before == pytest.approx(1000, rel=0.1) and inside == pytest.approx(1000, rel=0.1)


def test_a_trace_is_replayed_as_given():
    times = [0.0, 0.1, 0.1, 0.5, 2.0]
    run = serving.simulate(1.0, 0.2, 1, distribution="deterministic", arrivals=times, warmup=0.0)
    assert list(run.arrivals) == times
    assert list(run.completions) == pytest.approx([0.2, 0.4, 0.6, 0.8, 2.2])


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"arrival_rate": math.nan}, ValueError, "`arrival_rate`"),
        ({"workers": 0}, ValueError, "`workers`"),
        ({"workers": 2.5}, ValueError, "`workers` must be an integer"),
        ({"distribution": "normal"}, ValueError, "`distribution`"),
        ({"policy": "fastest"}, ValueError, "`policy`"),
        ({"warmup": 0.9}, ValueError, "`warmup`"),
        ({"batch_time": 3.0}, TypeError, "`batch_time`"),
        ({"arrivals": [2.0, 1.0]}, ValueError, "sorted"),
        ({"arrivals": "uniform"}, ValueError, "`arrivals`"),
    ],
)
def test_bad_input_is_a_clear_error(kwargs, error, message):
    base = {"arrival_rate": 0.5, "mean_service_s": 1.0, "workers": 1, "requests": 100}
    with pytest.raises(error, match=message):
        serving.simulate(**{**base, **kwargs})


def test_theory_rejects_an_unstable_queue():
    with pytest.raises(ValueError, match="utilization below 1"):
        serving.mmc_wait(2.0, 1.0, 2)
    assert serving.erlang_c(1, 0.7) == pytest.approx(0.7)  # M/M/1: P(wait) = ρ


def test_a_roofline_batch_cost_makes_a_memory_bound_model_batch_for_free():
    from perfmodel import ops
    from perfmodel.roofline import estimate

    cost = serving.roofline_batch_time(lambda b: ops.matmul(b, 4096, 4096, dtype="bf16"),
                                       "H100 SXM")  # fmt: skip
    one = estimate(ops.matmul(1, 4096, 4096, dtype="bf16"), "H100 SXM").time_s
    assert cost(1) == one and cost(8) < 1.01 * one  # the weights dominate the bytes
    rate = 4 / one  # four times what one request at a time can serve
    batched = serving.simulate(rate, one, 1, batch_time=cost, max_batch=8, requests=5000, seed=0)
    with pytest.warns(serving.OverloadWarning, match="4.00 times"):
        alone = serving.simulate(rate, one, 1, batch_time=cost, requests=5000, seed=0)
    assert batched.mean_batch > 2 and batched.p99_latency_s < 50 * one  # it keeps up
    assert alone.p99_latency_s > 100 * batched.p99_latency_s  # four times overloaded alone
    with pytest.raises(TypeError, match="`cost`"):
        serving.roofline_batch_time(3.0, "H100 SXM")


def test_an_unbounded_batch_size_costs_no_memory_for_batches_that_cannot_happen():
    from perfmodel.serving import simulate

    with pytest.warns(serving.OverloadWarning):  # 100/s at 10 ms each: utilization 1
        run = simulate(100.0, 0.01, 1, max_batch=10**12, max_wait_s=0.05, requests=10, seed=0)
    assert 1 <= max(run.batch_sizes) <= 10 and sum(run.batch_sizes) == 10
