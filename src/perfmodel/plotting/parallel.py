"""What threads bought: speedup against operand length, per operation and per branch width."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perfmodel.parallel import BranchPoint, ScalingPoint
from perfmodel.plotting import COLOURS, new_axes, style

__all__ = ["branch_scaling_plot", "operation_scaling_plot"]


def operation_scaling_plot(points: Sequence[ScalingPoint], *, ax: Any = None) -> Any:
    """Speedup over one thread against the operand's length, one line per operation and
    thread count above 1; above the dotted line, threads paid.

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
        ax.set(xscale="log", xlabel="elements", ylabel="speedup over one thread",
               title="Independent elements split early; a scan needs longer operands")  # fmt: skip
        ax.legend(loc="upper left")
    return ax


def branch_scaling_plot(points: Sequence[BranchPoint], *, ax: Any = None) -> Any:
    """Speedup of two branches run at once over in turn, against the branch width.

    Returns
    -------
    matplotlib.axes.Axes
    """
    with style():
        ax = new_axes(ax, (10, 5.5))
        ax.axhline(1, color="grey", linestyle=":", label="in turn")
        ax.axhline(2, color="grey", linestyle="--", linewidth=1.5, label="two branches' worth")
        ax.plot([p.n for p in points], [p.speedup for p in points], "D-", color=COLOURS[0],
                label="both at once, on two threads")  # fmt: skip
        crossover = next((p.n for p in points if p.speedup > 1), None)
        if crossover is not None:
            ax.axvline(crossover, color=COLOURS[1], linestyle=":",
                       label=f"first width where it pays: {crossover}")  # fmt: skip
        ax.set(xscale="log", xlabel="branch width n (each branch: two n × n matmuls)",
               ylabel="speedup", ylim=(0, 2.4))  # fmt: skip
        ax.set_title("Branches pay once they are long enough")
        ax.legend(loc="upper left", fontsize=11)
    return ax
