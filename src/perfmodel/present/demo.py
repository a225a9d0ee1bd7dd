"""Present a lecture live: reveal.js slides through Voilà, with the kernel running.

:func:`presenter_copy` writes the deck: a copy of the lecture (the learners' notebook is
never touched) with the course's projector styles (``slides.css``: type that reads from the
back row, controls large enough for a mouse on a podium) and Voilà's settings beside it.
:func:`serve` runs it with the course's ``perfmodel-reveal`` template (Voilà's ``reveal``
template without its CDN links): Voilà executes the lecture on a kernel, hides the code,
lays the cells out by their slide metadata, and every explorer on a slide is live.

Nothing is fetched at run time. reveal.js's stylesheet, theme and fonts ship with the
package (``perfmodel/data/reveal``, MIT and OFL licences beside them), and Voilà loads only
the widget manager among the JupyterLab extensions installed, so that another extension
built for a different JupyterLab cannot fail in the presenter's console.

A deck opens in the time its kernel takes to start (about 2 s): its live part (the explorers
and what they read) runs just after, while the presenter talks over the title slide, and
until each live cell has run its slide shows the outputs the lecture stored
(:mod:`perfmodel.present.later`).

Why Voilà and not jupyterlab-rise: RISE's presenter app (0.43) is built against JupyterLab
4.3 and does not load ipywidgets 8's manager, so its explorers show as text (upstream issues
jupyterlab-contrib/rise#119 and #126).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

__all__ = [
    "NO_DELAY_CONNECTION",
    "REVEAL_FILES",
    "REVEAL_SETTINGS",
    "TEMPLATE",
    "WIDGET_EXTENSIONS",
    "find_lecture",
    "presenter_copy",
    "projector_styles",
    "serve",
    "voila_command",
    "write_settings",
]

#: :class:`perfmodel.present.websocket.NoDelayKernelConnection` by its import path (named,
#: not imported: building a command needs no Jupyter server).
NO_DELAY_CONNECTION = "perfmodel.present.websocket.NoDelayKernelConnection"

#: reveal.js settings for every deck: laid out for a 1080p projector (smaller screens scale
#: it down whole), the ``white`` theme and no transition to wait for. Voilà's own scroll
#: option is off (it needs jQuery from a CDN); ``slides.css`` gives a slide that overflows a
#: scroll bar instead.
REVEAL_SETTINGS: dict[str, Any] = {
    "width": 1920,
    "height": 1080,
    "theme": "white",
    "transition": "none",
    "scroll": False,
    "number": "c/t",
}

#: The only files a deck's server hands out: reveal.js's styles and fonts, by names that
#: cannot climb out of their folder (no ``..``, no hidden file).
REVEAL_FILES = r"reveal\.js/dist/(?:[\w-]+/)*[\w-]+(?:\.[\w-]+)*\.(?:css|woff)"

#: The Voilà template every deck is served with (``perfmodel/data/jupyter/voila/templates``).
TEMPLATE = "perfmodel-reveal"

#: The only JupyterLab extensions a deck loads: ipywidgets' controls and Voilà's manager for
#: ipywidgets 8, which the explorers need.
WIDGET_EXTENSIONS = ["@jupyter-widgets/jupyterlab-manager", "@voila-dashboards/widgets-manager8"]


def _data(*parts: str) -> Path:
    """A folder of the package's data, as a real path (the package is installed unzipped)."""
    return Path(str(resources.files("perfmodel").joinpath("data", *parts)))


def find_lecture(lecture: str, notebooks: Path) -> Path:
    """The lecture notebook for ``"04"``, ``"4"``, a notebook's name or its path.

    Parameters
    ----------
    lecture : str
        A lecture number (``"4"`` or ``"04"``), the start of a notebook's name
        (``"04_draw"``), or the path of an existing ``.ipynb`` file.
    notebooks : pathlib.Path
        The folder searched for ``NN_*.ipynb`` lectures.

    Returns
    -------
    pathlib.Path
        The given path if it is an existing notebook, else the first notebook in
        ``notebooks`` whose name starts with the lecture's prefix.

    Examples
    --------
    >>> find_lecture("4", Path("notebooks")).name
    '04_draw_the_roofline.ipynb'
    """
    if not isinstance(lecture, str):
        raise TypeError(f"`lecture` must be a string such as '04' (got {type(lecture).__name__}).")
    path = Path(lecture)
    if path.suffix == ".ipynb" and path.is_file():
        return path
    prefix = f"{int(lecture):02d}_" if lecture.isdigit() else lecture
    found = sorted(notebooks.glob(f"{prefix}*.ipynb"))
    if not found:
        known = ", ".join(p.name[:2] for p in sorted(notebooks.glob("[0-9][0-9]_*.ipynb")))
        raise ValueError(
            f"`lecture` must name a lecture in {notebooks}/ (one of {known}); got {lecture!r}."
        )
    return found[0]


def projector_styles() -> str:
    """The course's ``slides.css`` as a ``<style>`` block, to open a deck's first cell.

    Returns
    -------
    str
        ``<style>`` with the styles, ``</style>`` and a blank line.
    """
    css = (_data() / "slides.css").read_text(encoding="utf-8")
    return f"<style>\n{css}</style>\n\n"


def presenter_copy(lecture: Path, folder: Path, *, rerun: bool = False) -> Path:
    """Write ``lecture``'s deck into ``folder``; return the deck's path.

    The deck is the lecture with the course's ``slides.css`` at the top of its title slide,
    and, unless ``rerun``, only its explorers and what they read left to run (the other
    cells show the outputs the lecture stored; see :mod:`perfmodel.present.live`), and those
    run once the deck has opened (:mod:`perfmodel.present.later`). Beside it
    go ``voila.json`` (reveal.js settings, the widget manager as the only
    extension, a pre-heated kernel) and the package's copy of reveal.js's styles (Voilà
    serves no file outside the deck's folder, a link included).

    Parameters
    ----------
    lecture : pathlib.Path
        The lecture notebook; it is read, never written.
    folder : pathlib.Path
        Where the deck goes; made if missing.
    rerun : bool
        Run every cell live, as the learners' notebook does (measurements of this machine
        included), and all before the deck opens, which then takes as long as the lecture.

    Returns
    -------
    pathlib.Path
        The deck: ``folder / lecture.name``.
    """
    import nbformat

    from perfmodel.present.later import defer_live_cells
    from perfmodel.present.live import freeze_outputs

    notebook = nbformat.read(lecture, as_version=4)  # type: ignore[no-untyped-call]
    deck = folder / lecture.name
    if not rerun:
        freeze_outputs(notebook)
        defer_live_cells(notebook, deck.name)
    title = notebook.cells[0]
    title.source = projector_styles() + title.source
    folder.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, deck)  # type: ignore[no-untyped-call]
    write_settings(folder)
    return deck


def write_settings(folder: Path) -> None:
    """Write Voilà's settings for decks served from ``folder``, with reveal.js's styles.

    The settings (``voila.json``, which Voilà reads from the folder it starts in): reveal.js
    laid out for the projector and served from the folder, and the widget manager as the
    only JupyterLab extension. No kernel is pre-heated: a browser that connects before it is
    ready (``make demo`` opens one at once) gets a second kernel running the same cells, and
    Voilà refills its pool behind every page, so lecture 08's live measurements would run
    twice, beside each other and beside the talk.

    Parameters
    ----------
    folder : pathlib.Path
        The folder Voilà will serve and start in; it must exist.
    """
    settings = {
        "VoilaConfiguration": {
            "resources": {"reveal": {**REVEAL_SETTINGS, "url_prefix": "/voila/files/reveal.js"}},
            "file_allowlist": [REVEAL_FILES],
            "extension_allowlist": WIDGET_EXTENSIONS,
        }
    }
    (folder / "voila.json").write_text(json.dumps(settings, indent=1), encoding="utf-8")
    shutil.copytree(_data("reveal"), folder / "reveal.js", dirs_exist_ok=True)


def voila_command(
    target: str, *, port: int, open_browser: bool
) -> tuple[list[str], dict[str, str]]:
    """The command that serves ``target`` (a deck, or a folder of them) with the course's
    template, and the environment it needs (``JUPYTER_PATH`` finds the template). Its kernel
    websockets send each message at once (:mod:`perfmodel.present.websocket`).

    Parameters
    ----------
    target : str
        A notebook or a folder, relative to the folder Voilà starts in.
    port : int
        The TCP port Voilà listens on.
    open_browser : bool
        Whether Voilà opens a browser.

    Returns
    -------
    tuple of (list of str, dict of str to str)
        The argument vector (this Python running ``-m voila``) and the environment.
    """
    command = [
        sys.executable, "-m", "voila", target, f"--template={TEMPLATE}",
        f"--port={port}", "--port_retries=0",  # a busy port fails: the URL printed stays true
        # the kernel's answer to a move reaches the page at once, not 40 ms late (.websocket)
        f"--Voila.kernel_websocket_connection_class={NO_DELAY_CONNECTION}",
        *([] if open_browser else ["--no-browser"]),
    ]  # fmt: skip
    paths = [str(_data("jupyter")), *filter(None, [os.environ.get("JUPYTER_PATH")])]
    return command, {**os.environ, "JUPYTER_PATH": os.pathsep.join(paths)}


def serve(deck: Path, *, port: int = 8866, open_browser: bool = True) -> NoReturn:
    """Become Voilà's server for ``deck`` (written by :func:`presenter_copy`).

    This process is replaced by Voilà (``os.execve``), so whatever stops it reaches the server
    itself: a child server would outlive a terminated parent, kernel and all. Ctrl-C (SIGINT)
    shuts the kernels down; after a SIGTERM they see their parent gone and exit on their own.
    The course's template is found through ``JUPYTER_PATH``.

    Parameters
    ----------
    deck : pathlib.Path
        The deck notebook; Voilà runs in its folder.
    port : int
        The TCP port Voilà listens on.
    open_browser : bool
        Whether Voilà opens the deck in a browser (False passes ``--no-browser``).
    """
    from perfmodel._extras import require

    require("course", "voila", feature="`perfmodel demo`")
    command, environment = voila_command(deck.name, port=port, open_browser=open_browser)
    os.chdir(deck.parent)
    os.execve(sys.executable, command, environment)
