"""The course as a static, offline HTML book: ``perfmodel book`` (``make book``).

Every lecture becomes a page through nbconvert's ``lab`` template, with the outputs stored
in the notebook (run by ``make notebooks``), a contents list beside it and links to the
lectures before and after. The index is the course map: each lecture's number, title, what
it teaches and what it needs. Nothing is fetched at view time: the pages load no script from
the internet, and the equations are typeset by a MathJax copied into the book
(``jupyter-server-mathjax``, the copy Jupyter's servers use).

A live explorer needs a kernel, so on a page its output becomes a note pointing at
JupyterLab; the lecture's static view of it (a figure drawn with the same function) follows
it, as in the notebook. Checks (cells tagged ``remove-cell``) and progress bars are left out.

:func:`print_pdf` prints the whole book to one PDF with the system's Chromium.
"""

from __future__ import annotations

import copy
import html
import re
import shutil
import subprocess
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from perfmodel.present.slides import WIDGET_VIEW, is_progress_bar

__all__ = ["Page", "book_notebook", "build_book", "lecture_pages", "print_pdf"]

_MARKER = ".perfmodel-book"
_STATIC = "_static"
_MATHJAX = f"{_STATIC}/mathjax/MathJax.js?config=TeX-AMS-MML_HTMLorMML-full,Safe"

LIVE_WIDGET_NOTE = (
    "<div class='book-live-widget'>A live explorer runs here in JupyterLab "
    "(<code>make lab</code>) and on the lecture's slides (<code>make demo</code>). The static "
    "view below draws the same figure at its starting settings.</div>"
)


@dataclass(frozen=True)
class Page:
    """One lecture of the book: its notebook, page name, number, title and summary lines.

    Parameters
    ----------
    notebook : pathlib.Path
        The lecture notebook.
    href : str
        The page's file name in the book: the notebook's name with ``.html``.
    number : str
        The lecture's number as its heading writes it, e.g. ``"04"``.
    title : str
        The lecture's title, from its ``# NN · Title`` heading.
    learn : str
        The *What you'll learn* paragraph (markdown), its wrapped lines joined by spaces;
        empty if the lecture has none.
    need : str
        The *What you'll need* paragraph (markdown), its wrapped lines joined by spaces;
        empty if the lecture has none.
    """

    notebook: Path
    href: str
    number: str
    title: str
    learn: str
    need: str


def _first_cell(notebook: dict[str, Any]) -> str:
    source = notebook["cells"][0]["source"]
    return "".join(source) if isinstance(source, list) else str(source)


def lecture_pages(notebooks: Path) -> list[Page]:
    """The lectures in ``notebooks`` (``NN_name.ipynb``) in course order, read from their
    opening cell (``# NN · Title`` and the *What you'll learn / need* paragraphs).

    Parameters
    ----------
    notebooks : pathlib.Path
        The folder of lecture notebooks; it must hold at least one ``NN_*.ipynb``, each
        opening with a ``# NN · Title`` heading (else ValueError).

    Returns
    -------
    list of Page
        One page per lecture, sorted by file name.
    """
    import json

    pages = []
    for path in sorted(notebooks.glob("[0-9][0-9]_*.ipynb")):
        opening = _first_cell(json.loads(path.read_text(encoding="utf-8")))
        heading = re.match(r"#\s*(\d+)\s*·\s*(.+)", opening)
        if heading is None:
            raise ValueError(
                f"{path.name} must open with a '# NN · Title' heading (got {opening[:60]!r})."
            )

        def line(label: str, text: str = opening) -> str:
            # The paragraph runs to a blank line or the next bold label; lines are hard-wrapped.
            found = re.search(
                rf"\*\*What you'll {label}:\*\*(.*?)(?:\n\s*\n|\n(?=\*\*)|\Z)", text, re.DOTALL
            )
            if found is None:
                return ""
            return " ".join(found.group(1).strip().removesuffix("<br>").split())

        pages.append(
            Page(
                notebook=path,
                href=path.with_suffix(".html").name,
                number=heading.group(1),
                title=heading.group(2).strip(),
                learn=line("learn"),
                need=line("need"),
            )
        )
    if not pages:
        raise ValueError(
            f"`notebooks` must hold lecture notebooks (NN_*.ipynb); {notebooks} has none."
        )
    return pages


def book_notebook(notebook: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``notebook`` as the book shows it: no checks, no widget state, each live
    explorer's output replaced by :data:`LIVE_WIDGET_NOTE`, progress bars left out.

    Parameters
    ----------
    notebook : dict
        A notebook as nbformat's JSON, with its stored outputs; it is not changed.

    Returns
    -------
    dict
        A deep copy without the cells tagged ``remove-cell`` and without the notebook's
        widget state metadata.
    """
    page = copy.deepcopy(notebook)
    page["metadata"].pop("widgets", None)
    cells = []
    for cell in page["cells"]:
        if "remove-cell" in cell.get("metadata", {}).get("tags", []):
            continue
        outputs = []
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW not in data:
                outputs.append(output)
            elif not is_progress_bar(data):
                outputs.append(
                    {"output_type": "display_data", "metadata": {},
                     "data": {"text/html": LIVE_WIDGET_NOTE}}
                )  # fmt: skip
        if cell.get("cell_type") == "code":
            cell["outputs"] = outputs
        cells.append(cell)
    page["cells"] = cells
    return page


def _exporter() -> Any:
    from nbconvert import HTMLExporter

    template = resources.files("perfmodel") / "data" / "book"
    exporter = HTMLExporter(  # type: ignore[no-untyped-call]
        extra_template_basedirs=[str(Path(str(template)).parent)],
        template_name="book",
        exclude_input_prompt=True,
        exclude_output_prompt=True,
    )
    return exporter


def _render(exporter: Any, page: Page, book: dict[str, Any]) -> str:
    import nbformat

    notebook = nbformat.read(page.notebook, as_version=4)  # type: ignore[no-untyped-call]
    shown = nbformat.from_dict(book_notebook(notebook))  # type: ignore[no-untyped-call]
    body, _ = exporter.from_notebook_node(
        shown, resources={"metadata": {"name": f"{page.number} · {page.title}"}, "book": book}
    )
    return str(body)


def _markdown(text: str) -> str:
    from nbconvert.filters.markdown import markdown2html_mistune

    inline = markdown2html_mistune(text).strip()
    return re.sub(r"^<p>(.*)</p>$", r"\1", inline, flags=re.S)


def _index(pages: list[Page]) -> str:
    rows = "\n".join(
        f"<tr><td>{p.number}</td><td><a href='{p.href}'>{html.escape(p.title)}</a></td>"
        f"<td>{_markdown(p.learn)}</td><td>{_markdown(p.need)}</td></tr>"
        for p in pages
    )
    contents = "\n".join(
        f"<li><a href='{p.href}'>{p.number} · {html.escape(p.title)}</a></li>" for p in pages
    )
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>perfmodel: predict how fast an ML model will run</title>
<link rel="stylesheet" href="{_STATIC}/book.css">
</head>
<body class="perfmodel-book">
<nav class="book-contents" aria-label="Contents">
<a class="book-home" href="index.html">perfmodel</a>
<ol>
{contents}
</ol>
</nav>
<main>
<h1>perfmodel</h1>
<p><strong>Predict how fast an ML model will run before you buy the hardware or rewrite the
code.</strong> Each lecture below is a notebook as it last ran, outputs included; this book
works offline. To run the lectures and drive their explorers, clone the course and type
<code>make lab</code>; to present one as slides, <code>make demo LECTURE=04</code>. Numbers
measured on a machine (lectures 06 to 12) are those of the machine that last ran the
notebook: yours will differ, which is the point of measuring.</p>
<h2>The course map</h2>
<table class="book-map">
<thead><tr>
<th>#</th><th>lecture</th><th>what you'll learn</th><th>what you'll need</th>
</tr></thead>
<tbody>
{rows}
</tbody>
</table>
</main>
</body>
</html>
"""


def _prepare(out: Path) -> None:
    """Empty ``out`` for a new build, refusing to empty a folder this module did not make."""
    if out.exists():
        if not (out / _MARKER).is_file() and any(out.iterdir()):
            raise ValueError(
                f"`out` must be a new folder or an earlier book; {out} holds other files."
            )
        shutil.rmtree(out)
    (out / _STATIC).mkdir(parents=True)
    (out / _MARKER).write_text("made by `perfmodel book`; emptied by the next build\n")


def _copy_static(out: Path) -> None:
    import jupyter_server_mathjax  # type: ignore[import-untyped]

    mathjax = Path(jupyter_server_mathjax.__file__).parent / "static"
    shutil.copytree(mathjax, out / _STATIC / "mathjax")
    css = resources.files("perfmodel") / "data" / "book" / "book.css"
    (out / _STATIC / "book.css").write_text(css.read_text(encoding="utf-8"), encoding="utf-8")


def build_book(notebooks: Path, out: Path, *, progress: bool = True) -> Path:
    """Write the book of every lecture in ``notebooks`` into ``out``; return its index.

    ``out`` is emptied first if an earlier build made it; any other non-empty folder is a
    ValueError. Also writes ``print.html``, every lecture on one page, for :func:`print_pdf`.

    Parameters
    ----------
    notebooks : pathlib.Path
        The folder of lecture notebooks (``NN_*.ipynb``), with their outputs stored.
    out : pathlib.Path
        The book's folder: new, empty, or an earlier book.
    progress : bool
        Whether to show a progress bar, one step per lecture.

    Returns
    -------
    pathlib.Path
        The book's index page, ``out / "index.html"``.
    """
    from tqdm.auto import tqdm

    pages = lecture_pages(Path(notebooks))
    out = Path(out)
    _prepare(out)
    _copy_static(out)
    exporter = _exporter()
    listing = [{"href": p.href, "number": p.number, "title": p.title} for p in pages]
    bodies = []
    for index, page in enumerate(tqdm(pages, desc="book", unit="lecture", disable=not progress)):
        book = {
            "pages": listing,
            "current": page.href,
            "previous": listing[index - 1] if index else None,
            "next": listing[index + 1] if index + 1 < len(pages) else None,
            "static": _STATIC,
            "mathjax_url": _MATHJAX,
        }
        rendered = _render(exporter, page, book)
        (out / page.href).write_text(rendered, encoding="utf-8")
        bodies.append(rendered.split("<main>", 1)[1].rsplit("</main>", 1)[0])
    # One page of every lecture for print_pdf: the same bodies (book.css hides the contents
    # and the pager when printing) under the last page's head.
    head = rendered.split("<body", 1)[0]
    sections = "".join(f"<section class='book-lecture'>{body}</section>" for body in bodies)
    (out / "print.html").write_text(
        f"{head}<body class='jp-Notebook perfmodel-book'><main>{sections}</main></body></html>",
        encoding="utf-8",
    )
    index_path = out / "index.html"
    index_path.write_text(_index(pages), encoding="utf-8")
    return index_path


def print_pdf(out: Path, chromium: str | None = None) -> Path:
    """Print the book in ``out`` (built by :func:`build_book`) to ``out/perfmodel.pdf`` with
    the system's Chromium (headless); a missing browser is a RuntimeError saying so.

    Parameters
    ----------
    out : pathlib.Path
        The folder of a built book; it must hold ``print.html`` (else ValueError).
    chromium : str or None
        The Chromium executable; None looks for ``chromium`` or ``chromium-browser`` on
        the PATH.

    Returns
    -------
    pathlib.Path
        The PDF written, ``out/perfmodel.pdf`` (an absolute path).
    """
    browser = chromium or shutil.which("chromium") or shutil.which("chromium-browser")
    if browser is None:
        raise RuntimeError(
            "printing the book needs Chromium on the PATH (Debian: apt-get install chromium)."
        )
    source = (Path(out) / "print.html").resolve()
    if not source.is_file():
        raise ValueError(f"`out` must hold a built book (no {source}); run `perfmodel book` first.")
    pdf = source.with_name("perfmodel.pdf")
    subprocess.run(
        [
            browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-pdf-header-footer",
            "--virtual-time-budget=20000", f"--print-to-pdf={pdf}", source.as_uri(),
        ],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    return pdf
