"""The task-graph, schedule, scaling and parallel pictures draw what they are given."""

from __future__ import annotations

import matplotlib

matplotlib.use("agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from perfmodel.taskgraph import examples  # noqa: E402


def test_the_gantt_chart_has_one_bar_per_operation_and_brents_bounds():
    from perfmodel.plotting.taskgraph import gantt_plot

    g = examples()["transformer block (µs on an H100)"]
    ax = gantt_plot(g.schedule(2), g)
    assert len(ax.patches) == len(g.names)
    assert [line.get_xdata()[0] for line in ax.lines] == list(g.bounds(2))
    assert ax.get_xlabel() == "time (µs)" and ax.get_title().endswith(" µs")
    plt.close("all")


def test_a_textbook_graph_counts_its_time_in_steps():
    from perfmodel.plotting.taskgraph import gantt_plot

    g = examples()["structural hazard"]
    assert gantt_plot(g.schedule(2), g).get_xlabel() == "time (steps)"
    plt.close("all")


def test_the_graph_has_one_box_per_operation_and_one_arrow_per_edge():
    from perfmodel.plotting.taskgraph import graph_plot

    g = examples()["control dependence"]
    ax = graph_plot(g)
    boxes = [t for t in ax.texts if t.get_bbox_patch() is not None]
    assert len(boxes) == len(g.names) and len(ax.texts) - len(boxes) == len(g.edges)
    plt.close("all")


def test_the_scaling_plot_draws_both_laws_and_the_measured_points():
    from perfmodel import scaling
    from perfmodel.plotting.scaling import scaling_plot

    ax = scaling_plot(0.2, 16, measured=[(1, 1.0), (2, 1.7)])
    labels = ax.get_legend_handles_labels()[1]
    assert any(label.startswith("Amdahl: the problem stays; 1 − α = 20%") for label in labels)
    amdahl = next(line for line in ax.lines if line.get_label().startswith("Amdahl:"))
    assert amdahl.get_ydata()[-1] == pytest.approx(scaling.amdahl_speedup(0.8, 16))
    # the same program grown 16-fold: its 16-processor run keeps the one-processor run's mix
    gustafson = next(line for line in ax.lines if line.get_label().startswith("Gustafson:"))
    assert "s = 20% of each p-processor run" in gustafson.get_label()
    assert gustafson.get_ydata()[-1] == pytest.approx(0.2 + 16 * 0.8)
    assert list(ax.lines[-1].get_xdata()) == [1, 2]
    plt.close("all")


def test_a_bad_graph_name_is_a_clear_error():
    from perfmodel.widgets.taskgraph import schedule_view

    with pytest.raises(ValueError, match="`graph` must be one of"):
        schedule_view("a ring", 2)
