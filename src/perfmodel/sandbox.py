"""Run an untrusted notebook under limits and read back only its answers, as plain data.

Grading runs each submission in two processes that trust each other in one direction only:

* a **worker** (``python -m perfmodel.sandbox``) starts a Jupyter kernel, runs the
  submission's cells and, after the last one, a read-out cell that prints every plain-data
  global (numbers, strings, booleans, lists and dicts of them) as JSON between two random
  markers. The worker and the kernel run in their own session, under an address-space
  limit, a file-size limit and (for a non-root user) a process-count limit. The worker is
  a child subreaper on Linux, so every process the submission forks stays in its tree.
* the **grader** (this module's :func:`execute_notebook`, called by
  :mod:`perfmodel.grading`) starts the worker, enforces the wall-clock limit, watches the
  number of processes in the worker's tree, kills every process the submission left
  behind, and scores the answers in its own clean process.
  No student code ever runs there, so redefining check helpers or ``grader`` inside the
  notebook changes nothing, and forging the read-out needs a marker the kernel never sees
  until the read-out cell runs.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["CellError", "Execution", "Limits", "execute_notebook"]

#: Processes the kernel may start on top of those the sandbox user already runs.
_PROCESS_HEADROOM = 64


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
        Address-space limit of the worker and of the kernel, each.
    file_bytes : int
        Largest file the submission may write.
    max_processes : int
        Processes the submission may have at once (Linux; enforced as a non-root user).
    """

    wall_s: float = 120.0
    cell_s: float = 30.0
    memory_bytes: int = 4 * 1024**3
    file_bytes: int = 64 * 1024**2
    max_processes: int = 64

    def __post_init__(self) -> None:
        for name in ("wall_s", "cell_s", "memory_bytes", "file_bytes", "max_processes"):
            value = getattr(self, name)
            if not value > 0:
                raise ValueError(f"`{name}` must be positive (got {name}={value!r}).")
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

    ``answers`` is ``None`` when the read-out failed; ``problem`` then says why.
    """

    answers: dict[str, Any] | None
    cell_errors: tuple[CellError, ...] = field(default_factory=tuple)
    timed_out_cells: tuple[int, ...] = field(default_factory=tuple)
    problem: str = ""
    seconds: float = 0.0


#: The cells otter assign writes into a student copy: its set-up and its check calls.
_OTTER_CELL = re.compile(
    r"# Initialize Otter\nimport otter\n+grader = otter\.Notebook\([^)]*\)"
    r"|grader\.check(_all)?\(\s*(\"[\w-]*\")?\s*\)"
)

_READOUT = """\
def _perfmodel_readout(marker):
    import json, numbers

    def plain(value, depth=0):
        if depth > 4:
            raise TypeError("too deep")
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Real):
            return float(value)
        if isinstance(value, (list, tuple)):
            return [plain(item, depth + 1) for item in value]
        if isinstance(value, dict):
            return {{str(key): plain(item, depth + 1) for key, item in value.items()}}
        if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
            return plain(value.tolist(), depth + 1)
        raise TypeError(type(value).__name__)

    answers = {{}}
    for name, value in list(globals().items()):
        if name.startswith("_") or name in ("In", "Out"):
            continue
        if value is Ellipsis:
            answers[name] = {{"$unanswered": True}}
            continue
        try:
            text = json.dumps(plain(value))
        except (TypeError, ValueError, RecursionError):
            continue
        if len(text) <= 100_000:
            answers[name] = json.loads(text)
    print(marker + json.dumps(answers) + marker)


_perfmodel_readout({marker!r})
"""


def _preexec(limits: Limits) -> None:  # pragma: no cover - runs in the child
    import resource

    os.setsid()
    resource.setrlimit(resource.RLIMIT_AS, (limits.memory_bytes, limits.memory_bytes))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits.file_bytes, limits.file_bytes))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if hasattr(resource, "RLIMIT_NPROC") and os.geteuid() != 0:
        # Root ignores RLIMIT_NPROC; for root the grader's process watchdog is the guard.
        cap = _count_processes_of(os.geteuid()) + limits.max_processes + _PROCESS_HEADROOM
        resource.setrlimit(resource.RLIMIT_NPROC, (cap, cap))


def _count_processes_of(uid: int) -> int:
    proc = Path("/proc")
    if not proc.is_dir():
        return 0
    count = 0
    for entry in proc.iterdir():
        if entry.name.isdigit():
            with contextlib.suppress(OSError):
                if entry.stat().st_uid == uid:
                    count += 1
    return count


def _children_map() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        # The command name sits in parentheses and may contain spaces; fields follow it.
        fields = stat[stat.rfind(")") + 2 :].split()
        children.setdefault(int(fields[1]), []).append(int(entry.name))
    return children


def _descendants(root_pid: int) -> list[int]:
    tree = _children_map()
    stack, found = list(tree.get(root_pid, [])), []
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(tree.get(pid, []))
    return found


def kill_descendants(root_pid: int, *, rounds: int = 20, reap: bool = False) -> int:
    """SIGKILL every process below ``root_pid``; repeat until none is left.

    ``root_pid`` should be a child subreaper (see :func:`become_subreaper`) so that orphans
    of the submission are re-parented to it instead of escaping to init. Pass ``reap=True``
    only from ``root_pid`` itself: reaping waits on *any* child, and in the grader, whose
    other threads wait on their own workers, that would steal their exit statuses.
    Without ``/proc`` (macOS) this is a no-op that returns 0.

    Returns
    -------
    int
        How many processes were killed.
    """
    if not Path("/proc").is_dir():
        return 0
    killed = 0
    for _ in range(rounds):
        found = _descendants(root_pid)
        if not found:
            break
        for pid in found:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed += len(found)
        if reap:
            _reap_children()
        time.sleep(0.02)
    return killed


def _reap_children() -> None:
    with contextlib.suppress(ChildProcessError):
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass


def become_subreaper() -> bool:
    """Make this process adopt its orphaned descendants (Linux only); True on success."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    pr_set_child_subreaper = 36
    libc = ctypes.CDLL(None, use_errno=True)
    return bool(libc.prctl(pr_set_child_subreaper, 1, 0, 0, 0) == 0)


def execute_notebook(path: Path, limits: Limits, *, name: str = "submission.ipynb") -> Execution:
    """Run the notebook at ``path`` in a sandboxed worker and return its answers.

    Parameters
    ----------
    path : Path
        The submitted notebook; it must already have been read as valid notebook JSON.
    limits : Limits
        Wall-clock, per-cell, memory, file-size and process limits.
    name : str, optional
        The file name the notebook runs under; workbooks open themselves by name
        (``otter.Notebook("00_warmup.ipynb")``), so pass the workbook's name.

    Returns
    -------
    Execution
        The plain-data answers, the errors each cell raised, and why the read-out failed
        if it did.
    """
    started = time.monotonic()
    watch_processes = Path("/proc").is_dir()
    with tempfile.TemporaryDirectory(prefix="perfmodel-grade-") as scratch:
        workdir = Path(scratch)
        target = workdir / Path(name).name
        target.write_bytes(path.read_bytes())
        request = json.dumps(
            {"notebook": str(target), "cell_s": limits.cell_s, "marker": secrets.token_hex(16)}
        )
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("JPY_", "JUPYTER_"))},
            "HOME": str(workdir),
            "IPYTHONDIR": str(workdir / ".ipython"),
            "MPLCONFIGDIR": str(workdir / ".matplotlib"),
            "JUPYTER_RUNTIME_DIR": str(workdir / ".runtime"),
            "JUPYTER_DATA_DIR": str(workdir / ".jupyter-data"),
            "MPLBACKEND": "agg",
            "OPENBLAS_NUM_THREADS": "1",
            "OMP_NUM_THREADS": "1",
            "PYTHONDONTWRITEBYTECODE": "1",
        }
        process = subprocess.Popen(
            [sys.executable, "-m", "perfmodel.sandbox"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=workdir,
            env=env,
            preexec_fn=lambda: _preexec(limits),
        )
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(request.encode())
        process.stdin.close()
        problem = ""
        while process.poll() is None:
            if time.monotonic() - started > limits.wall_s:
                problem = f"stopped at the wall-clock limit of {limits.wall_s:g} s"
            elif watch_processes and len(_descendants(process.pid)) > limits.max_processes:
                problem = f"stopped for starting more than {limits.max_processes} processes"
            if problem:
                kill_descendants(process.pid)
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, signal.SIGKILL)
                process.wait()
                break
            time.sleep(0.05)
        out = process.stdout.read()
        process.stdout.close()
        seconds = time.monotonic() - started
    if problem:
        return Execution(answers=None, problem=problem, seconds=seconds)
    try:
        report = json.loads(out.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        how = ""
        if process.returncode < 0:
            how = f" (killed by {signal.Signals(-process.returncode).name})"
        return Execution(
            answers=None,
            problem=f"the grading worker failed{how}; the submission may have used more "
            f"than {limits.memory_bytes / 1024**3:g} GiB of memory",
            seconds=seconds,
        )
    return Execution(
        answers=report["answers"],
        cell_errors=tuple(CellError(*item) for item in report["cell_errors"]),
        timed_out_cells=tuple(report["timed_out_cells"]),
        problem=report["problem"],
        seconds=seconds,
    )


def _worker() -> None:  # pragma: no cover - exercised through execute_notebook
    """Entry point of the worker process: run one notebook, print one JSON line."""
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    request = json.loads(sys.stdin.read())
    become_subreaper()
    marker = request["marker"]
    nb = nbformat.read(request["notebook"], as_version=4)
    # Number cells as JupyterLab does (position in the whole notebook, from 1), and run only
    # code cells. otter's own cells are blanked: scoring happens outside the kernel, so
    # importing otter here would only cost time.
    positions = [i + 1 for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    code_cells = [cell for cell in nb.cells if cell.cell_type == "code"]
    for cell in code_cells:
        if _OTTER_CELL.fullmatch(cell.source.strip()):
            cell.source = ""
    nb.cells = [*code_cells, nbformat.v4.new_code_cell(_READOUT.format(marker=marker))]
    readout_index = len(nb.cells) - 1
    timed_out: list[int] = []

    class QuietClient(NotebookClient):
        """Keeps errors and the read-out; drops every other output instead of storing it."""

        def output(self, outs: Any, msg: Any, display_id: Any, cell_index: int) -> Any:
            if cell_index == readout_index or msg["msg_type"] == "error":
                return super().output(outs, msg, display_id, cell_index)
            return None

        async def _async_handle_timeout(self, timeout: int, cell: Any = None) -> Any:
            timed_out.append(positions[nb.cells.index(cell)] if cell is not None else -1)
            return await super()._async_handle_timeout(timeout, cell)

    client = QuietClient(
        nb,
        timeout=request["cell_s"],
        interrupt_on_timeout=True,
        allow_errors=True,
        kernel_name="python3",
        resources={"metadata": {"path": str(Path(request["notebook"]).parent)}},
    )
    problem = ""
    try:
        client.execute(stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except DeadKernelError:
        problem = "the kernel died (the notebook crashed Python or called os._exit)"
    except Exception as error:  # noqa: BLE001 - any failure becomes the submission's reason
        problem = f"the notebook could not be run: {type(error).__name__}: {error}"
    finally:
        kill_descendants(os.getpid(), reap=True)
    cell_errors = []
    for index, cell in enumerate(nb.cells[:readout_index]):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                cell_errors.append((positions[index], output["ename"], str(output["evalue"])[:200]))
    answers = None
    text = "".join(
        output.get("text", "")
        for output in nb.cells[readout_index].get("outputs", [])
        if output.get("output_type") == "stream"
    )
    first, last = text.find(marker), text.rfind(marker)
    if 0 <= first < last:
        with contextlib.suppress(ValueError):
            answers = json.loads(text[first + len(marker) : last])
    if answers is None and not problem:
        problem = "the grader could not read the answers back (was print or sys.stdout replaced?)"
    report = {
        "answers": answers,
        "cell_errors": cell_errors,
        "timed_out_cells": timed_out,
        "problem": problem,
    }
    sys.stdout.write("\n" + json.dumps(report) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    _worker()
