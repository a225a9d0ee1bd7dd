"""What threads bought: speedup against operand length, per operation and per branch width."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perfmodel.measure.parallel import BranchPoint, ScalingPoint, untrusted, where_it_pays
from perfmodel.plotting import COLOURS, legend_beside, new_axes, style

__all__ = ["branch_scaling_plot", "operation_scaling_plot"]


def _cross_out(ax: Any, points: Sequence[ScalingPoint | BranchPoint]) -> None:
    """Cross out every speedup among ``points`` that cannot be trusted (noisy or busy)."""
    doubtful = [p for p in points if p.kinds]
    if doubtful:
        xs, ys = [p.n for p in doubtful], [p.speedup for p in doubtful]
        ax.plot(xs, ys, "x", color="black", markersize=16, markeredgewidth=2.5,
                label="not trusted (noisy or busy)")  # fmt: skip


def operation_scaling_plot(points: Sequence[ScalingPoint], *, ax: Any = None) -> Any:
    """Speedup over one thread against the operand's length, one line per operation and
    thread count above 1; above the dotted line, threads paid. A speedup that cannot be trusted
    (noisy or busy) is crossed out, and the title says how many were.

    Parameters
    ----------
    points : sequence of perfmodel.measure.parallel.ScalingPoint
        The measured points, as :func:`perfmodel.measure.parallel.operation_scaling`
        returns them; those on one thread (speedup 1 by definition) are not drawn.
    ax : matplotlib.axes.Axes or None
        Axes to draw on: speedup against elements on a log x axis, one line per operation
        and thread count, a legend beside; None makes a 10 x 5.5 inch figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    lines: dict[tuple[str, int], list[tuple[int, float]]] = {}
    for p in points:
        if p.threads > 1:
            lines.setdefault((p.operation, p.threads), []).append((p.n, p.speedup))
    with style():
        ax = new_axes(ax, (10, 5.5))
        ax.axhline(1, color="grey", linestyle=":", label="one thread")
        for index, ((operation, threads), xy) in enumerate(sorted(lines.items())):
            xs, ys = zip(*sorted(xy), strict=True)
            ax.plot(xs, ys, "o-", color=COLOURS[index % len(COLOURS)],
                    label=f"{operation}, {threads} threads")  # fmt: skip
        _cross_out(ax, [p for p in points if p.threads > 1])
        title = "Independent elements split early; a scan needs longer operands"
        flagged = untrusted([p for p in points if p.threads > 1], "speedups")
        if flagged:
            title = f"{flagged[0].upper()}{flagged[1:]}: run it again before reading it"
        ax.set(xscale="log", xlabel="elements", ylabel="speedup over one thread", title=title)
        legend_beside(ax)
    return ax


def branch_scaling_plot(points: Sequence[BranchPoint], *, ax: Any = None) -> Any:
    """Speedup of two branches run at once over in turn, against the branch width; the
    widths where it paid are marked, and the title says where that is (every such width,
    not only the first). A speedup that cannot be trusted (noisy or busy) is crossed out, and
    then the title says how many were instead of where it pays.

    Parameters
    ----------
    points : sequence of perfmodel.measure.parallel.BranchPoint
        One point per branch width, each timed in turn and at once.
    ax : matplotlib.axes.Axes or None
        Axes to draw on: speedup against branch width on a log x axis, with lines at 1 and
        2 and the widths above 1 circled, a legend beside; None makes a 10 x 5.5 inch
        figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    payoff = where_it_pays([p.n for p in points], [p.speedup for p in points])
    flagged = untrusted(points, "widths")
    with style():
        ax = new_axes(ax, (10, 5.5))
        ax.axhline(1, color="grey", linestyle=":", label="in turn")
        ax.axhline(2, color="grey", linestyle="--", linewidth=1.5, label="two branches' worth")
        ax.plot(payoff.sizes, payoff.speedups, "D-", color=COLOURS[0],
                label="both at once, on two threads")  # fmt: skip
        paying = [(n, s) for n, s in zip(payoff.sizes, payoff.speedups, strict=True) if s > 1]
        if paying:
            xs, ys = zip(*paying, strict=True)
            ax.plot(xs, ys, "o", color=COLOURS[1], markersize=14, fillstyle="none",
                    markeredgewidth=2.5,
                    label="above 1× on this run" if flagged else "above 1×: it pays")  # fmt: skip
        _cross_out(ax, points)
        top = max(2.4, 1.1 * max(payoff.speedups))  # room for every point, however fast
        ax.set(xscale="log", xlabel="branch width n (each branch: two n × n matmuls)",
               ylabel="speedup (in turn ÷ at once)", ylim=(0, top))  # fmt: skip
        ax.set_xticks(payoff.sizes, [str(n) for n in payoff.sizes])
        ax.minorticks_off()
        title = f"Running both at once {payoff.describe()}"
        if flagged:
            title = f"Where it pays is not read from this run: {flagged}"
        ax.set_title(title, fontsize=12)
        legend_beside(ax, fontsize=11)
    return ax
