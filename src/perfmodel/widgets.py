"""Interactive explorers for the lectures: thin wires from sliders to a model function.

Every explorer has a static twin (a plain function of the same arguments) that the
notebooks call once with the default values, so the page still reads well where widgets
cannot render: a PDF, GitHub's viewer, a projector with a dead kernel.
"""

from __future__ import annotations

import html
import math
from typing import Any

from perfmodel.metrics import transfer_time_s
from perfmodel.units import format_quantity, format_rate

__all__ = ["snap_to_log_grid", "transfer_time_explorer", "transfer_time_text"]


def transfer_time_text(nbytes: float, bandwidth_bytes_per_s: float) -> str:
    """One sentence: how long moving ``nbytes`` at a bandwidth takes (the static twin).

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


#: Log sliders move in tenths of a decade.
_LOG_STEP = 0.1


def snap_to_log_grid(value: float, step: float = _LOG_STEP) -> float:
    """The value a log slider with ``step`` (in decades) will show for ``value``.

    A browser snaps a log slider's value to its grid; snapping in Python first keeps the
    text computed before the first render equal to what the slider then shows.

    Examples
    --------
    >>> snap_to_log_grid(400e9)
    398107170553.49854
    >>> snap_to_log_grid(1e7)
    10000000.0
    """
    if not value > 0:
        raise ValueError(f"`value` must be positive to sit on a log slider (got {value!r}).")
    return float(10 ** (round(math.log10(value) / step) * step))


def transfer_time_explorer(nbytes: float = 10e6, bandwidth_bytes_per_s: float = 100e9) -> Any:
    """Two log sliders (size, bandwidth) driving the sentence from :func:`transfer_time_text`.

    Values snap to tenths of a decade, as the sliders do.

    Returns
    -------
    ipywidgets.VBox
        Display it (leave it as a cell's last expression).
    """
    import ipywidgets as widgets

    size = widgets.FloatLogSlider(
        value=snap_to_log_grid(nbytes),
        base=10,
        min=3,
        max=11,
        step=_LOG_STEP,
        description="bytes",
        readout_format=".3g",
        continuous_update=True,
        style={"description_width": "8em"},
        layout=widgets.Layout(width="38em"),
    )
    bandwidth = widgets.FloatLogSlider(
        value=snap_to_log_grid(bandwidth_bytes_per_s),
        base=10,
        min=8,
        max=13,
        step=_LOG_STEP,
        description="bandwidth (B/s)",
        readout_format=".3g",
        continuous_update=True,
        style={"description_width": "8em"},
        layout=widgets.Layout(width="38em"),
    )
    sentence = widgets.HTML()
    sentence.add_class("perfmodel-transfer-time")

    def update(_: object = None) -> None:
        text = html.escape(transfer_time_text(size.value, bandwidth.value))
        sentence.value = f"<p style='font-size:1.6em;margin:0.4em 0'>{text}</p>"

    size.observe(update, names="value")
    bandwidth.observe(update, names="value")
    update()
    return widgets.VBox([size, bandwidth, sentence])
