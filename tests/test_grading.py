"""Honest grading, proven: keys score full marks, blanks score zero, and a folder of right,
partly right, broken and tampering submissions scores exactly as expected."""

from __future__ import annotations

import copy
import csv
import io
import json
import os
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import pytest
from attacks import level_args, scoring_level

from conftest import WORKBOOKS, answer_cells, assigned, master_namespace, read_json, solved_copy
from perfmodel.cli import _tests_for
from perfmodel.grading.grade import grade_folder, grade_submission, score_answers, write_feedback
from perfmodel.grading.sandbox import Limits, _how_it_died, _parse_report
from perfmodel.grading.workbooks import find_workbook

# Generous time: these tests check scores, and workbook 10's certified-gap cells take 6 s on a
# quiet 2-core machine, over 10 s beside the rest of the suite (a timeout is tested apart).
LIMITS = Limits(wall_s=240, cell_s=40, memory_bytes=4 * 1024**3, max_processes=64)


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
        isolation_level=scoring_level(),
    )
    assert (right.status, right.reason) == ("graded", "")
    assert right.total == right.possible > 0
    assert all(case["passed"] for question in right.questions for case in question.cases)
    assert any(case["hidden"] for question in right.questions for case in question.cases), (
        "every workbook needs at least one hidden test"
    )

    # The master's own answers, computed in this process from its solution cells.
    namespace = master_namespace(workbook)
    answers = {name: namespace[name] for name in namespace if not name.startswith("_")}
    master = score_answers(tests, {k: v for k, v in answers.items() if _plain(v)})
    assert sum(q.score for q in master) == sum(q.possible for q in master)

    blank = grade_submission(
        workbook.student,
        tests,
        assignment=workbook.name,
        limits=LIMITS,
        isolation_level=scoring_level(),
    )
    assert (blank.status, blank.total) == ("graded", 0)


def _plain(value) -> bool:
    return isinstance(value, (int, float, str, bool))


@pytest.mark.parametrize(("copy", "total"), [("key", 5), ("blank", 0)])
def test_gradescope_zip_through_otters_own_runner(tmp_path, copy, total):
    """The released zip, run by otter's non-containerised runner, scores like the grader."""
    workbook = find_workbook("00_warmup", Path("exercises"))
    archive = tmp_path / "autograder.zip"
    archive.write_bytes(assigned(workbook).autograder_zip)
    nb = solved_copy(workbook) if copy == "key" else read_json(workbook.student)
    write(tmp_path, f"{workbook.name}.ipynb", nb)
    subprocess.run(
        [sys.executable, "-m", "otter", "run", "-a", str(archive), f"{workbook.name}.ipynb"],
        cwd=tmp_path,
        check=True,
        capture_output=True,
    )
    results = read_json(tmp_path / "results.json")
    scored = {test["name"]: test for test in results["tests"] if test["name"].startswith("q")}
    assert set(scored) == {"q1", "q2", "q3", "q4"}
    assert sum(test["score"] for test in scored.values()) == total


@pytest.mark.parametrize(("copy", "total"), [("key", 5), ("blank", 0)])
def test_gradescope_runner_is_the_clean_room_pipeline(tmp_path, copy, total):
    """The zip's run_autograder: perfmodel.grading.gradescope in Gradescope's /autograder layout."""
    workbook = find_workbook("00_warmup", Path("exercises"))
    data = assigned(workbook).autograder_zip
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        archive.extractall(tmp_path / "source")
        assert "perfmodel.grading.gradescope" in archive.read("run_autograder").decode()
    (tmp_path / "submission").mkdir()
    nb = solved_copy(workbook) if copy == "key" else read_json(workbook.student)
    write(tmp_path / "submission", "anything.ipynb", nb)
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "source" / "files")}
    subprocess.run(
        [sys.executable, "-m", "perfmodel.grading.gradescope", str(tmp_path), *level_args()],
        check=True,
        env=env,
        cwd=tmp_path / "submission",
        capture_output=True,
    )
    results = read_json(tmp_path / "results" / "results.json")
    assert results["score"] == total
    assert sum(test["score"] for test in results["tests"]) == total
    hidden = [test for test in results["tests"] if test["visibility"] == "after_published"]
    assert hidden and all("1e-06" not in test["output"] for test in results["tests"])


def test_score_answers_needs_no_notebook(tests_by_workbook):
    tests = tests_by_workbook["00_warmup"]
    answers = {"vector_bytes": 1e7, "graded_vector_bytes": 7e6, "read_time_s": 2e-4}
    answers |= {"matvec_flops": 3e6}
    by_name = {q.name: q for q in score_answers(tests, answers)}
    assert by_name["q1"].score == 1
    assert by_name["q2"].score == 0
    assert "8x too large" in by_name["q2"].cases[0]["message"]
    assert "2x too small" in by_name["q3"].cases[0]["message"]
    assert "multiply-add" in by_name["q3"].cases[0]["message"]


def test_regrading_gives_the_same_csv(tmp_path):
    workbook = find_workbook("00_warmup", Path("exercises"))
    folder, out = tmp_path / "submissions", tmp_path / "out"
    folder.mkdir()
    partly = copy.deepcopy(solved_copy(workbook))
    answer_cells(partly)[3]["source"] = "graded_read_time_s = 8 * graded_vector_bytes / 1.6e12"
    write(folder, "partly.ipynb", partly)
    (folder / "script.ipynb").write_text("print('not a notebook')")
    command = [
        sys.executable, "-m", "perfmodel.cli", "grade", "00_warmup", str(folder),
        "--out", str(out / "grades.csv"), "--jobs", "2", "--no-progress", *level_args(),
    ]  # fmt: skip
    sheets = []
    for _ in range(2):
        subprocess.run(command, capture_output=True, text=True, check=True)
        sheets.append((out / "grades.csv").read_text(encoding="utf-8"))
    assert sheets[0] == sheets[1], "re-grading changed the CSV"
    totals = {row["submission"]: row["total"] for row in csv.DictReader(sheets[0].splitlines())}
    assert totals == {"partly.ipynb": "4", "script.ipynb": "0"}


def test_a_malformed_or_missing_report_becomes_a_reason():
    assert _parse_report(b"") == ""
    assert _parse_report(b'{"answers": 3}') == "the grading worker's report was malformed"
    forged = {"answers": {}, "cell_errors": [[1, ["x"], "y"]], "timed_out_cells": [], "problem": ""}
    assert _parse_report(json.dumps(forged).encode()) == "the grading worker's report was malformed"
    assert "could not be read" in _parse_report(b"not json")
    assert "killed by SIGKILL" in _how_it_died(-9, LIMITS)


def test_a_renamed_zip_keeps_its_workbook_name(tmp_path):
    workbook = find_workbook("00_warmup", Path("exercises"))
    archive = tmp_path / "00_warmup-autograder (1).zip"
    archive.write_bytes(assigned(workbook).autograder_zip)
    name, tests = _tests_for(str(archive), Path("exercises"))
    assert name == "00_warmup" and set(tests) == {"q1", "q2", "q3", "q4"}


def test_grade_folder_gives_every_file_one_row_even_when_grading_fails(tmp_path, monkeypatch):
    import perfmodel.grading.grade as grading

    (tmp_path / "a.ipynb").write_text("{}")
    (tmp_path / "b.ipynb").write_text("{}")

    def explode(path, *args, **kwargs):
        if path.name == "a.ipynb":
            raise RuntimeError("boom")
        return real(path, *args, **kwargs)

    real = grading.grade_submission
    monkeypatch.setattr(grading, "grade_submission", explode)
    grades = grade_folder(
        {}, tmp_path, assignment="00_warmup", progress=False, isolation_level=scoring_level()
    )
    assert [(g.submission, g.status) for g in grades] == [
        ("a.ipynb", "failed"),
        ("b.ipynb", "failed"),
    ]
    assert "the grader failed on this file: RuntimeError: boom" in grades[0].reason


def test_feedback_names_are_distinct():
    from perfmodel.grading.grade import SubmissionGrade, feedback_names

    grades = [
        SubmissionGrade(submission=name, status="graded", reason="", questions=())
        for name in ("dup.ipynb", "dup.json", "dup.ipynb")
    ]
    assert feedback_names(grades) == ["dup.ipynb.json", "dup.json.json", "dup.ipynb~2.json"]


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
    with pytest.raises(ValueError, match="`wall_s` must be positive and finite"):
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


def test_what_the_instant_check_accepts_gets_full_marks(tests_by_workbook):
    # 0.513 is within 1% of the A100's 0.5128: the practice check passes, in the grader too; and
    # a graded answer 0.9% off the H100's 0.6064 gets the question's full marks.
    tests = tests_by_workbook["01_measure_what_matters"]
    answers = {
        "utilization_a100": 0.513,
        "graded_utilization_h100": 6e12 / 10e-3 / 989.5e12 * 1.009,
    }
    q2 = {q.name: q for q in score_answers(tests, answers)}["q2"]
    assert all(case["passed"] for case in q2.cases)
    assert q2.score == q2.possible == 1


def test_without_any_isolation_grading_refuses_unless_asked(tmp_path, monkeypatch, capsys):
    """Neither bubblewrap nor an unprivileged user can run: grade_folder raises before the
    first submission, saying why and how to fix it; asked for by name, level none grades."""
    from perfmodel.grading import isolation, levels

    monkeypatch.setattr(isolation, "probe", lambda: "bubblewrap (`bwrap`) is not installed")
    monkeypatch.setattr(levels, "unprivileged_problem", lambda: "it cannot pass through /x")
    workbook = find_workbook("00_warmup", Path("exercises"))
    write(tmp_path, "right.ipynb", solved_copy(workbook))
    tests, seen = assigned(workbook).tests, []
    with pytest.raises(RuntimeError) as refused:
        grade_folder(tests, tmp_path, assignment="00_warmup", progress=False, on_result=seen.append)
    assert seen == []
    for phrase in ("nothing was graded", "`bwrap`) is not installed", "/x", "--no-isolation"):
        assert phrase in str(refused.value)
    for level in ("bubblewrap", "unprivileged"):
        with pytest.raises(RuntimeError, match="cannot grade"):
            levels.choose(level)
    [grade] = grade_folder(
        tests, tmp_path, assignment="00_warmup", progress=False, isolation_level="none"
    )
    assert (grade.status, grade.total, grade.isolation) == ("graded", 5, "none")
    levels.warn.__wrapped__("none")
    assert "WARNING: grading WITHOUT isolation (--no-isolation)" in capsys.readouterr().err


def test_a_stopped_batch_keeps_every_row_it_graded(tmp_path):
    import signal
    import time

    workbook = find_workbook("00_warmup", Path("exercises"))
    folder, out = tmp_path / "submissions", tmp_path / "out"
    folder.mkdir()
    for index in range(6):
        write(folder, f"right_{index}.ipynb", solved_copy(workbook))
    command = [
        sys.executable, "-m", "perfmodel.cli", "grade", "00_warmup", str(folder),
        "--out", str(out / "grades.csv"), "--jobs", "1", "--no-progress", *level_args(),
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    partial = out / "grades.csv.partial"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if partial.is_file() and len(partial.read_text().splitlines()) >= 2:
            break
        time.sleep(0.1)
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=120)
    assert process.returncode == 130
    assert f"the rows graded so far are in {partial}" in err
    rows = list(csv.DictReader(partial.read_text().splitlines()))
    assert 1 <= len(rows) < 6 and all(row["total"] == "5" for row in rows)
    assert not (out / "grades.csv").exists()


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="kill_descendants reads /proc")
def test_kill_descendants_counts_an_unreaped_child_once():
    from perfmodel.grading.sandbox import kill_descendants

    # The parent starts a child and never reaps it: once killed, the child stays a zombie.
    code = (
        "import subprocess, time; subprocess.Popen(['sleep', '60']); "
        "print(flush=True); time.sleep(60)"
    )
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
    try:
        assert parent.stdout is not None
        parent.stdout.readline()  # the child has been started
        assert kill_descendants(parent.pid) == 1
        # The child is still listed, as a zombie; a second call has nothing to kill.
        children = Path(f"/proc/{parent.pid}/task/{parent.pid}/children").read_text().split()
        assert len(children) == 1
        assert Path(f"/proc/{children[0]}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
        assert kill_descendants(parent.pid) == 0
    finally:
        parent.kill()
        parent.wait()


def _state(pid: int) -> str:
    """A process's state letter (R, S, Z...), or "gone" once reaped."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def _exited_worker(sandbox) -> tuple[subprocess.Popen[str], int]:
    """A worker that has exited, as the watchdog sees it, leaving a process in its group."""
    worker = subprocess.Popen(["sh", "-c", "sleep 60 & echo $!"], stdout=subprocess.PIPE,
                              text=True, start_new_session=True)  # fmt: skip
    assert worker.stdout is not None
    left_behind = int(worker.stdout.readline())
    deadline = time.monotonic() + 30
    while sandbox._running(worker):
        assert time.monotonic() < deadline
        time.sleep(0.01)
    return worker, left_behind


def _wait_until_killed(pid: int) -> None:
    deadline = time.monotonic() + 30
    while _state(pid) not in ("Z", "X", "gone"):
        assert time.monotonic() < deadline, "the process the worker left in its group runs on"
        time.sleep(0.01)


@pytest.mark.skipif(not hasattr(os, "waitid"), reason="waitid looks without reaping")
def test_a_worker_that_exited_keeps_its_pid_until_its_group_is_killed():
    from perfmodel.grading import sandbox

    worker, left_behind = _exited_worker(sandbox)
    # Seen to have exited, but not reaped: its pid, and its group's id, are still its own.
    assert _state(worker.pid) == "Z"
    assert _state(left_behind) in ("S", "R")
    sandbox._kill_tree(worker)
    assert worker.returncode == 0
    _wait_until_killed(left_behind)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_without_waitid_the_group_an_exited_worker_leaves_is_still_killed(monkeypatch):
    from perfmodel.grading import sandbox

    monkeypatch.setattr(sandbox, "_CAN_LOOK", False)  # as on macOS before Python 3.13
    worker, left_behind = _exited_worker(sandbox)
    assert worker.returncode == 0  # reaped to see it exit
    sandbox._kill_tree(worker)
    _wait_until_killed(left_behind)


def test_a_reaped_worker_s_pid_is_never_signalled(monkeypatch):
    from perfmodel.grading import sandbox

    # Once reaped, the pid may be anyone's: a Jupyter kernel leads its own group by it.
    worker = subprocess.Popen(["true"], start_new_session=True)
    worker.wait()
    signalled: list[tuple[str, int]] = []
    monkeypatch.setattr(os, "killpg", lambda pid, sig: signalled.append(("group", pid)))
    monkeypatch.setattr(sandbox, "kill_descendants", lambda pid: signalled.append(("tree", pid)))
    sandbox._kill_tree(worker)
    assert signalled == []


def test_safe_text_never_exceeds_its_limit():
    from perfmodel.grading.text import safe_text

    for limit in range(1, 8):
        assert len(safe_text("abcdef", limit)) <= limit
    assert safe_text("abcdef", 2) == "ab"
    assert safe_text("abcdef", 5) == "ab..."
    assert safe_text("abcdef", 6) == "abcdef"
    assert safe_text("abcdef", 2.0) == "ab"  # a whole-number float is a count, as typed
    for bad, error in ((0, ValueError), (-1, ValueError), (2.5, ValueError), (True, TypeError)):
        with pytest.raises(error, match="limit"):
            safe_text("abcdef", bad)  # type: ignore[arg-type]


def test_a_report_with_a_bool_for_a_timed_out_cell_is_malformed():
    good = {"answers": {}, "cell_errors": [], "timed_out_cells": [3], "problem": ""}
    assert _parse_report(json.dumps(good).encode()) == good
    malformed = "the grading worker's report was malformed"
    for cells in ([True], [1, False]):
        forged = {**good, "timed_out_cells": cells}
        assert _parse_report(json.dumps(forged).encode()) == malformed
