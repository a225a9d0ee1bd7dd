"""Run an untrusted notebook under limits and read back only its answers, as plain data.

Two sides, and the grader trusts nothing that comes from the other:

* the **grader** (:func:`execute_notebook`, called from :mod:`perfmodel.grading.grade`) puts
  the notebook and a request into a read-only *inbox*, starts the worker inside the
  :mod:`perfmodel.grading.isolation` sandbox, enforces the wall clock and watches the whole
  tree: its threads, the memory its processes hold together (with what their sockets and
  pipes can queue in the kernel), and, where the scratch folder is not its own size-capped
  tmpfs, the bytes and files written there.
  It scores nothing here and runs no student code.
* the **worker** (:mod:`perfmodel.grading.worker`) runs inside the sandbox, as the
  sandbox's unprivileged user, beside the kernel it drives. It checks that the inbox holds a
  notebook of this workbook (inside the limits, so a pathological file costs the sandbox,
  not the grader), runs the cells one at a time with a per-cell limit, asks the kernel to
  write its plain-data globals into a file named by a fresh nonce, and prints its report on
  a pipe the kernel was never given.

The student's code may take over the worker (they share a user), so the report is read as
hostile data: from a pipe with a size cap, checked for shape, its text bounded and escaped
by the grader. The most a submission can forge is its own answers, which it sets anyway;
scoring happens outside, against tests it never sees. Whatever it does, the worst it can
achieve is its own row marked failed with a reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psutil

from perfmodel.grading import cgroup, isolation, leftovers, levels, usage
from perfmodel.measure.timing import clock

__all__ = [
    "CellError",
    "Execution",
    "Limits",
    "execute_notebook",
    "kill_descendants",
]

#: The largest worker report read back; answers are capped below it (8 MB of JSON).
MAX_REPORT_BYTES = 12 * 1024**2
#: Files one process of a submission may hold open.
MAX_OPEN_FILES = 256
#: Errors and timed-out cells kept from a report (the worker keeps no more).
MAX_REPORT_ITEMS = 50
_POLL_S = 0.05
#: How long a process may show as a zombie with threads still running before its row fails, s.
_HIDING_S = 1.0
_DISK_POLL_S = 0.25


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Resource limits for one submission; each must be a positive, finite number.

    Parameters
    ----------
    wall_s : float
        Wall-clock time for the whole notebook, kernel start included, s.
    cell_s : float
        Time one cell may run before the kernel is interrupted and the next cell runs, s;
        at most ``wall_s``.
    memory_bytes : int
        Memory the submission's processes may hold together (proportional set size,
        summed over the tree, with each open socket and pipe charged what it can queue in
        the kernel), B; each process also gets this as its
        address-space limit.
    disk_bytes : int
        Bytes the submission may write into its scratch folder, all files together, B.
    file_bytes : int
        Largest single file the submission may write, B.
    max_files : int
        Files and folders the submission may create, count.
    max_processes : int
        Processes and threads the submission may run at once, count.
    """

    wall_s: float = 120.0
    cell_s: float = 30.0
    memory_bytes: int = 4 * 1024**3
    disk_bytes: int = 1024**3
    file_bytes: int = 64 * 1024**2
    max_files: int = 10_000
    max_processes: int = 64

    def __post_init__(self) -> None:
        for name in self.__slots__:
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise TypeError(f"`{name}` must be a number (got {type(value).__name__}).")
            if not value > 0 or value != value or value == float("inf"):
                raise ValueError(f"`{name}` must be positive and finite (got {name}={value!r}).")
        if self.cell_s > self.wall_s:
            raise ValueError(
                f"`cell_s` must not exceed `wall_s` (got cell_s={self.cell_s}, "
                f"wall_s={self.wall_s})."
            )


@dataclass(frozen=True, slots=True)
class CellError:
    """An exception raised by one cell of the submission.

    Parameters
    ----------
    cell : int
        The cell's position in the whole notebook, from 1, as JupyterLab numbers it.
    name : str
        The exception's type name (``"NameError"``), as the worker reported it.
    message : str
        The exception's message, as the worker reported it.
    """

    cell: int
    name: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Execution:
    """What running a submission produced.

    ``answers`` is ``None`` when they could not be read back; ``problem`` then says why.

    Parameters
    ----------
    answers : dict or None
        Variable name to its plain-data value, as the read-out wrote them; None when they
        could not be read back.
    cell_errors : tuple of CellError
        The exceptions the cells raised, at most 50.
    timed_out_cells : tuple of int
        The cells interrupted at the per-cell limit, by position from 1 (-1 when the
        worker could not tell which), at most 50.
    problem : str
        Why the run or the read-out failed, or a problem the worker reported; empty when
        there was none.
    seconds : float
        Wall-clock time of the whole run, sandbox set-up and clean-up included, s.
    isolation : str
        The level it ran at (:data:`perfmodel.grading.isolation.LEVELS`).
    counted : str
        Who counted its memory and tasks: ``"cgroup"`` (the kernel, in a control group of
        its own: :mod:`perfmodel.grading.cgroup`) or ``"watchdog"`` (the grader's polling
        alone, where it may make no group).
    """

    answers: dict[str, Any] | None
    cell_errors: tuple[CellError, ...] = field(default_factory=tuple)
    timed_out_cells: tuple[int, ...] = field(default_factory=tuple)
    problem: str = ""
    seconds: float = 0.0
    isolation: str = "none"
    counted: str = "watchdog"


# --- the process tree ---------------------------------------------------------------------


def _descendants(root_pid: int) -> list[int]:
    """Every process below ``root_pid``, however deep (psutil); empty once it is gone."""
    try:
        return [child.pid for child in psutil.Process(root_pid).children(recursive=True)]
    except psutil.Error:
        return []


def kill_descendants(root_pid: int, *, rounds: int = 20) -> int:
    """SIGKILL every process below ``root_pid``; repeat until none is left.

    ``root_pid`` itself is not signalled. A zombie (a dead child its parent has not yet
    reaped) counts as gone: it holds nothing and a signal cannot remove it.

    Parameters
    ----------
    root_pid : int
        The process whose descendants are killed.
    rounds : int
        The most rounds of looking and killing, 20 ms apart, count.

    Returns
    -------
    int
        Distinct processes signalled, count; one still dying in a later round counts once.
    """
    signalled: set[int] = set()
    for _ in range(rounds):
        found = [pid for pid in _descendants(root_pid) if not _is_zombie(pid)]
        if not found:
            break
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        signalled.update(found)
        time.sleep(0.02)
    return len(signalled)


def _is_zombie(pid: int) -> bool:
    """Whether ``pid`` has exited and waits to be reaped, or is gone already.

    A process whose main thread has exited shows as a zombie while its other threads run:
    that one is alive (:func:`perfmodel.grading.usage.hides_threads`), not gone.
    """
    try:
        dead = psutil.Process(pid).status() in (psutil.STATUS_ZOMBIE, psutil.STATUS_DEAD)
    except psutil.Error:
        return True
    return dead and not usage.hides_threads(pid)


def _disk_usage(folder: Path, max_files: int) -> tuple[int, int]:
    """Bytes and entries under ``folder``; stops counting past ``max_files`` entries."""
    size, count = 0, 0
    stack = [str(folder)]
    while stack and count <= max_files:
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as entries:
            for entry in entries:
                count += 1
                with contextlib.suppress(OSError):
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(entry.path)
                    else:
                        size += entry.stat(follow_symlinks=False).st_blocks * 512
    return size, count


# --- the grader's side --------------------------------------------------------------------


def _kernel_env(scratch: Path) -> dict[str, str]:
    """The whole environment of the worker and kernel: nothing inherited from the grader."""
    return {
        # The kernel imports the same perfmodel as the grader (a bundled copy on Gradescope).
        "PYTHONPATH": isolation.package_parent(),
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "HOME": str(scratch),
        "TMPDIR": str(scratch / "tmp"),
        "LANG": "C.UTF-8",
        "IPYTHONDIR": str(scratch / ".ipython"),
        "MPLCONFIGDIR": str(scratch / ".matplotlib"),
        "MPLBACKEND": "agg",
        "JUPYTER_RUNTIME_DIR": str(scratch / ".jupyter-runtime"),
        "JUPYTER_DATA_DIR": str(scratch / ".jupyter-data"),
        "JUPYTER_CONFIG_DIR": str(scratch / ".jupyter"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONNOUSERSITE": "1",
        "PYTHONSAFEPATH": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


def _preexec(
    limits: Limits, sandbox: isolation.Sandbox, group: cgroup.Group | None
) -> None:  # pragma: no cover - child
    if group is not None:
        group.join()
    os.setsid()
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    # Open files bound the memory a submission can keep in socket buffers.
    resource.setrlimit(resource.RLIMIT_NOFILE, (MAX_OPEN_FILES, MAX_OPEN_FILES))
    if sandbox.uid is not None:
        # Root ignores it; the sandbox's own uid, once dropped to, does not.
        resource.setrlimit(resource.RLIMIT_NPROC, (limits.max_processes, limits.max_processes))
    sandbox.preexec()


class _ReportReader(threading.Thread):
    """Reads the worker's report from its stdout pipe, keeping at most MAX_REPORT_BYTES."""

    def __init__(self, stream: Any) -> None:
        super().__init__(daemon=True)
        self.stream, self.data, self.overflow = stream, bytearray(), False

    def run(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            while chunk := self.stream.read1(1 << 16):
                if len(self.data) + len(chunk) > MAX_REPORT_BYTES:
                    self.overflow = True
                else:
                    self.data += chunk


def _watch(process: subprocess.Popen[bytes], limits: Limits, scratch: Path, level: str) -> str:
    """Wait for the worker; kill its tree and return why if a limit is crossed.

    In a sandbox the kernel enforces the task cap (``RLIMIT_NPROC``: a fork or thread past it
    fails in the notebook), so the watchdog only backs it up, at twice the cap; without one,
    the watchdog is the cap. The scratch folder is scanned only where it is no tmpfs.
    """
    scan_disk = level != "bubblewrap"
    task_cap = limits.max_processes if level == "none" else 2 * limits.max_processes
    started = clock()
    next_slow = started
    buffers, since = 0, dict[int, float]()
    while _running(process):
        problem = ""
        now = clock()
        if now - started > limits.wall_s:
            problem = f"stopped at the wall-clock limit of {limits.wall_s:g} s"
        else:
            tree = [process.pid, *_descendants(process.pid)]
            if now >= next_slow:
                buffers = usage.buffer_bytes(tree)
            # A process exiting passes through this state for a moment; one that stays in
            # it for a second is hiding its threads.
            since = {pid: since.get(pid, now) for pid in tree[1:] if usage.hides_threads(pid)}
            if any(now - first > _HIDING_S for first in since.values()):
                problem = (
                    "stopped for running threads after a process's main thread exited (what "
                    "they hold cannot be counted)"
                )
            elif usage.threads(tree[1:]) > task_cap:
                problem = f"stopped for running more than {task_cap} processes and threads"
            elif usage.memory_bytes(tree) + buffers > limits.memory_bytes:
                problem = (
                    f"stopped for using more than {limits.memory_bytes / 1024**3:g} GiB of "
                    f"memory across its processes"
                )
        if not problem and scan_disk and now >= next_slow:
            size, count = _disk_usage(scratch, limits.max_files)
            if size > limits.disk_bytes:
                problem = f"stopped for writing more than {limits.disk_bytes / 1024**2:g} MiB"
            elif count > limits.max_files:
                problem = f"stopped for creating more than {limits.max_files} files"
        if now >= next_slow:
            next_slow = now + _DISK_POLL_S
        if problem:
            _kill_tree(process)
            return problem
        time.sleep(_POLL_S)
    return ""


#: Whether an exited child can be seen without reaping it (``waitid`` with ``WNOWAIT``).
_CAN_LOOK = hasattr(os, "waitid") and hasattr(os, "WNOWAIT")


def _running(process: subprocess.Popen[bytes]) -> bool:
    """Whether ``process`` still runs, leaving it unreaped when it has exited.

    An exited child that is not yet reaped (a zombie) keeps its pid, and with it its process
    group's id, for itself: :func:`_kill_tree` can still signal the group by that id. Once
    reaped, the id is free, and with pids wrapping every few thousand processes (a busy test
    run) the next process to take it may be anyone's, a Jupyter kernel leading its own
    group among them. ``Popen.poll`` reaps; ``waitid`` with ``WNOWAIT`` only looks.
    """
    if process.returncode is not None:
        return False
    if not _CAN_LOOK:  # poll reaps: _kill_tree then kills the group as it always did
        return process.poll() is None
    try:
        return os.waitid(os.P_PID, process.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is None
    except ChildProcessError:  # reaped by someone else
        return process.poll() is None


def _kill_tree(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the worker, its descendants and its process group, then reap it.

    Only while it is unreaped: a reaped worker's pid may already be another process's.
    Where ``waitid`` is missing (macOS before Python 3.13) the worker was reaped to see it
    exit, and its group is killed all the same, as before: the id stays the group's while a
    process the worker left in it lives (with none left it is free, the one risk there).
    """
    if process.returncode is None or not _CAN_LOOK:
        kill_descendants(process.pid)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
    process.wait()


def _parse_report(data: bytes) -> dict[str, Any] | str:
    """The worker's report, or why it cannot be used. The worker is not trusted."""
    if not data.strip():
        return ""
    try:
        report = json.loads(data)
    except ValueError:
        return "the grading worker's report could not be read"
    shape_ok = (
        isinstance(report, dict)
        and (report.get("answers") is None or isinstance(report["answers"], dict))
        and isinstance(report.get("cell_errors"), list)
        and len(report["cell_errors"]) <= MAX_REPORT_ITEMS
        and isinstance(report.get("timed_out_cells"), list)
        and len(report["timed_out_cells"]) <= MAX_REPORT_ITEMS
        and all(
            isinstance(e, list)
            and len(e) == 3
            and _is_cell_number(e[0])
            and all(isinstance(part, str) for part in e[1:])
            for e in report["cell_errors"]
        )
        and all(_is_cell_number(c) for c in report["timed_out_cells"])
        and isinstance(report.get("problem"), str)
    )
    return report if shape_ok else "the grading worker's report was malformed"


def _is_cell_number(value: object) -> bool:
    """Whether a report's entry is a cell number: an int, and not a bool (JSON true/false)."""
    return isinstance(value, int) and not isinstance(value, bool)


def execute_notebook(
    path: Path | bytes,
    limits: Limits,
    *,
    name: str = "submission.ipynb",
    assignment: str = "",
    isolation_level: str | None = None,
) -> Execution:
    """Run a submitted notebook in a sandboxed worker and return its answers.

    Parameters
    ----------
    path : Path or bytes
        The submitted notebook (its bytes, or a regular file to read them from). It is
        checked to be a notebook inside the sandbox, under the limits: a notebook that is not
        valid JSON or nbformat comes back with ``answers=None`` and the reason.
    limits : Limits
        Wall-clock, per-cell, memory, disk, file and process limits.
    name : str, optional
        The file name the notebook runs under; workbooks open themselves by name
        (``Notebook("00_warmup.ipynb")``), so pass the workbook's name.
    assignment : str, optional
        The workbook's name; a notebook made for another workbook is refused.
    isolation_level : str, optional
        One of :data:`perfmodel.grading.isolation.LEVELS` (default: the strongest that runs
        here; :func:`perfmodel.grading.levels.choose` raises a RuntimeError when none does).

    Returns
    -------
    Execution
        The plain-data answers, the errors each cell raised, why the read-out failed if it
        did, and the isolation level it ran at.
    """
    started = clock()
    level = levels.choose(isolation_level)
    data = path if isinstance(path, bytes) else Path(path).read_bytes()
    private = Path(tempfile.mkdtemp(prefix="perfmodel-grade-"))
    process: subprocess.Popen[bytes] | None = None
    sandbox: isolation.Sandbox | None = None
    group: cgroup.Group | None = None
    problem = ""
    try:
        os.chmod(private, 0o711)  # traversable, not listable: the inbox and scratch below
        scratch, inbox = private / "work", private / "inbox"
        scratch.mkdir(mode=0o700)
        inbox.mkdir(mode=0o700)
        env = _kernel_env(scratch)
        sandbox = isolation.Sandbox(
            scratch,
            inbox,
            env,
            disk_bytes=limits.disk_bytes,
            max_files=limits.max_files,
            max_processes=limits.max_processes,
            isolation=level,
        )
        (inbox / "submission.ipynb").write_bytes(data)
        request = {
            "notebook": f"{sandbox.inbox_inside}/submission.ipynb",
            "name": Path(name).name,
            "assignment": assignment,
            "scratch": str(scratch),
            "cell_s": limits.cell_s,
            "kernel_env": env,
        }
        (inbox / "request.json").write_text(json.dumps(request), encoding="utf-8")
        sandbox.prepare()
        if level != "none":  # asked for no isolation: run exactly as the grader's own user
            group = cgroup.Group.create(limits.memory_bytes, limits.max_processes)
        argv = [
            sys.executable,
            "-m",
            "perfmodel.grading.worker",
            f"{sandbox.inbox_inside}/request.json",
        ]
        filter_fd = isolation.seccomp_pipe() if level == "bubblewrap" else None
        try:
            process = subprocess.Popen(
                sandbox.command(argv, seccomp_fd=filter_fd),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd="/",
                env={**env, "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"} if level != "none" else env,
                pass_fds=() if filter_fd is None else (filter_fd,),
                preexec_fn=lambda: _preexec(limits, sandbox, group),
            )
        finally:
            if filter_fd is not None:
                os.close(filter_fd)
        reader = _ReportReader(process.stdout)
        reader.start()
        problem = _watch(process, limits, scratch, level)
        _kill_tree(process)
        reader.join(timeout=10)
        if group is not None and group.out_of_memory():
            problem = problem or (
                f"stopped by the kernel for using more than {limits.memory_bytes / 1024**3:g} "
                f"GiB of memory (counted in its control group: files it kept in memory and "
                f"kernel memory included)"
            )
    finally:
        if process is not None and process.returncode is None:
            _kill_tree(process)
        if group is not None:
            group.remove()
        if sandbox is not None:
            sandbox.clean_up()
        leftovers.remove_tree(private)
    seconds = clock() - started
    counted = "watchdog" if group is None else "cgroup"
    report = (
        "the grading worker's report was over its size cap"
        if reader.overflow
        else _parse_report(bytes(reader.data))
    )
    if problem or not isinstance(report, dict):
        why = problem or (report if isinstance(report, str) else "")
        why = why or _how_it_died(process.returncode, limits)
        return Execution(
            answers=None, problem=why, seconds=seconds, isolation=level, counted=counted
        )
    return Execution(
        answers=report["answers"],
        cell_errors=tuple(CellError(*item) for item in report["cell_errors"]),
        timed_out_cells=tuple(report["timed_out_cells"]),
        problem=report["problem"],
        seconds=seconds,
        isolation=level,
        counted=counted,
    )


def _how_it_died(returncode: int | None, limits: Limits) -> str:
    # A signal shows as a negative status, or as 128 + its number through the sandbox's shell.
    number = -returncode if returncode and returncode < 0 else (returncode or 0) - 128
    if number > 0:
        with contextlib.suppress(ValueError):
            name = signal.Signals(number).name
            return (
                f"the grading worker was killed by {name} before it reported (the notebook "
                f"may have killed it, or run out of memory)"
            )
    return (
        f"the grading worker stopped without a report (exit status {returncode}); the "
        f"submission may have used more than {limits.memory_bytes / 1024**3:g} GiB of memory"
    )
