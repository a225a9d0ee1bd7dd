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


@pytest.mark.browser
def test_text_in_another_font_is_drawn_as_wide_as_it_was_laid_out():
    """A browser without DejaVu Sans sets an explorer's text in another font; each line is
    still drawn the width matplotlib laid it out at (within half a percent, or a point: a
    "T" overhangs its advance), spaces and all (the device bars' labels start with one),
    where the same text without its width runs several percent off."""
    import matplotlib

    matplotlib.use("agg")
    import re

    from playwright.sync_api import sync_playwright
    from test_browser import CHROMIUM_ARGS

    from perfmodel.widgets.controls import render_svg
    from perfmodel.widgets.devices import device_bars
    from perfmodel.widgets.roofline import roofline_view

    values = {"device": "H100 SXM", "compare": "A100 SXM4 80GB", "dtype": "bf16", "n": 1024}
    svg = render_svg(roofline_view, values).decode() + render_svg(device_bars, {}).decode()
    svg = re.sub(r"<\?xml[^>]*>|<!DOCTYPE[^>]*>", "", svg)  # two drawings inline in one page
    serif = re.sub(r"font-family: [^;\"]*", "font-family: serif", svg)  # no DejaVu Sans here
    unsized = re.sub(r'textLength="[0-9.]+" lengthAdjust="spacingAndGlyphs" ', "", serif)
    measure = """() => [...document.querySelectorAll("body > div")].map(div =>
        [...div.querySelectorAll("text")].map(t => [t.getBBox().width,
            Number(t.getAttribute("textLength")), t.getNumberOfChars(), t.textContent.length]))"""
    pages = "".join(f"<div>{drawing}</div>" for drawing in (serif, unsized, svg))
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=_chromium(), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page()
            page.set_content(f"<html><body>{pages}</body></html>")
            sized_serif, bare_serif, sized_sans = page.evaluate(measure)
        finally:
            browser.close()
    laid_out = [length for _, length, _, _ in sized_serif]
    assert len(laid_out) >= 40 and all(length > 0 for length in laid_out)
    assert all(n == typed for *_, n, typed in sized_serif)  # every character, spaces too
    assert len(re.findall(r">( [^<]*)</text>", svg)) >= 10  # and labels that start with one
    for drawn in (sized_serif, sized_sans):
        assert [w for w, *_ in drawn] == pytest.approx(laid_out, rel=0.005, abs=1.0)
    off = [abs(w / length - 1) for (w, *_), length in zip(bare_serif, laid_out, strict=True)]
    assert max(off) > 0.03  # the control: unsized, the other font really is another width
