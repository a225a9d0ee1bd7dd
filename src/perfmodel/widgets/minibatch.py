"""Lecture 05: how a layer's intensity and time per sample move with the minibatch size."""

from __future__ import annotations

from typing import Any

from perfmodel.hardware import names
from perfmodel.widgets.controls import dtype_dropdown, int_slider, live_plot

__all__ = ["batch_size_explorer", "batch_size_view"]


def batch_size_view(width: int = 4096, device: str = "GPU circa 2015", dtype: str = "fp32") -> Any:
    """The static twin of :func:`batch_size_explorer` (see
    :func:`perfmodel.plotting.minibatch.batch_size_plot`).

    Parameters
    ----------
    width : int
        N, the N x N layer's width, count.
    device : str
        A catalogue device name.
    dtype : str
        The layer's dtype; the device needs a peak in it.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels against the minibatch M: the layer's intensity beside the device's
        ridge, and the time per sample.
    """
    from perfmodel.plotting.minibatch import batch_size_plot

    return batch_size_plot(width, device, dtype)


def batch_size_explorer() -> Any:
    """Layer width, device and dtype controls for :func:`batch_size_view`.

    Returns
    -------
    ipywidgets.VBox
        A device dropdown (every catalogue device), a dtype dropdown offering the chosen
        device's dtypes, and a width slider (256 to 16384, step 256), above
        :func:`batch_size_view`'s figure, redrawn when a control changes.
    """
    import ipywidgets as widgets

    width = int_slider(4096, 256, 16384, "width N", step=256)
    device = widgets.Dropdown(options=names(), value="GPU circa 2015", description="device")
    dtype = dtype_dropdown(device, "fp32")
    out = live_plot(batch_size_view, {"width": width, "device": device, "dtype": dtype})
    return widgets.VBox([widgets.HBox([device, dtype]), width, out])
