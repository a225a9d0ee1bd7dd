"""Lecture 12's pictures: predicted against measured, where an upgrade helps, and the
published runs.

* :func:`node_plot`: every node's predicted and measured time on log-log axes, coloured by
  op class, with the line where they agree and a ±25% band;
* :func:`upgrade_plot`: each op class's time on the old device and the new one, its
  speed-up written beside it, and the two ratios it can take;
* :func:`published_plot`: published throughputs beside the roofline's predictions, as
  points on a log axis (never bars: a bar's length on a log axis misstates the ratio).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Any

import numpy as np

from perfmodel.plotting import COLOURS, legend_beside, new_axes, si_formatter, style

__all__ = ["node_plot", "published_plot", "upgrade_plot"]


def _class_colours(classes: Collection[str]) -> dict[str, str]:
    """One colour per op class present, none shared: the house colours while they last, then
    matplotlib's tab20 (the house has seven; ONNX models show up to eleven classes)."""
    import matplotlib as mpl

    from perfmodel.capstone import OP_CLASSES

    present = [name for name in OP_CLASSES if name in classes]
    tab20 = mpl.colormaps["tab20"]
    palette = list(COLOURS) if len(present) <= len(COLOURS) else [tab20(i) for i in range(20)]
    return {name: mpl.colors.to_hex(palette[i]) for i, name in enumerate(present)}


def node_plot(comparison: Any, *, name: str | None = None, ax: Any = None) -> Any:
    """Each node of a :func:`perfmodel.capstone.compare`: predicted (x) and measured (y).

    ``name`` titles the plot (the comparison's ONNX graph name by default). The op classes
    with the most nodes are drawn first, so a class of a few nodes stays on top, visible.

    Parameters
    ----------
    comparison : perfmodel.measure.comparison.Comparison
        The comparison :func:`perfmodel.capstone.compare` returns: its rows (one
        :class:`perfmodel.capstone.NodeComparison` per node) give each point's predicted and
        measured seconds and its op class; its end-to-end and median node errors go in the
        title.
    name : str or None
        The title's model name; None (or empty) for ``comparison.model``.
    ax : matplotlib.axes.Axes or None
        Axes to draw on: one dot per node on log-log axes, the line where measured equals
        predicted and its ±25% band, with a legend beside them; None makes a 9 x 7 inch
        figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    rows = comparison.rows
    colours = _class_colours({row.op_class for row in rows})
    mine = {op: [row for row in rows if row.op_class == op] for op in colours}
    with style():
        ax = new_axes(ax, (9, 7))
        handles = {}
        for z, op in enumerate(sorted(colours, key=lambda op: -len(mine[op]))):
            (handles[op],) = ax.plot(
                [r.predicted_s for r in mine[op]],
                [r.measured_s for r in mine[op]],
                "o",
                color=colours[op],
                alpha=0.75,
                markeredgecolor="white",
                markeredgewidth=0.6,
                zorder=3 + z,
                label=f"{op} ({len(mine[op])})",
            )
        low = min(min(r.predicted_s, r.measured_s) for r in rows) / 1.5
        high = max(max(r.predicted_s, r.measured_s) for r in rows) * 1.5
        span = np.array([low, high])
        (equal,) = ax.plot(span, span, color="black", lw=1.5, label="measured = predicted")
        band = ax.fill_between(span, span / 1.25, span * 1.25, color="grey", alpha=0.2,
                               label="±25%")  # fmt: skip
        ax.set(
            xscale="log",
            yscale="log",
            xlim=(low, high),
            ylim=(low, high),
            xlabel="predicted per node",
            ylabel="measured per node (onnxruntime)",
            title=f"{name or comparison.model}: end to end {comparison.error:+.0%}, "
            f"median node {comparison.median_node_error:.0%} off",
        )
        ax.xaxis.set_major_formatter(si_formatter("s"))
        ax.yaxis.set_major_formatter(si_formatter("s"))
        legend_beside(ax, handles=[*(handles[op] for op in colours), equal, band], fontsize=11)
    return ax


def upgrade_plot(change: Any, *, ax: Any = None) -> Any:
    """A :class:`perfmodel.capstone.Upgrade`: each op class's time before and after.

    Parameters
    ----------
    change : perfmodel.capstone.Upgrade
        The upgrade :func:`perfmodel.capstone.upgrade` returns: its ``by_class()`` rows
        give the bars, and its overall speed-up and peak and bandwidth ratios the title.
    ax : matplotlib.axes.Axes or None
        Axes to draw on: a pair of horizontal bars per op class (predicted seconds on the
        old device and the new one), each labelled with its speed-up and what bounds it;
        None makes an 11 x 6.5 inch figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    rows = change.by_class()
    with style():
        ax = new_axes(ax, (11, 6.5))
        y = np.arange(len(rows))
        before = [row.before_s for row in rows]
        after = [row.after_s for row in rows]
        ax.barh(y - 0.2, before, 0.4, color=COLOURS[1], label=change.before.device.name)
        ax.barh(y + 0.2, after, 0.4, color=COLOURS[0], label=change.after.device.name)
        for i, row in enumerate(rows):
            ax.annotate(
                f" {row.speedup:.2f}x ({row.bound})",
                (row.before_s, i - 0.2),
                va="center",
                fontsize=13,
            )
        ax.set_yticks(y, [row.op_class for row in rows])
        ax.invert_yaxis()
        ax.set_xlim(0, max(before) * 1.6)
        ax.xaxis.set_major_formatter(si_formatter("s"))
        ax.set(
            xlabel=f"predicted time per {'step' if change.before.training else 'pass'}",
            title=f"{change.speedup:.2f}x overall: peak {change.peak_ratio:.2f}x, "
            f"bandwidth {change.bandwidth_ratio:.2f}x",
        )
        ax.legend(loc="lower right", fontsize=12)
    return ax


def published_plot(predictions: Sequence[Any], *, ax: Any = None) -> Any:
    """Published images/s (filled dot) beside the roofline's prediction (open dot), one row a
    run, joined by a line and labelled with their ratio.

    Throughputs here span two decades (415 to 29,368 images/s), so the axis is logarithmic,
    and a log axis takes points, never bars: a bar's length on it measures the distance from
    an arbitrary left edge, so a 1.38x ratio could be drawn 2.5 times as long. Between two
    points on a log axis, equal ratios are equal distances, which is what this picture
    compares.

    Parameters
    ----------
    predictions : sequence of perfmodel.capstone.published.Prediction
        One row each, top to bottom, as :func:`perfmodel.capstone.predict_published`
        returns them.
    ax : matplotlib.axes.Axes or None
        Axes to draw on: per run, the published and predicted images per second on a log
        axis, joined by a line and labelled with predicted over published; None makes an
        11 x 6.5 inch figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    with style():
        ax = new_axes(ax, (11, 6.5))
        y = np.arange(len(predictions))
        published = [p.run.samples_per_s for p in predictions]
        predicted = [p.predicted_samples_per_s for p in predictions]
        ax.hlines(y, published, predicted, color="grey", lw=2, zorder=1)
        ax.plot(published, y, "o", color=COLOURS[2], markersize=15, zorder=2,
                label="published (NVIDIA DeepLearningExamples)")  # fmt: skip
        ax.plot(predicted, y, "o", mfc="white", mew=2.5, color=COLOURS[0], markersize=11,
                zorder=2, label="roofline prediction")  # fmt: skip
        for i, p in enumerate(predictions):
            ax.annotate(f"  {p.ratio:.2f}x", (max(published[i], predicted[i]), i), va="center",
                        fontsize=12)  # fmt: skip
        ax.set_yticks(y, [p.run.name for p in predictions], fontsize=12)
        ax.set_ylim(len(predictions) - 0.4, -1.4)  # top to bottom, room above for the legend
        ax.set_xscale("log")
        low, high = min(published + predicted), max(published + predicted)
        ax.set_xlim(low / 1.5, high * 2.5)  # room for the ratio beside the rightmost point
        ax.xaxis.set_major_formatter(si_formatter(""))
        ax.grid(axis="y", visible=False)
        ax.set(xlabel="images per second (log scale: equal ratios, equal distances)",
               title="ResNet-50: predicted over published")  # fmt: skip
        ax.legend(loc="upper left", ncol=2, fontsize=11)
    return ax
