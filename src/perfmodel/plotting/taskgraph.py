"""A task graph drawn in layers, and its schedule as a Gantt chart."""

from __future__ import annotations

from typing import Any

from perfmodel.plotting import COLOURS, new_axes, style
from perfmodel.taskgraph import Schedule, TaskGraph

__all__ = ["gantt_plot", "graph_plot"]


def _levels(g: TaskGraph) -> list[int]:
    """Each operation's depth: the most edges on any path into it."""
    level = [0] * len(g.names)
    for v in g.graph.order:
        level[v] = max((level[u] + 1 for u in g.graph.predecessors[v]), default=0)
    return level


def graph_plot(g: TaskGraph, *, ax: Any = None) -> Any:
    """Operations as boxes, one column per depth; data edges solid, control edges dashed, the
    critical path in red.

    Parameters
    ----------
    g : perfmodel.taskgraph.TaskGraph
        The graph: its operations, their times (in ``g.time_unit``), its edges and its
        critical path.
    ax : matplotlib.axes.Axes or None
        Axes to draw on, without axis lines: a box per operation (name, time and resource),
        one column per depth, arrows for the edges, the title giving work, span and
        parallelism; None makes a figure sized to the graph's depth and width.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    level = _levels(g)
    rows: dict[int, int] = {}
    position = []
    for depth in level:
        position.append((depth, rows.get(depth, 0)))
        rows[depth] = rows.get(depth, 0) + 1
    critical = set(g.critical_path)
    with style():
        ax = new_axes(ax, (max(6, 3 * (max(level) + 1)), max(3, 1.3 * max(rows.values()) + 1)))
        index = {name: i for i, name in enumerate(g.names)}
        for (source, target), kind in g.edge_kinds.items():
            (x0, y0), (x1, y1) = position[index[source]], position[index[target]]
            on_path = source in critical and target in critical
            ax.annotate("", (x1 - 0.32, -y1), (x0 + 0.32, -y0), arrowprops={
                "arrowstyle": "-|>", "linewidth": 2.2,
                "linestyle": "--" if kind == "control" else "-",
                "color": COLOURS[1] if on_path else "grey"})  # fmt: skip
        for name, seconds, (x, y) in zip(g.names, g.times, position, strict=True):
            colour = COLOURS[1] if name in critical else COLOURS[0]
            unit = g.resources.get(name)
            label = f"{name}\n{seconds:g}" + (f" · {unit}" if unit else "")
            box = {"boxstyle": "round,pad=0.5", "facecolor": colour, "edgecolor": "none"}
            ax.text(x, -y, label, ha="center", va="center", fontsize=13, color="white", bbox=box)
        ax.set_xlim(-0.7, max(level) + 0.7)
        ax.set_ylim(-max(rows.values()) + 0.4, 0.6)
        ax.set_axis_off()
        ax.set_title(f"work {g.work:g}, span {g.span:g}, parallelism {g.parallelism:.2f}")
    return ax


def _time(value: float) -> str:
    """A time as lecture 07 prints it: to a tenth of its unit from 10 up, three figures below.

    >>> _time(1712.0500000000002), _time(2.75), _time(3.0), _time(0.00125)
    ('1712.1', '2.75', '3', '0.00125')
    """
    return f"{value:.1f}" if value >= 10 else f"{value:.3g}"


def gantt_plot(schedule: Schedule, g: TaskGraph, *, ax: Any = None) -> Any:
    """One row per worker, one bar per operation, with Brent's bounds as vertical lines.

    Parameters
    ----------
    schedule : perfmodel.taskgraph.Schedule
        Where and when each operation ran, in ``g.time_unit``.
    g : perfmodel.taskgraph.TaskGraph
        The graph scheduled: its critical path (drawn red), its bounds at
        ``schedule.workers`` and its time unit.
    ax : matplotlib.axes.Axes or None
        Axes to draw on: one row of bars per worker, the lower bound ``max(W/P, S)``
        (dotted) and the greedy bound ``W/P + S`` (dashed); None makes a figure 10 inches
        wide and tall enough for the workers.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    low, high = g.bounds(schedule.workers)
    critical = set(g.critical_path)
    with style():
        ax = new_axes(ax, (10, 1.0 * schedule.workers + 2.2))
        for slot in schedule.slots:
            colour = COLOURS[1] if slot.task in critical else COLOURS[0]
            ax.barh(slot.worker, slot.end - slot.start, left=slot.start, height=0.6,
                    color=colour, edgecolor="white", linewidth=2)  # fmt: skip
            if (slot.end - slot.start) / (high * 1.05) > 0.012 * len(slot.task):  # it fits
                ax.text((slot.start + slot.end) / 2, slot.worker, slot.task, ha="center",
                        va="center", color="white", fontsize=12, clip_on=True)  # fmt: skip
        unit = g.time_unit
        ax.axvline(low, color="black", linestyle=":",
                   label=f"lower bound max(W/P, S) = {_time(low)}")  # fmt: skip
        ax.axvline(high, color="grey", linestyle="--",
                   label=f"greedy bound W/P + S = {_time(high)}")  # fmt: skip
        ax.set_yticks(range(schedule.workers), [f"worker {w + 1}" for w in range(schedule.workers)])
        ax.invert_yaxis()
        ax.set_xlim(0, high * 1.05)
        finish = f"{_time(schedule.makespan)} {unit}"
        ax.set(
            xlabel=f"time ({g.time_unit})", title=f"P = {schedule.workers}: finishes at {finish}"
        )
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=2, fontsize=11)
    return ax
