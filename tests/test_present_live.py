"""Which cells a deck runs live: the explorers, what they read, and what reads what they
compute. The oracle: running only the kept cells gives every explorer, and every kept cell,
the same values as running the whole lecture."""

from __future__ import annotations

import nbformat
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from perfmodel.present.live import freeze_outputs, live_cells


def test_an_explorer_pulls_in_the_cells_that_bind_what_it_reads_transitively():
    sources = [
        "import os\nfrom perfmodel import scaling",  # 0: binds os, scaling
        "threads = range(1, 3)",  # 1
        "strong = {p: scaling.amdahl(p) for p in threads}",  # 2: reads scaling, threads
        "print(os.getcwd())",  # 3: reads only a module: stays as stored
        None,  # 4: markdown
        "points = [(p, strong[p]) for p in threads]\nscaling_explorer(points)",  # 5
    ]
    assert live_cells(sources) == {0, 1, 2, 5}


def test_a_later_cell_that_reads_a_value_computed_live_runs_live_too():
    # Lecture 08's case: the explorer plots a measurement, and a later plot of the same
    # measurement must show the same numbers, not the build machine's.
    sources = ["m = measure()", "speed_explorer(m)", "plot(m)", "print('unrelated')"]
    assert live_cells(sources) == {0, 1, 2}


@pytest.mark.parametrize(
    ("sources", "needed"),
    [
        (["x = 1", "x += 1", "e_explorer(x)"], {0, 1}),
        (["d = {}", "d['k'] = 1", "e_explorer(d['k'])"], {0, 1}),
        (["x = 1", "if False:\n    x = 2", "e_explorer(x)"], {0, 1}),
        (["def f():\n    return later", "later = 1", "e_explorer(f())"], {0, 1}),
        (["def g():\n    global CFG\n    CFG = 1", "g()", "e_explorer(CFG)"], {0, 1}),
        (["from math import *", "e_explorer(pi)"], {0}),
        (["%%time\nx = 1", "e_explorer(x)"], {0}),
        (["try:\n    1 / 0\nexcept ZeroDivisionError as err:\n    pass", "e_explorer(err)"], {0}),
        (["x = (", "e_explorer(1)"], {0}),  # does not parse: kept, to fail as the lecture does
    ],
)
def test_what_python_can_do_to_a_name_elsewhere_keeps_the_cell_that_does_it(sources, needed):
    assert needed <= live_cells(sources)


def test_own_names_are_not_read_from_before():
    assert live_cells(["p = 1", "e_explorer([p for p in range(3)])"]) == {1}
    assert live_cells(["model = 1", "def f(model):\n    return model\ne_explorer(f(2))"]) == {1}
    assert live_cells(["n = 1", "for n in range(3):\n    pass\ne_explorer(n)"]) == {1}


def test_a_lecture_without_an_explorer_runs_nothing():
    assert live_cells(["a = 1", "print(a)", None]) == set()


STATEMENTS = ["a = 1", "b = a + 1", "a += 2", "c = [b]", "c.append(a)", "d = len(c)",
              "b = 7", "print(d)", "e_explorer(c, b)", "e_explorer(d)"]  # fmt: skip


def run(cells: list[str]) -> list[tuple[int, tuple]]:
    """Run ``cells`` in order; what every explorer call was given, by cell."""
    calls: list[tuple[int, tuple]] = []
    namespace: dict = {"print": lambda *_: None}
    for index, source in enumerate(cells):
        namespace["e_explorer"] = lambda *args, i=index: calls.append((i, repr(args)))
        exec(source, namespace)
    return calls


@given(st.lists(st.sampled_from(STATEMENTS), min_size=1, max_size=9))
def test_running_only_the_live_cells_gives_every_explorer_what_the_whole_lecture_does(cells):
    cells = ["a = 0\nb = 0\nc = []\nd = 0", *cells]  # every name bound before it is read
    whole = run(cells)
    assume(whole)  # an explorer was called
    live = live_cells(cells)
    sliced = run([c if i in live else "" for i, c in enumerate(cells)])
    assert sliced == whole


def test_freezing_keeps_outputs_drops_widget_views_and_sources():
    notebook = nbformat.v4.new_notebook()
    progress = {"output_type": "display_data", "metadata": {},
                "data": {"application/vnd.jupyter.widget-view+json": {"model_id": "m"},
                         "text/plain": "HBox()"}}  # fmt: skip
    printed = nbformat.v4.new_output("stream", name="stdout", text="42\n")
    notebook.cells = [
        nbformat.v4.new_markdown_cell("# title"),
        nbformat.v4.new_code_cell("run(); print(42)", outputs=[progress, printed]),
        nbformat.v4.new_code_cell("from m import x_explorer\nx_explorer()"),
    ]
    notebook.cells[1].execution_count = 3
    assert freeze_outputs(notebook) == 1
    frozen = notebook.cells[1]
    assert frozen.source == "" and frozen.execution_count is None
    assert frozen.outputs == [printed]
    assert notebook.cells[2].source.endswith("x_explorer()")


@pytest.mark.parametrize(("lecture", "most"), [("04", 1), ("08", 7), ("12", 1)])
def test_each_lectures_live_part_is_small(lecture, most):
    from conftest import ROOT

    path = next((ROOT / "notebooks").glob(f"{lecture}_*.ipynb"))
    notebook = nbformat.read(path, as_version=4)
    code = sum(c.cell_type == "code" for c in notebook.cells)
    live = freeze_outputs(notebook)
    assert 1 <= live <= most < code
