"""What a submission must never read: the grader's own output, and the checkout's keys.

Below bubblewrap, at the ``"unprivileged"`` level, a submission runs as a fresh uid that can
read every file whose "other" bits let it (and whose folders it may pass). So:

* the grade sheet, its ``.partial`` file and the feedback files are written for the grader
  alone (files ``0600``, the feedback folder ``0700``) at every level: :func:`opener`,
  :func:`write_text`;
* ``perfmodel grade`` refuses to start at that level while other users could read the
  course checkout's git history (which holds every master) or its ``dist/`` folder (the
  autograder zips, with the hidden tests): :func:`exposed_checkout`.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

__all__ = ["exposed", "exposed_checkout", "open_text", "opener", "write_text"]

#: What a course checkout holds that gives the answers away, folder by folder.
CHECKOUT_SECRETS = (".git", "dist")


def opener(path: str, flags: int) -> int:
    """Open ``path`` for :func:`open` as a file only its owner may read or write (``0600``).

    An existing file keeps its contents (``flags`` decide) but loses every other bit.

    Parameters
    ----------
    path : str
        The file.
    flags : int
        The flags :func:`open` asks for.

    Returns
    -------
    int
        The open file descriptor.
    """
    fd = os.open(path, flags, 0o600)
    try:
        os.fchmod(fd, 0o600)
    except OSError:
        os.close(fd)
        raise
    return fd


def open_text(path: Path) -> TextIO:
    """Open ``path`` to write text (UTF-8, CSV newlines), a file only its owner may read.

    Parameters
    ----------
    path : Path
        The file, created or emptied.

    Returns
    -------
    TextIO
        The open file; the caller closes it.
    """
    return open(path, "w", newline="", encoding="utf-8", opener=opener)  # noqa: SIM115


def write_text(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path``, a file only its owner may read or write.

    Parameters
    ----------
    path : Path
        The file, created or replaced.
    text : str
        Its whole contents.
    """
    with open(path, "w", encoding="utf-8", opener=opener) as handle:
        handle.write(text)


def _passable(folder: Path) -> bool:
    """Whether every folder above ``folder`` lets other users pass (``o+x``)."""
    try:
        return all(os.stat(parent).st_mode & stat.S_IXOTH for parent in folder.parents)
    except OSError:
        return False


def exposed(top: Path) -> Path | None:
    """The first file or folder in ``top`` (itself included) that other users could read.

    Another user reads a file, or lists a folder, when its "other" read bit is set and every
    folder above it lets others pass; a folder they may not pass hides all below it.
    Symbolic links are not followed. Access control lists are not read.

    Parameters
    ----------
    top : Path
        A file or folder (a link to one is followed); nothing is exposed when it does not
        exist.

    Returns
    -------
    Path or None
        The first readable path found (``top`` first, then top-down in name order), or None.

    Examples
    --------
    >>> exposed(Path("/no/such/folder")) is None
    True
    """
    top = Path(os.path.realpath(top))
    if not _passable(top):
        return None
    try:
        info = os.lstat(top)
    except OSError:
        return None
    if info.st_mode & stat.S_IROTH and not stat.S_ISLNK(info.st_mode):
        return top
    if not stat.S_ISDIR(info.st_mode) or not info.st_mode & stat.S_IXOTH:
        return None
    for folder, folders, files in os.walk(top):
        here = Path(folder)
        folders.sort()
        keep = []
        for name in [*sorted(files), *folders]:
            try:
                mode = os.lstat(here / name).st_mode
            except OSError:
                continue
            if stat.S_ISLNK(mode):
                continue
            if mode & stat.S_IROTH:
                return here / name
            if stat.S_ISDIR(mode) and mode & stat.S_IXOTH:
                keep.append(name)
        folders[:] = sorted(keep)
    return None


def exposed_checkout(checkouts: Iterable[Path]) -> tuple[Path, Path] | None:
    """What other users could read of the answers in course checkouts, and what to close.

    Parameters
    ----------
    checkouts : iterable of Path
        Course folders (the folder above the package's ``src``, the ``--exercises``
        folder's parent): each one's ``.git`` and ``dist`` folders and the autograder zips
        beside them are looked at.

    Returns
    -------
    tuple of Path, or None
        ``(readable, close)``: the first readable path and the folder or file to make
        unreadable (``chmod -R o-rwx close``); None when nothing can be read.
    """
    seen: set[Path] = set()
    for checkout in checkouts:
        checkout = Path(os.path.abspath(checkout))
        if checkout in seen or not checkout.is_dir():
            continue
        seen.add(checkout)
        tops = [checkout / name for name in CHECKOUT_SECRETS]
        tops += sorted(path for path in checkout.glob("*.zip") if not path.is_symlink())
        for top in tops:
            found = exposed(top)
            if found is not None:
                return found, top
    return None
