"""Student copies and autograder zips generated from the masters."""

from __future__ import annotations

import io
import zipfile
from pathlib import Path

import pytest
from slip_values import SLIP_VALUES

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
    assert "files/perfmodel/exercises/checks.py" in names and "tests/q1.py" in names
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


_CHECKS = ("check_number", "check_count", "check_implied_work")


def _master_namespace_and_checks(workbook):
    """Run a master's own cells (tests aside); list its numeric checks' calls."""
    import ast

    checks, in_tests = [], False
    for cell in read_json(workbook.master)["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "raw":
            in_tests = {"# BEGIN TESTS": True, "# END TESTS": False}.get(source.strip(), in_tests)
        elif cell["cell_type"] == "code" and in_tests:
            for node in ast.walk(ast.parse(source)):
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") in _CHECKS:
                    checks.append(node)
    return master_namespace(workbook), checks


def _checker(call, env):
    """``(check, value, slips)``: the master's check as a function of the learner's number
    (for a time at the learner's own rate, of the work it implies), the master's own value,
    and the slips the check declares."""
    import ast

    from perfmodel import exercises

    def value_of(node):
        return eval(compile(ast.Expression(node), "<check>", "eval"), {**env, **vars(exercises)})

    kind, name, key = call.func.id, ast.literal_eval(call.args[0]), ast.literal_eval(call.args[2])
    keywords = {kw.arg: value_of(kw.value) for kw in call.keywords}
    if kind == "check_number":
        keywords.setdefault("slips", exercises.default_slips(keywords.get("unit", "")))
        return (
            lambda value: exercises.check_number(name, value, key, **keywords),
            env[name],
            keywords["slips"],
        )
    if kind == "check_count":
        return (
            lambda value: exercises.check_count(name, value, key, **keywords),
            env[name],
            keywords.get("slips", ()),
        )
    rate, overhead = keywords["rate"], keywords.get("overhead_s", 0.0)

    def implied(work):
        exercises.check_implied_work(name, work / rate + overhead, key, **keywords)

    return implied, (env[name] - overhead) * rate, keywords.get("slips", ())


def _message(check, value):
    from perfmodel.exercises import AnswerError

    with pytest.raises(AnswerError) as caught:
        check(value)
    return str(caught.value)


#: How a conceptual slip checked both ways says so in its cause.
_BOTH_WAYS = ("or the reverse", "or half of them", "the wrong element width")


@pytest.mark.parametrize("workbook", WORKBOOKS, ids=lambda workbook: workbook.name)
def test_every_declared_slip_is_named_for_the_value_it_gives(workbook):
    """A factor slip is named on the master's answer times its factor, never on its mirror
    (as far off the other way) when it goes one way; a keyed slip on the value worked out
    by hand for it, and never on the right answer."""
    env, checks = _master_namespace_and_checks(workbook)
    assert checks, f"{workbook.name} has no numeric checks"
    keyed = 0
    for call in checks:
        check, value, declared = _checker(call, env)
        check(value)
        name, key = call.args[0].value, call.args[2].value
        rel_tol = float(key.split(":")[2]) if ":number:" in key else 0.01
        for slip in declared:
            if slip.key is not None:
                keyed += 1
                wrong = SLIP_VALUES[(workbook.name[:2], name, slip.name)]
                assert slip.cause in _message(check, wrong), (name, slip.name, wrong)
                # Clear of the answer and of every other slip's window (or the same answer):
                # test_slip_tables.py checks it for every slip, unit slips included.
                continue
            if slip.reciprocal:
                assert slip.cause in _message(check, 1 / value), (name, slip.name)
                continue
            if not slip.distinguishable(rel_tol):
                continue  # too close to 1 to tell apart at this tolerance; never named
            for _, scale in slip.scales():
                assert slip.cause in _message(check, value * scale), (name, slip.name)
            if slip.direction != "both":
                ((_, scale),) = slip.scales()
                assert slip.cause not in _message(check, value / scale), (name, slip.name)
            elif not slip.unit:
                # Named both ways, a conceptual slip's words must cover both ways.
                assert any(words in slip.cause for words in _BOTH_WAYS), (name, slip.cause)
    mine = [key for key in SLIP_VALUES if key[0] == workbook.name[:2]]
    assert keyed == len(mine), (keyed, mine)  # no stale entry in the table


@pytest.mark.parametrize("workbook", WORKBOOKS, ids=lambda workbook: workbook.name)
def test_no_test_holds_an_expected_value(workbook):
    """Every check, public or hidden, compares against a hashed key, never a raw answer, and
    declares no conceptual slip by its factor (from which the answer follows)."""
    import ast

    sources = [*read_json(workbook.student)["metadata"]["otter"]["tests"].values()]
    sources += list(assigned(workbook).tests.values())
    calls = 0
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            name = getattr(getattr(node, "func", None), "id", "")
            if isinstance(node, ast.Call) and name == "check_recorded":
                continue  # a measurement typed in by the learner: no answer to hold
            if isinstance(node, ast.Call) and name == "Slip":
                # a conceptual slip's factor beside its name gives the answer away: keyed
                given = {kw.arg: kw.value for kw in node.keywords}
                if "factor" in given:
                    assert ast.literal_eval(given.get("unit", ast.Constant(False))), (
                        workbook.name,
                        ast.unparse(node)[:80],
                    )
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


@pytest.mark.parametrize("workbook", WORKBOOKS, ids=lambda workbook: workbook.name)
def test_no_graded_choice_is_a_coin_flip(workbook):
    """Every graded one-word answer has at least three options to choose from."""
    import ast

    for source in assigned(workbook).tests.values():
        for call in ast.walk(ast.parse(source)):
            if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "check_choice":
                name = ast.literal_eval(call.args[0])
                if name.startswith("graded_"):
                    assert len(ast.literal_eval(call.args[3])) >= 3, (workbook.name, name)
