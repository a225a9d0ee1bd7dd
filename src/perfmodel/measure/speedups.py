"""Measured speedups, and whether each can be trusted.

* :class:`ScalingPoint`: one operation at one length on some threads, against one thread;
  :func:`speedup_share` sets one operation's speedups beside another's.
* :class:`BranchPoint`: two independent branches, in turn and at once.
* :class:`ScalingRun`: every sample of one workload at each thread count, what
  :func:`perfmodel.scaling.fit_amdahl` and :func:`perfmodel.scaling.fit_gustafson` take.
* :func:`untrusted`: how many points cannot be trusted, and why; every point and run says
  when its measurements were too disturbed to support a conclusion (``doubt``).

:mod:`~perfmodel.measure.scaling_runs` measures them; :mod:`~perfmodel.measure.payoff` reads
them.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass

from perfmodel._validate import count
from perfmodel.measure.timing import Measurement

__all__ = [
    "BranchPoint",
    "ScalingPoint",
    "ScalingRun",
    "speedup_share",
    "untrusted",
]


def _doubts(*measurements: Measurement | None) -> str:
    """Why a result computed from ``measurements`` cannot be trusted, the worst case of each
    reason (the widest spread, the longest wait); empty when every one can be.

    A measurement is *noisy* when its samples disagree: their spread (interquartile range over
    median) passes :data:`perfmodel.measure.timing.NOISY_SPREAD`. It is *busy* when other
    programs used more than :data:`perfmodel.measure.timing.BUSY_OTHERS` of its cores meanwhile.

    >>> quiet = Measurement(samples_s=[1.0], inner_loops=1, contention=0.0, others=0.0)
    >>> busy = Measurement(samples_s=[1.0], inner_loops=1, contention=0.5, others=0.6)
    >>> _doubts(quiet, busy, Measurement(samples_s=[1.0], inner_loops=1, others=0.3))
    'busy, other programs used up to 60% of the CPUs'
    >>> _doubts(Measurement(samples_s=[1.0, 1.6, 1.0, 1.9], inner_loops=1))
    'noisy, spread up to 52%'
    """
    found = [m for m in measurements if m is not None]
    reasons = []
    if any(m.noisy for m in found):
        spread = max(m.spread for m in found if m.noisy)
        reasons.append(f"noisy, spread up to {spread:.0%}")
    if any(m.busy for m in found):
        others = [m.others for m in found if m.busy and m.others is not None]
        if others:
            reasons.append(f"busy, other programs used up to {max(others):.0%} of the CPUs")
        else:
            waited = max(m.contention or 0.0 for m in found if m.busy)
            reasons.append(f"busy, waited for a core up to {waited:.0%} of the time")
    return "; ".join(reasons)


def _kinds(*measurements: Measurement | None) -> tuple[str, ...]:
    """Which of "noisy" and "busy" apply to any of ``measurements``."""
    found = [m for m in measurements if m is not None]
    return tuple(
        kind
        for kind, hit in (
            ("noisy", any(m.noisy for m in found)),
            ("busy", any(m.busy for m in found)),
        )
        if hit
    )


def untrusted(items: Sequence[ScalingPoint | BranchPoint], noun: str) -> str:
    """How many of ``items`` cannot be trusted, and why, in words; empty when all can.

    Parameters
    ----------
    items : sequence of ScalingPoint or BranchPoint
        The points; each one's ``kinds`` says whether it is noisy or busy.
    noun : str
        What to call the items in the sentence (``"widths"``, ``"speedups"``).

    Returns
    -------
    str
        ``"k of n <noun> not trusted (noisy, busy)"``, or ``""`` when none is flagged.

    Examples
    --------
    >>> quiet = Measurement(samples_s=[1.0, 1.0, 1.0], inner_loops=1)
    >>> noisy = Measurement(samples_s=[1.0, 1.6, 1.0, 1.9], inner_loops=1)
    >>> untrusted([BranchPoint(16, quiet, quiet), BranchPoint(32, quiet, noisy)], "widths")
    '1 of 2 widths not trusted (noisy)'
    >>> untrusted([BranchPoint(16, quiet, quiet)], "widths")
    ''
    """
    flagged = [item for item in items if item.kinds]
    if not flagged:
        return ""
    kinds = [kind for kind in ("noisy", "busy") if any(kind in item.kinds for item in flagged)]
    return f"{len(flagged)} of {len(items)} {noun} not trusted ({', '.join(kinds)})"


@dataclass(frozen=True, slots=True)
class ScalingPoint:
    """One operation at one length on some threads, and its speedup over one thread.

    Parameters
    ----------
    operation : str
        The operation's name (``"sin"``, ``"cumsum"``).
    n : int
        Elements it ran over, count.
    threads : int
        Threads it ran on, count.
    measurement : Measurement
        Its time on ``threads``.
    speedup : float
        The one-thread time over this one, dimensionless (:func:`operation_scaling` divides
        the fastest samples).
    baseline : Measurement or None
        The one-thread measurement the speedup divides by; None where not kept.
    """

    operation: str
    n: int
    threads: int
    measurement: Measurement
    speedup: float
    baseline: Measurement | None = None

    @property
    def doubt(self) -> str:
        """Why this speedup cannot be trusted (its or the baseline's measurement was noisy,
        or the machine busy); empty when it can."""
        return _doubts(self.measurement, self.baseline)

    @property
    def kinds(self) -> tuple[str, ...]:
        """Which of "noisy" and "busy" make this speedup untrustworthy (empty: neither)."""
        return _kinds(self.measurement, self.baseline)


def speedup_share(
    points: Sequence[ScalingPoint], operation: str, reference: str, threads: int
) -> list[tuple[int, float, str]]:
    """At each length measured, ``operation``'s speedup on ``threads`` as a share of
    ``reference``'s, and why either cannot be trusted (empty when both can).

    Parameters
    ----------
    points : sequence of ScalingPoint
        What :func:`operation_scaling` measured.
    operation : str
        The operation whose speedup is the numerator (``"cumsum"``).
    reference : str
        The operation whose speedup is the denominator (``"sin"``).
    threads : int
        The thread count compared, count (at least 1).

    Returns
    -------
    list of tuple of (int, float, str)
        One ``(length, share, doubt)`` per length both operations were measured at on
        ``threads``, ascending: the length (count), the share (dimensionless; above 1 when
        ``operation`` gains more), and why the four measurements behind it cannot be trusted
        (``""`` when they can).

    Raises
    ------
    ValueError
        If no length holds both operations on ``threads`` threads.

    Examples
    --------
    >>> from perfmodel.measure.timing import Measurement
    >>> m = Measurement(samples_s=[1.0], inner_loops=1, contention=0.0)
    >>> points = [ScalingPoint("sin", 10, 2, m, 1.6), ScalingPoint("cumsum", 10, 2, m, 0.4)]
    >>> speedup_share(points, "cumsum", "sin", 2)
    [(10, 0.25, '')]
    """
    threads = count("threads", threads)
    by = {(p.operation, p.n): p for p in points if p.threads == threads}
    lengths = sorted(
        {n for op, n in by if op == operation} & {n for op, n in by if op == reference}
    )
    if not lengths:
        raise ValueError(
            f"`points` must hold {operation!r} and {reference!r} at a common length on "
            f"{threads} threads (got none)."
        )
    return [
        (
            n,
            by[operation, n].speedup / by[reference, n].speedup,
            _doubts(
                by[operation, n].measurement,
                by[operation, n].baseline,
                by[reference, n].measurement,
                by[reference, n].baseline,
            ),
        )  # fmt: skip
        for n in lengths
    ]


@dataclass(frozen=True, slots=True)
class BranchPoint:
    """Two independent branches of width ``n``, run in turn and at once.

    Parameters
    ----------
    n : int
        The width of each branch's ``n × n`` blocks, count.
    sequential : Measurement
        The time of both branches run one after another.
    concurrent : Measurement
        The time of both branches run at once, one thread each.
    """

    n: int
    sequential: Measurement
    concurrent: Measurement

    @property
    def speedup(self) -> float:
        """The fastest sample in turn over the fastest at once, dimensionless."""
        return self.sequential.minimum_s / self.concurrent.minimum_s

    @property
    def doubt(self) -> str:
        """Why this speedup cannot be trusted; empty when it can."""
        return _doubts(self.sequential, self.concurrent)

    @property
    def kinds(self) -> tuple[str, ...]:
        """Which of "noisy" and "busy" make this speedup untrustworthy (empty: neither)."""
        return _kinds(self.sequential, self.concurrent)


@dataclass(frozen=True, slots=True)
class ScalingRun:
    """Every sample of one workload at each thread count: what :func:`perfmodel.scaling.fit_amdahl`
    and :func:`perfmodel.scaling.fit_gustafson` take.

    Parameters
    ----------
    label : str
        What was measured.
    measurements : tuple of Measurement
        One per thread count, each recording its count in ``threads`` (None reads as 1).
    """

    label: str
    measurements: tuple[Measurement, ...]

    @property
    def processors(self) -> list[int]:
        """One entry per sample: the thread count it ran on."""
        return [m.threads or 1 for m in self.measurements for _ in m.samples_s]

    @property
    def times(self) -> list[float]:
        """Seconds per call of every sample, in the order of :attr:`processors`."""
        return [t for m in self.measurements for t in m.samples_s]

    def speedup(self, threads: int) -> float:
        """Median one-thread time over the median time on ``threads``: the typical sample,
        as the fits, which take every sample, see it.

        Parameters
        ----------
        threads : int
            A thread count that was measured, count.

        Returns
        -------
        float
            The speedup, dimensionless.

        Raises
        ------
        TypeError
            If ``threads`` is not an integer.
        ValueError
            If no measurement ran on ``threads``, or none on one thread; the message lists
            the counts measured.
        """
        threads = self._measured(threads)
        by = {m.threads or 1: m.median_s for m in self.measurements}
        return by[1] / by[threads]

    def _measured(self, threads: object) -> int:
        """``threads`` checked: a count this run measured, and one thread measured too."""
        threads = count("threads", threads)
        measured = sorted({m.threads or 1 for m in self.measurements})
        listed = ", ".join(map(str, measured)) or "none"
        if threads not in measured:
            raise ValueError(
                f"`threads` must be a measured thread count, one of {listed} (got {threads})."
            )
        if 1 not in measured:
            raise ValueError(
                f"{self.label!r} has no measurement on one thread, which a speedup divides "
                f"by (measured: {listed})."
            )
        return threads

    def scaled_speedup(self, threads: int) -> float:
        """For weak scaling, where the work grows with the threads: the median of
        ``threads × T1 / T`` over the samples on ``threads`` (``T1`` the median one-thread time),
        the number :func:`perfmodel.scaling.fit_gustafson` fits to the :meth:`scaled_points`.

        Parameters
        ----------
        threads : int
            A thread count that was measured, count (1 gives 1.0).

        Returns
        -------
        float
            The scaled speedup, dimensionless.

        Raises
        ------
        TypeError
            If ``threads`` is not an integer.
        ValueError
            If no measurement ran on ``threads``, or none on one thread; the message lists
            the counts measured.
        """
        threads = self._measured(threads)
        if threads == 1:
            return 1.0
        processors, speedups = self.scaled_points()
        return statistics.median(
            s for p, s in zip(processors, speedups, strict=True) if p == threads
        )

    @property
    def doubt(self) -> str:
        """Why this run's times cannot support a fit (a measurement was noisy, or its threads
        waited for cores that other programs held); empty when they can.

        Examples
        --------
        >>> quiet = Measurement(samples_s=[1.0, 1.0, 1.01], inner_loops=1, threads=1)
        >>> noisy = Measurement(samples_s=[0.5, 0.9, 0.5, 0.8], inner_loops=1, threads=2)
        >>> ScalingRun("sin", (quiet, quiet)).doubt
        ''
        >>> "noisy" in ScalingRun("sin", (quiet, noisy)).doubt
        True
        """
        return _doubts(*self.measurements)

    @property
    def others(self) -> float | None:
        """The largest share of the machine's CPU time that other programs used while any of
        this run's measurements was taken (None where the system does not say).

        A program that holds part of one core all the time slows every sample alike, so the
        spread does not show it; with the work cut in equal slices, the thread on that core
        sets the time.

        >>> one = Measurement(samples_s=[1.0], inner_loops=1, threads=1, others=0.05)
        >>> two = Measurement(samples_s=[0.6], inner_loops=1, threads=2, others=0.2)
        >>> ScalingRun("sin", (one, two)).others
        0.2
        """
        shares = [m.others for m in self.measurements if m.others is not None]
        return max(shares) if shares else None

    def scaled_points(self) -> tuple[list[int], list[float]]:
        """Every sample above one thread as a scaled speedup against the median one-thread
        time: the points :func:`perfmodel.scaling.fit_gustafson` fits, scatter included.

        Returns
        -------
        tuple of (list of int, list of float)
            The thread count of each sample (count) and its scaled speedup
            ``threads × T1 / T`` (dimensionless), in the same order.
        """
        one = next(m for m in self.measurements if (m.threads or 1) == 1).median_s
        pairs = [
            (m.threads or 1, (m.threads or 1) * one / t)
            for m in self.measurements
            if (m.threads or 1) > 1
            for t in m.samples_s
        ]
        return [p for p, _ in pairs], [s for _, s in pairs]
