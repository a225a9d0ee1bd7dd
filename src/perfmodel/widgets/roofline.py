"""Lecture 04: a matvec and a matmul placed on one or two devices' rooflines."""

from __future__ import annotations

from typing import Any

from perfmodel.hardware import names
from perfmodel.widgets.controls import dtype_dropdown, int_slider, live_plot
from perfmodel.widgets.op_cost import named_op

__all__ = ["roofline_explorer", "roofline_view"]


def roofline_view(device: str, compare: str | None, dtype: str, n: int) -> Any:
    """The roofline of ``device`` (and ``compare``) with a matvec and a matmul of size n.

    Returns
    -------
    matplotlib.axes.Axes
    """
    from perfmodel.plotting.roofline import roofline_plot

    ops_ = [named_op("matvec", n, dtype), named_op("matmul", n, dtype)]
    return roofline_plot(device, dtypes=[dtype], ops=ops_, compare=compare)


def roofline_explorer(device: str = "H100 SXM", compare: str = "A100 SXM4 80GB") -> Any:
    """Pick devices, a dtype and a size; see where a matvec and a matmul land."""
    import ipywidgets as widgets

    first = widgets.Dropdown(options=names(), value=device, description="device")
    second = widgets.Dropdown(options=["(none)", *names()], value=compare, description="compare")
    dtype = dtype_dropdown(first, "bf16")
    size = int_slider(1024, 64, 16384, "size n", step=64)

    def view(device: str, compare: str, dtype: str, n: int) -> Any:
        return roofline_view(device, None if compare == "(none)" else compare, dtype, n)

    out = live_plot(view, {"device": first, "compare": second, "dtype": dtype, "n": size})
    return widgets.VBox([widgets.HBox([first, second, dtype]), size, out])
