"""The roofline picture: one ceiling per dtype, ops placed on it as labelled points."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from perfmodel.hardware import Device, get, op_unit
from perfmodel.ops import Cost
from perfmodel.plotting import COLOURS, LOG_MINOR, new_axes, plain_formatter, si_formatter, style
from perfmodel.roofline import estimate

__all__ = ["roofline_plot"]


def roofline_plot(
    device: str | Device,
    *,
    dtypes: Sequence[str] | None = None,
    ops: Iterable[Cost] = (),
    compare: str | Device | None = None,
    intensity_range: tuple[float, float] = (0.01, 10_000.0),
    ax: Any = None,
) -> Any:
    """Log-log roofline of ``device``: one ceiling per dtype, ops as labelled points.

    Parameters
    ----------
    device : str or Device
        A catalogue name or a device you built: the roofline drawn solid, and the one the
        ops are placed on.
    dtypes : sequence of str, optional
        Ceilings to draw (default: every dtype the device has).
    ops : iterable of ops.Cost
        Operations to place at (intensity, attainable FLOP/s) on ``device``, labelled with
        their labels; one without a dtype is placed on the first ceiling drawn.
    compare : str or Device, optional
        A second device, drawn dashed, for comparison.
    intensity_range : (float, float)
        The x-axis span ``(low, high)``, FLOP/B.
    ax : matplotlib.axes.Axes or None
        Axes to draw on, log-log: attainable FLOP/s against arithmetic intensity, each
        ceiling a line with its ridge point marked, each op a labelled diamond; None makes
        a 10 x 6.5 inch figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    node = get(device)
    with style():
        ax = new_axes(ax, (10, 6.5))
        low, high = intensity_range
        x = np.logspace(np.log10(low), np.log10(high), 400)
        nodes = [(node, "-")] + ([(get(compare), "--")] if compare is not None else [])
        for index, (each, line) in enumerate(nodes):
            chosen = [d for d in (dtypes or each.dtypes) if d in each.peak_flops_by_dtype]
            for offset, dtype in enumerate(chosen):
                colour = COLOURS[(offset + 3 * index) % len(COLOURS)]
                roof = np.minimum(each.peak_flops(dtype), x * each.memory_bandwidth)
                ax.plot(x, roof, line, color=colour, label=f"{each.name} {dtype}")
                ridge = each.ridge_point(dtype)
                ax.plot([ridge], [each.peak_flops(dtype)], "o", color=colour, markersize=6)
        for cost in ops:
            first = [d for d in (dtypes or node.dtypes) if d in node.peak_flops_by_dtype]
            dtype = cost.dtype or first[0]
            result = estimate(cost, node, dtype=dtype)
            ax.plot([cost.intensity], [result.achieved_flops], "D", color="black")
            # Labels of points in the right third go to their left, so they stay in the frame.
            right = np.log(cost.intensity / low) > 0.66 * np.log(high / low)
            ax.annotate(
                cost.label or "op",
                (cost.intensity, result.achieved_flops),
                textcoords="offset points",
                xytext=(-8, -16) if right else (8, -16),
                ha="right" if right else "left",
                fontsize=13,
            )
        # An int8 operation is not a floating-point one: integer-only roofs read OP/s.
        unit = "OP" if dtypes and all(op_unit(d) == "OP" for d in dtypes) else "FLOP"
        ax.set_xscale("log", subs=LOG_MINOR)
        ax.set_yscale("log", subs=LOG_MINOR)
        ax.set(
            xlabel=f"arithmetic intensity ({unit} / byte)",
            ylabel=f"attainable {unit}/s",
            title=f"Roofline: {node.name}" + (f" vs {get(compare).name}" if compare else ""),
        )
        ax.set_xlim(low, high)
        ax.xaxis.set_major_formatter(plain_formatter())
        ax.yaxis.set_major_formatter(si_formatter(f"{unit}/s"))
        ax.legend(loc="lower right")
    return ax
