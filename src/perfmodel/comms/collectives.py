"""Collectives priced with the alpha-beta model: ``messages · α + bytes_on_the_wire / B``.

Every collective here is a :class:`Terms`: how many message latencies it pays in sequence,
and how many times its buffer crosses the slowest link per rank. The time formulas follow
Thakur, Rabenseifner and Gropp, *Optimization of Collective Communication Operations in
MPICH* (2005), and NCCL's ring algorithms; ``nbytes`` is always the size of one rank's
buffer (the whole vector for an all-reduce, the whole output for an all-gather).

=============================  ====================  ====================
collective (algorithm)         latencies             bytes / B
=============================  ====================  ====================
all-reduce (ring)              2(p-1)                2(p-1)/p · n
all-reduce (tree)              2⌈log2 p⌉             2⌈log2 p⌉ · n
reduce-scatter (ring)          p-1                   (p-1)/p · n
all-gather (ring)              p-1                   (p-1)/p · n
broadcast (tree)               ⌈log2 p⌉              ⌈log2 p⌉ · n
broadcast (scatter+allgather)  ⌈log2 p⌉ + p-1        2(p-1)/p · n
all-to-all (pairwise)          p-1                   (p-1)/p · n
=============================  ====================  ====================

A link is a catalogue name, a :class:`perfmodel.hardware.Link`, or any object with
``bandwidth`` (bytes/s, one direction) and ``latency`` (s): a link you measured yourself
with :mod:`perfmodel.comms.bench` plugs straight in.

Examples
--------
>>> from perfmodel.hardware import Link
>>> link = Link(name="toy", kind="other", bandwidth=1e9, latency=1e-6, source="a toy")
>>> allreduce_time(1e9, 4, link)     # 2·3/4 · 1 s + 6 µs
1.500006
>>> bus_bandwidth(1e9 / 1.5, 4)      # nccl-tests' busbw: the link's own 1 GB/s
1000000000.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from perfmodel._validate import choice, count, describe, non_negative, positive

__all__ = [
    "ALGORITHMS",
    "COLLECTIVES",
    "LinkModel",
    "Terms",
    "algorithm_bandwidth",
    "allgather_time",
    "allreduce_time",
    "alltoall_time",
    "as_link",
    "broadcast_time",
    "bus_bandwidth",
    "bus_factor",
    "collective_time",
    "hierarchical_allreduce_time",
    "parameter_server_time",
    "point_to_point_time",
    "reduce_scatter_time",
    "terms",
]

#: The collectives, with the algorithms each may use (the first is the default).
ALGORITHMS: dict[str, tuple[str, ...]] = {
    "allreduce": ("ring", "tree"),
    "reduce_scatter": ("ring",),
    "allgather": ("ring",),
    "broadcast": ("tree", "scatter_allgather"),
    "alltoall": ("pairwise",),
}
COLLECTIVES = tuple(ALGORITHMS)


@dataclass(frozen=True, slots=True)
class LinkModel:
    """The two numbers of the alpha-beta model: ``bandwidth`` (bytes/s, one direction) and
    ``latency`` (seconds per message), with the name of what they came from."""

    bandwidth: float
    latency: float
    name: str = "link"

    def time(self, nbytes: float) -> float:
        """One message of ``nbytes``: ``latency + nbytes / bandwidth``."""
        return self.latency + non_negative("nbytes", nbytes) / self.bandwidth


def as_link(link: Any, *, argument: str = "link") -> LinkModel:
    """A catalogue name, a :class:`~perfmodel.hardware.Link`, or any object with
    ``bandwidth`` and ``latency``, as a checked :class:`LinkModel`.

    >>> as_link("InfiniBand NDR").bandwidth
    50000000000.0
    >>> as_link(3.0)
    Traceback (most recent call last):
    ...
    TypeError: `link` must be a catalogue link name or an object with `bandwidth` and ...
    """
    if isinstance(link, LinkModel):
        return link
    if isinstance(link, str):
        from perfmodel.hardware import get_link

        link = get_link(link, argument=argument)
    if not (hasattr(link, "bandwidth") and hasattr(link, "latency")):
        raise TypeError(
            f"`{argument}` must be a catalogue link name or an object with `bandwidth` and "
            f"`latency` (got {type(link).__name__} {describe(link)})."
        )
    return LinkModel(
        bandwidth=positive(f"{argument}.bandwidth", link.bandwidth),
        latency=non_negative(f"{argument}.latency", link.latency),
        name=str(getattr(link, "name", argument)),
    )


@dataclass(frozen=True, slots=True)
class Terms:
    """A collective's cost in the alpha-beta model: ``latencies · α + byte_factor · n / B``."""

    latencies: float
    byte_factor: float

    def time(self, nbytes: float, link: LinkModel) -> float:
        """Seconds for a buffer of ``nbytes`` on ``link``."""
        return self.latencies * link.latency + self.byte_factor * nbytes / link.bandwidth


def _log2_ceil(p: int) -> int:
    return math.ceil(math.log2(p)) if p > 1 else 0


def terms(collective: str, p: int, algorithm: str | None = None) -> Terms:
    """The latency count and byte factor of ``collective`` on ``p`` ranks (see the table above).

    >>> terms("allreduce", 8)
    Terms(latencies=14, byte_factor=1.75)
    >>> terms("allreduce", 8, "tree")
    Terms(latencies=6, byte_factor=6)
    """
    collective = choice("collective", collective, COLLECTIVES)
    p = count("p", p)
    algorithm = ALGORITHMS[collective][0] if algorithm is None else algorithm
    algorithm = choice("algorithm", algorithm, ALGORITHMS[collective])
    if p == 1:
        return Terms(0, 0)
    steps, share = p - 1, (p - 1) / p
    depth = _log2_ceil(p)
    if collective == "allreduce":
        return Terms(2 * steps, 2 * share) if algorithm == "ring" else Terms(2 * depth, 2 * depth)
    if collective == "broadcast":
        if algorithm == "tree":
            return Terms(depth, depth)
        return Terms(depth + steps, 2 * share)
    return Terms(steps, share)  # reduce-scatter, all-gather, all-to-all


def collective_time(
    collective: str, nbytes: float, p: int, link: Any, *, algorithm: str | None = None
) -> float:
    """Seconds for ``collective`` over ``p`` ranks, each holding ``nbytes``, on ``link``."""
    nbytes = non_negative("nbytes", nbytes)
    return terms(collective, p, algorithm).time(nbytes, as_link(link))


def point_to_point_time(nbytes: float, link: Any) -> float:
    """One message of ``nbytes`` from one rank to another: ``α + n/B``.

    >>> point_to_point_time(50e9, "InfiniBand NDR")
    1.0000006
    """
    return as_link(link).time(nbytes)


def allreduce_time(nbytes: float, p: int, link: Any, *, algorithm: str = "ring") -> float:
    """Seconds to all-reduce a buffer of ``nbytes`` over ``p`` ranks.

    Ring: ``2(p-1)/p · n/B + 2(p-1)·α`` (a reduce-scatter then an all-gather; bandwidth-
    optimal, latency grows with p). Tree: a binomial-tree reduce then broadcast,
    ``2⌈log2 p⌉·(α + n/B)`` (few latencies, but every step moves the whole buffer).

    Examples
    --------
    >>> round(allreduce_time(1e9, 8, "NVLink 4") * 1e3, 3)   # 1 GB over 8 H100s, ms
    3.903
    """
    return collective_time("allreduce", nbytes, p, link, algorithm=algorithm)


def reduce_scatter_time(nbytes: float, p: int, link: Any) -> float:
    """Seconds to reduce-scatter ``nbytes`` (each rank ends with its ``1/p`` share, summed):
    ring, ``(p-1)/p · n/B + (p-1)·α``."""
    return collective_time("reduce_scatter", nbytes, p, link)


def allgather_time(nbytes: float, p: int, link: Any) -> float:
    """Seconds to all-gather an output of ``nbytes`` (each rank contributes ``n/p``): ring,
    ``(p-1)/p · n/B + (p-1)·α``."""
    return collective_time("allgather", nbytes, p, link)


def broadcast_time(nbytes: float, p: int, link: Any, *, algorithm: str = "tree") -> float:
    """Seconds to broadcast ``nbytes`` from one rank: a binomial tree, ``⌈log2 p⌉(α + n/B)``,
    or for long messages a scatter then an all-gather, ``(⌈log2 p⌉ + p - 1)α + 2(p-1)/p · n/B``.
    """
    return collective_time("broadcast", nbytes, p, link, algorithm=algorithm)


def alltoall_time(nbytes: float, p: int, link: Any) -> float:
    """Seconds for an all-to-all where each rank sends ``nbytes`` in all (``n/p`` to each
    rank): pairwise exchange, ``(p-1)/p · n/B + (p-1)·α``."""
    return collective_time("alltoall", nbytes, p, link)


def parameter_server_time(nbytes: float, workers: int, link: Any, *, servers: int = 1) -> float:
    """Seconds for ``workers`` to push ``nbytes`` of gradients to ``servers`` (the parameters
    sharded evenly over them) and pull ``nbytes`` of parameters back.

    Each server's link carries ``workers · n / servers`` bytes each way, each worker's
    ``n``; the slower side sets the time: ``2α + 2·max(workers/servers, 1)·n/B``. With one
    server this grows linearly with the workers, where a ring all-reduce does not (Li et
    al., *Scaling Distributed Machine Learning with the Parameter Server*, OSDI 2014,
    shard the parameters over many servers for this reason).

    >>> from perfmodel.hardware import Link
    >>> link = Link(name="toy", kind="other", bandwidth=1e9, latency=0.0, source="a toy")
    >>> parameter_server_time(1e9, 8, link), parameter_server_time(1e9, 8, link, servers=8)
    (16.0, 2.0)
    """
    nbytes = non_negative("nbytes", nbytes)
    workers, servers = count("workers", workers), count("servers", servers)
    model = as_link(link)
    fan_in = max(workers / servers, 1.0)
    return 2 * model.latency + 2 * fan_in * nbytes / model.bandwidth


def hierarchical_allreduce_time(
    nbytes: float, gpus_per_node: int, nodes: int, intra: Any, inter: Any
) -> float:
    """Seconds to all-reduce ``nbytes`` over ``nodes`` nodes of ``gpus_per_node`` GPUs each.

    Three phases: a ring reduce-scatter inside each node (``intra``, NVLink), then each GPU
    all-reduces its ``n / gpus_per_node`` share with its peers on the other nodes over its
    own network port (``inter``: one NIC per GPU, as in NVIDIA's DGX and HGX nodes), then a
    ring all-gather inside the node. Each network port carries ``1/gpus_per_node`` of the
    buffer, where a flat ring that treated every hop as a network hop would push all of it.

    >>> flat = allreduce_time(1e9, 64, "InfiniBand NDR")
    >>> tiered = hierarchical_allreduce_time(1e9, 8, 8, "NVLink 4", "InfiniBand NDR")
    >>> round(flat / tiered, 1)
    4.8
    """
    nbytes = non_negative("nbytes", nbytes)
    gpus, nodes = count("gpus_per_node", gpus_per_node), count("nodes", nodes)
    local, network = as_link(intra, argument="intra"), as_link(inter, argument="inter")
    inside = terms("reduce_scatter", gpus).time(nbytes, local)
    across = terms("allreduce", nodes).time(nbytes / gpus, network)
    return inside + across + terms("allgather", gpus).time(nbytes, local)


def algorithm_bandwidth(nbytes: float, seconds: float) -> float:
    """nccl-tests' *algbw*: the buffer size over the time, bytes/s.

    >>> algorithm_bandwidth(1e9, 0.01)
    100000000000.0
    """
    return non_negative("nbytes", nbytes) / positive("seconds", seconds)


def bus_factor(collective: str, p: int) -> float:
    """What nccl-tests multiply *algbw* by to get *busbw*: ``2(p-1)/p`` for an all-reduce,
    ``(p-1)/p`` for reduce-scatter, all-gather and all-to-all, 1 for a broadcast.

    *busbw* is the speed each rank's link actually ran at, so it can be compared with the
    link's one-direction bandwidth whatever p is.

    >>> bus_factor("allreduce", 8), bus_factor("allgather", 8), bus_factor("broadcast", 8)
    (1.75, 0.875, 1.0)
    """
    collective = choice("collective", collective, COLLECTIVES)
    p = count("p", p)
    if collective == "broadcast":
        return 1.0
    share = (p - 1) / p
    return 2 * share if collective == "allreduce" else share


def bus_bandwidth(algbw: float, p: int, collective: str = "allreduce") -> float:
    """nccl-tests' *busbw* from *algbw*: ``algbw · bus_factor(collective, p)``.

    >>> round(bus_bandwidth(240e9, 8) / 1e9)   # an 8-GPU all-reduce at 240 GB/s algbw
    420
    """
    return non_negative("algbw", algbw) * bus_factor(collective, p)
