"""Hints give nothing away: a scan of every public check with a grid of wrong answers.

For every check a student copy ships, wrong values (random factors and every declared slip,
both ways) are fed to it. No message may let the right answer be recovered to within the
tolerance by reading a number in it, or by multiplying, dividing, adding or subtracting the
learner's value and such a number, unless it names a unit slip the learner really made (whose
factor is the lesson). Option texts explain options and hold no digits.
"""

from __future__ import annotations

import ast
import math
import re

import numpy as np
import pytest

from conftest import WORKBOOKS, master_namespace, read_json
from perfmodel import exercises

NUMBER = re.compile(r"(?<![\w.])[-+]?\d[\d,]*(?:\.\d+)?(?:e[-+]?\d+)?%?", re.IGNORECASE)


def _numbers(message: str, echoed: str) -> list[float]:
    """Numbers in ``message``, the learner's echoed value left out (percentages both ways)."""
    found = []
    for text in NUMBER.findall(message.replace(echoed, " ") if echoed else message):
        percent = text.endswith("%")
        value = float(text.rstrip("%").replace(",", ""))
        found += [value, value / 100] if percent else [value]
    return found


def _leaks(value: float, right: float, rel_tol: float, numbers: list[float]) -> list[str]:
    def close(candidate: float) -> bool:
        return math.isfinite(candidate) and abs(candidate - right) <= rel_tol * abs(right)

    leaks = []
    for m in numbers:
        candidates = {"read": m, "times": value * m, "plus": value + m, "minus": value - m}
        if m:
            candidates["over"] = value / m
        leaks += [f"{how} {m:g}" for how, c in candidates.items() if close(c)]
    return leaks


def _public_checks(workbook):
    """(function name, call node) for every check in the student copy's public tests."""
    tests = read_json(workbook.student)["metadata"]["otter"]["tests"]
    for source in tests.values():
        for node in ast.walk(ast.parse(source)):
            name = getattr(getattr(node, "func", None), "id", "")
            if isinstance(node, ast.Call) and name in (
                "check_number",
                "check_choice",
                "check_count",
            ):
                yield name, node


def _slips(call, unit):
    keywords = {kw.arg: kw.value for kw in call.keywords}
    if "slips" in keywords:
        expression = ast.Expression(keywords["slips"])
        return tuple(eval(compile(expression, "<slips>", "eval"), vars(exercises)))
    return exercises.default_slips(unit) if call.func.id == "check_number" else ()


@pytest.mark.parametrize("workbook", WORKBOOKS, ids=lambda workbook: workbook.name)
def test_no_public_hint_lets_the_answer_be_recovered(workbook):
    env = master_namespace(workbook)
    rng = np.random.default_rng(20261124)
    scanned = 0
    for kind, call in _public_checks(workbook):
        if kind == "check_choice":
            continue
        name, key = ast.literal_eval(call.args[0]), ast.literal_eval(call.args[2])
        keywords = {kw.arg: kw.value for kw in call.keywords}
        unit = ast.literal_eval(keywords["unit"]) if "unit" in keywords else ""
        slips = _slips(call, unit)
        right = float(env[name])
        rel_tol = float(key.split(":")[2]) if kind == "check_number" else 1e-9
        factors = list(np.exp(rng.uniform(-7, 7, 60)))
        for slip in slips:
            if not slip.reciprocal:
                factors += [slip.factor, 1 / slip.factor]
        for factor in factors:
            value = right * factor
            if kind == "check_count":
                value = float(round(value))
                if value == right:
                    continue
            elif abs(math.log(factor)) < 3 * rel_tol:
                continue
            checker = exercises.check_count if kind == "check_count" else exercises.check_number
            arguments = (
                {"slips": slips} if kind == "check_count" else {"unit": unit, "slips": slips}
            )
            answer = int(value) if kind == "check_count" else value
            try:
                checker(name, answer, key, **arguments)
            except exercises.AnswerError as error:
                message = str(error)
            else:
                continue  # within the tolerance: a pass says nothing
            echoed = f"{value:.4g}" if kind == "check_number" else str(int(value))
            leaks = _leaks(value, right, rel_tol, _numbers(message, echoed))
            honest = any(
                slip.unit
                and not slip.reciprocal
                and slip.cause in message
                and min(
                    abs(math.log(abs(value / right) / f)) for f in (slip.factor, 1 / slip.factor)
                )
                <= 3 * rel_tol
                for slip in slips
            )
            assert not leaks or honest, (workbook.name, name, factor, message, leaks)
            scanned += 1
    assert scanned >= 60, f"{workbook.name}: only {scanned} wrong answers scanned"


@pytest.mark.parametrize("workbook", WORKBOOKS, ids=lambda workbook: workbook.name)
def test_option_texts_explain_and_hold_no_numbers(workbook):
    tests = read_json(workbook.master)
    sources = ["".join(cell["source"]) for cell in tests["cells"] if cell["cell_type"] == "code"]
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "check_choice":
                options = eval(compile(ast.Expression(node.args[3]), "<options>", "eval"), {})
                for option, text in options.items():
                    # An option may be a number itself ("4"); no other number may appear.
                    bare = re.sub(rf"\b{re.escape(option)}\b", "", text)
                    assert not re.search(r"\d", bare), (workbook.name, option, text)
                    assert not re.search(r"\b(right|correct|the answer)\b", text, re.I), (
                        workbook.name,
                        option,
                        text,
                    )


def test_the_scan_catches_a_hint_that_prints_a_ratio():
    """The oracle itself: a free ratio in a message is a leak, a unit slip's factor is not."""
    assert _leaks(165.76, 100.0, 0.01, _numbers("`x` is 165.8: about 1.66x too large", "165.8"))
    assert not _leaks(8000.0, 1000.0, 0.01, _numbers("`x` is 8000: not yet.", "8000"))
    assert _numbers("within 0.1% of it", "") == [0.1, 0.001]
