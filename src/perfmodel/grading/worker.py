"""The grading worker: check one notebook, run it in a kernel, print one report.

Started by :func:`perfmodel.grading.sandbox.execute_notebook` as
``python -m perfmodel.grading.worker INBOX/request.json``, inside the sandbox and as
its user. It reads the submission from the read-only inbox and checks it there, under the
sandbox's limits (JSON, nbformat, the workbook it belongs to; an nbformat-3 notebook is
converted), talks to the kernel over Unix sockets in the scratch folder, and prints its report
as JSON on a copy of its standard output that the kernel never inherits.

The read-out is the last cell it runs. Only then does it choose a fresh random file name;
the kernel writes its plain-data globals there, one value at a time, each capped (a large
array is refused before it is converted), and the worker reads the file back with a cap.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import stat
import sys
from pathlib import Path
from typing import Any

#: Caps on what the read-out keeps: one value's JSON, all of them, and array elements.
MAX_VALUE_CHARS = 1_000_000
MAX_TOTAL_CHARS = 8_000_000
MAX_ARRAY_ITEMS = 100_000

#: The cells otter assign or perfmodel write into a student copy: set-up and check calls.
OTTER_CELL = re.compile(
    r"# Initiali[sz]e[^\n]*\n(import otter|from perfmodel\.checker import Notebook)\n+"
    r"grader = (otter\.)?Notebook\([^)]*\)"
    r"|grader\.check(_all)?\(\s*(\"[\w-]*\")?\s*\)"
)

_READOUT = """\
def _perfmodel_readout(path, max_value, max_total, max_items):
    import json, numbers

    def plain(value, depth=0):
        if depth > 4:
            raise TypeError("nested too deeply")
        if value is None or isinstance(value, (bool, str)):
            return value
        if isinstance(value, numbers.Integral):
            return int(value)
        if isinstance(value, numbers.Real):
            return float(value)
        if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
            if getattr(value, "size", 1) > max_items:
                raise ValueError("too large")
            return plain(value.tolist(), depth + 1)
        if isinstance(value, (list, tuple)):
            if len(value) > max_items:
                raise ValueError("too large")
            return [plain(item, depth + 1) for item in value]
        if isinstance(value, dict):
            if len(value) > max_items:
                raise ValueError("too large")
            return {{str(key): plain(item, depth + 1) for key, item in value.items()}}
        raise TypeError(type(value).__name__)

    written = 0
    with open(path, "x", encoding="utf-8") as out:
        out.write("{{")
        for name, value in list(globals().items()):
            if name.startswith("_") or name in ("In", "Out"):
                continue
            try:
                if value is Ellipsis:
                    text = json.dumps({{"$unanswered": True}})
                else:
                    text = json.dumps(plain(value), allow_nan=True)
            except Exception:
                continue
            if len(text) > max_value or written + len(text) > max_total:
                text = json.dumps({{"$too_large": True}})
            out.write(("," if written else "") + json.dumps(name) + ":" + text)
            written += len(text) + len(name) + 4
        out.write("}}")


_perfmodel_readout({path!r}, {max_value}, {max_total}, {max_items})
del _perfmodel_readout
"""


def _kernel_manager(request: dict[str, Any]) -> Any:
    """A kernel manager that starts this Python's kernel, over Unix sockets.

    Interrupts go as messages on the control channel, as a sandbox may not deliver signals.
    """
    from jupyter_client.manager import AsyncKernelManager

    scratch = Path(request["scratch"])

    class SandboxedKernelManager(AsyncKernelManager):
        def format_kernel_cmd(self, extra_arguments: list[str] | None = None) -> list[str]:
            command = super().format_kernel_cmd(extra_arguments)
            return [sys.executable, *command[1:]]

    # The socket path is relative: worker and kernel both run in the scratch folder, and a
    # Unix socket's absolute path can outgrow its 107-byte limit under a long TMPDIR.
    manager = SandboxedKernelManager(
        kernel_name="python3",
        transport="ipc",
        ip=".kernel",
        connection_file=str(scratch / ".kernel.json"),
    )
    spec = manager.kernel_spec
    if spec is None:
        raise RuntimeError("no python3 kernel is installed for the grading worker")
    spec.interrupt_mode = "message"
    return manager


def _refused(reason: str) -> dict[str, Any]:
    return {"answers": None, "cell_errors": [], "timed_out_cells": [], "problem": reason}


def read_submission(data: bytes, assignment: str) -> Any:
    """The submission as an nbformat-4 notebook, or a ``str``: why it is not one.

    Examples
    --------
    >>> read_submission(b"print(1)", "00_warmup")
    'not a notebook: invalid JSON at line 1 (Expecting value)'
    >>> read_submission(b'{"hello": 1}', "00_warmup")
    'not a notebook: the JSON has no `cells` list'
    """
    import nbformat

    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return "not a notebook: the file is not UTF-8 text"
    try:
        raw = json.loads(text)
    except json.JSONDecodeError as error:
        return f"not a notebook: invalid JSON at line {error.lineno} ({error.msg})"
    except RecursionError:
        return "not a notebook: the JSON is nested too deeply"
    if not isinstance(raw, dict) or not isinstance(raw.get("cells", raw.get("worksheets")), list):
        return "not a notebook: the JSON has no `cells` list"
    major = raw.get("nbformat")
    if major not in (3, 4):
        return f"not a notebook this grader reads: nbformat {str(major)[:20]} (3 and 4 are)"
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as error:  # noqa: BLE001 - nbformat raises several unrelated types
        first = str(error).strip().splitlines()[0][:160] if str(error).strip() else ""
        converted = " (converted from nbformat 3)" if major == 3 else ""
        return f"not a valid notebook{converted}: {type(error).__name__}: {first}"
    metadata = nb.metadata.get("otter", {})
    found = metadata.get("assignment_name") if isinstance(metadata, dict) else None
    if assignment and found and found != assignment:
        return f"this is workbook {str(found)[:80]!r}, not {assignment!r}"
    return nb


def _run(request: dict[str, Any]) -> dict[str, Any]:
    import nbformat
    from nbclient import NotebookClient
    from nbclient.exceptions import DeadKernelError

    scratch = Path(request["scratch"])
    nb = read_submission(Path(request["notebook"]).read_bytes(), request["assignment"])
    if isinstance(nb, str):
        return _refused(nb)
    notebook = scratch / request["name"]
    nbformat.write(nb, notebook)
    # Number cells as JupyterLab does (position in the whole notebook, from 1) and run only
    # code cells; the check cells are blanked, since scoring happens outside the kernel.
    positions = [i + 1 for i, cell in enumerate(nb.cells) if cell.cell_type == "code"]
    code_cells = [cell for cell in nb.cells if cell.cell_type == "code"]
    for cell in code_cells:
        if OTTER_CELL.fullmatch(cell.source.strip()):
            cell.source = ""
    readout_path = scratch / f".answers-{secrets.token_hex(16)}.json"
    readout = _READOUT.format(
        path=str(readout_path),
        max_value=MAX_VALUE_CHARS,
        max_total=MAX_TOTAL_CHARS,
        max_items=MAX_ARRAY_ITEMS,
    )
    nb.cells = [*code_cells, nbformat.v4.new_code_cell(readout)]
    readout_index = len(nb.cells) - 1
    timed_out: list[int] = []

    class QuietClient(NotebookClient):
        """Keeps errors only; every other output is dropped instead of stored."""

        def output(self, outs: Any, msg: Any, display_id: Any, cell_index: int) -> Any:
            if msg["msg_type"] == "error":
                return super().output(outs, msg, display_id, cell_index)
            return None

        async def _async_handle_timeout(self, timeout: int, cell: Any = None) -> Any:
            index = nb.cells.index(cell) if cell is not None else -1
            timed_out.append(positions[index] if 0 <= index < len(positions) else -1)
            return await super()._async_handle_timeout(timeout, cell)

    km = _kernel_manager(request)
    client = QuietClient(
        nb,
        km=km,
        timeout=request["cell_s"],
        interrupt_on_timeout=True,
        allow_errors=True,
        resources={"metadata": {"path": str(scratch)}},
    )
    problem = ""
    try:
        client.execute(env=request["kernel_env"])
    except DeadKernelError:
        problem = "the kernel died (the notebook crashed Python or called os._exit)"
    except Exception as error:  # noqa: BLE001 - any failure becomes the submission's reason
        problem = f"the notebook could not be run: {type(error).__name__}: {error}"[:300]
    cell_errors = []
    for index, cell in enumerate(nb.cells[:readout_index]):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                cell_errors.append(
                    [positions[index], str(output["ename"])[:200], str(output["evalue"])[:300]]
                )
    answers = _read_answers(readout_path)
    if answers is None and not problem:
        problem = "the grader could not read the answers back (the read-out cell failed)"
    return {
        "answers": answers,
        "cell_errors": cell_errors[:50],
        "timed_out_cells": timed_out[:50],
        "problem": problem,
    }


def _read_answers(path: Path) -> dict[str, Any] | None:
    """The read-out file as a dict, or None when it is missing, too large or not JSON.

    It is opened without following links and without blocking, and read only if it is a
    regular file: a FIFO or folder planted at its path fails at once.
    """
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
    with contextlib.suppress(OSError, ValueError, RecursionError):
        fd = os.open(path, flags)
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_TOTAL_CHARS * 2:
                return None
            data = json.loads(handle.read(MAX_TOTAL_CHARS * 2 + 1))
        if isinstance(data, dict):
            return data
    return None


def _become_subreaper() -> None:
    """Adopt orphaned descendants, so that none escapes the final clean-up; and become
    undumpable, so that the kernel, which shares this user, cannot trace this process or take
    its file descriptors (its report pipe) through ``/proc`` or ``pidfd_getfd`` (Linux)."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_dumpable, pr_set_child_subreaper = 4, 36
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(pr_set_child_subreaper, 1, 0, 0, 0)
        libc.prctl(pr_set_dumpable, 0, 0, 0, 0)


def main(argv: list[str]) -> int:  # pragma: no cover - exercised through execute_notebook
    # nbclient imports nbformat, whose validator imports jsonschema, whose optional IRI
    # format checker (rfc3987_syntax) builds a parser at import: about 2 s, per submission,
    # for a check the worker never makes. jsonschema skips the checker when it cannot import.
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]
    from perfmodel.grading.sandbox import kill_descendants

    _become_subreaper()
    # The report goes out on a private copy of stdout; the kernel inherits /dev/null.
    report_out = os.fdopen(os.dup(1), "w", encoding="utf-8")
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    request = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    scratch = Path(request["scratch"])
    os.chdir(scratch)
    for folder in ("tmp", "shm"):
        (scratch / folder).mkdir(mode=0o700, exist_ok=True)
    try:
        report = _run(request)
    except Exception as error:  # noqa: BLE001 - any failure becomes the submission's reason
        report = _refused(f"the notebook could not be run: {type(error).__name__}")
    finally:
        kill_descendants(os.getpid())
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
    report_out.write(json.dumps(report))
    report_out.close()
    return 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main(sys.argv[1:]))
