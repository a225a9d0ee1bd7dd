"""Run an untrusted notebook under limits and read back only its answers, as plain data.

Three processes, each trusting the one before it and nothing after:

* the **grader** (:func:`execute_notebook`, called from :mod:`perfmodel.course.grading`) makes a
  private folder, starts the worker, enforces the wall clock and watches the whole tree:
  its process count, the memory all its processes hold together, and the bytes and files
  written to the scratch folder. It scores nothing here and runs no student code.
* the **worker** (:mod:`perfmodel.course.sandbox_worker`) runs the notebook's cells in a Jupyter
  kernel, one cell at a time with a per-cell limit, then asks the kernel to write its
  plain-data globals into a file named by a fresh nonce, reads that file back with a cap,
  and writes its report into the private folder, which the kernel cannot see.
* the **kernel** runs the student's code inside the :mod:`perfmodel.course.isolation` sandbox
  (bubblewrap) when it is available, with a minimal explicit environment either way.

Whatever the kernel does, the worst it can achieve is its own row marked failed with a
reason: a report is read from a file with a size cap, never from a pipe, and a missing or
malformed report is itself a reason.
"""

from __future__ import annotations

import contextlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from perfmodel.course import isolation

__all__ = ["CellError", "Execution", "Limits", "execute_notebook", "kill_descendants"]

#: The largest worker report read back; answers are capped well below it.
MAX_REPORT_BYTES = 32 * 1024**2
_POLL_S = 0.05
_DISK_POLL_S = 0.25


@dataclass(frozen=True, slots=True, kw_only=True)
class Limits:
    """Resource limits for one submission.

    Parameters
    ----------
    wall_s : float
        Wall-clock seconds for the whole notebook, kernel start included.
    cell_s : float
        Seconds one cell may run before the kernel is interrupted and the next cell runs.
    memory_bytes : int
        Memory the submission's processes may hold together (proportional set size,
        summed over the tree); each process also gets this as its address-space limit.
    disk_bytes : int
        Bytes the submission may write into its scratch folder, all files together.
    file_bytes : int
        Largest single file the submission may write.
    max_files : int
        Files and folders the submission may create.
    max_processes : int
        Processes the submission may have at once.
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
    """An exception raised by one cell of the submission."""

    cell: int
    name: str
    message: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Execution:
    """What running a submission produced.

    ``answers`` is ``None`` when they could not be read back; ``problem`` then says why.
    ``isolation`` is ``"bubblewrap"`` or ``"none"``.
    """

    answers: dict[str, Any] | None
    cell_errors: tuple[CellError, ...] = field(default_factory=tuple)
    timed_out_cells: tuple[int, ...] = field(default_factory=tuple)
    problem: str = ""
    seconds: float = 0.0
    isolation: str = "none"


# --- the process tree ---------------------------------------------------------------------


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as handle:
                stat = handle.read().decode(errors="replace")
        except OSError:
            continue
        # The command name sits in parentheses and may contain spaces; fields follow it.
        fields = stat[stat.rfind(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    return children


def _descendants(root_pid: int) -> list[int]:
    if not os.path.isdir("/proc"):
        return []
    tree = _children_map()
    stack, found = list(tree.get(root_pid, [])), []
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(tree.get(pid, []))
    return found


def _memory_bytes(pids: list[int]) -> int:
    """Memory the processes hold together: the sum of their proportional set sizes.

    PSS splits each shared page among the processes that map it, so a hundred forks of one
    kernel count once, not a hundred times (RSS would). Falls back to RSS where the kernel
    offers no ``smaps_rollup``.
    """
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/smaps_rollup", "rb") as handle:
                for line in handle:
                    if line.startswith(b"Pss:"):
                        total += int(line.split()[1]) * 1024
                        break
        except OSError:
            with (
                contextlib.suppress(OSError, ValueError, IndexError),
                open(f"/proc/{pid}/statm", "rb") as handle,
            ):
                total += int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    return total


def kill_descendants(root_pid: int, *, rounds: int = 20) -> int:
    """SIGKILL every process below ``root_pid``; repeat until none is left.

    Without ``/proc`` (macOS) this is a no-op that returns 0.

    Returns
    -------
    int
        How many processes were killed.
    """
    killed = 0
    for _ in range(rounds):
        found = _descendants(root_pid)
        if not found:
            break
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed += len(found)
        time.sleep(0.02)
    return killed


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
    """The whole environment of the kernel: nothing inherited from the grader."""
    import perfmodel

    return {
        # The kernel imports the same perfmodel as the grader (a bundled copy on Gradescope).
        "PYTHONPATH": str(Path(perfmodel.__file__).resolve().parent.parent),
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
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


def _preexec(limits: Limits) -> None:  # pragma: no cover - runs in the child
    os.setsid()
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _watch(process: subprocess.Popen[bytes], limits: Limits, scratch: Path) -> str:
    """Wait for the worker; kill its tree and return why if a limit is crossed."""
    started = time.monotonic()
    next_disk = started
    watch_tree = os.path.isdir("/proc")
    while process.poll() is None:
        problem = ""
        now = time.monotonic()
        if now - started > limits.wall_s:
            problem = f"stopped at the wall-clock limit of {limits.wall_s:g} s"
        elif watch_tree:
            tree = _descendants(process.pid)
            if len(tree) > limits.max_processes:
                problem = f"stopped for starting more than {limits.max_processes} processes"
            elif _memory_bytes([process.pid, *tree]) > limits.memory_bytes:
                problem = (
                    f"stopped for using more than {limits.memory_bytes / 1024**3:g} GiB of "
                    f"memory across its processes"
                )
        if not problem and now >= next_disk:
            next_disk = now + _DISK_POLL_S
            size, count = _disk_usage(scratch, limits.max_files)
            if size > limits.disk_bytes:
                problem = f"stopped for writing more than {limits.disk_bytes / 1024**2:g} MiB"
            elif count > limits.max_files:
                problem = f"stopped for creating more than {limits.max_files} files"
        if problem:
            _kill_tree(process)
            return problem
        time.sleep(_POLL_S)
    return ""


def _kill_tree(process: subprocess.Popen[bytes]) -> None:
    kill_descendants(process.pid)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait()
    kill_descendants(process.pid)


def _read_report(path: Path) -> dict[str, Any] | str:
    """The worker's report, or why it cannot be used."""
    try:
        size = path.stat().st_size
        if size > MAX_REPORT_BYTES:
            return f"the grading worker's report is {size / 1024**2:.0f} MiB, over its cap"
        report = json.loads(path.read_bytes())
    except FileNotFoundError:
        return ""
    except (OSError, ValueError) as error:
        return f"the grading worker's report could not be read ({type(error).__name__})"
    shape_ok = (
        isinstance(report, dict)
        and (report.get("answers") is None or isinstance(report["answers"], dict))
        and isinstance(report.get("cell_errors"), list)
        and all(
            isinstance(e, list) and len(e) == 3 and isinstance(e[0], int)
            for e in report["cell_errors"]
        )
        and isinstance(report.get("timed_out_cells"), list)
        and all(isinstance(c, int) for c in report["timed_out_cells"])
        and isinstance(report.get("problem"), str)
    )
    return report if shape_ok else "the grading worker's report was malformed"


def execute_notebook(path: Path, limits: Limits, *, name: str = "submission.ipynb") -> Execution:
    """Run the notebook at ``path`` in a sandboxed worker and return its answers.

    Parameters
    ----------
    path : Path
        The submitted notebook; it must already have been read as valid notebook JSON.
    limits : Limits
        Wall-clock, per-cell, memory, disk, file and process limits.
    name : str, optional
        The file name the notebook runs under; workbooks open themselves by name
        (``Notebook("00_warmup.ipynb")``), so pass the workbook's name.

    Returns
    -------
    Execution
        The plain-data answers, the errors each cell raised, why the read-out failed if it
        did, and whether the kernel ran isolated.
    """
    started = time.monotonic()
    why_not = isolation.probe()
    private = Path(tempfile.mkdtemp(prefix="perfmodel-grade-"))
    try:
        scratch = private / "work"
        for folder in (scratch, scratch / "tmp", scratch / "shm"):
            folder.mkdir(mode=0o700)
        notebook = scratch / Path(name).name
        notebook.write_bytes(path.read_bytes())
        env = _kernel_env(scratch)
        request = {
            "notebook": str(notebook),
            "cell_s": limits.cell_s,
            "report": str(private / "report.json"),
            "kernel_env": env,
            "kernel_prefix": [] if why_not else isolation.bwrap_command(scratch, env),
        }
        (private / "request.json").write_text(json.dumps(request), encoding="utf-8")
        worker_env = {
            key: value
            for key, value in os.environ.items()
            if not key.startswith(("JPY_", "JUPYTER_", "PYTHONSTARTUP"))
        }
        worker_env.update(
            HOME=str(private), JUPYTER_RUNTIME_DIR=str(private / "runtime"), PYTHONSAFEPATH="1"
        )
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "perfmodel.course.sandbox_worker",
                str(private / "request.json"),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=scratch,
            env=worker_env,
            preexec_fn=lambda: _preexec(limits),
        )
        problem = _watch(process, limits, scratch)
        _kill_tree(process)
        report = _read_report(private / "report.json")
    finally:
        shutil.rmtree(private, ignore_errors=True)
    seconds = time.monotonic() - started
    kind = "none" if why_not else "bubblewrap"
    if problem or not isinstance(report, dict):
        why = problem or (report if isinstance(report, str) else "")
        why = why or _how_it_died(process.returncode, limits)
        return Execution(answers=None, problem=why, seconds=seconds, isolation=kind)
    return Execution(
        answers=report["answers"],
        cell_errors=tuple(CellError(*item) for item in report["cell_errors"]),
        timed_out_cells=tuple(report["timed_out_cells"]),
        problem=report["problem"],
        seconds=seconds,
        isolation=kind,
    )


def _how_it_died(returncode: int | None, limits: Limits) -> str:
    if returncode is not None and returncode < 0:
        return (
            f"the grading worker was killed by {signal.Signals(-returncode).name} before "
            f"it reported"
        )
    return (
        f"the grading worker stopped without a report (exit status {returncode}); the "
        f"submission may have used more than {limits.memory_bytes / 1024**3:g} GiB of memory"
    )
