"""Find the ways a figure can mislead: bars on a log value axis, an axis without a label or a
unit, and a legend drawn over the data.

:func:`problems` reads one matplotlib figure. :func:`install` wraps matplotlib's
``print_figure`` so every figure a kernel renders (a lecture's inline plots, a static view, an
explorer's first frame) is read as it is drawn, and each problem is appended, as one JSON line,
to the file named by ``PERFMODEL_FIGURE_AUDIT``. ``conftest.py`` installs it in every kernel
nbval starts and fails the cell that drew the figure.
"""

from __future__ import annotations

import json
import os
import re
from typing import Any

import numpy as np
from matplotlib.axis import Axis
from matplotlib.category import StrCategoryLocator
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, StrMethodFormatter
from matplotlib.transforms import Bbox

#: Where the rendered figures' problems go, one JSON object a line.
AUDIT_FILE = "PERFMODEL_FIGURE_AUDIT"

#: A label names its unit in brackets, "(ms)" or "[GB/s]", or is a count or a ratio that
#: has none. These words mark the dimensionless quantities the lectures plot.
DIMENSIONLESS = re.compile(
    r"\b(speedup|ratio|fraction|share|efficiency|utili[sz]ation|count|number of|threads?|"
    r"processors?|workers?|devices?|gpus?|nodes?|stages?|(mini)?batch|layers?|sequences?|requests?|"
    r"tokens?|elements?|width|rank|per ?cent|relative|normali[sz]ed|x)\b|×|%",
    re.IGNORECASE,
)
UNIT = re.compile(
    r"\b(k|M|G|T|P)?(s|seconds?|minutes?|hours?|days?|bytes?|B|bits?|b|FLOPs?|OPs?|W|watts?|"
    r"joules?|J|Hz|dollars?|\$)\b|/s\b|per second|µs|FLOP|byte",
)
NUMBER = re.compile(r"^[\s−\-+]*[\d.,]+(e[−\-+]?\d+)?\s*$|^\$.*\$$", re.IGNORECASE)


def problems(figure: Figure) -> list[str]:
    """Every way ``figure`` misleads a reader, as sentences naming the axes; empty when none.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> _ = ax.barh(["a", "b"], [1.0, 100.0])
    >>> ax.set_xscale("log")
    >>> for problem in problems(fig):
    ...     print(problem)
    axes 1: bars on a log x axis (a bar's length then misstates its ratio to the others)
    axes 1: the x axis has no label
    >>> plt.close(fig)
    """
    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    found: list[str] = []
    for number, ax in enumerate(figure.axes, start=1):
        if not ax.get_visible() or not ax.axison or not _has_data(ax):
            continue
        where = f"axes {number}" + (f" ({ax.get_title()!r})" if ax.get_title() else "")
        found += [f"{where}: {text}" for text in _bars_on_log(ax)]
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            text = _label_problem(ax, axis)
            if text:
                found.append(f"{where}: the {name} axis {text}")
        hidden = _hidden_by_legend(ax, renderer)
        if hidden:
            found.append(f"{where}: the legend covers {hidden}")
    return found


def _has_data(ax: Any) -> bool:
    return bool(ax.lines or ax.patches or ax.collections or ax.images or ax.containers)


def _bars_on_log(ax: Any) -> list[str]:
    found = []
    for container in ax.containers:
        if not isinstance(container, BarContainer):
            continue
        horizontal = container.orientation == "horizontal"
        name, scale = ("x", ax.get_xscale()) if horizontal else ("y", ax.get_yscale())
        if scale != "linear":
            found.append(
                f"bars on a {scale} {name} axis (a bar's length then misstates its ratio "
                "to the others)"
            )
    return found


def _label_problem(ax: Any, axis: Axis) -> str:
    if not axis.get_visible() or isinstance(axis.get_major_formatter(), NullFormatter):
        return ""
    ticks = [t.get_text() for t in axis.get_ticklabels() if t.get_visible() and t.get_text()]
    if not ticks and not _shared_label(ax, axis):
        return ""  # no tick labels: nothing is read off this axis
    formatter = axis.get_major_formatter()
    explicit = isinstance(axis.get_major_locator(), FixedLocator | StrCategoryLocator)
    categorical = explicit and not all(NUMBER.match(t) for t in ticks)
    if categorical:
        return ""  # the tick labels name the categories
    label = axis.get_label_text().strip() or _shared_label(ax, axis)
    if not label:
        return "has no label"
    units_in_ticks = isinstance(formatter, FuncFormatter | StrMethodFormatter) and any(
        re.search(r"[a-zA-Zµ%×/]", t) for t in ticks
    )
    bracketed = re.search(r"[(\[].+[)\]]", label)
    if units_in_ticks or bracketed or UNIT.search(label) or DIMENSIONLESS.search(label):
        return ""
    return f"label {label!r} names no unit"


def _shared_label(ax: Any, axis: Axis) -> str:
    """The label a figure gives its axes together (``fig.supxlabel``) when the axes has none."""
    figure = ax.get_figure()
    text = figure._supxlabel if axis is ax.xaxis else figure._supylabel
    return text.get_text().strip() if text is not None and text.get_visible() else ""


def _hidden_by_legend(ax: Any, renderer: Any) -> str:
    legend = ax.get_legend()
    if legend is None or not legend.get_visible():
        return ""
    box = legend.get_window_extent(renderer).shrunk(0.98, 0.98)
    inside = ax.get_window_extent(renderer)
    covered = []
    for line in ax.lines:
        if line.get_visible() and _line_enters(line, box, inside):
            label = line.get_label()
            covered.append("an unlabelled line" if label.startswith("_") else f"line {label!r}")
    for collection in ax.collections:
        offsets = collection.get_offsets()
        if not collection.get_visible() or len(offsets) == 0 or collection.get_paths() == []:
            continue
        if type(collection).__name__ not in ("PathCollection",):
            continue
        points = collection.get_offset_transform().transform(offsets)
        if _any_inside(points, box, inside):
            covered.append(f"points {collection.get_label()!r}")
    bars = [bar for c in ax.containers if isinstance(c, BarContainer) for bar in c]
    if any(_overlap(bar.get_window_extent(renderer), box) > 4.0 for bar in bars):
        covered.append("a bar")
    for text in ax.texts:
        shown = text.get_visible() and text.get_text().strip()
        if shown and _overlap(text.get_window_extent(renderer), box) > 4.0:
            covered.append(f"the label {text.get_text()!r}")
    return ", ".join(covered)


def _line_enters(line: Any, box: Bbox, inside: Bbox) -> bool:
    xy = np.asarray(line.get_xydata(), dtype=float)
    xy = xy[np.isfinite(xy).all(axis=1)]
    if len(xy) == 0:
        return False
    points = line.get_transform().transform(xy)
    if line.get_linestyle() not in ("None", "none", "", " ") and len(points) > 1:
        steps = np.linspace(0.0, 1.0, 50)[:, None]
        segments = [a + steps * (b - a) for a, b in zip(points[:-1], points[1:], strict=True)]
        points = np.concatenate(segments)
    return _any_inside(points, box, inside)


def _any_inside(points: np.ndarray, box: Bbox, inside: Bbox) -> bool:
    x, y = points[:, 0], points[:, 1]
    visible = (x >= inside.x0) & (x <= inside.x1) & (y >= inside.y0) & (y <= inside.y1)
    covered = (x > box.x0) & (x < box.x1) & (y > box.y0) & (y < box.y1)
    return bool((visible & covered).any())


def _overlap(a: Bbox, b: Bbox) -> float:
    """The area, in square pixels, that two boxes share."""
    width = min(a.x1, b.x1) - max(a.x0, b.x0)
    height = min(a.y1, b.y1) - max(a.y0, b.y0)
    return max(width, 0.0) * max(height, 0.0)


def install() -> None:
    """Read each figure this process renders; append its problems to ``$PERFMODEL_FIGURE_AUDIT``.

    Does nothing when the variable is unset, so a kernel started outside the tests is untouched.
    """
    path = os.environ.get(AUDIT_FILE)
    if not path:
        return
    from matplotlib.backend_bases import FigureCanvasBase

    original = FigureCanvasBase.print_figure

    def print_figure(canvas: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            found = problems(canvas.figure)
        except Exception as error:  # a broken audit must say so, not pass silently
            found = [f"the figure audit failed: {type(error).__name__}: {error}"]
        if found:
            with open(path, "a", encoding="utf-8") as out:
                out.write(json.dumps(found) + "\n")
        return original(canvas, *args, **kwargs)

    FigureCanvasBase.print_figure = print_figure  # type: ignore[method-assign]
