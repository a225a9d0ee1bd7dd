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
from matplotlib.cbook import STEP_LOOKUP_MAP
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import FixedLocator, FuncFormatter, NullFormatter, StrMethodFormatter
from matplotlib.transforms import Bbox

#: Where the rendered figures' problems go, one JSON object a line.
AUDIT_FILE = "PERFMODEL_FIGURE_AUDIT"

#: A quantity with a dimension: its label must name a unit.
DIMENSIONAL = re.compile(
    r"\b(time|latency|duration|delay|wait|bandwidth|throughput|rate|memory|size|capacity|"
    r"energy|power|traffic|speed(?!up)|compute|peak)\b",
    re.IGNORECASE,
)
#: A count or a ratio, which has no unit: these words mark the ones the lectures plot.
DIMENSIONLESS = re.compile(
    r"\b(speedup|ratio|fraction|share|efficiency|utili[sz]ation|count|number of|threads?|"
    r"processors?|workers?|devices?|gpus?|cores?|nodes?|ranks?|stages?|(mini)?batch|layers?|"
    r"sequences?|requests?|tokens?|elements?|width|per ?cent|relative|normali[sz]ed|"
    r"iterations?|steps?|year)\b|×|%",
    re.IGNORECASE,
)
#: A unit written out: "seconds per sample", "working set (bytes)".
UNIT_WORD = re.compile(
    r"\b(seconds?|milliseconds?|microseconds?|nanoseconds?|minutes?|hours?|days?|bytes?|"
    r"bits?|FLOPs?|watts?|joules?|dollars?|hertz|steps)\b|\bFLOP\b|\bFLOP/s|per second",
    re.IGNORECASE,
)
#: A unit's symbol, with its SI or binary prefix: "ms", "GB/s", "TFLOP/s", "GiB", "µs".
SYMBOL = r"(?:[kMGTPEmuµn]i?)?(?:s|B|b|FLOP|OP|W|J|Hz|\$)(?:/s|/B|/byte)?"
#: Where a symbol stands as a unit: in brackets, or after a comma, "in" or a slash.
UNIT_SYMBOL = re.compile(
    rf"[(\[][^)\]]*\b{SYMBOL}(?![A-Za-z])[^)\]]*[)\]]"
    rf"|(?:,|\bin)\s+{SYMBOL}\b|/\s*{SYMBOL}\b"
)
#: A tick with a unit after its number ("100 GB/s", "5 µs", "2x"); a bare prefix ("50 k")
#: or an exponent ("1e+03") is none.
TICK_UNIT = re.compile(rf"\d\s*(?:{SYMBOL}|%|x|×)(?![\w])")
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
    legends = [legend for legend in figure.legends if legend.get_visible()]
    for number, ax in enumerate(figure.axes, start=1):
        if not ax.get_visible() or not _has_data(ax):
            continue
        where = f"axes {number}" + (f" ({ax.get_title()!r})" if ax.get_title() else "")
        if ax.axison and ax.name == "rectilinear":
            found += [f"{where}: {text}" for text in _bars_on_log(ax)]
            for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
                text = _label_problem(ax, axis)
                if text:
                    found.append(f"{where}: the {name} axis {text}")
        own = ax.get_legend()
        for legend in [own] + legends if own is not None and own.get_visible() else legends:
            hidden = _hidden_by_legend(ax, legend, renderer)
            if hidden:
                kind = "legend" if legend is own else "figure's legend"
                found.append(f"{where}: the {kind} covers {hidden}")
    return found


def _has_data(ax: Any) -> bool:
    return bool(ax.lines or ax.patches or ax.collections or ax.images or ax.containers)


def _bars_on_log(ax: Any) -> list[str]:
    """Bars, boxes and spans drawn from an edge on a non-linear value axis."""
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
    in_bars = {id(bar) for c in ax.containers if isinstance(c, BarContainer) for bar in c}
    boxes = [
        p
        for p in ax.patches
        if id(p) not in in_bars
        and isinstance(p, Rectangle)
        and p.get_data_transform() == ax.transData
    ] + [c for c in ax.collections if type(c).__name__ == "PolyCollection" and _is_broken_barh(c)]
    logs = [n for n, scale in (("x", ax.get_xscale()), ("y", ax.get_yscale())) if scale != "linear"]
    if boxes and logs:
        found.append(
            f"boxes drawn from an edge on a log {' and '.join(logs)} axis (their lengths "
            "misstate the ratios)"
        )
    return found


def _is_broken_barh(collection: Any) -> bool:
    """A collection of axis-aligned rectangles (``broken_barh``), not a filled curve."""
    paths = collection.get_paths()
    return bool(paths) and all(len(path.vertices) in (4, 5) for path in paths)


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
        TICK_UNIT.search(t) for t in ticks
    )
    if units_in_ticks or UNIT_WORD.search(label) or UNIT_SYMBOL.search(label):
        return ""
    if DIMENSIONLESS.search(label) and not DIMENSIONAL.search(label):
        return ""
    return f"label {label!r} names no unit"


def _shared_label(ax: Any, axis: Axis) -> str:
    """The label a figure gives its axes together (``fig.supxlabel``) when the axes has none."""
    figure = ax.get_figure()
    text = figure._supxlabel if axis is ax.xaxis else figure._supylabel
    return text.get_text().strip() if text is not None and text.get_visible() else ""


def _hidden_by_legend(ax: Any, legend: Any, renderer: Any) -> str:
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
    style = line.get_drawstyle()
    if style in STEP_LOOKUP_MAP and style != "default" and len(xy) > 1:
        xy = np.column_stack(STEP_LOOKUP_MAP[style](xy[:, 0], xy[:, 1]))  # the steps drawn
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


def crowded(figure: Figure, *, smallest: float = 12.0) -> list[str]:
    """Every text of ``figure`` that cannot be read from the back row, as sentences: one below
    ``smallest`` points, one cut by the figure's edge, two that overlap, and one that spills out
    of the box it labels (a patch with a ``gid``, drawn behind it). Empty when none.

    Drawings that are all text and boxes (the collectives' pictures) have no axis to audit, so
    :func:`problems` passes them whatever their layout; this reads the layout itself.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> _ = ax.text(0.5, 0.5, "one", fontsize=8), ax.text(0.5, 0.5, "two", fontsize=14)
    >>> ax.set_axis_off()
    >>> for problem in crowded(fig):
    ...     print(problem)
    'one' is 8 points, below 12
    'one' overlaps 'two'
    >>> plt.close(fig)
    """
    from matplotlib.text import Text

    figure.canvas.draw()
    renderer = figure.canvas.get_renderer()
    texts = [t for t in figure.findobj(Text) if t.get_visible() and t.get_text().strip()]
    hidden = {  # the tick labels and axis labels of an axes drawn without its axes lines
        id(t)
        for ax in figure.axes
        if not ax.axison
        for t in ax.findobj(Text)
        if t is not ax.title and t not in ax.texts
    }
    texts = [t for t in texts if id(t) not in hidden]
    boxes = [(t, t.get_window_extent(renderer)) for t in texts]
    edge = figure.bbox
    found = [
        f"{t.get_text()!r} is {t.get_fontsize():g} points, below {smallest:g}"
        for t, _ in boxes
        if t.get_fontsize() < smallest
    ]
    found += [
        f"{t.get_text()!r} is cut by the figure's edge"
        for t, box in boxes
        if box.x0 < edge.x0 - 1
        or box.y0 < edge.y0 - 1
        or box.x1 > edge.x1 + 1
        or box.y1 > edge.y1 + 1
    ]
    for i, (a, box_a) in enumerate(boxes):
        for b, box_b in boxes[i + 1 :]:
            if _overlap(box_a, box_b) > 1.0:
                found.append(f"{a.get_text()!r} overlaps {b.get_text()!r}")
    for t, box in boxes:
        if t.axes is None or t not in t.axes.texts:
            continue
        middle = ((box.x0 + box.x1) / 2, (box.y0 + box.y1) / 2)
        for patch in t.axes.patches:
            if patch.get_gid() and patch.contains_point(middle):
                frame = patch.get_window_extent(renderer)
                if _overlap(box, frame) < box.width * box.height - 1.0:
                    found.append(f"{t.get_text()!r} spills out of its box")
    return found
