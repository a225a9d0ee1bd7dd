"""Limits the kernel counts: one control group per submission, where the grader may make one.

The watchdog in :mod:`perfmodel.grading.sandbox` counts what a submission holds from outside
(proportional set sizes, socket buffers, threads), every 50 ms. That misses what no process
maps: files written to a tmpfs, pipe pages, page tables and kernel stacks; and it sees a
limit crossed only after the fact. A control group's memory controller counts all of these
as they are allocated, and its pids controller refuses the fork past the cap in the kernel.

:meth:`Group.create` makes a group under the grader's own, in the unified hierarchy (cgroup
v2: ``memory.max``, ``pids.max``) when its memory and pids controllers can be handed down,
else in the two legacy hierarchies (cgroup v1: ``memory.limit_in_bytes``, ``pids.max``). It
needs the right to write there (root, or a delegated subtree); where it has none it returns
``None`` and grading keeps the watchdog alone, which the CSV's ``isolation`` column says
(``"bubblewrap"`` against ``"bubblewrap+cgroup"``). The worker joins the group between fork
and exec (:meth:`Group.join`), so every process it starts is in it, however it detaches;
:meth:`Group.remove` kills them all and deletes the group. When the kernel's OOM killer ran
in the group, :meth:`Group.out_of_memory` says so and the row fails with that reason.

Socket buffers stay counted by the watchdog: neither version charges an ``AF_UNIX`` socket's
queue to its group.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Group"]

#: Processes the sandbox itself runs around the notebook's kernel (bubblewrap, its init, the
#: worker, the shell that drops privileges), counted in the group but not in the cap.
SANDBOX_TASKS = 8


def _mounts() -> dict[str, Path]:
    """Where each hierarchy is mounted: ``"unified"`` for cgroup v2, else a controller's name."""
    found: dict[str, Path] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mountinfo").read_text().splitlines():
            before, _, after = line.partition(" - ")
            fields, tail = before.split(), after.split()
            if len(fields) < 5 or len(tail) < 3:
                continue
            point = Path(fields[4].replace("\\040", " "))
            if tail[0] == "cgroup2":
                found.setdefault("unified", point)
            elif tail[0] == "cgroup":
                for option in tail[2].split(","):
                    found.setdefault(option, point)
    return found


def _own_paths() -> dict[str, str]:
    """This process's group in each hierarchy: ``"unified"`` (v2), else by controller."""
    paths: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, controllers, path = line.split(":", 2)
            if not controllers:
                paths["unified"] = path
            for name in controllers.split(","):
                paths[name] = path
    return paths


def _write(path: Path, text: str) -> bool:
    """Write a control file that must exist already (never create one: a folder that is no
    cgroup has none, and a limit written into a new plain file limits nothing)."""
    try:
        descriptor = os.open(path, os.O_WRONLY)
    except OSError:
        return False
    try:
        os.write(descriptor, text.encode())
    except OSError:
        return False
    finally:
        os.close(descriptor)
    return True


@dataclass(frozen=True, slots=True)
class Group:
    """One submission's control group: its folders (one for v2, two for v1) and its version.

    Parameters
    ----------
    folders : tuple of Path
        The group's folder in each hierarchy it lives in: the unified one, or the legacy
        memory and pids ones.
    version : int
        2 for the unified hierarchy, 1 for the legacy ones.
    """

    folders: tuple[Path, ...]
    version: int

    @classmethod
    def create(cls, memory_bytes: int, max_processes: int) -> Group | None:
        """A fresh group capped at ``memory_bytes`` and ``max_processes`` (plus the
        sandbox's own few), or None where the grader may not make one.

        Parameters
        ----------
        memory_bytes : int
            Memory its processes may hold, page cache and kernel memory counted, B.
        max_processes : int
            Processes and threads the submission may run at once, count.

        Returns
        -------
        Group or None
            The group, made and limited; None when neither hierarchy lets this process
            make a limited group (no cgroup file system, no right to write, no controller).
        """
        mounts, own = _mounts(), _own_paths()
        name = f"perfmodel-grade-{secrets.token_hex(6)}"
        tasks = str(max_processes + SANDBOX_TASKS)
        if "unified" in mounts and "unified" in own:
            parent = mounts["unified"] / own["unified"].lstrip("/")
            group = cls._make(parent / name, 2)
            if group and _write(parent / name / "memory.max", str(memory_bytes)):
                _write(parent / name / "memory.swap.max", "0")
                if _write(parent / name / "pids.max", tasks):
                    return group
            if group:
                group.remove()
        if {"memory", "pids"} <= mounts.keys() and {"memory", "pids"} <= own.keys():
            memory = mounts["memory"] / own["memory"].lstrip("/") / name
            pids = mounts["pids"] / own["pids"].lstrip("/") / name
            group = cls._make(memory, 1)
            if group is None:
                return None
            made = cls._make(pids, 1)
            group = cls((memory, pids), 1) if made else group
            if (
                made
                and _write(memory / "memory.limit_in_bytes", str(memory_bytes))
                and _write(pids / "pids.max", tasks)
            ):
                _write(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
                return group
            group.remove()
        return None

    @classmethod
    def _make(cls, folder: Path, version: int) -> Group | None:
        try:
            folder.mkdir(mode=0o755)
        except OSError:
            return None
        if version == 2:
            try:
                handed = set((folder / "cgroup.controllers").read_text().split())
            except OSError:  # no cgroup file system after all
                handed = set()
            if not {"memory", "pids"} <= handed:
                # The parent hands these down only from a group with no processes of its own.
                with contextlib.suppress(OSError):
                    folder.rmdir()
                return None
        return cls((folder,), version)

    def join(self) -> None:  # pragma: no cover - runs in the child between fork and exec
        """Move the calling process into the group, in every hierarchy it lives in.

        Raises
        ------
        OSError
            If the kernel refuses: the child then fails to start rather than run uncapped.
        """
        pid = str(os.getpid())
        for folder in self.folders:
            (folder / "cgroup.procs").write_text(pid)

    def processes(self) -> list[int]:
        """The processes in the group now, in every hierarchy it lives in.

        Returns
        -------
        list of int
            Their pids, sorted.
        """
        found: set[int] = set()
        for folder in self.folders:
            with contextlib.suppress(OSError, ValueError):
                found.update(int(p) for p in (folder / "cgroup.procs").read_text().split())
        return sorted(found)

    def out_of_memory(self) -> bool:
        """Whether the kernel killed a process of the group for reaching its memory cap.

        Returns
        -------
        bool
            True when the group's OOM-kill count is above zero.
        """
        events = "memory.events" if self.version == 2 else "memory.oom_control"
        with contextlib.suppress(OSError, ValueError):
            for line in (self.folders[0] / events).read_text().splitlines():
                key, _, value = line.partition(" ")
                if key == "oom_kill" and int(value) > 0:
                    return True
        return False

    def remove(self, *, rounds: int = 50) -> None:
        """SIGKILL every process left in the group, then delete its folders.

        Parameters
        ----------
        rounds : int
            Sweeps of the group's process list before giving up on deleting it (a fork
            racing the sweep is bounded by the pids cap).
        """
        for _ in range(rounds):
            pids = self.processes()
            if not pids:
                break
            for pid in pids:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            time.sleep(0.01)
        for folder in self.folders:
            for _ in range(rounds):
                try:
                    folder.rmdir()
                    break
                except FileNotFoundError:
                    break
                except OSError:  # its last processes are still exiting
                    time.sleep(0.01)
