"""Every lecture's deck, as `perfmodel demo` serves it, in a real headless Chromium.

Each test starts `perfmodel demo NN`, opens the deck, steps through every slide, waits for
the lecture's explorer (a deck runs its live cells once open), moves one of its controls and
waits for its picture to change, then stops the server
with one signal (SIGINT, Ctrl-C, for the first half of the lectures; SIGTERM for the
second). It fails on any console error, any request that leaves localhost,
and any process the server leaves behind.

The lectures are split over two classes so that pytest-xdist's ``loadscope`` can run the two
halves on two workers. Needs Debian's ``chromium``; skips, saying so, when it is missing.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from test_browser import (
    _SLIDE_BOTTOM,
    CHROMIUM_ARGS,
    SCREENSHOTS,
    _chromium,
    free_port,
    processes_whose_environment_holds,
    wait_for_server,
)

from conftest import ROOT

LECTURES = sorted(p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))

#: What a deck's explorer shows, in the slide showing: its figures' sources and its live
#: text, both set by the kernel (a slider's readout is not: the browser updates it itself).
_PICTURE = """() => {
    const shown = [...document.querySelectorAll('.reveal .slides section.present')];
    const slide = shown[shown.length - 1];
    const images = [...slide.querySelectorAll('img.widget-image')].map(i => i.src);
    const texts = [...slide.querySelectorAll('.widget-html')].map(t => t.innerText);
    return JSON.stringify([images, texts]);
}"""

#: Whether the slide showing holds an explorer's control.
_CONTROLS = """() => {
    const shown = [...document.querySelectorAll('.reveal .slides section.present')];
    const controls = '.widget-slider, .widget-dropdown, .widget-toggle-buttons';
    return shown[shown.length - 1].querySelector(controls) !== null;
}"""

#: Lectures whose every slide is checked to fit the 1080p projector as it is served, and the
#: explorer's slide again once its live cells have run (the overflow test of
#: tests/test_slides.py sees stored outputs only).
FITTED = {"04"}

#: Lectures whose explorer acts through a button (lecture 06's sweep measures on *measure*):
#: a control moved there changes no picture, so only the console and the stop are checked.
BUTTON_DRIVEN = {"06"}


def explorer_slide(notebook: dict) -> tuple[int, int]:
    """The reveal.js position of the slide holding the lecture's explorer."""
    from perfmodel.present import slides as deck
    from perfmodel.present.live import EXPLORER_CALL

    cells = notebook["cells"]
    return next(
        slide.position
        for slide in deck.slides(notebook)
        if any(EXPLORER_CALL.search("".join(cells[i]["source"])) for i in slide.cells)
    )


def move_one_control(page) -> str:
    """Drag the showing slide's first slider, or pick another option of its first dropdown or
    toggle; return what was moved."""
    slide = ".reveal .slides section.present"
    handle = page.locator(f"{slide} .widget-slider .noUi-handle")
    if handle.count():
        box = handle.first.bounding_box()
        middle = box["y"] + box["height"] / 2
        page.mouse.move(box["x"] + box["width"] / 2, middle)
        page.mouse.down()
        page.mouse.move(box["x"] + 250, middle, steps=5)
        page.mouse.up()
        return "slider"
    dropdown = page.locator(f"{slide} .widget-dropdown select")
    if dropdown.count():
        options = dropdown.first.locator("option").all_inner_texts()
        current = dropdown.first.input_value()
        dropdown.first.select_option(next(o for o in options if o != current))
        return "dropdown"
    toggles = page.locator(f"{slide} .widget-toggle-buttons button:not(.mod-active)")
    toggles.first.click()
    return "toggle"


def present_and_step_through(lecture: str, tmp_path: Path, stop: signal.Signals) -> None:
    from playwright.sync_api import sync_playwright

    from perfmodel.present import slides as deck

    chromium = _chromium()
    path = next((ROOT / "notebooks").glob(f"{lecture}_*.ipynb"))
    notebook = json.loads(path.read_text(encoding="utf-8"))
    port = free_port()
    runtime = tmp_path / ".runtime"
    server = subprocess.Popen(
        [sys.executable, "-m", "perfmodel.cli", "demo", lecture, "--no-browser",
         f"--port={port}", f"--folder={tmp_path / 'deck'}", f"--notebooks={ROOT / 'notebooks'}"],
        env={**os.environ, "JUPYTER_CONFIG_DIR": str(tmp_path / ".jupyter"),
             "JUPYTER_RUNTIME_DIR": str(runtime)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    errors: list[str] = []
    requests: list[str] = []
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    try:
        wait_for_server(f"{base}/voila/files/reveal.js/dist/reveal.css", server)
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
            page = browser.new_page(viewport={"width": 1920, "height": 1080})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            page.on("request", lambda request: requests.append(request.url))
            try:
                page.goto(base, timeout=120_000)
                page.wait_for_selector(".reveal .slides section", timeout=120_000)
                layout = deck.slides(notebook)
                for slide in layout:
                    page.evaluate("location.hash = '#/{}/{}'".format(*slide.position))
                    page.wait_for_timeout(150 if lecture in FITTED else 30)
                    if lecture in FITTED:
                        bottom = page.evaluate(_SLIDE_BOTTOM)
                        assert bottom <= 1080, f"slide {slide.position} ends at {bottom}px"
                assert page.locator(".reveal .slides section.present").count() >= 1
                page.evaluate("location.hash = '#/{}/{}'".format(*explorer_slide(notebook)))
                # The live cells run once the deck is open: the explorer's controls come
                # when its cell has.
                page.wait_for_function(_CONTROLS, timeout=120_000)
                if lecture in FITTED:  # the explorer, drawn live, fits too
                    page.wait_for_timeout(500)
                    bottom = page.evaluate(_SLIDE_BOTTOM)
                    assert bottom <= 1080, f"the explorer's slide ends at {bottom}px"
                if lecture not in BUTTON_DRIVEN:
                    page.wait_for_function(f"() => ({_PICTURE})() !== '[[],[]]'", timeout=60_000)
                before = page.evaluate(_PICTURE)
                moved = move_one_control(page)
                if lecture not in BUTTON_DRIVEN:
                    page.wait_for_function(
                        f"(before) => ({_PICTURE})() !== before", arg=before, timeout=60_000
                    )
                    shown = page.locator(".reveal section.present .widget-html pre")
                    assert shown.count() == 0, shown.all_inner_texts()  # an error, not a figure
                page.wait_for_timeout(500)  # an error the move causes has time to show
                page.screenshot(path=str(SCREENSHOTS / f"deck_{lecture}.png"), timeout=120_000)
            except Exception:
                with contextlib.suppress(Exception):
                    page.screenshot(path=str(SCREENSHOTS / f"deck_{lecture}-failure.png"))
                raise
            finally:
                browser.close()
    finally:
        server.send_signal(stop)  # one Ctrl-C, or one SIGTERM from a process manager
        try:
            stopped = server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            stopped = None
    assert not errors, f"deck {lecture}: console errors {errors}"
    outside = [u for u in requests if not u.startswith((base, "data:", "blob:", "about:"))]
    outside = [u for u in outside if not u.startswith(base.replace("http", "ws"))]
    assert not outside, f"deck {lecture} fetched from outside: {outside}"
    assert stopped is not None, f"deck {lecture}: one {stop.name} did not stop `perfmodel demo`"
    marker = f"JUPYTER_RUNTIME_DIR={runtime}".encode()
    deadline = time.monotonic() + 15
    while (left := processes_whose_environment_holds(marker)) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not left, f"deck {lecture} ({moved} moved): processes outlived the server: {left}"


@pytest.mark.browser
class TestFirstHalf:
    @pytest.mark.parametrize("lecture", LECTURES[: len(LECTURES) // 2])
    def test_deck_opens_steps_answers_and_stops_clean(self, lecture, tmp_path):
        present_and_step_through(lecture, tmp_path, signal.SIGINT)


@pytest.mark.browser
class TestSecondHalf:
    @pytest.mark.parametrize("lecture", LECTURES[len(LECTURES) // 2 :])
    def test_deck_opens_steps_answers_and_stops_clean(self, lecture, tmp_path):
        present_and_step_through(lecture, tmp_path, signal.SIGTERM)
