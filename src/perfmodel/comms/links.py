"""A link as the collectives see it, and the bandwidth nccl-tests reports.

:class:`LinkModel` is one link resolved once (:func:`as_link`): its latency, its line rate and
the bus bandwidth published runs reached on it per algorithm (:data:`CEILINGS`: ``"measured"``
or ``"nameplate"``). :data:`ALGORITHMS` names the algorithms each collective may use.
:func:`algorithm_bandwidth`, :func:`bus_factor` and :func:`bus_bandwidth` are nccl-tests'
definitions: a buffer over its time, and that rate scaled to what each rank's busiest link
carries, so one number compares collectives and rank counts.

Examples
--------
>>> as_link("InfiniBand NDR").bandwidth
50000000000.0
>>> bus_factor("allreduce", 8)     # 2(p-1)/p
1.75
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING

from perfmodel._validate import choice, count, describe, non_negative, positive

if TYPE_CHECKING:
    from perfmodel.hardware import LinkLike

__all__ = [
    "ALGORITHMS",
    "CEILINGS",
    "COLLECTIVES",
    "NCCL_CHUNK_BYTES",
    "LinkModel",
    "algorithm_bandwidth",
    "as_link",
    "bus_bandwidth",
    "bus_factor",
]

#: The collectives, with the algorithms each may use (the first is the default).
ALGORITHMS: dict[str, tuple[str, ...]] = {
    "allreduce": ("ring", "tree", "nvls"),
    "reduce_scatter": ("ring",),
    "allgather": ("ring",),
    "broadcast": ("tree", "scatter_allgather"),
    "reduce": ("tree", "reduce_scatter_gather"),
    "alltoall": ("pairwise",),
}

COLLECTIVES = tuple(ALGORITHMS)

#: What a link's bandwidth is taken to be: what published runs reached, or the line rate.
CEILINGS = ("measured", "nameplate")

_EVERY_ALGORITHM = tuple(dict.fromkeys(a for options in ALGORITHMS.values() for a in options))

#: NCCL's chunk of a pipelined collective: its default ``NCCL_BUFFSIZE``, 4 MiB.
NCCL_CHUNK_BYTES = 4 * 2**20


@dataclass(frozen=True, slots=True)
class LinkModel:
    """The two numbers of the alpha-beta model, with the name of what they came from.

    Parameters
    ----------
    bandwidth : float
        Bytes per second in one direction, B/s.
    latency : float
        Seconds per message, s.
    name : str
        What the numbers came from (a catalogue link's name, say).
    kind : str
        The link's kind (:data:`perfmodel.hardware.LINK_KINDS`); ``"other"`` when unknown.
    measured_busbw : mapping of str to float
        The busbw published runs reached per algorithm, B/s (empty when none).
    """

    bandwidth: float
    latency: float
    name: str = "link"
    kind: str = "other"
    measured_busbw: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        set_(self, "bandwidth", positive("bandwidth", self.bandwidth))
        set_(self, "latency", non_negative("latency", self.latency))
        if not isinstance(self.measured_busbw, Mapping):
            raise TypeError(
                f"`measured_busbw` must be a mapping of algorithm to B/s "
                f"(got {type(self.measured_busbw).__name__})."
            )
        measured = {}
        if self.measured_busbw:
            from perfmodel.hardware import BUS_ALGORITHMS  # only then: keep comms' import light
        for algorithm, rate in self.measured_busbw.items():
            key = choice("measured_busbw", algorithm, BUS_ALGORITHMS)
            measured[key] = positive(f"measured_busbw[{algorithm!r}]", rate)
        if measured.get("ring", 0.0) > self.bandwidth:
            raise ValueError(
                f"`measured_busbw['ring']` must be at most the line rate {self.bandwidth:g} B/s "
                f"(got {measured['ring']:g})."
            )
        set_(self, "measured_busbw", MappingProxyType(measured))

    def ceiling(self, algorithm: str, ceiling: str = "measured") -> float | None:
        """The measured busbw to price ``algorithm`` at, or None to use the nameplate.

        Parameters
        ----------
        algorithm : str
            The collective's algorithm (``"ring"``, ``"nvls"``, ...).
        ceiling : {"measured", "nameplate"}
            Which ceiling was asked for.

        Returns
        -------
        float or None
            The busbw, B/s, when ``ceiling`` is ``"measured"`` and the link has one for
            ``algorithm``; None otherwise.
        """
        ceiling = choice("ceiling", ceiling, CEILINGS)
        algorithm = choice("algorithm", algorithm, _EVERY_ALGORITHM)
        return self.measured_busbw.get(algorithm) if ceiling == "measured" else None

    def ring_rate(self, ceiling: str = "measured") -> float:
        """The rate a ring runs each link at: its measured ring busbw at the measured
        ceiling where it has one, else its line rate.

        Parameters
        ----------
        ceiling : {"measured", "nameplate"}
            Which ceiling.

        Returns
        -------
        float
            B/s.
        """
        return self.ceiling("ring", ceiling) or self.bandwidth

    def time(self, nbytes: float) -> float:
        """One message's time: ``latency + nbytes / bandwidth``.

        Parameters
        ----------
        nbytes : float
            The message's size, B.

        Returns
        -------
        float
            Seconds, s.
        """
        return self.latency + non_negative("nbytes", nbytes) / self.bandwidth


def as_link(link: LinkLike, *, argument: str = "link") -> LinkModel:
    """A link-like as a checked :class:`LinkModel`: how every model resolves a link, once.

    Parameters
    ----------
    link : str, hardware.Link or hardware.LinkSpec
        A catalogue name, a :class:`~perfmodel.hardware.Link`, or any object with
        ``bandwidth`` (B/s, one direction) and ``latency`` (s). A :class:`LinkModel`
        passes through unchanged.
    argument : str
        What the caller called it, for error messages (``"intra_link"``, say).

    Returns
    -------
    LinkModel
        The link's bandwidth and latency, checked, with its name.

    Raises
    ------
    TypeError
        If ``link`` is not a string and lacks ``bandwidth`` or ``latency``, or they are
        not numbers.
    ValueError
        If no catalogue link has that name, the bandwidth is not positive or the latency
        is negative.

    Examples
    --------
    >>> as_link("InfiniBand NDR").bandwidth
    50000000000.0
    >>> as_link(3.0)
    Traceback (most recent call last):
    ...
    TypeError: `link` must be a catalogue link name or an object with `bandwidth` and ...
    """
    from perfmodel.hardware import get_link

    given: object = link  # callers that mypy does not check may pass anything
    if isinstance(given, LinkModel):
        return given
    if isinstance(given, str):
        given = get_link(given, argument=argument)
    if not (hasattr(given, "bandwidth") and hasattr(given, "latency")):
        raise TypeError(
            f"`{argument}` must be a catalogue link name or an object with `bandwidth` and "
            f"`latency` (got {type(given).__name__} {describe(given)})."
        )
    bandwidth = positive(f"{argument}.bandwidth", given.bandwidth)
    latency = non_negative(f"{argument}.latency", given.latency)
    measured = getattr(given, "measured_busbw", None)
    try:
        return LinkModel(
            bandwidth=bandwidth,
            latency=latency,
            name=str(getattr(given, "name", argument)),
            kind=str(getattr(given, "kind", "other")),
            measured_busbw={} if measured is None else measured,
        )
    except (TypeError, ValueError) as error:  # its measured rates: name the argument
        raise type(error)(f"`{argument}`: {error}") from None


def algorithm_bandwidth(nbytes: float, seconds: float) -> float:
    """nccl-tests' *algbw*: the buffer size over the time.

    Parameters
    ----------
    nbytes : float
        Each rank's buffer, B.
    seconds : float
        The collective's measured time, s.

    Returns
    -------
    float
        *algbw*, B/s.

    Examples
    --------
    >>> algorithm_bandwidth(1e9, 0.01)
    100000000000.0
    """
    return non_negative("nbytes", nbytes) / positive("seconds", seconds)


def bus_factor(collective: str, p: int) -> float:
    """What nccl-tests multiply *algbw* by to get *busbw*.

    That is ``2(p-1)/p`` for an all-reduce, ``(p-1)/p`` for reduce-scatter, all-gather and
    all-to-all, 1 for a broadcast or a reduce. *busbw* is the speed each rank's link actually
    ran at, so it can be compared with the link's one-direction bandwidth whatever p is.

    Parameters
    ----------
    collective : {"allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall"}
        Which collective.
    p : int
        Ranks taking part, count.

    Returns
    -------
    float
        The factor, dimensionless.

    Examples
    --------
    >>> bus_factor("allreduce", 8), bus_factor("allgather", 8), bus_factor("broadcast", 8)
    (1.75, 0.875, 1.0)
    """
    collective = choice("collective", collective, COLLECTIVES)
    p = count("p", p)
    if collective in ("broadcast", "reduce"):
        return 1.0
    share = (p - 1) / p
    return 2 * share if collective == "allreduce" else share


def bus_bandwidth(algbw: float, p: int, collective: str = "allreduce") -> float:
    """nccl-tests' *busbw* from *algbw*: ``algbw · bus_factor(collective, p)``.

    Parameters
    ----------
    algbw : float
        The algorithm bandwidth, B/s (see :func:`algorithm_bandwidth`).
    p : int
        Ranks taking part, count.
    collective : {"allreduce", "reduce_scatter", "allgather", "broadcast", "reduce", "alltoall"}
        Which collective.

    Returns
    -------
    float
        *busbw*, B/s.

    Examples
    --------
    >>> round(bus_bandwidth(240e9, 8) / 1e9)   # an 8-GPU all-reduce at 240 GB/s algbw
    420
    """
    return non_negative("algbw", algbw) * bus_factor(collective, p)
