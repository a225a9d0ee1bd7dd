"""Lecture 11's pictures draw what the simulator computed."""

from __future__ import annotations

import matplotlib

matplotlib.use("agg")

import pytest  # noqa: E402

from perfmodel import serving  # noqa: E402
from perfmodel.plotting.serving import latency_plot, load_curve_plot  # noqa: E402
from perfmodel.units import format_quantity  # noqa: E402
from perfmodel.widgets.serving import serving_explorer, serving_view  # noqa: E402


def test_the_load_curve_plots_each_runs_percentiles_at_its_load():
    rates = [0.2, 0.5, 0.8]
    runs = [serving.simulate(rate, 1.0, 1, requests=3000, seed=0) for rate in rates]
    theory = [serving.mmc_wait(rate, 1.0, 1) + 1.0 for rate in rates]
    ax = load_curve_plot(rates, runs, capacity=1.0, theory=theory, marker=0.5)
    lines = {line.get_label(): line for line in ax.get_lines()}
    assert list(lines["p99"].get_xdata()) == pytest.approx(rates)
    assert list(lines["p99"].get_ydata()) == pytest.approx([r.p99_latency_s for r in runs])
    assert list(lines["mean, queueing theory"].get_ydata()) == pytest.approx(theory)


def test_the_latency_plot_marks_the_percentiles():
    run = serving.simulate(0.7, 1.0, 1, requests=3000, seed=2)
    ax = latency_plot(run)
    marked = {line.get_label(): line.get_xdata()[0] for line in ax.get_lines()}
    assert marked[f"p99 = {format_quantity(run.p99_latency_s, 's')}"] == pytest.approx(
        run.p99_latency_s
    )


def test_the_explorer_view_titles_what_it_simulated():
    figure = serving_view(arrival_rate=200, workers=1, max_batch=4, servers=1)
    run = serving.simulate(200, 0.010, 1, max_batch=4, max_wait_s=0.005, requests=8000, seed=0,
                           batch_time=serving.linear_batch_time(0.008, 0.002))  # fmt: skip
    title = figure._suptitle.get_text()
    assert f"workers busy {run.utilization:.0%} (mean batch {run.mean_batch:.1f})" in title
    capacity = 4 / (0.008 + 0.002 * 4)  # one worker, full batches of 4
    assert f"load {200 / capacity:.0%} of full-batch capacity" in title
    with pytest.raises(TypeError, match="unknown settings"):
        serving_explorer(gpus=2)
