"""Lecture notebooks follow the house shape and carry their static views."""

from __future__ import annotations

import pytest
from conftest import ROOT, read_json

LECTURES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def text(cell: dict) -> str:
    return "".join(cell["source"])


def test_lectures_are_numbered_and_named_with_a_verb():
    names = [path.stem for path in LECTURES]
    assert names[:6] == [
        "00_start_here", "01_measure_what_matters", "02_know_your_hardware",
        "03_count_flops_and_bytes", "04_draw_the_roofline", "05_choose_a_minibatch_size",
    ]  # fmt: skip


@pytest.mark.parametrize("path", LECTURES, ids=lambda path: path.stem)
def test_lecture_shape(path):
    cells = read_json(path)["cells"]
    opening = text(cells[0])
    for phrase in ("What you'll do", "What you'll learn", "What you'll need"):
        assert phrase in opening, f"{path.name} opening lacks {phrase!r}"
    markdown = "\n".join(text(c) for c in cells if c["cell_type"] == "markdown")
    assert "## Summary" in markdown and "On your own" in markdown and "Further reading" in markdown
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        outputs = cell["outputs"]
        assert not [o for o in outputs if o["output_type"] == "error"], f"{path.name}: error output"
        if "NBVAL_CHECK_OUTPUT" in text(cell):
            assert outputs, f"{path.name}: a checked cell has no stored output"
        if "_explorer(" in text(cell):
            assert any("widget-view+json" in str(o.get("data", {})) for o in outputs)


@pytest.mark.parametrize("path", LECTURES[2:], ids=lambda path: path.stem)
def test_every_static_view_stores_its_figure(path):
    for cell in read_json(path)["cells"]:
        source = text(cell)
        if cell["cell_type"] == "code" and any(k in source for k in ("_view(", "_plot(", "_bars(")):
            if "import" in source.splitlines()[0] and "_explorer(" in source:
                continue
            assert any("image/png" in o.get("data", {}) for o in cell["outputs"]), source[:60]
