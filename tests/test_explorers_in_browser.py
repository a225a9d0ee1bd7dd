"""Every explorer, served as a deck serves it, answers its controls in a real Chromium.

The harness is the browser mode of ``benchmarks/widgets.py``: each explorer on its own Voilà
page (every second explorer on one Voilà server, one server per test class), each control
moved once (a slider dragged to its middle, a dropdown set to another option, a toggle
clicked, a box ticked). The test asserts what the audience would see: the picture changed
after every move, and the console stayed clean. How fast it changed is the benchmark's to
report, not the test's. Needs Debian's ``chromium``; skips without it.
"""

from __future__ import annotations

import importlib.util

import pytest
from test_browser import _chromium

from conftest import ROOT


def benchmark():
    spec = importlib.util.spec_from_file_location(
        "widget_benchmark", ROOT / "benchmarks" / "widgets.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def check_half(half: int) -> None:
    """Serve every second explorer, from the ``half``-th, and move each of its controls."""
    _chromium()
    bench = benchmark()
    chosen = bench.EXPLORERS[half::2]
    rows = bench.browser_timings(
        chosen,
        every=False,
        wait_ms=30_000,
        settle_ms=100,
        waits=dict.fromkeys(bench.BUTTON_DRIVEN, 1_000),  # its picture waits for its button
    )
    assert {row["explorer"] for row in rows} == {e[1] for e in chosen}
    errors = {row["explorer"]: row["errors"] for row in rows if row["errors"]}
    assert not errors, errors
    unchanged = [
        (row["explorer"], row["control"], row["target"])
        for row in rows
        if row["ms"] is None and row["explorer"] not in bench.BUTTON_DRIVEN
    ]
    assert not unchanged, f"moves that left the picture as it was: {unchanged}"
    moved = {(row["explorer"], row["control"]) for row in rows}
    assert len(moved) >= 18  # every control of every explorer, not a handful (45 in all)


# Two classes, so that xdist's --dist loadscope runs the halves on two workers.
@pytest.mark.browser
class TestFirstHalf:
    def test_every_control_changes_its_picture_with_no_console_error(self):
        check_half(0)


@pytest.mark.browser
class TestSecondHalf:
    def test_every_control_changes_its_picture_with_no_console_error(self):
        check_half(1)
