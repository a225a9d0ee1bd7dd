"""Every control of every explorer does something from the explorer's starting point.

A control that changes nothing at the defaults teaches a lecturer's audience that it does not
matter. Each explorer is built, each of its controls is moved away from its default (a
dropdown to each other option, a slider to its ends, a box ticked or cleared) and what the
explorer shows must change: its text line, or the figure it draws. Figures are compared by
what they contain (titles, labels, texts, the data of every line, bar and point), so the test
needs no drawing.
"""

from __future__ import annotations

import matplotlib

matplotlib.use("agg")

import ipywidgets as widgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from figure_audit import problems  # noqa: E402

from perfmodel.widgets import controls  # noqa: E402

#: Each explorer is driven through every state: minutes of CPU, so not in `make test-fast`.
pytestmark = pytest.mark.slow

#: The cache sweep's controls act through its *measure* button, not on a live output:
#: tests/test_widgets.py checks that the sweep measures what they say.
BUTTON_DRIVEN = {"cache_sweep_explorer"}


def explorers() -> list:
    """Every ``*_explorer`` in :mod:`perfmodel.widgets` that redraws as its controls move."""
    import importlib
    import pkgutil

    import perfmodel.widgets

    found = []
    for info in pkgutil.iter_modules(perfmodel.widgets.__path__):
        module = importlib.import_module(f"perfmodel.widgets.{info.name}")
        found += [getattr(module, name) for name in getattr(module, "__all__", ())
                  if name.endswith("_explorer") and name not in BUTTON_DRIVEN]  # fmt: skip
    return sorted(found, key=lambda f: f.__name__)


#: What the figure audit found in the states an explorer was moved through.
MISLEADING: list[str] = []


def figure_contents(view, values, layout=None, spares=None) -> bytes:
    """What ``view(**values)`` draws, as bytes: equal bytes, the same picture."""
    before = set(plt.get_fignums())
    try:
        view(**values)
        parts: list[object] = []
        figure = plt.gcf()
        MISLEADING.extend(f"{values}: {problem}" for problem in problems(figure))
        parts.append(figure._suptitle.get_text() if figure._suptitle else "")
        for ax in figure.axes:
            parts += [
                ax.get_title(),
                ax.get_xlabel(),
                ax.get_ylabel(),
                ax.get_xlim(),
                ax.get_ylim(),
            ]
            parts += [t.get_text() for t in ax.texts]
            legend = ax.get_legend()
            parts += [t.get_text() for t in legend.get_texts()] if legend else []
            parts += [np.round(line.get_xydata(), 12).tobytes() for line in ax.lines]
            parts += [(p.get_x(), p.get_y(), p.get_width(), p.get_height())
                      for p in ax.patches if hasattr(p, "get_width")]  # fmt: skip
            parts += [np.round(c.get_offsets(), 12).tobytes() for c in ax.collections]
            parts += [t.get_text() for t in ax.get_xticklabels() + ax.get_yticklabels()]
        return repr(parts).encode()
    finally:
        for number in set(plt.get_fignums()) - before:
            plt.close(number)


def walk(widget, *, readouts: bool = True):
    """``widget`` and everything inside it; without a log slider's readout when asked."""
    yield widget
    if not readouts and hasattr(widget, "slider"):
        yield widget.slider  # controls.log_slider: a slider and the label that reads it
        return
    for child in getattr(widget, "children", ()):
        yield from walk(child, readouts=readouts)


def is_control(widget) -> bool:
    if getattr(widget, "disabled", False):
        return False  # greyed out: it says itself that it cannot change anything here
    return isinstance(
        widget, widgets.Dropdown | widgets.IntSlider | widgets.FloatSlider | widgets.FloatLogSlider
        | widgets.Checkbox
        | widgets.ToggleButtons | widgets.RadioButtons | widgets.SelectionSlider
    )  # fmt: skip


def shown(box) -> tuple:
    """What the explorer shows: every image and text line outside its controls."""
    return tuple(
        w.value
        for w in walk(box, readouts=False)
        if isinstance(w, widgets.Image | widgets.HTML | widgets.Label)
    ) + tuple(repr(w.outputs) for w in walk(box) if isinstance(w, widgets.Output))


#: The most options of one dropdown tried: evenly spread over its list, first and last kept
#: (a list of 25 devices would otherwise draw 25 figures for one control).
OPTIONS_TRIED = 6


def other_values(control) -> list:
    if isinstance(control, widgets.Checkbox):
        return [not control.value]
    if hasattr(control, "options"):
        values = [v for _, v in control._options_full] if hasattr(control, "_options_full") else []
        values = values or [o[1] if isinstance(o, tuple) else o for o in control.options]
        others = [v for v in values if v != control.value]
        picks = np.linspace(0, len(others) - 1, min(OPTIONS_TRIED, len(others))).round()
        return [others[int(i)] for i in sorted(set(picks))]
    ends = (control.min, control.max)
    if isinstance(control, widgets.FloatLogSlider):
        ends = tuple(control.base**end for end in ends)
    return [v for v in ends if not np.isclose(v, control.value)]


def dead_controls(box) -> list[str]:
    """Each control of ``box`` moved from its default to each other value that changes nothing."""
    found = [w for w in walk(box) if is_control(w)]
    assert found, "the explorer has no controls"
    dead = []
    for control in found:
        default = control.value
        start = shown(box)
        for value in other_values(control):
            control.value = value
            name = control.description or type(control).__name__
            if shown(box) == start:
                dead.append(f"{name} = {value!r}")
            elif "<pre>" in " ".join(str(v) for v in shown(box)) and not any(
                isinstance(v, bytes) for v in shown(box)
            ):
                dead.append(f"{name} = {value!r} (only an error message)")
            control.value = default
        assert shown(box) == start, f"{control.description}: going back does not restore the view"
    return dead


def test_a_control_that_changes_nothing_is_found():
    live = controls.int_slider(2, 1, 4, "live")
    idle = widgets.Dropdown(options=["a", "b"], value="a", description="idle")
    line = controls.live_text((live, idle), lambda: f"{live.value} workers", "demo")
    assert dead_controls(widgets.VBox([live, idle, line])) == ["idle = 'b'"]


@pytest.mark.parametrize("explorer", explorers(), ids=lambda f: f.__name__)
def test_every_control_changes_what_the_explorer_shows(explorer, monkeypatch):
    monkeypatch.setattr(controls, "render_svg", figure_contents)
    MISLEADING.clear()
    dead = dead_controls(explorer())
    assert not dead, f"{explorer.__name__}: moving these changes nothing: {'; '.join(dead)}"
    assert not MISLEADING, f"{explorer.__name__} draws misleading figures: {MISLEADING[:5]}"
