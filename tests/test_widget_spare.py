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
    from perfmodel.widgets import controls

    monkeypatch.setattr(controls, "IDLE_AFTER_S", 0.0)  # built as soon as the loop is idle
    import contextlib

    lent = []
    lending = spare.SpareFigures.lending

    def counted(self):
        before = self.lent
        with lending(self) as made:
            yield made
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
