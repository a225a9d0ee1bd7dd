"""Lecture 01: run time as work times time per unit of work over parallelism, T = W·t/P."""

from __future__ import annotations

from typing import Any

from perfmodel.metrics import run_time_s
from perfmodel.units import format_quantity
from perfmodel.widgets.controls import int_slider, live_text, log_slider

__all__ = ["run_time_explorer", "run_time_text"]


def run_time_text(work: float, time_per_work_s: float, parallelism: float) -> str:
    """T = W·t/P in words (the static twin of :func:`run_time_explorer`).

    Parameters
    ----------
    work : float
        Units of work W, count.
    time_per_work_s : float
        The time t one unit takes, s.
    parallelism : float
        Units in progress at once, P, count (positive).

    Returns
    -------
    str
        The formula with the numbers put in and T written with an SI prefix, s.

    Examples
    --------
    >>> run_time_text(1e9, 1e-9, 8)
    'T = W·t/P = 1e+09 x 1 ns / 8 = 125 ms'
    """
    seconds = run_time_s(work, time_per_work_s, parallelism)
    return (
        f"T = W·t/P = {work:.3g} x {format_quantity(time_per_work_s, 's')} / {parallelism:g} "
        f"= {format_quantity(seconds, 's')}"
    )


def run_time_explorer(work: float = 1e9, time_per_work_s: float = 1e-9) -> Any:
    """Sliders for W, t and P driving the sentence from :func:`run_time_text`.

    Parameters
    ----------
    work : float
        W at first, count (the log slider runs from 1e3 to 1e15).
    time_per_work_s : float
        t at first, s (the log slider runs from 1 ps to 1 ms).

    Returns
    -------
    ipywidgets.VBox
        Log sliders for W and t, an integer slider for P (1 to 1024, 8 at first), and the
        line :func:`run_time_text` writes for them, rewritten when a slider moves.
    """
    import ipywidgets as widgets

    w = log_slider(work, 3, 15, "W (work)", "")
    t = log_slider(time_per_work_s, -12, -3, "t (per work)", "s")
    p = int_slider(8, 1, 1024, "P (parallel)")
    text = live_text(
        (w.slider, t.slider, p),
        lambda: run_time_text(w.slider.value, t.slider.value, p.value),
        "perfmodel-run-time",
    )
    return widgets.VBox([w, t, p, text])
