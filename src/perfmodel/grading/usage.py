"""What a submission's processes hold, as the grader's watchdog counts it from outside.

:func:`perfmodel.grading.sandbox.execute_notebook` polls these for the whole process tree:

* :func:`memory_bytes`: the proportional set sizes, summed (psutil);
* :func:`buffer_bytes`: what the tree's sockets and pipes can queue in the kernel, where no
  process's memory count sees it;
* :func:`threads`: tasks, threads counted;
* :func:`hides_threads`: a process whose main thread exited while its other threads run, so
  that ``/proc`` shows it as a zombie with no memory and no files.
"""

from __future__ import annotations

import contextlib
import functools
import os

import psutil

from perfmodel.grading.seccomp import LISTEN_BACKLOG

__all__ = ["buffer_bytes", "hides_threads", "memory_bytes", "threads"]


def memory_bytes(pids: list[int]) -> int:
    """Memory the processes hold together: the sum of their proportional set sizes.

    PSS splits each shared page among the processes that map it, so a hundred forks of one
    kernel count once, not a hundred times (RSS would). Falls back to RSS where psutil
    cannot read it.

    Parameters
    ----------
    pids : list of int
        The processes; one that is gone counts nothing.

    Returns
    -------
    int
        Bytes, B.
    """
    total = 0
    for pid in pids:
        with contextlib.suppress(psutil.Error):
            process = psutil.Process(pid)
            try:
                total += process.memory_full_info().pss
            except (psutil.AccessDenied, AttributeError):
                total += process.memory_info().rss
    return total


def threads(pids: list[int]) -> int:
    """Threads of the processes together (each process counts at least once).

    Parameters
    ----------
    pids : list of int
        The processes.

    Returns
    -------
    int
        Tasks, count.
    """
    total = 0
    for pid in pids:
        try:
            total += max(1, psutil.Process(pid).num_threads())
        except psutil.Error:
            total += 1
    return total


def hides_threads(pid: int) -> bool:
    """Whether ``pid`` shows as a zombie while other threads of it still run.

    Its main thread exited and the others go on, so ``/proc/PID`` shows no memory and no
    files for what they hold. A process passes through this state for a moment as it exits.

    Parameters
    ----------
    pid : int
        The process.

    Returns
    -------
    bool
        True while it is in that state.
    """
    try:
        if len(os.listdir(f"/proc/{pid}/task")) < 2:
            return False
        return bool(psutil.Process(pid).status() == psutil.STATUS_ZOMBIE)
    except (OSError, psutil.Error):
        return False


def buffer_bytes(pids: list[int]) -> int:
    """Kernel memory the processes' sockets and pipes can hold (each counted once).

    Queued bytes live in the kernel, where no process's memory count sees them. A socket can
    queue up to its send buffer, which the seccomp allowlist keeps at its default
    (``net.core.wmem_default``); a pipe up to ``fs.pipe-max-size``. Each open one is charged
    that much, whether full or not: an honest kernel holds a few dozen. A listening Unix
    socket is charged one more buffer for each connection it may keep waiting
    (:data:`perfmodel.grading.seccomp.LISTEN_BACKLOG`): a client can fill one, close its end,
    and leave the bytes queued where no open file shows them.

    Parameters
    ----------
    pids : list of int
        The processes; their open files are read from ``/proc`` (none where it is missing).

    Returns
    -------
    int
        Bytes, B.
    """
    socket_bytes, pipe_bytes = _buffer_sizes()
    listening = _listening(pids)
    seen: set[str] = set()
    total = 0
    for pid in pids:
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
        except OSError:
            continue
        for fd in fds:
            with contextlib.suppress(OSError):
                link = os.readlink(f"/proc/{pid}/fd/{fd}")
                if link not in seen and link.startswith(("socket:", "pipe:")):
                    seen.add(link)
                    total += socket_bytes if link.startswith("socket:") else pipe_bytes
                    if link in listening:
                        total += socket_bytes * LISTEN_BACKLOG
    return total


def _listening(pids: list[int]) -> set[str]:
    """The listening Unix sockets of the processes' network namespaces, as ``/proc`` names
    links (``socket:[inode]``); flag 0x10000 in ``/proc/PID/net/unix`` marks one that accepts.
    Each namespace is read once (a sandbox's differs from the launcher's)."""
    namespaces: dict[str, int] = {}
    for pid in pids:
        with contextlib.suppress(OSError):
            namespaces.setdefault(os.readlink(f"/proc/{pid}/ns/net"), pid)
    found = set()
    for pid in namespaces.values():
        try:
            with open(f"/proc/{pid}/net/unix", encoding="ascii", errors="replace") as handle:
                rows = handle.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            fields = row.split()
            with contextlib.suppress(ValueError, IndexError):
                if int(fields[3], 16) & 0x10000:
                    found.add(f"socket:[{fields[6]}]")
    return found


@functools.cache
def _buffer_sizes() -> tuple[int, int]:
    """A socket's default send buffer and a pipe's largest size on this machine, B."""

    def sysctl(path: str, default: int) -> int:
        try:
            with open(path, encoding="ascii") as handle:
                return int(handle.read())
        except (OSError, ValueError):
            return default

    return (
        sysctl("/proc/sys/net/core/wmem_default", 212_992),
        sysctl("/proc/sys/fs/pipe-max-size", 1 << 20),
    )
