"""Lecture 00: how long moving some bytes over a link takes."""

from __future__ import annotations

from typing import Any

from perfmodel.metrics import transfer_time_s
from perfmodel.units import format_quantity, format_rate
from perfmodel.widgets.controls import live_text, log_slider

__all__ = ["transfer_time_explorer", "transfer_time_text"]


def transfer_time_text(nbytes: float, bandwidth_bytes_per_s: float) -> str:
    """One sentence: how long moving ``nbytes`` at a bandwidth takes (the static twin).

    Parameters
    ----------
    nbytes : float
        The bytes moved, B.
    bandwidth_bytes_per_s : float
        The link's bandwidth, B/s.

    Returns
    -------
    str
        The sentence, with the size, the bandwidth and the time (s) written with SI
        prefixes.

    Examples
    --------
    >>> transfer_time_text(10e6, 400e9)
    'Moving 10 MB at 400 GB/s takes 25 µs.'
    """
    seconds = transfer_time_s(nbytes, bandwidth_bytes_per_s)
    return (
        f"Moving {format_quantity(nbytes, 'B')} at {format_rate(bandwidth_bytes_per_s, 'B/s')} "
        f"takes {format_quantity(seconds, 's')}."
    )


def transfer_time_explorer(nbytes: float = 10e6, bandwidth_bytes_per_s: float = 100e9) -> Any:
    """Two log sliders (size, bandwidth) driving the sentence from :func:`transfer_time_text`.

    Values snap to tenths of a decade, as the sliders do.

    Parameters
    ----------
    nbytes : float
        The size the slider starts at, B (it runs from 1 kB to 100 GB).
    bandwidth_bytes_per_s : float
        The bandwidth the slider starts at, B/s (it runs from 100 MB/s to 10 TB/s).

    Returns
    -------
    ipywidgets.VBox
        The two sliders and the sentence :func:`transfer_time_text` writes for them,
        rewritten as a slider moves. Display it (leave it as a cell's last expression).
    """
    import ipywidgets as widgets

    size = log_slider(nbytes, 3, 11, "size", "B")
    bandwidth = log_slider(bandwidth_bytes_per_s, 8, 13, "bandwidth", "B/s")
    sentence = live_text(
        (size.slider, bandwidth.slider),
        lambda: transfer_time_text(size.slider.value, bandwidth.slider.value),
        "perfmodel-transfer-time",
    )
    return widgets.VBox([size, bandwidth, sentence])
