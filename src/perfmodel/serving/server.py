"""A real inference server on this machine, to measure next to the simulator's prediction.

:class:`Server` serves a numpy MLP with a pool of worker threads behind a dynamic batcher:
the batcher waits for a free worker, takes the oldest request, and gathers more until
``max_batch`` are in hand or the oldest has waited ``max_wait_s`` — the rule
:func:`perfmodel.serving.simulate` follows. numpy releases the GIL inside its matmuls, so
the workers run in parallel (each limited to one BLAS thread).

:func:`load_test` drives it with Poisson arrivals from a generator thread in the same
process, bounded both in requests and in seconds, and returns what it measured.
:func:`measure_batch_times` times one forward pass per batch size with
:func:`perfmodel.measure.timing.measure`, which is what the simulator needs to predict the same
service: predict, then measure. Everything stays in this process; nothing is sent over a
network.

>>> model = MLP(width=64, layers=2)
>>> model(np.ones((3, 64))).shape
(3, 64)
"""

from __future__ import annotations

import math
import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from perfmodel._show import seconds, shown
from perfmodel._validate import count, non_negative, positive
from perfmodel.measure.timing import clock
from perfmodel.serving.simulator import LatencySummary

__all__ = [
    "MLP",
    "LoadTest",
    "Server",
    "load_test",
    "measure_batch_times",
    "predict",
    "tail_report",
    "time_batches",
]


class MLP:
    """A small numpy MLP: ``layers`` square float32 layers of ``width`` with ReLU between.

    Calling it on an array of shape (b, width) returns the (b, width) output of a batch.

    Parameters
    ----------
    width : int
        Features in and out of every layer: one request's input size, count.
    layers : int
        Layers, each a ``width`` x ``width`` matmul, count.
    seed : int
        Seed of the random weights (standard normal over ``sqrt(width)``), count (0 or
        more).
    """

    def __init__(self, width: int = 512, layers: int = 4, seed: int = 0) -> None:
        self.width, self.layers = count("width", width), count("layers", layers)
        rng = np.random.default_rng(count("seed", seed, minimum=0))
        scale = 1.0 / np.sqrt(self.width)
        self.weights = [rng.standard_normal((self.width, self.width)).astype(np.float32) * scale
                        for _ in range(self.layers)]  # fmt: skip

    def __call__(self, batch: Any) -> Any:
        out = np.asarray(batch, dtype=np.float32)
        for i, weight in enumerate(self.weights):
            out = out @ weight
            if i < self.layers - 1:
                np.maximum(out, 0, out=out)
        return out


@dataclass
class _Request:
    arrival: float
    payload: Any
    start: float = 0.0
    done: float = 0.0


class Server:
    """Worker threads behind a dynamic batcher; :meth:`submit` is thread-safe.

    Use it as a context manager: ``with Server(model, workers=2, max_batch=8) as s: ...``.
    Leaving the block serves what was submitted, stops every thread and restores the BLAS
    threads; if the model raised in a worker, it then raises a RuntimeError from the first
    such error (a failed batch still frees its worker, so the server always stops).

    Parameters
    ----------
    model : callable
        Called on a stacked batch of payloads, such as an :class:`MLP`.
    workers : int
        Worker threads, each serving one batch at a time, count.
    max_batch : int
        The largest batch, count.
    max_wait_s : float
        How long the oldest request may wait for more to arrive once a worker is free, s.

    Attributes
    ----------
    completed : list
        The requests served, in the order their batches finished.
    batch_sizes : list of int
        The size of each batch served, in the order they finished.
    """

    def __init__(self, model: Any, *, workers: int = 1, max_batch: int = 1,
                 max_wait_s: float = 0.0) -> None:  # fmt: skip
        if not callable(model):
            raise TypeError(f"`model` must be callable on a batch (got {type(model).__name__}).")
        self.model = model
        self.workers = count("workers", workers)
        self.max_batch = count("max_batch", max_batch)
        self.max_wait_s = non_negative("max_wait_s", max_wait_s)
        self._queue: queue.Queue[_Request | None] = queue.Queue()
        self._free = threading.Semaphore(self.workers)
        self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="perfmodel-worker")
        self._batcher = threading.Thread(target=self._batch_loop, daemon=True)
        self.completed: list[_Request] = []
        self.batch_sizes: list[int] = []
        self._lock = threading.Lock()
        self._error: BaseException | None = None

    def __enter__(self) -> Server:
        from threadpoolctl import threadpool_limits

        self._limits = threadpool_limits(limits=1)  # one BLAS thread per worker
        self._batcher.start()
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            self._queue.put(None)
            self._batcher.join()
            self._pool.shutdown(wait=True)
        finally:
            self._limits.unregister()
        if self._error is not None and exc[0] is None:
            raise RuntimeError(f"the model failed in a worker: {self._error}") from self._error

    def submit(self, payload: Any) -> None:
        """Queue one request now.

        Parameters
        ----------
        payload : numpy.ndarray
            The request's input, such as a vector of ``width`` values; a batch stacks the
            payloads of its requests.
        """
        self._queue.put(_Request(clock(), payload))

    def _batch_loop(self) -> None:
        while True:
            self._free.acquire()
            first = self._queue.get()
            if first is None:
                return
            batch = [first]
            deadline = first.arrival + self.max_wait_s
            while len(batch) < self.max_batch:
                left = deadline - clock()
                try:
                    item = self._queue.get(timeout=left) if left > 0 else self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)  # finish this batch, then stop
                    break
                batch.append(item)
            self._pool.submit(self._serve, batch)

    def _serve(self, batch: list[_Request]) -> None:
        try:
            start = clock()
            self.model(np.stack([r.payload for r in batch]))
            done = clock()
            for r in batch:
                r.start, r.done = start, done
            with self._lock:
                self.completed.extend(batch)
                self.batch_sizes.append(len(batch))
        except BaseException as error:  # raised again when the server stops
            with self._lock:
                self._error = self._error or error
        finally:
            self._free.release()


@dataclass(frozen=True, slots=True, repr=False)
class LoadTest(LatencySummary):
    """What one load test measured: every request's arrival and completion, and the batches.

    The latency statistics skip the first 10% of requests (warm-up), as the simulator's
    do by default; the whole-run figures count every request.

    Parameters
    ----------
    arrivals : numpy.ndarray
        Each request's arrival time, ascending, in seconds (s) from the first.
    starts : numpy.ndarray
        When each request's batch started service, in seconds (s) from the first arrival.
    completions : numpy.ndarray
        When each request's batch finished, in seconds (s) from the first arrival.
    batch_sizes : tuple of int
        Every batch's size, in the order the batches finished, count.
    offered_rate : float
        The arrival rate asked of the generator, requests per s.
    """

    arrivals: Any
    starts: Any
    completions: Any
    batch_sizes: tuple[int, ...]
    offered_rate: float

    @property
    def service_times_s(self) -> Any:
        """Each request's batch time inside the server (start to finish of its batch)."""
        return self.completions - self.starts

    @property
    def latencies(self) -> Any:
        """Seconds from arrival to completion, per kept request."""
        latencies = self.completions - self.arrivals
        return latencies[len(latencies) // 10 :]

    @property
    def span_s(self) -> float:
        """From the first arrival to the last completion, s."""
        return float(self.completions.max() - self.arrivals[0])

    @property
    def arrival_rate(self) -> float:
        """The rate the generator actually achieved (it can fall behind on a busy machine),
        requests per s: the gaps between the first and the last arrival; NaN for a single
        request, which has no gap."""
        if len(self.arrivals) < 2:
            return math.nan
        return (len(self.arrivals) - 1) / float(self.arrivals[-1] - self.arrivals[0])

    @property
    def throughput(self) -> float:
        """Requests completed per second over the whole run."""
        return len(self.arrivals) / self.span_s

    @property
    def mean_batch(self) -> float:
        """Requests per batch, on average."""
        return len(self.arrivals) / len(self.batch_sizes)

    def __repr__(self) -> str:
        return shown(
            "LoadTest",
            requests=f"{len(self.arrivals):,}",
            offered_rate=f"{self.offered_rate:,.4g} requests/s",
            p50=seconds(self.p50_latency_s),
            p99=seconds(self.p99_latency_s),
            throughput=f"{self.throughput:,.4g} requests/s",
            mean_batch=f"{self.mean_batch:.3g}",
        )


def load_test(
    model: Any,
    *,
    arrival_rate: float,
    requests: int = 1000,
    workers: int = 1,
    max_batch: int = 1,
    max_wait_s: float = 0.0,
    seed: int = 0,
    time_limit_s: float = 30.0,
) -> LoadTest:
    """Send Poisson traffic at ``arrival_rate`` to a :class:`Server` and measure it.

    The generator stops after ``requests`` requests or ``time_limit_s`` seconds, whichever
    comes first; the first 10% of requests are left out of the latencies (warm-up).

    Parameters
    ----------
    model : callable
        Served by the :class:`Server`; it needs a ``width`` attribute (one request's input
        size), as :class:`MLP` has.
    arrival_rate : float
        The Poisson arrival rate asked for, positive, requests per s.
    requests : int
        The most requests to send, at least 10, count.
    workers : int
        The server's worker threads, count.
    max_batch : int
        The server's largest batch, count.
    max_wait_s : float
        How long the oldest request may wait for a fuller batch, s.
    seed : int
        Seed of the arrival gaps, count (0 or more).
    time_limit_s : float
        The most the generator runs, positive, s: a request due after it is not sent, and
        the generator never waits past it.

    Returns
    -------
    LoadTest
        Every request's times, relative to the first arrival, and the batches.

    Raises
    ------
    ValueError
        If no request was sent within ``time_limit_s`` (a :class:`LoadTest` holds at least
        one request).
    """
    rate = positive("arrival_rate", arrival_rate)
    n = count("requests", requests, minimum=10)
    limit = positive("time_limit_s", time_limit_s)
    rng = np.random.default_rng(count("seed", seed, minimum=0))
    gaps = rng.exponential(1.0 / rate, n)
    width = getattr(model, "width", None)
    if width is None:
        raise TypeError("`model` must have a `width` (the size of one request's input).")
    payload = np.ones(width, dtype=np.float32)
    with Server(model, workers=workers, max_batch=max_batch, max_wait_s=max_wait_s) as server:
        begin = clock()
        due = begin
        for gap in gaps:
            due += gap
            if due - begin > limit:
                break
            pause = due - clock()
            if pause > 0:
                time.sleep(pause)
            if clock() - begin > limit:
                break
            server.submit(payload)
    done = sorted(server.completed, key=lambda r: r.arrival)
    if not done:
        raise ValueError(
            f"no request was sent within `time_limit_s` ({limit:g} s): the first was due at "
            f"{gaps[0]:.3g} s; raise `time_limit_s` or `arrival_rate`."
        )
    arrivals = np.array([r.arrival for r in done])
    starts = np.array([r.start for r in done])
    completions = np.array([r.done for r in done])
    origin = arrivals[0]
    return LoadTest(arrivals - origin, starts - origin, completions - origin,
                    tuple(server.batch_sizes), rate)  # fmt: skip


def time_batches(model: Any, batches: Sequence[int]) -> dict[int, Any]:
    """One forward pass per batch size, timed with :func:`perfmodel.measure.timing.measure`.

    With one BLAS thread: a :class:`~perfmodel.measure.timing.Measurement` per size, whose
    ``noisy`` flag says when the machine was too busy for its median to be trusted.

    Parameters
    ----------
    model : callable
        Called on a (b, width) float32 array; it needs a ``width`` attribute.
    batches : sequence of int
        The batch sizes to time, count.

    Returns
    -------
    dict of int to Measurement
        The timing of one forward pass, per batch size.

    >>> timings = time_batches(MLP(width=32, layers=2), [1, 4])
    >>> sorted(timings), all(t.median_s > 0 for t in timings.values())
    ([1, 4], True)
    """
    from perfmodel.measure.timing import measure, thread_limit

    width = getattr(model, "width", None)
    if width is None:
        raise TypeError("`model` must have a `width` (the size of one request's input).")
    timings = {}
    with thread_limit(1):
        for i, b in enumerate(batches):
            x = np.ones((count(f"batches[{i}]", b), width), dtype=np.float32)

            def forward(x: Any = x) -> Any:
                return model(x)

            timings[b] = measure(forward, repeats=7, min_time_s=0.05)
    return timings


def measure_batch_times(model: Any, batches: Sequence[int]) -> dict[int, float]:
    """Median seconds of one forward pass per batch size (one BLAS thread).

    These are the service times the simulator needs (:func:`time_batches`, medians only).

    Parameters
    ----------
    model : callable
        Called on a (b, width) float32 array; it needs a ``width`` attribute.
    batches : sequence of int
        The batch sizes to time, count.

    Returns
    -------
    dict of int to float
        The median time of one forward pass, per batch size, s.
    """
    return {b: timing.median_s for b, timing in time_batches(model, batches).items()}


def predict(
    measured: LoadTest,
    batch_times: dict[int, float],
    *,
    workers: int,
    max_batch: int = 1,
    max_wait_s: float = 0.0,
) -> Any:
    """What the simulator predicts for the same arrivals and the same server.

    The load test's own arrival trace is replayed with deterministic service: each batch
    takes the measured time of its size (a batch size not measured costs as much as the
    next larger one that was, or as the largest one measured).

    Parameters
    ----------
    measured : LoadTest
        The load test, for its arrival times.
    batch_times : dict of int to float
        The measured time of one batch, per batch size, s; at least one size.
    workers : int
        The server's worker threads, count.
    max_batch : int
        The server's largest batch, count.
    max_wait_s : float
        How long the oldest request may wait for a fuller batch, s.

    Returns
    -------
    SimulationResult
        The simulated run over the same arrivals.
    """
    from perfmodel.serving.simulator import simulate

    if not batch_times:
        raise ValueError("`batch_times` must hold at least one measured batch size (got none).")
    sizes = sorted(batch_times)

    def batch_time(b: int) -> float:
        return batch_times[next((s for s in sizes if s >= b), sizes[-1])]

    return simulate(measured.arrival_rate, batch_times[sizes[0]], workers,
                    distribution="deterministic", arrivals=measured.arrivals,
                    max_batch=max_batch, max_wait_s=max_wait_s, batch_time=batch_time)  # fmt: skip


def tail_report(pairs: Sequence[tuple[Any, Any]]) -> str:
    """Where measured latencies sit against their predictions, counted over load tests.

    ``pairs`` holds (measured, predicted) runs, each with ``p50_latency_s`` and
    ``p99_latency_s``: a :class:`LoadTest` and what :func:`predict` made of it. The line
    counts the loads where the measured p50 and p99 are above their predictions, and where
    the p99 misses by a larger factor than the p50, so that a lecture can say what its own
    run shows.

    Parameters
    ----------
    pairs : sequence of (run, run)
        ``(measured, predicted)`` pairs, at least one, each run with ``p50_latency_s``
        and ``p99_latency_s``.

    Returns
    -------
    str
        One line of three counts out of the number of pairs.

    >>> from perfmodel.serving import simulate
    >>> fast = simulate(0.5, 1.0, 1, requests=2000, seed=1)
    >>> slow = simulate(0.5, 1.5, 1, requests=2000, seed=1)
    >>> for part in tail_report([(slow, fast)]).split(", "):
    ...     print(part)
    the measured p50 is above its prediction at 1 of 1 loads
    the p99 at 1 of 1
    by a larger factor than the p50 at 0 of 1
    """
    given: Any = pairs  # checked at run time, whatever the annotation says
    if not isinstance(given, Sequence) or isinstance(given, str | bytes):
        raise TypeError(f"`pairs` must be a sequence of (measured, predicted) runs "
                        f"(got {type(pairs).__name__}).")  # fmt: skip
    if not pairs:
        raise ValueError("`pairs` must hold at least one (measured, predicted) pair (got none).")
    p50 = p99 = wider = 0
    for i, pair in enumerate(pairs):
        runs = pair if isinstance(pair, tuple) and len(pair) == 2 else ()
        if not runs or not all(hasattr(run, "p50_latency_s") and hasattr(run, "p99_latency_s")
                               for run in runs):  # fmt: skip
            raise TypeError(f"`pairs[{i}]` must be a (measured, predicted) tuple of runs with "
                            f"p50 and p99 latencies (got {pair!r}).")  # fmt: skip
        measured, predicted = runs
        p50 += measured.p50_latency_s > predicted.p50_latency_s
        p99 += measured.p99_latency_s > predicted.p99_latency_s
        wider += (measured.p99_latency_s / predicted.p99_latency_s
                  > measured.p50_latency_s / predicted.p50_latency_s)  # fmt: skip
    n = len(pairs)
    return (f"the measured p50 is above its prediction at {p50} of {n} loads, the p99 at {p99} "
            f"of {n}, by a larger factor than the p50 at {wider} of {n}")  # fmt: skip
