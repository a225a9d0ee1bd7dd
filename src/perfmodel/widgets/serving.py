"""Lecture 11: a serving explorer. Arrival rate, workers, batching and the balancer in; the
hockey stick and the latency distribution out.

The service is a model whose batch costs a fixed ``setup`` plus a share per request
(:func:`perfmodel.serving.linear_batch_time`), so batching buys capacity; every point is a
seeded simulation, so the same settings always draw the same picture.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any, NamedTuple

from perfmodel.widgets.collection import in_a_kernel
from perfmodel.widgets.controls import int_slider, live_plot, view_settings
from perfmodel.widgets.worker import Worker

__all__ = ["serving_explorer", "serving_view"]

SETUP_S, PER_REQUEST_S = 0.008, 0.002  # 10 ms for one request, 24 ms for eight


def _capacity(workers: int, servers: int, max_batch: int) -> float:
    return workers * servers * max_batch / (SETUP_S + PER_REQUEST_S * max_batch)


class _Percentiles(NamedTuple):
    """What the load curve plots of a run."""

    p50_latency_s: float
    p99_latency_s: float


def _simulate(
    rate: float,
    requests: int,
    workers: int,
    max_batch: int,
    max_wait_ms: float,
    servers: int,
    policy: str,
) -> Any:
    import warnings

    from perfmodel.serving import OverloadWarning, linear_batch_time, simulate

    cost = linear_batch_time(SETUP_S, PER_REQUEST_S)
    with warnings.catch_warnings():  # the rate's slider goes past capacity, on purpose:
        warnings.simplefilter("ignore", OverloadWarning)  # the title gives the load
        return simulate(rate, SETUP_S + PER_REQUEST_S, workers, servers=servers,
                        policy=policy, max_batch=max_batch, max_wait_s=max_wait_ms / 1e3,
                        batch_time=cost, requests=requests, seed=0)  # fmt: skip


def _percentiles(*arguments: Any) -> _Percentiles:
    """:func:`_simulate`'s run, only its percentiles: a run holds every request's latency
    (about 1 MB), too much to keep or to send between processes."""
    run = _simulate(*arguments)
    return _Percentiles(run.p50_latency_s, run.p99_latency_s)


#: The worker process the explorers share, started by the first explorer built in a kernel.
_worker: Worker | None = None


@lru_cache(maxsize=16)
def _load_curve(
    workers: int, max_batch: int, max_wait_ms: float, servers: int, policy: str
) -> tuple[list[float], list[_Percentiles]]:
    """The load curve's rates and its runs' percentiles (4000 requests each), which do not
    depend on the arrival rate chosen: moving the rate's slider runs one simulation, not
    eleven. Once an explorer's worker process is ready, it runs half of them meanwhile."""
    capacity = _capacity(workers, servers, max_batch)
    rates = [share * capacity for share in (0.1, 0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98)]
    calls = [(r, 4000, workers, max_batch, max_wait_ms, servers, policy) for r in rates]
    if _worker is None:
        return rates, [_percentiles(*call) for call in calls]
    return rates, _worker.map(_percentiles, calls)


def serving_view(
    arrival_rate: float = 300.0,
    workers: int = 2,
    max_batch: int = 8,
    max_wait_ms: float = 5.0,
    servers: int = 2,
    policy: str = "power_of_two",
) -> Any:
    """The static twin of :func:`serving_explorer`: the load curve with the chosen rate
    marked, and the latency distribution at that rate.

    Parameters
    ----------
    arrival_rate : float
        Requests arriving across all servers, requests per s.
    workers : int
        Workers per server, count; each serves one batch at a time.
    max_batch : int
        The most requests a batch holds, count.
    max_wait_ms : float
        How long a worker waits for a batch to fill, ms (milliseconds: 5.0 is 0.005 s).
    servers : int
        Servers behind the balancer, count.
    policy : str
        The balancer, one of :data:`perfmodel.serving.POLICIES`: ``"round_robin"``,
        ``"random"``, ``"least_loaded"`` or ``"power_of_two"``.

    Returns
    -------
    matplotlib.figure.Figure
        A new 15 x 6 inch figure: left, the simulated p50 and p99 latency at 10% to 98% of
        the full-batch capacity, ``arrival_rate`` marked; right, the latency histogram of
        8000 requests at ``arrival_rate``; the title gives the throughput served, the load,
        the workers' utilization and the mean batch.
    """
    import matplotlib.pyplot as plt

    from perfmodel.plotting import style
    from perfmodel.plotting.serving import latency_plot, load_curve_plot

    capacity = _capacity(workers, servers, max_batch)
    setup = (workers, max_batch, max_wait_ms, servers, policy)
    with style():
        figure, (left, right) = plt.subplots(1, 2, figsize=(15, 6), layout="constrained",
                                             width_ratios=(3, 2))  # fmt: skip
    rates, runs = _load_curve(*setup)
    load_curve_plot(rates, runs, capacity=capacity, marker=arrival_rate, ax=left)
    left.set_xlabel(f"load (arrival rate / {capacity:,.0f} requests/s, the capacity at full "
                    f"batches of {max_batch})")  # fmt: skip
    chosen = _simulate(arrival_rate, 8000, *setup)
    latency_plot(chosen, ax=right)
    figure.suptitle(
        f"{arrival_rate:.0f} requests/s on {servers} x {workers} workers ({policy}), batches of "
        f"up to {max_batch} at {SETUP_S * 1e3:.0f} ms + {PER_REQUEST_S * 1e3:.0f} ms a request, "
        f"waiting up to {max_wait_ms:g} ms:\n{chosen.throughput:.0f}/s served, load "
        f"{arrival_rate / capacity:.0%} of full-batch capacity, workers busy "
        f"{chosen.utilization:.0%} (mean batch {chosen.mean_batch:.1f})",
        fontsize=15,
    )
    return figure


def serving_explorer(**defaults: Any) -> Any:
    """Every knob of :func:`serving_view` as a control; the figures redraw live.

    Parameters
    ----------
    **defaults
        Starting settings, by :func:`serving_view`'s parameter names (a name it does not
        take is a TypeError).

    Returns
    -------
    ipywidgets.VBox
        Sliders for the arrival rate (10 to 2000 requests/s), workers, batch size, wait
        (0 to 50 ms) and servers, and a dropdown for the balancer, above
        :func:`serving_view`'s figure, redrawn when a control changes.
    """
    import ipywidgets as widgets

    from perfmodel.serving import POLICIES

    global _worker
    view = view_settings(serving_view, defaults)
    if _worker is None and in_a_kernel():  # a second core for the load curves, starting
        _worker = Worker([__name__])  # while the first figure draws
    wide = {"layout": widgets.Layout(width="38em"), "style": {"description_width": "8em"}}
    controls = {
        "arrival_rate": widgets.FloatSlider(value=view["arrival_rate"], min=10, max=2000,
                                            step=10, description="requests/s", **wide),
        "workers": int_slider(view["workers"], 1, 8, "workers"),
        "max_batch": int_slider(view["max_batch"], 1, 32, "max batch"),
        "max_wait_ms": widgets.FloatSlider(value=view["max_wait_ms"], min=0, max=50, step=0.5,
                                           description="max wait (ms)", **wide),
        "servers": int_slider(view["servers"], 1, 8, "servers"),
        "policy": widgets.Dropdown(options=list(POLICIES), value=view["policy"],
                                   description="balancer", **wide),
    }  # fmt: skip
    out = live_plot(serving_view, controls)
    return widgets.VBox([*controls.values(), out])
