"""Controls every explorer shares: log sliders that read in units, live text, a redrawn plot."""

from __future__ import annotations

import contextlib
import functools
import html
import math
import re
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from perfmodel._validate import positive
from perfmodel.units import format_quantity
from perfmodel.widgets import spare
from perfmodel.widgets.collection import collection_deferred, in_a_kernel
from perfmodel.widgets.layout import FrozenLayout
from perfmodel.widgets.spare import SpareFigures

__all__ = [
    "LIVE_DPI",
    "LOG_STEP",
    "PLOT_CACHE",
    "held_redraws",
    "int_slider",
    "live_plot",
    "live_text",
    "log_slider",
    "render_svg",
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

    Parameters
    ----------
    value : float
        A positive quantity in the slider's unit (B, B/s, FLOP, s...).
    step : float
        The slider's step, in decades (powers of ten), dimensionless.

    Returns
    -------
    float
        ``10 ** (step * round(log10(value) / step))``, in the unit of ``value`` (B, B/s,
        FLOP, s...).

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

    Parameters
    ----------
    value : float
        The starting value in ``unit`` (B, B/s, FLOP, s...), snapped to the slider's grid
        of tenths of a decade.
    low, high : int
        The slider's range, as powers of ten: it runs from ``10**low`` to ``10**high``.
    description : str
        The label to the slider's left.
    unit : str
        The unit of the readout, written with an SI prefix (``"B/s"`` shows ``100 GB/s``).

    Returns
    -------
    ipywidgets.HBox
        The slider (also ``.slider``, a ``FloatLogSlider`` whose value is the quantity)
        followed by a label showing its value in ``unit``, updated as it moves.
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
    """A wide integer slider, easy to drive with a mouse on a podium.

    Parameters
    ----------
    value : int
        The starting value.
    low, high : int
        The slider's least and greatest values.
    description : str
        The label to the slider's left.
    step : int
        The slider's step.

    Returns
    -------
    ipywidgets.IntSlider
        A 38 em wide slider with an 8 em label, showing its value as a readout.
    """
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


def dtype_dropdown(device: Any, value: str) -> Any:
    """A dtype dropdown that offers only what the device chosen in ``device`` (a dropdown of
    catalogue names) has a peak for, and follows it: a device without the dtype last chosen
    gets ``value`` or its first dtype, and a device that has it again gets it back. With one
    dtype to offer it is disabled, so a control that cannot change anything says so.
    """
    import ipywidgets as widgets

    from perfmodel.hardware import get

    def offered(name: str) -> list[str]:
        return list(get(name).peak_flops_by_dtype)

    options = offered(device.value)
    dropdown = widgets.Dropdown(
        options=options,
        value=value if value in options else options[0],
        description="dtype",
        disabled=len(options) == 1,
    )
    wanted = value  # what the learner chose last (not what a device forced)
    following = False

    def choose(change: Any) -> None:
        nonlocal wanted
        if not following:
            wanted = change["new"]

    def follow(change: Any) -> None:
        nonlocal following
        now = offered(change["new"])
        following = True
        try:
            with held_redraws():  # a figure drawn once, for the final dtype, not per step
                dropdown.options = now  # the value moves to the first option, a valid one
                dropdown.value = next(d for d in (wanted, value, now[0]) if d in now)
        finally:
            following = False
        dropdown.disabled = len(now) == 1

    dropdown.observe(choose, names="value")
    device.observe(follow, names="value")
    return dropdown


def live_text(controls: tuple[Any, ...], render: Callable[[], str], css_class: str) -> Any:
    """An HTML line, large enough for a lecture hall, re-rendered whenever a control moves.

    Parameters
    ----------
    controls : tuple of ipywidgets.Widget
        The controls watched: a change of any one's ``value`` re-renders the line.
    render : callable
        Called with no arguments; returns the line's text (HTML-escaped before it is shown).
    css_class : str
        A CSS class added to the line, for styles and for tests to find it.

    Returns
    -------
    ipywidgets.HTML
        The line, at 1.5 em, showing ``render()`` as of the last change.
    """
    import ipywidgets as widgets

    line = widgets.HTML()
    line.add_class(css_class)

    def update(_: object = None) -> None:
        line.value = f"<p style='font-size:1.5em;margin:0.4em 0'>{html.escape(render())}</p>"

    for control in controls:
        control.observe(update, names="value")
    update()
    return line


#: An explorer's figure is shown at this size, CSS pixels per inch: a 10-inch figure 1,000
#: pixels wide, about what a slide or a notebook column shows. Anything a figure rasterises
#: (an image) is drawn at this resolution. Figures saved for the book keep ``savefig.dpi``.
LIVE_DPI = 100

#: Figures an explorer keeps, keyed by its controls' values: going back is instant.
PLOT_CACHE = 64

#: The redraws asked for while :func:`held_redraws` holds them, or None.
_held: list[Callable[[], None]] | None = None


@contextlib.contextmanager
def held_redraws() -> Iterator[None]:
    """Hold every :func:`live_plot` redraw asked for inside the block, then redraw each
    figure once, for the controls' values at the end.

    A control that resets another (a dtype dropdown following its device) would otherwise
    draw the figure for every step in between.
    """
    global _held
    if _held is not None:  # already held further out: that block redraws
        yield
        return
    _held = []
    try:
        yield
    except BaseException:
        _held = None  # the block failed: nothing to draw for it
        raise
    waiting, _held = _held, None
    for redraw in dict.fromkeys(waiting):
        redraw()


#: The size the SVG's root element is written with, in points.
_SVG_SIZE = re.compile(r'width="[0-9.]+pt" height="[0-9.]+pt"')


#: Text lines' widths, heights and descents as matplotlib measures them, in points, by the
#: line and its font.
_TEXT_SIZES: dict[tuple[Any, ...], tuple[float, float, float]] = {}
#: Most sizes kept: a few explorers' tick labels, titles and legends.
KEPT_SIZES = 4096
#: Fonts' ascents, descents and line gaps, in points, by the font files and the size.
_FONT_HEIGHTS: dict[tuple[Any, ...], tuple[float | None, float | None, float | None]] = {}


@functools.cache
def _sized_text_renderer() -> type:
    """matplotlib's SVG renderer, writing each line of text with the width it was laid out at.

    The browser sets the text in DejaVu Sans, matplotlib's font, when it has it; a machine
    without it (most laptops outside Linux) sets it in a fallback of other widths, and
    labels laid out for DejaVu Sans would run into each other or out of a legend's frame.
    Told the width (SVG's ``textLength``), the browser fits the fallback to it, so what
    the layout measured is what is shown. A line of mathtext is written as matplotlib
    writes it.
    """
    import matplotlib as mpl
    from matplotlib.backends.backend_svg import RendererSVG
    from matplotlib.font_manager import findfont, fontManager, get_font

    def measured(renderer: Any, s: str, prop: Any) -> tuple[float, float, float]:
        """A plain line's width, height and descent, in points, measured once per font."""
        # the font file the name resolves to now, and what else sets a line's size
        key = (s, findfont(prop), prop.get_size_in_points(), mpl.rcParams["text.kerning_factor"])
        size = _TEXT_SIZES.get(key)
        if size is None:
            if len(_TEXT_SIZES) >= KEPT_SIZES:
                _TEXT_SIZES.clear()
            size = _TEXT_SIZES[key] = tuple(
                RendererSVG.get_text_width_height_descent(renderer, s, prop, ismath=False)  # type: ignore[no-untyped-call]
            )
        return size

    class SizedTextRenderer(RendererSVG):
        def __init__(self, width: float, height: float, stream: Any, **kwargs: Any) -> None:
            self._stream = stream  # where the document is written, to size each text in it
            super().__init__(width, height, stream, **kwargs)  # type: ignore[no-untyped-call]

        def get_text_width_height_descent(
            self, s: str, prop: Any, ismath: Any
        ) -> tuple[float, float, float]:
            # matplotlib keeps what one renderer measured; a figure a move gets a renderer
            # of its own, so the sizes are kept here, for every figure to come
            if ismath:
                return super().get_text_width_height_descent(s, prop, ismath)  # type: ignore[no-any-return,no-untyped-call]
            return measured(self, s, prop)

        def _get_font_height_metrics(
            self, prop: Any
        ) -> tuple[float | None, float | None, float | None]:
            # matplotlib asks this of a renderer that has it for every text it lays out,
            # else reads the font's tables itself each time (about 60 us a text); the
            # figure is at 72 dpi, so its rule, kept once per font and size, is in points
            files = tuple(fontManager._find_fonts_by_props(prop))
            key = (files, prop.get_size_in_points())
            heights = _FONT_HEIGHTS.get(key)
            if heights is None:
                heights = _FONT_HEIGHTS[key] = _font_heights(get_font(list(files)), key[1])
            return heights

        def draw_text(self, gc: Any, x: float, y: float, s: str, prop: Any, angle: float,
                      ismath: Any = False, mtext: Any = None) -> None:  # fmt: skip
            start = self._stream.tell()
            super().draw_text(gc, x, y, s, prop, angle, ismath, mtext)  # type: ignore[no-untyped-call]
            if ismath or not s.strip():
                return
            width = measured(self, s, prop)[0]  # as the layout measured it
            self._stream.seek(start)
            written = self._stream.read()  # the text just written, its <text> tag once
            # spaces kept as typed (" 312 TFLOP/s" beside a bar): the width counts them
            sized = (
                f'<text xml:space="preserve" textLength="{width:.3f}" '
                'lengthAdjust="spacingAndGlyphs" '
            )
            self._stream.seek(start)
            self._stream.truncate()
            self._stream.write(written.replace("<text ", sized, 1))

    return SizedTextRenderer


def _font_heights(font: Any, size: float) -> tuple[float | None, float | None, float | None]:
    """A font's ascent, descent and line gap at ``size`` points, as ``Text`` reads them from
    its tables (the typographic ones first); all None when it has neither, so that
    matplotlib measures the text instead."""
    for table_name, gap, ascent, descent in (
        ("OS/2", "sTypoLineGap", "sTypoAscender", "sTypoDescender"),
        ("hhea", "lineGap", "ascent", "descent"),
    ):
        table = font.get_sfnt_table(table_name)
        if table is None:
            continue
        scale = 1 / font.get_sfnt_table("head")["unitsPerEm"] * size * 72 / 72  # at 72 dpi
        return table[ascent] * scale, -table[descent] * scale, table[gap] * scale
    return None, None, None


class _SvgCanvas:
    """A canvas that draws its figure as SVG, for :class:`.FrozenLayout` and the explorers.

    Like Agg's canvas it has ``draw()`` and ``get_renderer()``, so a layout engine measures
    text with the renderer that then draws it; unlike ``Figure.savefig``, it draws once and
    measures nothing twice. The SVG is in points (the figure at 72 dpi, as every SVG
    matplotlib writes); its width and height are given in CSS pixels at :data:`LIVE_DPI`.
    """

    def __init__(self, figure: Any) -> None:
        from matplotlib.backends.backend_svg import FigureCanvasSVG

        FigureCanvasSVG(figure)  # the figure's canvas, for anything that asks it
        figure.set_dpi(72)
        self.figure = figure
        self.svg = b""
        self._renderer: Any = None
        self._buffer: Any = None

    def get_renderer(self) -> Any:
        """The renderer the next draw uses (or the last draw used): text measured with it
        before a draw is not measured again."""
        if self._renderer is None:
            self._start()
        return self._renderer

    def _start(self) -> None:
        import io

        from matplotlib.backends.backend_mixed import MixedModeRenderer

        width, height = self.figure.get_size_inches()
        self._buffer = io.StringIO()
        svg = _sized_text_renderer()(
            width * 72, height * 72, self._buffer, image_dpi=LIVE_DPI, metadata={"Date": None}
        )
        self._renderer = MixedModeRenderer(  # type: ignore[no-untyped-call]
            self.figure, width, height, LIVE_DPI, svg
        )

    def draw(self) -> None:
        """Draw the figure (laying it out first if it has a layout engine) into :attr:`svg`."""
        import matplotlib as mpl

        if self._renderer is None or self.svg:  # an SVG renderer draws into one document
            self._start()
        # Text as text, each line told the width it was laid out at (see _sized_text_renderer),
        # and ids that are the same for the same figure, so equal figures give equal bytes.
        with mpl.rc_context({"svg.fonttype": "none", "svg.hashsalt": "perfmodel", "svg.id": None}):
            self.figure.draw(self._renderer)
            self._renderer.finalize()
        width, height = self.figure.get_size_inches()
        # sized in CSS pixels at LIVE_DPI; the viewBox keeps the drawing's own units
        size = f'width="{width * LIVE_DPI:g}px" height="{height * LIVE_DPI:g}px"'
        text = _SVG_SIZE.sub(size, self._buffer.getvalue(), count=1)
        self.svg = text.encode()


def render_svg(
    view: Callable[..., Any],
    values: Mapping[str, Any],
    layout: FrozenLayout | None = None,
    spares: SpareFigures | None = None,
) -> bytes:
    """``view(**values)``'s figure as SVG bytes, for the browser to paint.

    An explorer sends its figure as SVG rather than as PNG: matplotlib then neither
    rasterises the figure nor encodes its pixels, the image is smaller, and the browser
    paints it crisp at a projector's size. On 2 cores a roofline move answers in the kernel
    in 107 ms instead of 134, with 23 kB to send instead of 73 kB (``benchmarks/widgets.py``).
    Text is sent as text, in DejaVu Sans (matplotlib's font) with the usual sans-serif
    fonts after it, and each line with the width the layout measured, so a browser
    without DejaVu Sans fits its own font to the layout. The figure is laid out and drawn
    once.

    Parameters
    ----------
    view : callable
        Draws a figure with matplotlib when called as ``view(**values)``; the current
        figure afterwards is the one drawn. Every figure it opens is closed.
    values : Mapping of str to object
        The keyword arguments for ``view``.
    layout : FrozenLayout, optional
        The explorer's kept layouts: the figure is placed as an earlier one of its shape
        was, and not laid out again, while its decorations fit (:mod:`.layout`).
    spares : SpareFigures, optional
        The explorer's figure built ahead: the view's ``plt.subplots`` takes it when it
        was built for that call (:mod:`.spare`), and the figure drawn is noted as the
        recipe for the next one.

    Returns
    -------
    bytes
        The SVG document, UTF-8, ``LIVE_DPI`` CSS pixels to the figure's inch.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> def view(top: float) -> None:
    ...     plt.subplots(figsize=(4, 3))[1].plot([0, top])
    >>> svg = render_svg(view, {"top": 2.0})
    >>> svg.startswith(b"<?xml") and b'width="400px" height="300px"' in svg
    True
    >>> svg == render_svg(view, {"top": 2.0})  # the same figure, the same bytes
    True
    """
    import matplotlib.pyplot as plt

    before = set(plt.get_fignums())
    try:
        with contextlib.nullcontext() if spares is None else spares.lending():
            view(**values)
        canvas = _SvgCanvas(plt.gcf())
        if layout is None:
            canvas.draw()
        else:
            layout.draw(canvas)
        if spares is not None:
            spares.drawn()
        return canvas.svg
    finally:
        for number in set(plt.get_fignums()) - before:
            plt.close(number)


def live_plot(view: Callable[..., Any], controls: Mapping[str, Any]) -> Any:
    """A box that shows ``view(**values)``'s figure and redraws it when a control moves.

    Built for a live demo on a modest laptop:

    * the figure is an SVG image updated in place (no flicker, nothing cleared;
      :func:`render_svg`);
    * each figure is drawn once and kept (the last :data:`PLOT_CACHE` of them), so moving
      a control back to a value already seen answers at once;
    * a figure is laid out once and later ones placed the same way while their labels fit
      (:class:`~perfmodel.widgets.layout.FrozenLayout`), which saves a third of a draw and
      keeps the axes still as a control moves;
    * sliders redraw when released, not at every step of a drag, so a drag never queues up
      a stack of figures nobody will see.
    * while the kernel is idle after a move, the next move's figure is built ahead, with
      its axes and ticks (:mod:`.spare`): 20 to 30 ms of a move done before it starts.

    A ``ValueError`` from the view (a device without the chosen dtype, say) is shown as its
    message in place of the figure, instead of a traceback, and the explorer keeps working.

    The box holds only widgets whose state is set from Python (an image, a line of text),
    never an ``Output`` widget that is displayed into: a headless client (nbclient, so
    ``nbconvert --execute``) answers each output captured by an ``Output`` widget with a
    message on the kernel's shell channel while it waits on that channel for the cell's
    reply, and that send can swallow the reply's wake-up, so the cell then waits out its
    whole timeout (jupyter/nbclient#312).

    Parameters
    ----------
    view : callable
        Draws a figure with matplotlib when called as ``view(**values)``, ``values`` being
        each control's current value under its key in ``controls``.
    controls : Mapping of str to ipywidgets.Widget
        The controls by the name of the ``view`` parameter each sets; their
        ``continuous_update`` is switched off where they have one.

    Returns
    -------
    ipywidgets.Box
        A box showing the figure for the controls' current values as an SVG image, or a
        ValueError's message in its place; it does not hold the controls.
    """
    import ipywidgets as widgets

    image = widgets.Image(format="svg+xml")
    message = widgets.HTML()
    box = widgets.Box([image])
    drawn: OrderedDict[str, bytes] = OrderedDict()
    layout = FrozenLayout()
    spares = SpareFigures()
    building: list[Any] = []  # the idle-time build waiting to run, if any

    def update(_: object = None) -> None:
        if _held is not None:
            _held.append(update)
            return
        with collection_deferred():  # no collector's pause inside a move (.collection)
            show()

    def show() -> None:
        values = {name: control.value for name, control in controls.items()}
        key = repr(sorted(values.items()))
        svg = drawn.get(key)
        if svg is None:
            try:
                svg = render_svg(view, values, layout, spares)
            except ValueError as error:
                message.value = f"<pre>{html.escape(str(error), quote=False)}</pre>"
                box.children = (message,)
                return
            build_when_idle()
            drawn[key] = svg
            if len(drawn) > PLOT_CACHE:
                drawn.popitem(last=False)
        drawn.move_to_end(key)
        image.value = svg
        box.children = (image,)

    def build_when_idle() -> None:
        """Build the next move's figure once the kernel is idle (:mod:`.spare`): never
        where no event loop runs, and once for a burst of moves."""
        if not in_a_kernel():
            return
        import asyncio

        for waiting in building:
            waiting.cancel()
        building[:] = [asyncio.get_running_loop().call_later(spare.IDLE_AFTER_S, spares.build)]

    for control in controls.values():
        if "continuous_update" in control.trait_names():
            control.continuous_update = False
        control.observe(update, names="value")
    update()
    return box


def view_settings(view: Callable[..., Any], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """``view``'s keyword defaults with ``overrides`` applied: what an explorer starts from.

    An override ``view`` does not take is a TypeError naming it and listing what it takes.

    Parameters
    ----------
    view : callable
        A view function, every parameter of which has a default (one without would show
        ``inspect.Parameter.empty``).
    overrides : Mapping of str to object
        Settings to start from instead of the defaults, by parameter name.

    Returns
    -------
    dict of str to object
        Every parameter of ``view`` with its default, or its override where one is given,
        in the signature's order.

    Examples
    --------
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
