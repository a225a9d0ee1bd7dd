"""What lecture 09 says about NCCL's published runs and the torus, against its stored output
(issue 27). Each claim in the prose is checked on the table the lecture printed."""

from __future__ import annotations

import re

from test_statements_09 import printed, prose


def table():
    """The published table: (row number, nodes, published, predicted, ratio, nameplate, set)."""
    rows = []
    pattern = re.compile(
        r"^\s*(\d+) (.{40}) +(\d+) +\w+ +\w+ +(\d+) +(\d+) +([\d.]+) +(\d+)$", re.MULTILINE
    )
    for match in pattern.finditer(printed("print(f\"{'':3}{'system':40}")):
        number, system, nodes, pub, pred, ratio, name = match.groups()
        rows.append((int(number), int(nodes), float(pub), float(pred), float(ratio),
                     float(name), system.rstrip().endswith("*"), system))  # fmt: skip
    assert len(rows) == 14
    return rows


def test_in_a_node_the_measured_ceiling_is_within_three_percent_of_seven_other_runs():
    text = prose()
    held_out = [r for r in table() if r[1] == 1 and not r[6]]
    assert len(held_out) == 7 and "within 3% of the seven runs that did not set them" in text
    assert all(abs(r[4] - 1) <= 0.03 + 1e-9 for r in held_out)  # the printed ratio
    high = [r[5] / r[2] - 1 for r in table() if r[1] == 1]
    assert f"the nameplate is {min(high):.0%} to {max(high):.0%} high" in text


def test_across_infiniband_nodes_the_ring_is_within_four_percent_of_380():
    text = prose()
    infiniband = [r for r in table() if r[1] > 1 and r[2] == 380]  # NVIDIA's two statements
    assert len(infiniband) == 2 and "lands within 4% of the 380 GB/s" in text
    assert all(abs(r[4] - 1) <= 0.04 + 1e-9 for r in infiniband)
    roce = [r for r in table() if "RoCE" in r[7]]
    words = " and ".join(f"{r[3] / r[2] - 1:.0%}" for r in roce)
    assert f"the misses ({words} optimistic)" in text


def test_the_hierarchy_pipelined_and_end_to_end_are_what_the_text_says():
    text = prose()
    out = printed("8 H100s and 8 NDR NICs per node")
    piped = [int(x) for x in re.findall(r"hierarchy pipelined (\d+)", out)]
    summed = [int(x) for x in re.findall(r"end to end (\d+)", out)]
    assert len(piped) == len(summed) == 4
    assert f"predicts {min(piped)} to {max(piped)} GB/s" in text
    assert max(abs(p / 380 - 1) for p in piped) <= 0.09 and "within 9% of the 380" in text
    assert f"predict {min(summed)} to {max(summed)} GB/s" in text
    assert f"{min(summed) / 380:.0%} to {max(summed) / 380:.0%} of what anyone measures" in text
    assert summed == sorted(summed, reverse=True)  # "falling as nodes are added"


def test_gathering_over_two_axes_takes_the_fraction_the_text_says():
    out = printed('cube = distributed.Mesh({"X": 4, "Y": 4, "Z": 4}')
    one, both = (float(x) for x in re.search(
        r"over X alone ([\d.]+) ms; over X and Y at once ([\d.]+) ms", out).groups())  # fmt: skip
    assert abs(both / one - 0.625) < 0.005 and "0.625 of the time over one axis" in prose()


def test_tensor_parallel_width_is_what_the_text_says():
    out = printed("8-way tensor parallelism needs a width of")
    nvlink, infiniband = (int(x.replace(",", "")) for x in re.findall(r"width of +([\d,]+)", out))
    text = prose()
    assert f"about {round(nvlink, -2):,}" in text and nvlink > 4096  # "falls just short"
    assert f"about {round(infiniband, -2):,}" in text


def test_the_held_out_sweep_and_both_halves_are_what_the_text_says():
    import numpy as np

    from perfmodel import comms

    text = prose()
    out = printed("gpus_per_thread=sweep.gpus_per_thread")
    assert out.startswith("held-out: ")  # a sweep nothing was fitted to
    ratios = [float(x) for x in re.findall(r"\(([\d.]+)x\)", out)]
    assert len(ratios) == 6 and all(0.75 <= r <= 1.25 for r in ratios)
    assert f"{len(comms.published_sweeps())} published nccl-tests sweeps" in text
    launch = comms.PATH_RATES["launch_s"] * 1e6
    assert f"about {launch:.1f} µs apiece" in text
    box = comms.fabric_for(8, joined="host", link="PCIe 4.0 x16", arch="ampere", gpus_per_thread=8)
    sizes = np.geomspace(2**16, 2**22, 400)
    switch = next(n for n in sizes if comms.nccl_choice("allreduce", n, box).protocol == "Simple")
    assert f"Near {round(switch / 2**10 / 50) * 50} KiB" in text  # to the nearest 50 KiB
    plateau = box.channels * box.channel_bw / 1e9
    assert f"plateau, {plateau:.0f} GB/s of bus bandwidth" in text
    host, p2p = (2 * comms.PATH_RATES[k] for k in ("host", "pcie"))  # two channels' shares
    assert f"{host:.0%} of PCIe 4.0's 31.5 GB/s" in text and f"against {p2p:.0%} for cards" in text
    sweep = {s.id: s for s in comms.published_sweeps()}["chlcblog-rtx4090x8-nop2p-allreduce"]
    assert f"(the run reached {max(sweep.sweep.bus_bandwidths) / 1e9:.0f})" in text
    halves = printed("rows = comms.compare_sweeps()")
    for half in ("calibration", "held-out"):
        rows = [r for r in comms.compare_sweeps() if r.sweep.split == half]
        within = sum(r.meets_large_goal for r in rows)
        assert f"{half}: {within} of {len(rows)} sweeps within 15%" in halves
    assert "Two sources never state their NICs' speed" in text
    assert halves.count("does not state its NICs' speed") == 2


def test_the_two_a100_runs_reached_what_the_text_says():
    from perfmodel import comms

    sweeps = {s.id: s for s in comms.published_sweeps()}
    off = sweeps["nccltests293-a100pciex2-2node-allreduce"].sweep.bus_bandwidths[-1] / 1e9
    on = sweeps["nccltests293-a100pciex2-2node-gdr-allreduce"].sweep.bus_bandwidths[-1] / 1e9
    text = prose()
    assert f"they reached {off:.0f} and {on:.0f} GB/s" in text
    box = dict(nodes=2, joined="pcie", link="PCIe 4.0 x16", nic="InfiniBand HDR")
    staged, rdma = (comms.fabric_for(2, gdr=g, **box) for g in (False, True))
    assert (
        f"{staged.channels * staged.channel_bw / 1e9:.0f} GB/s staged through host memory" in text
    )
    assert f"GPUDirect RDMA, {rdma.channels * rdma.channel_bw / 1e9:.0f} GB/s with it" in text
