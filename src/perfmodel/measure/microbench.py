"""Micro-benchmarks with exact FLOP and byte accounting, timed by :mod:`perfmodel.measure.timing`.

Each kernel returns a :class:`KernelResult`: the :class:`~perfmodel.ops.Cost` of one call,
counted from what numpy actually does, and the :class:`~perfmodel.measure.timing.Measurement` of
that call. Their ratio is an achieved FLOP/s and bandwidth, ready to put on a roofline.

* :func:`stream`: STREAM's copy, scale, add and triad (McCalpin). Bytes are counted as
  STREAM counts them, one read per input word and one write per output word, **without
  write-allocate traffic**: a normal store first reads the line it writes, so the memory
  really moves one more word per output than counted, and the reported bandwidth is the
  one STREAM itself would report. numpy has no fused triad: ``a = b + s·c`` runs as two
  passes (``a = s·c``, then ``a += b``), counted as the five words they move.
* :func:`elementwise_roof`: the Empirical Roofline Toolkit's kernel. Each block of the
  array is loaded once, gets ``2·r`` FLOPs per element from ``r`` multiply-adds while it
  sits in cache, and is written back once; raising ``r`` walks up the sloped roof to the
  flat one.
* :func:`matmul`: ``C = A·B`` through numpy's BLAS.
* :func:`working_set`: ``acc += x`` within ``nbytes``, repeated; small working sets stay
  in a cache, large ones stream from main memory: one bandwidth per memory level.
* :func:`tiny_op`: an add of a few elements, where Python and numpy's dispatch take all
  the time and neither roof applies (the *overhead* regime).
* :func:`broadcast`: ``y = x - c`` with ``c`` one value per row, broadcast along it: numpy
  runs such loops at a fraction of a plain elementwise loop's speed.
* :func:`exponential`: ``exp`` over an array that stays in cache. A transcendental function
  is a short polynomial and some bit tricks, tens of instructions per element, so its rate
  is counted in evaluations per second (one "FLOP" per element), a ceiling of its own.

Elementwise kernels run on one thread unless ``threads`` asks for more: the array is then
cut into that many slices, each handed to a thread of a pool (numpy releases the GIL in
its loops). Matmul threads are limited with threadpoolctl instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perfmodel import ops
from perfmodel._validate import choice, count
from perfmodel.measure.threads import sliced
from perfmodel.measure.timing import Measurement, measure

__all__ = [
    "NUMPY_DTYPES",
    "STREAM_KERNELS",
    "KernelResult",
    "elementwise_roof",
    "broadcast",
    "exponential",
    "matmul",
    "stream",
    "tiny_matmul",
    "tiny_op",
    "working_set",
]

#: The course's dtypes numpy can compute in.
NUMPY_DTYPES = {"fp64": "float64", "fp32": "float32", "fp16": "float16"}
#: STREAM's four kernels.
STREAM_KERNELS = ("copy", "scale", "add", "triad")


@dataclass(frozen=True, slots=True)
class KernelResult:
    """One kernel: its exact cost per call and how long a call took.

    Parameters
    ----------
    cost : ops.Cost
        The FLOPs and bytes of one call, counted exactly.
    measurement : Measurement
        How long a call took.
    kind : str
        The family: ``"stream"``, ``"elementwise"``, ``"matmul"``, ``"working set"``,
        ``"tiny"``, ``"special"`` (:func:`exponential`) or ``"broadcast"``.
    name : str
        A short label for plots (``"triad"``, ``"r = 16"``).
    """

    cost: ops.Cost
    measurement: Measurement
    kind: str
    name: str

    @property
    def flops_per_s(self) -> float:
        """Achieved FLOP/s at the fastest sample: the best rate, as STREAM reports it."""
        return self.measurement.best_rate(self.cost.flops)

    @property
    def bytes_per_s(self) -> float:
        """Achieved bandwidth at the fastest sample, as the bytes were counted, B/s."""
        return self.measurement.best_rate(self.cost.bytes)

    @property
    def intensity(self) -> float:
        """FLOPs per byte of the kernel, FLOP/B."""
        return self.cost.intensity


def _numpy_dtype(dtype: str) -> Any:
    import numpy as np

    return np.dtype(NUMPY_DTYPES[choice("dtype", dtype, tuple(NUMPY_DTYPES))])


def stream(
    kind: str,
    n: int,
    *,
    dtype: str = "fp64",
    threads: int | None = None,
    **timing: Any,
) -> KernelResult:
    """One STREAM kernel over arrays of ``n`` elements (see the module notes on counting).

    Parameters
    ----------
    kind : {"copy", "scale", "add", "triad"}
        The STREAM kernel.
    n : int
        Elements per array, count (at least 1); make the arrays far larger than the
        last-level cache to measure main memory.
    dtype : {"fp64", "fp32", "fp16"}
        The arrays' data type.
    threads : int, optional
        Slices of the arrays run at once on a thread pool, count.
    **timing
        Passed to :func:`perfmodel.measure.timing.measure` (``repeats``, ``min_time_s``...).

    Returns
    -------
    KernelResult
        The exact cost of one call and its measurement.

    Examples
    --------
    >>> r = stream("add", 1000, repeats=2, min_time_s=0)
    >>> r.cost.flops, r.cost.bytes   # c = a + b: 1 FLOP and 3 words of 8 bytes each
    (1000, 24000)
    """
    import numpy as np

    kind = choice("kind", kind, STREAM_KERNELS)
    n = count("n", n)
    width = _numpy_dtype(dtype)
    a, b, c = (np.full(n, value, dtype=width) for value in (1.0, 2.0, 0.5))
    scalar = width.type(3.0)
    kernels: dict[str, tuple[Callable[[slice], Any], int, int, int]] = {
        # kind: (work on a slice, FLOPs per element, words read, words written)
        "copy": (lambda s: np.copyto(c[s], a[s]), 0, 1, 1),
        "scale": (lambda s: np.multiply(c[s], scalar, out=b[s]), 1, 1, 1),
        "add": (lambda s: np.add(a[s], b[s], out=c[s]), 1, 2, 1),
        "triad": (
            lambda s: (np.multiply(c[s], scalar, out=a[s]), np.add(a[s], b[s], out=a[s])),
            2,
            3,
            2,
        ),
    }
    work, flops, reads, writes = kernels[kind]
    size = width.itemsize
    cost = ops.Cost(
        flops=flops * n,
        bytes_read=reads * n * size,
        bytes_written=writes * n * size,
        dtype=dtype,
        label=f"STREAM {kind}",
    )
    with sliced(threads, n) as run:
        m = measure(
            lambda: run(work), label=cost.label, dtype=dtype, sizes={"n": n}, threads=threads,
            **timing,
        )  # fmt: skip
    return KernelResult(cost, m, "stream", kind)


def elementwise_roof(
    n: int,
    multiply_adds: int,
    *,
    block: int = 32768,
    dtype: str = "fp64",
    threads: int | None = None,
    **timing: Any,
) -> KernelResult:
    """The Empirical Roofline Toolkit's kernel: ``r`` multiply-adds per element, in cache.

    Each ``block`` of ``x`` is copied into a small buffer (read once), gets ``r`` passes of
    ``y = y·a + b`` there (2 FLOPs each), and is copied back (written once). So the kernel
    moves ``2·n·w`` bytes of main memory and does ``2·r·n`` FLOPs: intensity ``r / w``.

    Parameters
    ----------
    n : int
        Elements of ``x``, count (at least 1).
    multiply_adds : int
        ``r``, the multiply-adds per element, count (at least 1).
    block : int
        Elements per block copied into the small buffer, count (at least 1); the default
        is 256 KB of fp64. Each thread has a buffer of its own.
    dtype : {"fp64", "fp32", "fp16"}
        The arrays' data type.
    threads : int, optional
        Slices of ``x`` run at once on a thread pool, count.
    **timing
        Passed to :func:`perfmodel.measure.timing.measure` (``repeats``, ``min_time_s``...).

    Returns
    -------
    KernelResult
        The exact cost of one call and its measurement.

    Examples
    --------
    >>> r = elementwise_roof(8192, 4, repeats=2, min_time_s=0)
    >>> r.cost.flops, r.cost.bytes, r.intensity   # 8 FLOPs per element, 16 bytes moved
    (65536, 131072, 0.5)
    """
    import numpy as np

    n, multiply_adds, block = (
        count("n", n),
        count("multiply_adds", multiply_adds),
        count("block", block),
    )
    width = _numpy_dtype(dtype)
    x = np.full(n, 0.5, dtype=width)
    a, b = width.type(0.999), width.type(0.001)

    def work(piece: slice) -> None:
        buffer = np.empty(block, dtype=width)
        for start in range(piece.start, piece.stop, block):
            end = min(start + block, piece.stop)
            y = buffer[: end - start]
            np.copyto(y, x[start:end])
            for _ in range(multiply_adds):
                np.multiply(y, a, out=y)
                np.add(y, b, out=y)
            np.copyto(x[start:end], y)

    size = width.itemsize
    cost = ops.Cost(
        flops=2 * multiply_adds * n,
        bytes_read=n * size,
        bytes_written=n * size,
        dtype=dtype,
        label=f"{multiply_adds} multiply-adds per element",
    )
    with sliced(threads, n) as run:
        m = measure(
            lambda: run(work), label=cost.label, dtype=dtype, threads=threads,
            sizes={"n": n, "multiply_adds": multiply_adds}, **timing,
        )  # fmt: skip
    return KernelResult(cost, m, "elementwise", f"r = {multiply_adds}")


def matmul(
    n: int, *, dtype: str = "fp64", threads: int | None = None, **timing: Any
) -> KernelResult:
    """``C = A·B`` for square ``n × n`` matrices through numpy's BLAS.

    Parameters
    ----------
    n : int
        The matrices' side, count (at least 1).
    dtype : {"fp64", "fp32", "fp16"}
        The arrays' data type.
    threads : int, optional
        BLAS threads while measuring, count (threadpoolctl); None leaves the default.
    **timing
        Passed to :func:`perfmodel.measure.timing.measure` (``repeats``, ``min_time_s``...).

    Returns
    -------
    KernelResult
        The exact cost of one call and its measurement.

    Examples
    --------
    >>> r = matmul(64, dtype="fp32", repeats=2, min_time_s=0)
    >>> r.cost.flops == 2 * 64**3 and r.cost.bytes == 3 * 64 * 64 * 4
    True
    """
    import numpy as np

    n = count("n", n)
    width = _numpy_dtype(dtype)
    rng = np.random.default_rng(0)
    a, b = (rng.random((n, n)).astype(width) for _ in range(2))
    c = np.empty((n, n), dtype=width)
    cost = ops.matmul(n, n, n, dtype=dtype)
    m = measure(
        lambda: np.matmul(a, b, out=c), label=cost.label, dtype=dtype, threads=threads,
        sizes={"n": n}, **timing,
    )  # fmt: skip
    return KernelResult(cost, m, "matmul", f"matmul {n}")


def working_set(
    nbytes: int, *, dtype: str = "fp64", per_call: int = 8_000_000, **timing: Any
) -> KernelResult:
    """Add a vector into an accumulator again and again, within a working set of ``nbytes``.

    A working set that fits a cache is served by it on every pass after the first; one
    larger than the last-level cache comes from main memory. Sweep ``nbytes`` from a few
    kilobytes to a gigabyte and the bandwidth steps down once per memory level.

    Half the set is a vector ``x``, half the accumulator ``acc``. All the passes of a
    call are one numpy call, ``np.add.reduce`` down a view that repeats ``x`` without
    copying it, so that numpy's fixed cost per call does not hide a small set's speed. The
    first pass copies ``x`` into ``acc`` (a read and a write per element); each later one
    is ``acc += x`` (two reads and a write); no write-allocate is counted, as in STREAM. A
    call makes ``max(4, per_call // nbytes)`` passes.

    Parameters
    ----------
    nbytes : int
        The working set, ``x`` and the accumulator together, B (at least 1; rounded down to
        a whole number of element pairs, and at least one pair).
    dtype : {"fp64", "fp32", "fp16"}
        The arrays' data type.
    per_call : int
        Bytes one call should pass over, B (at least 1): a call makes
        ``max(4, per_call // set)`` passes over the set.
    **timing
        Passed to :func:`perfmodel.measure.timing.measure` (``repeats``, ``min_time_s``...).

    Returns
    -------
    KernelResult
        The exact cost of one call and its measurement.

    Examples
    --------
    >>> r = working_set(32 * 1024, per_call=64 * 1024, repeats=2, min_time_s=0)
    >>> r.cost.bytes_read, r.cost.bytes_written, r.cost.flops   # 4 passes over 2,048 doubles
    (114688, 65536, 6144)
    """
    import numpy as np

    nbytes, per_call = count("nbytes", nbytes), count("per_call", per_call)
    width = _numpy_dtype(dtype)
    n = max(1, nbytes // (2 * width.itemsize))
    passes = max(4, per_call // (2 * n * width.itemsize))
    x, accumulator = np.ones(n, dtype=width), np.empty(n, dtype=width)
    repeated = np.broadcast_to(x, (passes, n))
    word = width.itemsize
    cost = ops.Cost(
        flops=(passes - 1) * n,
        bytes_read=(2 * passes - 1) * n * word,
        bytes_written=passes * n * word,
        dtype=dtype,
        label=f"acc += x within {2 * n * word:,} B",
    )
    m = measure(
        lambda: np.add.reduce(repeated, axis=0, out=accumulator),
        label=cost.label, dtype=dtype, sizes={"bytes": 2 * n * word}, **timing,
    )  # fmt: skip
    return KernelResult(cost, m, "working set", f"{2 * n * word:,} B")


def tiny_op(n: int = 8, *, dtype: str = "fp64", **timing: Any) -> KernelResult:
    """``c = a + b`` on ``n`` elements, too few for either roof: what one call costs at all.

    Parameters
    ----------
    n : int
        Elements, count (at least 1).
    dtype : {"fp64", "fp32", "fp16"}
        The arrays' data type.
    **timing
        Passed to :func:`perfmodel.measure.timing.measure` (``repeats``, ``min_time_s``...).

    Returns
    -------
    KernelResult
        The exact cost of one call and its measurement.

    Examples
    --------
    >>> r = tiny_op(8, repeats=2, min_time_s=0)
    >>> r.cost.flops, r.cost.bytes
    (8, 192)
    """
    import numpy as np

    n = count("n", n)
    width = _numpy_dtype(dtype)
    a, b, c = (np.ones(n, dtype=width) for _ in range(3))
    cost = ops.elementwise(n, inputs=2, dtype=dtype, label=f"add of {n} elements")
    m = measure(
        lambda: np.add(a, b, out=c), label=cost.label, dtype=dtype, sizes={"n": n}, **timing
    )
    return KernelResult(cost, m, "tiny", f"add of {n}")


def exponential(n: int = 32_768, *, dtype: str = "fp64", **timing: Any) -> KernelResult:
    """``y = exp(x)`` over ``n`` elements (256 KB of fp64 by default, so a cache holds it).

    The cost counts one FLOP per element, so the achieved FLOP/s is exp evaluations per
    second: the ceiling for transcendental work, far below a multiply-add's.

    Parameters
    ----------
    n : int
        Elements, count (at least 1).
    dtype : {"fp64", "fp32", "fp16"}
        The arrays' data type.
    **timing
        Passed to :func:`perfmodel.measure.timing.measure` (``repeats``, ``min_time_s``...).

    Returns
    -------
    KernelResult
        The exact cost of one call and its measurement.

    Examples
    --------
    >>> r = exponential(1000, repeats=2, min_time_s=0)
    >>> r.cost.flops, r.cost.bytes
    (1000, 16000)
    """
    import numpy as np

    n = count("n", n)
    width = _numpy_dtype(dtype)
    x = np.linspace(-1.0, 1.0, n, dtype=width)
    y = np.empty_like(x)
    cost = ops.elementwise(n, dtype=dtype, label=f"exp of {n} elements")
    m = measure(lambda: np.exp(x, out=y), label=cost.label, dtype=dtype, sizes={"n": n}, **timing)
    return KernelResult(cost, m, "special", f"exp of {n:,}")


def tiny_matmul(n: int = 2, *, dtype: str = "fp64", **timing: Any) -> KernelResult:
    """``C = A·B`` for ``n × n`` matrices too small to matter: what a BLAS call costs at all.

    Parameters
    ----------
    n : int
        The matrices' side, count (at least 1).
    dtype : {"fp64", "fp32", "fp16"}
        The arrays' data type.
    **timing
        Passed to :func:`perfmodel.measure.timing.measure` (``repeats``, ``min_time_s``...).

    Returns
    -------
    KernelResult
        The exact cost of one call and its measurement.

    Examples
    --------
    >>> r = tiny_matmul(2, repeats=2, min_time_s=0)
    >>> r.kind, r.cost.flops
    ('tiny', 16)
    """
    result = matmul(n, dtype=dtype, **timing)
    return KernelResult(result.cost, result.measurement, "tiny", f"matmul {n}")


def broadcast(
    rows: int = 128, cols: int = 128, *, dtype: str = "fp64", **timing: Any
) -> KernelResult:
    """``y = x - c`` for a ``rows × cols`` array and a column ``c`` of one value per row.

    This is how a softmax subtracts each row's maximum and a layer norm each row's mean.
    The default 128 × 128 fp64 arrays (128 kB each) stay in cache, so the rate is the
    loop's own. The cost counts one FLOP per element.

    Parameters
    ----------
    rows : int
        Rows of ``x``, and values in ``c``, count (at least 1).
    cols : int
        Columns of ``x``, count (at least 1).
    dtype : {"fp64", "fp32", "fp16"}
        The arrays' data type.
    **timing
        Passed to :func:`perfmodel.measure.timing.measure` (``repeats``, ``min_time_s``...).

    Returns
    -------
    KernelResult
        The exact cost of one call and its measurement.

    Examples
    --------
    >>> r = broadcast(4, 8, repeats=2, min_time_s=0)
    >>> r.kind, r.cost.flops, r.cost.bytes   # reads x and c, writes y
    ('broadcast', 32, 544)
    """
    import numpy as np

    rows, cols = count("rows", rows), count("cols", cols)
    width = _numpy_dtype(dtype)
    x = np.ones((rows, cols), dtype=width)
    column = np.full((rows, 1), 0.5, dtype=width)
    y = np.empty_like(x)
    word = width.itemsize
    cost = ops.Cost(
        flops=rows * cols,
        bytes_read=(rows * cols + rows) * word,
        bytes_written=rows * cols * word,
        dtype=dtype,
        label=f"broadcast subtract {rows}x{cols}",
    )
    m = measure(
        lambda: np.subtract(x, column, out=y), label=cost.label, dtype=dtype,
        sizes={"rows": rows, "cols": cols}, **timing,
    )  # fmt: skip
    return KernelResult(cost, m, "broadcast", f"broadcast {rows}x{cols}")
