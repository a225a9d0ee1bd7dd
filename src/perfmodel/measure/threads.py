"""Run numpy work on several threads: slices of one array, or independent branches, at once.

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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from perfmodel._validate import count, flag

__all__ = [
    "blocked_scan_additions",
    "parallel_apply",
    "parallel_cumsum",
    "run_branches",
    "sliced",
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
