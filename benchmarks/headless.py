"""Do the lectures that start threads always finish headless? Run each many times and see.

Each run executes a fresh copy of a lecture under :class:`nbclient.NotebookClient` in a fresh
kernel, with a per-cell timeout, so a kernel that never answers shows up as a timeout (the
cell is named) instead of a hang. Nothing is written back into the notebook: the copy lives
in memory, and the kernel's working directory is ``notebooks/`` so that relative paths work.
A CPU hog (one spinning process per core) runs beside all of it by default, since a busy
machine is what makes thread races likely.

A run is "stalled" when a cell took its whole timeout and then finished: the reply had
arrived, but the client was not woken for it until its wait ran out (pyzmq looks once more
when a wait times out). That is the hang of issue 24 (jupyter/nbclient#312), which a
600 s timeout turns into ten minutes. A run is "TIMEOUT" when no reply came at all; then the
kernel's threads are dumped (``faulthandler``, registered on SIGUSR1 by an IPython start-up
file in a scratch ``IPYTHONDIR``) together with the last messages the client received.

Run from the repository root (issue 24: 20 runs of lectures 07, 08 and 11)::

    .venv/bin/python benchmarks/headless.py
    .venv/bin/python benchmarks/headless.py --lectures 08 --runs 5 --no-hog

``--tree DIR`` runs the notebooks and the package of another copy of the repository (a
``git archive`` of a commit, say), so that edits in progress here do not change the runs.
"""

from __future__ import annotations

import argparse
import collections
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import nbformat
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError, CellTimeoutError, DeadKernelError

ROOT = Path(__file__).resolve().parent.parent

#: A CPU hog that ends with the process that started it, however that ends.
SPIN = "import os\nparent = os.getppid()\nwhile os.getppid() == parent:\n    pass\n"

STARTUP = """\
import faulthandler, os, signal
faulthandler.register(signal.SIGUSR1, file=open(os.environ["HEADLESS_DUMP"], "w"),
                      all_threads=True)
"""


class Client(NotebookClient):
    """A NotebookClient that remembers which cell runs and the last IOPub messages it saw."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.current = -1
        self.seen: collections.deque[str] = collections.deque(maxlen=25)
        self.cell_seconds: dict[int, float] = {}
        self.on_cell_execute = self._started
        self.on_cell_executed = self._finished

    def _started(self, cell: Any, cell_index: int) -> None:
        self.current = cell_index
        self._start = time.perf_counter()

    def _finished(self, cell: Any, cell_index: int, execute_reply: Any) -> None:
        self.cell_seconds[cell_index] = time.perf_counter() - self._start

    async def _async_poll_output_msg(self, parent_msg_id: str, cell: Any, cell_index: int) -> None:
        from nbclient.exceptions import CellExecutionComplete

        while True:
            msg = await self.kc.iopub_channel.get_msg(timeout=None)  # type: ignore[union-attr]
            content = msg["content"]
            detail = content.get("execution_state") or content.get("name") or ""
            parent = msg["parent_header"].get("msg_id", "")[:8]
            self.seen.append(f"{time.strftime('%H:%M:%S')} {msg['msg_type']} {detail} "
                             f"(parent {parent})")  # fmt: skip
            if msg["parent_header"].get("msg_id") == parent_msg_id:
                try:
                    self.process_message(msg, cell, cell_index)
                except CellExecutionComplete:
                    return


def kernel_pid(client: Client) -> int | None:
    provisioner = getattr(client.km, "provisioner", None)
    process = getattr(provisioner, "process", None)
    return getattr(process, "pid", None)


def run_once(lecture: Path, timeout: int, scratch: Path) -> dict[str, Any]:
    """Execute one copy of ``lecture``; what happened, how long it took, and where it stuck."""
    nb = nbformat.read(lecture, as_version=4)  # type: ignore[no-untyped-call]  # a copy in memory
    dump = scratch / "dump.txt"
    dump.unlink(missing_ok=True)
    os.environ["HEADLESS_DUMP"] = str(dump)
    client = Client(nb, timeout=timeout, kernel_name="python3",
                    resources={"metadata": {"path": str(lecture.parent)}})  # fmt: skip
    result: dict[str, Any] = {"status": "ok", "cell": None, "stacks": "", "seen": ""}
    start = time.perf_counter()
    try:
        with client.setup_kernel():
            try:
                for index, cell in enumerate(nb.cells):
                    client.execute_cell(cell, index)
            except CellTimeoutError:
                result["status"], result["cell"] = "TIMEOUT", client.current
                pid = kernel_pid(client)
                if pid is not None:
                    os.kill(pid, signal.SIGUSR1)
                    time.sleep(1)
                    result["stacks"] = dump.read_text() if dump.exists() else "(no dump)"
                result["seen"] = "\n".join(client.seen)
    except CellExecutionError as error:
        result["status"], result["cell"] = "error", client.current
        result["stacks"] = str(error)[-2000:]
    except DeadKernelError:
        result["status"], result["cell"] = "dead kernel", client.current
    result["wall_s"] = time.perf_counter() - start
    slowest = max(client.cell_seconds.items(), key=lambda item: item[1], default=(None, 0.0))
    result["slowest"] = slowest
    if result["status"] == "ok" and slowest[1] >= 0.95 * timeout:
        result["status"], result["cell"] = "stalled", slowest[0]
        result["seen"] = "\n".join(client.seen)
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lectures", nargs="+", default=["07", "08", "11"])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--timeout", type=int, default=120, help="seconds per cell")
    parser.add_argument("--no-hog", dest="hog", action="store_false")
    parser.add_argument("--tree", type=Path, default=ROOT, help="a copy of the repository")
    args = parser.parse_args()
    notebooks = args.tree.resolve() / "notebooks"
    if args.tree.resolve() != ROOT:  # the kernels import that copy's package
        source = str(args.tree.resolve() / "src")
        os.environ["PYTHONPATH"] = os.pathsep.join(
            filter(None, [source, os.environ.get("PYTHONPATH")])
        )

    cores = len(os.sched_getaffinity(0))
    spinners = []
    if args.hog:
        spinners = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(cores)]
    print(
        f"{'lecture':<34} {'run':>3} {'wall s':>7} {'result':<8} {'cell':>4}  slowest cell",
        flush=True,
    )
    summary = []
    try:
        with tempfile.TemporaryDirectory() as scratch:
            startup = Path(scratch) / "ipython" / "profile_default" / "startup"
            startup.mkdir(parents=True)
            (startup / "00-dump-on-sigusr1.py").write_text(STARTUP)
            os.environ["IPYTHONDIR"] = str(Path(scratch) / "ipython")
            for number in args.lectures:
                (lecture,) = notebooks.glob(f"{number}_*.ipynb")
                walls, failures = [], 0
                for run in range(1, args.runs + 1):
                    r = run_once(lecture, args.timeout, Path(scratch))
                    walls.append(r["wall_s"])
                    failures += r["status"] != "ok"
                    cell = "" if r["cell"] is None else r["cell"]
                    where, seconds = r["slowest"]
                    print(f"{lecture.stem:<34} {run:>3} {r['wall_s']:7.1f} {r['status']:<8} "
                          f"{cell!s:>4}  {where} ({seconds:.1f} s)", flush=True)  # fmt: skip
                    if r["status"] != "ok":
                        print(r["seen"], r["stacks"], sep="\n", flush=True)
                summary.append((lecture.stem, walls, failures))
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    print(
        f"\n{notebooks}: beside {len(spinners)} spinning processes on {cores} cores, "
        f"per-cell timeout {args.timeout} s"
    )
    for name, walls, failures in summary:
        walls.sort()
        print(
            f"{name:<34} runs {len(walls):>3}  not ok {failures:>2}  wall s: median "
            f"{walls[len(walls) // 2]:.1f}, max {walls[-1]:.1f}"
        )


if __name__ == "__main__":
    main()
