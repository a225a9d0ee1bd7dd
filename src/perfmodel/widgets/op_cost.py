"""Lecture 03: the FLOPs, bytes and intensity of an op, by name and size."""

from __future__ import annotations

from typing import Any

from perfmodel import ops
from perfmodel.hardware import DTYPES
from perfmodel.units import format_quantity
from perfmodel.widgets.controls import int_slider, live_text

__all__ = ["OP_KINDS", "named_op", "op_explorer", "op_summary"]

OP_KINDS = (
    "vector add",
    "matvec",
    "matmul",
    "matmul, C += A·B",
    "softmax",
    "attention",
    "attention (fused)",
)


def named_op(kind: str, n: int, dtype: str = "fp32") -> ops.Cost:
    """A square op of size ``n`` by name, for the explorers.

    ``"matmul"`` is C = A·B (C written, never read); ``"matmul, C += A·B"`` also reads C.

    Parameters
    ----------
    kind : str
        One of :data:`OP_KINDS`: an elementwise add of two n x n arrays (``"vector add"``),
        an n x n matvec, an n x n x n matmul, an n x n softmax, or the attention of one head
        of width 128 over n tokens, plain or fused.
    n : int
        The op's size, count.
    dtype : str
        The operands' dtype.

    Returns
    -------
    ops.Cost
        The op's FLOPs, bytes moved and label.

    Examples
    --------
    >>> named_op("matmul", 512).intensity, named_op("matmul, C += A·B", 512).intensity
    (85.33333333333333, 64.0)
    """
    makers = {
        "vector add": lambda: ops.elementwise(n * n, inputs=2, dtype=dtype, label="vector add"),
        "matvec": lambda: ops.matvec(n, n, dtype=dtype),
        "matmul": lambda: ops.matmul(n, n, n, dtype=dtype),
        "matmul, C += A·B": lambda: ops.matmul(n, n, n, accumulate=True, dtype=dtype),
        "softmax": lambda: ops.softmax(n, n, dtype=dtype),
        "attention": lambda: ops.attention(1, 1, n, 128, dtype=dtype),
        "attention (fused)": lambda: ops.attention(1, 1, n, 128, fused=True, dtype=dtype),
    }
    if kind not in makers:
        raise ValueError(f"`kind` must be one of {', '.join(makers)} (got {kind!r}).")
    return makers[kind]()


def op_summary(kind: str, n: int, dtype: str = "fp32") -> str:
    """FLOPs, bytes and intensity of a named op (the static twin of :func:`op_explorer`).

    Parameters
    ----------
    kind : str
        One of :data:`OP_KINDS` (see :func:`named_op`).
    n : int
        The op's size, count.
    dtype : str
        The operands' dtype.

    Returns
    -------
    str
        One line: the op's label and dtype, its FLOPs and bytes moved with SI prefixes, and
        its intensity in FLOP/B.

    Examples
    --------
    >>> print(op_summary("matmul, C += A·B", 512))
    matmul 512x512x512, C += A·B (fp32): 268 MFLOP, 4.19 MB moved, intensity 64 FLOP/B
    """
    cost = named_op(kind, n, dtype)
    return (
        f"{cost.label} ({dtype}): {format_quantity(cost.flops, 'FLOP')}, "
        f"{format_quantity(cost.bytes, 'B')} moved, intensity {cost.intensity:.3g} FLOP/B"
    )


def op_explorer(kind: str = "matmul, C += A·B", n: int = 512) -> Any:
    """Choose an op, its size and dtype; read its FLOPs, bytes and intensity.

    Parameters
    ----------
    kind : str
        The op chosen at first, one of :data:`OP_KINDS`.
    n : int
        The size at first, count (the slider runs from 16 to 8192 in steps of 16).

    Returns
    -------
    ipywidgets.VBox
        An op dropdown, a dtype dropdown (fp32 at first) and a size slider, above the line
        :func:`op_summary` writes for them, rewritten when a control changes.
    """
    import ipywidgets as widgets

    choice = widgets.Dropdown(options=OP_KINDS, value=kind, description="op")
    size = int_slider(n, 16, 8192, "size n", step=16)
    dtype = widgets.Dropdown(options=DTYPES, value="fp32", description="dtype")
    text = live_text(
        (choice, size, dtype),
        lambda: op_summary(choice.value, size.value, dtype.value),
        "perfmodel-op-summary",
    )
    return widgets.VBox([widgets.HBox([choice, dtype]), size, text])
