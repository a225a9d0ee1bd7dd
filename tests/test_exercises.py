"""Answer checks and their slip hints."""

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfmodel.exercises import SLIPS, AnswerError, check_choice, check_number, diagnose


def test_accepts_within_tolerance():
    check_number("x", 1.004e6, 1e6, rel_tol=0.005)
    check_number("x", np.float32(4e6), 4e6)
    check_number("x", np.int64(6_000_000), 6e6)


def test_rejects_just_outside_tolerance():
    with pytest.raises(AnswerError, match="too large"):
        check_number("x", 1.02e6, 1e6, rel_tol=0.01)


@pytest.mark.parametrize("slip", SLIPS, ids=lambda slip: f"{slip.factor:g}")
@pytest.mark.parametrize("direction", ["large", "small"])
def test_names_each_slip_in_both_directions(slip, direction):
    expected = 3.7e5
    answer = expected * slip.factor if direction == "large" else expected / slip.factor
    with pytest.raises(AnswerError) as caught:
        check_number("x", answer, expected, rel_tol=1e-3, unit="B")
    message = str(caught.value)
    assert f"exactly {slip.factor:g}x too {direction}" in message
    assert slip.cause in message


def test_small_slips_are_not_claimed_inside_a_loose_tolerance():
    # A 1.024 factor cannot be told apart from rounding on a 5% question.
    check_number("x", 1.024e3, 1e3, rel_tol=0.05)
    assert diagnose(1.074e9, 1e9, rel_tol=0.05) is None


def test_sign_slip():
    with pytest.raises(AnswerError, match="wrong sign"):
        check_number("x", -2.0, 2.0)


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (Ellipsis, r"still `\.\.\.`"),
        (None, "has no value"),
        ("4 MB", "must be a number in B, but it is a str: '4 MB'. Write it as a plain number"),
        (True, "must be a number in B, but it is a bool"),
        ([4e6], "must be a number in B, but it is a list"),
        (float("nan"), "is nan; a finite number was expected"),
    ],
)
def test_non_answers(answer, message):
    with pytest.raises(AnswerError, match=message):
        check_number("x", answer, 4e6, unit="B")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rel_tol": 0}, "`rel_tol` must be strictly between 0 and 1"),
        ({"rel_tol": 1.5}, "`rel_tol` must be strictly between 0 and 1"),
        ({"expected": 0.0}, "`expected` must be a finite nonzero number"),
        ({"expected": math.inf}, "`expected` must be a finite nonzero number"),
    ],
)
def test_bad_test_definitions_raise_value_error(kwargs, message):
    arguments = {"expected": 1.0, "rel_tol": 0.01, **kwargs}
    with pytest.raises(ValueError, match=message):
        check_number("x", 1.0, arguments["expected"], rel_tol=arguments["rel_tol"])


@given(
    expected=st.floats(min_value=1e-12, max_value=1e15),
    slip=st.sampled_from(SLIPS),
    sign=st.sampled_from([1, -1]),
)
def test_diagnose_finds_every_slip(expected, slip, sign):
    expected *= sign
    assert diagnose(expected * slip.factor, expected, rel_tol=1e-3).startswith(
        f"exactly {slip.factor:g}x too large"
    )
    assert diagnose(expected / slip.factor, expected, rel_tol=1e-3).startswith(
        f"exactly {slip.factor:g}x too small"
    )


@given(
    expected=st.floats(min_value=1e-12, max_value=1e15),
    ratio=st.floats(min_value=0.9995, max_value=1.0005),
)
def test_answers_within_tolerance_always_pass(expected, ratio):
    check_number("x", expected * ratio, expected, rel_tol=1e-3)


def test_choice():
    check_choice("bound", " Compute", ("compute", "memory"), "compute")
    with pytest.raises(AnswerError, match="'memory', which is not right"):
        check_choice("bound", "memory", ("compute", "memory"), "compute")
    with pytest.raises(AnswerError, match="must be one of 'compute', 'memory' \\(got 3\\)"):
        check_choice("bound", 3, ("compute", "memory"), "compute")
    with pytest.raises(AnswerError, match="still"):
        check_choice("bound", ..., ("compute", "memory"), "compute")
    with pytest.raises(ValueError, match="`expected` must be one of `options`"):
        check_choice("bound", "compute", ("compute", "memory"), "disk")


def test_check_count_is_exact_and_says_which_way():
    from perfmodel.exercises import check_count

    check_count("stages", 3, 3)
    check_count("stages", 3.0, 3)
    with pytest.raises(AnswerError, match="too many"):
        check_count("stages", 4, 3)
    with pytest.raises(AnswerError, match="too few"):
        check_count("stages", 2, 3)
    with pytest.raises(AnswerError, match="must be a whole number"):
        check_count("stages", 2.5, 3)
    with pytest.raises(AnswerError, match="still `...`"):
        check_count("stages", ..., 3)
    with pytest.raises(AnswerError, match="must be a whole number"):
        check_count("stages", True, 1)
    with pytest.raises(ValueError, match="`expected` must be an integer"):
        check_count("stages", 1, 1.5)
