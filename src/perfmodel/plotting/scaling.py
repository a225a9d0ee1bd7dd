"""Amdahl's and Gustafson's laws side by side, with measured speedups on top."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from perfmodel import scaling
from perfmodel.plotting import COLOURS, new_axes, style

__all__ = ["scaling_plot"]


def scaling_plot(
    serial: float,
    max_processors: int = 64,
    *,
    measured: Sequence[tuple[float, float]] = (),
    measured_label: str = "measured",
    ax: Any = None,
) -> Any:
    """Speedup against processors: Amdahl with parallel fraction ``1 - serial``, Gustafson with
    serial fraction ``serial``, the ideal line, Amdahl's ceiling, and ``(p, speedup)`` points.

    Returns
    -------
    matplotlib.axes.Axes
    """
    p = [float(n) for n in np.arange(1, max_processors + 1)]
    alpha = 1 - serial
    with style():
        ax = new_axes(ax, (10, 6))
        ax.plot(p, p, ":", color="grey", label="ideal: speedup = p")
        ax.plot(p, [scaling.gustafson_speedup(serial, n) for n in p], color=COLOURS[2],
                label=f"Gustafson, s = {serial:.0%} (the problem grows)")  # fmt: skip
        ax.plot(p, [scaling.amdahl_speedup(alpha, n) for n in p], color=COLOURS[0],
                label=f"Amdahl, α = {alpha:.0%} (the problem stays)")  # fmt: skip
        limit = scaling.amdahl_limit(alpha)
        if limit < max_processors:
            ax.axhline(limit, color=COLOURS[0], linestyle="--", linewidth=1.5,
                       label=f"Amdahl's ceiling 1/(1-α) = {limit:.3g}")  # fmt: skip
        if measured:
            xs, ys = zip(*measured, strict=True)
            ax.plot(xs, ys, "D", color="black", markersize=10, label=measured_label)
        ax.set(xlabel="processors p", ylabel="speedup", xlim=(1, max_processors),
               ylim=(0, max_processors * 1.05),
               title="Strong scaling saturates; weak scaling keeps growing")  # fmt: skip
        ax.legend(loc="upper left", fontsize=11)
    return ax
