"""An explorer's figure layout, worked out once and kept while the figure still fits it.

Constrained layout measures every tick label, title and legend before it places the axes,
and on a live figure that measuring is over half the drawing time. Between two moves of a
slider the decorations barely change, so :class:`FrozenLayout` lays a figure out once,
then places the next figure of the same shape where the first one went and draws it in a
single pass. Whether the decorations still fit is read off the pixels, which costs almost
nothing: the layout left every edge of the figure and a band down the middle of every gap
between neighbouring axes blank, and they must still be blank. The band is
:data:`BAND_PX` wide, wider than the space between two letters, so that no label can
cross it unseen. A figure that inks one (a
wider tick label or title) is laid out afresh with twice the padding around its axes, up to
:data:`MOST_PADDING` times the usual, so that a control swinging between wide and narrow
labels soon finds a layout with room for both. The axes also stop jumping about as a
control moves, which a room watching them notices.

>>> import matplotlib.pyplot as plt
>>> from matplotlib.backends.backend_agg import FigureCanvasAgg
>>> layout = FrozenLayout()
>>> for top in (10, 20):
...     figure, ax = plt.subplots(layout="constrained")
...     _ = ax.plot([0, top])
...     layout.draw(FigureCanvasAgg(figure))
...     plt.close(figure)
>>> layout.laid_out, layout.reused
(1, 1)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["BAND_PX", "MOST_PADDING", "FrozenLayout"]

_TITLES = ("_suptitle", "_supxlabel", "_supylabel")
#: Width of the band kept blank down the middle of a gap, px (or the whole gap, if narrower).
BAND_PX = 8
#: A layout that failed is redone with its padding doubled, up to this many times the usual.
MOST_PADDING = 8


@dataclass(frozen=True, slots=True)
class _Placement:
    """Where a laid-out figure put its axes and titles, and the pixels it left blank."""

    axes: tuple[Any, ...]  # each axes' original position, a Bbox in figure fractions
    titles: tuple[tuple[tuple[float, float], ...], ...]  # each axes' three title positions
    figure_titles: tuple[tuple[float, float] | None, ...]  # suptitle, supxlabel, supylabel
    blank: tuple[tuple[slice, slice], ...]  # (rows, columns) of the image left blank


def _figure_title(figure: Any, name: str) -> Any:
    text = getattr(figure, name, None)
    return text if text is not None and text.get_visible() and text.get_text() else None


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


class FrozenLayout:
    """Lays out the first figure of each shape, then places later ones the same way.

    One instance serves one explorer: its figures come in a handful of shapes at most.

    Attributes
    ----------
    laid_out : int
        Draws that ran the figure's own layout engine, count.
    reused : int
        Draws placed by a kept layout, count.
    """

    def __init__(self) -> None:
        self._kept: dict[tuple[Any, ...], _Placement] = {}
        self._padding: dict[tuple[Any, ...], int] = {}  # times the engine's own padding
        self.laid_out = 0
        self.reused = 0

    def draw(self, canvas: Any) -> None:
        """Draw ``canvas``'s figure, placed by a kept layout when its decorations fit.

        Parameters
        ----------
        canvas : matplotlib.backends.backend_agg.FigureCanvasAgg
            The canvas of a freshly built figure; drawn once, or twice when a kept layout
            no longer fits it.
        """
        figure = canvas.figure
        shape = _shape(figure)
        kept = self._kept.get(shape)
        engine = figure.get_layout_engine()
        if kept is not None and engine is not None:
            figure.set_layout_engine("none")
            _place(figure, kept)
            canvas.draw()
            if _still_blank(canvas, kept.blank):
                self.reused += 1
                return
            # A decoration grew: lay it out afresh, with more room around every axes.
            self._padding[shape] = min(2 * self._padding.get(shape, 1), MOST_PADDING)
            figure.set_layout_engine(engine)
            for ax in figure.axes:
                ax.set_in_layout(True)  # ``set_position`` took it out of the layout
                ax._autotitlepos = None  # and let it place its titles again
        times = self._padding.get(shape, 1)
        if times > 1 and hasattr(engine, "get") and "w_pad" in engine.get():
            padding = engine.get()
            engine.set(w_pad=padding["w_pad"] * times, h_pad=padding["h_pad"] * times)
        canvas.draw()
        self.laid_out += 1
        if engine is None:
            return  # nothing laid it out: nothing to keep
        blank = _gaps(figure, canvas)
        if blank is None:  # its own layout inks an edge: keep nothing, try the next one
            self._kept.pop(shape, None)
            return
        self._kept[shape] = _Placement(
            axes=tuple(ax.get_position(original=True).frozen() for ax in figure.axes),
            titles=tuple(
                tuple(title.get_position() for title in _axes_titles(ax)) for ax in figure.axes
            ),
            figure_titles=tuple(
                None if (text := _figure_title(figure, name)) is None else text.get_position()
                for name in _TITLES
            ),
            blank=blank,
        )


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


def _pixels(canvas: Any) -> np.ndarray:
    return np.asarray(canvas.buffer_rgba())


def _background(canvas: Any) -> np.ndarray:
    from matplotlib.colors import to_rgba_array

    rgba: np.ndarray = to_rgba_array(canvas.figure.get_facecolor())[0]
    return np.round(rgba * 255).astype(np.uint8)


def _still_blank(canvas: Any, blank: tuple[tuple[slice, slice], ...]) -> bool:
    """Whether every region the layout left blank is still the figure's background."""
    pixels, background = _pixels(canvas), _background(canvas)
    return all(bool((pixels[rows, columns] == background).all()) for rows, columns in blank)


def _gaps(figure: Any, canvas: Any) -> tuple[tuple[slice, slice], ...] | None:
    """The lines a laid-out figure must keep blank, or None if it inks one already.

    The figure's four edges, one pixel wide, and the middle band of the gap between every
    two decorated boxes (axes with their labels and legends, figure titles) that do not
    overlap, across the span they share.
    """
    renderer = canvas.get_renderer()
    height, width = _pixels(canvas).shape[:2]
    boxes = [ax.get_tightbbox(renderer) for ax in figure.axes]
    boxes += [
        text.get_window_extent(renderer)
        for name in _TITLES
        if (text := _figure_title(figure, name)) is not None
    ]
    # Display coordinates count rows from the bottom; the image counts them from the top.
    spans = [(height - box.y1, height - box.y0, box.x0, box.x1) for box in boxes if box is not None]
    blank = [
        (slice(0, 1), slice(0, width)),
        (slice(height - 1, height), slice(0, width)),
        (slice(0, height), slice(0, 1)),
        (slice(0, height), slice(width - 1, width)),
    ]
    for index, (top, bottom, left, right) in enumerate(spans):
        for other_top, other_bottom, other_left, other_right in spans[index + 1 :]:
            rows = (max(top, other_top), min(bottom, other_bottom))
            columns = (max(left, other_left), min(right, other_right))
            if rows[0] < rows[1] and (gap := _between(left, right, other_left, other_right)):
                blank.append((_pixel_span(*rows, height), _band(*gap)))
            elif columns[0] < columns[1] and (
                gap := _between(top, bottom, other_top, other_bottom)
            ):
                blank.append((_band(*gap), _pixel_span(*columns, width)))
    if not _still_blank(canvas, tuple(blank)):
        return None
    return tuple(blank)


def _between(low: float, high: float, other_low: float, other_high: float) -> tuple[float, ...]:
    """The open gap between two spans on one axis, as (start, end), or () if they meet."""
    if high < other_low - 2:
        return (high + 1, other_low - 1)
    if other_high < low - 2:
        return (other_high + 1, low - 1)
    return ()


def _band(start: float, end: float) -> slice:
    """The middle :data:`BAND_PX` pixels of a gap, or all of it when it is narrower."""
    first, last = int(np.ceil(start)), int(end)
    middle = (first + last) // 2
    return slice(max(first, middle - BAND_PX // 2), min(last, middle + BAND_PX // 2))


def _pixel_span(start: float, end: float, size: int) -> slice:
    return slice(max(0, int(np.ceil(start))), min(size, int(end)))
