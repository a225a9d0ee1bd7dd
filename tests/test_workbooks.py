"""Student copies and autograder zips generated from the masters."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest

from conftest import EXERCISES, WORKBOOKS, answer_cells, assigned, master_namespace, read_json
from perfmodel.grading.workbooks import assign, find_workbook, load_tests, release


def test_there_is_a_warmup_with_three_or_more_questions():
    warmup = find_workbook("00_warmup", EXERCISES)
    assert len(assigned(warmup).tests) >= 3


@pytest.mark.parametrize("workbook", WORKBOOKS, ids=lambda workbook: workbook.name)
def test_committed_student_copy_is_fresh(workbook):
    assert workbook.student.read_text(encoding="utf-8") == assigned(workbook).student_text, (
        f"{workbook.student} is stale: run `make release` (or `perfmodel release`) and commit"
    )


@pytest.mark.parametrize("workbook", WORKBOOKS, ids=lambda workbook: workbook.name)
def test_student_copy_hides_answers_and_hidden_tests(workbook):
    student = read_json(workbook.student)
    assert all("".join(cell["source"]).count("...") for cell in answer_cells(student))
    assert "# SOLUTION" not in workbook.student.read_text(encoding="utf-8")
    public = student["metadata"]["otter"]["tests"]
    hidden = assigned(workbook).tests
    assert set(public) == set(hidden)
    assert sum(src.count("@test_case") for src in public.values()) < sum(
        src.count("@test_case") for src in hidden.values()
    ), "the student copy must carry fewer test cases than the autograder"
    assert "hidden=True" not in "".join(public.values())


def test_release_writes_reproducible_zips_with_the_package(tmp_path):
    exercises = tmp_path / "exercises"
    (exercises / "masters").mkdir(parents=True)
    master = find_workbook("00_warmup", EXERCISES).master
    (exercises / "masters" / master.name).write_bytes(master.read_bytes())
    first = release(exercises, tmp_path / "dist")
    archive = tmp_path / "dist" / "00_warmup-autograder.zip"
    assert first == [exercises / "00_warmup.ipynb", archive]
    data = archive.read_bytes()
    release(exercises, tmp_path / "dist")
    assert archive.read_bytes() == data, "a release must be byte-for-byte reproducible"
    names = zipfile.ZipFile(io.BytesIO(data)).namelist()
    assert "files/perfmodel/exercises.py" in names and "tests/q1.py" in names
    assert set(load_tests(archive)) == {"q1", "q2", "q3", "q4"}


def test_unknown_workbook_lists_the_closest_names():
    with pytest.raises(ValueError, match=r"got '00_warmpu'.*Did you mean '00_warmup'"):
        find_workbook("00_warmpu", EXERCISES)


def test_a_broken_master_fails_with_otters_words(tmp_path):
    master = tmp_path / "masters" / "bad.ipynb"
    master.parent.mkdir()
    master.write_text('{"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}')
    with pytest.raises(RuntimeError, match="otter assign"):
        assign(find_workbook(master, tmp_path))


def test_master_path_is_accepted(tmp_path):
    master = find_workbook("00_warmup", EXERCISES).master
    assert find_workbook(master, Path("elsewhere")).name == "00_warmup"


def _master_namespace_and_checks(workbook):
    """Run a master's own cells (tests aside); list its check_number calls with their source."""
    import ast

    checks, in_tests = [], False
    for cell in read_json(workbook.master)["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "raw":
            in_tests = {"# BEGIN TESTS": True, "# END TESTS": False}.get(source.strip(), in_tests)
        elif cell["cell_type"] == "code" and in_tests:
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "check_number":
                    checks.append(node)
    return master_namespace(workbook), checks


#: How a conceptual slip checked both ways says so in its cause.
_BOTH_WAYS = ("or the reverse", "down or up", "or half of them", "the wrong element width",
              "a slip at the optimum", "or the one after")  # fmt: skip


@pytest.mark.parametrize("workbook", WORKBOOKS, ids=lambda workbook: workbook.name)
def test_every_declared_slip_is_named_for_the_masters_answer(workbook):
    """Each question's slips, applied to the key's own answer, get that slip's hint; a one-way
    slip's mirror does not, and a slip checked both ways says both in its words."""
    import ast

    from perfmodel import exercises

    env, checks = _master_namespace_and_checks(workbook)
    assert checks, f"{workbook.name} has no numeric checks"
    for call in checks:
        name, key = ast.literal_eval(call.args[0]), ast.literal_eval(call.args[2])
        keywords = {kw.arg: kw.value for kw in call.keywords}
        unit = ast.literal_eval(keywords["unit"]) if "unit" in keywords else ""
        slips = (
            eval(compile(ast.Expression(keywords["slips"]), "<slips>", "eval"), vars(exercises))
            if "slips" in keywords
            else exercises.default_slips(unit)
        )
        value = float(env[name])
        exercises.check_number(name, value, key, unit=unit, slips=slips)
        rel_tol = float(key.split(":")[2])
        for slip in slips:
            if slip.reciprocal:
                wrong = [1 / value]
            elif slip.distinguishable(rel_tol):
                wrong = [value * scale for _, scale in slip.scales()]
            else:
                continue  # too close to 1 to tell apart at this tolerance; never named
            for answer in wrong:
                with pytest.raises(exercises.AnswerError) as caught:
                    exercises.check_number(name, answer, key, unit=unit, slips=slips)
                assert slip.cause in str(caught.value), (workbook.name, name, slip.name)
            if slip.direction != "both" and slip.distinguishable(rel_tol):
                # The mirror of a one-way slip (as far off, the other way) is not that slip.
                ((_, scale),) = slip.scales()
                with pytest.raises(exercises.AnswerError) as caught:
                    exercises.check_number(name, value / scale, key, unit=unit, slips=slips)
                assert slip.cause not in str(caught.value), (workbook.name, name, slip.name)
            if not (slip.unit or slip.reciprocal) and slip.direction == "both":
                # Named both ways, a conceptual slip's words must cover both ways.
                assert any(words in slip.cause for words in _BOTH_WAYS), (name, slip.cause)


@pytest.mark.parametrize("workbook", WORKBOOKS, ids=lambda workbook: workbook.name)
def test_no_test_holds_an_expected_value(workbook):
    """Every check, public or hidden, compares against a hashed key, never a raw answer."""
    import ast

    sources = [*read_json(workbook.student)["metadata"]["otter"]["tests"].values()]
    sources += list(assigned(workbook).tests.values())
    calls = 0
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            name = getattr(getattr(node, "func", None), "id", "")
            if isinstance(node, ast.Call) and name == "check_recorded":
                continue  # a measurement typed in by the learner: no answer to hold
            if isinstance(node, ast.Call) and name.startswith("check_"):
                calls += 1
                key = node.args[2]
                assert isinstance(key, ast.Constant) and str(key.value).startswith("pm1:"), (
                    workbook.name,
                    ast.unparse(node)[:80],
                )
    assert calls >= 4


def test_the_instant_check_shows_the_hint_and_not_the_test_code(monkeypatch, tmp_path):
    from perfmodel.checker import Notebook

    student = find_workbook("00_warmup", EXERCISES).student
    (tmp_path / student.name).write_bytes(student.read_bytes())
    monkeypatch.chdir(tmp_path)  # otter writes its log beside the notebook
    grader = Notebook(student.name)
    shown = repr(grader.check("q1", {"vector_bytes": 8e7}))
    assert "8x too large" in shown and "bits-vs-bytes" in shown
    assert "pm1:" not in shown and "check_number" not in shown and "Error at line" not in shown
    assert "passed" in repr(grader.check("q1", {"vector_bytes": 1e7})).lower()


@pytest.mark.parametrize("workbook", WORKBOOKS, ids=lambda workbook: workbook.name)
def test_points_come_only_from_hidden_graded_parts(workbook):
    """Practice is public and worth nothing; each question's points sit in hidden cases only,
    on `graded_` variables whose answers no practice answer gives away."""
    from perfmodel.grading.grade import score_answers

    student = read_json(workbook.student)
    intro = next("".join(c["source"]) for c in student["cells"] if c["cell_type"] == "markdown")
    assert "Practice, then graded" in intro and "no instant check" in intro
    for question in score_answers(assigned(workbook).tests, {}):
        hidden = [case["points"] for case in question.cases if case["hidden"]]
        public = [case["points"] for case in question.cases if not case["hidden"]]
        assert public and all(points == 0 for points in public), (workbook.name, question.name)
        assert hidden and sum(hidden) == question.possible > 0, (workbook.name, question.name)
    public_tests = "".join(student["metadata"]["otter"]["tests"].values())
    assert "graded_" not in public_tests, "a graded part's check must not ship"
    env = master_namespace(workbook)
    graded = {name: value for name, value in env.items() if name.startswith("graded_")}
    practice = {
        name: value
        for name, value in env.items()
        if not name.startswith(("graded_", "_")) and isinstance(value, (int, float, str))
    }
    assert len(graded) >= len(assigned(workbook).tests)
    for name, value in graded.items():
        for other, known in practice.items():
            if isinstance(value, str) or isinstance(known, str):
                continue
            same = value == known or (known and abs(value / known - 1) < 0.015)
            assert not same, f"{workbook.name}: {name} = {value!r} is {other} = {known!r}"
