"""Measure how long code takes, honestly: warm-up, autoranged loops, every sample kept.

:func:`measure` times one callable the way :mod:`timeit` does, with the parts a
performance model needs on top:

* a warm-up call first (page faults, lazy imports, caches, a JIT);
* an inner loop count chosen automatically (1, 2, 5, 10, 20, 50, ...) until one sample
  lasts at least ``min_sample_s``, so that the clock's resolution does not matter;
* samples repeated until there are at least ``repeats`` of them and they add up to
  ``min_time_s`` (never more than ``max_repeats``);
* :func:`time.perf_counter_ns`, a monotonic clock;
* an optional ``sync`` callable, run inside the timed region after each batch of calls,
  for devices that work asynchronously (``torch.cuda.synchronize``);
* explicit threads: ``threads=n`` limits the BLAS and OpenMP pools with threadpoolctl for
  the measurement, and the result records the count.

It returns a :class:`Measurement`: every sample, the median, the minimum, the
interquartile range, a ``noisy`` flag and, on Linux, how long the measured threads waited for
a core that something else held (``contention``, and a ``busy`` flag). It never prints.
:func:`sweep` measures over a list of parameters with a progress bar, and keeps what it
measured if interrupted.

What a measurement means depends on the machine, so the lectures never compare printed
times with stored ones; they check what holds on any machine.

Examples
--------
>>> m = measure(lambda: sum(range(1000)), repeats=3, min_time_s=0.0, min_sample_s=1e-4)
>>> len(m.samples_s) >= 3 and m.minimum_s <= m.median_s
True
"""

from __future__ import annotations

import contextlib
import math
import statistics
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from perfmodel._validate import count, fraction, non_negative, positive
from perfmodel.measure.load import contention as contention_share
from perfmodel.measure.load import cpu_ticks, others_share, scheduler_ns

__all__ = [
    "BUSY_SHARE",
    "NOISY_SPREAD",
    "Measurement",
    "Sweep",
    "clock",
    "combine",
    "measure",
    "next_loop_count",
    "sweep",
    "thread_limit",
]

#: A measurement is flagged noisy when its interquartile range exceeds this share of its
#: median: the machine was busy, or the clock too coarse for the work.
NOISY_SPREAD = 0.1
#: A measurement is flagged busy when other programs used more than this share of the CPUs it
#: may run on: they take cores, and they share its caches and memory bandwidth too, so they can
#: slow it even when it never waits for a core. (Waiting alone is no sign: a measurement running
#: as many threads as there are cores waits for its own threads.)
BUSY_OTHERS = 0.25
#: Where other programs' use is unknown, a measurement is flagged busy when its threads spent
#: more than this share of the time they were ready to run waiting for a core.
BUSY_SHARE = 0.1


@dataclass(frozen=True, slots=True, kw_only=True)
class Measurement:
    """Seconds per call of one measured callable, and what was measured.

    Parameters
    ----------
    samples_s : sequence of float
        Seconds per call, s, one entry per sample (each sample times ``inner_loops`` calls);
        at least one, none negative.
    inner_loops : int
        Calls per sample, count.
    label : str
        What was measured.
    threads : int or None
        The thread limit it ran under (None: the libraries' defaults).
    dtype : str or None
        The data type of the work, when there is one.
    sizes : mapping of str to int
        The sizes of the work (``{"n": 4096}``).
    contention : float or None
        The share of the time this process's threads were ready to run but waited for a core,
        while the samples were taken (Linux's scheduler statistics), fraction; None where
        unknown.
    others : float or None
        The share of the CPU time of the cores this process may run on that other programs
        (or the hypervisor) used while the samples were taken (``/proc/stat``, less this
        process's own time), fraction; None where unknown.
    """

    samples_s: tuple[float, ...]
    inner_loops: int
    label: str = ""
    threads: int | None = None
    dtype: str | None = None
    sizes: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    contention: float | None = None
    others: float | None = None

    def __post_init__(self) -> None:
        samples = tuple(
            non_negative(f"samples_s[{i}]", value) for i, value in enumerate(self.samples_s)
        )
        if not samples:
            raise ValueError("`samples_s` must hold at least one sample (got none).")
        object.__setattr__(self, "samples_s", samples)
        object.__setattr__(self, "inner_loops", count("inner_loops", self.inner_loops))
        object.__setattr__(self, "sizes", MappingProxyType(dict(self.sizes)))
        for name in ("contention", "others"):
            share = getattr(self, name)
            if share is not None:
                object.__setattr__(self, name, fraction(name, share, allow_zero=True))

    @property
    def median_s(self) -> float:
        """The median seconds per call: the number to report."""
        return statistics.median(self.samples_s)

    @property
    def minimum_s(self) -> float:
        """The fastest sample: the least disturbed run, an optimistic estimate."""
        return min(self.samples_s)

    @property
    def iqr_s(self) -> float:
        """Interquartile range of the samples, seconds (0 with fewer than two samples).

        >>> Measurement(samples_s=[1.0, 2.0, 3.0, 4.0], inner_loops=1).iqr_s
        1.5
        """
        if len(self.samples_s) < 2:
            return 0.0
        low, _, high = statistics.quantiles(self.samples_s, n=4, method="inclusive")
        return high - low

    @property
    def spread(self) -> float:
        """Interquartile range over median: how much the samples disagree."""
        median = self.median_s
        return self.iqr_s / median if median > 0 else 0.0

    @property
    def noisy(self) -> bool:
        """True when the spread exceeds :data:`NOISY_SPREAD`: repeat on a quieter machine.

        >>> Measurement(samples_s=[1.0, 1.0, 1.01, 1.0], inner_loops=1).noisy
        False
        >>> Measurement(samples_s=[1.0, 1.6, 1.0, 1.9], inner_loops=1).noisy
        True
        """
        return self.spread > NOISY_SPREAD

    @property
    def busy(self) -> bool:
        """True when other programs used more than :data:`BUSY_OTHERS` of this process's
        cores meanwhile; where that is unknown, when its threads waited for a core more than
        :data:`BUSY_SHARE` of the time.

        A busy machine can slow every sample alike, so the spread alone may not show it.

        >>> Measurement(samples_s=[1.0], inner_loops=1, contention=0.0, others=0.5).busy
        True
        >>> Measurement(samples_s=[1.0], inner_loops=1, contention=0.4, others=0.0).busy
        False
        >>> Measurement(samples_s=[1.0], inner_loops=1, contention=0.4).busy
        True
        """
        if self.others is not None:
            return self.others > BUSY_OTHERS
        return self.contention is not None and self.contention > BUSY_SHARE

    @property
    def doubt(self) -> str:
        """Why this measurement cannot be trusted, in words; empty when it can.

        >>> Measurement(samples_s=[1.0, 1.0], inner_loops=1, contention=0.0).doubt
        ''
        >>> Measurement(samples_s=[1.0, 1.6, 1.0, 1.9], inner_loops=1, contention=0.3).doubt
        'noisy (spread 52% of the median); busy (waited for a core 30% of the time)'
        """
        reasons = []
        if self.noisy:
            reasons.append(f"noisy (spread {self.spread:.0%} of the median)")
        if self.busy:
            reasons.append(f"busy ({self.machine or self.waited})")
        return "; ".join(reasons)

    @property
    def waited(self) -> str:
        """How long the threads waited for a core, in words (empty when unknown)."""
        if self.contention is None:
            return ""
        return f"waited for a core {self.contention:.0%} of the time"

    @property
    def machine(self) -> str:
        """What the rest of the machine did meanwhile, in words (empty when unknown).

        >>> Measurement(samples_s=[1.0], inner_loops=1, others=0.5).machine
        'other programs used 50% of the CPUs'
        """
        return "" if self.others is None else f"other programs used {self.others:.0%} of the CPUs"

    def rate(self, amount: float) -> float:
        """``amount`` per second at the median time: bytes -> B/s, FLOPs -> FLOP/s.

        Parameters
        ----------
        amount : float
            The work one call does, in any unit: B for bytes moved, FLOP for operations
            (non-negative).

        Returns
        -------
        float
            ``amount / median_s``: B/s for bytes, FLOP/s for FLOPs; ``math.inf`` when the
            median is 0 s.
        """
        amount = non_negative("amount", amount)
        return amount / self.median_s if self.median_s > 0 else math.inf

    def best_rate(self, amount: float) -> float:
        """``amount`` per second at the fastest sample: the least disturbed run.

        A ceiling is reported this way (STREAM reports its best rate): interference from
        the rest of the machine only ever slows a run down.

        Parameters
        ----------
        amount : float
            The work one call does, in any unit: B for bytes moved, FLOP for operations
            (non-negative).

        Returns
        -------
        float
            ``amount / minimum_s``: B/s for bytes, FLOP/s for FLOPs; ``math.inf`` when the
            fastest sample is 0 s.

        Examples
        --------
        >>> Measurement(samples_s=[2.0, 1.0, 4.0], inner_loops=1).best_rate(8.0)
        8.0
        """
        amount = non_negative("amount", amount)
        return amount / self.minimum_s if self.minimum_s > 0 else math.inf


def clock() -> float:
    """Seconds on the one clock perfmodel reads, for measurements and deadlines alike
    (``time.perf_counter``: monotonic, and the finest the system has). Only differences mean
    anything.

    Returns
    -------
    float
        The clock's reading, s, from an arbitrary start.

    Examples
    --------
    >>> start = clock()
    >>> clock() - start >= 0
    True
    """
    return time.perf_counter()


@contextlib.contextmanager
def thread_limit(threads: int | None) -> Iterator[None]:
    """Limit the BLAS and OpenMP thread pools to ``threads`` inside the block (threadpoolctl).

    Parameters
    ----------
    threads : int or None
        Threads each pool may use inside the block, count (at least 1); None leaves the
        libraries' defaults alone.

    Yields
    ------
    None
        Nothing; the limit holds while the block runs and is lifted after it.
    """
    if threads is None:
        yield
        return
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=count("threads", threads)):
        yield


def _autorange(run: Callable[[int], int], min_sample_s: float, max_inner: int) -> tuple[int, float]:
    """The smallest inner loop count in 1, 2, 5, 10, 20, 50, ... whose sample lasts at least
    ``min_sample_s`` (or ``max_inner``), and that sample's seconds per call."""
    inner = 1
    while True:
        elapsed_ns = run(inner)
        if elapsed_ns >= min_sample_s * 1e9 or inner >= max_inner:
            return inner, elapsed_ns / 1e9 / inner
        inner = min(next_loop_count(inner), max_inner)


def next_loop_count(inner: int) -> int:
    """The next of 1, 2, 5, 10, 20, 50, 100, ... after ``inner`` (as :mod:`timeit` counts).

    Parameters
    ----------
    inner : int
        The current inner loop count, count (at least 1; need not be on the ladder).

    Returns
    -------
    int
        The smallest count on the ladder above ``inner``, count.

    Examples
    --------
    >>> [next_loop_count(n) for n in (1, 2, 5, 10, 20, 50, 99)]
    [2, 5, 10, 20, 50, 100, 100]
    """
    inner = count("inner", inner)
    decade: int = 10 ** (len(str(inner)) - 1)
    return next(decade * step for step in (1, 2, 5, 10) if decade * step > inner)


def measure(
    fn: Callable[[], Any],
    *,
    setup: Callable[[], Any] | None = None,
    sync: Callable[[], Any] | None = None,
    warmup: int = 1,
    repeats: int = 5,
    max_repeats: int = 50,
    min_time_s: float = 0.2,
    min_sample_s: float = 0.01,
    max_inner: int = 1_000_000,
    threads: int | None = None,
    label: str = "",
    dtype: str | None = None,
    sizes: Mapping[str, int] | None = None,
) -> Measurement:
    """Time ``fn()``: seconds per call, every sample kept.

    Parameters
    ----------
    fn : callable
        Called with no arguments; what it returns is ignored.
    setup : callable, optional
        Called before each sample, outside the timed region (fresh inputs, a cache flush).
    sync : callable, optional
        Called after each batch of calls, inside the timed region: waits for an
        asynchronous device to finish.
    warmup : int
        Untimed calls before anything is measured, count (0 or more).
    repeats, max_repeats : int
        At least ``repeats`` samples, more until they add up to ``min_time_s``, never more
        than ``max_repeats``, count (``max_repeats >= repeats >= 1``).
    min_time_s : float
        Least total measured time over all samples, s (non-negative).
    min_sample_s : float
        Least time of one sample, s (positive); the inner loop count grows (1, 2, 5, 10, ...)
        until a sample lasts this long, or reaches ``max_inner``.
    max_inner : int
        Most calls in one sample, count (at least 1).
    threads : int, optional
        Limit the BLAS and OpenMP pools to this many threads while measuring.
    label : str
        What is measured, recorded in the result.
    dtype : str, optional
        The work's data type, recorded in the result (not checked).
    sizes : mapping of str to int, optional
        The work's sizes (``{"n": 4096}``), recorded in the result; each at least 1.

    Returns
    -------
    Measurement
        Seconds per call of every sample, with the machine's contention meanwhile.

    Raises
    ------
    TypeError
        If ``fn``, ``setup`` or ``sync`` is not callable, ``label`` is not a string, or a
        count is not an integer.
    ValueError
        If a count or time is out of range.
    """
    if not callable(fn):
        raise TypeError(f"`fn` must be callable (got {type(fn).__name__}).")
    for name, hook in (("setup", setup), ("sync", sync)):
        if hook is not None and not callable(hook):
            raise TypeError(f"`{name}` must be callable or None (got {type(hook).__name__}).")
    warmup = count("warmup", warmup, minimum=0)
    repeats = count("repeats", repeats)
    max_repeats = count("max_repeats", max_repeats, minimum=repeats)
    min_time_s = non_negative("min_time_s", min_time_s)
    min_sample_s = positive("min_sample_s", min_sample_s)
    max_inner = count("max_inner", max_inner)
    if not isinstance(label, str):
        raise TypeError(f"`label` must be a string (got {type(label).__name__}).")
    sizes = {name: count(f"sizes[{name!r}]", value) for name, value in (sizes or {}).items()}

    def run(inner: int) -> int:
        if setup is not None:
            setup()
        if sync is not None:  # nothing queued before the clock starts counts against fn
            sync()
        start = time.perf_counter_ns()
        for _ in range(inner):
            fn()
        if sync is not None:
            sync()
        return time.perf_counter_ns() - start

    with thread_limit(threads):
        for _ in range(warmup):
            fn()
        if sync is not None:
            sync()
        before, ticks = scheduler_ns(), cpu_ticks()
        inner, first = _autorange(run, min_sample_s, max_inner)
        samples = [first]
        while len(samples) < max_repeats and (
            len(samples) < repeats or sum(samples) * inner < min_time_s
        ):
            samples.append(run(inner) / 1e9 / inner)
        contention = contention_share(before, scheduler_ns())
        others = others_share(ticks, cpu_ticks())
    return Measurement(
        samples_s=tuple(samples),
        inner_loops=inner,
        label=label,
        threads=threads,
        dtype=dtype,
        sizes=sizes,
        contention=contention,
        others=others,
    )


def combine(measurements: Sequence[Measurement]) -> Measurement:
    """One measurement of every sample of several of the same work, taken in separate rounds.

    Rounds interleaved with other work spread a passing disturbance over every kernel instead
    of one: the fastest sample of the rounds together is the least disturbed of all. The
    contention and the others' share are the rounds' means.

    Parameters
    ----------
    measurements : sequence of Measurement
        The rounds, at least one; the first one's label, threads, dtype and sizes are kept.

    Returns
    -------
    Measurement
        Every round's samples in order, with the smallest inner loop count among the rounds.

    Raises
    ------
    TypeError
        If ``measurements`` is empty or holds something other than a Measurement.

    Examples
    --------
    >>> rounds = [Measurement(samples_s=[2.0, 3.0], inner_loops=1, label="x"),
    ...           Measurement(samples_s=[1.5], inner_loops=2, label="x")]
    >>> m = combine(rounds)
    >>> m.samples_s, m.minimum_s, m.inner_loops
    ((2.0, 3.0, 1.5), 1.5, 1)
    """
    rounds = list(measurements)
    if not rounds or not all(isinstance(m, Measurement) for m in rounds):
        raise TypeError("`measurements` must be a non-empty sequence of Measurement.")
    first = rounds[0]
    shares = [m.contention for m in rounds if m.contention is not None]
    others = [m.others for m in rounds if m.others is not None]
    return Measurement(
        samples_s=tuple(t for m in rounds for t in m.samples_s),
        inner_loops=min(m.inner_loops for m in rounds),
        label=first.label,
        threads=first.threads,
        dtype=first.dtype,
        sizes=first.sizes,
        contention=sum(shares) / len(shares) if shares else None,
        others=sum(others) / len(others) if others else None,
    )


@dataclass(frozen=True, slots=True)
class Sweep:
    """Measurements over a list of parameters; ``interrupted`` when it was stopped early.

    Parameters
    ----------
    parameters : tuple
        The parameters measured, in order (fewer than asked for when interrupted).
    measurements : tuple of Measurement
        One measurement per parameter, in the same order.
    interrupted : bool
        True when a KeyboardInterrupt stopped the sweep early.
    """

    parameters: tuple[Any, ...]
    measurements: tuple[Measurement, ...]
    interrupted: bool


def sweep(
    measure_one: Callable[[Any], Measurement],
    parameters: Iterable[Any],
    *,
    description: str = "measuring",
    progress: bool = True,
) -> Sweep:
    """``measure_one(p)`` for each parameter, with a progress bar; Ctrl-C keeps the results.

    Parameters
    ----------
    measure_one : callable
        Measures one parameter and returns its :class:`Measurement`.
    parameters : iterable
        The parameters, in order.
    description : str
        The progress bar's label.
    progress : bool
        Show a tqdm bar (it renders as a widget in notebooks).

    Returns
    -------
    Sweep
        The parameters measured so far and their measurements; ``interrupted`` is True when a
        KeyboardInterrupt stopped the sweep (it is not raised again).

    Examples
    --------
    >>> s = sweep(lambda n: measure(lambda: sum(range(n)), repeats=2, min_time_s=0),
    ...           [10, 100], progress=False)
    >>> [len(m.samples_s) >= 2 for m in s.measurements], s.interrupted
    ([True, True], False)
    """
    if not callable(measure_one):
        raise TypeError(f"`measure_one` must be callable (got {type(measure_one).__name__}).")
    if isinstance(parameters, (str, bytes)) or not isinstance(parameters, Iterable):
        raise TypeError(
            f"`parameters` must be an iterable of parameters (got {type(parameters).__name__})."
        )
    items: Sequence[Any] = list(parameters)
    done: list[Any] = []
    results: list[Measurement] = []
    interrupted = False
    from tqdm.auto import tqdm

    bar = tqdm(items, desc=description, disable=not progress, leave=False)
    try:
        for parameter in bar:
            result = measure_one(parameter)
            if not isinstance(result, Measurement):
                raise TypeError(
                    f"`measure_one` must return a Measurement (got {type(result).__name__})."
                )
            done.append(parameter)
            results.append(result)
    except KeyboardInterrupt:
        interrupted = True
    finally:
        bar.close()
    return Sweep(tuple(done), tuple(results), interrupted)
