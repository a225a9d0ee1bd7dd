"""The fabric a box gives NCCL, fitted on the calibration sweeps and checked on the held-out."""

from __future__ import annotations

import math
import statistics

import pytest

from perfmodel import comms


def test_the_shipped_rates_are_what_the_calibration_half_gives():
    refit = comms.fit_paths()
    assert set(refit) == set(comms.PATH_RATES)
    for key, value in refit.items():
        assert math.isclose(value, comms.PATH_RATES[key], rel_tol=0.01), (key, value)
    # a held-out sweep moves nothing: refitting without any of them gives the same rates
    calibration = tuple(s for s in comms.published_sweeps() if s.split == "calibration")
    assert comms.fit_paths(calibration) == refit


def test_both_halves_are_reported_and_hold_where_they_held():
    rows = comms.compare_sweeps()
    halves = {s: [r for r in rows if r.sweep.split == s] for s in ("calibration", "held-out")}
    assert all(len(found) >= 10 for found in halves.values())
    calibration = halves["calibration"]
    assert statistics.median(r.large_error for r in calibration) <= 0.15
    # guards against getting worse, not claims of the goal (every held-out sweep within 15%
    # at 1 MiB and above, 1.5x at 64 KiB and below): 6 of 11 reach the first, 7 of the 10
    # that time small messages the second; a sweep not priced counts as a miss
    held = halves["held-out"]
    assert sum(r.meets_large_goal for r in held) >= 6
    assert sum(r.meets_small_goal for r in held) >= 7
    for row in rows:  # the goals as issue 47 states them
        assert row.meets_large_goal == (row.large_error <= 0.15)
        assert row.meets_small_goal == (1 / 1.5 <= row.small_ratio <= 1.5)
    unpriced = [r for r in rows if r.unpriced]
    assert all(r.large_error == math.inf and r.fabric is None for r in unpriced)
    assert {r.sweep.id for r in unpriced} == {  # the sources that leave the NICs' speed unsaid
        "aiscripts-mi300xx16-2node-allreduce", "rocm5571-r9700x2-2node-dmabuf-allreduce",
        "rocm5571-r9700x2-2node-gdrloc-allreduce"}  # fmt: skip
    for row in (r for r in rows if not r.unpriced):  # the plateau is the largest size's time
        predicted, measured = row.plateaus
        assert predicted > 0 and measured == row.sweep.sweep.bus_bandwidths[-1]
        assert row.half_sizes[0] <= row.sweep.sweep.sizes[-1]


def test_a_box_is_priced_from_how_its_gpus_are_joined():
    nvlink = comms.fabric_for(8)
    pcie = comms.fabric_for(8, joined="pcie", link="PCIe 4.0 x16", arch="ampere")
    host = comms.fabric_for(8, joined="host", link="PCIe 4.0 x16", arch="ampere")
    assert nvlink.nvls_channels and not pcie.nvls_channels and pcie.link == "pci"
    assert nvlink.channel_bw * nvlink.channels > pcie.channel_bw * pcie.channels
    assert pcie.channel_bw > host.channel_bw  # through host memory is slower than P2P
    # a PCIe 3.0 card is priced at half a PCIe 4.0 card's rate, NVLink 3 at 2/3 of NVLink 4
    old = comms.fabric_for(8, joined="pcie", link="PCIe 3.0 x16", arch="ampere")
    assert math.isclose(old.channel_bw / pcie.channel_bw, 0.5, rel_tol=0.01)
    a100 = comms.fabric_for(8, link="NVLink 3", arch="ampere")
    assert math.isclose(a100.channel_bw / nvlink.channel_bw, 2 / 3, rel_tol=0.01)
    assert not a100.nvls_channels  # NVLink SHARP came with Hopper
    # across nodes the NICs set the rate: twice the NICs, twice the channel bandwidth
    eight = comms.fabric_for(16, nodes=2, nic="InfiniBand NDR", nics_per_node=8)
    four = comms.fabric_for(16, nodes=2, nic="InfiniBand NDR", nics_per_node=4)
    assert math.isclose(eight.channel_bw, 2 * four.channel_bw) and eight.channels == 8
    # through host memory, GPUs behind one switch share its uplink
    assert comms.fabric_for(2, joined="host", link="PCIe 3.0 x16", switch_gpus=2).shared_uplink == 2
    assert comms.fabric_for(2, joined="pcie", link="PCIe 3.0 x16", switch_gpus=2).shared_uplink == 1
    # one thread driving eight GPUs pays eight launches a call
    one = comms.fabric_for(8, gpus_per_thread=1).call_overhead
    assert math.isclose(comms.fabric_for(8, gpus_per_thread=8).call_overhead, 8 * one)
    # NCCL_ALGO=RING leaves NVLS off
    assert not comms.fabric_for(8, algorithms=("ring",)).nvls_channels


def test_a_box_described_wrong_is_refused_by_name():
    with pytest.raises(ValueError, match="joined"):
        comms.fabric_for(8, joined="nvswitch")
    with pytest.raises(ValueError, match="nic"):
        comms.fabric_for(4, nodes=2, joined="host", link="PCIe 4.0 x16")
    with pytest.raises(ValueError, match="`link` .*NVLink 9"):
        comms.fabric_for(8, link="NVLink 9")
    with pytest.raises(ValueError, match="gpus_per_thread"):
        comms.fabric_for(8, gpus_per_thread=0)
    with pytest.raises(ValueError, match="arch"):
        comms.fabric_for(8, arch="kepler")
    for bad, match in (({"gpus": "8"}, "gpus"), ({"gpus": 1}, "gpus"), ({"gpus": 9, "nodes": 2},
                       "split evenly"), ({"socket": "no", "nodes": 2, "nic": "400 GbE"}, "socket"),
                       ({"socket": True}, "socket"), ({"nic": "400 GbE"}, "nodes` is 1"),
                       ({"switch_gpus": 9}, "switch_gpus"), ({"gpus_per_thread": 64}, "gpus_per"),
                       ({"algorithms": None}, "algorithms"), ({"gdr": 1}, "gdr"),
                       ({"constants": {"nvlnk": 0.1}}, "nvlnk"),
                       ({"constants": {"nvlink": "0.1"}}, "constants\\['nvlink'\\]"),
                       ({"constants": {"nvlink": -0.1}}, "constants\\['nvlink'\\]"),
                       ({"constants": [1]}, "constants")):  # fmt: skip
        arguments = {"gpus": 8, **bad}
        with pytest.raises((TypeError, ValueError), match=match):
            comms.fabric_for(**arguments)


def test_across_nodes_a_channel_never_outruns_the_gpus_own_path():
    # a kind no calibration sweep crosses nodes on gets the NICs' line rate, under the cap of
    # the GPU's own PCIe path: peer to peer with GPUDirect RDMA, staged in host memory without
    pcie = dict(nodes=2, joined="pcie", link="PCIe 4.0 x16", nic="InfiniBand HDR")
    rdma, staged = comms.fabric_for(2, **pcie), comms.fabric_for(2, gdr=False, **pcie)
    p2p = comms.fabric_for(2, joined="pcie", link="PCIe 4.0 x16")
    host = comms.fabric_for(2, joined="host", link="PCIe 4.0 x16")
    assert math.isclose(rdma.channels * rdma.channel_bw, p2p.channels * p2p.channel_bw)
    assert math.isclose(staged.channels * staged.channel_bw, host.channels * host.channel_bw)
    fast_nic = comms.fabric_for(2, nics_per_node=1000, **{**pcie, "nic": "InfiniBand NDR"})
    assert fast_nic.channels * fast_nic.channel_bw <= p2p.channels * p2p.channel_bw * 1.0001
    # so a PCIe box across nodes is never faster than an NVLink one on the same NICs
    for collective in ("allreduce", "allgather", "broadcast", "alltoall"):
        weak = comms.fabric_for(
            32, nodes=4, joined="host", link="PCIe 3.0 x16", nic="InfiniBand NDR"
        )
        strong = comms.fabric_for(32, nodes=4, nic="InfiniBand NDR")
        assert (comms.nccl_choice(collective, 2**30, weak).time_s
                >= comms.nccl_choice(collective, 2**30, strong).time_s), collective  # fmt: skip


def test_nvls_only_where_nccl_runs_it_and_the_generation_follows_the_link():
    assert comms.fabric_for(8).arch == "hopper" and comms.fabric_for(8).nvls_channels
    assert comms.fabric_for(8, link="NVLink 3").arch == "ampere"
    assert not comms.fabric_for(8, link="NVLink 3").nvls_channels
    assert not comms.fabric_for(8, link="Infinity Fabric (MI300X)").nvls_channels
    assert not comms.fabric_for(8, nodes=8, nic="InfiniBand NDR").nvls_channels  # one a node
    assert comms.fabric_for(16, nodes=2, nic="InfiniBand NDR").nvls_channels


def test_a_fit_needs_priced_calibration_sweeps_and_says_so():
    sweeps = comms.published_sweeps()
    with pytest.raises(ValueError, match="no priced calibration sweep among the 0"):
        comms.fit_paths(())
    held = tuple(s for s in sweeps if s.split == "held-out")
    with pytest.raises(ValueError, match=f"among the {len(held)} given"):
        comms.fit_paths(held)
    with pytest.raises(TypeError, match="PublishedSweep"):
        comms.fit_paths((1, 2))
    # a comparison at other constants says calibrated only where those constants have a rate
    one = next(s for s in sweeps if s.split == "calibration" and s.path == "host")
    rows = comms.compare_sweeps(comms.fit_paths((one,)))
    assert {r.sweep.path for r in rows if r.calibrated and r.sweep.nodes == 1} == {"host"}


def test_the_readme_quotes_both_halves_as_they_are():
    from pathlib import Path

    readme = " ".join((Path(__file__).parents[1] / "README.md").read_text("utf-8").split())
    rows = comms.compare_sweeps()
    held = [r for r in rows if r.sweep.split == "held-out"]
    timed = [r for r in held if not math.isnan(r.small_ratio)]
    within = sum(r.meets_large_goal for r in held)
    close = sum(r.meets_small_goal for r in timed)
    assert f"fitted on the calibration half of {len(rows)} published sweeps" in readme
    assert f"held-out half {within} of {len(held)} land within 15%" in readme
    assert f"and {close} of the {len(timed)} that time small messages within 1.5x" in readme
    mi355 = next(r for r in held if "mi355" in r.sweep.id)
    assert f"two MI355X nodes ({mi355.small_ratio:.2f}x)" in readme
