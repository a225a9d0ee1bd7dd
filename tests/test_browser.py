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

import pytest
from conftest import ROOT

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
    """A JupyterLab server on localhost, empty token, serving a copy of the notebooks."""
    shutil.copy(ROOT / "notebooks" / "00_start_here.ipynb", tmp_path)
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
        server.terminate()
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            server.kill()


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
            page.goto(f"{lab}/lab/tree/00_start_here.ipynb")
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
        except Exception:
            page.screenshot(path=str(SCREENSHOTS / "00_start_here-failure.png"))
            raise
        finally:
            browser.close()
