"""Lecture notebooks follow the house shape and carry their static views."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT, read_json

LECTURES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def text(cell: dict) -> str:
    return "".join(cell["source"])


def test_lectures_are_numbered_and_named_with_a_verb():
    import re

    names = [path.stem for path in LECTURES]
    assert names[0] == "00_start_here" and len(names) >= 7
    numbers = [int(name[:2]) for name in names]
    assert numbers == sorted(set(numbers)), "one lecture per number"
    for name in names:
        assert re.fullmatch(r"\d\d_[a-z]+(_[a-z0-9]+)*", name), name
        verb = name.split("_")[1]
        assert verb in VERBS, f"{name}: lecture names start with a verb ({verb!r})"


VERBS = {
    "start", "measure", "know", "count", "draw", "choose", "find", "scale", "go", "split",
    "serve", "predict", "will",
}  # fmt: skip


@pytest.mark.parametrize("path", LECTURES, ids=lambda path: path.stem)
def test_lecture_shape(path):
    cells = read_json(path)["cells"]
    opening = text(cells[0])
    for phrase in ("What you'll do", "What you'll learn", "What you'll need"):
        assert phrase in opening, f"{path.name} opening lacks {phrase!r}"
    # It opens with the question it answers, before any theory (as the scaling book does).
    first_paragraph = opening.split("\n\n")[1]
    assert re.fullmatch(r"\*\*The question:\*\* \*[^*]+\?\*", first_paragraph.strip()), (
        f"{path.name} does not open with '**The question:** *...?*' after its title"
    )
    markdown = "\n".join(text(c) for c in cells if c["cell_type"] == "markdown")
    assert "## Summary" in markdown and "On your own" in markdown and "Further reading" in markdown
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        outputs = cell["outputs"]
        assert not [o for o in outputs if o["output_type"] == "error"], f"{path.name}: error output"
        tags = cell["metadata"].get("tags", [])
        if "nbval-check-output" in tags:
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


@pytest.mark.parametrize("path", LECTURES, ids=lambda path: path.stem)
def test_checks_read_as_part_of_the_lesson(path):
    # nbval's markers live in cell tags, not in the code a learner reads; a cell that only
    # asserts is tagged remove-cell (hidden in the book and the slides) and says what it is.
    for cell in read_json(path)["cells"]:
        source = text(cell)
        assert "NBVAL_" not in source, f"{path.name}: a marker in the source: {source[:60]}"
        if cell["cell_type"] != "code":
            continue
        code = [
            line
            for line in source.splitlines()
            if line.strip() and not line.lstrip().startswith("#")
        ]
        asserts = [line for line in code if line.lstrip().startswith("assert")]
        tags = cell["metadata"].get("tags", [])
        if asserts:
            assert len(asserts) == len(code), f"{path.name}: an assert inside a lesson cell"
            assert "remove-cell" in tags and source.startswith("# A check"), source[:60]
        else:
            assert "remove-cell" not in tags, f"{path.name}: a hidden cell that checks nothing"
