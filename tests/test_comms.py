"""The alpha-beta collectives against their closed forms, and the fit against known links."""

from __future__ import annotations

import math
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel import comms, hardware

SIZES = st.floats(0, 1e11, allow_nan=False)
RANKS = st.integers(1, 4096)
BANDWIDTHS = st.floats(1e6, 1e13, allow_nan=False)
LATENCIES = st.floats(0, 1e-3, allow_nan=False)


def toy(bandwidth: float = 1e9, latency: float = 0.0) -> SimpleNamespace:
    """Any object with the two attributes is a link."""
    return SimpleNamespace(bandwidth=bandwidth, latency=latency, name="toy")


@given(n=SIZES, p=RANKS, bandwidth=BANDWIDTHS, latency=LATENCIES)
def test_ring_allreduce_is_the_textbook_formula(n, p, bandwidth, latency):
    link = toy(bandwidth, latency)
    expected = 2 * (p - 1) / p * n / bandwidth + 2 * (p - 1) * latency
    assert comms.allreduce_time(n, p, link) == pytest.approx(expected, rel=1e-12, abs=1e-300)


@given(n=SIZES, p=RANKS, bandwidth=BANDWIDTHS, latency=LATENCIES)
def test_a_ring_allreduce_is_a_reduce_scatter_then_an_allgather(n, p, bandwidth, latency):
    link = toy(bandwidth, latency)
    halves = comms.reduce_scatter_time(n, p, link) + comms.allgather_time(n, p, link)
    assert comms.allreduce_time(n, p, link) == pytest.approx(halves, rel=1e-12, abs=1e-300)


@given(p=st.integers(2, 4096), bandwidth=BANDWIDTHS)
def test_bus_bandwidth_is_algorithm_bandwidth_times_2_p_minus_1_over_p(p, bandwidth):
    # With no latency a ring all-reduce runs each link at exactly its bandwidth: busbw = B.
    seconds = comms.allreduce_time(1e9, p, toy(bandwidth))
    algbw = comms.algorithm_bandwidth(1e9, seconds)
    assert comms.bus_bandwidth(algbw, p) == pytest.approx(algbw * 2 * (p - 1) / p, rel=1e-12)
    assert comms.bus_bandwidth(algbw, p) == pytest.approx(bandwidth, rel=1e-12)
    for collective in ("allgather", "reduce_scatter"):
        t = comms.collective_time(collective, 1e9, p, toy(bandwidth))
        busbw = comms.bus_bandwidth(comms.algorithm_bandwidth(1e9, t), p, collective)
        assert busbw == pytest.approx(bandwidth, rel=1e-12)


def test_tree_allreduce_pays_few_latencies_and_many_bytes():
    link = toy(1e9, 1e-5)
    p = 64
    assert comms.allreduce_time(0, p, link, algorithm="tree") == pytest.approx(12 * 1e-5)
    assert comms.allreduce_time(0, p, link) == pytest.approx(126 * 1e-5)
    # small messages prefer the tree, large ones the ring; the crossover is where they meet
    assert comms.allreduce_time(1e3, p, link, algorithm="tree") < comms.allreduce_time(1e3, p, link)
    assert comms.allreduce_time(1e9, p, link, algorithm="tree") > comms.allreduce_time(1e9, p, link)


@given(n=SIZES, bandwidth=BANDWIDTHS, latency=LATENCIES)
def test_one_rank_communicates_nothing(n, bandwidth, latency):
    for collective in comms.COLLECTIVES:
        for algorithm in comms.ALGORITHMS[collective]:
            t = comms.collective_time(collective, n, 1, toy(bandwidth, latency),
                                      algorithm=algorithm)  # fmt: skip
            assert t == 0


def test_broadcast_scatter_allgather_beats_the_tree_for_large_messages():
    link = toy(1e9, 1e-6)
    assert comms.broadcast_time(1e9, 16, link, algorithm="scatter_allgather") == pytest.approx(
        (4 + 15) * 1e-6 + 2 * 15 / 16
    )
    assert comms.broadcast_time(1e9, 16, link) == pytest.approx(4 * (1e-6 + 1))


def test_a_single_parameter_server_grows_with_the_workers_and_a_ring_does_not():
    link = toy(1e9)
    server = [comms.parameter_server_time(1e9, w, link) for w in (2, 4, 8, 16)]
    ring = [comms.allreduce_time(1e9, w, link) for w in (2, 4, 8, 16)]
    assert server == pytest.approx([4.0, 8.0, 16.0, 32.0])
    assert all(t < 2.0 for t in ring)
    # sharded over as many servers as workers, the push and the pull each take n/B
    assert comms.parameter_server_time(1e9, 16, link, servers=16) == pytest.approx(2.0)


@given(n=SIZES, g=st.integers(1, 16), nodes=st.integers(1, 256))
@settings(max_examples=50, deadline=None)
def test_hierarchical_allreduce_reduces_to_flat_rings_at_the_edges(n, g, nodes):
    nvlink, ib = toy(450e9, 1e-6), toy(50e9, 5e-6)
    tiered = comms.hierarchical_allreduce_time(n, g, nodes, nvlink, ib)
    if nodes == 1:
        assert tiered == pytest.approx(comms.allreduce_time(n, g, nvlink), rel=1e-12, abs=1e-300)
    if g == 1:
        assert tiered == pytest.approx(comms.allreduce_time(n, nodes, ib), rel=1e-12, abs=1e-300)
    # each port carries 1/g of the buffer: with the faster link inside the node, never slower
    # than a flat ring that treats every hop as a network hop (its extra bytes and latencies
    # on the network outweigh the NVLink phases; the algebra is in the docstring's terms)
    flat = comms.allreduce_time(n, g * nodes, ib)
    assert tiered <= flat * (1 + 1e-12) + 1e-300


def test_nvlink_900_is_both_directions_and_busbw_is_measured_against_one():
    nvlink4 = hardware.get_link("NVLink 4")
    assert nvlink4.bandwidth * 2 == 900e9
    seconds = comms.allreduce_time(8 * 2**30, 8, nvlink4, ceiling="nameplate")
    algbw = comms.algorithm_bandwidth(8 * 2**30, seconds)
    assert 250e9 < algbw < 260e9  # what nccl-tests would print as algbw at the line rate
    assert comms.bus_bandwidth(algbw, 8) == pytest.approx(450e9, rel=1e-3)  # less 14 latencies
    # at the measured ceiling the same call gives the busbw NCCL's ring reaches
    seconds = comms.allreduce_time(8 * 2**30, 8, nvlink4)
    busbw = comms.bus_bandwidth(comms.algorithm_bandwidth(8 * 2**30, seconds), 8)
    assert busbw == pytest.approx(nvlink4.measured_busbw["ring"], rel=1e-3)


def test_an_axis_counts_hops_both_ways_round_a_ring():
    link = toy(1e9, 1e-6)
    for p in range(1, 17):
        ring, line = comms.Axis(p, link), comms.Axis(p, link, wraparound=False)
        assert ring.hops("allgather") == math.ceil((p - 1) / 2)
        assert line.hops("allgather") == p - 1
        assert ring.hops("allreduce") == 2 * ring.hops("allgather")
    # with wraparound an all-gather costs (p-1)/p · n/(2B), about n/(2B) whatever p is: the
    # scaling book's bytes / W_ici with W_ici = 2B; a line or a switch, twice that
    for p in (4, 5, 16, 64, 256):
        t = comms.Axis(p, toy(1e9)).time("allgather", 1e9)
        assert t == pytest.approx(0.5 * (p - 1) / p, rel=1e-12)
        line = comms.Axis(p, toy(1e9), wraparound=False).time("allgather", 1e9)
        assert line == pytest.approx(2 * t, rel=1e-12)
    # two devices: one hop, the same as the ring formula
    assert comms.Axis(2, link).time("allgather", 1e6) == pytest.approx(
        comms.allgather_time(1e6, 2, link)
    )


@given(
    bandwidth=st.floats(1e8, 1e12),
    latency=st.floats(1e-7, 1e-4),
    p=st.integers(2, 64),
    collective=st.sampled_from(comms.COLLECTIVES),
)
@settings(max_examples=40, deadline=None)  # the first call imports scipy
def test_the_fit_recovers_a_known_link_exactly(bandwidth, latency, p, collective):
    truth = toy(bandwidth, latency)
    sizes = [8.0 * 4**k for k in range(13)]
    times = [comms.collective_time(collective, n, p, truth) for n in sizes]
    fit = comms.fit_alpha_beta(sizes, times, collective=collective, ranks=p)
    assert fit.bandwidth == pytest.approx(bandwidth, rel=1e-6)
    assert fit.latency == pytest.approx(latency, rel=1e-6)
    assert fit.rms_relative_error < 1e-9


def test_the_fit_with_noise_misses_by_about_the_noise():
    rng = np.random.default_rng(0)
    truth = toy(12.5e9, 5e-6)
    sizes = [8.0 * 2**k for k in range(25)] * 3
    times = [comms.allreduce_time(n, 4, truth) * (1 + 0.05 * rng.standard_normal())
             for n in sizes]  # fmt: skip
    fit = comms.fit_alpha_beta(sizes, times, ranks=4)
    assert fit.bandwidth == pytest.approx(12.5e9, rel=0.05)
    assert fit.latency == pytest.approx(5e-6, rel=0.05)
    assert 0.03 < fit.rms_relative_error < 0.07


def test_the_fit_turns_into_a_catalogue_link_that_loads_back(tmp_path):
    truth = toy(3e9, 4e-6)
    sizes = [8.0 * 4**k for k in range(10)]
    fit = comms.fit_alpha_beta(sizes, [comms.allreduce_time(n, 2, truth) for n in sizes], ranks=2)
    link = fit.link("my lab", source="measured by me")
    path = hardware.save(link, tmp_path / "net.toml")
    loaded = hardware.load(path).get_link("my lab")
    assert loaded == link and loaded.bandwidth == pytest.approx(3e9)
    expected = comms.allreduce_time(1e9, 8, truth)
    assert comms.allreduce_time(1e9, 8, loaded) == pytest.approx(expected)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: comms.allreduce_time(math.nan, 2, "NVLink 4"), ValueError, "`nbytes`"),
        (lambda: comms.allreduce_time(1e6, 0, "NVLink 4"), ValueError, "`p`"),
        (lambda: comms.allreduce_time(1e6, 2.5, "NVLink 4"), ValueError, "`p`"),
        (
            lambda: comms.allreduce_time(1e6, 2, "NVLink 4", algorithm="butterfly"),
            ValueError,
            "`algorithm`",
        ),
        (lambda: comms.allreduce_time(1e6, 2, "NVLink 9"), ValueError, "`link`"),
        (lambda: comms.allreduce_time(1e6, 2, 3.0), TypeError, "`link`"),
        (lambda: comms.allreduce_time(1e6, 2, toy(math.nan)), ValueError, "`link.bandwidth`"),
        (lambda: comms.allreduce_time(1e6, 2, toy(1e9, -1.0)), ValueError, "`link.latency`"),
        (
            lambda: comms.hierarchical_allreduce_time(1e6, 8, 2, "NVLink 4", None),
            TypeError,
            "`inter`",
        ),
        (lambda: comms.bus_bandwidth(1e9, 8, "gather"), ValueError, "`collective`"),
        (lambda: comms.fit_alpha_beta([8, 8], [1e-6, 1e-6], ranks=2), ValueError, "`sizes`"),
        (lambda: comms.fit_alpha_beta([8, 16], [1e-6], ranks=2), ValueError, "same length"),
        (lambda: comms.fit_alpha_beta([8, 16], [1e-6, 1e-6], ranks=1), ValueError, "`ranks`"),
        (lambda: comms.fit_alpha_beta([8, 1e6], [1e-3, 1e-6], ranks=2), ValueError, "grow"),
        (
            lambda: comms.fit_alpha_beta([8, 16], [1e-6, math.nan], ranks=2),
            ValueError,
            "`times[1]`",
        ),
        (lambda: comms.Axis(0, "NVLink 4"), ValueError, "`size`"),
        (lambda: comms.Axis(4, "NVLink 4", wraparound="yes"), TypeError, "`wraparound`"),
    ],
)
def test_bad_input_is_a_clear_error(call, error, message):
    with pytest.raises(error, match=message.replace("[", r"\[").replace("]", r"\]")):
        call()


def test_numpy_numbers_are_numbers():
    t = comms.allreduce_time(np.float64(1e6), np.int64(4), "InfiniBand NDR")
    assert t == pytest.approx(comms.allreduce_time(1e6, 4, "InfiniBand NDR"))
