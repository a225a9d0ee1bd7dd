"""Run numpy work on several threads, and measure what that buys.

numpy releases Python's global interpreter lock inside its loops, so slices of one array can
be worked on by a pool of threads at once: that is how the course runs elementwise work in
parallel (BLAS has threads of its own, limited with :func:`perfmodel.measure.timing.thread_limit`).

* :func:`sliced`: a runner that applies ``work(piece)`` to ``threads`` slices at once.
* :func:`parallel_apply`: an elementwise ufunc (``np.sin``) over slices: every element is
  independent, so the work splits perfectly.
* :func:`parallel_cumsum`: a prefix sum, which does not split: element ``i`` needs every
  element before it. The blocked scan here sums each block on its own thread, adds up the
  block totals (serially, one number per block), then adds each block's offset on its own
  thread. Every block but the first gets that second pass, so on ``t`` threads it makes
  about ``1 + (t - 1) / t`` times the additions of a serial ``np.cumsum`` (1.5 on two
  threads, approaching 2 on many): :func:`blocked_scan_additions` counts them exactly.
* :func:`run_branches`: independent branches of a model at the same time, or in turn.
* :func:`operation_scaling` and :func:`branch_scaling`: the measurements lecture 07 plots;
  :func:`speedup_share` and :func:`where_it_pays` read them, and every point says when its
  measurements were too disturbed to support a conclusion (``doubt``).

Examples
--------
>>> import numpy as np
>>> x = np.arange(10.0)
>>> out = np.empty_like(x)
>>> parallel_cumsum(x, out, threads=3)
>>> bool(np.array_equal(out, np.cumsum(x)))
True
"""

from __future__ import annotations

import contextlib
import functools
import os
import statistics
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from perfmodel._validate import count, describe, flag, fraction, positive, sequence
from perfmodel.measure.timing import Measurement, measure, thread_limit

__all__ = [
    "BranchPoint",
    "Payoff",
    "ScalingPoint",
    "ScalingRun",
    "Gap",
    "blocked_scan_additions",
    "branch_scaling",
    "compare_operations",
    "elementwise_work",
    "io_then_compute_work",
    "locked_work",
    "matmul_work",
    "memory_bound_work",
    "measure_scaling",
    "operation_scaling",
    "parallel_apply",
    "parallel_cumsum",
    "run_branches",
    "sliced",
    "speedup_share",
    "untrusted",
    "where_it_pays",
]


def _pieces(n: int, threads: int) -> list[slice]:
    bounds = [n * i // threads for i in range(threads + 1)]
    return [slice(a, b) for a, b in zip(bounds, bounds[1:], strict=False) if b > a]


@functools.cache
def _pool(threads: int) -> ThreadPoolExecutor:
    """One pool per thread count, started once and kept: starting threads costs far more
    than a small operation, and a real framework keeps its pool too."""
    return ThreadPoolExecutor(threads, thread_name_prefix=f"perfmodel-{threads}")


@contextlib.contextmanager
def sliced(threads: int | None, n: int) -> Iterator[Callable[[Callable[[slice], Any]], None]]:
    """A runner that applies ``work(piece)`` to ``threads`` slices of ``range(n)`` at once.

    One thread (or None) runs inline; more use a pool that is started once and kept.

    Parameters
    ----------
    threads : int or None
        Slices run at once, count (at least 1; None is 1). Fewer when ``n`` has fewer
        elements: no slice is empty.
    n : int
        Elements to cut into slices, count (at least 1).

    Yields
    ------
    callable
        ``run(work)``: calls ``work(piece)`` once per slice (a :class:`slice` of
        ``range(n)``), on the pool's threads (inline when there is one slice), and returns
        when every call has finished.

    Examples
    --------
    >>> seen = []
    >>> with sliced(2, 10) as run:
    ...     run(seen.append)
    >>> sorted((s.start, s.stop) for s in seen)
    [(0, 5), (5, 10)]
    """
    threads = 1 if threads is None else count("threads", threads)
    pieces = _pieces(count("n", n), threads)
    if len(pieces) == 1:
        yield lambda work: work(pieces[0])
        return
    pool = _pool(len(pieces))

    def run(work: Callable[[slice], Any]) -> None:
        for future in [pool.submit(work, piece) for piece in pieces]:
            future.result()

    yield run


def parallel_apply(
    ufunc: Any, x: Any, out: Any, *, threads: int = 1, extra: tuple[Any, ...] = ()
) -> None:
    """``ufunc(x, *extra, out=out)`` with the array cut into ``threads`` slices run at once.

    Parameters
    ----------
    ufunc : callable
        An elementwise numpy function that takes ``out=`` (``np.sin``, ``np.add``).
    x : numpy.ndarray
        The input, cut along its first axis.
    out : numpy.ndarray
        Where the result goes, as long as ``x``.
    threads : int
        Slices run at once, count (at least 1).
    extra : tuple
        Further arguments passed whole to every slice's call (``(1.0,)`` for ``x + 1``).
    """
    with sliced(threads, len(x)) as run:
        run(lambda s: ufunc(x[s], *extra, out=out[s]))


def parallel_cumsum(x: Any, out: Any, *, threads: int = 1) -> None:
    """``np.cumsum(x, out=out)`` as a blocked scan on ``threads`` threads (see the notes).

    Parameters
    ----------
    x : numpy.ndarray
        A one-dimensional input.
    out : numpy.ndarray
        Where the prefix sums go, as long as ``x``.
    threads : int
        Blocks scanned at once, count (at least 1; 1 is a plain ``np.cumsum``).
    """
    import numpy as np

    threads = count("threads", threads)
    pieces = _pieces(len(x), threads)
    if len(pieces) == 1:
        np.cumsum(x, out=out)
        return
    pool = _pool(len(pieces))
    list(pool.map(lambda s: np.cumsum(x[s], out=out[s]), pieces))
    offsets = np.cumsum([out[s.stop - 1] for s in pieces[:-1]])  # the serial step
    list(pool.map(lambda i: np.add(out[pieces[i]], offsets[i - 1], out=out[pieces[i]]),
                  range(1, len(pieces))))  # fmt: skip


def blocked_scan_additions(n: int, threads: int) -> int:
    """Additions :func:`parallel_cumsum` makes on ``n`` elements and ``threads`` threads.

    Each block of ``b`` elements takes ``b - 1`` additions for its own prefix sum; the
    running total of the block ends takes ``blocks - 2``; every block but the first then
    gets its offset added to each element. A serial ``np.cumsum`` takes ``n - 1``.

    Parameters
    ----------
    n : int
        Elements scanned, count (at least 1).
    threads : int
        Threads, and so blocks, count (at least 1; fewer blocks when ``n < threads``).

    Returns
    -------
    int
        Additions, count.

    Examples
    --------
    >>> blocked_scan_additions(1000, 1)   # one block: the serial scan
    999
    >>> blocked_scan_additions(1000, 2)   # 2 x 499 within the blocks, then 500 offsets
    1498
    >>> round(blocked_scan_additions(10**6, 4) / (10**6 - 1), 3)   # about 1 + 3/4
    1.75
    """
    pieces = _pieces(count("n", n), count("threads", threads))
    sizes = [int(p.stop) - int(p.start) for p in pieces]
    return sum(size - 1 for size in sizes) + max(0, len(sizes) - 2) + sum(sizes[1:])


def run_branches(branches: Sequence[Callable[[], Any]], *, concurrent: bool) -> list[Any]:
    """Run independent branches at the same time (one thread each) or one after another.

    Parameters
    ----------
    branches : sequence of callable
        The branches, each called with no arguments.
    concurrent : bool
        True: each branch on a thread of its own, all at once; False: one after another.

    Returns
    -------
    list
        What each branch returned, in the order of ``branches``.
    """
    concurrent = flag("concurrent", concurrent)
    if not concurrent or len(branches) < 2:
        return [branch() for branch in branches]
    return list(_pool(len(branches)).map(lambda branch: branch(), branches))


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


def operation_scaling(
    lengths: Sequence[int],
    threads: Sequence[int],
    *,
    progress: bool = True,
    **timing: Any,
) -> list[ScalingPoint]:
    """``np.sin`` (independent elements) and ``np.cumsum`` (a scan) over every length and
    thread count: each time, and its speedup over the same operation on one thread.

    The speedup divides the fastest samples: one thread's over ``t`` threads'.

    Parameters
    ----------
    lengths : sequence of int
        Elements per array, count (each at least 1).
    threads : sequence of int
        Thread counts, count (each at least 1); one thread is always measured too.
    progress : bool
        Show a tqdm bar.
    **timing
        Passed to :func:`perfmodel.measure.timing.measure`; by default ``repeats=5`` and
        ``min_time_s=0.02``.

    Returns
    -------
    list of ScalingPoint
        For each length, ``sin`` then ``cumsum``, each at every thread count in ascending
        order (one thread first, with a speedup of 1).

    Examples
    --------
    >>> points = operation_scaling([1000], [1, 2], progress=False, repeats=2, min_time_s=0)
    >>> sorted({(p.operation, p.threads) for p in points})
    [('cumsum', 1), ('cumsum', 2), ('sin', 1), ('sin', 2)]
    """
    import numpy as np
    from tqdm.auto import tqdm

    options = {"repeats": 5, "min_time_s": 0.02, **timing}
    counts = sorted({1, *(count("threads", t) for t in threads)})
    work = [(n, op) for n in (count("length", n) for n in lengths) for op in ("sin", "cumsum")]
    points = []
    for n, op in tqdm(work, desc="sin and cumsum", disable=not progress):
        x = np.linspace(0.0, 1.0, n)
        out = np.empty_like(x)
        base = None
        for t in counts:
            if op == "sin":
                run = functools.partial(parallel_apply, np.sin, x, out, threads=t)
            else:
                run = functools.partial(parallel_cumsum, x, out, threads=t)
            m = measure(run, label=f"{op} of {n:,}", threads=t, dtype="fp64", sizes={"n": n},
                        **options)  # fmt: skip
            base = m if base is None else base
            points.append(ScalingPoint(op, n, t, m, base.minimum_s / m.minimum_s, base))
    return points


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
class Gap:
    """``operation``'s speedup against ``reference``'s on ``threads`` threads, length by length,
    and what the run shows of it (see :func:`compare_operations`).

    Parameters
    ----------
    operation : str
        The operation compared (``"cumsum"``).
    reference : str
        The operation it is compared with (``"sin"``).
    threads : int
        The thread count of both speedups, count.
    lengths : tuple of int
        The lengths both were measured at, ascending, count.
    gains : tuple of float
        ``operation``'s speedup at each length, dimensionless.
    reference_gains : tuple of float
        ``reference``'s speedup at each length, dimensionless.
    untrusted : str
        How many of the speedups cannot be trusted, and why (see :func:`untrusted`); empty
        when all can.
    """

    operation: str
    reference: str
    threads: int
    lengths: tuple[int, ...]
    gains: tuple[float, ...]
    reference_gains: tuple[float, ...]
    untrusted: str

    @property
    def shares(self) -> tuple[float, ...]:
        """``operation``'s speedup as a share of ``reference``'s, at each length."""
        return tuple(g / r for g, r in zip(self.gains, self.reference_gains, strict=True))

    def findings(self) -> list[str]:
        """What this run shows, one sentence each, every one with the numbers behind it; a run
        that cannot be trusted gets one sentence saying so, and no findings.

        Returns
        -------
        list of str
            The sentences: how both fare at the shortest length, the reference's best
            speedup, whether ``operation`` ever gains as much, and (with two lengths or more)
            whether its share of the reference's speedup rises.

        Examples
        --------
        >>> gap = Gap("cumsum", "sin", 2, (10, 100, 1000), (0.2, 0.8, 1.5), (0.5, 1.6, 1.9), "")
        >>> for line in gap.findings():
        ...     print(line)
        short operands: at 10, sin 0.50x and cumsum 0.20x: both lose
        sin: best 1.90x (at 1,000); 2 threads allow at most 2x
        cumsum gains less than sin at every length
        cumsum's share of sin's speedup rises from 40% to 79%: the gap narrows but does not close
        >>> busy = "1 of 2 speedups not trusted (busy)"
        >>> Gap("cumsum", "sin", 2, (10,), (0.2,), (0.5,), busy).findings()
        ['not read: 1 of 2 speedups not trusted (busy); run the cell again']
        """
        if self.untrusted:
            return [f"not read: {self.untrusted}; run the cell again"]
        op, ref = self.operation, self.reference
        first = (self.reference_gains[0], self.gains[0])
        losers = [name for name, gain in zip((ref, op), first, strict=True) if gain < 1]
        verdict = {
            2: "both lose",
            1: f"only {losers[0]} loses" if losers else "",
            0: "neither loses",
        }
        best = max(range(len(self.lengths)), key=lambda i: self.reference_gains[i])
        lines = [
            f"short operands: at {self.lengths[0]:,}, {ref} {first[0]:.2f}x and {op} "
            f"{first[1]:.2f}x: {verdict[len(losers)]}",
            f"{ref}: best {self.reference_gains[best]:.2f}x (at {self.lengths[best]:,}); "
            f"{self.threads} threads allow at most {self.threads}x",
        ]
        shares = self.shares
        ahead = [f"{n:,}" for n, s in zip(self.lengths, shares, strict=True) if s >= 1]
        lines.append(
            f"{op} gains as much as {ref} or more at {', '.join(ahead)}"
            if ahead
            else f"{op} gains less than {ref} at every length"
        )
        share = f"{op}'s share of {ref}'s speedup"
        if len(shares) > 1 and shares[-1] > shares[0]:
            steady = all(b >= a for a, b in zip(shares, shares[1:], strict=False))
            close = "narrows but does not close" if shares[-1] < 1 else "closes"
            lines.append(
                f"{share} rises from {shares[0]:.0%} to {shares[-1]:.0%}"
                f"{'' if steady else ' (not at every step)'}: the gap {close}"
            )
        elif len(shares) > 1:
            lines.append(
                f"{share} does not rise ({shares[0]:.0%} to {shares[-1]:.0%}): the gap does not "
                "narrow on this run"
            )
        return lines


def compare_operations(
    points: Sequence[ScalingPoint], operation: str, reference: str, threads: int
) -> Gap:
    """The :class:`Gap` between ``operation``'s and ``reference``'s speedups on ``threads``
    threads, at every length both were measured.

    Parameters
    ----------
    points : sequence of ScalingPoint
        What :func:`operation_scaling` measured.
    operation : str
        The operation compared (``"cumsum"``).
    reference : str
        The operation it is compared with (``"sin"``).
    threads : int
        The thread count compared, count (at least 1).

    Returns
    -------
    Gap
        Both speedups at every common length, and whether they can be trusted.

    Raises
    ------
    ValueError
        If no length holds both operations on ``threads`` threads.

    Examples
    --------
    >>> from perfmodel.measure.timing import Measurement
    >>> m = Measurement(samples_s=[1.0], inner_loops=1, contention=0.0)
    >>> points = [ScalingPoint("sin", 10, 2, m, 1.6), ScalingPoint("cumsum", 10, 2, m, 0.4)]
    >>> compare_operations(points, "cumsum", "sin", 2).shares
    (0.25,)
    """
    threads = int(count("threads", threads))
    shares = speedup_share(points, operation, reference, threads)
    by = {(p.operation, p.n): p for p in points if p.threads == threads}
    lengths = tuple(n for n, _, _ in shares)
    used = [by[op, n] for n in lengths for op in (reference, operation)]
    return Gap(
        operation,
        reference,
        threads,
        lengths,
        tuple(by[operation, n].speedup for n in lengths),
        tuple(by[reference, n].speedup for n in lengths),
        untrusted(used, "speedups"),
    )


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
class Payoff:
    """Where running in parallel paid: the sizes whose speedup is above 1.

    Parameters
    ----------
    sizes : tuple of int
        Every size measured, ascending, count.
    speedups : tuple of float
        The speedup at each size, dimensionless.
    """

    sizes: tuple[int, ...]
    speedups: tuple[float, ...]

    @property
    def paying(self) -> tuple[int, ...]:
        """The sizes where it paid (speedup above 1), ascending."""
        return tuple(n for n, s in zip(self.sizes, self.speedups, strict=True) if s > 1)

    @property
    def contiguous(self) -> bool:
        """True when the paying sizes are one unbroken run of the sizes measured."""
        where = [i for i, s in enumerate(self.speedups) if s > 1]
        return not where or where == list(range(where[0], where[-1] + 1))

    def describe(self) -> str:
        """The range where it paid, in words, and whether it is one range.

        Returns
        -------
        str
            One sentence: the widths where the speedup is above 1, whether they run to the
            widest measured, and the speedups beyond them when it loses again.

        Examples
        --------
        >>> Payoff((16, 32, 64), (0.5, 1.5, 1.8)).describe()
        'pays from width 32 to 64, the widest measured'
        >>> Payoff((16, 32, 64), (0.5, 1.5, 0.8)).describe()
        'pays at width 32 only: wider, it loses again (64: 0.80x)'
        >>> Payoff((16, 32, 64), (1.2, 0.9, 1.1)).describe()
        'pays at widths 16 and 64, not in one range: the speedup goes up and down with the width'
        >>> Payoff((16, 32), (0.5, 0.9)).describe()
        'pays at no width measured (16 to 32)'
        """
        paying = self.paying
        if not paying:
            return f"pays at no width measured ({self.sizes[0]} to {self.sizes[-1]})"
        if not self.contiguous:
            listed = ", ".join(map(str, paying[:-1])) + f" and {paying[-1]}"
            return (
                f"pays at widths {listed}, not in one range: the speedup goes up and down "
                "with the width"
            )
        if len(paying) == 1:
            text = f"pays at width {paying[0]}"
        else:
            text = f"pays from width {paying[0]} to {paying[-1]}"
        if paying[-1] == self.sizes[-1]:
            return text + ", the widest measured"
        losing = ", ".join(
            f"{n}: {s:.2f}x"
            for n, s in zip(self.sizes, self.speedups, strict=True)
            if n > paying[-1]
        )
        return text + f" only: wider, it loses again ({losing})"


def where_it_pays(sizes: Sequence[int], speedups: Sequence[float]) -> Payoff:
    """The :class:`Payoff` of speedups measured at ``sizes`` (any order; each size once).

    Parameters
    ----------
    sizes : sequence of int
        The sizes measured, count (each at least 1, none twice, not empty).
    speedups : sequence of float
        The speedup at each size, dimensionless (positive; as many as ``sizes``).

    Returns
    -------
    Payoff
        The sizes and speedups, sorted by size.

    Raises
    ------
    TypeError
        If either is not a sequence of numbers, or a size is not an integer.
    ValueError
        If the lengths differ or are 0, a size repeats or is below 1, or a speedup is not
        positive.

    Examples
    --------
    >>> where_it_pays([64, 16, 32], [1.8, 0.5, 1.5]).paying
    (32, 64)
    """
    sizes, speedups = sequence("sizes", sizes), sequence("speedups", speedups)
    sizes = [count(f"sizes[{i}]", n) for i, n in enumerate(sizes)]
    speedups = [positive(f"speedups[{i}]", s) for i, s in enumerate(speedups)]
    if len(sizes) != len(speedups) or not sizes:
        raise ValueError(
            f"`sizes` and `speedups` must be as long as each other and not empty "
            f"(got {len(sizes)} and {len(speedups)})."
        )
    if len(set(sizes)) != len(sizes):
        raise ValueError(f"`sizes` must name each size once (got {sorted(sizes)}).")
    pairs = sorted(zip(sizes, speedups, strict=True))
    return Payoff(tuple(n for n, _ in pairs), tuple(s for _, s in pairs))


def _branch(x: Any, w1: Any, w2: Any) -> Any:
    """One branch of a small model: ``relu(x @ w1) @ w2``."""
    import numpy as np

    return np.maximum(x @ w1, 0) @ w2


def branch_scaling(
    widths: Sequence[int], *, progress: bool = True, **timing: Any
) -> list[BranchPoint]:
    """Two independent branches, each ``relu(x @ W1) @ W2`` on an ``n × n`` block, in turn
    and on two threads. BLAS is held to one thread, so the two branches are the only
    parallelism.

    Parameters
    ----------
    widths : sequence of int
        The widths ``n``, count (each at least 1), measured in this order.
    progress : bool
        Show a tqdm bar.
    **timing
        Passed to :func:`perfmodel.measure.timing.measure`; by default ``repeats=5`` and
        ``min_time_s=0.02``.

    Returns
    -------
    list of BranchPoint
        One per width, in the order of ``widths``.

    Examples
    --------
    >>> [p.n for p in branch_scaling([8, 16], progress=False, repeats=2, min_time_s=0)]
    [8, 16]
    """
    import numpy as np
    from tqdm.auto import tqdm

    options = {"repeats": 5, "min_time_s": 0.02, **timing}
    rng = np.random.default_rng(0)
    points = []
    for n in tqdm([count("width", w) for w in widths], desc="branches", disable=not progress):
        x = rng.random((n, n))
        branches = [
            functools.partial(_branch, x, rng.random((n, n)), rng.random((n, n))) for _ in range(2)
        ]
        in_turn = functools.partial(run_branches, branches, concurrent=False)
        at_once = functools.partial(run_branches, branches, concurrent=True)
        with thread_limit(1):
            sequential = measure(in_turn, label=f"branches of {n}, in turn", sizes={"n": n},
                                 **options)  # fmt: skip
            concurrent = measure(at_once, label=f"branches of {n}, at once", threads=2,
                                 sizes={"n": n}, **options)  # fmt: skip
        points.append(BranchPoint(n, sequential, concurrent))
    return points


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


def measure_scaling(
    make_work: Callable[[int], Callable[[], Any]],
    threads: Sequence[int],
    *,
    label: str = "",
    progress: bool = True,
    **timing: Any,
) -> ScalingRun:
    """Measure ``make_work(t)()`` for every thread count ``t`` (1 is always included).

    ``make_work(t)`` builds the workload for ``t`` threads: the same problem split ``t`` ways
    for strong scaling, or ``t`` times the problem for weak scaling. BLAS is limited to ``t``
    threads while it runs.

    Parameters
    ----------
    make_work : callable
        ``make_work(t)`` returns the callable to time on ``t`` threads.
    threads : sequence of int
        Thread counts, count (each at least 1); 1 is added when missing.
    label : str
        What is measured, recorded in each measurement and the run.
    progress : bool
        Show a tqdm bar.
    **timing
        Passed to :func:`perfmodel.measure.timing.measure`; by default ``repeats=5``,
        ``min_time_s=0.05`` and ``warmup=2``.

    Returns
    -------
    ScalingRun
        One measurement per thread count, ascending.

    Examples
    --------
    >>> run = measure_scaling(lambda t: (lambda: sum(range(1000))), [2], progress=False,
    ...                       repeats=3, min_time_s=0)
    >>> sorted(set(run.processors)), len(run.times) >= 6
    ([1, 2], True)
    """
    from tqdm.auto import tqdm

    if not callable(make_work):
        raise TypeError(f"`make_work` must be callable (got {type(make_work).__name__}).")
    options = {"repeats": 5, "min_time_s": 0.05, "warmup": 2, **timing}
    counts = sorted({1, *(count("threads", t) for t in threads)})
    measurements = tuple(
        measure(make_work(t), label=label, threads=t, **options)
        for t in tqdm(counts, desc=label or "threads", disable=not progress)
    )
    return ScalingRun(label, measurements)


def matmul_work(n: int, *, weak: bool = False) -> Callable[[int], Callable[[], Any]]:
    """``make_work`` for :func:`measure_scaling`: an ``n × n`` fp64 matmul on ``t`` BLAS threads
    (weak: ``t`` such matmuls, one per thread's worth of work).

    Parameters
    ----------
    n : int
        The matrices' side, count (at least 1).
    weak : bool
        True: ``t`` matmuls on ``t`` threads (weak scaling); False: one (strong scaling).

    Returns
    -------
    callable
        ``make_work(t)``, which returns the callable to time.
    """
    import numpy as np

    n = count("n", n)
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n)), rng.random((n, n))

    def make(t: int) -> Callable[[], Any]:
        copies = t if weak else 1
        return functools.partial(_matmuls, a, b, copies)

    return make


def _matmuls(a: Any, b: Any, copies: int) -> None:
    for _ in range(copies):
        a @ b


def elementwise_work(n: int, *, weak: bool = False) -> Callable[[int], Callable[[], Any]]:
    """``make_work`` for :func:`measure_scaling`: ``np.sin`` over ``n`` fp64 elements sliced
    across ``t`` threads (weak: ``t × n`` elements).

    Parameters
    ----------
    n : int
        Elements, count (at least 1); per thread when ``weak``.
    weak : bool
        True: ``t × n`` elements on ``t`` threads (weak scaling); False: ``n`` (strong).

    Returns
    -------
    callable
        ``make_work(t)``, which returns the callable to time.
    """
    import numpy as np

    n = count("n", n)

    def make(t: int) -> Callable[[], Any]:
        x = np.linspace(0.0, 1.0, n * t if weak else n)
        return functools.partial(parallel_apply, np.sin, x, np.empty_like(x), threads=t)

    return make


def io_then_compute_work(n: int, path: str) -> Callable[[int], Callable[[], Any]]:
    """``make_work`` with a serial part from I/O: load ``n`` doubles from the ``.npy`` file at
    ``path`` (written here once), then ``np.sin`` over them split across ``t`` threads.

    Parameters
    ----------
    n : int
        Doubles in the file, count (at least 1).
    path : str or os.PathLike
        Where to write the file, under any name (it is written in ``.npy`` format, but no
        suffix is added).

    Returns
    -------
    callable
        ``make_work(t)``, which returns the callable to time.

    Raises
    ------
    TypeError
        If ``n`` is not an integer or ``path`` not a path.
    ValueError
        If ``n`` is below 1.
    """
    import numpy as np

    n = count("n", n)
    if not isinstance(path, (str, os.PathLike)):  # open(3) would write to descriptor 3
        raise TypeError(
            f"`path` must be a str or os.PathLike (got {type(path).__name__} {describe(path)})."
        )
    with open(path, "wb") as file:  # np.save(path) would add ".npy" to another name
        np.save(file, np.linspace(0.0, 1.0, n))

    def make(t: int) -> Callable[[], Any]:
        def run() -> None:
            x = np.load(path)  # every thread waits for this
            parallel_apply(np.sin, x, np.empty_like(x), threads=t)

        return run

    return make


def locked_work(n: int, *, held: float = 0.5) -> Callable[[int], Callable[[], Any]]:
    """``make_work`` with a serial part from a lock: ``sum(sin(x))`` over ``n`` doubles, each of
    ``t`` threads summing its slice; a ``held`` share of each slice is computed while holding
    one shared lock (the update of the shared total), the rest freely. The call returns the
    sum.

    Parameters
    ----------
    n : int
        Doubles summed, count (at least 1).
    held : float
        The share of each slice computed under the lock, fraction (0 to 1).

    Returns
    -------
    callable
        ``make_work(t)``, which returns the callable to time.

    Raises
    ------
    TypeError
        If ``n`` is not an integer or ``held`` not a number.
    ValueError
        If ``n`` is below 1, or ``held`` outside [0, 1] or NaN.
    """
    import threading

    import numpy as np

    n = count("n", n)
    held = fraction("held", held, allow_zero=True)
    x = np.linspace(0.0, 1.0, n)
    lock = threading.Lock()
    cut = int(n * (1 - held))

    def make(t: int) -> Callable[[], Any]:
        def run() -> float:
            total = [0.0]

            def work(piece: slice) -> None:
                part = x[piece]
                split = len(part) * cut // n
                free = float(np.sin(part[:split]).sum())  # threads run this at once
                with lock:  # one thread at a time from here
                    total[0] += free + float(np.sin(part[split:]).sum())

            with sliced(t, n) as each:
                each(work)
            return total[0]

        return run

    return make


def memory_bound_work(n: int) -> Callable[[int], Callable[[], Any]]:
    """``make_work`` limited by contention for memory: ``y = x + 1`` over ``n`` doubles (far
    more than the caches hold) split across ``t`` threads, which share one memory system.

    Parameters
    ----------
    n : int
        Doubles in each array, count (at least 1); choose far more than the caches hold.

    Returns
    -------
    callable
        ``make_work(t)``, which returns the callable to time.
    """
    import numpy as np

    n = count("n", n)
    x = np.ones(n)
    y = np.empty_like(x)

    def make(t: int) -> Callable[[], Any]:
        return functools.partial(parallel_apply, np.add, x, y, threads=t, extra=(1.0,))

    return make
