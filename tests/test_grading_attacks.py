"""The second hostile campaign, graded in one batch by the CLI and through Gradescope's layout.

Every attack scores 0, honest work full marks, every entry in the folder gets exactly one
row, text fields are bounded and safe for a spreadsheet, and nothing is left behind.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from attacks import answered, build_attacks, recovered_answers, search_key, shipped_keys
from conftest import WORKBOOKS, assigned, read_json, solved_copy, with_code
from test_grading_hostile import leftover_kernels, package_fingerprint

from perfmodel import exercises
from perfmodel.course import isolation
from perfmodel.course.grading import MAX_TEXT, score_answers
from perfmodel.course.workbooks import find_workbook

needs_bubblewrap = pytest.mark.skipif(
    isolation.probe() != "", reason=f"no bubblewrap here: {isolation.probe()}"
)


@pytest.fixture(scope="module")
def attack_batch(tmp_path_factory):
    """One CLI batch over the whole attack folder, shared by every test below."""
    root = tmp_path_factory.mktemp("attacks")
    workbook = find_workbook("00_warmup", Path("exercises"))
    folder, out, private_tmp = root / "submissions", root / "out", root / "tmp"
    for path in (folder, private_tmp):
        path.mkdir()
    expected = build_attacks(workbook, folder)
    package_before = package_fingerprint()
    command = [
        sys.executable, "-m", "perfmodel.course.cli", "grade", "00_warmup", str(folder),
        "--out", str(out / "grades.csv"), "--timeout", "90", "--cell-timeout", "30",
        "--memory-gib", "1", "--disk-mib", "64", "--jobs", "2", "--no-progress",
    ]  # fmt: skip
    env = {**os.environ, "TMPDIR": str(private_tmp)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    return {
        "done": done,
        "expected": expected,
        "out": out,
        "tmp": private_tmp,
        "package_before": package_before,
        "rows": list(csv.DictReader(io.StringIO((out / "grades.csv").read_text("utf-8"))))
        if (out / "grades.csv").is_file()
        else [],
    }


@pytest.mark.slow
@needs_bubblewrap
def test_every_attack_scores_zero_and_honest_work_full_marks(attack_batch):
    assert attack_batch["done"].returncode == 0, attack_batch["done"].stderr[-2000:]
    rows = {row["submission"].removeprefix("'"): row for row in attack_batch["rows"]}
    for name, (status, total, phrase) in attack_batch["expected"].items():
        row = rows[name]
        assert (row["status"], float(row["total"])) == (status, total), (name, row["reason"])
        assert phrase in row["reason"], (name, row["reason"])
        assert float(row["possible"]) == 5
        ran = row["isolation"]
        assert ran == (
            "not run" if name in {"link.ipynb", "classmate_link.ipynb", ".ipynb"} else "bubblewrap"
        ), (name, ran)


@pytest.mark.slow
@needs_bubblewrap
def test_every_entry_gets_one_row_and_names_stay_distinct(attack_batch):
    names = [row["submission"] for row in attack_batch["rows"]]
    assert len(names) == len(set(names)) == len(attack_batch["expected"])
    assert "caf\\xe9.ipynb" in names and "caf\\\\xe9.ipynb" in names
    feedback = attack_batch["out"] / "grades_feedback"
    assert len(list(feedback.iterdir())) == len(names)


@pytest.mark.slow
@needs_bubblewrap
def test_text_fields_are_bounded_escaped_and_safe_in_a_spreadsheet(attack_batch):
    rows = {row["submission"]: row for row in attack_batch["rows"]}
    assert "'=HYPERLINK(1).ipynb" in rows, "a formula-like name must be quoted"
    for row in attack_batch["rows"]:
        for field in ("submission", "reason"):
            assert len(row[field]) <= MAX_TEXT
            assert not row[field].startswith(("=", "+", "-", "@"))
            assert all(ord(char) >= 32 for char in row[field])
    assert "raised EEE" in rows["long_name.ipynb"]["reason"]
    for name in ("surrogate.ipynb.json", "surrogate_answers.ipynb.json"):
        text = (attack_batch["out"] / "grades_feedback" / name).read_bytes()
        record = json.loads(text.decode("utf-8"))  # valid UTF-8: no lone surrogate got in
        messages = [case["message"] for q in record["questions"] for case in q["cases"]]
        assert all(len(message) <= MAX_TEXT for message in messages)
    answers = read_json(attack_batch["out"] / "grades_feedback" / "surrogate_answers.ipynb.json")
    assert "\\udcff" in json.dumps(answers, ensure_ascii=False)


@pytest.mark.slow
@needs_bubblewrap
def test_the_batch_leaves_nothing_behind(attack_batch):
    assert list(attack_batch["tmp"].iterdir()) == [], "grading left files in TMPDIR"
    assert leftover_kernels() == [], "grading left processes behind"
    assert package_fingerprint() == attack_batch["package_before"]
    assert not (attack_batch["out"] / "grades.csv.partial").exists()


@pytest.mark.parametrize("workbook", WORKBOOKS, ids=lambda workbook: workbook.name)
def test_a_search_of_every_shipped_key_scores_zero(workbook):
    """The shipped keys fall to search (the attack is real), and buy nothing."""
    student = read_json(workbook.student)
    answers = recovered_answers(student)
    for question, checks in shipped_keys(student).items():
        for name, key, _ in checks:
            if ":count:" in key:
                continue  # whole numbers are searched up to two million only
            assert answers[name] is not None, f"{workbook.name} {question} {name}: search failed"
    scored = score_answers(assigned(workbook).tests, answers)
    practice = [case for q in scored for case in q.cases if not case["hidden"]]
    assert all(case["points"] == 0 for case in practice), "practice carries no points"
    assert sum(q.score for q in scored) == 0, [(q.name, q.score) for q in scored]
    assert sum(q.possible for q in scored) > 0


def test_the_key_search_recovers_a_value_the_check_accepts():
    key = exercises.number_key(3.7e-4, rel_tol=0.01, salt="attack/q1/x")
    exercises.check_number("x", search_key(key), key)
    assert (
        search_key(exercises.choice_key("memory", salt="attack/q2/y"), ("compute", "memory"))
        == "memory"
    )


# --- Gradescope's /autograder layout ------------------------------------------------------

GRADESCOPE_HOSTILE = """
import glob, os
root = {root!r}
attack_worked = False
for path in glob.glob(root + "/source/tests/*.py") + glob.glob(root + "/source/otter_config.json"):
    try:
        open(path).read(1)
        attack_worked = True
    except OSError:
        pass
targets = [(root + "/run_autograder", "a"), (root + "/results/results.json", "w"),
           (root + "/lib/perfmodel/exercises.py", "a"), (root + "/lib/sitecustomize.py", "w"),
           (root + "/source/files/perfmodel/exercises.py", "a")]
for path, mode in targets:
    try:
        with open(path, mode) as handle:
            handle.write("\\n# rigged\\n")
        attack_worked = True
    except OSError:
        pass
os.makedirs("perfmodel", exist_ok=True)
with open("perfmodel/__init__.py", "w") as handle:  # a shadow package in its own folder
    handle.write("raise SystemExit('rigged')")
"""


@pytest.fixture
def traversable_root():
    """Let an unprivileged user reach a Python installed under /root, as run_autograder does."""
    before = os.stat("/root").st_mode if os.path.isdir("/root") else None
    if before is not None and os.geteuid() == 0:
        os.chmod("/root", before | stat.S_IXOTH)
    yield
    if before is not None and os.geteuid() == 0:
        os.chmod("/root", stat.S_IMODE(before))


def _autograder(tmp_path: Path, nb: dict, workbook) -> Path:
    root = tmp_path / "autograder"
    with zipfile.ZipFile(io.BytesIO(assigned(workbook).autograder_zip)) as archive:
        archive.extractall(root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    (root / "results").mkdir()
    (root / "submission" / "anything.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    return root


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="Gradescope runs the autograder as root")
@pytest.mark.parametrize("with_bwrap", [True, False], ids=["bubblewrap", "no-bubblewrap"])
def test_gradescope_layout_holds_with_and_without_bubblewrap(
    tmp_path, with_bwrap, traversable_root
):
    if with_bwrap and isolation.probe():
        pytest.skip(f"no bubblewrap here: {isolation.probe()}")
    workbook = find_workbook("00_warmup", Path("exercises"))
    student = read_json(workbook.student)
    cases = {
        "honest": (solved_copy(workbook), 5),
        "key_search": (answered(student, recovered_answers(student)), 0),
    }
    for name, (nb, total) in cases.items():
        root = _autograder(tmp_path / name, nb, workbook)
        results = _run_autograder(root, with_bwrap)
        assert results["score"] == total, (name, results["output"])
    root = _autograder(tmp_path / "hostile", {}, workbook)
    hostile = with_code(student, 1, GRADESCOPE_HOSTILE.format(root=str(root)))
    (root / "submission" / "anything.ipynb").write_text(json.dumps(hostile), encoding="utf-8")
    runner = (root / "run_autograder").read_bytes()
    results = _run_autograder(root, with_bwrap)
    assert results["score"] == 0, results["output"]
    level = "bubblewrap" if with_bwrap else "unprivileged"
    if not with_bwrap:
        assert "isolation level 'unprivileged'" in results["output"]
    assert (root / "run_autograder").read_bytes() == runner
    assert b"rigged" not in (root / "lib" / "perfmodel" / "exercises.py").read_bytes()
    assert not (root / "lib" / "sitecustomize.py").exists()
    assert stat.S_IMODE((root / "source").stat().st_mode) == 0o700, level


def _run_autograder(root: Path, with_bwrap: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root / "source" / "files")}
    env.pop("PERFMODEL_LOCKED", None)
    if not with_bwrap:
        env["PATH"] = str(root / "no-tools-here")
    subprocess.run(
        [sys.executable, "-m", "perfmodel.course.gradescope", str(root)],
        check=True, env=env, cwd=root, capture_output=True,
    )  # fmt: skip
    return read_json(root / "results" / "results.json")
