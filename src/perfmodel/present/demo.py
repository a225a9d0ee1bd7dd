"""Present a lecture live: reveal.js slides through Voilà, with the kernel running.

:func:`presenter_copy` writes the deck: a copy of the lecture (the learners' notebook is
never touched) with the course's projector styles (``slides.css``: type that reads from the
back row, controls large enough for a mouse on a podium) and Voilà's settings beside it.
:func:`serve` runs it with Voilà's ``reveal`` template: Voilà executes the lecture on a
kernel, hides the code, lays the cells out by their slide metadata, and every explorer on a
slide is live.

Why Voilà and not jupyterlab-rise: RISE's presenter app (0.43) is built against JupyterLab
4.3 and does not load ipywidgets 8's manager, so its explorers show as text (upstream issues
jupyterlab-contrib/rise#119 and #126). reveal.js itself comes from the npm registry once,
like any other dependency (:func:`fetch_reveal`), so a talk needs no network.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import sys
import tarfile
import urllib.request
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

__all__ = [
    "REVEAL_SETTINGS",
    "fetch_reveal",
    "find_lecture",
    "presenter_copy",
    "reveal_folder",
    "serve",
]

#: reveal.js as nbconvert's and Voilà's reveal templates expect it, pinned by its hash.
REVEAL_VERSION = "4.0.2"
REVEAL_URL = f"https://registry.npmjs.org/reveal.js/-/reveal.js-{REVEAL_VERSION}.tgz"
REVEAL_SHA256 = "0c234d5bfe539606c1af4bcc031f0d21ed99e264d90b7859abad34f7e3a0c587"

#: reveal.js settings for every deck: laid out for a 1080p projector (smaller screens scale
#: it down whole), the ``white`` theme, no transition to wait for, and a scroll bar as the
#: safety net for a slide that overflows.
REVEAL_SETTINGS: dict[str, Any] = {
    "width": 1920,
    "height": 1080,
    "theme": "white",
    "transition": "none",
    "scroll": True,
    "number": "c/t",
}


def reveal_folder() -> Path:
    """Where this environment keeps reveal.js: ``<prefix>/share/perfmodel/reveal.js``.

    Returns
    -------
    pathlib.Path
        ``sys.prefix/share/perfmodel/reveal.js-<version>``; it may not exist yet.
    """
    return Path(sys.prefix) / "share" / "perfmodel" / f"reveal.js-{REVEAL_VERSION}"


def fetch_reveal(folder: Path | None = None) -> Path:
    """Download reveal.js from the npm registry into ``folder`` (once); return the folder.

    The tarball's SHA-256 is checked before anything is unpacked.

    Parameters
    ----------
    folder : pathlib.Path or None
        Where reveal.js goes; None for :func:`reveal_folder`. A folder that already holds
        ``dist/reveal.js`` is returned as it is, without a download.

    Returns
    -------
    pathlib.Path
        The folder, holding reveal.js's ``dist/`` and ``plugin/``.
    """
    folder = Path(folder) if folder is not None else reveal_folder()
    if (folder / "dist" / "reveal.js").is_file():
        return folder
    with urllib.request.urlopen(REVEAL_URL, timeout=60) as reply:
        payload = reply.read()
    digest = hashlib.sha256(payload).hexdigest()
    if digest != REVEAL_SHA256:
        raise RuntimeError(f"reveal.js from {REVEAL_URL} has SHA-256 {digest}, not {REVEAL_SHA256}")
    staging = folder.with_name(folder.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(payload), mode="r:gz") as archive:
        wanted = [
            m
            for m in archive.getmembers()
            if m.name.startswith(("package/dist/", "package/plugin/"))
        ]
        for member in wanted:
            member.name = member.name.removeprefix("package/")
        archive.extractall(staging, members=wanted, filter="data")
    shutil.rmtree(folder, ignore_errors=True)
    staging.rename(folder)
    return folder


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


def presenter_copy(lecture: Path, folder: Path, reveal: Path | None = None) -> Path:
    """Write ``lecture``'s deck into ``folder``; return the deck's path.

    The deck is the lecture with the course's ``slides.css`` at the top of its title slide;
    beside it go ``voila.json`` (reveal.js settings, and reveal.js served from the deck's
    folder) and a copy of reveal.js (from ``reveal``, default :func:`reveal_folder`; Voilà
    serves no file outside the deck's folder, a link included).

    Parameters
    ----------
    lecture : pathlib.Path
        The lecture notebook; it is read, never written.
    folder : pathlib.Path
        Where the deck goes; made if missing.
    reveal : pathlib.Path or None
        A folder holding reveal.js (``dist/reveal.js``); None for :func:`reveal_folder`.
        If it holds no reveal.js, none is copied (:func:`serve` fetches it).

    Returns
    -------
    pathlib.Path
        The deck: ``folder / lecture.name``.
    """
    import nbformat

    notebook = nbformat.read(lecture, as_version=4)  # type: ignore[no-untyped-call]
    css = (resources.files("perfmodel") / "data" / "slides.css").read_text(encoding="utf-8")
    title = notebook.cells[0]
    title.source = f"<style>\n{css}</style>\n\n{title.source}"
    folder.mkdir(parents=True, exist_ok=True)
    deck = folder / lecture.name
    nbformat.write(notebook, deck)  # type: ignore[no-untyped-call]
    settings = {
        "VoilaConfiguration": {
            "resources": {"reveal": {**REVEAL_SETTINGS, "url_prefix": "voila/files/reveal.js"}},
            "file_allowlist": [r"reveal\.js/.*"],
        }
    }
    (folder / "voila.json").write_text(json.dumps(settings, indent=1), encoding="utf-8")
    source = Path(reveal) if reveal is not None else reveal_folder()
    if (source / "dist" / "reveal.js").is_file():
        shutil.copytree(source, folder / "reveal.js", dirs_exist_ok=True)
    return deck


def serve(deck: Path, *, port: int = 8866, open_browser: bool = True) -> NoReturn:
    """Become Voilà's reveal template server on ``deck`` (written by :func:`presenter_copy`).

    This process is replaced by Voilà (``os.execv``), so whatever stops it (Ctrl-C, or a
    SIGTERM from a test or a process manager) reaches the server itself, which then shuts its
    kernels down: a child server would outlive a terminated parent, kernel and all. reveal.js
    is fetched first if this environment does not have it yet.

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
    if not (deck.parent / "reveal.js" / "dist" / "reveal.js").is_file():
        print("fetching reveal.js from the npm registry (once)...", file=sys.stderr)
        shutil.copytree(fetch_reveal(), deck.parent / "reveal.js", dirs_exist_ok=True)
    command = [
        sys.executable, "-m", "voila", deck.name, "--template=reveal",
        f"--port={port}", *([] if open_browser else ["--no-browser"]),
    ]  # fmt: skip
    os.chdir(deck.parent)
    os.execv(sys.executable, command)
