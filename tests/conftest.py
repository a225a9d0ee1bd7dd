"""Shared helpers: the repository's paths and notebooks built from its workbooks."""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# otter assign takes seconds per master: share one file cache across xdist workers and runs
# (keyed by the master, the package and otter's version, so it is never stale).
os.environ.setdefault("PERFMODEL_CACHE_DIR", str(ROOT / "test-output" / "cache"))

from perfmodel.grading.workbooks import Assigned, Workbook, assign, find_workbooks  # noqa: E402

EXERCISES = ROOT / "exercises"
WORKBOOKS = find_workbooks(EXERCISES)


@functools.cache
def assigned(workbook: Workbook) -> Assigned:
    """otter assign's output for a workbook, from the shared cache when it is there."""
    return assign(workbook)


def read_json(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def solutions(workbook: Workbook) -> list[str]:
    """The master's solution cells, in order, with the `# SOLUTION` markers removed."""
    found, inside = [], False
    for cell in read_json(workbook.master)["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "raw" and source.strip() in ("# BEGIN SOLUTION", "# END SOLUTION"):
            inside = source.strip() == "# BEGIN SOLUTION"
        elif inside and cell["cell_type"] == "code":
            found.append(source.replace("  # SOLUTION", ""))
    return found


def answer_cells(nb: dict) -> list[dict]:
    return [c for c in nb["cells"] if "otter_answer_cell" in c["metadata"].get("tags", [])]


def solved_copy(workbook: Workbook) -> dict:
    """The student copy with every answer cell replaced by the master's solution."""
    nb = read_json(workbook.student)
    cells = answer_cells(nb)
    sols = solutions(workbook)
    assert len(cells) == len(sols), f"{workbook.name}: answer cells and solutions differ"
    for cell, source in zip(cells, sols, strict=True):
        cell["source"] = source
    return nb


def with_code(nb: dict, index: int, source: str) -> dict:
    """A copy of ``nb`` with a code cell inserted at position ``index``."""
    nb = copy.deepcopy(nb)
    nb["cells"].insert(
        index,
        {
            "cell_type": "code",
            "id": f"extra-{index}",
            "metadata": {},
            "outputs": [],
            "execution_count": None,
            "source": source,
        },
    )
    return nb


def master_namespace(workbook: Workbook) -> dict:
    """Run a master's cells in this process, tests aside; return its global namespace."""
    env: dict = {}
    in_tests = False
    for cell in read_json(workbook.master)["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "raw":
            in_tests = {"# BEGIN TESTS": True, "# END TESTS": False}.get(source.strip(), in_tests)
        elif cell["cell_type"] == "code" and not in_tests:
            exec(source, env)
    return env


@contextlib.contextmanager
def cpu_hog(processes: int | None = None) -> Iterator[None]:
    """Keep every core busy with spinning processes while the block runs (a loaded machine).

    ``processes`` defaults to the number of usable cores, so each measurement in the block
    competes for its core with a process that never sleeps.
    """
    count = processes or len(os.sched_getaffinity(0))
    spin = "print(flush=True)\nwhile True: pass"  # says when it spins
    spinners = [
        subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE) for _ in range(count)
    ]
    try:
        for spinner in spinners:  # a Python takes tens of ms to start: a short measurement
            assert spinner.stdout is not None  # made meanwhile would find the machine idle
            spinner.stdout.readline()
        yield
    finally:
        for spinner in spinners:
            spinner.kill()
        for spinner in spinners:
            spinner.wait()
