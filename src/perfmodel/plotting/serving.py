"""Lecture 11's pictures: the latency hockey stick, and one load's latency distribution.

* :func:`load_curve_plot`: p50 and p99 latency against offered load, simulated, with
  queueing theory's mean for comparison where one exists;
* :func:`latency_plot`: the latencies of one run as a histogram with p50, p90 and p99.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from matplotlib.ticker import MaxNLocator

from perfmodel.plotting import COLOURS, legend_beside, new_axes, si_formatter, style
from perfmodel.units import format_quantity

__all__ = ["latency_plot", "load_curve_plot"]


def load_curve_plot(
    rates: Sequence[float],
    runs: Sequence[Any],
    *,
    capacity: float,
    theory: Sequence[float] | None = None,
    marker: float | None = None,
    ax: Any = None,
) -> Any:
    """p50 and p99 latency of simulated ``runs`` at each arrival rate in ``rates``, against
    the load (rate over ``capacity``); ``theory`` adds a mean-latency curve, ``marker`` a
    vertical line at one rate.

    Parameters
    ----------
    rates : sequence of float
        The arrival rates simulated, requests per s.
    runs : sequence of perfmodel.serving.simulator.SimulationResult
        One run per rate, in the same order; anything with ``p50_latency_s`` and
        ``p99_latency_s`` will do.
    capacity : float
        The rate the service can sustain, requests per s; the load is rate over it.
    theory : sequence of float or None
        Queueing theory's mean latency at each rate, s; None draws no such curve.
    marker : float or None
        A rate to mark with a vertical line, requests per s; the axis widens past full load
        to show it. None marks none.
    ax : matplotlib.axes.Axes or None
        Axes to draw on: p50 and p99 latency (s) against load (0 to 100%), a legend beside;
        None makes a 10 x 6 inch figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    load = np.asarray(rates) / capacity
    with style():
        ax = new_axes(ax, (10, 6))
        ax.plot(load, [r.p99_latency_s for r in runs], "o-", color=COLOURS[1], label="p99")
        ax.plot(load, [r.p50_latency_s for r in runs], "o-", color=COLOURS[0], label="p50")
        if theory is not None:
            ax.plot(load, theory, "--", color="grey", label="mean, queueing theory")
        right = 1.0
        if marker is not None:  # past capacity too: the axis widens to show it
            right = max(right, 1.05 * marker / capacity)
            ax.axvline(marker / capacity, color=COLOURS[2], linewidth=2, label="chosen load")
        ax.set(xlabel="load (arrival rate / capacity)", ylabel="latency", xlim=(0, right),
               ylim=(0, None), title="Latency as load approaches capacity")  # fmt: skip
        ax.yaxis.set_major_formatter(si_formatter("s"))
        ax.xaxis.set_major_formatter(lambda x, _: f"{x:.0%}")
        legend_beside(ax)
    return ax


def latency_plot(run: Any, *, ax: Any = None) -> Any:
    """One run's latencies: a histogram, with its p50, p90 and p99 marked.

    Parameters
    ----------
    run : perfmodel.serving.simulator.SimulationResult
        A run's latencies, s; anything with ``latencies`` and ``percentile(q)`` will do.
    ax : matplotlib.axes.Axes or None
        Axes to draw on: a 60-bin histogram of the latencies with a vertical line at each of
        the three percentiles, a legend beside; None makes an 8 x 6 inch figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    latencies = np.asarray(run.latencies)
    with style():
        ax = new_axes(ax, (8, 6))
        ax.hist(latencies, bins=60, histtype="stepfilled", color=COLOURS[5], alpha=0.8)
        for q, colour in ((50, COLOURS[0]), (90, COLOURS[3]), (99, COLOURS[1])):
            value = run.percentile(q)
            ax.axvline(value, color=colour, linewidth=2.5,
                       label=f"p{q} = {format_quantity(value, 's')}")  # fmt: skip
        ax.set(xlabel="latency", ylabel="requests", title="Where the requests' latencies fall")
        ax.xaxis.set_major_formatter(si_formatter("s"))
        ax.xaxis.set_major_locator(MaxNLocator(4))  # room for "100 ms" beside its neighbours
        legend_beside(ax)
    return ax
