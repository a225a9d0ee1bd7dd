"""What threads bought: speedup against operand length, per operation and per branch width."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perfmodel.parallel import BranchPoint, ScalingPoint, where_it_pays
from perfmodel.plotting import COLOURS, legend_beside, new_axes, style

__all__ = ["branch_scaling_plot", "operation_scaling_plot"]


def operation_scaling_plot(points: Sequence[ScalingPoint], *, ax: Any = None) -> Any:
    """Speedup over one thread against the operand's length, one line per operation and
    thread count above 1; above the dotted line, threads paid. The title says so when a
    measurement was disturbed.

    Returns
    -------
    matplotlib.axes.Axes
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
        title = "Independent elements split early; a scan needs longer operands"
        if any(p.doubt for p in points):
            title = "A disturbed run: too noisy to read (run it again on a quiet machine)"
        ax.set(xscale="log", xlabel="elements", ylabel="speedup over one thread", title=title)
        legend_beside(ax)
    return ax


def branch_scaling_plot(points: Sequence[BranchPoint], *, ax: Any = None) -> Any:
    """Speedup of two branches run at once over in turn, against the branch width; the
    widths where it paid are marked, and the title says where that is (every such width,
    not only the first).

    Returns
    -------
    matplotlib.axes.Axes
    """
    payoff = where_it_pays([p.n for p in points], [p.speedup for p in points])
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
                    markeredgewidth=2.5, label="widths where it pays")  # fmt: skip
        ax.set(xscale="log", xlabel="branch width n (each branch: two n × n matmuls)",
               ylabel="speedup (in turn ÷ at once)", ylim=(0, 2.4))  # fmt: skip
        ax.set_xticks(payoff.sizes, [str(n) for n in payoff.sizes])
        ax.minorticks_off()
        lead = "Running both at once"
        if any(p.doubt for p in points):
            lead = "A disturbed run, too noisy to trust: it"
        ax.set_title(f"{lead} {payoff.describe()}", fontsize=12)
        legend_beside(ax, fontsize=11)
    return ax
