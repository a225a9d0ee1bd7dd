"""Hostile submissions: every one scores as a fair instructor would expect, none sees the
answer key, another submission, the package or the output folder, and nothing is left running
or written outside its scratch folder."""

from __future__ import annotations

import copy
import csv
import json
import os
import subprocess
from pathlib import Path

import pytest
from attacks import answered, column, grade_command, write_submission

from conftest import answer_cells, read_json, solved_copy, with_code
from perfmodel.grading import isolation
from perfmodel.grading.workbooks import find_workbook

# --- the fixture folder -------------------------------------------------------------------

FORK = """
import os, time
for _ in range({count}):
    if os.fork() == 0:
        time.sleep(120)
        os._exit(0)
"""

TAMPER_HELPERS = """
import math
import otter
import perfmodel.exercises as exercises

exercises.check_number = lambda *args, **kwargs: None
exercises.check_choice = lambda *args, **kwargs: None
math.isclose = lambda *args, **kwargs: True
otter.Notebook.check = lambda self, *args, **kwargs: None


class AlwaysRight:
    def check(self, *args, **kwargs):
        return "all tests passed"


grader = AlwaysRight()
"""

TAMPER_OUTPUT = """
import json, pathlib
out = pathlib.Path({out!r})
out.mkdir(parents=True, exist_ok=True)
(out / "grades.csv").write_text("submission,total\\ntamper_output.ipynb,999\\n")
"""

READ_KEY = """
import json, pathlib, perfmodel
root = pathlib.Path(perfmodel.__file__).resolve().parents[2]
master = json.loads((root / "exercises" / "masters" / "00_warmup.ipynb").read_text())
"""

OVERWRITE_CLASSMATE = """
import pathlib
pathlib.Path({right!r}).write_text("{{}}")
"""

RIG_PACKAGE = """
import pathlib, site, perfmodel.exercises as exercises
try:
    pathlib.Path(site.getsitepackages()[0], "zz_rig.pth").write_text("import os")
finally:
    pathlib.Path(exercises.__file__).write_text("def check_number(*a, **k): pass")
"""

PLANT_STARTUP = """
import glob, pathlib
for folder in glob.glob("/tmp/perfmodel-grade-*/work"):
    startup = pathlib.Path(folder, ".ipython/profile_default/startup")
    startup.mkdir(parents=True, exist_ok=True)
    (startup / "00-rig.py").write_text("vector_bytes = 1e7")
print(glob.glob("/tmp/perfmodel-grade-*"))
"""

KILL_EVERYONE = """
import os, signal
for entry in os.listdir("/proc"):
    if entry.isdigit() and int(entry) != os.getpid():
        try:
            os.kill(int(entry), signal.SIGKILL)
        except OSError:
            pass
"""

DAEMON = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(600)
    os._exit(0)
"""

FORGE_HOOK = """
import json
def forge(*args):
    print(json.dumps({"vector_bytes": 1e7, "read_time_s": 2.5e-5, "slower": "memory"}))
get_ipython().events.register("pre_run_cell", forge)
get_ipython().events.register("post_run_cell", forge)
"""

FORGE_REPORT = """
import json, os
report = {"answers": {"vector_bytes": 1e7, "read_time_s": 2.5e-5, "slower": "memory"},
          "cell_errors": [], "timed_out_cells": [], "problem": ""}
for target in (f"/proc/{os.getppid()}/fd/1", "/proc/1/fd/1"):
    try:
        with open(target, "w") as out:
            out.write("\\n" + json.dumps(report) + "\\n")
    except OSError:
        pass
"""

BIG_VALUES = """
import numpy as np
sizes = list(range(12000))
grid = np.linspace(0, 1e-3, 4000)
huge = np.ones(50_000_000)
"""

MEMORY_ACROSS_FORKS = """
import os, time
ready, told = os.pipe()
for _ in range(6):
    if os.fork() == 0:
        block = b"x" * (400 * 1024**2)
        os.write(told, b"!")
        time.sleep(60)
        os._exit(0)
for _ in range(6):
    os.read(ready, 1)  # every child holds its 400 MB: 2.3 GiB in all, each under 2 GiB
time.sleep(5)
"""

FILL_DISK = """
for index in range(12):
    with open(f"fill-{index}.bin", "wb") as handle:
        handle.write(b"x" * (60 * 1024**2))
"""


def build_fixtures(workbook, folder: Path, out: Path) -> dict[str, tuple[str, float, str]]:
    """Write every fixture; return name -> (status, total, a phrase the reason must hold)."""
    student = read_json(workbook.student)
    solved = solved_copy(workbook)
    q1_answer = solved["cells"].index(answer_cells(solved)[0])
    expected: dict[str, tuple[str, float, str]] = {}

    def add(name: str, nb: dict | bytes | str, status: str, total: float, phrase: str = ""):
        write_submission(folder / f"{name}.ipynb", nb)
        expected[f"{name}.ipynb"] = (status, total, phrase)

    add("right", solved, "graded", 5)
    add("untouched", student, "graded", 0)

    partly = answered(
        student,
        {
            "vector_bytes": 4 * 2_500_000,
            "graded_vector_bytes": 7e6,  # right: the one graded point it earns
            "read_time_s": 8 * 1e7 / 400e9,  # bits, not bytes
            "graded_read_time_s": 8 * 7e6 / 1.6e12,
            "matvec_flops": 6e6,
            "compute_time_s": 5e-4,  # off by 1000
            "graded_compute_time_s": 1e-3,
            "slower": "compute",
            "graded_slower": "memory",
        },
    )
    add("partly_right", partly, "graded", 1)

    def with_cell(name, base, source, status, total, phrase=""):
        add(name, with_code(base, q1_answer + 1, source), status, total, phrase)

    with_cell("read_key", student, READ_KEY, "graded", 0, "FileNotFoundError")
    with_cell(
        "overwrite_classmate",
        solved,
        OVERWRITE_CLASSMATE.format(right=str(folder / "right.ipynb")),
        "graded",
        5,
        "FileNotFoundError",
    )
    with_cell("rig_package", solved, RIG_PACKAGE, "graded", 5, "Read-only file system")
    with_cell("plant_startup", student, PLANT_STARTUP, "graded", 0)
    # The worker shares the sandbox and its user: killing it fails only this row.
    with_cell("kill_everyone", solved, KILL_EVERYONE, "failed", 0, "killed by SIGKILL")
    with_cell("daemon", solved, DAEMON, "graded", 5)
    with_cell("forge_hook", student, FORGE_HOOK, "graded", 0)
    with_cell("forge_report", student, FORGE_REPORT, "graded", 0)
    with_cell("big_values", solved, BIG_VALUES, "graded", 5)
    with_cell("memory_across_forks", solved, MEMORY_ACROSS_FORKS, "failed", 0, "memory across its")
    # The scratch folder is a 256 MiB tmpfs: the writes fail, and so does the read-out after them.
    with_cell("fill_disk", solved, FILL_DISK, "failed", 0, "No space left on device")
    add("dup", solved, "graded", 5)
    (folder / "dup.json").write_text(json.dumps(solved), encoding="utf-8")
    expected["dup.json"] = ("graded", 5, "")
    (folder / os.fsdecode(b"caf\xe9.ipynb")).write_text(json.dumps(solved), encoding="utf-8")
    expected["caf\\xe9.ipynb"] = ("graded", 5, "")

    add("not_json", "print('this is a script, not a notebook')\n", "failed", 0, "invalid JSON")
    add("not_utf8", b"\xff\xfe\x00garbage", "failed", 0, "not UTF-8")
    add("not_notebook", '{"hello": "world"}', "failed", 0, "no `cells` list")
    add(
        "invalid_notebook",
        '{"cells": [{"cell_type": "bogus"}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}',
        "failed",
        0,
        "not a valid notebook",
    )

    broken = copy.deepcopy(solved)
    answer_cells(broken)[1]["source"] = "graded_vector_bytes = = 4"
    # q2's graded part reads q1's, so a broken q1 sinks q2 too.
    add("syntax_error", broken, "graded", 3, "SyntaxError: invalid syntax (line 1)")

    raising = copy.deepcopy(solved)
    answer_cells(raising)[3]["source"] = "graded_read_time_s = 1 / 0"
    add("exception", raising, "graded", 4, "ZeroDivisionError")

    add(
        "infinite_loop",
        with_code(solved, q1_answer + 1, "while True:\n    pass"),
        "graded",
        5,
        "timed out and was interrupted",
    )
    add(
        "sys_exit",
        with_code(solved, q1_answer + 1, "import sys\nsys.exit('bye')"),
        "graded",
        5,
        "SystemExit",
    )
    add(
        "os_exit",
        with_code(solved, q1_answer + 1, "import os\nos._exit(3)"),
        "failed",
        0,
        "the kernel died",
    )

    deleted = copy.deepcopy(solved)
    q3 = next(c for c in answer_cells(deleted) if "graded_compute_time_s" in "".join(c["source"]))
    position = deleted["cells"].index(q3)
    del deleted["cells"][position - 1 : position + 1]  # the graded part's prompt and answer
    add("deleted_cells", deleted, "graded", 3)

    reordered = copy.deepcopy(solved)
    first, second = answer_cells(reordered)[1], answer_cells(reordered)[3]
    i, j = reordered["cells"].index(first), reordered["cells"].index(second)
    reordered["cells"][i], reordered["cells"][j] = second, first
    add("reordered_cells", reordered, "graded", 4, "NameError")

    add("huge_output", with_code(solved, q1_answer + 1, "print('x' * 50_000_000)"), "graded", 5)
    bulky = copy.deepcopy(solved)
    bulky["cells"][q1_answer]["outputs"] = [
        {"output_type": "stream", "name": "stdout", "text": "y" * (21 * 1024**2)}
    ]
    add("huge_file", bulky, "failed", 0, "over the 20 MiB limit")
    add(
        "memory_hog",
        with_code(solved, q1_answer + 1, "hog = bytearray(64 * 1024**3)"),
        "graded",
        5,
        "MemoryError",
    )
    add(
        "fork_many",
        with_code(solved, q1_answer + 1, FORK.format(count=200)),
        "graded",
        5,
        "BlockingIOError",  # the 65th task is refused by the sandbox's RLIMIT_NPROC
    )
    add("fork_few", with_code(solved, q1_answer + 1, FORK.format(count=5)), "graded", 5)

    tamper = answered(
        student,
        {"vector_bytes": 1e7, "graded_vector_bytes": 7e6, "read_time_s": 1.0, "slower": "compute"},
    )
    add("tamper_helpers", with_code(tamper, 1, TAMPER_HELPERS), "graded", 1)
    add(
        "tamper_output",
        with_code(student, 1, TAMPER_OUTPUT.format(out=str(out))),
        "graded",
        0,
        "Read-only file system",
    )

    other = copy.deepcopy(solved)
    other["metadata"]["otter"]["assignment_name"] = "99_other"
    add("wrong_workbook", other, "failed", 0, "this is workbook '99_other', not '00_warmup'")
    return expected


def leftover_kernels(tmp: Path) -> list[int]:
    """Processes still running from a grading sandbox of the batch whose TMPDIR is ``tmp``
    (Linux: read from /proc); a test grading beside it in another worker is not counted."""
    found = []
    if not Path("/proc").is_dir():
        return found
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if os.fsencode(tmp / "perfmodel-grade-") in command:
                found.append(int(entry.name))
    return found


def package_fingerprint() -> str:
    import hashlib

    import perfmodel

    digest = hashlib.sha256()
    for path in sorted(Path(perfmodel.__file__).parent.rglob("*.py")):
        digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.mark.slow
@pytest.mark.skipif(isolation.probe() != "", reason=f"no bubblewrap here: {isolation.probe()}")
def test_fixture_folder_scores_exactly_as_expected(tmp_path):
    workbook = find_workbook("00_warmup", Path("exercises"))
    folder, out = tmp_path / "submissions", tmp_path / "out"
    folder.mkdir()
    expected = build_fixtures(workbook, folder, out)
    right_before = (folder / "right.ipynb").read_bytes()
    package_before = package_fingerprint()
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    command = grade_command(folder, out, cell_s=20, memory_gib=2, disk_mib=256)
    env = {**os.environ, "TMPDIR": str(private_tmp)}
    first = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
    assert f"graded {len(expected)} submissions of 00_warmup" in first.stdout
    sheet = (out / "grades.csv").read_text(encoding="utf-8")
    rows = {row["submission"]: row for row in csv.DictReader(sheet.splitlines())}
    assert set(rows) == set(expected)
    for name, (status, total, phrase) in expected.items():
        row = rows[name]
        assert (row["status"], float(row["total"])) == (status, total), (name, row["reason"])
        assert float(row["possible"]) == 5
        refused_unread = name == "huge_file.ipynb"  # over the size limit: never run
        assert row["isolation"] == ("not run" if refused_unread else column("bubblewrap")), name
        assert phrase in row["reason"], (name, row["reason"])
        if not phrase and status == "graded":
            assert row["reason"] == "", (name, row["reason"])

    partly = read_json(out / "grades_feedback" / "partly_right.ipynb.json")
    q2 = next(q for q in partly["questions"] if q["name"] == "q2")
    assert "8x too large" in q2["cases"][0]["message"]
    hidden = next(q for q in partly["questions"] if q["name"] == "q3")["cases"][-1]
    assert hidden["hidden"] and not hidden["passed"]
    assert "1e-06" not in hidden["message"], "hidden feedback must not reveal the answer"

    feedback = sorted(p.name for p in (out / "grades_feedback").iterdir())
    assert feedback == sorted(f"{name}.json" for name in expected)
    assert not (out / "grades.csv.partial").exists()
    assert leftover_kernels(private_tmp) == [], "grading left processes behind"
    assert list(private_tmp.iterdir()) == [], "grading left files in TMPDIR"
    assert (folder / "right.ipynb").read_bytes() == right_before
    assert package_fingerprint() == package_before, "a submission changed the package"
