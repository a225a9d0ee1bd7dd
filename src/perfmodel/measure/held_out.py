"""Real numpy operations the calibration never saw, predicted then measured.

* :class:`Case`, one operation: its numpy code, its one-pass cost, and the calls numpy makes;
* :func:`held_out_ops`, the sweep lecture 06 times (matvec, matmuls, softmax, layer norm, a
  convolution, an elementwise chain unfused and fused, a tiny add);
* :func:`predict_vs_measure`, each case timed beside the plain roofline and the calibrated
  prediction (:class:`perfmodel.measure.calibration.Calibration`), in a
  :class:`perfmodel.measure.comparison.Comparison`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from perfmodel import ops
from perfmodel._validate import flag
from perfmodel.measure.calibration import Calibration, Call
from perfmodel.measure.comparison import Comparison, Row
from perfmodel.measure.empirical import usable_cores
from perfmodel.measure.timing import measure
from perfmodel.roofline import estimate

__all__ = [
    "Case",
    "held_out_ops",
    "predict_vs_measure",
]


@dataclass(frozen=True, slots=True)
class Case:
    """An operation to predict and measure.

    Parameters
    ----------
    name : str
        What the operation is, with its sizes (``"matvec 3072x3072"``).
    run : callable
        The numpy code, called with no arguments.
    cost : ops.Cost
        The one-pass cost lecture 04's roofline would price.
    calls : tuple of Call
        The numpy calls it really makes, which the calibrated model prices.
    """

    name: str
    run: Callable[[], Any]
    cost: ops.Cost
    calls: tuple[Call, ...]


def _vector(n: int, *, inputs: int = 1, outputs: int = 1, flops: float = 1, footprint: int,
            unit: str = "vector", label: str = "elementwise") -> Call:  # fmt: skip
    cost = ops.elementwise(
        n, flops_per_element=flops, inputs=inputs, outputs=outputs, dtype="fp64", label=label
    )
    return Call(cost, unit, footprint)


def _row_reduction(rows: int, cols: int, *, footprint: int) -> Call:
    """``x.sum(axis=1)`` (or max, or mean): read every element, write one per row."""
    n = rows * cols
    return Call(ops.Cost(flops=n, bytes_read=8 * n, bytes_written=8 * rows, dtype="fp64",
                         label="row reduction"), "vector", footprint)  # fmt: skip


def held_out_ops(*, quick: bool = True) -> list[Case]:
    """Real numpy operations in fp64, each with its one-pass cost and its numpy calls.

    None of them is a micro-benchmark the calibration measured. ``quick`` picks sizes that
    run in a few seconds in all; ``False`` doubles the large ones.

    Parameters
    ----------
    quick : bool
        The small sizes; ``False`` doubles the large ones.

    Returns
    -------
    list of Case
        A matvec, four matmuls, a softmax, a layer norm, a 3x3 convolution, a chain of four
        elementwise ops unfused and fused, and an add of 8 elements, in that order.

    Examples
    --------
    >>> [case.name.split()[0] for case in held_out_ops(quick=True)][:5]
    ['matvec', 'matmul', 'matmul', 'matmul', 'matmul']
    """
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view

    quick = flag("quick", quick)
    rng = np.random.default_rng(0)
    scale = 1 if quick else 2
    cases: list[Case] = []

    n = 3072 * scale
    matrix, vector, product = rng.random((n, n)), rng.random(n), np.empty(n)
    cost = ops.matvec(n, n, dtype="fp64")
    matvec = functools.partial(np.matmul, matrix, vector, out=product)
    cases.append(Case(f"matvec {n}x{n}", matvec, cost, (Call(cost, "matrix", int(cost.bytes)),)))

    for size in (16, 128, 384, 768 * scale):
        a, b, c = rng.random((size, size)), rng.random((size, size)), np.empty((size, size))
        cost = ops.matmul(size, size, size, dtype="fp64")
        run = functools.partial(np.matmul, a, b, out=c)
        cases.append(Case(f"matmul {size}", run, cost, (Call(cost, "matrix", int(cost.bytes)),)))

    rows, cols = 512 * scale, 1024
    x, y, w = rng.random((rows, cols)), np.empty((rows, cols)), np.empty((rows, cols))
    per_row, per_row_2 = np.empty((rows, 1)), np.empty((rows, 1))
    gamma, beta = rng.random(cols), rng.random(cols)
    elements = rows * cols

    def softmax() -> None:
        np.max(x, axis=1, keepdims=True, out=per_row)
        np.subtract(x, per_row, out=y)
        np.exp(y, out=y)
        np.sum(y, axis=1, keepdims=True, out=per_row)
        np.divide(y, per_row, out=y)

    two = 2 * 8 * elements  # x and y
    softmax_calls = (
        _row_reduction(rows, cols, footprint=two),
        _vector(elements, footprint=two, unit="broadcast", label="subtract the row max"),
        _vector(elements, footprint=two, unit="exp", label="exp"),
        _row_reduction(rows, cols, footprint=two),
        _vector(elements, footprint=two, unit="broadcast", label="divide by the row sum"),
    )
    cases.append(
        Case(
            f"softmax {rows}x{cols}", softmax, ops.softmax(rows, cols, dtype="fp64"), softmax_calls
        )
    )

    def layer_norm() -> None:
        np.mean(x, axis=1, keepdims=True, out=per_row)
        np.subtract(x, per_row, out=y)
        np.multiply(y, y, out=w)
        np.mean(w, axis=1, keepdims=True, out=per_row_2)
        np.add(per_row_2, 1e-5, out=per_row_2)
        np.sqrt(per_row_2, out=per_row_2)
        np.divide(y, per_row_2, out=y)
        np.multiply(y, gamma, out=y)
        np.add(y, beta, out=y)

    three = 3 * 8 * elements  # x, y and w
    per_rows = [_vector(rows, footprint=three) for _ in range(2)]  # + eps and sqrt, one per row
    layer_norm_calls = (
        _row_reduction(rows, cols, footprint=three),
        _vector(rows, footprint=three, unit="vector"),  # mean: the sum's divide by cols
        _vector(elements, footprint=three, unit="broadcast", label="subtract the mean"),
        _vector(elements, footprint=three, label="square"),
        _row_reduction(rows, cols, footprint=three),
        _vector(rows, footprint=three, unit="vector"),
        *per_rows,
        _vector(elements, footprint=three, unit="broadcast", label="divide by the deviation"),
        _vector(elements, footprint=three, unit="broadcast", label="scale"),
        _vector(elements, footprint=three, unit="broadcast", label="shift"),
    )
    cases.append(
        Case(
            f"layer norm {rows}x{cols}",
            layer_norm,
            ops.layer_norm(rows, cols, dtype="fp64"),
            layer_norm_calls,
        )  # fmt: skip
    )

    channels, side = 32, 48 * scale
    image = rng.random((1, channels, side, side))
    kernel = rng.random((channels, channels, 3, 3))
    out_side = side - 2
    pixels = out_side * out_side

    def conv() -> Any:
        windows = sliding_window_view(image, (3, 3), axis=(2, 3))  # (1, c, h-2, w-2, 3, 3)
        return np.tensordot(windows, kernel, axes=([1, 4, 5], [1, 2, 3]))

    patch = channels * 9
    im2col = ops.Cost(flops=0, bytes_read=8 * pixels * patch, bytes_written=8 * pixels * patch,
                      dtype="fp64", label="gather the 3x3 windows")  # fmt: skip
    gemm = ops.matmul(pixels, patch, channels, dtype="fp64")
    conv_cost = ops.conv2d(1, channels, channels, side, side, 3, dtype="fp64")
    footprint = int(im2col.bytes + gemm.bytes)
    cases.append(
        Case(
            f"conv 3x3, {channels} channels, {side}x{side}",
            conv,
            conv_cost,
            (Call(im2col, "vector", footprint), Call(gemm, "matrix", footprint)),
        )
    )

    length = 8_000_000 * scale
    source, result = rng.random(length), np.empty(length)
    chain = ops.fusion(length, [1, 1, 1, 1], dtype="fp64")

    def unfused() -> None:
        np.multiply(source, 0.5, out=result)
        np.add(result, 1.0, out=result)
        np.multiply(result, result, out=result)
        np.subtract(result, 0.25, out=result)

    block = 32_768  # 256 kB of fp64, the block the Empirical Roofline Toolkit's kernel used
    buffer = np.empty(block)

    def fused() -> None:  # the same four ops, one cache-sized block at a time
        for start in range(0, length, block):
            part = buffer[: min(block, length - start)]
            np.multiply(source[start : start + block], 0.5, out=part)
            np.add(part, 1.0, out=part)
            np.multiply(part, part, out=part)
            np.subtract(part, 0.25, out=part)
            result[start : start + block] = part

    both, one = 2 * 8 * length, 8 * length  # source and result; result alone
    unfused_calls = (
        _vector(length, footprint=both, label="scale into the result"),
        *(_vector(length, footprint=one, label="in place") for _ in range(3)),
    )

    # Fused, each block is read from main memory once (into a buffer in cache), worked on
    # there, and written back once.
    def per_block(size: int) -> tuple[Call, ...]:
        read = ops.Cost(flops=size, bytes_read=8 * size, bytes_written=0, dtype="fp64",
                        label="read and scale a block")  # fmt: skip
        write = ops.Cost(flops=0, bytes_read=0, bytes_written=8 * size, dtype="fp64",
                         label="write a block back")  # fmt: skip
        in_cache = (_vector(size, footprint=8 * block, label="in cache") for _ in range(3))
        return (Call(read, "vector", both), *in_cache, Call(write, "vector", both))

    fused_calls = tuple(
        call for start in range(0, length, block) for call in per_block(min(block, length - start))
    )
    cases.append(
        Case(f"chain of 4 ops, unfused, {length:,}", unfused, chain.unfused, unfused_calls)
    )
    cases.append(Case(f"chain of 4 ops, fused, {length:,}", fused, chain.fused, fused_calls))

    small, small_out = np.ones(8), np.empty(8)
    tiny = ops.elementwise(8, inputs=2, dtype="fp64", label="add")
    cases.append(
        Case(
            "add of 8 elements",
            lambda: np.add(small, small, out=small_out),
            tiny,
            (Call(tiny, "vector", int(tiny.bytes)),),
        )  # fmt: skip
    )
    return cases


def predict_vs_measure(
    calibration: Calibration,
    cases: Sequence[Case] | None = None,
    *,
    quick: bool = True,
    progress: bool = True,
    **timing: Any,
) -> Comparison[Row]:
    """Time every case and put it next to the plain roofline and the calibrated prediction.

    Parameters
    ----------
    calibration : Calibration
        From :func:`calibrate`.
    cases : sequence of Case, optional
        Default :func:`held_out_ops` (``quick`` chooses their sizes).
    quick : bool
        The sizes of the default cases (see :func:`held_out_ops`); unused when ``cases`` is
        given.
    progress : bool
        Show a progress bar.
    **timing
        Passed to :func:`perfmodel.measure.timing.measure` (default 5 repeats, at least 0.05 s, and
        BLAS on every usable core, as :func:`perfmodel.measure.empirical.profile_machine` measured
        the ceilings).

    Returns
    -------
    Comparison
        One :class:`Row` per case, in order.
    """
    if not isinstance(calibration, Calibration):
        raise TypeError(
            f"`calibration` must be a Calibration from calibrate() "
            f"(got {type(calibration).__name__})."
        )
    cases = list(held_out_ops(quick=quick) if cases is None else cases)
    if not cases:
        raise ValueError("`cases` must hold at least one Case (got none).")
    from tqdm.auto import tqdm

    options = {"repeats": 5, "min_time_s": 0.05, "threads": usable_cores(), **timing}
    rows = []
    for case in tqdm(cases, desc="predict, then measure", disable=not progress):
        plain = estimate(case.cost, calibration.device, dtype=calibration.dtype, ceiling="measured")
        measured = measure(case.run, label=case.name, dtype=calibration.dtype, **options)
        rows.append(
            Row(
                name=case.name,
                cost=case.cost,
                roofline_s=plain.time_s,
                predicted_s=calibration.predict(case.calls),
                bound=calibration.bound(case.calls),
                measurement=measured,
            )
        )
    threads = options["threads"]
    threads = threads if isinstance(threads, int) else None
    return Comparison(tuple(rows), calibration, threads=threads)
