"""Lecture 04: a matvec and a matmul placed on one or two devices' rooflines."""

from __future__ import annotations

from typing import Any

from perfmodel.hardware import names
from perfmodel.widgets.controls import dtype_dropdown, int_slider, live_plot
from perfmodel.widgets.op_cost import named_op

__all__ = ["roofline_explorer", "roofline_view"]


def roofline_view(device: str, compare: str | None, dtype: str, n: int) -> Any:
    """The roofline of ``device`` (and ``compare``) with a matvec and a matmul of size n.

    Parameters
    ----------
    device : str
        A catalogue device: its ``dtype`` roof is drawn solid and the two ops placed on it.
    compare : str or None
        A second catalogue device, its roof drawn dashed (when it has a ``dtype`` peak);
        None for none.
    dtype : str
        The ops' dtype and the roof drawn.
    n : int
        The size of the n x n matvec and the n x n x n matmul, count.

    Returns
    -------
    matplotlib.axes.Axes
        A new figure's axes with the log-log roofline (see
        :func:`perfmodel.plotting.roofline.roofline_plot`).
    """
    from perfmodel.plotting.roofline import roofline_plot

    ops_ = [named_op("matvec", n, dtype), named_op("matmul", n, dtype)]
    return roofline_plot(device, dtypes=[dtype], ops=ops_, compare=compare)


def roofline_explorer(device: str = "H100 SXM", compare: str = "A100 SXM4 80GB") -> Any:
    """Pick devices, a dtype and a size; see where a matvec and a matmul land.

    Parameters
    ----------
    device : str
        The catalogue device chosen at first.
    compare : str
        The device compared at first: a catalogue name, or ``"(none)"`` for none.

    Returns
    -------
    ipywidgets.VBox
        Two device dropdowns, a dtype dropdown offering the first device's dtypes (bf16
        at first) and a size slider (64 to 16384, 1024 at first), above
        :func:`roofline_view`'s figure, redrawn when a control changes.
    """
    import ipywidgets as widgets

    first = widgets.Dropdown(options=names(), value=device, description="device")
    second = widgets.Dropdown(options=["(none)", *names()], value=compare, description="compare")
    dtype = dtype_dropdown(first, "bf16")
    size = int_slider(1024, 64, 16384, "size n", step=64)

    def view(device: str, compare: str, dtype: str, n: int) -> Any:
        return roofline_view(device, None if compare == "(none)" else compare, dtype, n)

    out = live_plot(view, {"device": first, "compare": second, "dtype": dtype, "n": size})
    return widgets.VBox([widgets.HBox([first, second, dtype]), size, out])
