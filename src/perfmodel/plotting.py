"""Plots for the lectures, sized to read from the back of a lecture hall.

Every function draws on a matplotlib ``Axes`` (made for you when not given) and returns
it, so a notebook can add to it or save it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import matplotlib.pyplot as plt
import numpy as np

from perfmodel.hardware import Device, get
from perfmodel.ops import Cost
from perfmodel.roofline import estimate

__all__ = ["STYLE", "bar_compare", "roofline_plot", "style"]

#: Large type and thick lines: slides are read from 15 metres away.
STYLE: dict[str, Any] = {
    "font.size": 14,
    "axes.titlesize": 17,
    "axes.labelsize": 15,
    "legend.fontsize": 12,
    "lines.linewidth": 2.5,
    "lines.markersize": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 100,
    "savefig.dpi": 120,
}

_COLOURS = ("#1b6ca8", "#d1495b", "#2e933c", "#edae49", "#6b4c9a", "#00798c", "#8c564b")


@contextlib.contextmanager
def style() -> Iterator[None]:
    """Apply :data:`STYLE` inside a ``with`` block, then put back exactly those settings.

    Unlike ``plt.rc_context`` this restores only its own keys: rc_context also restores
    ``interactive``, which the notebook backend switches on when the first figure is made,
    and the figures of every later cell then never appear.
    """
    params: Any = plt.rcParams  # typed with literal keys; STYLE's are checked by matplotlib
    saved = {key: params[key] for key in STYLE}
    params.update(STYLE)
    try:
        yield
    finally:
        params.update(saved)


def _axes(ax: Any, figsize: tuple[float, float]) -> Any:
    if ax is not None:
        return ax
    _, new = plt.subplots(figsize=figsize, layout="constrained")
    return new


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
    dtypes : sequence of str, optional
        Ceilings to draw (default: every dtype the device has).
    ops : iterable of ops.Cost
        Operations to place at (intensity, attainable FLOP/s), labelled with their labels.
    compare : str or Device, optional
        A second device, drawn dashed, for comparison.
    intensity_range : (float, float)
        The x-axis span, FLOP/byte.
    """
    node = get(device)
    with style():
        ax = _axes(ax, (10, 6.5))
        low, high = intensity_range
        x = np.logspace(np.log10(low), np.log10(high), 400)
        nodes = [(node, "-")] + ([(get(compare), "--")] if compare is not None else [])
        for index, (each, line) in enumerate(nodes):
            chosen = [d for d in (dtypes or each.dtypes) if d in each.peak_flops_by_dtype]
            for offset, dtype in enumerate(chosen):
                colour = _COLOURS[(offset + 3 * index) % len(_COLOURS)]
                roof = np.minimum(each.peak_flops(dtype), x * each.memory_bandwidth)
                ax.plot(x, roof, line, color=colour, label=f"{each.name} {dtype}")
                ridge = each.ridge_point(dtype)
                ax.plot([ridge], [each.peak_flops(dtype)], "o", color=colour, markersize=6)
        for cost in ops:
            first = [d for d in (dtypes or node.dtypes) if d in node.peak_flops_by_dtype]
            dtype = cost.dtype or first[0]
            result = estimate(cost, node, dtype=dtype)
            ax.plot([cost.intensity], [result.achieved_flops], "D", color="black")
            ax.annotate(
                cost.label or "op",
                (cost.intensity, result.achieved_flops),
                textcoords="offset points",
                xytext=(8, -16),
                fontsize=13,
            )
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="arithmetic intensity (FLOP / byte)",
            ylabel="attainable FLOP/s",
            title=f"Roofline: {node.name}" + (f" vs {get(compare).name}" if compare else ""),
        )
        ax.yaxis.set_major_formatter(_si_formatter("FLOP/s"))
        ax.legend(loc="lower right")
    return ax


def _si_formatter(unit: str) -> Any:
    from matplotlib.ticker import FuncFormatter

    from perfmodel.units import format_quantity

    return FuncFormatter(
        lambda value, _: format_quantity(value, unit, digits=3) if value > 0 else ""
    )


def bar_compare(
    labels: Sequence[str], values: Sequence[float], *, unit: str, title: str, ax: Any = None
) -> Any:
    """Horizontal bars on a log axis, each labelled with its formatted value."""
    from perfmodel.units import format_quantity

    if len(labels) != len(values):
        raise ValueError(
            f"`labels` and `values` must have the same length (got {len(labels)} and "
            f"{len(values)})."
        )
    with style():
        ax = _axes(ax, (10, 0.55 * len(labels) + 1.6))
        positions = np.arange(len(labels))
        ax.barh(positions, values, color=_COLOURS[0])
        ax.set_yticks(positions, labels)
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_title(title)
        ax.grid(axis="y", visible=False)
        for position, value in zip(positions, values, strict=True):
            ax.text(value, position, " " + format_quantity(value, unit), va="center", fontsize=12)
        ax.set_xlim(left=min(values) / 2, right=max(values) * 8)
    return ax
