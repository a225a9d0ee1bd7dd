"""Strong and weak scaling runs on this machine's threads, and the workloads they time.

* :func:`operation_scaling` and :func:`branch_scaling`: the measurements lecture 07 plots
  (``np.sin`` against ``np.cumsum`` over lengths and thread counts; two branches of a model
  in turn and at once).
* :func:`measure_scaling`: one workload at every thread count, the :class:`ScalingRun`
  lecture 08 fits; its ``make_work`` workloads: :func:`matmul_work` and
  :func:`elementwise_work` (strong or weak), :func:`io_then_compute_work` and
  :func:`locked_work` (a serial part from I/O or a lock), :func:`memory_bound_work`
  (threads contending for memory).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Sequence
from typing import Any

from perfmodel._validate import count, describe, fraction
from perfmodel.measure.speedups import BranchPoint, ScalingPoint, ScalingRun
from perfmodel.measure.threads import parallel_apply, parallel_cumsum, run_branches, sliced
from perfmodel.measure.timing import measure, thread_limit

__all__ = [
    "branch_scaling",
    "elementwise_work",
    "io_then_compute_work",
    "locked_work",
    "matmul_work",
    "measure_scaling",
    "memory_bound_work",
    "operation_scaling",
]


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
