"""Collectives along the axes of a mesh, counted hop by hop: tori, lines and switches.

A TPU pod slice is a torus: each chip has its own full-duplex link to each neighbour along
every axis, and an axis either wraps around (a ring) or stops at its ends (a line). A GPU
node is a switch: each GPU has one port into the NVSwitch (or one NIC into the network),
and NCCL's ring runs one way round. A collective along one axis moves shards from
neighbour to neighbour, and every hop costs one link latency. Counting hops this way is how
Austin et al., *How to Scale Your Model* (the JAX scaling book), cost collectives on ICI:

* all-gather or reduce-scatter, each device holding a shard of ``n/p``: round a torus ring,
  shards travel both ways, ``⌈(p-1)/2⌉`` hops; along a line, the device at one end waits
  for the shard from the other, ``p-1`` hops; through a switch, one way round, ``p-1``
  hops (the alpha-beta ring of :func:`perfmodel.comms.allgather_time`, exactly);
* all-reduce: a reduce-scatter then an all-gather, twice that.

The bytes are counted as the best schedule moves them: each device must receive the
``(p-1)/p · n`` it lacks, over the link directions it has, so ``(p-1)/p · n / (2B)`` round
a torus ring (each shard split in two halves that go opposite ways) and ``(p-1)/p · n / B``
along a line or through a switch. Round a ring that is about ``n / (2B)`` whatever ``p``
is: the scaling book's ``bytes / W_ici``, with ``W_ici = 2B`` its both-direction bandwidth
(the book drops the ``(p-1)/p``, a quarter at ``p = 4``).

A collective over several axes at once (the book's ``AllGather_XY``) is
:func:`over_axes`: the data is split into parts that cross the axes in different orders,
at the same time, so every axis's links work at once; for two equal torus axes that is the
book's ``bytes / (2 · W_ici)``, less the ``1/P`` each device already holds.

Whether latency and transfer add (``combine="sum"``, the default: one hop's latency is
paid before its shard can move on) or the larger of the two counts (``combine="max"``, the
scaling book's convention, which assumes they overlap perfectly) is a choice every function
here takes.

>>> from perfmodel.hardware import Link
>>> ici = Link(name="toy ICI", kind="ici", bandwidth=45e9, latency=1e-6, source="a toy")
>>> ring, line = Axis(8, ici), Axis(8, ici, wraparound=False)
>>> ring.hops("allgather"), line.hops("allgather")
(4, 7)
>>> round(line.time("allgather", 1e9) / ring.time("allgather", 1e9), 2)
2.0
>>> round(over_axes("allgather", 1e9, [ring, ring]) / ring.time("allgather", 1e9), 2)
0.56
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfmodel._validate import choice, count, flag, non_negative
from perfmodel.comms.links import LinkModel, as_link

if TYPE_CHECKING:
    from perfmodel.hardware import LinkLike

__all__ = ["AXIS_COLLECTIVES", "COMBINE", "Axis", "over_axes"]

AXIS_COLLECTIVES = ("allgather", "reduce_scatter", "allreduce")
#: How latency and transfer combine: added, or the larger of the two (the scaling book's).
COMBINE = ("sum", "max")
_MOST_AXES = 6  # orderings grow as k!: 720 at six axes


@dataclass(frozen=True, slots=True, init=False)
class Axis:
    """One axis of a mesh: ``size`` devices joined by ``link`` s, as a ring, line or switch.

    Parameters
    ----------
    size : int
        Devices along the axis, count.
    link : str, hardware.Link or hardware.LinkSpec
        Each link: bandwidth in one direction (B/s), latency per hop (s); resolved once by
        :func:`~perfmodel.comms.as_link`.
    wraparound : bool
        True for a ring (a torus axis), False for a line. Ignored through a switch.
    switched : bool
        True when each device has one port into a switch (NVSwitch, a network fabric)
        rather than its own link to each neighbour: a ring then runs one way round,
        ``p-1`` hops, as NCCL's does.
    ceiling : {"measured", "nameplate"}
        Each hop at the ring busbw published runs reached on the link, where it has one
        (:attr:`perfmodel.hardware.Link.measured_busbw`), or at its line rate.
    """

    size: int
    link: LinkModel
    wraparound: bool
    switched: bool
    bandwidth: float

    def __init__(
        self,
        size: int,
        link: LinkLike,
        *,
        wraparound: bool = True,
        switched: bool = False,
        ceiling: str = "measured",
    ) -> None:
        model = as_link(link)
        object.__setattr__(self, "size", count("size", size))
        object.__setattr__(self, "link", model)
        object.__setattr__(self, "wraparound", flag("wraparound", wraparound))
        object.__setattr__(self, "switched", flag("switched", switched))
        object.__setattr__(self, "bandwidth", model.ring_rate(ceiling))

    @property
    def directions(self) -> int:
        """Link directions a device receives on along the axis: 2 round a torus ring of three
        or more, else 1 (two devices share one link, whichever way round)."""
        return 2 if self.wraparound and not self.switched and self.size > 2 else 1

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
        both_ways = self.directions == 2
        one_way = math.ceil((self.size - 1) / 2) if both_ways else self.size - 1
        return 2 * one_way if collective == "allreduce" else one_way

    def transfer_time(self, collective: str, nbytes: float) -> float:
        """The bandwidth part of :meth:`time`: ``(p-1)/p · n / (directions · B)``, twice that
        for an all-reduce, ``B`` :attr:`bandwidth`.

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
        collective = choice("collective", collective, AXIS_COLLECTIVES)
        nbytes = non_negative("nbytes", nbytes)
        passes = 2 if collective == "allreduce" else 1
        share = (self.size - 1) / self.size
        return passes * share * nbytes / (self.directions * self.bandwidth)

    def time(self, collective: str, nbytes: float, *, combine: str = "sum") -> float:
        """The time of ``collective`` along the axis: ``hops · α`` and :meth:`transfer_time`.

        Parameters
        ----------
        collective : {"allgather", "reduce_scatter", "allreduce"}
            Which collective.
        nbytes : float
            The whole array on each device after an all-gather (before a reduce-scatter), B.
        combine : {"sum", "max"}
            Add the hops' latencies to the transfer, or take the larger of the two.

        Returns
        -------
        float
            Seconds, s.
        """
        combine = choice("combine", combine, COMBINE)
        latency = self.hops(collective) * self.link.latency
        return _combined(latency, self.transfer_time(collective, nbytes), combine)


def _combined(latency: float, transfer: float, combine: str) -> float:
    return latency + transfer if combine == "sum" else max(latency, transfer)


def over_axes(
    collective: str, nbytes: float, axes: Sequence[Axis], *, combine: str = "sum"
) -> float:
    """The time of ``collective`` over several mesh axes at once (``AllGather_XY``).

    The buffer is split into parts, one per order of the axes; each part is gathered axis
    by axis in its order (a part that crosses X first moves ``n/P · p_X`` bytes per device
    over X, then ``p_Y`` times more over Y), and all parts move at once, so every axis's
    links work in parallel. How much goes in each order is chosen to finish soonest: a
    small linear program (scipy's HiGHS) minimising the busiest axis's seconds. For two
    equal torus axes the split is even and the time is ``(1 - 1/P) · n / (4B)``, the
    scaling book's ``bytes / (2 · W_ici)`` less its ``1/P``; for an NVLink axis and a slow
    network axis, all of it
    crosses the network first while each device holds only its shard, the hierarchical
    all-reduce's order, pipelined. A reduce-scatter mirrors an all-gather; an all-reduce is
    both. The latency is every axis's hops in turn, once.

    Parameters
    ----------
    collective : {"allgather", "reduce_scatter", "allreduce"}
        Which collective.
    nbytes : float
        The whole array on each device after an all-gather (before a reduce-scatter), B.
    axes : sequence of Axis
        The axes the collective spans (at most six); axes of one device are skipped.
    combine : {"sum", "max"}
        Add the latency to the transfer, or take the larger of the two.

    Returns
    -------
    float
        Seconds, s; :meth:`Axis.time` for a single axis.

    Examples
    --------
    >>> from perfmodel.hardware import Link
    >>> ici = Link(name="toy ICI", kind="ici", bandwidth=1e9, latency=0.0, source="a toy")
    >>> round(over_axes("allgather", 1e9, [Axis(16, ici), Axis(16, ici)]), 3)   # (1-1/P) n/(4B)
    0.249
    """
    collective = choice("collective", collective, AXIS_COLLECTIVES)
    nbytes = non_negative("nbytes", nbytes)
    combine = choice("combine", combine, COMBINE)
    if isinstance(axes, Axis) or not isinstance(axes, Sequence):
        raise TypeError(f"`axes` must be a sequence of Axis (got {type(axes).__name__}).")
    for i, axis in enumerate(axes):
        if not isinstance(axis, Axis):
            raise TypeError(f"`axes[{i}]` must be an Axis (got {type(axis).__name__}).")
    active = [axis for axis in axes if axis.size > 1]
    if len(active) > _MOST_AXES:
        raise ValueError(f"`axes` must span at most {_MOST_AXES} axes (got {len(active)}).")
    if len(active) <= 1:
        return active[0].time(collective, nbytes, combine=combine) if active else 0.0
    latency = sum(axis.hops(collective) * axis.link.latency for axis in active)
    passes = 2 if collective == "allreduce" else 1
    transfer = passes * _busiest_axis_seconds(nbytes, active)
    return _combined(latency, transfer, combine)


def _busiest_axis_seconds(nbytes: float, axes: list[Axis]) -> float:
    """An all-gather's seconds on its busiest axis, the parts' orders chosen to minimise it."""
    import numpy as np
    from scipy.optimize import linprog

    k = len(axes)
    orders = list(itertools.permutations(range(k)))
    seconds = np.zeros((k, len(orders)))  # seconds[axis, order]: that order's whole buffer
    for column, order in enumerate(orders):
        held = nbytes / math.prod(axis.size for axis in axes)
        for index in order:
            held *= axes[index].size
            seconds[index, column] = axes[index].transfer_time("allgather", held)
    scale = float(seconds.max())
    if scale == 0.0 or not math.isfinite(scale):  # nothing to move, or too much to price
        return scale
    seconds /= scale  # the LP in units of its largest entry: HiGHS's tolerances are absolute
    # minimise t over shares w >= 0, sum(w) = 1, seconds @ w <= t on every axis
    cost = np.r_[np.zeros(len(orders)), 1.0]
    upper = np.c_[seconds, -np.ones(k)]
    equal = np.r_[np.ones(len(orders)), 0.0][None, :]
    found = linprog(cost, A_ub=upper, b_ub=np.zeros(k), A_eq=equal, b_eq=[1.0], method="highs")
    if not found.success:  # a feasible, bounded LP: HiGHS failing is a bug worth hearing
        raise RuntimeError(f"HiGHS could not split the collective: {found.message}")
    return float(found.x[-1]) * scale
