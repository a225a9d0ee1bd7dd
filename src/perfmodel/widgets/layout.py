"""An explorer's figure layout, worked out once and kept while the figure still fits it.

Constrained layout measures every tick label, title and legend before it places the axes,
and on a live figure that measuring is over half the drawing time. Between two moves of a
slider the decorations barely change, so :class:`FrozenLayout` lays a figure out once,
then places the next figure of the same shape where the first one went and draws it in a
single pass. Before the draw it checks what constrained layout would have ensured: every
text and legend lies inside the figure, and the decorated boxes (each axes with its tick
labels, axis labels, titles, legend and notes; each figure title, legend and text) do not
run into one another. The draw then paints the texts from the sizes measured. A figure
that fails is laid out afresh with twice the padding around its axes (up to
:data:`MOST_PADDING` times the usual), so that a control swinging between wide and narrow
labels soon finds a layout with room for both, and that layout is kept. The axes also
stop jumping about as a control moves, which a room watching them notices.

Only constrained-layout figures without subfigures are kept; any other is drawn as it comes.

>>> import matplotlib.pyplot as plt
>>> from matplotlib.backends.backend_agg import FigureCanvasAgg
>>> layout = FrozenLayout()
>>> for top in (10, 12):  # labels up to "10", then "12": as wide
...     figure, ax = plt.subplots(layout="constrained")
...     _ = ax.plot([0, top])
...     layout.draw(FigureCanvasAgg(figure))
...     plt.close(figure)
>>> layout.laid_out, layout.reused
(1, 1)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["MOST_PADDING", "FrozenLayout"]

_TITLES = ("_suptitle", "_supxlabel", "_supylabel")
#: A layout that failed is redone with its padding doubled, up to this many times the usual.
MOST_PADDING = 4
_SLACK_PX = 0.5  # rounding in text extents: boxes may touch or cross an edge by this much


@dataclass(frozen=True, slots=True)
class _Placement:
    """Where a laid-out figure put its axes and titles."""

    axes: tuple[Any, ...]  # each axes' original position, a Bbox in figure fractions
    titles: tuple[tuple[tuple[float, float], ...], ...]  # each axes' three title positions
    figure_titles: tuple[tuple[float, float] | None, ...]  # suptitle, supxlabel, supylabel


def _shown(artist: Any) -> bool:
    return artist is not None and artist.get_visible()


def _has_text(text: Any) -> bool:
    return _shown(text) and bool(text.get_text())


def _figure_title(figure: Any, name: str) -> Any:
    text = getattr(figure, name, None)
    return text if _has_text(text) else None


def _axes_titles(ax: Any) -> tuple[Any, ...]:
    return (ax.title, ax._left_title, ax._right_title)


def _shape(figure: Any) -> tuple[Any, ...]:
    """What must match for one figure's layout to serve another: size and axes grid."""
    grid = []
    for ax in figure.axes:
        spec = ax.get_subplotspec()
        grid.append(None if spec is None else (spec.get_geometry(), spec.rowspan, spec.colspan))
    titles = tuple(_figure_title(figure, name) is not None for name in _TITLES)
    return (tuple(figure.get_size_inches()), figure.dpi, tuple(grid), titles)


def _constrained(figure: Any) -> Any:
    """The figure's constrained-layout engine, or None for any other layout."""
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    engine = figure.get_layout_engine()
    if isinstance(engine, ConstrainedLayoutEngine) and not figure.subfigs:
        return engine
    return None


class FrozenLayout:
    """Lays out the first figure of each shape, then places later ones the same way.

    One instance serves one explorer: its figures come in a handful of shapes at most.

    Attributes
    ----------
    laid_out : int
        Draws that ran the figure's own layout engine (or none), count.
    reused : int
        Draws placed by a kept layout, count.
    drawn_in : int
        Of those, draws whose axes were drawn in from an edge their decorations crossed
        (and the layout kept so), count.
    """

    def __init__(self) -> None:
        self._kept: dict[tuple[Any, ...], _Placement] = {}
        self._padding: dict[tuple[Any, ...], int] = {}  # times the engine's own padding
        self.laid_out = 0
        self.reused = 0
        self.drawn_in = 0

    def draw(self, canvas: Any) -> None:
        """Draw ``canvas``'s figure, placed by a kept layout when its decorations fit.

        Parameters
        ----------
        canvas : matplotlib.backends.backend_agg.FigureCanvasAgg
            The canvas of a freshly built figure (or any canvas with ``draw()`` and
            ``get_renderer()``, such as the explorers' SVG one); drawn once.
        """
        figure = canvas.figure
        engine = _constrained(figure)
        if engine is None:  # nothing to keep: draw it as it comes
            canvas.draw()
            self.laid_out += 1
            return
        with _ticks_worked_out_once(figure):
            self._draw(canvas, engine)

    def _draw(self, canvas: Any, engine: Any) -> None:
        figure = canvas.figure
        shape = _shape(figure)
        kept = self._kept.get(shape)
        padding = self._padding.get(shape, 1)
        if kept is not None:
            in_layout = [ax.get_in_layout() for ax in figure.axes]
            figure.set_layout_engine("none")
            _place(figure, kept)
            # Judged before drawing: measuring the texts is what a draw would do first (and
            # the renderer then draws them from its measures), and one that does not fit is
            # drawn once, laid out afresh, not twice.
            decorated = _decorated_boxes(figure, canvas.get_renderer())
            if _clear(figure, decorated):
                canvas.draw()
                self.reused += 1
                return
            # A row of axes whose decorations only ran past the figure's edge (a tick label
            # at the end of an axis, wider than the last) is drawn in by as much, and kept
            # so: constrained layout would do little more, at twice the cost.
            if _drawn_in(figure, canvas.get_renderer(), engine, padding, decorated):
                canvas.draw()
                self.reused += 1
                self.drawn_in += 1
                self._kept[shape] = _placement(figure)
                return
            # A decoration grew: lay it out afresh, with more room around every axes.
            figure.set_layout_engine(engine)
            for ax, was in zip(figure.axes, in_layout, strict=True):
                ax.set_in_layout(was)  # ``set_position`` took it out of the layout
                ax._autotitlepos = None  # and let it place its titles again
            padding = min(2 * padding, MOST_PADDING)
        if padding > 1:
            usual = engine.get()
            engine.set(w_pad=usual["w_pad"] * padding, h_pad=usual["h_pad"] * padding)
        canvas.draw()
        self.laid_out += 1
        if not _fits(figure, canvas.get_renderer()):
            return  # not even its own layout fits it (a title wider than the figure)
        self._padding[shape] = padding
        self._kept[shape] = _placement(figure)


@contextlib.contextmanager
def _ticks_worked_out_once(figure: Any) -> Iterator[None]:
    """Within the block, each axis of ``figure`` works out its ticks once per placement.

    matplotlib works out an axis' ticks (locations, labels, one artist each) three times
    when measuring the axis and three more when drawing it, each time with the same
    result while the axis' limits, size, locators and formatters stay as they were: on a
    log axis with its minor ticks that is about a millisecond a time. Each axis keeps the
    ticks it last worked out, with what they were worked out for, and works them out again
    only when one of those changed (an axes moved by a layout, a limit widened).
    """
    axes = [axis for ax in figure.axes for axis in ax._axis_map.values()]
    for axis in axes:
        axis._update_ticks = _kept_ticks(axis)
    try:
        yield
    finally:
        for axis in axes:
            vars(axis).pop("_update_ticks", None)  # matplotlib's own again


def _kept_ticks(axis: Any) -> Callable[[], list[Any]]:
    """``axis._update_ticks``, working the ticks out again only when their inputs change."""
    work_out = type(axis)._update_ticks.__get__(axis)
    kept: list[Any] = []  # [what the ticks were worked out for, the ticks to draw]

    def update_ticks() -> list[Any]:
        inputs = (
            tuple(axis.get_view_interval()),
            axis.axes.bbox.bounds,  # the axis' length in pixels sets how many ticks fit
            axis.get_scale(),
            axis.major.locator,
            axis.major.formatter,
            axis.minor.locator,
            axis.minor.formatter,
        )
        if not kept or kept[0] != inputs:
            kept[:] = [inputs, work_out()]
        ticks: list[Any] = kept[1]
        return ticks

    return update_ticks


def _placement(figure: Any) -> _Placement:
    """Where ``figure``'s axes and titles are now."""
    return _Placement(
        axes=tuple(ax.get_position(original=True).frozen() for ax in figure.axes),
        titles=tuple(
            tuple(title.get_position() for title in _axes_titles(ax)) for ax in figure.axes
        ),
        figure_titles=tuple(
            None if (text := _figure_title(figure, name)) is None else text.get_position()
            for name in _TITLES
        ),
    )


def _drawn_in(figure: Any, renderer: Any, engine: Any, padding: int, decorated: list[Any]) -> bool:
    """Draw the axes of a one-row figure in from each edge of the figure their decorations
    cross, by as much as they cross it plus the layout's padding; whether it then fits.

    Each axes is drawn in from the left or right edge as far as its own decorations need;
    from the top or bottom, every axes as far as the farthest needs, so that the row stays
    level. A figure title (or a figure legend or text) over the row that reaches down from
    above its frames counts as the top edge, and one under the row that reaches up from
    below them as the bottom edge: a title that gained a line draws the row down under it.
    Only a figure whose axes are all shown, each in its own cell of one row of one grid, is
    drawn in: in a column or a grid, or beside a hidden axes that may come back, a narrower
    axes would no longer line up with its neighbours, which constrained layout keeps
    aligned. A title lifted over top-side tick labels stays as far above its axes as it
    was. The figure is left as it was when it still does not fit. ``decorated`` is the
    figure's :func:`_decorated_boxes` as it stands, already measured.
    """
    from matplotlib.transforms import Bbox

    axes = figure.axes
    specs = [ax.get_subplotspec() for ax in axes]
    if (
        not axes
        or not all(ax.get_visible() for ax in axes)  # a hidden one would not line up
        or any(spec is None or spec.get_geometry()[0] != 1 for spec in specs)
        or len({id(spec.get_gridspec()) for spec in specs}) != 1
        or len({spec.get_geometry()[2:] for spec in specs}) != len(specs)  # no twins
    ):
        return False
    boxes, above_or_below = decorated[: len(axes)], decorated[len(axes) :]
    width, height = figure.bbox.width, figure.bbox.height
    usual = engine.get()
    pad_x = usual["w_pad"] * padding * figure.dpi  # inches to the renderer's pixels
    pad_y = usual["h_pad"] * padding * figure.dpi
    # A figure title (or legend, or text) over the row, reaching down from above the axes'
    # frames, is the row's ceiling, one reaching up from below them its floor: a title grown
    # by a line draws the row down under it. One beside the row (a legend at the right) is
    # neither.
    frames = [ax.get_window_extent(renderer) for ax in axes]
    high, low = max(f.y1 for f in frames), min(f.y0 for f in frames)
    row_left, row_right = min(b.x0 for b in boxes), max(b.x1 for b in boxes)
    over = [b for b in above_or_below if min(b.x1, row_right) - max(b.x0, row_left) > _SLACK_PX]
    ceiling = min([height, *(b.y0 for b in over if b.y1 > high and b.y0 > low)])
    floor = max([0.0, *(b.y1 for b in over if b.y0 < low and b.y1 < high)])
    bottom = max(max(0.0, floor + pad_y - box.y0) for box in boxes) / height
    top = max(max(0.0, box.y1 - ceiling + pad_y) for box in boxes) / height
    moves = []  # each axes, where it was, and where it goes
    for ax, box in zip(axes, boxes, strict=True):
        left = max(0.0, pad_x - box.x0) / width
        right = max(0.0, box.x1 - width + pad_x) / width
        was = ax.get_position(original=True).frozen()
        inside = Bbox.from_extents(was.x0 + left, was.y0 + bottom, was.x1 - right, was.y1 - top)
        if inside.width <= 0.2 * was.width or inside.height <= 0.2 * was.height:
            return False  # the decorations are most of the figure: constrained layout decides
        moves.append((ax, was, inside))
    titles = [[(title, title.get_position()) for title in _axes_titles(ax)] for ax, *_ in moves]
    for (ax, was, inside), spots in zip(moves, titles, strict=True):
        ax.set_position(inside)
        for title, (x, y) in spots:
            if y > 1:  # lifted over top-side ticks, in axes heights: as far above as before
                title.set_position((x, 1 + (y - 1) * was.height / inside.height))
    if _fits(figure, renderer):  # ticks may change with an axis' length: measured again
        return True
    for (ax, was, _), spots in zip(moves, titles, strict=True):
        ax.set_position(was)
        for title, spot in spots:
            title.set_position(spot)
    return False


def _place(figure: Any, kept: _Placement) -> None:
    """Put ``figure``'s axes and titles where the kept layout put them."""
    for ax, position, titles in zip(figure.axes, kept.axes, kept.titles, strict=True):
        ax.set_position(position)
        for title, spot in zip(_axes_titles(ax), titles, strict=True):
            title.set_position(spot)
        # matplotlib re-measures every tick label to lift a title over top-side ticks; the
        # kept layout already placed it, and the flag (set by ``set_title(y=...)``) says so.
        ax._autotitlepos = False
    for name, where in zip(_TITLES, kept.figure_titles, strict=True):
        text = _figure_title(figure, name)
        if text is not None and where is not None:
            text.set_position(where)


def _decorated_boxes(figure: Any, renderer: Any) -> list[Any]:
    """One box per visible axes (its frame and every text and legend it owns), and one per
    figure title, figure legend and figure text, in display pixels."""
    from matplotlib.transforms import Bbox

    boxes = []
    for ax in figure.axes:
        if not ax.get_visible():
            continue
        # What a draw does first: autoscaled limits brought up to date (reading them does),
        # then a fixed aspect applied (it may widen them), so the texts measured here are
        # placed and labelled as they will be drawn.
        ax.get_xlim()
        locator = ax.get_axes_locator()
        ax.apply_aspect(locator(ax, renderer) if locator else None)
        parts = [ax.get_window_extent(renderer)]
        for axis in (ax.xaxis, ax.yaxis) if ax.axison else ():  # ``axis("off")`` hides both
            # its tick labels, label and offset text, placed as ``Axis.draw`` places them
            extent = axis.get_tightbbox(renderer) if axis.get_visible() else None
            if extent is not None:
                parts.append(extent)
        texts = [*_axes_titles(ax), *ax.texts]
        shown = [t for t in texts if _has_text(t) and t.get_in_layout()]
        parts += [t.get_window_extent(renderer) for t in shown]
        legend = ax.get_legend()
        if _shown(legend) and legend.get_in_layout():
            parts.append(legend.get_window_extent(renderer))
        boxes.append(Bbox.union(parts))
    # ``figure.texts`` holds the figure titles too: each text once
    boxes += [t.get_window_extent(renderer) for t in figure.texts if _has_text(t)]
    boxes += [legend.get_window_extent(renderer) for legend in figure.legends if _shown(legend)]
    return boxes


def _fits(figure: Any, renderer: Any) -> bool:
    """Whether every decorated box lies inside the figure and clear of every other."""
    return _clear(figure, _decorated_boxes(figure, renderer))


def _clear(figure: Any, boxes: list[Any]) -> bool:
    """Whether every one of ``boxes`` (:func:`_decorated_boxes`) lies inside the figure
    and clear of every other."""
    width, height = figure.bbox.width, figure.bbox.height
    for index, box in enumerate(boxes):
        if (
            box.x0 < -_SLACK_PX
            or box.y0 < -_SLACK_PX
            or box.x1 > width + _SLACK_PX
            or box.y1 > height + _SLACK_PX
        ):
            return False
        for other in boxes[index + 1 :]:
            across = min(box.x1, other.x1) - max(box.x0, other.x0)
            up = min(box.y1, other.y1) - max(box.y0, other.y0)
            if min(across, up) > _SLACK_PX:
                return False
    return True
