"""NCCL's own cost model: which algorithm and protocol it runs at each size, and for how long.

NCCL does not run one all-reduce. For every call it prices each algorithm (ring, tree, NVLS,
NVLS-tree) with each protocol (LL, LL128, Simple) and runs the cheapest. This module follows
its model as published in NVIDIA's source, ``src/graph/tuning.cc`` (NCCL 2.30.7, commit
5067397c): a call costs ``latency + bytes / algorithm bandwidth``, where

* the **latency** is a base per algorithm and protocol plus a hardware latency per step:
  ``2(p - 1)`` steps for a ring all-reduce, ``2((p/nodes - 1) + log2(nodes))`` hops for a tree,
  one switch operation for NVLS; across nodes a ring's network steps cost the network's
  latency and the rest at least the network's per-message overhead;
* the **bandwidth** is the channels times each channel's bandwidth (what NCCL's topology
  search found: :class:`Fabric`), scaled per protocol: LL carries 4 data bytes in every 8
  (half, and capped), LL128 120 in every 128 (0.92, capped per channel), Simple all of it;
  trees pay a correction that depends on the size; then bus bandwidth becomes algorithm
  bandwidth (``p / steps`` for rings and NVLS, a half for trees).

Not priced here: NVLS for all-gather and reduce-scatter, PAT (one GPU a node), CollNet, the
tree search's simpler pattern, and tuner plugins. RCCL, AMD's fork, has its own tables.

The sizes where the choice changes are not written anywhere in NCCL: they fall where two
predicted times cross. :func:`nccl_choice` returns the pick with every option's time, so a
plot can mark them.

>>> h100 = Fabric(ranks=8, channels=12, channel_bw=30e9, nvls_channels=8,
...               nvls_bw=40e9, nvls_inter_bw=60e9)
>>> pick = nccl_choice("allreduce", 8 * 2**10, h100)
>>> pick.algorithm, pick.protocol, round(pick.time_s * 1e6, 1)
('ring', 'LL', 15.1)
>>> pick = nccl_choice("allreduce", 2**30, h100)
>>> pick.algorithm, round(pick.time_s * 1e6)
('nvls', 3973)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perfmodel._show import seconds, shown
from perfmodel._validate import choice, count, flag, non_negative, positive

__all__ = ["ARCHS", "NCCL_ALGORITHMS", "PROTOCOLS", "Fabric", "NcclChoice", "nccl_choice"]

#: GPU generations, by NCCL's compute-capability index (Volta 7.x, Ampere and Ada 8.x,
#: Hopper 9.x, Blackwell 10.x).
ARCHS = ("volta", "ampere", "hopper", "blackwell")
PROTOCOLS = ("LL", "LL128", "Simple")
NCCL_ALGORITHMS = ("tree", "ring", "nvls", "nvls_tree")
_COLLECTIVES = ("allreduce", "allgather", "reduce_scatter", "broadcast", "reduce", "alltoall")
#: Bytes to one peer below which NCCL's point-to-point sends use LL, above which Simple
#: (``NCCL_P2P_LL_THRESHOLD``, src/enqueue.cc, per channel; one channel a peer assumed here).
P2P_LL_THRESHOLD = 16384

# --- tuning.cc's constants (lines cited are in commit 5067397c) ---------------------------
#: Base latency per algorithm and protocol, µs (``baseLat``, lines 150-155).
BASE_LAT = {"tree": (6.8, 14.0, 8.4), "ring": (6.6, 14.0, 8.4), "nvls": (0.0, 0.0, 0.0),
            "nvls_tree": (0.0, 0.0, 0.0)}  # fmt: skip
#: Latency per step, by link, algorithm and protocol, µs (``hwLat``, lines 157-176).
HW_LAT = {
    "nvlink": {"tree": (0.6, 1.25, 4.0), "ring": (0.6, 1.9, 3.4), "nvls": (0.0, 0.0, 25.0),
               "nvls_tree": (0.0, 0.0, 25.0)},
    "pci": {"tree": (1.0, 1.9, 4.0), "ring": (1.0, 2.5, 5.7), "nvls": (0.0, 0.0, 0.0),
            "nvls_tree": (0.0, 0.0, 0.0)},
    "net": {"tree": (5.0, 8.5, 14.0), "ring": (2.7, 4.0, 14.0), "nvls": (0.0, 0.0, 18.0),
            "nvls_tree": (0.0, 0.0, 20.9)},
}  # fmt: skip
# Bandwidth caps, GB/s, by generation and node count (1, 2, 3 or more) (lines 178-211).
_LL_MAX = ((39.0, 39.0, 20.4), (87.7, 22.5, 19.0), (141.0, 45.0, 35.0), (282.0, 90.0, 70.0))
_RING_LL128 = ((20.0,) * 3, (20.0,) * 3, (36.7,) * 3, (40.0,) * 3)
_TREE_LL128 = ((20.0,) * 3, (20.0,) * 3, (36.7, 36.7, 29.0), (55.6, 31.67, 20.0))
_TREE = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (38.7, 41.4, 36.0), (70.0, 42.8, 24.0))
_NVLS_TREE = ((26.5, 18.5, 10.0), (24.0, 23.6, 17.8), (0.0, 57.7, 45.5), (0.0, 96.0, 80.0))
_NVLS_EFFICIENCY = (0.0, 0.0, 0.85, 0.74)  # lines 139-144
#: A tree all-reduce's bandwidth correction by protocol and size class ``log2(bytes / 64)``
#: (``treeCorrectionFactor``, lines 623-627).
TREE_CORRECTION = {
    "LL": (1, 1, 1, 1, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1, 1, 1, 1),
    "LL128": (1, 1, 1, 1, 1, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1, 1),
    "Simple": (.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8,
               .9, .9),
}  # fmt: skip


@dataclass(frozen=True, slots=True)
class Fabric:
    """What NCCL's topology search finds for one communicator.

    Parameters
    ----------
    ranks : int
        GPUs in the communicator, count.
    nodes : int
        Nodes they span, count (``ranks`` must split evenly).
    arch : {"volta", "ampere", "hopper", "blackwell"}
        The GPUs' generation (Ada counts as Ampere, as NCCL counts it).
    link : {"nvlink", "pci"}
        What joins the GPUs inside a node.
    channels : int
        Ring and tree channels, count.
    channel_bw : float
        Each channel's bandwidth inside the node, B/s (channels × this is the ring's Simple
        bus bandwidth; across two nodes NCCL's search already holds it to the NICs).
    inter_bw : float, optional
        Each channel's bandwidth across nodes for three nodes or more, B/s (default:
        ``channel_bw``).
    tree_bw : float, optional
        Each tree channel's bandwidth, B/s (default: ``channel_bw``).
    nvls_channels : int
        NVLink SHARP channels (0: no NVSwitch multicast), count.
    nvls_bw, nvls_inter_bw : float
        An NVLS channel's bandwidth into the switch and out of the node, B/s.
    ll128 : bool, optional
        Whether LL128 is allowed; by default where NCCL enables it, GPUs joined by NVLink.
    amd_cpu : bool
        Hosts with AMD CPUs (a 2 µs network overhead instead of 1, other LL caps).
    algorithms : tuple of str, optional
        Only these algorithms (as ``NCCL_ALGO`` restricts them).
    call_overhead : float
        Host time each call adds beyond NCCL's model, s: above all the kernel launches (one
        thread driving eight GPUs, as ``nccl-tests -g 8`` does, launches eight one after
        another). Added to every option, so it never changes the pick.
    shared_uplink : int
        GPUs that share one PCIe link to host memory, where traffic goes through it (no peer
        to peer, GPUs behind one switch), count: each channel's bandwidth is split among those
        of them sending at once (all of them in an all-reduce, all but the last in a
        broadcast's or a reduce's chain). Not in NCCL's model.
    """

    ranks: int
    nodes: int = 1
    arch: str = "hopper"
    link: str = "nvlink"
    channels: int = 12
    channel_bw: float = 30e9
    inter_bw: float | None = None
    tree_bw: float | None = None
    nvls_channels: int = 0
    nvls_bw: float = 0.0
    nvls_inter_bw: float = 0.0
    ll128: bool | None = None
    amd_cpu: bool = False
    algorithms: tuple[str, ...] = NCCL_ALGORITHMS
    call_overhead: float = 0.0
    shared_uplink: int = 1

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "ranks", count("ranks", self.ranks, minimum=2))
        set_(self, "nodes", count("nodes", self.nodes))
        if self.ranks % self.nodes:
            raise ValueError(f"`ranks` {self.ranks} must split evenly over `nodes` {self.nodes}.")
        set_(self, "arch", choice("arch", self.arch, ARCHS))
        set_(self, "link", choice("link", self.link, ("nvlink", "pci")))
        set_(self, "channels", count("channels", self.channels))
        set_(self, "channel_bw", positive("channel_bw", self.channel_bw))
        for name in ("inter_bw", "tree_bw"):
            value = getattr(self, name)
            set_(self, name, self.channel_bw if value is None else positive(name, value))
        set_(self, "nvls_channels", count("nvls_channels", self.nvls_channels, minimum=0))
        set_(self, "nvls_bw", non_negative("nvls_bw", self.nvls_bw))
        set_(self, "nvls_inter_bw", non_negative("nvls_inter_bw", self.nvls_inter_bw))
        on = self.link == "nvlink" if self.ll128 is None else flag("ll128", self.ll128)
        set_(self, "ll128", on)
        if self.nvls_channels and (
            self.link != "nvlink" or not (self.nvls_bw and self.nvls_inter_bw)
        ):
            raise ValueError(
                "NVLS needs an NVSwitch (`link='nvlink'`) and both `nvls_bw` and `nvls_inter_bw` "
                f"(got link={self.link!r}, nvls_bw={self.nvls_bw:g}, "
                f"nvls_inter_bw={self.nvls_inter_bw:g})."
            )
        set_(self, "amd_cpu", flag("amd_cpu", self.amd_cpu))
        set_(self, "call_overhead", non_negative("call_overhead", self.call_overhead))
        set_(self, "shared_uplink", count("shared_uplink", self.shared_uplink))
        names: object = self.algorithms
        if isinstance(names, str) or not names:
            raise TypeError(f"`algorithms` must be a tuple of names (got {self.algorithms!r}).")
        set_(self, "algorithms", tuple(choice("algorithms", a, NCCL_ALGORITHMS)
                                       for a in self.algorithms))  # fmt: skip


@dataclass(frozen=True, slots=True, repr=False)
class NcclChoice:
    """The algorithm and protocol NCCL's model picks for one call, and every option's time.

    Parameters
    ----------
    algorithm, protocol : str
        The pick.
    time_s : float
        Its predicted time, s.
    options : dict
        ``(algorithm, protocol)`` to predicted time, s, for every enabled option.
    """

    algorithm: str
    protocol: str
    time_s: float
    options: dict[tuple[str, str], float]

    def __repr__(self) -> str:
        return shown("NcclChoice", algorithm=repr(self.algorithm),
                     protocol=repr(self.protocol), time=seconds(self.time_s))  # fmt: skip


def _steps(collective: str, ranks: int) -> int:
    if collective == "allreduce":
        return 2 * (ranks - 1)
    return ranks - 1 if collective in ("allgather", "reduce_scatter") else ranks


def _algorithm_bw(collective: str, algorithm: str, protocol: str, fab: Fabric) -> float:
    """The algorithm bandwidth NCCL's model gives, GB/s (0: not available)."""
    if algorithm not in fab.algorithms:
        return 0.0
    cc, column = ARCHS.index(fab.arch), min(fab.nodes, 3) - 1
    if collective != "allreduce" and algorithm != "ring":
        return 0.0  # broadcast and reduce run rings; all-gather and reduce-scatter rings here
    if protocol == "LL128" and not fab.ll128:
        return 0.0
    if algorithm in ("nvls", "nvls_tree"):
        on = fab.nvls_channels >= 2 and protocol == "Simple" and fab.nvls_bw > 0
        if not on or (algorithm == "nvls") != (fab.nodes == 1):  # NVLS one node, its tree more
            return 0.0
        channels = fab.nvls_channels
        inside = fab.nvls_bw / 1e9 * _NVLS_EFFICIENCY[cc] * (channels - 1) / channels * 2
        outside = (
            fab.nvls_inter_bw / 1e9 * (2 if algorithm == "nvls_tree" and fab.nodes <= 2 else 1)
        )
        cap = _NVLS_TREE[cc][column] if algorithm == "nvls_tree" else math.inf
        bus = channels * min(inside, outside, cap)
    else:
        channel = fab.tree_bw if algorithm == "tree" else fab.channel_bw
        if fab.nodes > 2:  # three nodes or more: every algorithm at the network's rate
            channel = fab.inter_bw
        bus = fab.channels * float(channel or fab.channel_bw) / 1e9
        ll_max = _LL_MAX[cc][0] if fab.nodes == 1 else _LL_MAX[1 if fab.amd_cpu else 0][column]
        if algorithm == "ring":
            if protocol == "LL":
                bus = min(ll_max, bus * 0.5)
            elif protocol == "LL128":
                bus = min(bus * 0.92, fab.channels * _RING_LL128[cc][column])
        else:
            bus = min(bus * 0.92, fab.channels * _TREE[cc][column])
            if protocol == "LL":
                bus = min(bus / 3.8, ll_max)
            elif protocol == "LL128":
                share = 7 / 9 if fab.nodes == 1 else 120 / 128
                bus = min(bus * share, fab.channels * _TREE_LL128[cc][column])
    if fab.shared_uplink > 1:  # the senders behind one switch share its uplink
        senders = fab.ranks - 1 if collective in ("broadcast", "reduce") else fab.ranks
        bus /= min(fab.shared_uplink, senders)
    if algorithm == "tree":
        return bus * 0.5
    return bus * fab.ranks / _steps(collective, fab.ranks)


def _latency(collective: str, algorithm: str, protocol: str, fab: Fabric) -> float:
    """The latency NCCL's model gives, µs."""
    p = PROTOCOLS.index(protocol)
    per_node, nodes = fab.ranks // fab.nodes, fab.nodes
    intra = HW_LAT[fab.link][algorithm][p]
    inter = HW_LAT["net"]["tree" if per_node == 1 else algorithm][p]
    depth = nodes.bit_length() - 1  # log2i, the floor
    latency = BASE_LAT[algorithm][p]
    if algorithm == "ring":
        steps = _steps(collective, fab.ranks)
        if collective in ("broadcast", "reduce"):  # a pipelined chain, one hop deep
            return latency + (HW_LAT["net"] if nodes > 1 else HW_LAT[fab.link])["ring"][p]
        net_steps = 0 if nodes == 1 else (2 if collective == "allreduce" else 1) * (nodes - 1)
        overhead = 0.0 if nodes == 1 else (2.0 if fab.amd_cpu else 1.0) * (3 if p == 2 else 1)
        return latency + (steps - net_steps) * max(intra, overhead) + net_steps * inter
    if algorithm == "tree":
        return latency + 2 * ((per_node - 1) * intra + depth * inter)
    if algorithm == "nvls":
        return intra + (inter if nodes > 1 else 0.0)
    return latency + intra + 2 * depth * inter  # nvls_tree


def _alltoall(size: float, fab: Fabric) -> NcclChoice:
    """An all-to-all as nccl-tests runs it: a send to and a receive from every other rank in one
    group. Not in NCCL's tuner: each GPU sends ``(p-1)/p`` of its buffer at the ring's rate in
    a node; across nodes its off-node share, ``(p - p/nodes)/p``, goes over its part of the
    node's NICs (at ``inter_bw`` from three nodes). LL may carry up to
    :data:`P2P_LL_THRESHOLD` bytes a peer, Simple anything; the cheaper runs, so the time
    never falls as the buffer grows. The latency is one ring step's."""
    per_node, p = fab.ranks // fab.nodes, fab.ranks
    options: dict[tuple[str, str], float] = {}
    for protocol in ("LL", "Simple") if size / p <= P2P_LL_THRESHOLD else ("Simple",):
        k = PROTOCOLS.index(protocol)
        latency = BASE_LAT["ring"][k] + HW_LAT["net" if fab.nodes > 1 else fab.link]["ring"][k]
        channel = fab.inter_bw if fab.nodes > 2 else fab.channel_bw
        rate = fab.channels * float(channel or fab.channel_bw) * (0.5 if protocol == "LL" else 1)
        rate /= min(fab.shared_uplink, per_node)
        if fab.nodes > 1:  # the node's NICs, shared by its GPUs, carry the off-node bytes
            moved, rate = size / p * (p - per_node), rate / per_node
        else:
            moved = size / p * (p - 1)
        options[("p2p", protocol)] = latency * 1e-6 + moved / rate + fab.call_overhead
    (_, protocol), best = min(options.items(), key=lambda item: item[1])
    return NcclChoice("p2p", protocol, best, options)


def nccl_choice(collective: str, nbytes: float, fabric: Fabric) -> NcclChoice:
    """The algorithm and protocol NCCL's tuner picks for one call, and its predicted time.

    Parameters
    ----------
    collective : {"allreduce", "allgather", "reduce_scatter", "broadcast", "reduce", "alltoall"}
        The collective (an all-to-all is NCCL's grouped sends, priced outside its tuner:
        ``"p2p"``, its protocol by the bytes each peer gets).
    nbytes : float
        The bytes NCCL counts for it: an all-reduce's, a broadcast's or a reduce's buffer, an
        all-gather's or reduce-scatter's whole gathered buffer, an all-to-all's whole send
        buffer (what nccl-tests prints as ``size``), B.
    fabric : Fabric
        What the topology search found.

    Returns
    -------
    NcclChoice
        The pick, its time (s) and every enabled option's time.

    Raises
    ------
    ValueError
        If no algorithm and protocol are enabled for the call.

    Notes
    -----
    The tree's correction factor is NCCL's, by size class, so across nodes a tree's time can
    fall by up to a sixth where a size crosses into the next class, as NCCL's estimate does.
    """
    collective = choice("collective", collective, _COLLECTIVES)
    size = non_negative("nbytes", nbytes)
    if not isinstance(fabric, Fabric):
        raise TypeError(f"`fabric` must be a comms.Fabric (got {fabric!r}).")
    if collective == "alltoall":
        return _alltoall(size, fabric)
    cc = ARCHS.index(fabric.arch)
    size_class = int(math.log2(int(size) >> 6)) if size >= 64 else -1
    options: dict[tuple[str, str], float] = {}
    for algorithm in NCCL_ALGORITHMS:
        for protocol in PROTOCOLS:
            bandwidth = _algorithm_bw(collective, algorithm, protocol, fabric)
            if bandwidth <= 0:
                continue
            latency = _latency(collective, algorithm, protocol, fabric)
            if algorithm == "tree" and 0 <= size_class < 23:
                bandwidth *= TREE_CORRECTION[protocol][size_class]
            per_channel = size / (2 * fabric.channels * fabric.ranks)
            if (
                (algorithm, protocol, collective) == ("ring", "Simple", "allreduce")
                and fabric.nodes > 1
                and per_channel >= 64
            ):
                latency *= 1.9 if cc == 0 else 1.4
            options[(algorithm, protocol)] = (
                latency + size / (1000 * bandwidth)
            ) * 1e-6 + fabric.call_overhead
    if not options:
        raise ValueError(f"no algorithm runs {collective} on this fabric ({fabric.algorithms}).")
    (algorithm, protocol), best = min(options.items(), key=lambda item: item[1])
    return NcclChoice(algorithm, protocol, best, options)
