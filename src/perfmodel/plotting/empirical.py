"""This machine's roofline: the nominal roof, the measured one, and the kernels under them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from perfmodel.hardware import Device
from perfmodel.measure.empirical import fraction_of_roof
from perfmodel.measure.microbench import KernelResult
from perfmodel.plotting import (
    COLOURS,
    legend_beside,
    new_axes,
    si_formatter,
    si_minor_formatter,
    style,
)

__all__ = ["empirical_roofline_plot", "overhead_plot", "prediction_plot", "working_set_plot"]


def empirical_roofline_plot(
    device: Device,
    kernels: Sequence[KernelResult],
    *,
    dtype: str = "fp64",
    intensity_range: tuple[float, float] = (0.01, 1000.0),
    ax: Any = None,
) -> Any:
    """The nominal roof (dashed), the measured roof (solid), and each kernel as a point.

    Every STREAM, elementwise and matmul kernel of ``dtype`` with FLOPs is placed at (its
    intensity, its achieved FLOP/s)
    and labelled with its *fraction of the speed of light*: achieved over what the
    measured roof allows at that intensity. A kernel measured on a disturbed machine (noisy
    or busy) is drawn hollow. Each measured memory level is drawn as its own
    slanted roof.

    Parameters
    ----------
    device : perfmodel.hardware.Device
        The machine: its nominal peak and bandwidth, its measured peak for ``dtype``, its
        measured bandwidth (the nominal one when unmeasured) and its measured memory levels.
    kernels : sequence of perfmodel.measure.microbench.KernelResult
        The kernels measured; those of kind ``"stream"``, ``"elementwise"`` or ``"matmul"``
        in ``dtype``, with FLOPs, and with an intensity inside ``intensity_range`` are drawn.
    dtype : str
        The precision of the roofs and of the kernels shown.
    intensity_range : tuple of float
        The x axis's ``(low, high)`` arithmetic intensity, FLOP/B.
    ax : matplotlib.axes.Axes or None
        Axes to draw on, log-log: FLOP/s against intensity, the roofs as lines, each kernel
        as a labelled diamond, a legend beside; None makes a 10 x 6.5 inch figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    low, high = intensity_range
    x = np.logspace(np.log10(low), np.log10(high), 400)
    measured_peak = device.measured_flops(dtype)
    measured_bandwidth = device.measured_memory_bandwidth or device.memory_bandwidth
    with style():
        ax = new_axes(ax, (10, 6.5))
        nominal = np.minimum(device.peak_flops(dtype), x * device.memory_bandwidth)
        ax.plot(x, nominal, "--", color="grey", label=f"nominal {dtype}")
        roof = np.minimum(measured_peak, x * measured_bandwidth)
        ax.plot(x, roof, "-", color=COLOURS[0], label=f"measured {dtype}")
        for index, (level, rate) in enumerate(device.memory_levels.items()):
            slope = np.minimum(measured_peak, x * rate)
            colour = COLOURS[(index + 2) % len(COLOURS)]
            ax.plot(x, slope, ":", color=colour, linewidth=1.8, label=f"{level} bandwidth")
        shown = [
            k
            for k in kernels  # working sets are the dotted roofs; tiny ops sit below any roof
            if k.kind in ("stream", "elementwise", "matmul")
            and k.cost.dtype == dtype
            and k.cost.flops > 0
            and low <= k.intensity <= high
        ]
        points = []
        for kernel in sorted(shown, key=lambda k: k.intensity):
            intensity, achieved = kernel.intensity, kernel.flops_per_s
            light = fraction_of_roof(device, kernel, dtype=dtype)
            disturbed = bool(kernel.measurement.doubt)
            ax.plot([intensity], [achieved], "D", color="black", markersize=7,
                    markerfacecolor="white" if disturbed else "black")  # fmt: skip
            points.append((intensity, achieved, f"{kernel.name}: {light:.0%}"))
        if any(k.measurement.doubt for k in shown):  # hollow: read nothing from it
            ax.plot([], [], "D", color="black", markerfacecolor="white", markersize=7,
                    label="disturbed (noisy or busy)")  # fmt: skip
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="arithmetic intensity (FLOP / byte)",
            ylabel="FLOP/s",
            title=f"{device.name}: measured against nominal",
        )
        ax.set_xlim(low, high)
        ax.set_ylim(top=3 * max(device.peak_flops(dtype), measured_peak))  # room for labels
        ax.yaxis.set_major_formatter(si_formatter("FLOP/s"))
        legend_beside(ax, fontsize=10)
        _label_without_overlap(ax, points)
    return ax


#: Where a label may go, in points from its marker: below right, above right, further down,
#: left below, left above, then further up and down on either side.
_LABEL_SPOTS = (
    (6, -16), (6, 8), (6, -32), (-8, -16), (-8, 8), (6, 22), (6, -46), (-8, -32), (-8, 22),
    (-8, -46),
)  # fmt: skip


def _label_without_overlap(ax: Any, points: list[tuple[float, float, str]]) -> None:
    """Label each point at the first spot where its text stays inside the axes and overlaps no
    label placed before it.

    Text extents are measured after drawing (the layout settled first), so the rule holds at
    any font size, and no label reaches out to a legend beside the axes.
    """
    figure = ax.figure
    figure.canvas.draw()  # constrained layout places the axes beside its legend
    renderer = figure.canvas.get_renderer()
    inside = ax.get_window_extent(renderer)
    placed: list[Any] = []
    for x, y, label in points:
        for dx, dy in _LABEL_SPOTS:
            text = ax.annotate(label, (x, y), textcoords="offset points", xytext=(dx, dy),
                               ha="left" if dx > 0 else "right", fontsize=11)  # fmt: skip
            box = text.get_window_extent(renderer).expanded(1.05, 1.1)
            within = inside.x0 <= box.x0 and box.x1 <= inside.x1
            if within and not any(box.overlaps(other) for other in placed):
                placed.append(box)
                break
            text.remove()
        else:  # crowded everywhere: left below, inside the axes, overlapping
            text = ax.annotate(label, (x, y), textcoords="offset points", xytext=(-8, -16),
                               ha="right", fontsize=11)  # fmt: skip
            placed.append(text.get_window_extent(renderer))


def working_set_plot(
    kernels: Sequence[KernelResult], caches: Sequence[tuple[str, int]], *, ax: Any = None
) -> Any:
    """Bandwidth against working-set size: one step down per memory level.

    Each cache's capacity is a dotted vertical line; sets left of it fit in it.

    Parameters
    ----------
    kernels : sequence of perfmodel.measure.microbench.KernelResult
        The working-set sweep, in order of size: each one's ``measurement.sizes["bytes"]``
        is its working set (B) and its achieved bandwidth the point's height.
    caches : sequence of tuple of (str, int)
        Each cache's name and capacity, B, as :func:`perfmodel.measure.empirical.cpu_caches`
        returns them: ``[("L1", 49152), ("L2", 2097152), ...]``.
    ax : matplotlib.axes.Axes or None
        Axes to draw on, log-log: bandwidth (B/s) against working set (B) as a line of
        points, and a labelled dotted line per cache; None makes a 10 x 5.5 inch figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    sizes = [k.measurement.sizes["bytes"] for k in kernels]
    rates = [k.bytes_per_s for k in kernels]
    with style():
        ax = new_axes(ax, (10, 5.5))
        ax.plot(sizes, rates, "o-", color=COLOURS[0], label="acc += x, one core")
        for index, (level, capacity) in enumerate(caches):
            colour = COLOURS[(index + 2) % len(COLOURS)]
            ax.axvline(capacity, color=colour, linestyle=":", linewidth=2)
            ax.annotate(
                f"{level} {capacity / 1024:,.0f} KiB" if capacity < 1024**2 else
                f"{level} {capacity / 1024**2:,.0f} MiB",
                (capacity, 1), xycoords=("data", "axes fraction"), xytext=(-6, -8),
                textcoords="offset points", rotation=90, ha="right", va="top", fontsize=12,
            )  # fmt: skip
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="working set (bytes)",
            ylabel="bandwidth",
            title="Bandwidth steps down at each cache's capacity",
        )
        ax.xaxis.set_major_formatter(si_formatter("B"))
        ax.yaxis.set_major_formatter(si_formatter("B/s"))
        ax.yaxis.set_minor_formatter(si_minor_formatter("B/s", (2, 3, 5, 7)))  # often < a decade
        legend_beside(ax)
    return ax


def overhead_plot(
    tiny: Sequence[KernelResult], overhead_s: float, per_flop_s: float, *, ax: Any = None
) -> Any:
    """Seconds per call of tiny adds against their size, with the fitted line.

    Left of the crossover ``overhead_s / per_flop_s`` the fixed cost per call is most of the
    time: the overhead regime, where neither roof applies.

    Parameters
    ----------
    tiny : sequence of perfmodel.measure.microbench.KernelResult
        The tiny adds measured; each is drawn at its FLOPs (elements added) and its fastest
        sample.
    overhead_s : float
        The fitted fixed cost per call, s.
    per_flop_s : float
        The fitted time each FLOP adds, s per FLOP; at 0 or below no overhead regime is
        shaded.
    ax : matplotlib.axes.Axes or None
        Axes to draw on, log-log: the measured points, the fitted line
        ``overhead_s + per_flop_s * n``, the overhead as a dashed line and the overhead
        regime shaded; None makes a 10 x 5.5 inch figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    sizes = np.array([k.cost.flops for k in tiny], dtype=float)
    times = np.array([k.measurement.minimum_s for k in tiny])
    with style():
        ax = new_axes(ax, (10, 5.5))
        ax.plot(sizes, times, "D", color="black", label="measured (fastest sample)")
        line = np.geomspace(max(sizes.min(), 1), sizes.max() * 4, 100)
        ax.plot(line, overhead_s + per_flop_s * line, "-", color=COLOURS[0],
                label="fitted: overhead + n / rate")  # fmt: skip
        ax.axhline(overhead_s, color=COLOURS[1], linestyle="--", label="overhead per call")
        if per_flop_s > 0:
            crossover = overhead_s / per_flop_s
            ax.axvspan(line[0], crossover, color=COLOURS[1], alpha=0.08)
            ax.annotate("overhead regime", (line[0], overhead_s), xytext=(8, 14),
                        textcoords="offset points", color=COLOURS[1], fontsize=13)  # fmt: skip
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="elements added (n)",
            ylabel="seconds per call",
            title="Tiny ops: the time is the call, not the work",
        )
        ax.yaxis.set_major_formatter(si_formatter("s"))
        ax.yaxis.set_minor_formatter(si_minor_formatter("s"))
        legend_beside(ax)
    return ax


def prediction_plot(comparison: Any, *, ax: Any = None) -> Any:
    """Measured over predicted for every op, for the plain roofline and the calibrated model.

    A ratio of 1 is a perfect prediction; the band is ±25%. ``comparison`` is a
    :class:`perfmodel.measure.comparison.Comparison`.

    Parameters
    ----------
    comparison : perfmodel.measure.comparison.Comparison
        Ops timed one by one (rows of :class:`perfmodel.measure.comparison.Row`), each with
        its calibrated and its plain-roofline ratio.
    ax : matplotlib.axes.Axes or None
        Axes to draw on: one row per op, first at the top, its two ratios (measured over
        predicted) on a log axis, the ±25% band shaded; None makes a figure 11 inches wide
        and tall enough for the rows.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    rows = list(comparison.rows)[::-1]
    y = np.arange(len(rows))
    with style():
        ax = new_axes(ax, (11, 0.55 * len(rows) + 2))
        ax.axvspan(0.75, 1.25, color=COLOURS[2], alpha=0.12, label="within 25%")
        ax.axvline(1, color="grey", linewidth=1.5)
        ax.plot([r.roofline_ratio for r in rows], y, "o", color=COLOURS[1], fillstyle="none",
                markeredgewidth=2, label="plain roofline (one pass, no overhead)")  # fmt: skip
        ax.plot([r.ratio for r in rows], y, "D", color=COLOURS[0], label="calibrated model")
        ax.set_yticks(y, [r.name for r in rows])
        ax.set(xscale="log", xlabel="ratio, measured / predicted (above 1: slower than predicted)")
        ax.set_title("Predicted vs measured, op by op")
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=3, fontsize=11)
    return ax
