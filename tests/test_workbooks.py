"""Student copies and autograder zips generated from the masters."""

from __future__ import annotations

import io
import math
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

#: Each keyed slip's value, worked out by hand from the question: the value a learner who
#: made exactly that mistake gets. A keyed slip in a master must appear here.
SLIP_VALUES = {
    ("03", "mm_intensity", "C left unread"): 2 * 1024**3 / (4 * 3 * 1024**2),
    ("03", "graded_mm_intensity", "C left unread"): 2
    * 2048**2
    * 512
    / (2 * (2 * 2048 * 512 + 2048**2)),
    ("03", "bytes_saved", "moved vs saved"): 3 * 2 * 4e8,  # the unfused chain: 3 ops, read + write
    ("03", "graded_bytes_saved", "moved vs saved"): 4 * 2 * 4 * 3e7,
    ("04", "small_matmul_flops", "the peak"): 989.5e12,  # the H100's dense bf16 peak
    ("04", "matvec_time_s", "compute time"): 2 * 8192 * 8192 / 312e12,
    ("05", "intensity_m32", "weights only"): 32 / 2,  # 2·N²·M / (4·N²) = M/2
    ("05", "intensity_m512", "weights only"): 512 / 2,
    ("05", "graded_intensity", "weights only"): 128 / 2,
    ("05", "crossover", "width left out"): 8.797,  # R·N / (2(N - R)), R = 15.7e12 / 0.9e12
    ("05", "crossover", "the shortcut"): 2 * 15.7e12 / 0.9e12,  # M/2 = R
    ("05", "graded_crossover", "width left out"): 9.5635 * 2048 / (2 * (2048 - 9.5635)),
    ("05", "best_batch", "the noise scale"): 512,
    ("05", "graded_best_batch", "the noise scale"): 512,
    ("05", "best_batch", "step time alone"): 1,  # the step time grows with the minibatch
    ("05", "best_batch", "steps alone"): 4096,  # the steps fall with it
    ("05", "graded_best_batch", "step time alone"): 1,
    ("05", "graded_best_batch", "steps alone"): 4096,
    ("06", "copy_counted_bytes", "elements for bytes"): 2 * 50_000_000,
    ("06", "copy_moved_bytes", "write-allocate"): 2 * 8 * 50_000_000,
    ("06", "graded_triad_moved_bytes", "write-allocate"): 3 * 8 * 10_000_000,
    ("06", "copy_here", "elements for bytes"): 2 * 1e9 / 8,
    ("06", "graded_triad_here", "the output left out"): 2 * 8 * 60_000_000,
    ("06", "graded_triad_here", "write-allocate"): 4 * 8 * 60_000_000,
    ("06", "graded_triad_here", "arrays counted twice"): 6 * 8 * 60_000_000,
    ("06", "small_add_here", "the output left out"): 2 * 8 * 1000,
    ("06", "graded_multiply_here", "the output left out"): 2 * 4 * 10_000,
    ("06", "copy_here", "write-allocate"): 3 * 1e9,
    ("07", "workers_for_span", "the parallelism rounded up"): 2,  # ceil(1233.9 / 1095.1)
    ("07", "lower_4", "W/P alone"): 12 / 4,
    ("07", "graded_lower_6", "span alone"): 8.0,
    ("07", "graded_lower_6", "greedy upper bound"): 16 + 8,
    ("07", "graded_workers_for_span", "one worker per operation"): 7,
    ("07", "scan_work_ratio", "every block offset"): 2.0,
    ("07", "graded_scan_work_ratio", "every block offset"): 2.0,
    ("07", "scan_work_ratio", "the many-thread limit"): 2.0,  # 1 + (t - 1)/t as t grows
    ("07", "graded_scan_work_ratio", "the many-thread limit"): 2.0,
    ("08", "speedup_16", "ideal"): 16,
    ("08", "speedup_16", "serial and parallel fractions swapped"): 1 / (0.95 + 0.05 / 16),
    ("08", "speedup_limit", "serial and parallel fractions swapped"): 1 / 0.95,
    ("08", "graded_speedup_32", "ideal"): 32,
    ("08", "graded_speedup_32", "serial and parallel fractions swapped"): 1 / (0.9 + 0.1 / 32),
    ("08", "scaled_speedup_64", "Amdahl for Gustafson"): 1 / (0.05 + 0.95 / 64),
    ("08", "graded_scaled_speedup_128", "Amdahl for Gustafson"): 1 / (0.1 + 0.9 / 128),
    ("08", "graded_fitted_alpha", "serial for parallel fraction"): 0.1,
    ("08", "fitted_alpha", "serial for parallel fraction"): 0.2,
    ("08", "speedup_16", "Gustafson for Amdahl"): 0.05 + 0.95 * 16,  # lecture 00's example
    ("08", "graded_speedup_32", "Gustafson for Amdahl"): 0.1 + 0.9 * 32,
    ("09", "ring_seconds", "ring factor forgotten"): 0.0400084,  # n/B + 14 latencies, 8 GPUs
    ("09", "ring_seconds", "ring share dropped"): 0.0800084,  # 2n/B: (p - 1)/p dropped
    ("09", "graded_ring_seconds", "ring share dropped"): 0.01603,  # 2n/B + 6 latencies
    ("09", "busbw_gb_per_s", "all-gather factor"): 240 * 7 / 8,
    ("09", "busbw_gb_per_s", "divided"): 240 / (2 * 7 / 8),
    ("09", "busbw_gb_per_s", "busbw vs algbw"): 240,
    ("09", "graded_busbw_gb_per_s", "busbw vs algbw"): 45,
    ("09", "zero2_gb", "optimizer states alone sharded"): 37.0621,
    ("09", "zero2_gb", "no sharding"): 107.815,
    ("09", "zero2_gb", "weights sharded too"): 13.4768,
    ("09", "graded_zero_gb", "gradients sharded too"): 37.3744,
    ("09", "graded_zero_gb", "no sharding"): 208.0,
    ("09", "critical_tokens_per_gpu", "whole step"): 12987.2,
    ("09", "graded_critical_tokens", "whole step"): 7800,
    ("09", "nodes_below_80", "GPUs for nodes"): 8 * 8,
    ("09", "graded_nodes_below_90", "GPUs for nodes"): 4 * 8,
    ("09", "graded_critical_tokens", "(p - 1)/p dropped"): 312e12 / 25e9,
    ("09", "gather_x_us", "no wraparound"): 506.316,
    ("09", "gather_x_us", "the book's formula"): 2**26 / (2 * 100e9) * 1e6,
    ("09", "graded_gather_xy_us", "no wraparound"): 3532.22,
    ("09", "gather_x_us", "whole array"): 1008.62,
    ("09", "gather_xy_us", "one axis only"): 1008.66,
    ("09", "gather_xy_us", "one axis after the other"): 1262.3,
    ("10", "stage_cost_123", "a tensor counted per edge"): 9.75,
    ("10", "stage_cost_123", "work alone"): 8.0,
    ("10", "graded_stage_cost_234", "a tensor counted per edge"): 8.0,
    ("10", "graded_stage_cost_234", "work alone"): 7.0,
    ("10", "combinatorial_gap", "B/L - 1"): 1 / (1 - 0.287356) - 1,
    ("10", "graded_combinatorial_gap", "B/L - 1"): 1 / (1 - 0.114286) - 1,
    ("10", "bubble", "bubble ratio"): (6 - 1) / 10,
    ("10", "bubble", "busy share"): 1 - 5 / 15,
    ("10", "bubble_m30", "bubble ratio"): (6 - 1) / 30,
    ("10", "bubble_m30", "busy share"): 1 - 5 / 35,
    ("10", "graded_bubble", "bubble ratio"): (8 - 1) / 24,
    ("10", "graded_bubble", "busy share"): 1 - 7 / 31,
    ("10", "certified_gap", "found.gap"): 0.331234,
    ("10", "graded_certified_gap", "found.gap"): 0.413729,
    ("11", "mean_latency_ms", "L and λ swapped"): 250 / 40,
    ("11", "graded_latency_ms", "L and λ swapped"): 600 / 27,
    ("11", "mean_wait_ms", "time in system"): 14.9108 + 20,
    ("11", "wait_probability", "utilisation"): 160 * 0.020 / 4,
    ("11", "wait_probability", "utilisation as the load"): 0.0095808,  # Erlang C(4, 0.8)
    ("11", "sequences_fit", "no reserve"): 26,  # (141e9 - 69e9) / (8192 x 327,680 B)
    ("11", "sequences_fit", "bf16 weights"): 0,  # 138 GB of weights > 0.9 x 141 GB
    ("11", "graded_sequences_fit", "no reserve"): 59,  # (141e9 - 13.5e9) / (4096 x 524,288 B)
    ("11", "sequences_fit", "no GQA"): 2,  # all 64 heads' keys and values: 8x the cache
    ("11", "sequences_fit", "GiB for GB"): 25,  # 0.9 x 141 GiB
    ("11", "graded_sequences_fit", "GiB for GB"): 57,
    ("11", "mean_wait_ms", "one server"): 80.0,  # M/M/1: rho / (1 - rho) x service
    ("11", "graded_wait_ms", "one server"): 350.0,
    ("11", "graded_wait_ms", "time in system"): 81.765,
    ("12", "parameters", "untied head"): 354_823_168 + 50257 * 1024,
    ("12", "graded_large_parameters", "untied head"): 774_030_080 + 50257 * 1280,
    ("12", "graded_a100_40gb_ms", "bandwidth ratio on everything"): 41.5096,
    ("12", "h100_speedup", "peak ratio"): 3.1715,
    ("12", "h100_speedup", "bandwidth ratio"): 1.643,
    ("12", "graded_mi300x_speedup", "peak ratio"): 4.1905,
    ("12", "graded_mi300x_speedup", "bandwidth ratio"): 2.5992,
    ("12", "graded_efficiency_32", "overlapped"): 1.0,
    ("12", "h200_speedup", "peak ratio"): 3.1714,
    ("12", "h200_speedup", "the H100"): 1.643,  # the bandwidth ratio, 3.35 / 2.039
    ("12", "h200_speedup", "over the H100"): 4.8 / 3.35,
    ("12", "efficiency_64", "overlapped"): 1.0,
}


@pytest.mark.parametrize("workbook", WORKBOOKS, ids=lambda workbook: workbook.name)
def test_every_declared_slip_is_named_for_the_value_it_gives(workbook):
    from perfmodel.exercises.keys import tolerance_window

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
        # Every value a slip stands for: keyed slips' hand-worked ones, factor slips' multiples.
        others = [value * scale for other in declared for _, scale in other.scales()]
        others += [SLIP_VALUES[(workbook.name[:2], name, o.name)] for o in declared if o.key]
        for slip in declared:
            if slip.key is not None:
                keyed += 1
                wrong = SLIP_VALUES[(workbook.name[:2], name, slip.name)]
                assert slip.cause in _message(check, wrong), (name, slip.name, wrong)
                # Clear of the answer and of every other slip, as a factor slip must be: else
                # rounding, not the mistake, decides which hint a learner gets.
                apart = [v for v in (value, *others) if v != wrong]
                if ":number:" in key:
                    clear = 2 * tolerance_window(rel_tol)
                    assert all(abs(math.log(abs(wrong / v))) > clear for v in apart if v), (
                        name,
                        slip.name,
                    )
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


@pytest.mark.parametrize("workbook", WORKBOOKS, ids=lambda workbook: workbook.name)
def test_following_a_hint_never_gets_a_wrong_method_accepted(workbook):
    """A learner whose method is wrong (a keyed slip's value) and who is told a unit slip,
    or guesses one, and scales by its factor must still be refused: no wrong method sits one
    unit factor from the answer (workbook 09's ring on 16 GPUs sat 0.65% from GiB vs GB)."""
    from perfmodel.exercises import AnswerError

    env, checks = _master_namespace_and_checks(workbook)
    accepted = []
    for call in checks:
        check, value, declared = _checker(call, env)
        name = call.args[0].value
        units = [slip for slip in declared if slip.unit]
        for slip in (s for s in declared if s.key is not None):
            wrong = SLIP_VALUES[(workbook.name[:2], name, slip.name)]
            for unit in units:
                for _, scale in unit.scales():
                    try:
                        check(wrong / scale)
                    except AnswerError:
                        continue
                    accepted.append((name, slip.name, unit.name))
    assert not accepted, accepted
