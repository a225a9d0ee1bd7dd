"""Amdahl's and Gustafson's laws side by side, with measured speedups on top."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from perfmodel import scaling
from perfmodel.plotting import COLOURS, legend_below, new_axes, style

__all__ = ["scaling_plot"]


def scaling_plot(
    serial_fraction: float,
    max_processors: int = 64,
    *,
    measured: Sequence[tuple[float, float]] = (),
    measured_label: str = "measured",
    ax: Any = None,
) -> Any:
    """Speedup against processors for a program whose one-processor run spends
    ``serial_fraction`` of its time in serial work, two ways: the ideal line, Amdahl with its
    ceiling, Gustafson, and ``(p, speedup)`` points.

    * **Amdahl** keeps the problem: ``serial_fraction`` is his ``1 - α``.
    * **Gustafson** grows it with the processors: the serial part stays, the parallel part
      grows ``p``-fold, so each ``p``-processor run does what the one-processor run did, and
      its serial share ``s`` (a share of the ``p``-processor run) equals ``serial_fraction``.
      Measured against the grown problem's own one-processor run, the serial part is only
      :func:`perfmodel.scaling.amdahl_serial_fraction` ``(s, p)`` of it, which is why this
      curve escapes Amdahl's ceiling.

    Parameters
    ----------
    serial_fraction : float
        The share of the one-processor run spent in serial work, fraction (0 to 1).
    max_processors : int
        The last processor count drawn, count; the curves run over p = 1 to it.
    measured : sequence of tuple of float
        Measured ``(p, speedup)`` points: processors (count) and speedup over one
        processor (dimensionless); empty draws none.
    measured_label : str
        The legend's label for the measured points.
    ax : matplotlib.axes.Axes or None
        Axes to draw on: speedup against processors, the ideal line, Amdahl's curve and
        its ceiling (drawn when on the chart, always in the legend), Gustafson's
        line and the measured points, a legend below (beside when the figure holds other
        axes); None makes a 10 x 6 inch figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    p = [float(n) for n in np.arange(1, max_processors + 1)]
    alpha = 1 - serial_fraction
    serial_share = serial_fraction  # grown from the one-processor run: each run keeps its mix
    percent = f"{100 * serial_fraction:.3g}%"
    with style():
        ax = new_axes(ax, (10, 6))
        ax.plot(p, p, ":", color="grey", label="ideal: speedup = p")
        grown = (
            f"Gustafson: the problem grown p-fold; s = {percent} of each p-processor run\n"
            "(each keeps the one-processor run's mix of serial and parallel time: s = 1 − α)"
        )
        ax.plot(p, [scaling.gustafson_speedup(serial_share, n) for n in p], color=COLOURS[2],
                label=grown)  # fmt: skip
        ax.plot(p, [scaling.amdahl_speedup(alpha, n) for n in p], color=COLOURS[0],
                label=f"Amdahl: the problem stays; 1 − α = {percent} "
                      "of the one-processor run")  # fmt: skip
        limit = scaling.amdahl_limit(alpha)
        top = max_processors * 1.05  # the chart's top: a little headroom over the ideal line
        ceiling = {"color": COLOURS[0], "linestyle": "--", "linewidth": 1.5}
        if limit <= top:
            ax.axhline(limit, label=f"Amdahl's ceiling 1/(1 − α) = {limit:.3g}", **ceiling)
        else:  # listed all the same, so the legend keeps its size as the sliders move
            label = (
                "Amdahl's ceiling: none (no serial part)"
                if math.isinf(limit)
                else f"Amdahl's ceiling 1/(1 − α) = {limit:.3g} (above the chart)"
            )
            ax.plot([], [], label=label, **ceiling)
        if measured:
            xs, ys = zip(*measured, strict=True)
            ax.plot(xs, ys, "D", color="black", markersize=10, label=measured_label)
        ax.set(xlabel="processors p", ylabel="speedup (× one processor)",
               xlim=(1, max_processors), ylim=(0, top))  # fmt: skip
        ax.set_title("Strong scaling saturates; weak scaling keeps growing", loc="left")
        # Below: beside the axes, the two-line Gustafson entry left them a third of the width.
        legend_below(ax, fontsize=11)
    return ax
