"""A discrete-event simulator of an inference service: arrivals, batching, workers, balancers.

Requests arrive (Poisson, a spike, or a recorded trace) at one or more servers behind a
load balancer. Each server has a queue and a pool of workers; a free worker takes the
oldest waiting requests as one batch when ``max_batch`` of them are waiting or the oldest
has waited ``max_wait_s`` (dynamic batching, as Triton and TorchServe do it; with the
defaults, 1 and 0, every request is served alone, first come first served). A batch of b
takes ``batch_time(b)`` seconds on average (a fixed time per request by default, or any
cost model, such as the roofline time of the batch on a catalogue device), times a random
factor with mean 1: none for ``"deterministic"``, Exp(1) for ``"exponential"``.

Everything is seeded: the same arguments give the same numbers on any machine. The event
loop is plain Python over a heap, about 2 µs per event, fast enough to drive a widget.

>>> result = simulate(0.5, 1.0, 1, distribution="deterministic", requests=20_000, seed=1)
>>> round(result.utilization, 2), round(result.mean_wait_s, 1)      # M/D/1 at ρ = 0.5: 0.5
(0.5, 0.5)
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from perfmodel._show import percent, seconds, shown
from perfmodel._validate import choice, count, fraction, non_negative, positive
from perfmodel.hardware import DeviceLike
from perfmodel.serving.theory import OverloadWarning, warn_if_overloaded

if TYPE_CHECKING:
    from perfmodel.ops import Cost

__all__ = [
    "ARRIVALS",
    "DISTRIBUTIONS",
    "POLICIES",
    "LatencySummary",
    "OverloadWarning",
    "Replicated",
    "SimulationResult",
    "linear_batch_time",
    "roofline_batch_time",
    "simulate",
]

DISTRIBUTIONS = ("exponential", "deterministic")
POLICIES = ("round_robin", "random", "least_loaded", "power_of_two")
ARRIVALS = ("poisson", "spike")

_ARRIVE, _TIMER, _DONE = 0, 1, 2


def linear_batch_time(setup_s: float, per_request_s: float) -> Callable[[int], float]:
    """A batch cost of ``setup_s + per_request_s · b``: the fixed part is what batching shares.

    Parameters
    ----------
    setup_s : float
        The time every batch pays once, non-negative, s.
    per_request_s : float
        The time each request of the batch adds, non-negative, s; not both 0.

    Returns
    -------
    callable
        ``batch_time(b)``: the mean time of a batch of b requests, in seconds.

    >>> cost = linear_batch_time(0.010, 0.002)
    >>> round(cost(1), 6), round(cost(8), 6)
    (0.012, 0.026)
    """
    setup, each = non_negative("setup_s", setup_s), non_negative("per_request_s", per_request_s)
    if setup + each <= 0:
        raise ValueError("`setup_s` and `per_request_s` must not both be 0 (got 0 and 0).")
    return lambda b: setup + each * b


def roofline_batch_time(cost: Callable[[int], Cost], device: DeviceLike) -> Callable[[int], float]:
    """A batch cost from the roofline: ``cost(b)`` priced on ``device``.

    ``cost(b)`` is the :class:`perfmodel.ops.Cost` of a batch of b, priced on ``device`` by
    :func:`perfmodel.roofline.estimate`. A memory-bound model reads its weights once per
    batch, so a batch of b costs far less than b singles.

    Parameters
    ----------
    cost : callable
        ``cost(b)``: the :class:`perfmodel.ops.Cost` of serving a batch of b requests.
    device : str or hardware.Device
        A catalogue name or a device you built.

    Returns
    -------
    callable
        ``batch_time(b)``: the roofline time of a batch of b requests, in seconds.

    >>> from perfmodel import ops
    >>> layer = roofline_batch_time(lambda b: ops.matmul(b, 4096, 4096, dtype="bf16"), "H100 SXM")
    >>> round(layer(8) / layer(1), 2)          # eight requests for the price of one
    1.0
    """
    from perfmodel.hardware import get
    from perfmodel.roofline import estimate

    if not callable(cost):
        raise TypeError(f"`cost` must be callable on a batch size (got {type(cost).__name__}).")
    spec = get(device, argument="device")
    return lambda b: estimate(cost(b), spec).time_s


def _arrival_times(
    kind: Any, rate: float, n: int, rng: Any, spike: tuple[float, float, float]
) -> Any:
    import numpy as np

    if not isinstance(kind, str):
        times = np.asarray(kind, dtype=float)
        if times.ndim != 1 or len(times) < 2 or not np.all(np.isfinite(times)):
            raise ValueError("`arrivals` as a trace must be at least two finite times (seconds).")
        if np.any(np.diff(times) < 0):
            raise ValueError("`arrivals` as a trace must be sorted in time.")
        return times
    kind = choice("arrivals", kind, ARRIVALS)
    base = np.cumsum(rng.exponential(1.0 / rate, n))
    if kind == "poisson":
        return base
    # A Poisson process whose rate is `factor` times higher inside the window, by time
    # rescaling: the window holds factor x as many arrivals of the base process.
    factor, start, length = spike
    inside = (base >= start) & (base < start + factor * length)
    after = base >= start + factor * length
    return np.where(inside, start + (base - start) / factor,
                    np.where(after, base - (factor - 1) * length, base))  # fmt: skip


class LatencySummary:
    """Percentiles of a run's ``latencies`` (seconds): what a simulated and a measured run share."""

    __slots__ = ()
    latencies: Any

    def percentile(self, q: float) -> float:
        """The ``q``-th percentile of latency (``q`` in [0, 100]), seconds.

        Parameters
        ----------
        q : float
            The percentile, from 0 to 100 (50 is the median), dimensionless.

        Returns
        -------
        float
            The latency below which ``q`` percent of the requests finished, s.
        """
        import numpy as np

        q = non_negative("q", q)
        if q > 100:
            raise ValueError(f"`q` must be a percentile in [0, 100] (got {q:g}).")
        return float(np.percentile(self.latencies, q))

    @property
    def p50_latency_s(self) -> float:
        """The median latency, s."""
        return self.percentile(50)

    @property
    def p90_latency_s(self) -> float:
        """The 90th-percentile latency, s."""
        return self.percentile(90)

    @property
    def p99_latency_s(self) -> float:
        """The 99th-percentile latency: the tail, s."""
        return self.percentile(99)


@dataclass(frozen=True, slots=True, repr=False)
class SimulationResult(LatencySummary):
    """One simulated run: every request's times, and the figures that summarise them.

    The latency and wait statistics skip the first ``warmup`` share of requests (the
    empty system at the start is not the steady state); the whole-run figures
    (:attr:`throughput`, :attr:`utilization`, :attr:`mean_batch`, :attr:`mean_in_system`)
    count every request.

    Parameters
    ----------
    arrivals : numpy.ndarray
        Each request's arrival time, ascending, in seconds (s).
    starts : numpy.ndarray
        When each request's batch started service, in seconds (s).
    completions : numpy.ndarray
        When each request's batch finished, in seconds (s).
    batch_sizes : tuple of int
        Every batch's size, in the order the batches started, count.
    busy_s : float
        Worker time spent serving, summed over the workers, s.
    workers : int
        Workers across all servers, count.
    first_kept : int
        The index of the first request the statistics keep, count.
    """

    arrivals: Any
    starts: Any
    completions: Any
    batch_sizes: tuple[int, ...]
    busy_s: float
    workers: int
    first_kept: int

    @property
    def latencies(self) -> Any:
        """Seconds from arrival to completion, per kept request."""
        return (self.completions - self.arrivals)[self.first_kept :]

    @property
    def waits(self) -> Any:
        """Seconds from arrival to the start of service, per kept request."""
        return (self.starts - self.arrivals)[self.first_kept :]

    @property
    def service_times_s(self) -> Any:
        """Each request's batch time (start to finish of its batch), every request."""
        return self.completions - self.starts

    @property
    def span_s(self) -> float:
        """From the first arrival to the last completion."""
        return float(self.completions.max() - self.arrivals[0])

    @property
    def mean_latency_s(self) -> float:
        """Mean seconds from arrival to completion, over the kept requests, s."""
        return float(self.latencies.mean())

    @property
    def mean_wait_s(self) -> float:
        """Mean seconds from arrival to the start of service, over the kept requests, s."""
        return float(self.waits.mean())

    @property
    def throughput(self) -> float:
        """Requests completed per second over the whole run."""
        return len(self.arrivals) / self.span_s

    @property
    def utilization(self) -> float:
        """The share of worker time spent serving."""
        return self.busy_s / (self.workers * self.span_s)

    @property
    def mean_batch(self) -> float:
        """Requests per batch, on average."""
        return len(self.arrivals) / len(self.batch_sizes)

    @property
    def mean_in_system(self) -> float:
        """The time-average number of requests present, L, from a sweep over every arrival and
        completion (Little's law says ``L = throughput · mean latency`` over the whole run)."""
        import numpy as np

        times = np.concatenate([self.arrivals, self.completions])
        steps = np.concatenate([np.ones(len(self.arrivals)), -np.ones(len(self.completions))])
        order = np.argsort(times, kind="stable")
        present = np.cumsum(steps[order])[:-1]
        return float(np.sum(present * np.diff(times[order])) / self.span_s)

    def __repr__(self) -> str:
        return shown(
            "SimulationResult",
            requests=f"{len(self.arrivals):,}",
            workers=str(self.workers),
            p50=seconds(self.p50_latency_s),
            p99=seconds(self.p99_latency_s),
            mean_latency=seconds(self.mean_latency_s),
            utilization=percent(self.utilization),
            throughput=f"{self.throughput:,.4g} requests/s",
            mean_batch=f"{self.mean_batch:.3g}",
        )


@dataclass(frozen=True, slots=True, repr=False)
class Replicated:
    """Independent replications of one configuration: each figure is their mean.

    Any figure of :class:`SimulationResult` read from it (``mean_latency_s``,
    ``p99_latency_s``, ...) is the mean over the runs; :meth:`interval` gives a Student-t
    confidence interval for that mean.

    Parameters
    ----------
    runs : tuple of SimulationResult
        The replications, at least two for an interval.
    confidence : float
        The intervals' confidence level, fraction.
    """

    runs: tuple[SimulationResult, ...]
    confidence: float = 0.95

    def values(self, name: str) -> list[float]:
        """``name`` (``"mean_latency_s"``, ``"p99_latency_s"``...) in every replication.

        Parameters
        ----------
        name : str
            A scalar figure of :class:`SimulationResult`.

        Returns
        -------
        list of float
            Its value in each run, in the figure's own unit (s for the ``_s`` figures,
            fraction for ``utilization``, count for ``mean_batch``).
        """
        return [float(getattr(run, name)) for run in self.runs]

    def interval(self, name: str) -> tuple[float, float]:
        """The confidence interval for the mean of ``name`` across replications.

        Parameters
        ----------
        name : str
            A scalar figure of :class:`SimulationResult`.

        Returns
        -------
        tuple of float
            ``(low, high)`` at :attr:`confidence`, in the figure's own unit (s for the
            ``_s`` figures, fraction for ``utilization``, count for ``mean_batch``).
        """
        from scipy import stats

        values = self.values(name)
        mean = sum(values) / len(values)
        spread = stats.tstd(values) / math.sqrt(len(values))
        half = float(stats.t.ppf(0.5 + self.confidence / 2, len(values) - 1)) * spread
        return mean - half, mean + half

    def __getattr__(self, name: str) -> float:
        if name.startswith("_") or not hasattr(SimulationResult, name):
            raise AttributeError(name)
        values = self.values(name)
        return sum(values) / len(values)

    def __repr__(self) -> str:
        def figure(name: str) -> str:
            if len(self.runs) < 2:
                return seconds(getattr(self, name))
            low, high = self.interval(name)
            return f"{seconds(getattr(self, name))} ({seconds(low)} to {seconds(high)})"

        return shown(
            "Replicated",
            runs=str(len(self.runs)),
            requests=f"{len(self.runs[0].arrivals):,} each" if self.runs else "0",
            confidence=percent(self.confidence),
            p50=figure("p50_latency_s"),
            p99=figure("p99_latency_s"),
            utilization=percent(self.utilization),
            throughput=f"{self.throughput:,.4g} requests/s",
        )


def _run(
    arrivals: Any,
    *,
    servers: int,
    workers: int,
    policy: str,
    max_batch: int,
    max_wait_s: float,
    batch_time: Callable[[int], float],
    factors: Any,
    rng: Any,
) -> tuple[Any, Any, list[int], float]:
    import numpy as np

    n = len(arrivals)
    # Python lists while the loop runs: one numpy element store costs more than a list's.
    starts, done = [0.0] * n, [0.0] * n
    # batch_time(b), asked once per size; no batch holds more than every request
    durations: list[float | None] = [None] * (min(max_batch, n) + 1)
    queues: list[deque[int]] = [deque() for _ in range(servers)]
    free = [workers] * servers
    present = [0] * servers
    timer = [math.inf] * servers
    events: list[tuple[float, int, int, int]] = []  # (time, kind, server, batch size)
    sizes: list[int] = []
    busy = 0.0
    # as Python ints: indexing a numpy array once per arrival costs more than the rest
    picks = rng.integers(0, servers, size=(n, 2)).tolist() if servers > 1 else None
    arrival_list = arrivals.tolist()
    factor_list = factors.tolist()
    push, pop = heapq.heappush, heapq.heappop

    def dispatch(s: int, now: float) -> None:
        """Start batches on server ``s``'s free workers while its queue allows, else set
        the timer for its oldest request's wait."""
        nonlocal busy
        queue = queues[s]
        while free[s] and queue:
            b = len(queue)
            if b < max_batch:
                due = arrival_list[queue[0]] + max_wait_s
                if now < due:  # the batch may still fill: wait for it, at most until due
                    if timer[s] != due:
                        timer[s] = due
                        push(events, (due, _TIMER, s, 0))
                    return
            else:
                b = max_batch
            mean = durations[b]
            if mean is None:
                mean = durations[b] = batch_time(b)
            took = mean * factor_list[len(sizes)]
            sizes.append(b)
            busy += took
            free[s] -= 1
            end = now + took
            popleft = queue.popleft
            for _ in range(b):
                r = popleft()
                starts[r] = now
                done[r] = end
            push(events, (end, _DONE, s, b))

    # where each arrival goes, for the balancers that do not look at the servers
    targets: list[int] | None = None
    if servers == 1:
        targets = [0] * n
    elif policy == "round_robin":
        targets = [i % servers for i in range(n)]
    elif policy == "random":
        targets = [pick[0] for pick in picks]  # type: ignore[union-attr]
    least_loaded = policy == "least_loaded"
    i = 0
    while i < n or events:
        if i < n and (not events or arrival_list[i] <= events[0][0]):
            now = arrival_list[i]
            if targets is not None:
                s = targets[i]
            elif least_loaded:
                s = present.index(min(present))  # the first of the least loaded
            else:  # power of two choices
                a, b = picks[i]  # type: ignore[index]
                s = a if present[a] <= present[b] else b
            present[s] += 1
            queue = queues[s]
            queue.append(i)
            i += 1
            if free[s]:
                if len(queue) < max_batch:  # dispatch's most common case, here: a batch
                    due = arrival_list[queue[0]] + max_wait_s  # still filling sets a timer
                    if now < due:
                        if timer[s] != due:
                            timer[s] = due
                            push(events, (due, _TIMER, s, 0))
                        continue
                dispatch(s, now)
            continue
        now, kind, s, b = pop(events)
        if kind == _DONE:
            free[s] += 1
            present[s] -= b
        elif timer[s] == now:
            timer[s] = math.inf
        if queues[s]:
            dispatch(s, now)
    return np.array(starts), np.array(done), sizes, busy


def simulate(
    arrival_rate: float,
    mean_service_s: float,
    workers: int,
    *,
    distribution: str = "exponential",
    requests: int = 20_000,
    seed: int = 0,
    max_batch: int = 1,
    max_wait_s: float = 0.0,
    batch_time: Callable[[int], float] | None = None,
    servers: int = 1,
    policy: str = "round_robin",
    arrivals: str | Sequence[float] = "poisson",
    spike: tuple[float, float, float] = (4.0, 0.0, 0.0),
    warmup: float = 0.1,
    replications: int = 1,
) -> SimulationResult | Replicated:
    """Simulate a service and return its latencies, throughput and utilization.

    Parameters
    ----------
    arrival_rate : float
        Requests per s, across all servers (ignored for a trace).
    mean_service_s : float
        Seconds to serve one request alone (used when ``batch_time`` is None), s.
    workers : int
        Workers per server, each serving one batch at a time.
    distribution : {"exponential", "deterministic"}
        The service time's random factor.
    requests : int
        Requests per replication (a trace brings its own).
    seed : int
        Everything random derives from it; replication k uses its k-th spawned stream.
    max_batch : int
        Dynamic batching: the largest batch, count.
    max_wait_s : float
        Dynamic batching: how long the oldest request may wait for more to arrive while a
        worker is free, s.
    batch_time : callable, optional
        Mean seconds for a batch of b (``linear_batch_time``, or a roofline cost); by
        default ``mean_service_s * b``, so that batching buys nothing.
    servers : int
        Servers behind the load balancer, count.
    policy : {"round_robin", "random", "least_loaded", "power_of_two"}
        How the balancer picks a server: in turn, at random, the one with the fewest
        requests present, or the less loaded of two picked at random.
    arrivals : "poisson", "spike", or a sorted sequence of float
        Poisson at ``arrival_rate``; a spike multiplies the rate by ``spike[0]`` from
        ``spike[1]`` seconds for ``spike[2]`` seconds; a trace replays recorded times, s.
    spike : tuple of (float, float, float)
        ``(factor, start_s, length_s)`` for ``arrivals="spike"``: the rate's multiplier
        (positive, dimensionless), and the window's start and length, s.
    warmup : float
        Share of the first requests left out of the latency statistics (0 to 0.5),
        fraction.
    replications : int
        Independent runs, count; more than one returns a :class:`Replicated` with
        intervals.

    Returns
    -------
    SimulationResult or Replicated
        The run, or the replications when ``replications`` is more than one.

    Warns
    -----
    OverloadWarning
        When requests arrive (on average, outside a spike) at least as fast as the workers
        can serve them at their best batch size: utilization 1 or more, a queue that grows
        without bound, latencies that depend on how many requests were simulated.
    """
    import numpy as np

    rate = positive("arrival_rate", arrival_rate)
    mean = positive("mean_service_s", mean_service_s)
    workers, servers = count("workers", workers), count("servers", servers)
    distribution = choice("distribution", distribution, DISTRIBUTIONS)
    policy = choice("policy", policy, POLICIES)
    n = count("requests", requests, minimum=2)
    seed = count("seed", seed, minimum=0)
    max_batch = count("max_batch", max_batch)
    max_wait = non_negative("max_wait_s", max_wait_s)
    keep = fraction("warmup", warmup, allow_zero=True)
    if keep > 0.5:
        raise ValueError(f"`warmup` must be at most 0.5 (got {keep:g}).")
    replications = count("replications", replications)
    if batch_time is None:
        batch_time = lambda b: mean * b  # noqa: E731  (no sharing: batching buys nothing)
    elif not callable(batch_time):
        raise TypeError(f"`batch_time` must be callable (got {type(batch_time).__name__}).")
    if not (isinstance(spike, tuple) and len(spike) == 3):
        raise TypeError(f"`spike` must be a tuple (factor, start_s, length_s) (got {spike!r}).")
    spike = (positive("spike[0]", spike[0]), non_negative("spike[1]", spike[1]),
             non_negative("spike[2]", spike[2]))  # fmt: skip
    streams = np.random.SeedSequence(seed).spawn(replications)
    runs = []
    for stream in streams:
        rng = np.random.default_rng(stream)
        times = _arrival_times(arrivals, rate, n, rng, spike)
        factors = (rng.exponential(1.0, len(times)) if distribution == "exponential"
                   else np.ones(len(times)))  # fmt: skip
        starts, done, sizes, busy = _run(
            times, servers=servers, workers=workers, policy=policy, max_batch=max_batch,
            max_wait_s=max_wait, batch_time=batch_time, factors=factors, rng=rng,
        )  # fmt: skip
        runs.append(SimulationResult(times, starts, done, tuple(sizes), busy,
                                     workers * servers, int(keep * len(times))))  # fmt: skip
    span = float(times[-1] - times[0])
    offered = rate if isinstance(arrivals, str) else (len(times) - 1) / span if span else math.inf
    warn_if_overloaded(offered, batch_time, workers * servers, min(max_batch, n))
    return runs[0] if replications == 1 else Replicated(tuple(runs))
