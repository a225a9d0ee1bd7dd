"""A deck's live cells wait for their slide: each shows the lecture's stored outputs until
the page clicks its hidden button, and then the whole queue runs, in order, once, on a real
kernel, from the button's comm message as in a deck."""

from __future__ import annotations

import json

import nbformat
import pytest

from perfmodel.present.later import NOT_RUN, TRIGGER_CLASS, defer_live_cells

#: The live cells of the deck the kernel runs: a print, a figure beside its value, a widget
#: (an explorer's stand-in), an output widget written to, a value silenced by ``;``, a
#: display updated in place, a failure, and a cell after it.
SOURCES = [
    "total = 40 + 2\nprint('total', total)",
    "import matplotlib.pyplot as plt\nplt.plot([1, 2], [total, 0])\n"
    "plt.xlabel('step (count)')\nplt.ylabel('total (count)')\ntotal + 1",
    "import ipywidgets\nipywidgets.IntSlider(value=total)",
    "out = ipywidgets.Output()\nwith out:\n    print('for the output widget')\nout",
    "total * 2;",
    "from IPython.display import display\nshown = display('first', display_id=True)\n"
    "shown.update('second')",
    "print('before the slip')\n1 / 0",
    "print('never')",
]
FAILS = 6  # the index of the failing cell


def deck_notebook() -> nbformat.NotebookNode:
    cells = [nbformat.v4.new_markdown_cell("# A lecture")]
    for index, source in enumerate(SOURCES):
        cell = nbformat.v4.new_code_cell(source, id=f"live-{index}")
        cell.outputs = [nbformat.v4.new_output("stream", name="stdout", text=f"stored {index}\n")]
        cells.append(cell)
    # JSON stays the value it is (only text is stored as lines).
    cells[1].outputs.append(nbformat.v4.new_output("display_data", {"application/json": [1, 2]}))
    frozen = nbformat.v4.new_code_cell("", id="frozen")  # as freeze_outputs leaves it
    frozen.outputs = [nbformat.v4.new_output("stream", name="stdout", text="kept\n")]
    cells.append(frozen)
    return nbformat.v4.new_notebook(cells=cells)


def test_deferring_moves_each_live_source_to_metadata_and_calls_later():
    notebook = deck_notebook()
    assert defer_live_cells(notebook, "deck.ipynb") == len(SOURCES)
    for index, source in enumerate(SOURCES):
        cell = notebook.cells[index + 1]
        assert cell.metadata["perfmodel"]["source"] == source
        assert f'later("deck.ipynb", "live-{index}")' in cell.source
        assert cell.outputs[0]["text"] == f"stored {index}\n"
    assert notebook.cells[-1].source == ""
    assert "perfmodel" not in notebook.cells[-1].metadata


def test_a_notebook_older_than_cell_ids_gets_them():
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("x_explorer()")])
    notebook.nbformat_minor = 4
    del notebook.cells[0]["id"]
    assert defer_live_cells(notebook, "deck.ipynb") == 1
    nbformat.validate(notebook)
    assert notebook.cells[0].id in notebook.cells[0].source


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    from jupyter_client.manager import start_new_kernel

    folder = tmp_path_factory.mktemp("deck")
    notebook = deck_notebook()
    defer_live_cells(notebook, "deck.ipynb")
    nbformat.write(notebook, folder / "deck.ipynb")
    manager, client = start_new_kernel(kernel_name="python3", cwd=str(folder))
    try:
        yield client, notebook
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def run(client, code: str) -> str:
    printed: list[str] = []

    def collect(message):
        if message["msg_type"] == "stream":
            printed.append(message["content"]["text"])
        elif message["msg_type"] == "error":
            raise AssertionError("\n".join(message["content"]["traceback"]))

    client.execute_interactive(code, timeout=120, output_hook=collect)
    return "".join(printed)


#: What each queued cell's box shows, as JSON: its widgets' kinds, and each output widget's
#: outputs (type and text, or kinds of data).
SHOWN = """
import json
from perfmodel.present import later as _later

def _outputs(widget):
    return [
        [o["output_type"], o.get("text") or o.get("ename") or sorted(o.get("data", {}))]
        for o in getattr(widget, "outputs", ())
    ]

print(json.dumps([
    [[type(c).__name__, _outputs(c)] for c in queued.box.children]
    for queued in _later._queue
]))
"""


def shown(client) -> list:
    return json.loads(run(client, SHOWN))


def click(client, widget_id: str) -> None:
    """Send the button's click as the page's widget manager does."""
    content = {"comm_id": widget_id, "data": {"method": "custom", "content": {"event": "click"}}}
    client.shell_channel.send(client.session.msg("comm_msg", content))


def test_stored_outputs_show_until_the_button_runs_the_queue_in_order_once(kernel):
    client, notebook = kernel
    for cell in notebook.cells:
        if cell.cell_type == "code" and cell.source:
            run(client, cell.source)
    before = shown(client)
    assert [box[0][0] for box in before] == ["Button"] * len(SOURCES)
    assert [box[1] for box in before[1:]] == [
        ["Output", [["stream", f"stored {index}\n"]]] for index in range(1, len(SOURCES))
    ]
    assert before[0][1] == [
        "Output", [["stream", "stored 0\n"], ["display_data", ["application/json"]]]
    ]  # fmt: skip
    json_shown = (
        "import json\nprint(json.dumps(_later._queue[0].box.children[1].outputs[1]['data']))"
    )
    assert json.loads(run(client, json_shown)) == {"application/json": [1, 2]}
    button = run(
        client,
        "from perfmodel.present import later as _later\n"
        "b = _later._queue[0].box.children[0]\n"
        "print(b.comm.comm_id, ' '.join(b._dom_classes), b.layout.display)",
    ).split()
    assert button[1:] == [TRIGGER_CLASS, "none"]
    click(client, button[0])
    # The kernel handles its shell messages in turn: this runs once the click's has.
    assert run(client, "print(_later._ran)").strip() == "True"
    after = shown(client)
    assert after[0][1] == ["Output", [["stream", "total 42\n"]]]
    value, figure = after[1][1][1]  # as in a notebook: the figure is shown after the cell
    assert value == ["execute_result", ["text/plain"]]
    assert figure == ["display_data", ["image/png", "text/plain"]]
    assert [kind for kind, _ in after[2]] == ["Button", "IntSlider"]
    # What the output widget captured went to it (through the kernel), not to the cell.
    assert after[3] == [["Button", []], ["Output", []]]
    assert after[4] == [["Button", []]]  # the ; silenced the value
    assert after[5][1] == ["Output", [["display_data", ["text/plain"]]]]
    assert "second" in run(client, "print(_later._queue[5].box.children[1].outputs)")
    (printed, error) = after[FAILS][1][1]
    assert printed == ["stream", "before the slip\n"]
    assert error[:2] == ["error", "ZeroDivisionError"]
    # The cell after the failure keeps its stored outputs, and says it did not run.
    assert after[FAILS + 1][1:] == [
        ["Output", [["stream", f"stored {FAILS + 1}\n"]]],
        ["Output", [["stream", NOT_RUN]]],
    ]
    assert run(client, "print(_later.run_queued())").strip() == "0"  # once only
