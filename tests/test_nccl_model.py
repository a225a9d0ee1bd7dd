"""NCCL's cost model as its tuning source writes it (NCCL 2.30.7, src/graph/tuning.cc)."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel.comms import Fabric, nccl_choice

#: One DGX H100 node and two, as NCCL's topology search finds them (12 ring channels of 30 GB/s
#: inside a node; 8 of 48 GB/s, held to the PCIe link to each NIC, across two).
ONE = Fabric(ranks=8, channels=12, channel_bw=30e9, nvls_channels=8, nvls_bw=40e9,
             nvls_inter_bw=60e9)  # fmt: skip
TWO = Fabric(ranks=16, nodes=2, channels=8, channel_bw=48e9, tree_bw=45e9, nvls_channels=8,
             nvls_bw=40e9, nvls_inter_bw=48e9)  # fmt: skip

# Each option's time, µs, worked by hand from tuning.cc's constants (baseLat, hwLat, llMaxBws,
# the per-channel caps, treeCorrectionFactor) by a reader who did not write this module.
BY_HAND = {
    (ONE, 8 * 2**10): {("tree", "LL"): 15.5, ("tree", "LL128"): 31.6, ("tree", "Simple"): 64.5,
                       ("ring", "LL"): 15.1, ("ring", "LL128"): 40.6, ("ring", "Simple"): 56.0,
                       ("nvls", "Simple"): 25.0},
    (ONE, 2**20): {("tree", "LL"): 63.3, ("tree", "LL128"): 45.1, ("tree", "Simple"): 77.1,
                   ("ring", "LL"): 28.0, ("ring", "LL128"): 46.1, ("ring", "Simple"): 61.1,
                   ("nvls", "Simple"): 28.9},
    (ONE, 2**30): {("tree", "LL"): 24654, ("tree", "LL128"): 8368, ("tree", "Simple"): 6548,
                   ("ring", "LL"): 13342, ("ring", "LL128"): 5714, ("ring", "Simple"): 5276,
                   ("nvls", "Simple"): 3973},
    (TWO, 8 * 2**10): {("tree", "LL"): 25.8, ("tree", "LL128"): 48.6, ("tree", "Simple"): 92.5,
                       ("ring", "LL"): 40.4, ("ring", "LL128"): 75.3, ("ring", "Simple"): 131.6,
                       ("nvls_tree", "Simple"): 66.8},
    (TWO, 2**20): {("tree", "LL"): 132.7, ("tree", "LL128"): 60.4, ("tree", "Simple"): 105.1,
                   ("ring", "LL"): 90.4, ("ring", "LL128"): 81.9, ("ring", "Simple"): 189.4,
                   ("nvls_tree", "Simple"): 71.1},
    (TWO, 2**30): {("tree", "LL"): 55089, ("tree", "LL128"): 7363, ("tree", "Simple"): 6576,
                   ("ring", "LL"): 51662, ("ring", "LL128"): 6932, ("ring", "Simple"): 5427,
                   ("nvls_tree", "Simple"): 4428},
}  # fmt: skip


@pytest.mark.parametrize("case", list(BY_HAND), ids=lambda c: f"{c[0].nodes}node-{c[1]}B")
def test_every_option_is_what_the_tuning_source_gives(case):
    fabric, size = case
    pick = nccl_choice("allreduce", size, fabric)
    assert set(pick.options) == set(BY_HAND[case])
    for option, micros in BY_HAND[case].items():
        assert pick.options[option] * 1e6 == pytest.approx(micros, rel=2e-3, abs=0.06), option
    assert pick.time_s == min(pick.options.values())


def test_the_picks_and_where_they_change():
    picks = {n: nccl_choice("allreduce", n, ONE) for n in (8 * 2**10, 2**20, 2**30)}
    assert [(p.algorithm, p.protocol) for p in picks.values()] == [
        ("ring", "LL"), ("ring", "LL"), ("nvls", "Simple")]  # fmt: skip
    two = [nccl_choice("allreduce", n, TWO) for n in (8 * 2**10, 2**20, 2**30)]
    assert [(p.algorithm, p.protocol) for p in two] == [
        ("tree", "LL"), ("tree", "LL128"), ("nvls_tree", "Simple")]  # fmt: skip
    # without NVLS on one node: LL, then LL128, then Simple, as sizes grow (about 3.4 and 35 MiB)
    rings = Fabric(ranks=8, channels=12, channel_bw=30e9, algorithms=("ring",))
    protocols = [nccl_choice("allreduce", 2**k, rings).protocol for k in range(10, 31)]
    assert protocols == sorted(protocols, key=("LL", "LL128", "Simple").index)
    switch = [2**k for k in range(10, 31)][protocols.index("LL128")]
    assert 2**21 <= switch <= 2**22
    assert (
        nccl_choice("allreduce", 2**30, Fabric(ranks=8, ll128=False, algorithms=("ring",))).protocol
        == "Simple"
    )


COLLECTIVES = ["allreduce", "allgather", "reduce_scatter", "broadcast"]


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**34), st.sampled_from(COLLECTIVES), st.sampled_from([ONE, TWO]))
def test_a_larger_call_never_takes_less_time(size, collective, fabric):
    small = nccl_choice(collective, size, fabric).time_s
    large = nccl_choice(collective, size * 2 + 64, fabric).time_s
    assert small <= large * (1 + 1e-9) and math.isfinite(large)
    assert all(t > 0 for t in nccl_choice(collective, size, fabric).options.values())


def test_bad_input_is_refused_by_name():
    with pytest.raises(ValueError, match="split evenly"):
        Fabric(ranks=12, nodes=5)
    with pytest.raises(ValueError, match="arch"):
        Fabric(ranks=8, arch="kepler")
    with pytest.raises(ValueError, match="algorithms"):
        Fabric(ranks=8, algorithms=("butterfly",))
    with pytest.raises(TypeError, match="algorithms"):
        Fabric(ranks=8, algorithms="ring")
    with pytest.raises(ValueError, match="collective"):
        nccl_choice("gather", 1024, ONE)
    with pytest.raises(ValueError, match="call_overhead"):
        Fabric(ranks=8, call_overhead=-1e-6)
    with pytest.raises(ValueError, match="nbytes"):
        nccl_choice("allreduce", -1, ONE)
    with pytest.raises(TypeError, match="fabric"):
        nccl_choice("allreduce", 1024, "NVLink 4")
    with pytest.raises(ValueError, match="no algorithm"):
        nccl_choice("allgather", 1024, Fabric(ranks=8, algorithms=("tree",)))
    assert Fabric(ranks=8.0, channels=12.0).ranks == 8


def test_what_a_hostile_review_found_stays_fixed():
    # one rank is not a collective; NVLS needs an NVSwitch and both its rates
    with pytest.raises(ValueError, match="ranks"):
        Fabric(ranks=1)
    with pytest.raises(ValueError, match="NVLS needs an NVSwitch"):
        Fabric(ranks=8, link="pci", nvls_channels=8, nvls_bw=40e9, nvls_inter_bw=60e9)
    with pytest.raises(ValueError, match="NVLS needs"):
        Fabric(ranks=8, nvls_channels=8, nvls_bw=40e9)
    # LL128 only where NCCL turns it on by default: GPUs on NVLink, not a PCIe box
    assert Fabric(ranks=8).ll128 and not Fabric(ranks=8, link="pci").ll128
    pcie = Fabric(ranks=8, link="pci", channels=2, channel_bw=12e9, arch="ampere")
    assert all(p != "LL128" for _, p in nccl_choice("allreduce", 4e6, pcie).options)
    # the ring's Simple multi-node latency factor is an all-reduce's only (tuning.cc 647-648)
    two = Fabric(ranks=16, nodes=2, channels=8, channel_bw=48e9)
    gather = nccl_choice("allgather", 16 * 2**20, two).options[("ring", "Simple")]
    steps, net = 15, 1  # 15 ring steps, one across the network
    by_hand = 8.4 + (steps - net) * 3.4 + net * 14.0 + 16 * 2**20 / (1000 * 8 * 48 * 16 / 15)
    assert gather * 1e6 == pytest.approx(by_hand, rel=1e-9)
    # three nodes or more: every algorithm at the network's rate
    four = Fabric(ranks=32, nodes=4, channels=8, channel_bw=48e9, inter_bw=12e9)
    tree = nccl_choice("allreduce", 2**30, four).options[("tree", "Simple")]
    assert tree > 2**30 / (8 * 12e9 * 0.92 * 0.5)


def test_a_reduce_is_a_broadcast_run_backwards_and_a_call_overhead_only_adds():
    # tuning.cc prices reduce and broadcast alike: rings only, nRanks steps, one hop of latency
    for size in (8, 2**20, 2**30):
        reduce, broadcast = nccl_choice("reduce", size, ONE), nccl_choice("broadcast", size, ONE)
        assert reduce.options == broadcast.options and set(reduce.options) <= {
            ("ring", p) for p in ("LL", "LL128", "Simple")
        }
    # the host's cost per call is added to every option, so the pick never moves
    slow = Fabric(ranks=8, channels=12, channel_bw=30e9, nvls_channels=8, nvls_bw=40e9,
                  nvls_inter_bw=60e9, call_overhead=20e-6)  # fmt: skip
    for size in (8, 2**16, 2**20, 2**30):
        fast, late = nccl_choice("allreduce", size, ONE), nccl_choice("allreduce", size, slow)
        assert (late.algorithm, late.protocol) == (fast.algorithm, fast.protocol)
        assert all(math.isclose(late.options[k], fast.options[k] + 20e-6) for k in fast.options)


def test_gpus_behind_one_switch_share_its_uplink_only_while_they_send_at_once():
    alone = Fabric(ranks=2, link="pci", channels=2, channel_bw=4e9)
    shared = Fabric(ranks=2, link="pci", channels=2, channel_bw=4e9, shared_uplink=2)
    size = 2**30
    # both GPUs of an all-reduce send at once: each gets half the uplink
    slow, fast = nccl_choice("allreduce", size, shared), nccl_choice("allreduce", size, alone)
    assert math.isclose(slow.time_s / fast.time_s, 2, rel_tol=0.01)
    # a two-GPU broadcast has one sender: nothing to share
    for collective in ("broadcast", "reduce"):
        assert (
            nccl_choice(collective, size, shared).options
            == nccl_choice(collective, size, alone).options
        )
    with pytest.raises(ValueError, match="shared_uplink"):
        Fabric(ranks=2, link="pci", shared_uplink=0)


def test_an_all_to_all_sends_each_peer_its_share_at_the_ring_rate_or_over_the_nics():
    p = ONE.ranks
    big = nccl_choice("alltoall", 2**30, ONE)
    assert (big.algorithm, big.protocol) == ("p2p", "Simple")
    ring_rate = ONE.channels * ONE.channel_bw  # what a GPU sends at in a node
    latency = (8.4 + 3.4) * 1e-6  # tuning.cc's ring Simple base and NVLink step
    assert math.isclose(big.time_s, latency + 2**30 * (p - 1) / p / ring_rate, rel_tol=1e-9)
    # 16 KiB or less to each peer goes as LL, at half the rate
    small = nccl_choice("alltoall", 8 * 2**14, ONE)
    assert (
        small.protocol == "LL" and nccl_choice("alltoall", 8 * 2**14 + 8, ONE).protocol == "Simple"
    )
    # across two nodes only the other node's half crosses, over the node's NICs shared by eight
    across = nccl_choice("alltoall", 2**30, TWO)
    nic_rate = TWO.channels * TWO.channel_bw / 8
    expected = (8.4 + 14.0) * 1e-6 + 2**30 * 8 / 16 / nic_rate
    assert math.isclose(across.time_s, expected, rel_tol=1e-9)
