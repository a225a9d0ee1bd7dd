"""How fast does every lecture's explorer answer when a presenter moves one of its controls?

Each explorer is built in a real IPython kernel (the inline matplotlib backend, as in
JupyterLab), then every control is moved to each of a few values in turn: a slider to its
low end, its middle and its high end, a dropdown or a toggle to each option. The time of one
answer is the time from setting the control's value to the callback returning, with the
figure drawn as the SVG the browser will show; the comm message to the browser and the
browser painting it are not included (``--browser`` times those too).

Every move is then made a second time, and the slowest of those repeats is reported apart:
an explorer keeps the figures it has drawn, so going back to a setting answers from memory.
The goal (issue 15) is every answer within 200 ms on 2 cores.

``--browser`` measures what the audience sees instead: each explorer is served by Voilà and
driven in headless Chromium with Playwright, as a lecturer drives it. Every control is moved
to its ends and its middle (a slider dragged with the mouse, a dropdown set to its first,
middle and last options, each toggle clicked) and back, and each move is timed from the
input event (the mouse dragged, the option chosen) to the first frame painted after the
explorer's picture changed: the new image decoded, or its text replaced. Kernel, comm
messages, the browser's decoding and painting are all inside. It prints, per control, the
first move, the median and the worst.

``--decks`` times every lecture's deck as ``perfmodel demo`` serves it: from the command to
the server answering; from opening the page to its first slide showing; and from then, with
the explorer's slide shown at once, to the explorer's controls appearing (a deck runs its
live cells once it is open). The goal (issue 29) is a deck open in under 5 s.

Run from the repository root::

    .venv/bin/python benchmarks/widgets.py
    .venv/bin/python benchmarks/widgets.py --explorer capstone_explorer
    .venv/bin/python benchmarks/widgets.py --browser            # needs Debian's chromium
    .venv/bin/python benchmarks/widgets.py --decks              # needs Debian's chromium
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import textwrap
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from jupyter_client.manager import start_new_kernel

#: (module, explorer, arguments as Python source): every explorer a lecture opens.
EXPLORERS = [
    ("transfer", "transfer_time_explorer", ""),
    ("run_time", "run_time_explorer", ""),
    ("devices", "device_explorer", ""),
    ("op_cost", "op_explorer", ""),
    ("roofline", "roofline_explorer", ""),
    ("minibatch", "batch_size_explorer", ""),
    ("measure", "cache_sweep_explorer", ""),
    ("taskgraph", "schedule_explorer", ""),
    ("scaling", "scaling_explorer", "[(1, 1.0), (2, 1.8)], serial_percent=5.0"),
    ("distributed", "data_parallel_explorer", ""),
    ("partition", "partition_explorer", ""),
    ("serving", "serving_explorer", ""),
    ("capstone", "capstone_explorer", ""),
]

#: Runs in the kernel: build one explorer, move every control, print the timings as JSON.
_MEASURE = textwrap.dedent(
    """
    import json, time
    import ipywidgets as widgets
    from perfmodel.widgets.{module} import {explorer}

    started = time.perf_counter()
    box = {explorer}({arguments})
    built_s = time.perf_counter() - started

    def controls(widget):
        if isinstance(widget, (widgets.Output, widgets.Image, widgets.HTML, widgets.Label,
                               widgets.Button)):
            return []
        if isinstance(widget, widgets.Box):
            return [c for child in widget.children for c in controls(child)]
        return [widget] if hasattr(widget, "value") and not widget.disabled else []

    def values(control):
        if hasattr(control, "options"):
            options = list(control.options)
            return [o[1] if isinstance(o, tuple) else o for o in options]
        if isinstance(control, widgets.Checkbox):
            return [not control.value, control.value]
        if isinstance(control, widgets.FloatLogSlider):
            low, high = control.min, control.max
            return [control.base ** low, control.base ** ((low + high) / 2), control.base ** high]
        low, high = control.min, control.max
        middle = (low + high) / 2 if isinstance(control.value, float) else (low + high) // 2
        return [low, middle, high]

    answers, again = [], []
    for control in controls(box):
        start = control.value
        moves = [v for v in values(control) if v != start] + [start]
        for value in moves:
            tick = time.perf_counter()
            control.value = value
            answers.append(
                {{"control": control.description or type(control).__name__,
                  "value": repr(value), "seconds": time.perf_counter() - tick}}
            )
        for value in moves:  # the same moves again: answered from the figures already drawn
            tick = time.perf_counter()
            control.value = value
            again.append(time.perf_counter() - tick)
    print(json.dumps({{"built_s": built_s, "answers": answers, "again": again}}))
    """
)


#: Explorers whose controls act through a button (the cache sweep measures on *measure*):
#: moving a control changes its readout, not the picture, so a move waits only a second.
BUTTON_DRIVEN = {"cache_sweep_explorer"}


def measure(client: Any, module: str, explorer: str, arguments: str) -> dict[str, Any]:
    """Build ``explorer`` in the kernel behind ``client`` and time every control's answers."""
    code = _MEASURE.format(module=module, explorer=explorer, arguments=arguments)
    printed: list[str] = []

    def collect(message: dict[str, Any]) -> None:
        if message["msg_type"] == "stream" and message["content"]["name"] == "stdout":
            printed.append(message["content"]["text"])
        elif message["msg_type"] == "error":
            printed.append(json.dumps({"error": message["content"]["evalue"]}))

    client.execute_interactive(code, output_hook=collect, timeout=600)
    for line in reversed("".join(printed).splitlines()):
        if line.startswith("{"):
            timings: dict[str, Any] = json.loads(line)
            return timings
    raise RuntimeError(f"{explorer} printed no timings: {''.join(printed)[-500:]}")


#: Runs in the page before anything else: note when each input happens, and when a frame is
#: painted after the explorer's picture (an image, an HTML line, an output widget) changes:
#: two animation frames after the change (the first runs before that frame paints, the
#: second after it). A move that changes the picture twice (a device whose dtypes differ
#: redraws once for each control) is timed to the last change.
_WATCH = """
window.__move = {inputAt: null, changedAt: null, paintedAt: null};
for (const type of ["mousemove", "mouseup", "change", "click", "keyup"]) {
    document.addEventListener(type, event => {
        // a drag's move counts only with the button held: a slider that updates as it is
        // dragged (continuous_update) sends its value then, before the button is released
        if (type === "mousemove" && !(event.buttons & 1)) return;
        if (window.__move.inputAt === null) window.__move.inputAt = performance.now();
    }, true);
}
new MutationObserver(records => {
    const move = window.__move;
    if (move.inputAt === null) return;
    const hit = records.find(r => {
        const node = r.target.nodeType === 1 ? r.target : r.target.parentElement;
        if (!node) return false;
        if (node.tagName === "IMG") return r.attributeName === "src";
        return r.type !== "attributes" && node.closest(".widget-html, .widget-output") !== null;
    });
    if (!hit) return;
    const changedAt = move.changedAt = performance.now();
    const painted = () => requestAnimationFrame(() => requestAnimationFrame(() => {
        if (move.changedAt === changedAt) move.paintedAt = performance.now();
    }));
    if (hit.target.tagName === "IMG") hit.target.decode().then(painted, painted);
    else painted();
}).observe(document, {subtree: true, childList: true, characterData: true, attributes: true,
                      attributeFilter: ["src"]});
"""

#: A move's picture is final once it has not changed for this long, ms.
SETTLE_MS = 400


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _wait_for_server(url: str, server: subprocess.Popen[bytes], timeout_s: float = 60) -> None:
    """Wait until ``url`` answers; RuntimeError if the server stops or ``timeout_s`` passes."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Voilà did not start (no answer from {url})") from None
            time.sleep(0.1)


@contextlib.contextmanager
def voila_explorers(chosen: list[tuple[str, str, str]]) -> Iterator[str]:
    """Voilà serving one notebook per explorer (``<explorer>.ipynb``) as ``perfmodel demo``
    serves a deck; yields its base URL."""
    from perfmodel.present.demo import projector_styles, voila_command, write_settings

    folder = Path(tempfile.mkdtemp(prefix="explorers-"))
    styles = projector_styles()  # the deck's, so each explorer is laid out as on a slide
    for module, explorer, arguments in chosen:
        code = f"from perfmodel.widgets.{module} import {explorer}\n\n{explorer}({arguments})"
        cells = [{"cell_type": "markdown", "id": "style", "metadata": {},
                  "source": f"{styles}# {explorer}"},
                 {"cell_type": "code", "id": "explorer", "metadata": {}, "source": code,
                  "outputs": [], "execution_count": None}]  # fmt: skip
        notebook = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
        (folder / f"{explorer}.ipynb").write_text(json.dumps(notebook), encoding="utf-8")
    write_settings(folder)
    port = _free_port()
    command, env = voila_command(".", port=port, open_browser=False)
    # A deck pre-heats its one notebook; here that would run every explorer at once, beside
    # the measurements. Each page starts its kernel when it is opened instead.
    command.append("--VoilaConfiguration.preheat_kernel=False")
    env |= {"JUPYTER_CONFIG_DIR": str(folder / ".jupyter"),
            "JUPYTER_RUNTIME_DIR": str(folder / ".runtime")}  # fmt: skip
    server = subprocess.Popen(
        command, cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    base = f"http://127.0.0.1:{port}"
    try:
        _wait_for_server(f"{base}/", server)
        yield base
    finally:
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()
        shutil.rmtree(folder, ignore_errors=True)


def _moves(page: Any, every: bool) -> Iterator[tuple[str, str, Any, Any]]:
    """Each move to make: (control, target, the element moved, a function of it that makes
    the move). ``every``: the ends, the middle and back for each control; else one move per
    control, to somewhere else than where it starts (a slider to its farther end), and back,
    so that each control is tried from the explorer's starting state. Controls are found as
    the moves go, so one that an earlier move disabled (a dtype dropdown on a device with one
    dtype) is seen as it is then."""
    sliders = page.locator(".widget-slider")
    for i in range(sliders.count()):
        slider = sliders.nth(i)
        name = slider.locator(".widget-label").first.inner_text() or f"slider {i}"
        handle = slider.locator(".noUi-handle").first
        start = handle.bounding_box()
        track = slider.locator(".noUi-target").first.bounding_box()
        targets = [("low end", -0.05), ("middle", 0.5), ("high end", 1.05)]
        back = ("back", (start["x"] + start["width"] / 2 - track["x"]) / track["width"])
        farther = targets[0] if back[1] > 0.5 else targets[2]  # never a move to where it is
        for label, fraction in [*targets, back] if every else [farther, back]:

            def drag(handle: Any, track: Any = track, fraction: float = fraction) -> None:
                box = handle.bounding_box()
                y = box["y"] + box["height"] / 2
                page.mouse.move(box["x"] + box["width"] / 2, y)
                page.mouse.down()
                page.mouse.move(track["x"] + fraction * track["width"], y)  # one step
                page.mouse.up()

            yield name, label, handle, drag
    dropdowns = page.locator(".widget-dropdown")
    for i in range(dropdowns.count()):
        select = dropdowns.nth(i).locator("select").first
        name = dropdowns.nth(i).locator(".widget-label").first.inner_text() or f"dropdown {i}"
        options = select.locator("option").all_inner_texts()
        start = select.evaluate("s => s.options[s.selectedIndex].text")
        picks = [options[0], options[len(options) // 2], options[-1], start]
        picks = [p for k, p in enumerate(picks) if p != (picks[k - 1] if k else start)]
        if not picks:  # a single option: nothing to move to
            continue
        for option in picks if every else [picks[0], start]:
            yield name, option, select, lambda s, option=option: s.select_option(label=option)
    toggles = page.locator(".widget-toggle-buttons")
    for i in range(toggles.count()):
        group = toggles.nth(i)
        name = group.locator(".widget-label").first.inner_text() or f"toggle {i}"
        buttons = group.locator("button")
        labels = buttons.all_inner_texts()
        active = group.locator("button.mod-active").first.inner_text()
        picks = [b for b in labels if b != active] + [active]
        for label in picks if every else [picks[0], active]:
            yield name, label, buttons.nth(labels.index(label)), lambda b: b.click()
    boxes = page.locator(".widget-checkbox input")
    for i in range(boxes.count()):
        for label in ("flip", "back"):
            yield f"checkbox {i}", label, boxes.nth(i), lambda box: box.click()


def _chromium() -> str:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise RuntimeError("Debian's `chromium` is not on the PATH (apt-get install chromium)")
    return chromium


def _console_errors(page: Any) -> list[str]:
    """A list the page's console errors and uncaught exceptions will be added to."""
    errors: list[str] = []
    page.on(
        "console", lambda message: errors.append(message.text) if message.type == "error" else None
    )
    page.on("pageerror", lambda error: errors.append(str(error)))
    return errors


def browser_timings(
    chosen: list[tuple[str, str, str]],
    *,
    every: bool = True,
    wait_ms: int = 10_000,
    settle_ms: int = SETTLE_MS,
    waits: dict[str, int] | None = None,
) -> list[dict[str, Any]]:
    """Drive each explorer in ``chosen`` in Chromium; one row per move.

    Each row has the explorer, the control, the target, ``ms`` (input to paint, or None when
    the picture did not change within ``wait_ms``, or the explorer's own wait in ``waits``)
    and the console errors of its page. A move's picture is final once unchanged for
    ``settle_ms``.
    """
    from playwright.sync_api import sync_playwright

    chromium = _chromium()
    rows: list[dict[str, Any]] = []
    with voila_explorers(chosen) as base, sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            for _, explorer, _ in chosen:
                page = browser.new_page(viewport={"width": 1920, "height": 1080})
                errors = _console_errors(page)
                page.add_init_script(_WATCH)
                page.goto(f"{base}/voila/render/{explorer}.ipynb", timeout=120_000)
                page.wait_for_selector(
                    ".widget-slider, .widget-dropdown, .widget-toggle-buttons", timeout=120_000
                )
                page.wait_for_timeout(500)  # the first figure arrives and settles
                for control, target, element, move in _moves(page, every):
                    if not element.is_enabled():
                        continue
                    page.evaluate(
                        "window.__move = {inputAt: null, changedAt: null, paintedAt: null}"
                    )
                    move(element)
                    try:
                        page.wait_for_function(
                            f"""() => window.__move.paintedAt !== null
                                && performance.now() - window.__move.changedAt > {settle_ms}""",
                            timeout=(waits or {}).get(explorer, wait_ms),
                        )
                        ms = page.evaluate("window.__move.paintedAt - window.__move.inputAt")
                    except Exception:  # no change: a move to where the control already was
                        ms = None
                    # An explorer shows a view's ValueError as a message in place of its figure:
                    # a changed picture, but an error all the same.
                    for message in page.locator(".widget-html pre").all_inner_texts():
                        errors.append(f"{control} -> {target}: {message}")
                    rows.append({"explorer": explorer, "control": control, "target": target,
                                 "ms": ms, "errors": list(errors)})  # fmt: skip
                page.close()
        finally:
            browser.close()
    return rows


def print_browser_table(rows: list[dict[str, Any]]) -> None:
    """Per control: moves timed, the first, the median and the worst input-to-paint."""
    print(f"{'explorer':<24}{'control':<18}{'moves':>6}{'first':>8}{'median':>8}{'worst':>8}")
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in rows:
        groups.setdefault((row["explorer"], row["control"]), []).append(row)
    worst_all = (0.0, "")
    for (explorer, control), moves in groups.items():
        timed = [m["ms"] for m in moves if m["ms"] is not None]
        if not timed:
            print(f"{explorer:<24}{control[:17]:<18}{0:>6}  picture never changed")
            continue
        worst = max(timed)
        print(f"{explorer:<24}{control[:17]:<18}{len(timed):>6}{timed[0]:6.0f}ms"
              f"{statistics.median(timed):6.0f}ms{worst:6.0f}ms")  # fmt: skip
        if worst > worst_all[0]:
            worst_all = (worst, f"{explorer}: {control}")
    unchanged = sum(r["ms"] is None for r in rows)
    errors = sorted({e for r in rows for e in r["errors"]})
    print(f"worst input-to-paint: {worst_all[0]:.0f} ms ({worst_all[1]}); goal 200 ms")
    print(f"{len(rows)} moves, {unchanged} left the picture unchanged; console errors: {errors}")


def deck_timings(lectures: list[str]) -> list[dict[str, Any]]:
    """Serve each lecture's deck with ``perfmodel demo`` and time it in Chromium; one row per
    lecture: ``server_s`` (command to the server answering), ``open_s`` (page requested to
    its first slide showing), ``explorer_s`` (from then, with the explorer's slide shown at
    once, to its controls appearing: a deck runs its live cells once open) and the console
    errors."""
    import signal
    import sys

    from playwright.sync_api import sync_playwright

    from perfmodel.present import slides
    from perfmodel.present.live import EXPLORER_CALL

    chromium = _chromium()
    notebooks = Path("notebooks").resolve()
    controls = """() => {
        const shown = [...document.querySelectorAll('.reveal .slides section.present')];
        const controls = '.widget-slider, .widget-dropdown, .widget-toggle-buttons';
        return shown.length > 0 && shown[shown.length - 1].querySelector(controls) !== null;
    }"""
    rows: list[dict[str, Any]] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium, args=["--headless", "--no-sandbox", "--disable-gpu"]
        )
        try:
            for lecture in lectures:
                notebook = json.loads(next(notebooks.glob(f"{lecture}_*.ipynb")).read_text())
                cells = notebook["cells"]
                explorer = next(
                    s.position for s in slides.slides(notebook)
                    if any(EXPLORER_CALL.search("".join(cells[i]["source"])) for i in s.cells)
                )  # fmt: skip
                folder = Path(tempfile.mkdtemp(prefix=f"deck-{lecture}-"))
                port = _free_port()
                start = time.perf_counter()
                server = subprocess.Popen(
                    [sys.executable, "-m", "perfmodel.cli", "demo", lecture, "--no-browser",
                     f"--port={port}", f"--folder={folder / 'deck'}", f"--notebooks={notebooks}"],
                    env={**os.environ, "JUPYTER_CONFIG_DIR": str(folder / ".jupyter"),
                         "JUPYTER_RUNTIME_DIR": str(folder / ".runtime")},
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )  # fmt: skip
                base = f"http://127.0.0.1:{port}"
                try:
                    _wait_for_server(f"{base}/voila/files/reveal.js/dist/reveal.css", server)
                    server_s = time.perf_counter() - start
                    page = browser.new_page(viewport={"width": 1920, "height": 1080})
                    errors = _console_errors(page)
                    start = time.perf_counter()
                    page.goto(base, timeout=120_000)
                    page.wait_for_selector(
                        ".reveal .slides section.present", state="visible", timeout=120_000
                    )
                    open_s = time.perf_counter() - start
                    start = time.perf_counter()
                    page.evaluate("location.hash = '#/{}/{}'".format(*explorer))
                    page.wait_for_function(controls, timeout=120_000, polling=50)
                    explorer_s = time.perf_counter() - start
                    page.close()
                finally:
                    server.send_signal(signal.SIGINT)
                    try:
                        server.wait(timeout=30)
                    except subprocess.TimeoutExpired:
                        server.kill()
                    shutil.rmtree(folder, ignore_errors=True)
                rows.append({"lecture": lecture, "server_s": server_s, "open_s": open_s,
                             "explorer_s": explorer_s, "errors": errors})  # fmt: skip
        finally:
            browser.close()
    return rows


def print_deck_table(rows: list[dict[str, Any]]) -> None:
    """Print :func:`deck_timings`' rows and the slowest deck to open."""
    print(f"{'deck':<6}{'server':>8}{'opens':>8}{'explorer':>10}  console errors")
    for row in rows:
        print(f"{row['lecture']:<6}{row['server_s']:7.1f}s{row['open_s']:7.1f}s"
              f"{row['explorer_s']:9.1f}s  {len(row['errors'])}")  # fmt: skip
    slowest = max(rows, key=lambda row: row["open_s"])
    print(f"slowest to open: deck {slowest['lecture']}, {slowest['open_s']:.1f} s; goal 5 s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--explorer", help="only this explorer (its function name)")
    parser.add_argument("--browser", action="store_true", help="time input to paint in Chromium")
    parser.add_argument("--decks", action="store_true", help="time every deck's opening")
    args = parser.parse_args()
    if args.decks:
        lectures = sorted(p.name[:2] for p in Path("notebooks").glob("[0-9][0-9]_*.ipynb"))
        print_deck_table(deck_timings(lectures))
        return
    chosen = [e for e in EXPLORERS if args.explorer in (None, e[1])]
    if not chosen:
        parser.error(f"no explorer named {args.explorer!r}")
    if args.browser:
        print_browser_table(browser_timings(chosen, waits=dict.fromkeys(BUTTON_DRIVEN, 1_000)))
        return
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        client.execute_interactive("%matplotlib inline", timeout=60)
        print(f"{'explorer':<24}{'build':>8}{'median':>9}{'slowest':>9}{'repeat':>9}  slowest move")
        worst, worst_repeat = (0.0, ""), 0.0
        for module, explorer, arguments in chosen:
            result = measure(client, module, explorer, arguments)
            if "error" in result:
                raise RuntimeError(f"{explorer}: {result['error']}")
            answers = result["answers"]
            seconds = sorted(a["seconds"] for a in answers)
            slowest = max(answers, key=lambda a: a["seconds"])
            median = seconds[len(seconds) // 2]
            repeat = max(result["again"])
            print(
                f"{explorer:<24}{result['built_s'] * 1e3:6.0f}ms{median * 1e3:7.0f}ms"
                f"{slowest['seconds'] * 1e3:7.0f}ms{repeat * 1e3:7.0f}ms  "
                f"{slowest['control']} = {slowest['value']} ({len(answers)} moves)"
            )
            if slowest["seconds"] > worst[0]:
                worst = (slowest["seconds"], f"{explorer}: {slowest['control']}")
            worst_repeat = max(worst_repeat, repeat)
        print(f"slowest answer: {worst[0] * 1e3:.0f} ms ({worst[1]}); goal 200 ms")
        print(f"slowest repeated answer: {worst_repeat * 1e3:.0f} ms")
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
