"""Explorers keep their figure's layout while it fits, and lay it out afresh when it does not."""

from __future__ import annotations

import matplotlib

matplotlib.use("agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: E402

from perfmodel.widgets import controls  # noqa: E402
from perfmodel.widgets.layout import MOST_PADDING, FrozenLayout  # noqa: E402


def two_panels(left_label: str, right_top: float, title: str = "A title") -> FigureCanvasAgg:
    """A 1 x 2 figure whose right panel's tick labels are as wide as ``right_top`` needs."""
    figure, (left, right) = plt.subplots(1, 2, figsize=(8, 3), layout="constrained")
    left.plot([0, 1], [0, 1], label=left_label)
    left.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    right.plot([0, 1], [0, right_top])
    right.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:,.0f}"))
    figure.suptitle(title)
    return FigureCanvasAgg(figure)


def cut_off(canvas: FigureCanvasAgg) -> bool:
    """Whether any shown axes' decorations (matplotlib's own tight box) leave the figure."""
    renderer = canvas.get_renderer()
    width, height = canvas.figure.bbox.width, canvas.figure.bbox.height
    for ax in canvas.figure.axes:
        box = ax.get_tightbbox(renderer)  # None for a hidden axes
        if box is None:
            continue
        if box.x0 < -1 or box.y0 < -1 or box.x1 > width + 1 or box.y1 > height + 1:
            return True
    return False


def overlapping_panels(canvas: FigureCanvasAgg) -> bool:
    """Whether the two panels' decorated boxes overlap by more than a text box's margin."""
    renderer = canvas.get_renderer()
    first, second = (ax.get_tightbbox(renderer) for ax in canvas.figure.axes)
    return first.x1 > second.x0 + TEXT_MARGIN_PX


def under_the_title(canvas: FigureCanvasAgg) -> bool:
    """Whether a panel's decorations reach up into the figure title's box."""
    renderer = canvas.get_renderer()
    title = canvas.figure._suptitle.get_window_extent(renderer)
    return any(
        min(box.x1, title.x1) - max(box.x0, title.x0) > 1 and box.y1 > title.y0 + 1
        for box in (ax.get_tightbbox(renderer) for ax in canvas.figure.axes)
    )


#: How far a text's box reaches past its ink, px: two boxes may overlap this much.
TEXT_MARGIN_PX = 4


def test_a_figure_like_the_last_is_placed_where_the_last_was_and_not_laid_out():
    layout = FrozenLayout()
    canvas = two_panels("line", 10)
    layout.draw(canvas)
    kept = [ax.get_position().bounds for ax in canvas.figure.axes]
    plt.close(canvas.figure)
    canvas = two_panels("line", 20)  # the same labels' widths: "20" for "10"
    layout.draw(canvas)
    assert (layout.laid_out, layout.reused) == (1, 1)
    assert [ax.get_position().bounds for ax in canvas.figure.axes] == kept
    plt.close(canvas.figure)


def test_a_wider_label_is_laid_out_afresh_and_its_layout_kept():
    layout = FrozenLayout()
    for top in (10, 10**12):  # "1,000,000,000,000" runs into the left panel's legend
        canvas = two_panels("line", top)
        layout.draw(canvas)
        assert not cut_off(canvas) and not overlapping_panels(canvas)
        plt.close(canvas.figure)
    assert (layout.laid_out, layout.reused) == (2, 0)
    canvas = two_panels("line", 2 * 10**12)
    layout.draw(canvas)
    assert (layout.laid_out, layout.reused) == (2, 1)
    plt.close(canvas.figure)


def test_a_figure_of_another_shape_gets_its_own_layout():
    layout = FrozenLayout()
    for size in ((8, 3), (6, 4), (8, 3)):
        figure, ax = plt.subplots(figsize=size, layout="constrained")
        ax.plot([0, 1])
        layout.draw(FigureCanvasAgg(figure))
        plt.close(figure)
    assert (layout.laid_out, layout.reused) == (2, 1)


def test_a_figure_without_a_layout_engine_is_drawn_as_it_comes():
    layout = FrozenLayout()
    for _ in range(2):
        figure, ax = plt.subplots(figsize=(4, 3))
        ax.plot([0, 1])
        bounds = ax.get_position().bounds
        layout.draw(FigureCanvasAgg(figure))
        assert ax.get_position().bounds == bounds
        plt.close(figure)
    assert (layout.laid_out, layout.reused) == (2, 0)


#: How wide the growing tick labels get: the largest value they show.
LABEL_TOPS = st.sampled_from([1, 10, 10**3, 10**6, 10**9, 10**12])


@settings(max_examples=12, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.text(alphabet="abcdefgh ", min_size=1, max_size=40),
            LABEL_TOPS,
            # titles of 1 to 4 lines (more does not fit 3 inches: matplotlib gives up, warning)
            st.lists(st.text(alphabet="xyz ", min_size=1, max_size=15), min_size=1, max_size=4).map(
                "\n".join
            ),
        ),
        min_size=2,
        max_size=5,
    )
)
def test_no_kept_layout_ever_cuts_a_label_off_or_runs_two_panels_together(figures):
    layout = FrozenLayout()
    for legend, top, title in figures:
        canvas = two_panels(legend, top, title)
        layout.draw(canvas)
        try:
            assert not cut_off(canvas), (legend, top, title)
            assert not overlapping_panels(canvas), (legend, top, title)
            assert not under_the_title(canvas), (legend, top, title)
        finally:
            plt.close(canvas.figure)
    assert layout.laid_out + layout.reused == len(figures)


def test_a_second_line_of_label_is_never_cut_off():
    layout = FrozenLayout()
    for label in ("latency", "latency\np99 (ms)"):  # a 1-px edge check missed the second line
        figure, ax = plt.subplots(figsize=(4, 3), layout="constrained")
        ax.plot([0, 1])
        ax.set_ylabel(label)
        canvas = FigureCanvasAgg(figure)
        layout.draw(canvas)
        assert not cut_off(canvas)
        plt.close(figure)
    assert (layout.laid_out, layout.drawn_in) == (1, 1)  # one axes: drawn in, not laid out


def one_axes(top: float, title: str = "") -> FigureCanvasAgg:
    """One axes whose y tick labels are as wide as ``top`` needs; a figure title if given."""
    figure, ax = plt.subplots(figsize=(4, 3), layout="constrained")
    ax.plot([0, 1], [0, top])
    ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:,.0f}"))
    if title:
        figure.suptitle(title)
    return FigureCanvasAgg(figure)


def test_one_axes_whose_labels_outgrow_the_figure_is_drawn_in_as_far_as_they_grew():
    layout = FrozenLayout()
    canvas = one_axes(10)
    layout.draw(canvas)
    left = canvas.figure.axes[0].get_position().x0
    plt.close(canvas.figure)
    for top in (10**9, 2 * 10**9):  # "1,000,000,000" runs off the left edge, then fits
        canvas = one_axes(top)
        layout.draw(canvas)
        assert not cut_off(canvas)
        assert canvas.figure.axes[0].get_position().x0 > left + 0.1  # drawn in on the left
        plt.close(canvas.figure)
    assert (layout.laid_out, layout.reused, layout.drawn_in) == (1, 2, 1)


def test_a_row_of_axes_is_drawn_in_level_and_a_column_is_laid_out_afresh():
    def row(top: float) -> FigureCanvasAgg:  # the left panel's labels grow off the left edge
        figure, (left, right) = plt.subplots(1, 2, figsize=(8, 3), layout="constrained")
        left.plot([0, 1], [0, top])
        right.plot([0, 1], [0, 1])
        left.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:,.0f}"))
        figure.suptitle("A title over the row")
        return FigureCanvasAgg(figure)

    def column(top: float) -> FigureCanvasAgg:
        figure, (upper, lower) = plt.subplots(2, 1, figsize=(4, 4), layout="constrained")
        upper.plot([0, 1], [0, top])
        lower.plot([0, 1], [0, 1])
        upper.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:,.0f}"))
        return FigureCanvasAgg(figure)

    for build, drawn_in in ((row, 1), (column, 0)):
        layout = FrozenLayout()
        for top in (10, 10**9):
            canvas = build(top)
            layout.draw(canvas)
            first, second = canvas.figure.axes
            assert not cut_off(canvas) and layout.drawn_in <= drawn_in
            if build is row:  # level: the same top and bottom
                assert first.get_position().y0 == pytest.approx(second.get_position().y0)
                assert first.get_position().y1 == pytest.approx(second.get_position().y1)
                assert first.get_tightbbox(canvas.get_renderer()).x1 < (
                    second.get_tightbbox(canvas.get_renderer()).x0
                )
            else:  # aligned: the same left edge
                assert first.get_position().x0 == pytest.approx(second.get_position().x0)
            plt.close(canvas.figure)
        assert (layout.laid_out, layout.drawn_in) == (2 - drawn_in, drawn_in), build.__name__


def test_a_row_under_a_title_that_gains_lines_is_drawn_down_under_it_not_laid_out_again():
    layout = FrozenLayout()
    tops = []
    for lines in (1, 2, 3, 2):
        canvas = two_panels("a line", 10, title="\n".join(["A title line"] * lines))
        layout.draw(canvas)
        figure, renderer = canvas.figure, canvas.get_renderer()
        title = figure._suptitle.get_window_extent(renderer)
        for ax in figure.axes:
            assert ax.get_tightbbox(renderer).y1 <= title.y0 + 0.5, lines  # clear of the title
        first, second = figure.axes
        assert first.get_position().y1 == pytest.approx(second.get_position().y1)  # level
        assert not cut_off(canvas)
        tops.append(first.get_position().y1)
        plt.close(figure)
    assert tops[0] > tops[1] > tops[2] == tops[3]  # down a line each time; kept for fewer
    assert (layout.laid_out, layout.drawn_in) == (1, 2)


def test_a_figure_legend_beside_the_row_is_not_taken_for_a_title_over_it():
    def figure_with_legend_beside(top: float) -> FigureCanvasAgg:
        figure, ax = plt.subplots(figsize=(6, 3), layout="constrained")
        ax.plot([0, top], label="a")
        ax.plot([top, 0], label="b")
        ax.set_title("title")
        figure.legend(loc="outside right upper")
        return FigureCanvasAgg(figure)

    layout = FrozenLayout()
    tops = []
    for top in (1, 1e5, 1, 1e5):  # "100000" widens the labels: the row is drawn in on the left
        canvas = figure_with_legend_beside(top)
        layout.draw(canvas)
        assert not cut_off(canvas)
        tops.append(canvas.figure.axes[0].get_position().y1)
        plt.close(canvas.figure)
    assert tops == pytest.approx(
        [tops[0]] * 4
    )  # not drawn down under the legend's top (0.74 of 0.92 was)
    assert (layout.laid_out, layout.drawn_in) == (1, 1)


def test_a_figure_legend_that_grows_is_not_left_over_the_plot():
    layout = FrozenLayout()
    for label in ("a", "a much much longer legend label"):
        figure, ax = plt.subplots(figsize=(6, 3), layout="constrained")
        ax.plot([0, 1], label=label)
        legend = figure.legend(loc="outside right upper")
        canvas = FigureCanvasAgg(figure)
        layout.draw(canvas)
        renderer = canvas.get_renderer()
        assert legend.get_window_extent(renderer).x0 >= ax.get_window_extent(renderer).x1
        plt.close(figure)


def test_an_axes_shown_after_being_hidden_does_not_land_on_its_neighbour():
    layout = FrozenLayout()
    for shown in (False, True):
        figure, (left, right) = plt.subplots(1, 2, figsize=(6, 3), layout="constrained")
        left.plot([0, 1])
        right.plot([0, 10**9])
        right.set_ylabel("requests")
        right.set_visible(shown)
        canvas = FigureCanvasAgg(figure)
        layout.draw(canvas)
        if shown:
            assert not overlapping_panels(canvas)
        plt.close(figure)


def test_a_figure_with_another_layout_engine_is_drawn_as_it_comes():
    layout = FrozenLayout()
    for top in (10, 10**12):  # tight layout: no padding to double, nothing kept
        figure, ax = plt.subplots(layout="tight")
        ax.plot([0, top])
        layout.draw(FigureCanvasAgg(figure))
        plt.close(figure)
    assert (layout.laid_out, layout.reused) == (2, 0)


def test_a_title_no_layout_can_fit_neither_is_kept_nor_widens_the_padding():
    layout = FrozenLayout()
    for title in ("short", "far too long a headline " * 8, "short"):
        figure, ax = plt.subplots(figsize=(6, 3), layout="constrained")
        ax.plot([0, 1])
        figure.suptitle(title)
        layout.draw(FigureCanvasAgg(figure))
        plt.close(figure)
    assert (layout.laid_out, layout.reused) == (2, 1)
    assert set(layout._padding.values()) == {1}


def test_each_layout_that_fails_doubles_the_padding_up_to_its_cap():
    layout = FrozenLayout()
    for digits in range(1, 40, 3):  # ever wider labels: most outgrow the layout before them
        canvas = two_panels("line", 10**digits)
        layout.draw(canvas)
        plt.close(canvas.figure)
    (padding,) = layout._padding.values()
    assert padding == min(2 ** (layout.laid_out - 1), MOST_PADDING)
    assert layout.laid_out > 4  # the cap was reached


def test_an_explorer_lays_its_figure_out_once_for_moves_that_fit(monkeypatch):
    from perfmodel.widgets.roofline import roofline_explorer

    layouts = []
    real = FrozenLayout.__init__

    def keep(self):
        real(self)
        layouts.append(self)

    monkeypatch.setattr(FrozenLayout, "__init__", keep)
    box = roofline_explorer()
    size = box.children[1]
    for n in (512, 2048, 4096):
        size.value = n
    (layout,) = layouts
    assert layout.laid_out == 1 and layout.reused == 3
    assert controls.PLOT_CACHE >= 4


def test_an_axes_drawn_without_its_axis_is_judged_by_what_is_drawn():
    layout = FrozenLayout()
    for _ in range(2):  # the hidden axis's tick labels would overlap the panel below
        figure, (top, bottom) = plt.subplots(2, 1, figsize=(6, 4), layout="constrained")
        top.plot([0, 1])
        top.axis("off")
        bottom.plot([0, 1])
        layout.draw(FigureCanvasAgg(figure))
        plt.close(figure)
    assert (layout.laid_out, layout.reused) == (1, 1)


@settings(max_examples=12, deadline=None)
@given(
    st.lists(
        st.tuples(
            LABEL_TOPS,
            st.text(alphabet="xyz ", min_size=1, max_size=40),
        ),
        min_size=2,
        max_size=5,
    )
)
def test_no_drawn_in_axes_ever_has_a_label_cut_off(figures):
    layout = FrozenLayout()
    for top, label in figures:
        canvas = one_axes(top)
        canvas.figure.axes[0].set_xlabel(label)
        layout.draw(canvas)
        assert not cut_off(canvas), (top, label)
        plt.close(canvas.figure)


def test_limits_a_draw_would_change_are_judged_as_drawn():
    def equal_aspect(xmax: float, ymax: float) -> FigureCanvasAgg:  # limits widened when drawn
        figure, ax = plt.subplots(figsize=(6, 3), layout="constrained")
        ax.plot([0, xmax], [0, ymax])
        ax.set_aspect("equal", adjustable="datalim")
        ax.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:,.0f}"))
        return FigureCanvasAgg(figure)

    def note_off_axis(right: float, note: str) -> FigureCanvasAgg:  # limits autoscaled late
        figure, ax = plt.subplots(figsize=(4, 3), layout="constrained")
        ax.plot([0.0, right], [0, 1])
        ax.text(right, 0.5, note, ha="right")
        ax.set_axis_off()
        return FigureCanvasAgg(figure)

    cases = {equal_aspect: ((20, 9), (100000, 9000)),
             note_off_axis: ((1.0, "n"), (0.3, "a much longer note"))}  # fmt: skip
    for build, moves in cases.items():
        layout = FrozenLayout()
        for args in moves:
            canvas = build(*args)
            layout.draw(canvas)
            assert not cut_off(canvas), (build.__name__, args)
            note = canvas.figure.axes[0].texts
            if note:  # a text in data coordinates is no part of the axes' tight box
                box = note[0].get_window_extent(canvas.get_renderer())
                assert box.x0 >= -1 and box.x1 <= canvas.figure.bbox.width + 1, args
            plt.close(canvas.figure)


def test_an_axes_is_not_drawn_in_beside_a_hidden_one_that_comes_back():
    def stacked(top: float, lower_shown: bool) -> FigureCanvasAgg:
        figure, (upper, lower) = plt.subplots(2, 1, figsize=(4, 4), layout="constrained")
        upper.plot([0, 1], [0, top])
        lower.plot([0, 1], [0, 1])
        upper.yaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda y, _: f"{y:,.0f}"))
        lower.set_visible(lower_shown)
        return FigureCanvasAgg(figure)

    layout = FrozenLayout()
    for top, shown in ((10, True), (10**9, False), (10**9, True)):
        canvas = stacked(top, shown)
        layout.draw(canvas)
        upper, lower = canvas.figure.axes
        assert not cut_off(canvas)
        assert upper.get_position().x0 == pytest.approx(lower.get_position().x0)  # aligned
        plt.close(canvas.figure)
    assert layout.drawn_in == 0


def test_a_title_over_top_ticks_stays_as_far_above_them_when_drawn_in():
    def top_ticks(lines: int) -> FigureCanvasAgg:
        figure, ax = plt.subplots(figsize=(4, 3), layout="constrained")
        ax.plot([0, 1], [0, 1])
        ax.xaxis.tick_top()
        ax.tick_params(labelsize=22)
        ax.set_title("A title over top ticks")
        ax.set_xlabel("\n".join(["x"] * lines))  # grows at the bottom edge
        return FigureCanvasAgg(figure)

    def gap(canvas: FigureCanvasAgg) -> float:
        renderer = canvas.get_renderer()
        ax = canvas.figure.axes[0]
        labels = [t.label2.get_window_extent(renderer) for t in ax.xaxis.get_major_ticks()
                  if t.label2.get_visible() and t.label2.get_text()]  # fmt: skip
        return ax.title.get_window_extent(renderer).y0 - max(box.y1 for box in labels)

    layout = FrozenLayout()
    gaps = []
    for lines in (1, 3):
        canvas = top_ticks(lines)
        layout.draw(canvas)
        assert not cut_off(canvas)
        gaps.append(gap(canvas))
        plt.close(canvas.figure)
    assert layout.drawn_in == 1
    assert gaps[1] == pytest.approx(gaps[0], abs=0.5) and gaps[1] > 0


#: Explorers' views and moves that change limits, tick counts, legends and layouts.
_MOVES = [
    ("roofline", "roofline_view",
     [{"device": "H100 SXM", "compare": None, "dtype": "bf16", "n": 1024},
      {"device": "H100 SXM", "compare": None, "dtype": "bf16", "n": 64},
      {"device": "H100 SXM", "compare": "EPYC 9654", "dtype": "bf16", "n": 64},
      {"device": "T4", "compare": "MI300X", "dtype": "fp16", "n": 16384}]),
    ("minibatch", "batch_size_view",
     [{}, {"width": 256}, {"width": 16384}, {"device": "TPU v5p", "dtype": "bf16"}]),
    ("serving", "serving_view", [{}, {"workers": 1, "max_batch": 1}, {"arrival_rate": 2000.0}]),
    ("capstone", "capstone_view", [{}, {"parallelism": "pipeline"}, {"devices": 1024}]),
]  # fmt: skip


@pytest.mark.parametrize(("module", "view", "moves"), _MOVES, ids=[m[1] for m in _MOVES])
def test_ticks_worked_out_once_draw_the_same_bytes_as_matplotlib_working_them_out(
    module, view, moves, monkeypatch
):
    """The oracle: each axis keeping its ticks while their inputs stay changes nothing drawn."""
    import contextlib
    import importlib

    from perfmodel.widgets import layout

    function = getattr(importlib.import_module(f"perfmodel.widgets.{module}"), view)

    def drawn() -> list[bytes]:
        frozen = FrozenLayout()
        return [controls.render_svg(function, settings, frozen) for settings in moves]

    kept = drawn()
    monkeypatch.setattr(layout, "_ticks_worked_out_once", lambda figure: contextlib.nullcontext())
    assert kept == drawn()


def test_an_axis_works_its_ticks_out_again_when_its_limits_or_length_change():
    from perfmodel.widgets.layout import _kept_ticks

    figure, ax = plt.subplots(figsize=(4, 3))
    ax.plot([0, 10])
    update = _kept_ticks(ax.xaxis)
    first = [t.get_loc() for t in update()]
    assert update() is update()  # nothing changed: the same ticks
    ax.set_xlim(0, 1000)
    assert [t.get_loc() for t in update()] != first
    ax.set_position((0.1, 0.1, 0.1, 0.8))  # a tenth as long: fewer ticks fit
    narrow = [t.get_loc() for t in update()]
    assert narrow == [t.get_loc() for t in ax.xaxis._update_ticks()] and len(narrow) < 6
    plt.close(figure)
