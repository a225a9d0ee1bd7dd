"""Lecture 06: measure this machine's memory levels live, with a progress bar."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perfmodel.measure.microbench import KernelResult
from perfmodel.widgets.controls import int_slider, log_slider

__all__ = ["cache_sweep_explorer", "cache_sweep_view"]


def cache_sweep_view(kernels: Sequence[KernelResult]) -> Any:
    """The static twin of :func:`cache_sweep_explorer`: measured working sets against this
    CPU's caches (see :func:`perfmodel.plotting.empirical.working_set_plot`).

    Parameters
    ----------
    kernels : sequence of perfmodel.measure.microbench.KernelResult
        A working-set sweep, as :func:`perfmodel.measure.empirical.working_set_sweep`
        returns it.

    Returns
    -------
    matplotlib.axes.Axes
        A new figure's axes: bandwidth (B/s) against working set (B), with a dotted line
        at each of this CPU's data caches.
    """
    from perfmodel.measure.empirical import cpu_caches
    from perfmodel.plotting.empirical import working_set_plot

    return working_set_plot(kernels, cpu_caches())


def cache_sweep_explorer(largest: float = 256e6, points: int = 12) -> Any:
    """Pick the largest working set and how many sizes, press *measure*, watch the staircase.

    The sweep shows a progress bar while it runs and draws the bandwidth of every size it
    measured; the notebook's stop button ends it early and keeps what it has.

    Parameters
    ----------
    largest : float
        The largest working set the slider starts at, B (its range is 100 kB to 1 GB, in
        tenths of a decade); the sweep measures its whole number of bytes.
    points : int
        How many sizes the slider starts at, count (4 to 24).

    Returns
    -------
    ipywidgets.VBox
        The two sliders, a *measure* button, and an output area where a press shows the
        sweep's progress bar and then :func:`cache_sweep_view`'s figure. Nothing is measured
        until the button is pressed.
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from perfmodel.measure.empirical import working_set_sweep

    biggest = log_slider(largest, 5, 9, "largest set", "B")
    sizes = int_slider(points, 4, 24, "sizes")
    button = widgets.Button(description="measure", button_style="primary", icon="play",
                            layout=widgets.Layout(width="12em", height="3em"))  # fmt: skip
    out = widgets.Output()

    def run(_: object = None) -> None:
        button.disabled = True
        try:
            with out:
                out.clear_output(wait=True)
                kernels = working_set_sweep(int(biggest.slider.value), points=sizes.value)
                cache_sweep_view(kernels)
                plt.show()
        finally:
            button.disabled = False

    button.on_click(run)
    return widgets.VBox([biggest, sizes, button, out])
