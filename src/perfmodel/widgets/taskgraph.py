"""Lecture 07: a task graph and its schedule on P workers, redrawn as P moves."""

from __future__ import annotations

from typing import Any

from perfmodel.widgets.controls import int_slider, live_plot

__all__ = ["schedule_explorer", "schedule_view"]


def schedule_view(graph: str = "transformer block (µs on an H100)", workers: int = 2) -> Any:
    """The static twin of :func:`schedule_explorer`: the graph and its greedy schedule.

    Parameters
    ----------
    graph : str
        The name of one of :func:`perfmodel.taskgraph.examples`: ``"data dependence"``,
        ``"control dependence"``, ``"structural hazard"`` or ``"transformer block (µs on an
        H100)"``.
    workers : int
        P, the workers the graph is scheduled on, count.

    Returns
    -------
    matplotlib.figure.Figure
        A new 13 x 9 inch figure: the graph drawn in layers above, its greedy schedule on
        ``workers`` workers as a Gantt chart with Brent's bounds below.
    """
    import matplotlib.pyplot as plt

    from perfmodel.plotting import style
    from perfmodel.plotting.taskgraph import gantt_plot, graph_plot
    from perfmodel.taskgraph import examples

    known = examples()
    if graph not in known:
        raise ValueError(f"`graph` must be one of {', '.join(map(repr, known))} (got {graph!r}).")
    g = known[graph]
    with style():
        figure, (top, bottom) = plt.subplots(
            2, 1, figsize=(13, 9), layout="constrained", height_ratios=(3, 2)
        )
    graph_plot(g, ax=top)
    gantt_plot(g.schedule(workers), g, ax=bottom)
    return figure


def schedule_explorer(graph: str = "transformer block (µs on an H100)", workers: int = 2) -> Any:
    """Pick a graph and a number of workers; see the greedy schedule and Brent's bounds.

    Parameters
    ----------
    graph : str
        The graph chosen at first, a name of :func:`perfmodel.taskgraph.examples`.
    workers : int
        P at first, count (the slider runs from 1 to 8).

    Returns
    -------
    ipywidgets.VBox
        A graph dropdown and a workers slider, above :func:`schedule_view`'s figure,
        redrawn when either changes.
    """
    import ipywidgets as widgets

    from perfmodel.taskgraph import examples

    choice = widgets.Dropdown(options=list(examples()), value=graph, description="graph",
                              layout=widgets.Layout(width="38em"))  # fmt: skip
    count = int_slider(workers, 1, 8, "workers P")
    out = live_plot(schedule_view, {"graph": choice, "workers": count})
    return widgets.VBox([choice, count, out])
