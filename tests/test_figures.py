"""The figure audit catches each way a figure misleads, and reads what every kernel draws.

``figure_audit.problems`` is the rule book; ``conftest.py`` installs it in every kernel the
tests start, so each lecture and workbook cell that draws a misleading figure fails under nbval.
"""

from __future__ import annotations

import json

import matplotlib

matplotlib.use("agg")

import matplotlib.pyplot as plt  # noqa: E402
import nbformat  # noqa: E402
import pytest  # noqa: E402
from figure_audit import problems  # noqa: E402

from conftest import ROOT  # noqa: E402


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


def labelled(ax, x="size (bytes)", y="time (s)"):
    ax.set(xlabel=x, ylabel=y)
    return ax


@pytest.mark.parametrize("orientation", ["vertical", "horizontal"])
def test_bars_on_a_log_value_axis_are_caught_and_on_a_linear_one_pass(orientation):
    fig, ax = plt.subplots()
    labelled(ax, "speedup (x)", "device") if orientation == "horizontal" else labelled(ax)
    if orientation == "horizontal":
        ax.barh(["T4", "A100"], [1.38, 29.0])
        ax.set_xscale("log")
    else:
        ax.bar([1, 2], [1.38, 29.0])
        ax.set_yscale("log")
    assert any("bars on a log" in p for p in problems(fig))
    ax.set_xscale("linear") if orientation == "horizontal" else ax.set_yscale("linear")
    assert problems(fig) == []


def test_points_on_a_log_axis_are_fine():
    fig, ax = plt.subplots()
    labelled(ax).plot([1, 10, 100], [1, 2, 3], "o")
    ax.set_xscale("log")
    assert problems(fig) == []


def test_a_numeric_axis_needs_a_label_and_a_unit():
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4])
    assert problems(fig) == ["axes 1: the x axis has no label", "axes 1: the y axis has no label"]
    ax.set(xlabel="time", ylabel="bandwidth")
    assert problems(fig) == [
        "axes 1: the x axis label 'time' names no unit",
        "axes 1: the y axis label 'bandwidth' names no unit",
    ]
    ax.set(xlabel="time (µs)", ylabel="speedup over one thread")  # a unit; a ratio has none
    assert problems(fig) == []


def test_categories_on_an_axis_label_themselves():
    fig, ax = plt.subplots()
    ax.barh([0, 1], [3.0, 4.0])
    ax.set_yticks([0, 1], ["A100 SXM4 80GB", "H100 SXM"])
    ax.set_xlabel("peak (TFLOP/s)")
    assert problems(fig) == []


def test_units_written_on_the_ticks_count_as_the_axis_unit():
    from perfmodel.plotting import si_formatter

    fig, ax = plt.subplots()
    ax.plot([1e9, 1e12], [1, 2])
    ax.xaxis.set_major_formatter(si_formatter("FLOP/s"))
    ax.set(xlabel="peak compute", ylabel="devices")
    assert problems(fig) == []


def test_a_legend_over_a_line_a_bar_a_point_or_a_label_is_caught():
    fig, ax = plt.subplots()
    labelled(ax).plot([0, 1], [0.5, 0.5], label="flat")
    ax.set_xlim(0, 1), ax.set_ylim(0, 1)
    ax.legend(loc="center")
    assert problems(fig) == ["axes 1: the legend covers line 'flat'"]
    ax.legend(loc="upper right")
    assert problems(fig) == []
    ax.axvline(0.95, label="_hidden")
    assert problems(fig) == ["axes 1: the legend covers an unlabelled line"]

    fig, ax = plt.subplots()
    labelled(ax).bar([0, 1], [1.0, 1.0], label="bars")
    ax.scatter([2.0], [0.5], label="dots")
    ax.text(1.0, 0.1, "note")
    ax.set_xlim(-0.5, 2.5)
    ax.legend(loc="center", fontsize=30, markerscale=3)
    found = problems(fig)[0]
    assert "a bar" in found and "points 'dots'" not in found
    ax.legend(loc="center right", fontsize=30, markerscale=3)
    assert "points 'dots'" in problems(fig)[0]
    ax.legend(loc="lower center", fontsize=30)
    assert "the label 'note'" in problems(fig)[0]


def test_a_legend_outside_the_axes_hides_nothing():
    fig, ax = plt.subplots(layout="constrained")
    labelled(ax).plot([0, 1], [0, 1], label="rising")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.15))
    assert problems(fig) == []


def test_a_shaded_region_behind_the_legend_is_not_data():
    fig, ax = plt.subplots()
    labelled(ax).plot([0, 1], [0, 0.2], label="low")
    ax.axvspan(0.0, 0.5, alpha=0.1)
    ax.legend(loc="upper left")
    assert problems(fig) == []


def test_every_kernel_the_tests_start_reports_the_figures_it_draws(tmp_path, monkeypatch):
    from nbclient import NotebookClient

    found = tmp_path / "found.jsonl"
    monkeypatch.setenv("PERFMODEL_FIGURE_AUDIT", str(found))
    startup = ROOT / "test-output" / "figure-audit" / "ipython" / "profile_default" / "startup"
    assert (startup / "00-figure-audit.py").exists()  # the root conftest.py wrote it
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell("import matplotlib.pyplot as plt\nplt.plot([1, 2], [1, 2]);"),
        nbformat.v4.new_code_cell(
            "fig, ax = plt.subplots()\nax.bar([1, 2], [1, 100])\nax.set_yscale('log')\n"
            "ax.set(xlabel='n (count)', ylabel='time (s)');"
        ),
    ]
    NotebookClient(nb, timeout=120, resources={"metadata": {"path": str(ROOT)}}).execute()
    reports = [json.loads(line) for line in found.read_text().splitlines()]
    assert reports == [
        ["axes 1: the x axis has no label", "axes 1: the y axis has no label"],
        ["axes 1: bars on a log y axis (a bar's length then misstates its ratio to the others)"],
    ]


def test_boxes_drawn_another_way_on_a_log_axis_are_caught_too():
    from matplotlib.patches import Rectangle

    fig, ax = plt.subplots()
    labelled(ax, "throughput (images/s)", "run").broken_barh([(1, 10), (20, 100)], (0, 1))
    ax.set_xscale("log")
    assert any("boxes drawn from an edge on a log x axis" in p for p in problems(fig))
    fig, ax = plt.subplots()
    labelled(ax).add_patch(Rectangle((1, 0), 99, 1))
    ax.set_xlim(1, 1000), ax.set_xscale("log")
    assert any("boxes drawn from an edge" in p for p in problems(fig))
    fig, ax = plt.subplots()  # a shaded span is a region, not a bar
    labelled(ax).plot([1, 100], [0, 1])
    ax.axvspan(1, 10, alpha=0.2)
    ax.set_xscale("log")
    assert problems(fig) == []


def test_a_unit_must_be_a_unit():
    fig, ax = plt.subplots()
    ax.plot([1, 2], [3, 4])
    for label in ("time (bananas)", "time per request", "bandwidth per node", "model's time"):
        ax.set(xlabel="n (count)", ylabel=label)
        assert problems(fig) == [f"axes 1: the y axis label {label!r} names no unit"], label
    for label in ("latency, ms", "time in ns", "memory (GiB)", "seconds per request", "cores"):
        ax.set(ylabel=label)
        assert problems(fig) == [], label


def test_a_figure_legend_or_a_step_line_under_a_legend_is_caught():
    fig, ax = plt.subplots()
    labelled(ax).plot([0, 1], [0.5, 0.5], label="flat")
    ax.set_xlim(0, 1), ax.set_ylim(0, 1)
    fig.legend(loc="center")
    assert problems(fig) == ["axes 1: the figure's legend covers line 'flat'"]

    fig, ax = plt.subplots()  # drawn as steps it goes round the centre; a diagonal would not
    labelled(ax).plot([0, 0.8, 1], [0.9, 0.1, 0.1], drawstyle="steps-post", label="steps")
    ax.set_xlim(0, 1), ax.set_ylim(0, 1)
    ax.legend(loc="center")
    assert problems(fig) == []
    ax.get_lines()[0].set_drawstyle("default")
    assert problems(fig) == ["axes 1: the legend covers line 'steps'"]
