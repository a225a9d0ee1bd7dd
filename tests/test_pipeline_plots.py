"""Stage bars, the Gantt chart and the partition explorer's static view."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import pytest

from perfmodel import pipeline as pl
from perfmodel.pipeline.schedule import simulate
from perfmodel.pipeline.zoo import inception_like
from perfmodel.plotting.pipeline import gantt, split_bars, stage_bars, stage_breakdown


def test_breakdown_adds_up_to_the_stage_cost():
    g = inception_like(modules=2)
    result = pl.partition(g, 3)
    for stage, parts in zip(result.stages, stage_breakdown(g, result.stages), strict=True):
        assert sum(parts) == pytest.approx(pl.stage_cost(g, stage))
    first, *_, last = stage_breakdown(g, result.stages)
    assert (
        first[1] == 0 and last[2] == 0
    )  # the first stage receives nothing, the last sends nothing


def test_stage_bars_draw_one_bar_per_stage_and_part_with_both_lines():
    g = pl.Graph([1.0, 2.0, 3.0, 4.0], [0.5] * 4, [(0, 1), (0, 2), (1, 3), (2, 3)])
    result = pl.partition(g, 2)
    ax = stage_bars(g, result, title="demo")
    assert len(ax.patches) >= 3 * len(result.stages)  # compute, receive and send bars
    heights = {round(line.get_ydata()[0], 6) for line in ax.get_lines()}
    assert round(1e6 * result.bottleneck, 6) in heights
    assert round(1e6 * result.lower_bound, 6) in heights
    plt.close(ax.figure)


def test_gantt_draws_every_stage_and_micro_batch():
    run = simulate([1e-4, 2e-4, 1e-4], micro_batches=4)  # 1 ms in all: drawn in µs
    ax = gantt(run)
    assert len(ax.patches) == 3 * 4
    assert ax.get_xlim() == pytest.approx((0, 1e6 * run.makespan))
    assert "bubble" in ax.get_title()
    plt.close(ax.figure)


def test_partition_view_names_the_models_it_knows():
    from perfmodel.widgets.partition import partition_view

    fig = partition_view("ResNet-50", "A100 SXM4 80GB", "PCIe 3.0 x16", 8)
    assert "1 of 8 stages used" in fig.axes[0].get_title()  # over PCIe 3, one GPU is best
    plt.close(fig)
    with pytest.raises(ValueError, match="`model` must be one of"):
        partition_view("AlexNet")


def test_partition_explorer_builds():
    from perfmodel.widgets.partition import partition_explorer

    box = partition_explorer()
    assert len(box.children) == 3


def test_split_bars_draw_one_labelled_bar_per_split_best_last_in_green():
    from matplotlib.colors import to_hex

    g = pl.Graph.chain([1.0, 1.0, 1.0, 5.0], [0.5] * 4)
    results = {"equal layers": pl.split_order(g, g.order, 2), "optimal": pl.partition(g, 2)}
    ax = split_bars(results, title="demo")
    assert [t.get_text() for t in ax.get_yticklabels()] == ["equal layers", "optimal"]
    widths = [bar.get_width() for bar in ax.patches]
    assert widths == pytest.approx([1e6 * r.bottleneck for r in results.values()])
    assert to_hex(ax.patches[-1].get_facecolor()) == "#2e933c"
    plt.close(ax.figure)
    with pytest.raises(ValueError, match="at least one split"):
        split_bars({})


def test_gantts_put_several_runs_on_one_time_axis():
    from perfmodel.plotting.pipeline import gantts

    slow = simulate([1e-3] * 4, micro_batches=1)  # 4 ms: drawn in µs, like the fast one
    fast = simulate([1.25e-4] * 4, micro_batches=8)
    fig = gantts({"whole": slow, "cut": fast}, title="demo")
    top, bottom = fig.axes
    assert top.get_xlim() == bottom.get_xlim() == pytest.approx((0, 1e6 * slow.makespan))
    assert len(top.patches) == 4 and len(bottom.patches) == 4 * 8
    assert top.get_title() == "whole: done at 4,000 µs, bubble 75%"
    assert bottom.get_title().startswith("cut: done at 1,375 µs")
    assert bottom.get_xlabel() == "time (µs)" and not top.get_xlabel()
    plt.close(fig)
    with pytest.raises(ValueError, match="at least one schedule"):
        gantts({})
