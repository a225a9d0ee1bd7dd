"""Devices side by side: one number per device, on a linear axis that starts at zero.

A linear axis from zero keeps ratios honest: a bar twice as long is twice the number. (A
log axis that starts near the smallest value makes 2.27x look like 1.2x.)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from perfmodel.plotting import COLOURS, new_axes, si_formatter, style

__all__ = ["bar_compare"]


def bar_compare(
    labels: Sequence[str],
    values: Sequence[float],
    *,
    unit: str,
    title: str,
    xlabel: str,
    ax: Any = None,
) -> Any:
    """Horizontal bars from zero, each labelled with its formatted value.

    Parameters
    ----------
    labels, values : sequences of the same length
        One bar per label.
    unit : str
        Unit of the values, written with SI prefixes on the bars and the axis.
    title, xlabel : str
        The axis title and the x-axis label (say what is measured, with its unit).
    ax : matplotlib.axes.Axes or None
        Axes to draw the bars on, the first label at the top, on an x axis from zero;
        None makes a new figure 10 inches wide and tall enough for the bars.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    from perfmodel.units import format_quantity

    if len(labels) != len(values):
        raise ValueError(
            f"`labels` and `values` must have the same length (got {len(labels)} and "
            f"{len(values)})."
        )
    if not labels:
        raise ValueError("`labels` must name at least one bar (got none).")
    with style():
        ax = new_axes(ax, (10, 0.55 * len(labels) + 1.8))
        positions = np.arange(len(labels))
        ax.barh(positions, values, color=COLOURS[0])
        ax.set_yticks(positions, labels)
        ax.invert_yaxis()
        ax.set_title(title)
        ax.set_xlabel(xlabel)
        ax.grid(axis="y", visible=False)
        for position, value in zip(positions, values, strict=True):
            ax.text(value, position, " " + format_quantity(value, unit), va="center", fontsize=12)
        ax.set_xlim(0, max(values) * 1.3)  # room for the longest bar's label
        ax.xaxis.set_major_formatter(si_formatter(unit))
    return ax
