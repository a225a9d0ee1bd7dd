"""Honest grading, proven: keys score full marks, blanks score zero, and a folder of right,
partly right, broken and tampering submissions scores exactly as expected."""

from __future__ import annotations

import copy
import csv
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import WORKBOOKS, answer_cells, assigned, read_json, solved_copy, with_code

from perfmodel.grading import grade_folder, grade_submission, score_answers, write_feedback
from perfmodel.sandbox import Limits
from perfmodel.workbooks import find_workbook

LIMITS = Limits(wall_s=90, cell_s=10, memory_bytes=4 * 1024**3, max_processes=64)


@pytest.fixture(scope="module")
def tests_by_workbook() -> dict[str, dict[str, str]]:
    return {workbook.name: assigned(workbook).tests for workbook in WORKBOOKS}


def write(folder: Path, name: str, nb: dict) -> Path:
    path = folder / name
    path.write_text(json.dumps(nb), encoding="utf-8")
    return path


@pytest.mark.parametrize("workbook", WORKBOOKS, ids=lambda workbook: workbook.name)
def test_master_scores_full_marks_and_blank_scores_zero(workbook, tests_by_workbook, tmp_path):
    tests = tests_by_workbook[workbook.name]
    right = grade_submission(
        write(tmp_path, "solved.ipynb", solved_copy(workbook)),
        tests,
        assignment=workbook.name,
        limits=LIMITS,
    )
    assert (right.status, right.reason) == ("graded", "")
    assert right.total == right.possible > 0
    assert all(case["passed"] for question in right.questions for case in question.cases)
    assert any(case["hidden"] for question in right.questions for case in question.cases), (
        "every workbook needs at least one hidden test"
    )

    master = grade_submission(workbook.master, tests, assignment=workbook.name, limits=LIMITS)
    assert master.total == master.possible

    blank = grade_submission(workbook.student, tests, assignment=workbook.name, limits=LIMITS)
    assert (blank.status, blank.total) == ("graded", 0)


def test_gradescope_zip_scores_the_key_with_otters_own_runner(tmp_path):
    """The released zip, run by otter's non-containerised runner (what Gradescope runs)."""
    workbook = find_workbook("00_warmup", Path("exercises"))
    archive = tmp_path / "autograder.zip"
    archive.write_bytes(assigned(workbook).autograder_zip)
    write(tmp_path, f"{workbook.name}.ipynb", solved_copy(workbook))
    subprocess.run(
        [sys.executable, "-m", "otter", "run", "-a", str(archive), f"{workbook.name}.ipynb"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    results = read_json(tmp_path / "results.json")
    scored = {test["name"]: test for test in results["tests"] if test["name"].startswith("q")}
    assert set(scored) == {"q1", "q2", "q3", "q4"}
    assert all(test["score"] == test["max_score"] for test in scored.values())


def test_score_answers_needs_no_notebook(tests_by_workbook):
    tests = tests_by_workbook["00_warmup"]
    answers = {"vector_bytes": 1e7, "read_time_s": 2e-4, "matvec_flops": 3e6}
    by_name = {q.name: q for q in score_answers(tests, answers)}
    assert by_name["q1"].score == 1
    assert by_name["q2"].score == 0
    assert "exactly 8x too large" in by_name["q2"].cases[0]["message"]
    assert "exactly 2x too small" in by_name["q3"].cases[0]["message"]
    assert "multiply-add" in by_name["q3"].cases[0]["message"]


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
feedback = out / "grades_feedback"
feedback.mkdir(exist_ok=True)
(feedback / "tamper_output.json").write_text(json.dumps({{"total": 999}}))
(feedback / "zz_forged.json").write_text("{{}}")
guess = "0" * 32
print(guess + json.dumps({{"vector_bytes": 1e7, "slower": "memory"}}) + guess)
"""


def build_fixtures(workbook, folder: Path, out: Path) -> dict[str, tuple[str, float, str]]:
    """Write every fixture; return name -> (status, total, a phrase the reason must hold)."""
    student = read_json(workbook.student)
    solved = solved_copy(workbook)
    q1_answer = solved["cells"].index(answer_cells(solved)[0])
    expected: dict[str, tuple[str, float, str]] = {}

    def add(name: str, nb: dict | bytes | str, status: str, total: float, phrase: str = ""):
        path = folder / f"{name}.ipynb"
        if isinstance(nb, dict):
            path.write_text(json.dumps(nb), encoding="utf-8")
        elif isinstance(nb, bytes):
            path.write_bytes(nb)
        else:
            path.write_text(nb, encoding="utf-8")
        expected[path.name] = (status, total, phrase)

    add("right", solved, "graded", 5)
    add("untouched", student, "graded", 0)

    partly = copy.deepcopy(student)
    cells = answer_cells(partly)
    cells[0]["source"] = "vector_bytes = 4 * 2_500_000"
    cells[1]["source"] = "read_time_s = 8 * vector_bytes / 400e9"  # bits, not bytes
    cells[2]["source"] = "matvec_flops = 6e6\ncompute_time_s = 5e-4"  # (b) off by 1000
    cells[3]["source"] = "slower = 'compute'"
    add("partly_right", partly, "graded", 2)

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
    answer_cells(broken)[0]["source"] = "vector_bytes = = 4"
    # q2 reads q1's variable, so a broken q1 sinks q2 too.
    add("syntax_error", broken, "graded", 3, "SyntaxError: invalid syntax (line 1)")

    raising = copy.deepcopy(solved)
    answer_cells(raising)[1]["source"] = "read_time_s = 1 / 0"
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
    q3 = answer_cells(deleted)[2]
    position = deleted["cells"].index(q3)
    del deleted["cells"][position - 1 : position + 2]  # prompt, answer, check
    add("deleted_cells", deleted, "graded", 3)

    reordered = copy.deepcopy(solved)
    first, second = answer_cells(reordered)[:2]
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
        "failed",
        0,
        "more than 64 processes",
    )
    add("fork_few", with_code(solved, q1_answer + 1, FORK.format(count=5)), "graded", 5)

    tamper = copy.deepcopy(student)
    answer_cells(tamper)[0]["source"] = "vector_bytes = 1e7"
    answer_cells(tamper)[1]["source"] = "read_time_s = 1.0"
    answer_cells(tamper)[3]["source"] = "slower = 'compute'"
    add("tamper_helpers", with_code(tamper, 1, TAMPER_HELPERS), "graded", 1)
    add("tamper_output", with_code(student, 1, TAMPER_OUTPUT.format(out=str(out))), "graded", 0)

    other = copy.deepcopy(solved)
    other["metadata"]["otter"]["assignment_name"] = "99_other"
    add("wrong_workbook", other, "failed", 0, "this is workbook '99_other', not '00_warmup'")
    return expected


def leftover_kernels() -> list[int]:
    """Processes still running from a grading sandbox (Linux: read from /proc)."""
    found = []
    if not Path("/proc").is_dir():
        return found
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
            except OSError:
                continue
            if b"perfmodel-grade-" in command:
                found.append(int(entry.name))
    return found


@pytest.mark.slow
def test_fixture_folder_scores_exactly_as_expected(tmp_path):
    workbook = find_workbook("00_warmup", Path("exercises"))
    folder, out = tmp_path / "submissions", tmp_path / "out"
    folder.mkdir()
    expected = build_fixtures(workbook, folder, out)
    command = [
        sys.executable, "-m", "perfmodel.cli", "grade", "00_warmup", str(folder),
        "--out", str(out / "grades.csv"), "--timeout", "90", "--cell-timeout", "10",
        "--jobs", "2", "--no-progress",
    ]  # fmt: skip
    first = subprocess.run(command, capture_output=True, text=True, check=True)
    assert f"graded {len(expected)} submissions of 00_warmup" in first.stdout
    sheet = (out / "grades.csv").read_text(encoding="utf-8")
    rows = {row["submission"]: row for row in csv.DictReader(sheet.splitlines())}
    assert set(rows) == set(expected)
    for name, (status, total, phrase) in expected.items():
        row = rows[name]
        assert (row["status"], float(row["total"])) == (status, total), (name, row)
        assert float(row["possible"]) == 5
        assert phrase in row["reason"], (name, row["reason"])
        if not phrase and status == "graded":
            assert row["reason"] == "", (name, row["reason"])

    partly = read_json(out / "grades_feedback" / "partly_right.json")
    q2 = next(q for q in partly["questions"] if q["name"] == "q2")
    assert "exactly 8x too large" in q2["cases"][0]["message"]
    hidden = next(q for q in partly["questions"] if q["name"] == "q3")["cases"][1]
    assert hidden["hidden"] and not hidden["passed"]
    assert "5e-07" not in hidden["message"], "hidden feedback must not reveal the answer"

    feedback = sorted(p.name for p in (out / "grades_feedback").iterdir())
    assert feedback == sorted(name.replace(".ipynb", ".json") for name in expected)
    assert read_json(out / "grades_feedback" / "tamper_output.json")["total"] == 0
    assert leftover_kernels() == [], "grading left processes behind"

    second = subprocess.run(command, capture_output=True, text=True, check=True)
    assert second.returncode == 0
    assert (out / "grades.csv").read_text(encoding="utf-8") == sheet, "re-grading changed the CSV"


def test_feedback_refuses_a_folder_with_other_files(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="holds files that are not feedback JSON"):
        write_feedback([], tmp_path)
    assert (tmp_path / "notes.txt").exists()


def test_feedback_creates_its_folder(tmp_path):
    target = tmp_path / "new" / "feedback"
    write_feedback([], target)
    assert target.is_dir() and not any(target.iterdir())


def test_grade_folder_rejects_a_missing_folder(tmp_path):
    with pytest.raises(ValueError, match="`submissions` must be a folder"):
        grade_folder({}, tmp_path / "nope", assignment="00_warmup", progress=False)
    with pytest.raises(ValueError, match="`jobs` must be at least 1"):
        grade_folder({}, tmp_path, assignment="00_warmup", jobs=0, progress=False)


def test_limits_are_validated():
    with pytest.raises(ValueError, match="`wall_s` must be positive"):
        Limits(wall_s=0)
    with pytest.raises(ValueError, match="`cell_s` must not exceed `wall_s`"):
        Limits(wall_s=5, cell_s=10)


def test_cli_reports_an_unknown_workbook(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "perfmodel.cli", "grade", "00_warmpu", str(tmp_path)],
        capture_output=True,
        text=True,
        env={**os.environ},
    )
    assert done.returncode == 2
    assert "Did you mean '00_warmup'" in done.stderr
