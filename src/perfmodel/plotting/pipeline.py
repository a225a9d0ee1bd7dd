"""Pictures of a pipeline: where each stage's time goes, and when each stage is busy.

* :func:`stage_breakdown`: each stage's compute, receive and send times (plain numbers).
* :func:`stage_bars`: those as stacked bars, with the bottleneck and the lower bound drawn
  across them, so the gap a proof leaves open is something you can see.
* :func:`split_bars`: several splits' bottlenecks side by side (baselines against the best).
* :func:`gantt`: a fill-and-drain schedule as a Gantt chart, bubbles and all.
* :func:`gantts`: several schedules' Gantt charts on one time axis.

>>> from perfmodel.pipeline import Graph
>>> g = Graph.chain([4.0, 1.0, 1.0, 4.0], [0.5, 0.5, 0.5, 0.5])
>>> stage_breakdown(g, [(0, 1), (2, 3)])
[(5.0, 0.0, 0.5), (5.0, 0.5, 0.0)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import matplotlib.pyplot as plt

from perfmodel.pipeline.graph import Graph, Partition, stage_parts
from perfmodel.pipeline.schedule import Schedule
from perfmodel.plotting import new_axes, style

__all__ = ["gantt", "gantts", "split_bars", "stage_bars", "stage_breakdown"]

_PARTS = (("compute", "#1b6ca8"), ("receive", "#edae49"), ("send", "#d1495b"))


def stage_breakdown(
    graph: Graph, stages: Sequence[Sequence[int]]
) -> list[tuple[float, float, float]]:
    """``(compute, receive, send)`` seconds of every stage, in pipeline order.

    Parameters
    ----------
    graph : perfmodel.pipeline.Graph
        The model graph: each node's work and each output's communication time, s.
    stages : sequence of sequence of int
        The stages in pipeline order, each its node indices (a :class:`Partition`'s
        ``stages``).

    Returns
    -------
    list of tuple of float
        One ``(compute, receive, send)`` per stage, s, as
        :func:`perfmodel.pipeline.graph.stage_parts` counts them.
    """
    return [stage_parts(graph, stage) for stage in stages]


def stage_bars(graph: Graph, result: Partition, *, title: str = "", ax: Any = None) -> Any:
    """Stacked bars of each stage's compute, receive and send time, in microseconds.

    A dashed line marks the bottleneck, a dotted one the lower bound; the band between
    them is how much better the best split could still be.

    Parameters
    ----------
    graph : perfmodel.pipeline.Graph
        The model graph the split was made of.
    result : perfmodel.pipeline.graph.Partition
        The split: its stages, its bottleneck and its lower bound, s.
    title : str
        The axes' title; empty for none.
    ax : matplotlib.axes.Axes or None
        Axes to draw on: one stacked bar per stage (compute, receive, send, in µs), the
        bottleneck (dashed), the lower bound (dotted), the band between them shaded, and a
        box with both numbers and the gap; None makes an 11 x 5 inch figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    parts = stage_breakdown(graph, result.stages)
    with style():
        ax = new_axes(ax, (11, 5))
        positions = list(range(1, len(parts) + 1))
        bottom = [0.0] * len(parts)
        for index, (name, colour) in enumerate(_PARTS):
            heights = [1e6 * p[index] for p in parts]
            ax.bar(positions, heights, bottom=bottom, color=colour, label=name, width=0.7)
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
        ax.axhline(1e6 * result.bottleneck, color="black", linestyle="--", linewidth=1.5)
        ax.axhline(1e6 * result.lower_bound, color="grey", linestyle=":", linewidth=2)
        ax.axhspan(1e6 * result.lower_bound, 1e6 * result.bottleneck, color="grey", alpha=0.15)
        ax.text(
            0.99,
            0.98,
            f"bottleneck {1e6 * result.bottleneck:.4g} µs\n"
            f"lower bound {1e6 * result.lower_bound:.4g} µs\ngap {result.gap:.1%}",
            transform=ax.transAxes,
            ha="right",
            va="top",
            fontsize=12,
            bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "none"},
        )
        ax.set_xticks(positions)
        ax.set(xlabel="stage", ylabel="time per input (µs)", title=title)
        ax.set_ylim(top=1.35 * max(bottom))
        ax.grid(axis="x", visible=False)
        ax.legend(loc="upper left", ncols=3)
    return ax


def split_bars(results: Mapping[str, Partition], *, title: str = "", ax: Any = None) -> Any:
    """One horizontal bar per split: its bottleneck in microseconds, the last one green.

    Put the split to beat last (``"optimal"``) and the alternatives before it.

    Parameters
    ----------
    results : Mapping of str to perfmodel.pipeline.graph.Partition
        The splits by name, drawn top to bottom in this order; at least one (else
        ValueError).
    title : str
        The axes' title; empty for none.
    ax : matplotlib.axes.Axes or None
        Axes to draw on: one horizontal bar per split, its bottleneck in µs written beside
        it, grey but for the last (green); None makes a figure 10 inches wide and tall
        enough for the bars.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    if not results:
        raise ValueError("`results` must name at least one split.")
    with style():
        ax = new_axes(ax, (10, 0.6 * len(results) + 1.4))
        micros = [1e6 * r.bottleneck for r in results.values()]
        colours = ["#8c8c8c"] * (len(micros) - 1) + ["#2e933c"]
        ax.barh(list(results), micros, color=colours)
        for row, value in enumerate(micros):
            ax.text(value, row, f" {value:.0f} µs", va="center", fontsize=13)
        ax.invert_yaxis()
        ax.set(xlabel="bottleneck (µs per input, lower is better)", title=title)
        ax.set_xlim(0, 1.2 * max(micros))
    return ax


def gantt(
    schedule: Schedule, *, title: str = "", ax: Any = None, until: float | None = None
) -> Any:
    """Each stage's busy intervals, one row per stage, micro-batches numbered.

    ``until`` ends the time axis (seconds; the schedule's makespan when not given), so that
    charts of several schedules can share one time scale.

    Parameters
    ----------
    schedule : perfmodel.pipeline.schedule.Schedule
        When each stage ran each micro-batch, s.
    title : str
        The axes' title; empty for one naming the micro-batches and the bubble fraction.
    ax : matplotlib.axes.Axes or None
        Axes to draw on: one row of bars per stage, a bar per micro-batch (numbered when
        there are at most 16), on a time axis in µs (when it ends before 10 ms) or ms;
        None makes a figure 11 inches wide and tall enough for the stages.
    until : float or None
        Where the time axis ends, s; None for the schedule's makespan.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    stages = len(schedule.stage_times)
    micro = len(schedule.start[0])
    end_s = schedule.makespan if until is None else until
    with style():
        ax = new_axes(ax, (11, 0.6 * stages + 2))
        scale = 1e6 if end_s < 1e-2 else 1e3
        unit = "µs" if scale == 1e6 else "ms"
        for s in range(stages):
            for i in range(micro):
                start, end = scale * schedule.start[s][i], scale * schedule.end[s][i]
                ax.barh(s, end - start, left=start, height=0.7, color=f"C{i % 10}", alpha=0.85)
                if micro <= 16:
                    ax.text((start + end) / 2, s, str(i + 1), ha="center", va="center",
                            fontsize=10, color="white")  # fmt: skip
        ax.set_yticks(range(stages), [f"stage {s + 1}" for s in range(stages)])
        ax.invert_yaxis()
        ax.set_xlim(0, scale * end_s)
        ax.set(
            xlabel=f"time ({unit})",
            title=title or f"{micro} micro-batches, bubble {schedule.bubble_fraction:.0%}",
        )
        ax.grid(axis="y", visible=False)
    return ax


def gantts(runs: Mapping[str, Schedule], *, title: str = "") -> Any:
    """One Gantt chart per schedule, stacked on a common time axis, each titled with its
    name, its makespan and its bubble: the same batch run different ways, side by side.

    Parameters
    ----------
    runs : Mapping of str to perfmodel.pipeline.schedule.Schedule
        The schedules by name, drawn top to bottom; at least one (else ValueError).
    title : str
        The figure's title; empty for none.

    Returns
    -------
    matplotlib.figure.Figure
        A new figure of one :func:`gantt` per schedule, sharing a time axis that ends at
        the longest makespan.
    """
    if not runs:
        raise ValueError("`runs` must name at least one schedule.")
    until = max(run.makespan for run in runs.values())
    rows = sum(len(run.stage_times) for run in runs.values())
    with style():
        figure, axes = plt.subplots(
            len(runs), 1, sharex=True, squeeze=False, layout="constrained",
            figsize=(11, 0.6 * rows + 1.4 * len(runs)),
        )  # fmt: skip
        for ax, (name, run) in zip(axes[:, 0], runs.items(), strict=True):
            scale, unit = (1e6, "µs") if until < 1e-2 else (1e3, "ms")
            gantt(
                run,
                ax=ax,
                until=until,
                title=f"{name}: done at {scale * run.makespan:,.0f} {unit}, "
                f"bubble {run.bubble_fraction:.0%}",
            )
        for ax in axes[:-1, 0]:
            ax.set_xlabel("")
        if title:
            figure.suptitle(title)
    return figure
