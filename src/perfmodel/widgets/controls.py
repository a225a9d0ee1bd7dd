"""Controls every explorer shares: log sliders that read in units, live text, a redrawn plot."""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Mapping
from typing import Any

from perfmodel._validate import positive
from perfmodel.units import format_quantity

__all__ = [
    "LOG_STEP",
    "int_slider",
    "live_plot",
    "live_text",
    "log_slider",
    "snap_to_log_grid",
    "view_settings",
]

#: Log sliders move in tenths of a decade.
LOG_STEP = 0.1

#: Wide controls with wide labels: they are driven with a mouse on a podium.
_LAYOUT = {"width": "38em"}
_STYLE = {"description_width": "8em"}


def snap_to_log_grid(value: float, step: float = LOG_STEP) -> float:
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
    value = positive("value", value)
    return float(10 ** (round(math.log10(value) / step) * step))


def log_slider(value: float, low: int, high: int, description: str, unit: str) -> Any:
    """A wide log slider from 10**low to 10**high whose readout is written in ``unit``.

    The slider's own readout would print ``1.00e+11``; this one hides it and shows
    ``100 GB/s`` beside it instead. The returned box has the slider as ``.slider``.
    """
    import ipywidgets as widgets

    slider = widgets.FloatLogSlider(
        value=snap_to_log_grid(value),
        base=10,
        min=low,
        max=high,
        step=LOG_STEP,
        description=description,
        readout=False,
        continuous_update=True,
        style=_STYLE,
        layout=widgets.Layout(**_LAYOUT),
    )
    readout = widgets.Label()

    def show(_: object = None) -> None:
        readout.value = format_quantity(slider.value, unit)

    slider.observe(show, names="value")
    show()
    box = widgets.HBox([slider, readout])
    box.slider = slider
    return box


def int_slider(value: int, low: int, high: int, description: str, *, step: int = 1) -> Any:
    """A wide integer slider, easy to drive with a mouse on a podium."""
    import ipywidgets as widgets

    return widgets.IntSlider(
        value=value,
        min=low,
        max=high,
        step=step,
        description=description,
        style=_STYLE,
        layout=widgets.Layout(**_LAYOUT),
    )


def live_text(controls: tuple[Any, ...], render: Callable[[], str], css_class: str) -> Any:
    """An HTML line, large enough for a lecture hall, re-rendered whenever a control moves."""
    import ipywidgets as widgets

    line = widgets.HTML()
    line.add_class(css_class)

    def update(_: object = None) -> None:
        line.value = f"<p style='font-size:1.5em;margin:0.4em 0'>{html.escape(render())}</p>"

    for control in controls:
        control.observe(update, names="value")
    update()
    return line


def live_plot(view: Callable[..., Any], controls: Mapping[str, Any]) -> Any:
    """An output area that redraws ``view(**values)`` whenever one of ``controls`` moves.

    A ``ValueError`` from the view (a device without the chosen dtype, say) is printed as
    its message instead of a traceback, and the explorer keeps working.
    """
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    def draw(**values: Any) -> None:
        try:
            view(**values)
        except ValueError as error:
            print(error)
            plt.close("all")
            return
        plt.show()

    return widgets.interactive_output(draw, dict(controls))


def view_settings(view: Callable[..., Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``view``'s keyword defaults with ``overrides`` applied: what an explorer starts from.

    An override ``view`` does not take is a TypeError naming it and listing what it takes.

    >>> def view(rate: float = 1.0, workers: int = 2) -> None: ...
    >>> view_settings(view, {"workers": 4})
    {'rate': 1.0, 'workers': 4}
    """
    import inspect

    settings = {name: p.default for name, p in inspect.signature(view).parameters.items()}
    unknown = sorted(set(overrides) - set(settings))
    if unknown:
        raise TypeError(
            f"unknown settings: {', '.join(unknown)} ({view.__name__} takes {', '.join(settings)})."
        )
    return {**settings, **overrides}
