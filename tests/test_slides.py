"""Every lecture is a deck: slide metadata on every cell, checks and setup skipped, and no
slide taller than the projector. The browser test checks the estimate on a real deck."""

from __future__ import annotations

import base64
import json
import struct
import zlib

import pytest

from conftest import ROOT
from perfmodel.present import slides
from perfmodel.present.book import book_notebook, lecture_pages
from perfmodel.present.demo import find_lecture, presenter_copy

LECTURES = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def read(path):
    return json.loads(path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_every_lecture_carries_slide_metadata_by_the_course_rules(path):
    notebook = read(path)
    kinds = [c["metadata"].get("slideshow", {}).get("slide_type") for c in notebook["cells"]]
    assert all(kind in slides.SLIDE_TYPES for kind in kinds), kinds
    assert kinds[0] == "slide"
    for cell, kind in zip(notebook["cells"], kinds, strict=True):
        source = "".join(cell["source"])
        if "remove-cell" in cell["metadata"].get("tags", []):
            assert kind == "skip", f"a check is on a slide: {source[:60]!r}"
        if cell["cell_type"] == "markdown" and source.startswith("## "):
            assert kind == "slide", f"{source.splitlines()[0]!r} does not start a slide"
    assert "fragment" in kinds, "no result is revealed after a pause for a prediction"


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_no_slide_overflows_the_projector(path):
    notebook = read(path)
    tall = slides.overflowing(notebook)
    assert not tall, [(s.position, s.title, round(s.height_px)) for s in tall]


@pytest.mark.parametrize("path", LECTURES, ids=lambda p: p.stem)
def test_annotating_again_changes_nothing(path):
    notebook = read(path)
    before = [c["metadata"].get("slideshow") for c in notebook["cells"]]
    slides.split_at_headings(notebook)
    slides.annotate(notebook)
    assert [c["metadata"].get("slideshow") for c in notebook["cells"]] == before


def png(width, height):
    """A blank PNG of the given size: the estimator reads only its header."""
    raw = b"".join(b"\x00" + b"\x00" * width for _ in range(height))
    chunk = lambda kind, data: (  # noqa: E731
        struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    )
    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    body = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
    return base64.b64encode(body + chunk(b"IEND", b"")).decode()


def code(outputs):
    return {"cell_type": "code", "metadata": {}, "source": "x", "outputs": outputs}


def test_a_figure_counts_its_height_up_to_the_cap_and_code_counts_nothing():
    screen = slides.PROJECTOR
    small = code([{"output_type": "display_data", "data": {"image/png": png(800, 300)}}])
    huge = code([{"output_type": "display_data", "data": {"image/png": png(800, 3000)}}])
    assert slides.cell_height(small) == pytest.approx(screen.cell_padding_px + 300)
    assert slides.cell_height(huge) == pytest.approx(screen.cell_padding_px + screen.figure_max_px)
    lines = code([{"output_type": "stream", "name": "stdout", "text": "a\nb\nc\n"}])
    assert slides.cell_height(lines) == pytest.approx(
        screen.cell_padding_px + 3 * screen.code_line_px()
    )


def test_a_long_paragraph_wraps_at_the_projector_width():
    screen = slides.PROJECTOR
    words = "word " * (3 * screen.text_columns() // 5)  # three lines' worth
    cell = {"cell_type": "markdown", "metadata": {}, "source": words.strip()}
    assert slides.cell_height(cell) == pytest.approx(
        screen.cell_padding_px + 3 * screen.text_line_px()
    )


def test_a_slide_too_tall_for_the_screen_is_continued_on_a_subslide():
    figure = {"output_type": "display_data", "data": {"image/png": png(800, 600)}}
    notebook = {"cells": [
        {"cell_type": "markdown", "metadata": {}, "source": "# 01 · Title"},
        {"cell_type": "markdown", "metadata": {}, "source": "## A section"},
        code([figure]), code([figure]), code([]),
        {"cell_type": "markdown", "metadata": {"tags": ["remove-cell"]}, "source": "hidden"},
    ]}  # fmt: skip
    slides.annotate(notebook)
    kinds = [c["metadata"]["slideshow"]["slide_type"] for c in notebook["cells"]]
    assert kinds == ["slide", "slide", "fragment", "subslide", "skip", "skip"]
    assert [s.position for s in slides.slides(notebook)] == [(0, 0), (1, 0), (1, 1)]
    assert not slides.overflowing(notebook)


def test_a_cell_without_slide_metadata_is_named():
    notebook = {"cells": [{"cell_type": "markdown", "metadata": {}, "source": "# x"}]}
    with pytest.raises(ValueError, match="cell 0 has no slide type"):
        slides.slides(notebook)


def test_headings_get_cells_of_their_own():
    source = "text\n\n## Summary\n\n- one\n\n### On your own\n\n- two"
    notebook = {"cells": [{"cell_type": "markdown", "id": "a", "metadata": {}, "source": source}]}
    slides.split_at_headings(notebook)
    sources = [c["source"] for c in notebook["cells"]]
    assert sources == ["text", "## Summary\n\n- one", "### On your own\n\n- two"]
    assert [c["id"] for c in notebook["cells"]] == ["a", "a-1", "a-2"]


def test_the_presenter_copy_styles_the_deck_and_leaves_the_lecture_alone(tmp_path):
    lecture = find_lecture("4", ROOT / "notebooks")
    before = lecture.read_bytes()
    deck = presenter_copy(lecture, tmp_path)
    assert lecture.read_bytes() == before
    copied = read(deck)
    assert "".join(copied["cells"][0]["source"]).startswith("<style>")
    settings = json.loads((tmp_path / "voila.json").read_text())["VoilaConfiguration"]
    assert settings["resources"]["reveal"]["width"] == slides.PROJECTOR.width_px
    assert settings["resources"]["reveal"]["height"] == slides.PROJECTOR.height_px
    assert "preheat_kernel" not in settings  # it would run lecture 08's measurements twice
    # reveal.js's styles ship with the package: nothing is fetched, and the deck has them.
    assert (tmp_path / "reveal.js" / "dist" / "theme" / "white.css").is_file()
    # Only the explorer's cell runs live, once the deck is open (its source waits in its
    # metadata); every other cell keeps its stored outputs.
    original = read(lecture)
    live = [c for c in copied["cells"] if c["cell_type"] == "code" and c["source"]]
    assert ["later(" in "".join(c["source"]) for c in live] == [True]
    assert ["roofline_explorer()" in c["metadata"]["perfmodel"]["source"] for c in live] == [True]
    for mine, theirs in zip(copied["cells"][1:], original["cells"][1:], strict=True):
        if mine["cell_type"] == "code" and not mine["source"]:
            assert mine["outputs"] == theirs["outputs"]


def test_a_rerun_deck_runs_every_cell(tmp_path):
    lecture = find_lecture("4", ROOT / "notebooks")
    copied = read(presenter_copy(lecture, tmp_path, rerun=True))
    code = [c for c in copied["cells"] if c["cell_type"] == "code"]
    assert code and all(c["source"] for c in code)


def test_the_voila_template_still_has_what_the_deck_template_removes():
    # The deck template strips Voilà's CDN links by their exact text and empties its jQuery
    # block by name: if a Voilà release changes either, this fails before a talk does.
    from pathlib import Path

    import voila

    from perfmodel.present.demo import _data

    ours = (
        _data("jupyter", "voila", "templates", "perfmodel-reveal") / "index.html.j2"
    ).read_text()
    share = Path(voila.__file__).parents[4] / "share" / "jupyter" / "voila" / "templates"
    theirs = (share / "reveal" / "index.html.j2").read_text()
    cdn = "https://cdn.jsdelivr.net/npm/@fortawesome/fontawesome-free@^5/css/"
    assert f"{{%- set cdn = '{cdn}' -%}}" in ours
    for sheet in ("all.min.css", "v4-shims.min.css"):
        assert f'<link rel="stylesheet" href="{cdn}{sheet}" type="text/css" />' in theirs
    assert "{%- block html_head_js_jquery -%}" in theirs
    assert "window.MathJax" in (share / "base" / "static" / "reveal.js").read_text()


def test_the_deck_template_links_nothing_outside():
    from perfmodel.present.demo import TEMPLATE, _data

    template = _data("jupyter", "voila", "templates", TEMPLATE)
    assert json.loads((template / "conf.json").read_text()) == {"base_template": "reveal"}
    text = (template / "index.html.j2").read_text()
    assert "https://" in text  # only inside the replace() that removes Voilà's CDN links
    assert text.count("https://") == 1 and "replace(" in text


def test_an_unknown_lecture_lists_the_ones_there_are():
    with pytest.raises(ValueError, match=r"one of 00, 01, .*got '42'"):
        find_lecture("42", ROOT / "notebooks")
    with pytest.raises(TypeError, match="`lecture` must be a string"):
        find_lecture(4, ROOT / "notebooks")


def test_the_book_drops_checks_and_widget_state_and_notes_each_live_explorer():
    notebook = read(ROOT / "notebooks" / "04_draw_the_roofline.ipynb")
    page = book_notebook(notebook)
    assert "widgets" not in page["metadata"]
    assert not [c for c in page["cells"] if "remove-cell" in c["metadata"].get("tags", [])]
    datas = [o.get("data", {}) for c in page["cells"] for o in c.get("outputs", [])]
    assert not [d for d in datas if "application/vnd.jupyter.widget-view+json" in d]
    assert sum("book-live-widget" in d.get("text/html", "") for d in datas) == 1
    assert "widgets" in notebook["metadata"]  # the lecture itself is not changed


def test_the_course_map_reads_every_lecture_in_order():
    pages = lecture_pages(ROOT / "notebooks")
    assert [p.number for p in pages] == [p.name[:2] for p in LECTURES]
    assert all(p.title and p.learn and p.need for p in pages)


def test_the_course_map_reads_each_wrapped_learn_and_need_paragraph_whole():
    pages = lecture_pages(ROOT / "notebooks")
    for page in pages:
        opening = "".join(
            json.loads(page.notebook.read_text(encoding="utf-8"))["cells"][0]["source"]
        )
        learn_on = opening.split("**What you'll learn:**", 1)[1]
        learn, need_on = learn_on.split("**What you'll need:**", 1)
        need = need_on.split("\n\n", 1)[0]
        for label, read, paragraph in (("learn", page.learn, learn), ("need", page.need, need)):
            whole = " ".join(paragraph.strip().removesuffix("<br>").split())
            assert read == whole, f"{page.notebook.name}: {label}"
            assert read.endswith((".", "!", "?")), f"{page.notebook.name}: {label} is cut short"
    assert pages[4].learn.endswith(
        "why small matmuls are bandwidth-bound, and which optimisations fit which side."
    )
