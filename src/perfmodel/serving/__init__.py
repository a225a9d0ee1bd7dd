"""Serving many requests: a simulator of an inference service, and the theory it must match.

This package's top level is its public face, what lecture 11 and a learner need:

* :func:`simulate`: arrivals (Poisson, a spike, a trace), servers behind a load balancer
  (round robin, random, least loaded, power of two choices), a pool of workers per server,
  dynamic batching (``max_batch``, ``max_wait_s``), any batch cost (``linear_batch_time``,
  or ``roofline_batch_time`` on a catalogue device); returns a :class:`SimulationResult`
  (latency percentiles, throughput, utilization, Little's L) or, with ``replications``, a
  :class:`Replicated` with confidence intervals;
* queueing theory: :func:`mmc_wait` (Erlang C), :func:`erlang_c`, :func:`mg1_wait`
  (Pollaczek-Khinchine), :func:`md1_wait`, :func:`utilization`;
* :mod:`perfmodel.serving.llm`: prefill and decode on the roofline, time to first token and
  per output token, the KV cache and how many sequences fit, the decode frontier, static vs
  continuous batching;
* :mod:`perfmodel.serving.sizing`: a deployment sized from bare numbers (weight bytes, KV
  bytes a token, a slice of chips): the largest batch and a decode step's time;
* :func:`inference_run`: what a deployed engine reaches, at achieved ceilings: time to first
  token, time per output token and throughput, with tensor parallelism, quantized weights and
  the engine's own cost per step; :func:`continuous_run`, the same with continuous batching
  and a paged KV cache.

>>> from perfmodel import serving
>>> run = serving.simulate(0.8, 1.0, 1, requests=20_000, seed=3, replications=5)
>>> low, high = run.interval("mean_wait_s")
>>> bool(low < serving.mmc_wait(0.8, 1.0, 1) < high)       # M/M/1 at ρ = 0.8: 4 s
True
"""

from __future__ import annotations

from perfmodel.serving import llm, sizing
from perfmodel.serving.inference import ContinuousRun, InferenceRun, continuous_run, inference_run
from perfmodel.serving.server import (
    MLP,
    LoadTest,
    Server,
    load_test,
    predict,
    tail_report,
    time_batches,
)
from perfmodel.serving.simulator import (
    ARRIVALS,
    DISTRIBUTIONS,
    POLICIES,
    OverloadWarning,
    Replicated,
    SimulationResult,
    linear_batch_time,
    roofline_batch_time,
    simulate,
)
from perfmodel.serving.theory import erlang_c, md1_wait, mg1_wait, mmc_wait, utilization

__all__ = [
    "ARRIVALS",
    "MLP",
    "LoadTest",
    "Server",
    "load_test",
    "predict",
    "tail_report",
    "time_batches",
    "DISTRIBUTIONS",
    "ContinuousRun",
    "InferenceRun",
    "POLICIES",
    "OverloadWarning",
    "Replicated",
    "SimulationResult",
    "erlang_c",
    "continuous_run",
    "inference_run",
    "linear_batch_time",
    "llm",
    "sizing",
    "md1_wait",
    "mg1_wait",
    "mmc_wait",
    "roofline_batch_time",
    "simulate",
    "utilization",
]
