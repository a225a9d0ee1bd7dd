"""Collectives along one axis of a ring or torus, counted hop by hop.

A TPU pod slice is a torus: each chip has a full-duplex link to its neighbours along
every axis, and an axis either wraps around (a ring) or stops at its ends (a line). A
collective along one axis moves shards from neighbour to neighbour; every hop costs one
link latency plus one shard over one link direction. Counting hops this way is how
Austin et al., *How to Scale Your Model* (the JAX scaling book), cost collectives on ICI:

* all-gather or reduce-scatter, each device holding a shard of ``n/p``: with wraparound,
  shards travel both ways round the ring, ``⌈(p-1)/2⌉`` hops; without, the device at one
  end waits for the shard from the other, ``p-1`` hops;
* all-reduce: a reduce-scatter then an all-gather, twice that.

With wraparound that is about ``n / (2B)`` for an all-gather whatever ``p`` is: the
scaling book's ``bytes / W_ici``, with ``W_ici = 2B`` its both-direction bandwidth.

>>> from perfmodel.hardware import Link
>>> ici = Link(name="toy ICI", kind="other", bandwidth=45e9, latency=1e-6, source="a toy")
>>> ring, line = Axis(8, ici), Axis(8, ici, wraparound=False)
>>> ring.hops("allgather"), line.hops("allgather")
(4, 7)
>>> round(line.time("allgather", 1e9) / ring.time("allgather", 1e9), 2)
1.75
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfmodel._validate import choice, count, flag, non_negative
from perfmodel.comms.collectives import LinkModel, as_link

if TYPE_CHECKING:
    from perfmodel.hardware import LinkLike

__all__ = ["AXIS_COLLECTIVES", "Axis"]

AXIS_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")


@dataclass(frozen=True, slots=True, init=False)
class Axis:
    """One axis of a mesh: ``size`` devices joined by full-duplex ``link`` s, ring or line.

    Parameters
    ----------
    size : int
        Devices along the axis, count.
    link : str, hardware.Link or hardware.LinkSpec
        Each neighbour link: bandwidth in one direction (B/s), latency per hop (s); resolved
        once by :func:`~perfmodel.comms.as_link`.
    wraparound : bool
        True for a ring (a torus axis), False for a line.
    """

    size: int
    link: LinkModel
    wraparound: bool

    def __init__(self, size: int, link: LinkLike, *, wraparound: bool = True) -> None:
        object.__setattr__(self, "size", count("size", size))
        object.__setattr__(self, "link", as_link(link))
        object.__setattr__(self, "wraparound", flag("wraparound", wraparound))

    def hops(self, collective: str) -> int:
        """Neighbour-to-neighbour steps ``collective`` takes along the axis.

        Parameters
        ----------
        collective : {"allgather", "reduce_scatter", "allreduce"}
            Which collective.

        Returns
        -------
        int
            Hops one after another, count.
        """
        collective = choice("collective", collective, AXIS_COLLECTIVES)
        one_way = math.ceil((self.size - 1) / 2) if self.wraparound else self.size - 1
        return 2 * one_way if collective == "allreduce" else one_way

    def time(self, collective: str, nbytes: float) -> float:
        """The time of ``collective`` along the axis: ``hops · (α + (n/p)/B)``.

        Parameters
        ----------
        collective : {"allgather", "reduce_scatter", "allreduce"}
            Which collective.
        nbytes : float
            The whole array on each device after an all-gather (before a reduce-scatter), B.

        Returns
        -------
        float
            Seconds, s.
        """
        nbytes = non_negative("nbytes", nbytes)
        shard = nbytes / self.size
        return self.hops(collective) * (self.link.latency + shard / self.link.bandwidth)
