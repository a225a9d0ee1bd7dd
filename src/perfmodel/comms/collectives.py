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
all-reduce (NVLS)              2                     (p+1)/p · n
reduce-scatter (ring)          p-1                   (p-1)/p · n
all-gather (ring)              p-1                   (p-1)/p · n
broadcast (tree)               ⌈log2 p⌉              ⌈log2 p⌉ · n
broadcast (scatter+allgather)  ⌈log2 p⌉ + p-1        2(p-1)/p · n
reduce (tree)                  ⌈log2 p⌉              ⌈log2 p⌉ · n
reduce (reduce-scatter+gather) ⌈log2 p⌉ + p-1        2(p-1)/p · n
all-to-all (pairwise)          p-1                   (p-1)/p · n
=============================  ====================  ====================

NVLS is NVLink SHARP: the NVSwitch adds the buffers itself. Each GPU sends its whole
buffer into the switch (every rank's slice is pulled through it once) and its reduced slice
back out to be multicast, and receives the same, ``(p+1)/p · n`` each way; Sylvain Jeaugey
gives this relation in NVIDIA/nccl-tests pull request 239 (2024): "algobw = busbw · n/(n+1)".

**Nameplate or measured.** A link's nameplate is its line rate; what NCCL reaches is less
(protocol overhead), and for NVLS it is set by the switch's reduction rate, not the wire. A
catalogue link can carry the *busbw* published runs reached per algorithm
(:attr:`perfmodel.hardware.Link.measured_busbw`, with its sources); every function here
takes ``ceiling="measured"`` (the default: that busbw where the link has one for the
algorithm, the nameplate otherwise) or ``ceiling="nameplate"``. A measured busbw prices the
bytes as nccl-tests defines it, ``bus_factor · n / busbw``, whatever the algorithm moves on
the wire; one measured on eight GPUs is assumed to hold for other rank counts.

A link is a :data:`perfmodel.hardware.LinkLike`: a catalogue name, a
:class:`perfmodel.hardware.Link`, or any object with ``bandwidth`` (B/s, one direction) and
``latency`` (s), so a link you measured yourself with :mod:`perfmodel.comms.bench` plugs
straight in. Each function resolves it once, with :func:`as_link`.

Examples
--------
>>> from perfmodel.comms.links import bus_bandwidth
>>> from perfmodel.hardware import Link
>>> link = Link(name="toy", kind="other", bandwidth=1e9, latency=1e-6, source="a toy")
>>> allreduce_time(1e9, 4, link)     # 2·3/4 · 1 s + 6 µs
1.500006
>>> nameplate = allreduce_time(2**30, 8, "NVLink 4", ceiling="nameplate")
>>> measured = allreduce_time(2**30, 8, "NVLink 4")    # the busbw NCCL's ring reaches
>>> [round(bus_bandwidth(2**30 / t, 8) / 1e9) for t in (nameplate, measured)]
[448, 369]
>>> bus_bandwidth(1e9 / 1.5, 4)      # nccl-tests' busbw: the link's own 1 GB/s
1000000000.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfmodel._validate import choice, count, non_negative

if TYPE_CHECKING:
    from perfmodel.hardware import LinkLike
from perfmodel.comms.links import (
    ALGORITHMS,
    COLLECTIVES,
    LinkModel,
    as_link,
    bus_factor,
)

__all__ = [
    "Terms",
    "allgather_time",
    "allreduce_time",
    "alltoall_time",
    "broadcast_time",
    "collective_time",
    "point_to_point_time",
    "reduce_scatter_time",
    "terms",
]


@dataclass(frozen=True, slots=True)
class Terms:
    """A collective's cost in the alpha-beta model: ``latencies · α + byte_factor · n / B``.

    Parameters
    ----------
    latencies : float
        Message latencies paid one after another, count.
    byte_factor : float
        Times the buffer crosses the slowest link per rank, count (a fraction for a ring).
    """

    latencies: float
    byte_factor: float

    def time(self, nbytes: float, link: LinkModel) -> float:
        """The collective's time for one buffer on one resolved link.

        Parameters
        ----------
        nbytes : float
            Each rank's buffer, B.
        link : LinkModel
            The link, already resolved (see :func:`as_link`).

        Returns
        -------
        float
            Seconds, s.
        """
        return self.latencies * link.latency + self.byte_factor * nbytes / link.bandwidth


def _log2_ceil(p: int) -> int:
    return math.ceil(math.log2(p)) if p > 1 else 0


def terms(collective: str, p: int, algorithm: str | None = None) -> Terms:
    """The latency count and byte factor of ``collective`` on ``p`` ranks (see the table above).

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall"}
        Which collective.
    p : int
        Ranks taking part, count.
    algorithm : str, optional
        One of :data:`ALGORITHMS` for that collective; its first by default.

    Returns
    -------
    Terms
        The latencies and byte factor; both zero on one rank.

    Examples
    --------
    >>> terms("allreduce", 8)
    Terms(latencies=14, byte_factor=1.75)
    >>> terms("allreduce", 8, "tree")
    Terms(latencies=6, byte_factor=6)
    >>> terms("allreduce", 8, "nvls")
    Terms(latencies=2, byte_factor=1.125)
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
        if algorithm == "nvls":
            return Terms(2, (p + 1) / p)
        return Terms(2 * steps, 2 * share) if algorithm == "ring" else Terms(2 * depth, 2 * depth)
    if collective in ("broadcast", "reduce"):  # a reduce is a broadcast run backwards
        if algorithm == "tree":
            return Terms(depth, depth)
        return Terms(depth + steps, 2 * share)
    return Terms(steps, share)  # reduce-scatter, all-gather, all-to-all


def collective_time(
    collective: str,
    nbytes: float,
    p: int,
    link: LinkLike,
    *,
    algorithm: str | None = None,
    ceiling: str = "measured",
) -> float:
    """The time of ``collective`` over ``p`` ranks, each holding ``nbytes``, on ``link``.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall"}
        Which collective.
    nbytes : float
        Each rank's buffer, B.
    p : int
        Ranks taking part, count.
    link : str, hardware.Link or hardware.LinkSpec
        The link between ranks (see :func:`as_link`).
    algorithm : str, optional
        One of :data:`ALGORITHMS` for that collective; its first by default.
    ceiling : {"measured", "nameplate"}
        Price the bytes at the busbw published runs reached with this algorithm, where the
        link has one (``bus_factor · n / busbw``), or at the line rate.

    Returns
    -------
    float
        Seconds, s.

    Examples
    --------
    >>> ring = collective_time("allreduce", 2**30, 8, "NVLink 4")
    >>> nvls = collective_time("allreduce", 2**30, 8, "NVLink 4", algorithm="nvls")
    >>> round(ring / nvls, 2)   # NVLink SHARP, as published: 480 GB/s busbw against 370
    1.3
    """
    nbytes = non_negative("nbytes", nbytes)
    cost = terms(collective, p, algorithm)
    model = as_link(link)
    chosen = ALGORITHMS[collective][0] if algorithm is None else algorithm
    if chosen == "nvls" and model.kind not in ("nvlink", "other"):
        raise ValueError(
            f"`algorithm` 'nvls' reduces inside an NVSwitch: it needs an NVLink link "
            f"(got {model.name!r}, a {model.kind} link)."
        )
    busbw = model.ceiling(chosen, ceiling)
    if busbw is None:
        return cost.time(nbytes, model)
    # a rate measured on 8 ranks, used on fewer, must not beat the wire itself
    measured = bus_factor(collective, p) * nbytes / busbw
    return cost.latencies * model.latency + max(
        measured, cost.byte_factor * nbytes / model.bandwidth
    )


def point_to_point_time(nbytes: float, link: LinkLike) -> float:
    """One message of ``nbytes`` from one rank to another: ``α + n/B``.

    Parameters
    ----------
    nbytes : float
        The message's size, B.
    link : str, hardware.Link or hardware.LinkSpec
        The link between ranks (see :func:`as_link`).

    Returns
    -------
    float
        Seconds, s.

    Examples
    --------
    >>> point_to_point_time(50e9, "InfiniBand NDR")
    1.0000006
    """
    return as_link(link).time(nbytes)


def allreduce_time(
    nbytes: float, p: int, link: LinkLike, *, algorithm: str = "ring", ceiling: str = "measured"
) -> float:
    """The time to all-reduce a buffer of ``nbytes`` over ``p`` ranks.

    Ring: ``2(p-1)/p · n/B + 2(p-1)·α`` (a reduce-scatter then an all-gather; bandwidth-
    optimal, latency grows with p). Tree: a binomial-tree reduce then broadcast,
    ``2⌈log2 p⌉·(α + n/B)`` (few latencies, but every step moves the whole buffer).

    Parameters
    ----------
    nbytes : float
        Each rank's buffer, B: the whole vector every rank ends with.
    p : int
        Ranks taking part, count.
    link : str, hardware.Link or hardware.LinkSpec
        The link between ranks (see :func:`as_link`).
    algorithm : {"ring", "tree", "nvls"}
        Which algorithm; NVLS (NVLink SHARP) reduces inside an NVSwitch.
    ceiling : {"measured", "nameplate"}
        The link's published busbw for the algorithm where it has one, or its line rate
        (see :func:`collective_time`).

    Returns
    -------
    float
        Seconds, s.

    Examples
    --------
    >>> round(allreduce_time(1e9, 8, "NVLink 4", ceiling="nameplate") * 1e3, 3)   # 1 GB, ms
    3.903
    >>> round(allreduce_time(1e9, 8, "NVLink 4") * 1e3, 3)   # at the busbw NCCL reaches
    4.744
    """
    return collective_time("allreduce", nbytes, p, link, algorithm=algorithm, ceiling=ceiling)


def reduce_scatter_time(
    nbytes: float, p: int, link: LinkLike, *, ceiling: str = "measured"
) -> float:
    """The time to reduce-scatter ``nbytes``: ring, ``(p-1)/p · n/B + (p-1)·α``.

    Parameters
    ----------
    nbytes : float
        Each rank's buffer, B before the collective; each ends with its ``1/p`` share, summed.
    p : int
        Ranks taking part, count.
    link : str, hardware.Link or hardware.LinkSpec
        The link between ranks (see :func:`as_link`).

    ceiling : {"measured", "nameplate"}
        The link's published busbw for the algorithm where it has one, or its line rate
        (see :func:`collective_time`).

    Returns
    -------
    float
        Seconds, s.
    """
    return collective_time("reduce_scatter", nbytes, p, link, ceiling=ceiling)


def allgather_time(nbytes: float, p: int, link: LinkLike, *, ceiling: str = "measured") -> float:
    """The time to all-gather an output of ``nbytes``: ring, ``(p-1)/p · n/B + (p-1)·α``.

    Parameters
    ----------
    nbytes : float
        The whole output each rank ends with, B (each contributes ``n/p``).
    p : int
        Ranks taking part, count.
    link : str, hardware.Link or hardware.LinkSpec
        The link between ranks (see :func:`as_link`).

    ceiling : {"measured", "nameplate"}
        The link's published busbw for the algorithm where it has one, or its line rate
        (see :func:`collective_time`).

    Returns
    -------
    float
        Seconds, s.
    """
    return collective_time("allgather", nbytes, p, link, ceiling=ceiling)


def broadcast_time(
    nbytes: float, p: int, link: LinkLike, *, algorithm: str = "tree", ceiling: str = "measured"
) -> float:
    """The time to broadcast ``nbytes`` from one rank to the others.

    A binomial tree takes ``⌈log2 p⌉(α + n/B)``; for long messages a scatter then an
    all-gather takes ``(⌈log2 p⌉ + p - 1)α + 2(p-1)/p · n/B``.

    Parameters
    ----------
    nbytes : float
        The buffer the root sends, B.
    p : int
        Ranks taking part, count.
    link : str, hardware.Link or hardware.LinkSpec
        The link between ranks (see :func:`as_link`).
    algorithm : {"tree", "scatter_allgather"}
        Which algorithm.

    ceiling : {"measured", "nameplate"}
        The link's published busbw for the algorithm where it has one, or its line rate
        (see :func:`collective_time`).

    Returns
    -------
    float
        Seconds, s.
    """
    return collective_time("broadcast", nbytes, p, link, algorithm=algorithm, ceiling=ceiling)


def alltoall_time(nbytes: float, p: int, link: LinkLike, *, ceiling: str = "measured") -> float:
    """The time of an all-to-all: pairwise exchange, ``(p-1)/p · n/B + (p-1)·α``.

    Parameters
    ----------
    nbytes : float
        What each rank sends in all, B (``n/p`` to each rank).
    p : int
        Ranks taking part, count.
    link : str, hardware.Link or hardware.LinkSpec
        The link between ranks (see :func:`as_link`).

    ceiling : {"measured", "nameplate"}
        The link's published busbw for the algorithm where it has one, or its line rate
        (see :func:`collective_time`).

    Returns
    -------
    float
        Seconds, s.
    """
    return collective_time("alltoall", nbytes, p, link, ceiling=ceiling)
