"""An explorer's next figure built ahead (perfmodel.widgets.spare) draws the same bytes.

Each explorer is driven twice through the same moves: once with no event loop (nothing is
built ahead: every figure is a fresh ``plt.subplots``), and once inside a running asyncio
loop, idle between moves, as in a kernel (each move's figure is the one built ahead). The
SVG shown after every move must be the same to the byte, and most moves must have used a
figure built ahead.
"""

from __future__ import annotations

import asyncio

import matplotlib

matplotlib.use("agg")

import ipywidgets as widgets  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from test_explorer_controls import explorers, is_control, other_values, walk  # noqa: E402

from perfmodel.widgets import spare  # noqa: E402

pytestmark = pytest.mark.slow


def _images(box) -> list[bytes]:
    return [w.value for w in walk(box) if isinstance(w, widgets.Image)]


def _moves(box) -> list[tuple[int, object]]:
    """(control's index, value) for each control moved once away from its default, then back."""
    found = [w for w in walk(box) if is_control(w)]
    moves = []
    for index, control in enumerate(found):
        others = other_values(control)
        if others:
            moves += [(index, others[-1]), (index, control.value)]
    return moves


def _drive(explorer, moves, *, idle_s: float | None) -> list[list[bytes]]:
    """Each move's pictures; between moves, an idle event loop for ``idle_s`` (None: no loop)."""
    if idle_s is not None:
        return asyncio.run(_async_drive(explorer, moves, idle_s))
    box = explorer()
    controls = [w for w in walk(box) if is_control(w)]
    seen = []
    for index, value in moves:
        controls[index].value = value
        seen.append(_images(box))
    return seen


async def _async_drive(explorer, moves, idle_s: float) -> list[list[bytes]]:
    box = explorer()
    controls = [w for w in walk(box) if is_control(w)]
    seen = []
    for index, value in moves:
        await asyncio.sleep(idle_s)  # the kernel idle: the spare figure is built
        controls[index].value = value
        seen.append(_images(box))
    return seen


@pytest.mark.parametrize("explorer", [e for e in explorers() if e.__name__ != "op_explorer"],
                         ids=lambda e: e.__name__)  # fmt: skip
def test_a_figure_built_ahead_draws_the_same_bytes(explorer, monkeypatch):
    monkeypatch.setattr(spare, "IDLE_AFTER_S", 0.0)  # built as soon as the loop is idle
    import contextlib

    lent = []
    lending = spare.SpareFigures.lending

    def counted(self):
        before = self.lent
        with lending(self):
            yield
        lent.append(self.lent - before)

    monkeypatch.setattr(spare.SpareFigures, "lending", contextlib.contextmanager(counted))
    moves = _moves(explorer())
    plt.close("all")
    fresh = _drive(explorer, moves, idle_s=None)
    assert not any(lent), "no event loop, yet a figure was built ahead"
    ahead = _drive(explorer, moves, idle_s=0.01)
    for move, (want, got) in enumerate(zip(fresh, ahead, strict=True)):
        assert got == want, f"move {move} ({moves[move]}) drew other bytes with a spare figure"
    if any(fresh[0]):  # an explorer that draws figures
        assert sum(lent) >= len(moves) // 2, f"only {sum(lent)} of {len(moves)} moves lent"


def _both_ways(view, moves) -> tuple[list[bytes], list[bytes], int]:
    """``view``'s SVG for each of ``moves`` drawn fresh, and with a figure built ahead before
    each move (as an idle kernel builds it); and how many moves took one."""
    from perfmodel.widgets.controls import render_svg
    from perfmodel.widgets.layout import FrozenLayout

    fresh_layout, ahead_layout, spares = FrozenLayout(), FrozenLayout(), spare.SpareFigures()
    fresh, ahead = [], []
    for values in moves:
        fresh.append(render_svg(view, values, fresh_layout))
        spares.build()
        ahead.append(render_svg(view, values, ahead_layout, spares))
    assert not plt.get_fignums(), "a figure was left open"
    return fresh, ahead, spares.lent


def _pyplot_state(top: float) -> None:
    plt.subplots(figsize=(5, 3), layout="constrained")
    plt.plot([0, top])  # the current axes: pyplot's state, not the axes returned
    plt.title(f"up to {top:g}")


def _log_twins(top: float) -> None:
    import numpy as np

    _, ax = plt.subplots(figsize=(6, 4), width_ratios=np.array([1.0]), layout="constrained")
    ax.set_xscale("log")
    ax.plot([1, 10, 100], [1, top, 3])
    twin = ax.twinx()
    twin.set_yscale("log")
    twin.plot([1, 100], [1, 10 * top])
    ax.tick_params(axis="x", labelrotation=30)


@pytest.mark.parametrize("view", [_pyplot_state, _log_twins], ids=lambda v: v.__name__)
def test_views_of_every_kind_draw_the_same_bytes_on_a_figure_built_ahead(view):
    fresh, ahead, lent = _both_ways(view, [{"top": t} for t in (2.0, 3.0, 120.0, 7.0)])
    assert ahead == fresh
    assert lent == 3  # every move after the first


def test_arguments_equal_in_print_but_not_in_value_get_no_spare():
    import numpy as np

    def view(width: float) -> None:
        plt.subplots(figsize=np.array([width, 3.0]))

    _, _, lent = _both_ways(view, [{"width": 4.0}, {"width": 4.000000001}])
    assert lent == 0  # np.array([4.000000001, 3.0]) prints as [4., 3.]


def test_calls_with_pyplot_keywords_or_figure_hooks_are_never_built_ahead():
    import matplotlib as mpl

    def numbered(top: float) -> None:
        plt.subplots(num="explorer", clear=True)[1].plot([0, top])

    assert _both_ways(numbered, [{"top": 1.0}, {"top": 2.0}])[2] == 0

    def hooked(top: float) -> None:
        with mpl.rc_context({"figure.hooks": ["test_widget_spare:_yellow"]}):
            plt.subplots()[1].plot([0, top])

    fresh, ahead, lent = _both_ways(hooked, [{"top": 1.0}, {"top": 2.0}])
    assert lent == 0 and ahead == fresh


def _yellow(figure) -> None:
    figure.set_facecolor("yellow")
