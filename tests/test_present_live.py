"""Which cells a deck runs live: the explorers and the cells whose names they read."""

from __future__ import annotations

import nbformat
import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfmodel.present.live import freeze_outputs, live_cells


def test_an_explorer_pulls_in_the_cells_that_bind_what_it_reads_transitively():
    sources = [
        "import os\nfrom perfmodel import scaling",  # 0: binds os, scaling
        "threads = range(1, 3)",  # 1
        "strong = {p: scaling.amdahl(p) for p in threads}",  # 2: reads scaling, threads
        "print(os.getcwd())",  # 3: nobody needs it
        None,  # 4: markdown
        "points = [(p, strong[p]) for p in threads]\nscaling_explorer(points)",  # 5
    ]
    assert live_cells(sources) == {0, 1, 2, 5}


def test_the_latest_binding_before_the_reader_is_the_one_kept():
    sources = ["x = 1", "x = 2", "show_explorer(x)", "x = 3"]
    assert live_cells(sources) == {1, 2}


def test_magics_and_builtins_do_not_confuse_the_slice():
    sources = [
        "%matplotlib inline\nimport numpy as np",
        "!echo hi",
        "len_explorer(len(np.ones(3)))",
    ]
    assert live_cells(sources) == {0, 2}


def test_a_lecture_without_an_explorer_runs_nothing():
    assert live_cells(["a = 1", "print(a)", None]) == set()


@given(st.lists(st.sampled_from(["a = 1", "b = a", "c = b + a", "print(c)", None]), max_size=8))
def test_every_name_a_live_cell_reads_is_bound_by_a_live_cell_before_it(cells):
    sources = [*cells, "c_explorer(c) if 'c' in dir() else None"]
    live = live_cells(sources)
    assert len(sources) - 1 in live
    binds = {"a = 1": "a", "b = a": "b", "c = b + a": "c"}
    reads = {"b = a": {"a"}, "c = b + a": {"a", "b"}, sources[-1]: {"c"}}
    for index in live:
        for name in reads.get(sources[index], set()):
            bound_before = [j for j in range(index) if binds.get(sources[j] or "") == name]
            if bound_before:  # the last binding before the reader runs live
                assert bound_before[-1] in live


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


@pytest.mark.parametrize("lecture", ["04", "08", "12"])
def test_each_lectures_live_part_is_small(lecture):
    from conftest import ROOT

    path = next((ROOT / "notebooks").glob(f"{lecture}_*.ipynb"))
    notebook = nbformat.read(path, as_version=4)
    code = sum(c.cell_type == "code" for c in notebook.cells)
    live = freeze_outputs(notebook)
    assert 1 <= live <= 3 < code
