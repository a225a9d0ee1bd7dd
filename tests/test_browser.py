"""Open 00_start_here in JupyterLab through a real headless Chromium, run it, move a slider.

Needs Debian's ``chromium`` on the PATH (``.ci/run`` installs it); skips, saying so, when it
is missing. Playwright drives that browser; it never downloads one of its own.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT
from perfmodel.present.demo import NO_DELAY_CONNECTION

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
SCREENSHOTS = ROOT / "test-output" / "browser"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def wait_for_server(url: str, process: subprocess.Popen, timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"JupyterLab exited early with status {process.returncode}")
        try:
            with urllib.request.urlopen(url, timeout=2) as reply:
                if reply.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    raise TimeoutError(f"JupyterLab did not answer on {url} within {timeout_s} s")


def stop(server: subprocess.Popen) -> None:
    """Stop a server process, killing it if it does not stop within 20 s."""
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()


def accept_kernel_dialog(page, timeout_ms: int) -> None:
    """Accept JupyterLab's "Select Kernel" dialog if it appears (it does when the kernel
    is slow to start, as on a loaded 2-core machine)."""
    from playwright.sync_api import TimeoutError as PlaywrightTimeout

    accept = page.locator(".jp-Dialog .jp-mod-accept")
    try:
        accept.wait_for(timeout=timeout_ms)
    except PlaywrightTimeout:
        return
    accept.click()


@pytest.fixture
def lab(tmp_path):
    """A JupyterLab server on localhost, empty token, serving a copy of the course's layout
    from its root, as `make lab` does (lecture 00 links to the workbook beside it)."""
    for folder, name in (("notebooks", "00_start_here.ipynb"), ("exercises", "00_warmup.ipynb")):
        (tmp_path / folder).mkdir()
        shutil.copy(ROOT / folder / name, tmp_path / folder)
    port = free_port()
    env = {
        **os.environ,
        "JUPYTER_CONFIG_DIR": str(tmp_path / ".jupyter"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / ".runtime"),
        "JUPYTERLAB_SETTINGS_DIR": str(tmp_path / ".lab-settings"),
        "JUPYTERLAB_WORKSPACES_DIR": str(tmp_path / ".lab-workspaces"),
    }
    server = subprocess.Popen(
        [
            sys.executable, "-m", "jupyter", "lab", "--no-browser",
            "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
            "--IdentityProvider.token=", "--ServerApp.password=",
            f"--ServerApp.root_dir={tmp_path}", "--LabApp.news_url=",
            "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            f"--ServerApp.kernel_websocket_connection_class={NO_DELAY_CONNECTION}",  # as make lab
            *(["--allow-root"] if os.geteuid() == 0 else []),
        ],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        base = f"http://127.0.0.1:{port}"
        wait_for_server(f"{base}/api/status", server)
        yield base
    finally:
        stop(server)


@pytest.mark.browser
def test_start_here_runs_in_jupyterlab_and_its_slider_drives_the_output(lab):
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's `chromium` is not on the PATH (apt-get install chromium)")
    from playwright.sync_api import sync_playwright

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.goto(f"{lab}/lab/tree/notebooks/00_start_here.ipynb")
            page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=60_000)
            accept_kernel_dialog(page, timeout_ms=3_000)
            page.wait_for_selector(
                ".jp-Notebook-ExecutionIndicator[data-status='idle']", timeout=60_000
            )
            page.get_by_role("menuitem", name="Run", exact=True).click()
            page.get_by_role("menuitem", name="Run All Cells", exact=True).click()
            accept_kernel_dialog(page, timeout_ms=3_000)

            sentence = page.locator(".perfmodel-transfer-time")
            sentence.wait_for(timeout=120_000)
            page.wait_for_function(
                """() => {
                    const cells = '.jp-CodeCell .jp-InputPrompt';
                    const prompts = [...document.querySelectorAll(cells)];
                    return prompts.length > 0
                        && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
                }""",
                timeout=90_000,
            )
            errors = page.locator(
                ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
            )
            assert errors.count() == 0, errors.all_inner_texts()
            assert "Moving 10 MB at 100 GB/s takes 100 µs." in sentence.inner_text()

            before = sentence.inner_text()
            handle = page.locator(".widget-slider .noUi-handle").first
            handle.scroll_into_view_if_needed()
            handle.focus()
            for _ in range(10):
                page.keyboard.press("ArrowRight")
            # Ten steps of a tenth of a decade: 10 MB becomes 100 MB, and the time follows.
            page.wait_for_function(
                "() => document.querySelector('.perfmodel-transfer-time').innerText"
                ".includes('100 MB')",
                timeout=15_000,
            )
            after = sentence.inner_text()
            assert after != before
            assert "Moving 100 MB at 100 GB/s takes 1 ms." in after, after
            # The slider's readout is written in units, not as 1.00e+08.
            readouts = page.locator(".widget-hbox .widget-label").all_inner_texts()
            assert "100 MB" in readouts and "100 GB/s" in readouts, readouts
            sentence.scroll_into_view_if_needed()
            page.screenshot(path=str(SCREENSHOTS / "00_start_here.png"))
            # The workbook is one click away: the lecture's link opens it in a new tab.
            link = page.locator(".jp-RenderedMarkdown a", has_text="exercises/00_warmup.ipynb")
            link.scroll_into_view_if_needed()
            link.click()
            page.locator(".lm-TabBar-tab", has_text="00_warmup.ipynb").wait_for(timeout=30_000)
            page.locator(".jp-Notebook h1", has_text="Workbook 00: Warm up").wait_for(
                timeout=30_000
            )
            page.screenshot(path=str(SCREENSHOTS / "00_warmup-from-the-link.png"))
        except Exception:
            page.screenshot(path=str(SCREENSHOTS / "00_start_here-failure.png"))
            raise
        finally:
            browser.close()


def _chromium() -> str:
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        pytest.skip("Debian's `chromium` is not on the PATH (apt-get install chromium)")
    return chromium


def processes_whose_environment_holds(marker: bytes) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        try:
            if entry.isdigit() and marker in Path(f"/proc/{entry}/environ").read_bytes():
                found.append(int(entry))
        except OSError:  # gone, or not ours to read
            continue
    return found


#: The bottom of the lowest cell on the slide showing, in CSS pixels from the window's top.
_SLIDE_BOTTOM = """() => {
    const shown = [...document.querySelectorAll('.reveal .slides section.present')];
    const slide = shown[shown.length - 1];
    const cells = [...slide.querySelectorAll('.jp-Cell')].filter(c => c.offsetParent !== null);
    return Math.max(0, ...cells.map(c => c.getBoundingClientRect().bottom));
}"""


@pytest.fixture(scope="module")
def book(tmp_path_factory):
    """The book, built once, served over HTTP on localhost."""
    import functools
    import http.server
    import threading

    from perfmodel.present.book import build_book

    out = tmp_path_factory.mktemp("book") / "site"
    build_book(ROOT / "notebooks", out, progress=False)

    class Quiet(http.server.SimpleHTTPRequestHandler):
        def log_message(self, *args):
            pass

    handler = functools.partial(Quiet, directory=str(out))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", out
    finally:
        server.shutdown()


@pytest.mark.browser
def test_every_book_page_loads_offline_with_no_failed_request(book):
    from playwright.sync_api import sync_playwright

    chromium = _chromium()
    base, out = book
    pages = sorted(p.name for p in out.glob("[0-9][0-9]_*.html"))
    assert len(pages) == len(list((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb")))
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1400, "height": 1000})
        requested, failed = [], []
        page.on("request", lambda request: requested.append(request.url))
        page.on("requestfailed", lambda request: failed.append(request.url))
        page.on("response", lambda reply: failed.append(reply.url) if reply.status >= 400 else None)
        try:
            page.goto(f"{base}/index.html")
            links = page.locator("table.book-map a").evaluate_all("as => as.map(a => a.href)")
            assert [link.rsplit("/", 1)[1] for link in links] == pages
            page.screenshot(path=str(SCREENSHOTS / "book_index.png"))
            for name in pages:
                page.goto(f"{base}/{name}", wait_until="networkidle")
                assert page.locator("nav.book-contents li.current").count() == 1, name
                assert page.locator(".jp-Cell").count() > 5, name
            # Equations are typeset offline, by the book's own MathJax.
            page.goto(f"{base}/04_draw_the_roofline.html", wait_until="networkidle")
            page.wait_for_selector(".MathJax, .MathJax_Display, mjx-container", timeout=30_000)
            page.screenshot(path=str(SCREENSHOTS / "book_04.png"), full_page=False)
        finally:
            browser.close()
    # about:blank and data: URLs never leave the browser; anything else must be the book's.
    network = [url for url in requested if not url.startswith(("about:", "data:", "blob:"))]
    outside = [url for url in network if not url.startswith(base)]
    assert not outside, outside
    assert not [url for url in failed if url in network], failed
