"""A lecture as slides: which cell starts a slide, which is a fragment, which is skipped,
and whether every slide fits a projector.

The slide types are Jupyter's own (``cell.metadata.slideshow.slide_type``), which Voilà's and
nbconvert's reveal.js templates read. :func:`annotate` sets them by the course's rules:

* the title and every ``##`` heading start a slide, a ``###`` heading a subslide;
* checks (cells tagged ``remove-cell``) and setup (code cells that show nothing) are skipped;
* a code cell is a fragment, so its result appears on the next key press, after the class
  has had a moment to predict it (slides show results, never code);
* a cell that would push its slide past the screen starts a subslide of its own instead.

:func:`slides` groups the cells back into slides and :func:`slide_height` estimates each
one's height on a :class:`Screen`, from line counts and the PNG sizes of the figures, with
the font sizes of the course's ``slides.css``. The estimates are deliberately generous: a
slide they pass fits, which the browser test confirms on a real slide deck.
"""

from __future__ import annotations

import base64
import math
import re
import struct
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "PROJECTOR",
    "SLIDE_TYPES",
    "Screen",
    "Slide",
    "annotate",
    "WIDGET_VIEW",
    "cell_height",
    "is_progress_bar",
    "is_setup",
    "overflowing",
    "slides",
    "split_at_headings",
]

#: Jupyter's slide types; ``"-"`` continues the slide (or fragment) above.
SLIDE_TYPES = ("slide", "subslide", "fragment", "-", "skip", "notes")

#: The MIME type of a live widget's output.
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@dataclass(frozen=True)
class Screen:
    """The projector a deck is laid out for, and the type sizes ``slides.css`` sets on it.

    Sizes are CSS pixels. ``figure_max_px`` is the height ``slides.css`` caps a figure at;
    ``widget_px`` is what a live explorer takes (its controls and its figure);
    ``cell_padding_px`` is each cell's own margin.

    Parameters
    ----------
    width_px : int
        The slide's width, CSS pixels (count).
    height_px : int
        The slide's height, CSS pixels (count).
    margin_px : int
        The slide's margin: subtracted twice from the width and once from the height,
        CSS pixels (count).
    cell_padding_px : int
        Each shown cell's own margin, CSS pixels (count).
    text_px : int
        The font size of prose, CSS pixels (count).
    code_px : int
        The font size of code and printed output, CSS pixels (count).
    line_spacing : float
        Line height as a multiple of the font size, dimensionless.
    figure_max_px : int
        The tallest a figure is shown, CSS pixels (count).
    widget_px : int
        The height a live explorer takes, controls and figure, CSS pixels (count).
    """

    width_px: int = 1920
    height_px: int = 1080
    margin_px: int = 120
    cell_padding_px: int = 16
    text_px: int = 30
    code_px: int = 24
    line_spacing: float = 1.4
    figure_max_px: int = 620
    widget_px: int = 900

    @property
    def usable_width_px(self) -> float:
        """Width for text: the slide less its margins and the cells' prompt gutter.

        Returns
        -------
        float
            ``width_px - 2 * margin_px - 80``, CSS pixels (count).
        """
        return self.width_px - 2 * self.margin_px - 80

    @property
    def usable_height_px(self) -> float:
        """Height a slide may fill before it overflows.

        Returns
        -------
        float
            ``height_px - margin_px``, CSS pixels (count).
        """
        return float(self.height_px - self.margin_px)

    def text_line_px(self) -> float:
        """The height of one line of prose.

        Returns
        -------
        float
            ``text_px * line_spacing``, CSS pixels (count).
        """
        return self.text_px * self.line_spacing

    def code_line_px(self) -> float:
        """The height of one line of code or printed output.

        Returns
        -------
        float
            ``code_px * line_spacing``, CSS pixels (count).
        """
        return self.code_px * self.line_spacing

    def text_columns(self) -> int:
        """Characters of prose per line (an average glyph is about half an em wide).

        Returns
        -------
        int
            Characters per line of prose, count.
        """
        return int(self.usable_width_px / (0.5 * self.text_px))

    def code_columns(self) -> int:
        """Characters of code per line (a monospace glyph is 0.6 em wide).

        Returns
        -------
        int
            Characters per line of code, count.
        """
        return int(self.usable_width_px / (0.6 * self.code_px))


#: A 1080p projector, the course's reference screen.
PROJECTOR = Screen()


@dataclass(frozen=True)
class Slide:
    """One slide (or subslide) of a deck: the cells on it, its estimated height, and its
    place in reveal.js's grid (``position``: slide, subslide; ``#/slide-h-v`` in the URL).

    Parameters
    ----------
    first_cell : int
        Index of the slide's first cell in the notebook, count.
    cells : tuple of int
        Indices of the cells shown on the slide, in order (skipped cells and notes left out).
    height_px : float
        The slide's estimated height, the sum of :func:`cell_height` over its cells,
        CSS pixels (count).
    title : str
        The first line of the slide's first cell, or ``"cell N"`` if that cell is empty.
    position : tuple of int
        ``(h, v)``: the slide's horizontal index and its subslide's vertical index in
        reveal.js's grid, both from 0.
    """

    first_cell: int
    cells: tuple[int, ...]
    height_px: float
    title: str
    position: tuple[int, int]


def _source(cell: Mapping[str, Any]) -> str:
    source = cell.get("source", "")
    return "".join(source) if isinstance(source, list) else str(source)


def _tags(cell: Mapping[str, Any]) -> list[str]:
    return list(cell.get("metadata", {}).get("tags", []))


def _data(cell: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [output.get("data", {}) for output in cell.get("outputs", [])]


def is_setup(cell: Mapping[str, Any]) -> bool:
    """Whether a cell stays off the slides: a check, or code that shows nothing.

    Parameters
    ----------
    cell : Mapping
        A notebook cell as nbformat's JSON (``cell_type``, ``metadata``, ``outputs``).

    Returns
    -------
    bool
        True for a cell tagged ``remove-cell``, or a code cell with no outputs.
    """
    if "remove-cell" in _tags(cell):
        return True
    return cell.get("cell_type") == "code" and not cell.get("outputs")


def is_progress_bar(data: Mapping[str, Any]) -> bool:
    """A tqdm bar is a widget too; its text fallback reads ``name:  40%|####  | 2/5 ...``.

    Parameters
    ----------
    data : Mapping
        One output's ``data``: its representations keyed by MIME type.

    Returns
    -------
    bool
        True when the output is a widget view whose ``text/plain`` holds ``%|``.
    """
    return WIDGET_VIEW in data and "%|" in "".join(data.get("text/plain", ""))


def split_at_headings(notebook: dict[str, Any]) -> None:
    """Give every ``##`` and ``###`` heading a markdown cell of its own, in place, so that
    a heading can start a slide. The parts keep the cell's metadata; ids gain ``-1``, ``-2``.

    Parameters
    ----------
    notebook : dict
        A notebook as nbformat's JSON; its ``cells`` list is replaced.
    """
    cells: list[dict[str, Any]] = []
    for cell in notebook["cells"]:
        if cell.get("cell_type") != "markdown":
            cells.append(cell)
            continue
        parts = re.split(r"\n(?=#{2,3} )", _source(cell))
        for number, part in enumerate(parts):
            piece = {**cell, "metadata": dict(cell.get("metadata", {})), "source": part.strip("\n")}
            if number and "id" in cell:
                piece["id"] = f"{cell['id']}-{number}"
            cells.append(piece)
    notebook["cells"] = cells


def _heading_level(cell: Mapping[str, Any]) -> int:
    if cell.get("cell_type") != "markdown":
        return 0
    match = re.match(r"(#{1,6}) ", _source(cell))
    return len(match.group(1)) if match else 0


def _wrapped(lines: Sequence[str], columns: int) -> int:
    return sum(max(1, math.ceil(len(line) / columns)) for line in lines)


def _png_height(encoded: str | list[str], screen: Screen) -> float:
    raw = base64.b64decode("".join(encoded) if isinstance(encoded, list) else encoded)
    width, height = struct.unpack(">II", raw[16:24])
    shown = float(height) * min(1.0, screen.usable_width_px / float(width))
    return min(shown, float(screen.figure_max_px))


def _markdown_height(text: str, screen: Screen) -> float:
    """Paragraphs rejoin their hard-wrapped lines, then wrap at the projector's width."""
    height = 0.0
    paragraph: list[str] = []

    def flush() -> float:
        if not paragraph:
            return 0.0
        lines = _wrapped([" ".join(paragraph)], screen.text_columns())
        paragraph.clear()
        return lines * screen.text_line_px()

    for line in text.splitlines():
        stripped = line.strip()
        heading = re.match(r"(#{1,6}) ", stripped)
        if not stripped:
            height += flush() + 0.5 * screen.text_line_px()
        elif heading:
            height += flush() + (2.4 - 0.3 * len(heading.group(1))) * screen.text_line_px()
        elif stripped.startswith("|"):
            height += flush()
            if not re.fullmatch(r"[|:\- ]+", stripped):
                height += _wrapped([stripped], screen.text_columns()) * screen.text_line_px()
        elif stripped.startswith("$$"):
            height += flush() + 2 * screen.text_line_px()
        elif re.match(r"([-*]|\d+\.) ", stripped):
            height += flush()
            paragraph.append(stripped)
        else:
            paragraph.append(stripped)
    return height + flush()


def cell_height(cell: Mapping[str, Any], screen: Screen = PROJECTOR) -> float:
    """A cell's estimated height on a slide, in CSS pixels (0 for a skipped cell).

    Parameters
    ----------
    cell : Mapping
        A notebook cell as nbformat's JSON, with its stored outputs.
    screen : Screen
        The projector whose type sizes and width the estimate uses.

    Returns
    -------
    float
        The estimated height, CSS pixels (count); 0 for a cell :func:`is_setup` skips and
        for a raw cell.
    """
    if is_setup(cell):
        return 0.0
    if cell.get("cell_type") == "markdown":
        return screen.cell_padding_px + _markdown_height(_source(cell), screen)
    if cell.get("cell_type") != "code":
        return 0.0
    code_line = screen.code_line_px()
    height = float(screen.cell_padding_px)  # the code itself is not on a slide: Voilà strips it
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if output.get("output_type") == "stream":
            text = "".join(output.get("text", ""))
            height += _wrapped(text.splitlines(), screen.code_columns()) * code_line
        elif is_progress_bar(data):
            height += code_line
        elif WIDGET_VIEW in data:
            height += screen.widget_px
        elif "image/png" in data:
            height += _png_height(data["image/png"], screen)
        elif "text/plain" in data:
            text = "".join(data["text/plain"])
            height += _wrapped(text.splitlines(), screen.code_columns()) * code_line
    return height


def annotate(notebook: Mapping[str, Any], screen: Screen = PROJECTOR) -> None:
    """Set every cell's ``metadata.slideshow.slide_type`` by the course's rules, in place.

    Parameters
    ----------
    notebook : Mapping
        A notebook as nbformat's JSON; each cell's metadata is changed in place.
    screen : Screen
        The projector a slide must fit: a cell that would overflow starts a subslide.
    """
    filled = screen.usable_height_px
    for index, cell in enumerate(notebook["cells"]):
        level = _heading_level(cell)
        height = cell_height(cell, screen)
        if is_setup(cell):
            kind = "skip"
        elif index == 0 or level in (1, 2):
            kind, filled = "slide", height
        elif level == 3 or filled + height > screen.usable_height_px:
            kind, filled = "subslide", height
        else:
            kind = "fragment" if cell.get("cell_type") == "code" else "-"
            filled += height
        cell.setdefault("metadata", {})["slideshow"] = {"slide_type": kind}


def slides(notebook: Mapping[str, Any], screen: Screen = PROJECTOR) -> list[Slide]:
    """The notebook's slides and subslides in order, from its stored slide metadata.

    A cell without slide metadata is a ValueError naming it: every lecture carries it.

    Parameters
    ----------
    notebook : Mapping
        A notebook as nbformat's JSON, its cells annotated (see :func:`annotate`).
    screen : Screen
        The projector the slides' heights are estimated for.

    Returns
    -------
    list of Slide
        The slides and subslides in deck order; skipped cells and notes belong to none.
    """
    found: list[Slide] = []
    cells: list[int] = []
    height = 0.0
    title = ""
    position = (-1, 0)

    def close() -> None:
        if cells:
            found.append(Slide(cells[0], tuple(cells), height, title, position))

    for index, cell in enumerate(notebook["cells"]):
        kind = cell.get("metadata", {}).get("slideshow", {}).get("slide_type")
        if kind not in SLIDE_TYPES:
            raise ValueError(
                f"cell {index} has no slide type (metadata.slideshow.slide_type must be one of "
                f"{', '.join(SLIDE_TYPES)}; got {kind!r}); run `perfmodel slides` on the lecture."
            )
        if kind in ("skip", "notes"):
            continue
        if kind in ("slide", "subslide") or not cells:
            close()
            cells, height = [], 0.0
            h, v = position
            position = (h + 1, 0) if kind == "slide" or h < 0 else (h, v + 1)
            title = _source(cell).splitlines()[0] if _source(cell) else f"cell {index}"
        cells.append(index)
        height += cell_height(cell, screen)
    close()
    return found


def overflowing(notebook: Mapping[str, Any], screen: Screen = PROJECTOR) -> list[Slide]:
    """The slides estimated taller than the screen; empty when the deck fits.

    Parameters
    ----------
    notebook : Mapping
        A notebook as nbformat's JSON, its cells annotated (see :func:`annotate`).
    screen : Screen
        The projector the slides must fit.

    Returns
    -------
    list of Slide
        The slides whose ``height_px`` exceeds ``screen.usable_height_px``, in deck order.
    """
    return [s for s in slides(notebook, screen) if s.height_px > screen.usable_height_px]
