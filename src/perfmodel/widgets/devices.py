"""Lecture 02: the catalogue's devices compared on one metric at a time."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from perfmodel.hardware import DTYPES, Device, catalogue, op_unit
from perfmodel.widgets.controls import live_plot

__all__ = ["METRICS", "device_bars", "device_explorer"]

#: Metric name -> (its unit for a dtype, how to read it off a device).
METRICS: dict[str, tuple[Callable[[str], str], Callable[[Device, str], float]]] = {
    "peak compute": (lambda dtype: f"{op_unit(dtype)}/s", lambda d, dtype: d.peak_flops(dtype)),
    "memory bandwidth": (lambda dtype: "B/s", lambda d, dtype: d.memory_bandwidth),
    "ridge point": (lambda dtype: f"{op_unit(dtype)}/B", lambda d, dtype: d.ridge_point(dtype)),
}


def device_bars(dtype: str = "bf16", metric: str = "peak compute", ax: Any = None) -> Any:
    """Bars of one metric for every catalogue device with a dense peak in ``dtype``.

    Parameters
    ----------
    dtype : str
        The dtype whose peak is read; devices without a peak in it are left out (none at
        all is a ValueError).
    metric : str
        A key of :data:`METRICS`: ``"peak compute"`` (FLOP/s, or OP/s for an integer
        dtype), ``"memory bandwidth"`` (B/s) or ``"ridge point"`` (FLOP/B).
    ax : matplotlib.axes.Axes or None
        Axes to draw on: one horizontal bar per device, in catalogue order, on an axis from
        zero, each labelled with its value (see
        :func:`perfmodel.plotting.devices.bar_compare`); None makes a new figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    from perfmodel.plotting.devices import bar_compare

    if metric not in METRICS:
        raise ValueError(f"`metric` must be one of {', '.join(METRICS)} (got {metric!r}).")
    unit_of, read = METRICS[metric]
    devices = [d for d in catalogue().devices.values() if dtype in d.peak_flops_by_dtype]
    if not devices:
        raise ValueError(f"no catalogue device has a {dtype!r} peak.")
    unit = unit_of(dtype)
    return bar_compare(
        [d.name for d in devices],
        [read(d, dtype) for d in devices],
        unit=unit,
        title=f"{metric}, {dtype} (dense, nameplate)",
        xlabel=f"{metric} ({unit})",
        ax=ax,
    )


def device_explorer() -> Any:
    """Pick a dtype and a metric; compare every device in the catalogue.

    Returns
    -------
    ipywidgets.VBox
        A dtype dropdown (starting at bf16) and toggle buttons for the metric, above
        :func:`device_bars`'s figure, redrawn when either changes.
    """
    import ipywidgets as widgets

    dtype = widgets.Dropdown(options=DTYPES, value="bf16", description="dtype")
    metric = widgets.ToggleButtons(options=list(METRICS), description="metric")
    out = live_plot(device_bars, {"dtype": dtype, "metric": metric})
    return widgets.VBox([widgets.HBox([dtype]), metric, out])
