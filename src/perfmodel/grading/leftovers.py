"""What a sandbox's uid leaves behind at the unprivileged level, found and removed.

Without namespaces, a submission's fresh uid can leave processes running and files in every
folder any user may write to. :func:`remove_uid` kills the one and deletes the other after
its row. With no groups, that uid can create a file only in a folder every user may write to
(:func:`shared_folders`: ``/tmp``, ``/var/tmp``, ``/dev/shm`` and any nested one, such as
``/tmp/.X11-unix``) or in a folder it made there, which goes whole. Keyrings need no cleaning:
the :mod:`~perfmodel.grading.seccomp` allowlist refuses ``add_key`` and ``keyctl``.
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import signal
import subprocess
import tempfile
import time
from pathlib import Path

import psutil

from perfmodel.grading.isolation import tool

__all__ = ["remove_tree", "remove_uid", "shared_folders"]


def remove_uid(uid: int) -> None:
    """Kill every process of ``uid`` and delete every file it owns in a shared folder.

    The kill is ``kill(-1, SIGKILL)`` made as ``uid`` itself (``setpriv``, then ``kill``):
    the kernel signals every process of that uid in one pass, under the lock that ``fork``
    takes, so no process forked meanwhile escapes it, as it could escape a list taken first
    and killed one by one.

    Parameters
    ----------
    uid : int
        The sandbox's own uid (never a real user's: everything it owns goes).
    """
    setpriv, kill = tool("setpriv"), tool("kill")
    for _ in range(5):
        if not _processes_of(uid):
            break
        if setpriv and kill:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run(
                    [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--",
                     kill, "-KILL", "-1"],
                    stdin=subprocess.DEVNULL, capture_output=True, timeout=30, check=False,
                )  # fmt: skip
        for pid in _processes_of(uid):  # without the tools, one by one
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)
    for folder in shared_folders():
        _remove_owned(Path(folder), uid)


def _processes_of(uid: int) -> list[int]:
    """Processes whose real uid is ``uid`` (psutil)."""
    return [
        process.pid
        for process in psutil.process_iter(["uids"])
        if process.info["uids"] is not None and process.info["uids"].real == uid
    ]


def remove_tree(path: Path) -> None:
    """Delete ``path`` however deep it goes (``rm -rf`` walks without recursion limits).

    Nothing is raised: what ``rm`` cannot delete is left to :func:`shutil.rmtree`, errors
    ignored.

    Parameters
    ----------
    path : Path
        The file or folder; a symbolic link is removed, not followed. Nothing happens when
        it does not exist.
    """
    if not os.path.lexists(path):
        return
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        subprocess.run(
            [tool("rm") or "rm", "-rf", "--one-file-system", "--", str(path)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=300,
            check=False,
        )
    if os.path.lexists(path):
        with contextlib.suppress(OSError, RecursionError):
            shutil.rmtree(path, ignore_errors=True)


#: File systems with nothing a user can leave a file in, or no files at all.
_VIRTUAL = frozenset({
    "proc", "sysfs", "cgroup", "cgroup2", "devpts", "mqueue", "debugfs", "tracefs",
    "securityfs", "pstore", "bpf", "configfs", "fusectl", "binfmt_misc", "autofs", "hugetlbfs",
    "efivarfs", "nsfs", "rpc_pipefs", "selinuxfs",
})  # fmt: skip


@functools.cache
def shared_folders() -> tuple[str, ...]:
    """Every folder any user may write to, on every writable file system (found once).

    Each writable mount is searched on its own file system with ``find``, which does not
    descend into a folder other users may not pass (the sandbox's uid could not reach
    below it either). Access control lists are not read.

    Returns
    -------
    tuple of str
        The folders, sorted, with the temporary folder this Python uses.
    """
    mounts = []
    with contextlib.suppress(OSError), open("/proc/self/mounts", encoding="utf-8") as table:
        for line in table:
            fields = line.split()
            if len(fields) >= 4 and fields[2] not in _VIRTUAL and "rw" in fields[3].split(","):
                mounts.append(fields[1].replace("\\040", " "))
    found = {tempfile.gettempdir(), "/tmp", "/var/tmp", "/dev/shm"}
    find = tool("find") or "find"
    for mount in sorted(set(mounts)) or ["/"]:
        with contextlib.suppress(OSError, subprocess.SubprocessError):
            listing = subprocess.run(
                [find, mount, "-xdev", "(", "-type", "d", "!", "-perm", "-0001", "-prune", ")",
                 "-o", "(", "-type", "d", "-perm", "-0002", "-print0", ")"],
                stdin=subprocess.DEVNULL, capture_output=True, timeout=300, check=False,
            )  # fmt: skip
            found.update(os.fsdecode(path) for path in listing.stdout.split(b"\0") if path)
    return tuple(sorted(path for path in found if os.path.isdir(path)))


def _remove_owned(folder: Path, uid: int) -> None:
    """Delete every entry directly in ``folder`` that ``uid`` owns (folders with all inside)."""
    if not folder.is_dir():
        return
    with contextlib.suppress(OSError), os.scandir(folder) as entries:
        for entry in entries:
            with contextlib.suppress(OSError):
                if entry.stat(follow_symlinks=False).st_uid != uid:
                    continue
                if entry.is_dir(follow_symlinks=False):
                    remove_tree(Path(entry.path))
                else:
                    os.unlink(entry.path)
