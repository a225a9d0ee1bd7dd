"""Published nccl-tests sweeps, the fabric each box gives NCCL, and how well the model holds.

NCCL's tuner (:func:`perfmodel.comms.nccl_choice`) needs what NCCL's topology search found:
how many channels, and each channel's bandwidth. :func:`fabric_for` derives them from what a
user knows of the box: how its GPUs are joined inside a node, and which PCIe link each GPU
has. Three kinds of path (:data:`PATHS`):

* ``"nvlink"``: a switched GPU fabric, NVLink with NVSwitch or the Infinity Fabric that joins
  all eight GPUs of an AMD MI300X-class node; NCCL finds 12 ring channels in a node;
* ``"pcie"``: peer to peer over PCIe, through a switch or the CPU's root complex; 2 channels,
  each a share of the GPU's own PCIe link;
* ``"host"``: no peer to peer (consumer cards, ``NCCL_P2P_DISABLE=1``): every byte is written
  to host memory by one GPU and read back by the next (NCCL's shared-memory transport); a
  smaller share of the same link.

Across nodes NCCL runs 8 channels, one per NIC rail. A channel's bandwidth per kind of path
(:data:`PATH_RATES`) is fitted on the **calibration** half of :func:`published_sweeps` alone
(:func:`fit_paths`: the bandwidth that makes the largest size's predicted time the measured one,
the median over the half's sweeps of that kind), as is the host's cost of each call beyond
NCCL's model: a kernel launch for every GPU one thread drives. A kind no calibration sweep
has is priced at its NICs' line rate and marked uncalibrated. :func:`compare_sweeps` sets every
sweep, both halves, beside its prediction; ``benchmarks/nccl_sweeps.py`` prints it.

The sweeps are stored as their authors printed them (``data/nccl_sweeps``, with an index that
cites each and records its half, fixed by a hash of its id before anything was fitted).

>>> h100 = fabric_for(8, joined="nvlink")
>>> h100.channels, round(h100.channels * h100.channel_bw / 1e9)   # ring busbw, GB/s
(12, 337)
"""

from __future__ import annotations

import statistics
import sys
from dataclasses import dataclass
from importlib import resources
from typing import Any

from perfmodel._validate import choice, count, flag, non_negative, positive
from perfmodel.comms.links import as_link, bus_factor
from perfmodel.comms.nccl import ARCHS, NCCL_ALGORITHMS, Fabric, nccl_choice
from perfmodel.comms.nccl_tests import Sweep, read_nccl_tests

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "PATHS",
    "PATH_RATES",
    "PublishedSweep",
    "SweepComparison",
    "compare_sweeps",
    "fabric_for",
    "fit_paths",
    "published_sweeps",
]

PATHS = ("nvlink", "pcie", "host")
#: Issue 47's goals for a sweep: its time within this fraction at 1 MiB and above, and within
#: this factor either way at 64 KiB and below.
LARGE_GOAL, SMALL_GOAL = 0.15, 1.5
#: The NVLS channel rates NCCL's search gives a DGX H100 node (into the switch, and out of the
#: node in one), B/s: what `nccl_choice`'s NVLS prices.
_NVLS_BW, _NVLS_INTER_BW = 40e9, 60e9
#: Channels NCCL's search settles on: a DGX H100 node runs 12 ring channels, a PCIe box 2,
#: two or more nodes 8 (one per NIC).
_CHANNELS = {"nvlink": 12, "pcie": 2, "host": 2, "nodes": 8}
#: What :func:`fit_paths` gives on the calibration half (a test refits and compares): each
#: channel's bandwidth as a share of what it crosses. In a node (``nvlink``, ``pcie``,
#: ``host``) that is the GPU's own link; across nodes (``nvlink_nodes``; ``socket_nodes`` for
#: NCCL's TCP sockets) the node's NICs shared over the 8 channels. ``launch_s``: the host's
#: cost per call for each GPU one thread drives, s.
PATH_RATES = {
    "nvlink": 0.06237,
    "pcie": 0.3717,
    "host": 0.2731,
    "nvlink_nodes": 0.9186,
    "socket_nodes": 0.1621,
    "launch_s": 2.483e-6,
}
#: NCCL's generation index for the devices the sweeps name (Ada and Turing as NCCL counts
#: them; AMD's RCCL is priced with NCCL's tables, an approximation).
_ARCH = {"H100 SXM": "hopper", "A100 SXM4 40GB": "ampere", "RTX 4090": "ampere",
         "NVIDIA GeForce RTX 4090": "ampere", "NVIDIA A100-PCIE-40GB": "ampere",
         "NVIDIA L40S": "ampere", "NVIDIA GeForce RTX 2080 Ti": "volta",
         "AMD Instinct MI100": "ampere", "MI300X": "ampere", "AMD Instinct MI300X": "ampere",
         "AMD Instinct MI300X VF": "ampere", "AMD Instinct MI355X": "ampere",
         "AMD Instinct MI250X (GCD)": "ampere", "AMD Radeon AI PRO R9700": "ampere"}  # fmt: skip
#: GeForce cards whose stock driver offers no peer to peer (the RTX 4090 sweeps' source shows an
#: all-zero P2P matrix until a patched driver): through host memory unless a sweep says P2P ran.
_NO_P2P = ("RTX 4090", "NVIDIA GeForce RTX 4090", "NVIDIA GeForce RTX 2080 Ti")
#: AMD GPUs joined by Infinity Fabric among all the GPUs of a node (an MI250X's GCDs included).
_SWITCHED = ("MI300X", "AMD Instinct MI300X", "AMD Instinct MI300X VF", "AMD Instinct MI355X",
             "AMD Instinct MI250X (GCD)")  # fmt: skip


@dataclass(frozen=True, slots=True)
class PublishedSweep:
    """One published nccl-tests sweep and what its source states about the box.

    Parameters
    ----------
    id, split, system, source, url : str
        Its name, its half (``"calibration"`` or ``"held-out"``), the machine, who published it
        and where.
    path : str
        What joins the GPUs inside a node (see :data:`PATHS`).
    nodes, gpus_per_node : int
        Nodes and GPUs in each, count.
    device, arch : str
        The GPU as the source names it, and NCCL's generation for it.
    link : str
        The catalogue link each GPU's traffic crosses inside a node ("" where no catalogue
        entry has it).
    nic : str
        Each NIC's catalogue link ("" where the source does not say).
    nics_per_node : int
        NICs in each node, count.
    switch_gpus : int
        GPUs behind one PCIe switch, sharing its link to the host, count.
    gdr : bool
        Whether its NICs used GPUDirect RDMA (as its source states; True in one node).
    socket : bool
        Whether NCCL ran over TCP sockets (``NCCL_IB_DISABLE=1``) instead of RDMA.
    algorithms : tuple of str
        What NCCL may run (``NCCL_ALGO=RING`` leaves the ring alone).
    sweep : perfmodel.comms.Sweep
        The table, as :func:`perfmodel.comms.read_nccl_tests` reads it.
    """

    id: str
    split: str
    system: str
    source: str
    url: str
    path: str
    nodes: int
    gpus_per_node: int
    device: str
    arch: str
    link: str
    nic: str
    nics_per_node: int
    switch_gpus: int
    gdr: bool
    socket: bool
    algorithms: tuple[str, ...]
    sweep: Sweep


def published_sweeps() -> tuple[PublishedSweep, ...]:
    """Every stored sweep, in the index's order, each read as printed.

    Returns
    -------
    tuple of PublishedSweep
        Each sweep with what its source states about the box, both halves.
    """
    folder = resources.files("perfmodel") / "data" / "nccl_sweeps"
    index = tomllib.loads((folder / "index.toml").read_text("utf-8"))["sweep"]
    found = []
    for entry in index:
        switched = entry["p2p"] == "nvlink" or entry["device"] in _SWITCHED
        hosted = entry["p2p"] == "no-p2p" or (
            entry["device"] in _NO_P2P and entry["p2p"] != "pcie-p2p"
        )
        path = "nvlink" if switched else "host" if hosted else "pcie"
        environment = entry["nccl_env"].upper()
        sweep = read_nccl_tests((folder / entry["file"]).read_text("utf-8"),
                                collective=entry["collective"])  # fmt: skip
        found.append(PublishedSweep(
            id=entry["id"], split=entry["split"], system=entry["system"],
            source=entry["source"], url=entry["url"], path=path, nodes=entry["nodes"],
            gpus_per_node=entry["gpus_per_node"], device=entry["device"],
            arch=_ARCH[entry["device"]], link=entry["link"], nic=entry["nic_link"],
            nics_per_node=entry["nics_per_node"], switch_gpus=entry["switch_gpus"],
            gdr=entry["gdr"],
            socket="NCCL_IB_DISABLE=1" in environment,
            algorithms=("ring",) if "NCCL_ALGO=RING" in environment else NCCL_ALGORITHMS,
            sweep=sweep,
        ))  # fmt: skip
    return tuple(found)


def _key(path: str, nodes: int, socket: bool = False) -> str:
    if nodes == 1:
        return path
    return "socket_nodes" if socket else f"{path}_nodes"


def fabric_for(
    gpus: int,
    *,
    nodes: int = 1,
    joined: str = "nvlink",
    link: str = "NVLink 4",
    arch: str | None = None,
    nic: str | None = None,
    nics_per_node: int | None = None,
    gdr: bool = True,
    socket: bool = False,
    switch_gpus: int = 1,
    gpus_per_thread: int = 1,
    algorithms: tuple[str, ...] = NCCL_ALGORITHMS,
    constants: dict[str, float] | None = None,
) -> Fabric:
    """The fabric NCCL would find on a box, at the channel rates :data:`PATH_RATES` holds.

    Parameters
    ----------
    gpus : int
        GPUs in the communicator, count.
    nodes : int
        Nodes they span, count (``gpus`` must split evenly over them).
    joined : {"nvlink", "pcie", "host"}
        What joins the GPUs inside a node (see :data:`PATHS`).
    link : str
        The catalogue link each GPU's traffic crosses inside a node: ``"NVLink 4"``,
        ``"Infinity Fabric (MI300X)"``, or its PCIe link (``"PCIe 4.0 x16"``) for ``"pcie"``
        and ``"host"``.
    arch : {"volta", "ampere", "hopper", "blackwell"}, optional
        NCCL's generation for the GPUs; by default the NVLink generation's (NVLink 3 Ampere,
        4 Hopper, 5 Blackwell), else Ampere.
    nic : str, optional
        Each NIC's catalogue link; needed across nodes (``"InfiniBand NDR"``).
    nics_per_node : int, optional
        NICs in each node, count (default: one per GPU).
    gdr : bool
        Whether the NICs read and write GPU memory directly (GPUDirect RDMA); without it every
        byte is staged in host memory on its way to the NIC.
    socket : bool
        NCCL over TCP sockets (``NCCL_IB_DISABLE=1``) instead of RDMA; only across nodes.
    switch_gpus : int
        GPUs behind one PCIe switch (``nvidia-smi topo -m`` shows ``PIX`` between them), count;
        through host memory they share its link to the host.
    gpus_per_thread : int
        GPUs one launching thread drives (``nccl-tests -g 8`` in one process: 8), count;
        each costs a kernel launch a call.
    algorithms : tuple of str
        What NCCL may run.
    constants : dict, optional
        Replacements for :data:`PATH_RATES` (what :func:`fit_paths` tries): shares above 0,
        ``launch_s`` at least 0.

    Returns
    -------
    perfmodel.comms.Fabric
        Channels and their bandwidth. Across nodes a channel runs at its share of the NICs,
        and never faster than the GPUs' own path inside the node (peer to peer over PCIe, or
        through host memory without GPUDirect RDMA); a kind of path no calibration sweep
        crosses nodes on gets the NICs' line rate under that cap. NVLS where NVLink joins
        Hopper or later GPUs, two or more a node, and the tree is allowed (at an H100's rates).

    Raises
    ------
    TypeError, ValueError
        Naming the argument: an unknown link, a count below its minimum or above the GPUs
        it counts among, a missing ``nic`` across nodes, sockets inside one node, a bad
        constant.
    """
    gpus = count("gpus", gpus, minimum=2)
    nodes = count("nodes", nodes)
    if gpus % nodes:
        raise ValueError(f"`gpus` {gpus} must split evenly over `nodes` {nodes}.")
    per_node = gpus // nodes
    joined = choice("joined", joined, PATHS)
    model = as_link(link, argument="link")
    arch = choice("arch", _ARCH_OF.get(model.name, "ampere") if arch is None else arch, ARCHS)
    gdr, socket = flag("gdr", gdr), flag("socket", socket)
    switch_gpus = count("switch_gpus", switch_gpus, maximum=per_node)
    per_thread = count("gpus_per_thread", gpus_per_thread, maximum=gpus)
    names: object = algorithms
    if not isinstance(names, tuple | list) or not names:
        raise TypeError(f"`algorithms` must be a tuple of names (got {algorithms!r}).")
    algorithms = tuple(choice("algorithms", a, NCCL_ALGORITHMS) for a in names)
    values = _constants(constants)
    inside = _CHANNELS[joined] * values[joined] * model.bandwidth  # the node's ring busbw
    if nodes == 1:
        if socket:
            raise ValueError("`socket` is NCCL's transport across nodes; `nodes` is 1.")
        if nic is not None or nics_per_node is not None:
            raise ValueError("`nic` and `nics_per_node` are for several nodes; `nodes` is 1.")
        channels, channel_bw = _CHANNELS[joined], inside / _CHANNELS[joined]
    elif nic is None:
        raise ValueError("`nic` must name each NIC's catalogue link when `nodes` > 1.")
    else:
        nics = per_node if nics_per_node is None else count("nics_per_node", nics_per_node)
        channels = _CHANNELS["nodes"]
        share = values.get(_key(joined, nodes, socket), 1.0)
        channel_bw = share * as_link(nic, argument="nic").bandwidth * nics / channels
        if joined != "nvlink":  # the GPU's own PCIe path (staged in host memory without GDR)
            staged = inside if gdr else _CHANNELS["host"] * values["host"] * model.bandwidth
            channel_bw = min(channel_bw, staged * per_node / channels)
    nvls = model.kind == "nvlink" and ARCHS.index(arch) >= ARCHS.index("hopper")
    nvls = nvls and joined == "nvlink" and per_node > 1 and algorithms[0] != "ring" and not socket
    return Fabric(
        ranks=gpus, nodes=nodes, arch=arch, link="nvlink" if joined == "nvlink" else "pci",
        channels=channels, channel_bw=channel_bw, nvls_channels=8 if nvls else 0,
        nvls_bw=_NVLS_BW if nvls else 0.0,
        nvls_inter_bw=(_NVLS_INTER_BW if nodes == 1 else channel_bw) if nvls else 0.0,
        algorithms=algorithms, call_overhead=values["launch_s"] * per_thread,
        shared_uplink=switch_gpus if joined == "host" else 1,
    )  # fmt: skip


#: NCCL's generation for each NVLink's GPUs, when ``arch`` is not given.
_ARCH_OF = {"NVLink 3": "ampere", "NVLink 4": "hopper", "NVLink 4 (H800)": "hopper",
            "NVLink 5": "blackwell"}  # fmt: skip
#: The keys :data:`PATH_RATES` may hold: a share per kind of path, in a node and across nodes.
_KEYS = (*PATHS, *(f"{p}_nodes" for p in PATHS), "socket_nodes", "launch_s")


def _constants(constants: object) -> dict[str, float]:
    """:data:`PATH_RATES` with ``constants`` over it, each checked by name."""
    if constants is None:
        return dict(PATH_RATES)
    if not isinstance(constants, dict):
        raise TypeError(f"`constants` must be a dict of rates (got {type(constants).__name__}).")
    values = dict(PATH_RATES)
    for key, value in constants.items():
        name = f"constants[{key!r}]"
        if key not in _KEYS:
            raise ValueError(f"{name} is not a rate fabric_for knows ({', '.join(_KEYS)}).")
        values[key] = non_negative(name, value) if key == "launch_s" else positive(name, value)
    return values


def _unpriced(entry: PublishedSweep) -> str:
    """Why a sweep cannot be priced from what its source states ("" when it can)."""
    if entry.nodes > 1 and not entry.nic:
        return "its source does not state its NICs' speed"
    if entry.nodes == 1 and not entry.link:
        return "the catalogue has no link for its GPUs"
    return ""


def _fabric(entry: PublishedSweep, constants: dict[str, float]) -> Fabric:
    return fabric_for(
        entry.sweep.ranks, nodes=entry.nodes, joined=entry.path, link=entry.link or "NVLink 4",
        arch=entry.arch, nic=entry.nic or None, nics_per_node=entry.nics_per_node or None,
        gdr=entry.gdr, socket=entry.socket, switch_gpus=entry.switch_gpus,
        gpus_per_thread=entry.sweep.gpus_per_thread or 1,
        algorithms=entry.algorithms, constants=constants,
    )  # fmt: skip


def _predict(entry: PublishedSweep, constants: dict[str, float]) -> tuple[Fabric, list[float]]:
    """The fabric a sweep's box gives at ``constants``, and the time predicted at each size."""
    fabric = _fabric(entry, constants)
    times = [nccl_choice(entry.sweep.collective, n, fabric).time_s for n in entry.sweep.sizes]
    return fabric, times


def fit_paths(sweeps: tuple[PublishedSweep, ...] | None = None) -> dict[str, float]:
    """The constants of :data:`PATH_RATES`, from the calibration half alone.

    Each priced calibration sweep gives its kind of path the share whose prediction at the
    largest size is the measured time (bisection; the median over the kind's sweeps), then its
    excess at 1 KiB and below over the model, per GPU a thread drove (the median over all).
    A node's own shares are fitted first: across nodes they cap a channel.

    Parameters
    ----------
    sweeps : tuple of PublishedSweep, optional
        What to fit on (default: :func:`published_sweeps`); held-out and unpriced sweeps in
        it are left out.

    Returns
    -------
    dict
        A share per kind of path the calibration sweeps price (see :data:`PATH_RATES`) and
        ``launch_s``, s.

    Raises
    ------
    TypeError
        If an item is not a :class:`PublishedSweep`.
    ValueError
        If no priced calibration sweep is among them.
    """
    given = published_sweeps() if sweeps is None else tuple(sweeps)
    for item in given:
        if not isinstance(item, PublishedSweep):
            raise TypeError(f"`sweeps` must hold comms.PublishedSweep (got {item!r:.60}).")
    chosen = [s for s in given if s.split == "calibration" and not _unpriced(s)]
    if not chosen:
        raise ValueError(
            f"no priced calibration sweep among the {len(given)} given: a fit needs one."
        )
    values: dict[str, float] = {}
    for several in (False, True):  # a node's own shares first: across nodes they cap a channel
        shares: dict[str, list[float]] = {}
        for entry in (e for e in chosen if (e.nodes > 1) == several):
            key = _key(entry.path, entry.nodes, entry.socket)
            low, high = 1e-6, 1e3
            for _ in range(60):  # the largest size's time falls as the share grows
                middle = (low * high) ** 0.5
                trial = {**values, key: middle, "launch_s": 0.0}
                slow = _predict(entry, trial)[1][-1] > entry.sweep.times[-1]
                low, high = (middle, high) if slow else (low, middle)
            shares.setdefault(key, []).append((low * high) ** 0.5)
        values.update({key: statistics.median(found) for key, found in shares.items()})
    excess = []
    for entry in chosen:
        _, model = _predict(entry, {**values, "launch_s": 0.0})
        sweep = entry.sweep
        extra = [t - m for n, t, m in zip(sweep.sizes, sweep.times, model, strict=True)
                 if 0 < n <= 2**10]  # fmt: skip
        if extra:  # a sweep that starts above 1 KiB says nothing of the latency
            excess.append(statistics.median(extra) / (sweep.gpus_per_thread or 1))
    return {**values, "launch_s": max(0.0, statistics.median(excess)) if excess else 0.0}


@dataclass(frozen=True, slots=True)
class SweepComparison:
    """One sweep beside its prediction.

    Parameters
    ----------
    sweep : PublishedSweep
        The published sweep.
    fabric : perfmodel.comms.Fabric or None
        What it was predicted on (None where it was not priced).
    predicted : tuple of float
        The predicted time at each of its sizes, s (empty where it was not priced).
    calibrated : bool
        Whether a calibration sweep of its kind set its channel bandwidth.
    unpriced : str
        Why it was not priced ("" where it was): what its source leaves unsaid. Its errors
        are then infinite, so a count of sweeps within a goal counts it as a miss.
    """

    sweep: PublishedSweep
    fabric: Fabric | None
    predicted: tuple[float, ...]
    calibrated: bool
    unpriced: str = ""

    def _ratios(self, low: float, high: float) -> list[float]:
        s = self.sweep.sweep
        if self.unpriced:
            return [float("inf")] if any(low <= n <= high for n in s.sizes) else []
        return [p / t for n, p, t in zip(s.sizes, self.predicted, s.times, strict=True)
                if low <= n <= high and n > 0 and t > 0]  # fmt: skip

    @property
    def large_error(self) -> float:
        """Median ``|predicted / measured - 1|`` at 1 MiB and above."""
        return statistics.median(abs(r - 1) for r in self._ratios(2**20, float("inf")))

    @property
    def all_error(self) -> float:
        """Median ``|predicted / measured - 1|`` over every size."""
        return statistics.median(abs(r - 1) for r in self._ratios(0, float("inf")))

    @property
    def small_ratio(self) -> float:
        """Median predicted / measured time at 64 KiB and below (nan if none was timed)."""
        ratios = self._ratios(0, 2**16)
        return statistics.median(ratios) if ratios else float("nan")

    @property
    def meets_large_goal(self) -> bool:
        """Whether the time is within :data:`LARGE_GOAL` at 1 MiB and above."""
        return self.large_error <= LARGE_GOAL

    @property
    def meets_small_goal(self) -> bool:
        """Whether the time is within :data:`SMALL_GOAL` either way at 64 KiB and below
        (False where no such size was timed)."""
        return 1 / SMALL_GOAL <= self.small_ratio <= SMALL_GOAL

    @property
    def plateaus(self) -> tuple[float, float]:
        """Bus bandwidth at the largest size, predicted and measured, B/s."""
        s = self.sweep.sweep
        factor = bus_factor(s.collective, s.ranks)
        if self.unpriced:
            return float("nan"), s.bus_bandwidths[-1]
        return s.sizes[-1] / self.predicted[-1] * factor, s.bus_bandwidths[-1]

    @property
    def half_sizes(self) -> tuple[float, float]:
        """The smallest size whose bus bandwidth reaches half the largest size's, predicted
        and measured, B."""
        s = self.sweep.sweep
        factor = bus_factor(s.collective, s.ranks)
        if self.unpriced:
            return float("nan"), _half(s.sizes, s.bus_bandwidths)
        model = [n / t * factor for n, t in zip(s.sizes, self.predicted, strict=True)]
        return _half(s.sizes, model), _half(s.sizes, s.bus_bandwidths)


def _half(sizes: tuple[float, ...], busbw: Any) -> float:
    return next(n for n, b in zip(sizes, busbw, strict=True) if b >= busbw[-1] / 2)


def compare_sweeps(constants: dict[str, float] | None = None) -> list[SweepComparison]:
    """Every published sweep beside its prediction.

    Parameters
    ----------
    constants : dict, optional
        Rates to predict at instead of :data:`PATH_RATES` (what :func:`fit_paths` returns);
        a sweep is marked calibrated when they hold a rate for its kind of path.

    Returns
    -------
    list of SweepComparison
        One per published sweep, in the index's order, both halves.
    """
    values = _constants(constants)
    fitted = PATH_RATES if constants is None else constants
    rows = []
    for entry in published_sweeps():
        if reason := _unpriced(entry):
            rows.append(SweepComparison(entry, None, (), False, reason))
            continue
        fabric, predicted = _predict(entry, values)
        calibrated = _key(entry.path, entry.nodes, entry.socket) in fitted
        rows.append(SweepComparison(entry, fabric, tuple(predicted), calibrated))
    return rows
