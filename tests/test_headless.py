"""Lectures run headless (``nbconvert --execute``, nbclient) end every cell without a stall.

A headless client stands in for the browser's ``Output`` widget: each output the widget
captures, it answers with a ``comm_msg`` sent on the kernel's shell channel, from its IOPub
task, while its reply task waits on that same channel for the cell's ``execute_reply``.
jupyter_client sends that message raw on the shell socket, which consumes the socket's
edge-triggered wake-up; when the reply has just arrived, nothing wakes the waiting task, and
the cell waits out its whole timeout before the reply is found (jupyter/nbclient#312: 600 s
with nbconvert's default timeout, for a cell that takes half a second). So no explorer may
make the client send anything while a cell runs, and cells that draw live plots finish in
their own time, also on a busy machine.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
import time

import nbformat
import pytest
from nbclient import NotebookClient

import perfmodel.widgets
from conftest import ROOT, cpu_hog

#: Kernels run beside a CPU hog: not in `make test-fast`.
pytestmark = pytest.mark.slow


def explorers() -> list[tuple[str, str]]:
    """(module, function) for every ``*_explorer`` in :mod:`perfmodel.widgets`."""
    found = []
    for info in pkgutil.iter_modules(perfmodel.widgets.__path__):
        module = importlib.import_module(f"perfmodel.widgets.{info.name}")
        found += [(info.name, name) for name in getattr(module, "__all__", ())
                  if name.endswith("_explorer")]  # fmt: skip
    return sorted(found)


def run_cells(sources: list[str], timeout: int) -> tuple[list[float], list[str]]:
    """Run ``sources`` as cells in one fresh kernel under nbclient (cwd ``notebooks/``): each
    cell's seconds, and the type of every message the client sent on the shell channel
    besides the cells' execute requests.

    The kernel does not audit its figures (the lectures' own runs do): what is tested here
    is the conversation with the client, not what the figures show."""
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(s) for s in sources])
    client = NotebookClient(nb, timeout=timeout, kernel_name="python3",
                            resources={"metadata": {"path": str(ROOT / "notebooks")}})  # fmt: skip
    seconds, sent = [], []
    env = {k: v for k, v in os.environ.items() if k != "PERFMODEL_FIGURE_AUDIT"}
    with client.setup_kernel(env=env):
        assert client.kc is not None
        send = client.kc.shell_channel.send

        def recording_send(msg: dict) -> None:
            if msg["header"]["msg_type"] != "execute_request":
                sent.append(msg["header"]["msg_type"])
            send(msg)

        client.kc.shell_channel.send = recording_send  # type: ignore[method-assign]
        for index, cell in enumerate(nb.cells):
            start = time.perf_counter()
            client.execute_cell(cell, index)
            seconds.append(time.perf_counter() - start)
    return seconds, sent


def test_every_explorer_exists():
    names = [name for _, name in explorers()]
    assert {"scaling_explorer", "schedule_explorer", "serving_explorer"} <= set(names)
    assert len(names) >= 13


def test_no_explorer_makes_a_headless_client_send_on_the_shell_channel():
    found = explorers()
    sources = [f"from perfmodel.widgets.{module} import {name}\n{name}()" for module, name in found]
    _, sent = run_cells(sources, timeout=120)
    # Cell by cell would name the culprit; the total says whether there is one, in one kernel.
    assert sent == [], (
        f"building the explorers made the headless client send {sent} on the shell channel: "
        f"an explorer displays into an Output widget (see this module's docstring)"
    )


def test_cells_that_draw_live_plots_never_wait_out_their_timeout():
    """The stall itself, beside a CPU hog. Before the fix about one cell in ten waited out
    its timeout (2 to 9 of 40 such cells in five runs of six, 25 of 240 in all), so 60 cells
    all but surely catch one; after it, none of 1,000 did."""
    timeout = 5
    setup = (
        "import ipywidgets as widgets\n"
        "import matplotlib.pyplot as plt\n"
        "from perfmodel.widgets.controls import live_plot\n"
        "def view(n):\n"
        "    plt.figure(figsize=(1, 1)).gca().plot([0, n])\n"
    )
    cell = "live_plot(view, {'n': widgets.IntSlider(3)})"
    with cpu_hog():
        seconds, _ = run_cells([setup] + [cell] * 60, timeout=timeout)
    stalled = [(i, round(s, 1)) for i, s in enumerate(seconds) if s >= 0.9 * timeout]
    assert stalled == [], f"cells that waited out their {timeout} s timeout: {stalled}"


def test_a_server_whose_model_fails_stops_and_says_so():
    """A worker that raised never gave its slot back, so the batcher waited for a free worker
    forever and leaving the ``with`` block hung the cell; now the block ends and raises."""
    import threading

    import numpy as np

    from perfmodel.serving.server import Server

    def failing(batch: object) -> None:
        raise FloatingPointError("the model failed")

    outcome: list[BaseException | None] = []

    def serve() -> None:
        try:
            with Server(failing, workers=1) as server:
                for _ in range(3):
                    server.submit(np.ones(4))
        except BaseException as error:  # the test inspects whatever came out
            outcome.append(error)
        else:
            outcome.append(None)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    thread.join(timeout=30)
    assert not thread.is_alive(), "leaving the server's with-block hung"
    (error,) = outcome
    assert isinstance(error, RuntimeError) and "the model failed" in str(error)
    assert isinstance(error.__cause__, FloatingPointError)
