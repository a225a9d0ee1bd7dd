"""Which isolation level grades a batch: the strongest that runs here, never none unasked.

``perfmodel grade`` and the Gradescope runner ask :func:`choose` once, before the first
submission runs. It returns ``"bubblewrap"`` where that sandbox works, else
``"unprivileged"`` where the grader is root and a fresh uid can run this Python; otherwise
it raises :class:`RuntimeError`, saying why each level cannot run and how to fix it. Both
sandboxed levels need the :mod:`~perfmodel.grading.seccomp` allowlist (libseccomp). Level
``"none"`` (every submission runs as the grader's own user) is used only when it is asked for
by name (``--no-isolation``).

The unprivileged level copies nothing: its uid runs the Python installation, the environment
and the package where they are (the environment and its interpreter can weigh gigabytes), so
every folder above them must let other users pass (the search bit, ``o+x``).
:func:`closed_folders` names the first one that does not, on each path that uid needs.
"""

from __future__ import annotations

import functools
import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from perfmodel.grading import isolation, landlock, seccomp

__all__ = ["choose", "closed_folders", "needed_paths", "unprivileged_problem", "warn"]

_UNSAFE = (
    "or, unsafe, pass --no-isolation: every submission then runs as your own user, who can "
    "read the answer keys, the other submissions and your files (the CSV records "
    "`isolation: none`)"
)


def needed_paths() -> list[Path]:
    """The paths the unprivileged level's uid must reach, in the order they are checked.

    Returns
    -------
    list of Path
        This Python (as it was started and as its links resolve), its environment, its
        installation, the folder that holds the ``perfmodel`` package, and the temporary
        folder where each submission gets its inbox and scratch folder; each once.
    """
    executable = Path(os.path.abspath(sys.executable))
    paths = [
        executable,
        executable.resolve(),
        Path(sys.prefix),
        Path(sys.base_prefix),
        Path(isolation.package_parent()),
        Path(tempfile.gettempdir()),
    ]
    found: list[Path] = []
    for path in paths:
        for form in (Path(os.path.abspath(path)), path.resolve()):
            if form not in found:
                found.append(form)
    return found


def closed_folders(paths: Iterable[Path]) -> list[tuple[Path, Path]]:
    """For each path, the first folder on the way to it that other users may not pass.

    A user who is neither the owner nor in the group (as the unprivileged level's fresh uid
    is) passes a folder only through its "other" search bit, ``o+x``. Access control lists
    are not read; the level's own trial run catches what they refuse.

    Parameters
    ----------
    paths : iterable of Path
        Absolute files or folders; a folder itself must be passable too.

    Returns
    -------
    list of tuple of Path
        ``(folder, path)``: each closed folder once, with the first path it blocks, in the
        order of ``paths``; empty when every path can be reached.

    Examples
    --------
    >>> closed_folders([Path("/")])
    []
    """
    found: list[tuple[Path, Path]] = []
    for path in paths:
        for folder in [*reversed(path.parents), path]:
            try:
                mode = os.stat(folder).st_mode
            except OSError:
                break
            if not stat.S_ISDIR(mode):
                break
            if not mode & stat.S_IXOTH:
                if all(folder != seen for seen, _ in found):
                    found.append((folder, path))
                break
    return found


def _closed_message(closed: list[tuple[Path, Path]]) -> str:
    ways = "; ".join(
        f"{folder} (mode {stat.S_IMODE(os.stat(folder).st_mode):04o}) on the way to {path}"
        for folder, path in closed
    )
    folders = " ".join(str(folder) for folder, _ in closed)
    return (
        f"the sandbox's user (a fresh uid, not root) cannot pass through {ways}. Move what "
        f"it must reach (the Python environment, the package, TMPDIR) out of such a folder, "
        f"or let other users pass through (chmod o+x {folders}: they can then open what lies "
        f"below by name, not list it)"
    )


@functools.cache
def unprivileged_problem() -> str:
    """Why the unprivileged level cannot run here, with how to fix it; ``""`` when it can.

    Checked once: the folders on the way (:func:`closed_folders`), then a trial run of this
    Python, ``perfmodel`` and the kernel's packages as a fresh uid.

    Returns
    -------
    str
        The reason, or an empty string.
    """
    if os.geteuid() != 0:
        return (
            "the grader is not root, so it cannot run submissions as another user (grade "
            "as root to use this level)"
        )
    if isolation.tool("setpriv") is None:
        return "util-linux's `setpriv` is not installed (Debian: apt-get install util-linux)"
    closed = closed_folders(needed_paths())
    if closed:
        return _closed_message(closed)
    why = isolation.run_trial("unprivileged")
    return f"a fresh unprivileged uid could not run this Python: {why}" if why else ""


def choose(requested: str | None = None) -> str:
    """The level to grade at: ``requested``, or the strongest that runs here.

    Parameters
    ----------
    requested : str, optional
        One of :data:`perfmodel.grading.isolation.LEVELS`; ``"none"`` is always granted.
        None asks for the strongest level that runs, bubblewrap, else unprivileged.

    Returns
    -------
    str
        The level.

    Raises
    ------
    ValueError
        If ``requested`` is not a level.
    RuntimeError
        If the level asked for cannot run here, or (with None) neither isolating level
        can: the message says why each cannot and how to fix it. Nothing has run then.
    """
    if requested is not None and requested not in isolation.LEVELS:
        raise ValueError(f"`isolation` must be one of {isolation.LEVELS} (got {requested!r}).")
    if requested == "none":
        return "none"
    unfiltered = seccomp.problem()
    bubblewrap = unfiltered or isolation.probe()
    if requested == "bubblewrap" or (requested is None and not bubblewrap):
        if bubblewrap:
            raise RuntimeError(f"cannot grade in bubblewrap: {bubblewrap}; {_UNSAFE}.")
        return "bubblewrap"
    unprivileged = unfiltered or unprivileged_problem()
    if not unprivileged:
        return "unprivileged"
    if requested == "unprivileged":
        raise RuntimeError(f"cannot grade as an unprivileged user: {unprivileged}; {_UNSAFE}.")
    raise RuntimeError(
        f"no isolation level can run student code here, so nothing was graded.\n"
        f"  - bubblewrap: {bubblewrap}.\n"
        f"  - an unprivileged user: {unprivileged}.\n"
        f"Fix either one (installing bubblewrap is the stronger), {_UNSAFE}."
    )


@functools.cache
def warn(level: str) -> None:
    """Say once per process, on stderr, what a level below bubblewrap leaves open.

    Parameters
    ----------
    level : str
        The level grading runs at; nothing is said for ``"bubblewrap"``.
    """
    if level == "unprivileged":
        scoped = landlock.abi() >= landlock.SCOPED_ABI
        sockets = (
            "Landlock keeps them from the host's abstract Unix sockets and its other processes' "
            "signals"
            if scoped
            else "this kernel has no Landlock scopes (Linux 6.12+), so the host's abstract Unix "
            "sockets are in their reach"
        )
        print(
            f"\n*** WARNING: grading without bubblewrap ({isolation.probe() or 'as asked'}).\n*** "
            f"Submissions run as an unprivileged user with no namespaces: they can read "
            f"files every user may read; {sockets}. The CSV records `isolation: "
            f"unprivileged`.\n",
            file=sys.stderr,
        )
    elif level == "none":
        print(
            "\n*** WARNING: grading WITHOUT isolation (--no-isolation).\n*** Submissions run "
            "as your user and can read your files, the answer keys and each other. The CSV "
            "records `isolation: none`.\n",
            file=sys.stderr,
        )
