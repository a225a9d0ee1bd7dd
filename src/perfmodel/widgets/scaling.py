"""Lecture 08: Amdahl's and Gustafson's laws explored, with measured points on top."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perfmodel._validate import number
from perfmodel.widgets.controls import int_slider, live_plot

__all__ = ["scaling_explorer", "scaling_view"]


def scaling_view(
    serial_percent: float = 20.0,
    max_processors: int = 64,
    measured: Sequence[tuple[float, float]] = (),
    measured_label: str = "measured",
) -> Any:
    """The static twin of :func:`scaling_explorer` (see
    :func:`perfmodel.plotting.scaling.scaling_plot`): ``serial_percent`` is Amdahl's serial
    fraction, a share of the one-processor run, in percent.

    Parameters
    ----------
    serial_percent : float
        The serial share of the one-processor run in percent, 0 to 100 (20.0 is a
        fraction of 0.2).
    max_processors : int
        The last processor count drawn, count.
    measured : sequence of tuple of float
        Measured ``(p, speedup)`` points: processors (count) and speedup over one
        processor (dimensionless); empty draws none.
    measured_label : str
        The legend's label for the measured points.

    Returns
    -------
    matplotlib.axes.Axes
        A new figure's axes: speedup against processors, the ideal line, Amdahl's and
        Gustafson's laws and the measured points (see
        :func:`perfmodel.plotting.scaling.scaling_plot`).

    Raises
    ------
    TypeError
        If ``serial_percent`` is not a number.
    ValueError
        If ``serial_percent`` is outside [0, 100] or NaN.
    """
    from perfmodel.plotting.scaling import scaling_plot

    percent = number("serial_percent", serial_percent, minimum=0, maximum=100)
    return scaling_plot(
        percent / 100, max_processors, measured=measured, measured_label=measured_label
    )


def scaling_explorer(
    measured: Sequence[tuple[float, float]] = (), serial_percent: float = 20.0
) -> Any:
    """A serial fraction (a share of the one-processor run) and a processor count; both laws
    redrawn, ``measured`` points kept.

    Parameters
    ----------
    measured : sequence of tuple of float
        Measured ``(p, speedup)`` points drawn on every figure: processors (count) and
        speedup over one processor (dimensionless).
    serial_percent : float
        The serial share the slider starts at, in percent (0 to 100 in steps of 0.5;
        20.0 is a fraction of 0.2).

    Returns
    -------
    ipywidgets.VBox
        A serial-percent slider and a processor-count slider (2 to 1024, 64 at first),
        above :func:`scaling_view`'s figure, redrawn when a slider is released.

    Raises
    ------
    TypeError
        If ``serial_percent`` is not a number.
    ValueError
        If ``serial_percent`` is outside [0, 100] or NaN (the slider would clamp it
        silently).
    """
    import ipywidgets as widgets

    percent = number("serial_percent", serial_percent, minimum=0, maximum=100)
    serial = widgets.FloatSlider(
        value=percent, min=0, max=100, step=0.5, description="serial %",
        style={"description_width": "8em"}, layout=widgets.Layout(width="38em"),
    )  # fmt: skip
    processors = int_slider(64, 2, 1024, "processors", step=2)

    def view(serial_percent: float, max_processors: int) -> Any:
        return scaling_view(serial_percent, max_processors, measured)

    out = live_plot(view, {"serial_percent": serial, "max_processors": processors})
    return widgets.VBox([serial, processors, out])
