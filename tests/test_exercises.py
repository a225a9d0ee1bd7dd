"""Answer checks: right or wrong within the tolerance, honest slips, never the answer."""

import math
import re
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfmodel.exercises import (
    BINARY_PREFIX_SLIPS,
    BITS_FOR_BYTES,
    COUNTED_TWICE,
    DTYPE_WIDTH,
    FLOPS_FOR_MACS,
    KWH_FOR_JOULES,
    MINUTES_FOR_SECONDS,
    PERCENT_FOR_FRACTION,
    PREFIX_SLIPS,
    RECIPROCAL,
    SPARSE_PEAK,
    AnswerError,
    Slip,
    check_choice,
    check_count,
    check_number,
    choice_key,
    count_key,
    default_slips,
    feedback,
    number_key,
    unit_slips,
)

SALT = "tests/q1/x"


def fails(answer, key, **kwargs) -> str:
    with pytest.raises(AnswerError) as caught:
        check_number("x", answer, key, **kwargs)
    return str(caught.value)


def test_accepts_within_tolerance_and_numpy_numbers():
    key = number_key(4e6, rel_tol=0.01, salt=SALT)
    check_number("x", 4.03e6, key, unit="B")
    check_number("x", np.float32(4e6), key)
    check_number("x", np.int64(4_000_000), key)


@given(
    expected=st.floats(min_value=1e-12, max_value=1e15),
    ratio=st.floats(min_value=0.99, max_value=1.01),
    sign=st.sampled_from([1, -1]),
)
def test_everything_within_the_tolerance_passes(expected, ratio, sign):
    key = number_key(sign * expected, rel_tol=0.01, salt=SALT)
    check_number("x", sign * expected * ratio, key)


@given(
    expected=st.floats(min_value=1e-12, max_value=1e15),
    ratio=st.floats(min_value=1.0127, max_value=1.5),
    above=st.booleans(),
)
def test_nothing_beyond_about_a_quarter_more_than_the_tolerance_passes(expected, ratio, above):
    key = number_key(expected, rel_tol=0.01, salt=SALT)
    with pytest.raises(AnswerError):
        check_number("x", expected * ratio if above else expected / ratio, key)


@given(
    expected=st.floats(min_value=1e-9, max_value=1e12),
    answer=st.floats(min_value=1e-9, max_value=1e12),
)
def test_no_message_shows_the_expected_value(expected, answer):
    key = number_key(expected, rel_tol=0.01, salt=SALT)
    version, kind, tol, salt, digest = key.split(":")
    assert (version, kind, tol, salt) == ("pm1", "number", "0.01", SALT)
    assert len(digest) == 20 and set(digest) <= set("0123456789abcdef")
    try:
        check_number("x", answer, key, unit="B")
    except AnswerError as error:
        shown = str(error).replace(f"`x` is {answer:.4g} B", "")
        assert f"{expected:.4g} B" not in shown


ALL_SLIPS = [
    *PREFIX_SLIPS,
    BITS_FOR_BYTES,
    *BINARY_PREFIX_SLIPS,
    FLOPS_FOR_MACS,
    MINUTES_FOR_SECONDS,
    KWH_FOR_JOULES,
    PERCENT_FOR_FRACTION,
    DTYPE_WIDTH,
    COUNTED_TWICE,
]


@pytest.mark.parametrize("slip", ALL_SLIPS, ids=lambda slip: slip.name)
@pytest.mark.parametrize("direction", ["large", "small"])
def test_each_declared_slip_is_named_in_both_directions(slip, direction):
    key = number_key(3.7e5, rel_tol=1e-3, salt=SALT)
    answer = 3.7e5 * slip.factor if direction == "large" else 3.7e5 / slip.factor
    message = fails(answer, key, unit="B", slips=(slip,))
    assert slip.cause in message
    if slip.unit:
        assert f"too {direction}: {slip.cause}" in message
    else:
        assert "too large" not in message and "too small" not in message


def test_a_unit_slip_prints_its_exact_factor_and_no_measured_ratio():
    key = number_key(1000.0, rel_tol=0.01, salt=SALT)
    # 8.064 is within the tolerance of the bits-for-bytes slip: the hint gives the factor of
    # the slip (8), not the learner's ratio (8.064), which would give the answer away.
    assert "8x too large: a factor of 8" in fails(8064.0, key, unit="B")
    assert "8.06" not in fails(8064.0, key, unit="B")
    assert "1,000x too small" in fails(0.9958, key, unit="B")


def test_a_conceptual_slip_names_the_concept_never_the_factor():
    key = number_key(100.0, rel_tol=0.01, salt=SALT)
    peak = Slip(factor=1.6576, name="peak ratio", cause="the peak ratio alone", direction="large")
    message = fails(165.76, key, slips=(peak,))
    assert "it looks like the peak ratio alone" in message
    assert not re.search(r"\d\.\d", message.split("is 165.8")[-1]), message
    assert not peak.unit and BITS_FOR_BYTES.unit and not COUNTED_TWICE.unit


def test_a_conceptual_slip_is_one_way_unless_it_says_both():
    """The ideal speedup is always too large: a value as far below the answer is not it."""
    key = number_key(9.142857, rel_tol=0.01, salt=SALT)
    ideal = Slip(factor=1.75, name="ideal", cause="the ideal speedup", direction="large")
    assert "the ideal speedup" in fails(16.0, key, slips=(ideal,))
    assert "the ideal speedup" not in fails(9.142857 / 1.75, key, slips=(ideal,))
    with pytest.raises(ValueError, match="`direction` must be given for the conceptual slip"):
        Slip(factor=1.75, name="ideal", cause="the ideal speedup")
    assert Slip(factor=8, name="b", cause="bits", unit=True).direction == "both"
    assert SPARSE_PEAK.scales() == (("large", 2),)
    assert SPARSE_PEAK.only("small").scales() == (("small", 0.5),)
    assert SPARSE_PEAK.only("small").cause == SPARSE_PEAK.cause
    with pytest.raises(ValueError, match="'large' or 'small' \\(got 'both'\\)"):
        SPARSE_PEAK.only("both")


def test_a_keyed_slip_is_named_for_its_own_value_only():
    """A slip of one question, keyed like the answer, ships no factor to work back from."""
    key = number_key(9.142857, rel_tol=0.01, salt=SALT)
    ideal = Slip(key=number_key(16, rel_tol=0.01, salt=f"{SALT}~ideal"), name="i", cause="ideal")
    assert "it looks like ideal" in fails(16.05, key, slips=(ideal,))
    assert "ideal" not in fails(9.142857 / 1.75, key, slips=(ideal,))
    assert ideal.scales() == () and ideal.distinguishable(0.01)
    stages = count_key(4, salt=SALT)
    doubled = Slip(key=count_key(8, salt=f"{SALT}~x"), name="x", cause="each stage twice")
    with pytest.raises(AnswerError, match="it looks like each stage twice"):
        check_count("k", 8, stages, slips=(doubled,))
    with pytest.raises(AnswerError, match="Recount"):
        check_count("k", 2, stages, slips=(doubled,))
    with pytest.raises(ValueError, match="`key` is for a conceptual slip"):
        Slip(key=stages, name="u", cause="c", unit=True)
    with pytest.raises(TypeError, match="`key` must be a str"):
        Slip(key=16, name="i", cause="c")  # type: ignore[arg-type]


def test_near_misses_are_not_called_a_binary_prefix_slip():
    # Off by more than the tolerance, and more than 1.25% from 1.024, 1.049 and 1.074.
    key = number_key(1e9, rel_tol=0.01, salt=SALT)
    for ratio in (1.09, 1.12, 1.2):
        assert "a factor of 1.0" not in fails(1e9 * ratio, key, unit="B")
        assert "not yet" in fails(1e9 * ratio, key, unit="B")
    assert "GiB vs GB" in fails(1e9 * 1.0737, key, unit="B")


def test_binary_prefixes_only_for_bytes_and_bits_only_for_bytes():
    key = number_key(1e9, rel_tol=0.01, salt=SALT)
    assert "a factor of 1.074" not in fails(1.0737e9, key, unit="s")
    assert "bits" not in fails(8e9, key, unit="s")  # records x seconds is not bits vs bytes
    assert "bits-vs-bytes" in fails(8e9, key, unit="B/s")


def test_a_factor_of_two_names_the_declared_slip_only():
    key = number_key(1e15, rel_tol=0.01, salt=SALT)
    message = fails(2e15, key, unit="FLOP/s", slips=(*PREFIX_SLIPS, SPARSE_PEAK))
    assert SPARSE_PEAK.cause in message and "multiply-add" not in message
    assert "multiply-add" in fails(2e15, key, unit="FLOP/s")
    assert DTYPE_WIDTH.cause in fails(5e14, key, unit="B", slips=(DTYPE_WIDTH,))


def test_common_slips_percent_minutes_kwh_reciprocal_sign():
    fraction = number_key(0.513, rel_tol=0.01, salt=SALT)
    assert "percentage" in fails(51.3, fraction, slips=(PERCENT_FOR_FRACTION,))
    seconds = number_key(5400.0, rel_tol=0.01, salt=SALT)
    assert "minutes vs seconds" in fails(90.0, seconds, unit="s")
    joules = number_key(3.78e6, rel_tol=0.01, salt=SALT)
    assert "kWh vs J" in fails(1.05, joules, unit="J")
    speedup = number_key(2.5, rel_tol=0.01, salt=SALT)
    assert "reciprocal" in fails(0.4, speedup, slips=(RECIPROCAL,))
    assert "wrong sign" in fails(-2.5, speedup)


def test_a_plain_miss_says_not_yet_and_gives_no_number():
    key = number_key(750.0, rel_tol=1e-4, salt=SALT)
    message = fails(751.0, key, unit="s")
    assert message.startswith("`x` is 751 s: not yet.") and "0.01" not in message


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
        check_number("x", answer, number_key(4e6, rel_tol=0.01, salt=SALT), unit="B")


def test_bad_keys_and_definitions_raise_type_or_value_errors():
    with pytest.raises(ValueError, match="`rel_tol` must be strictly between 0 and 0.5"):
        number_key(1.0, rel_tol=0, salt=SALT)
    with pytest.raises(ValueError, match="`expected` must be finite"):
        number_key(math.nan, rel_tol=0.01, salt=SALT)
    with pytest.raises(TypeError, match="`expected` must be a number"):
        number_key("1", rel_tol=0.01, salt=SALT)
    with pytest.raises(ValueError, match="`salt` must be a non-empty string without ':'"):
        number_key(1.0, rel_tol=0.01, salt="a:b")
    with pytest.raises(ValueError, match="`key` must be a key made by number_key"):
        check_number("x", 1.0, count_key(1, salt=SALT))
    with pytest.raises(TypeError, match="`key` must be a str"):
        check_number("x", 1.0, 1.0)
    with pytest.raises(ValueError, match="`factor` must be a finite number above 1"):
        Slip(factor=0.5, name="n", cause="c", direction="large")


def test_default_slips_follow_the_unit():
    def names(unit):
        return {slip.name for slip in default_slips(unit)}

    assert {"bits vs bytes", "GiB vs GB"} <= names("B/s")
    assert "FLOPs vs multiply-adds" in names("FLOP/s") and "bits vs bytes" not in names("FLOP")
    assert "minutes vs seconds" in names("s") and "kWh vs J" in names("J")
    assert names("") == {slip.name for slip in PREFIX_SLIPS}


def test_unit_slips_follow_the_unit_and_the_size():
    def names(unit, value):
        return [slip.name for slip in unit_slips(unit, value)]

    prefixes = [slip.name for slip in PREFIX_SLIPS]
    # one binary prefix, the one a size this large is written in (GiB and MiB overlap at 1%)
    assert names("B", 6e10) == [*prefixes, "bits vs bytes", "GiB vs GB"]
    assert names("B", 8e8) == [*prefixes, "bits vs bytes", "MiB vs MB"]
    assert names("GB/s", 420) == [*prefixes, "bits vs bytes", "GiB vs GB"]
    assert names("ms", 12) == prefixes  # seconds for milliseconds is the prefix step
    assert names("s", 0.07) == [*prefixes, "minutes vs seconds", "hours vs seconds"]
    assert names("FLOP/B", 128) == [
        *prefixes,
        "FLOPs vs multiply-adds",
        "bits vs bytes",
        "x vs 1/x",
    ]
    assert unit_slips("FLOP/B", 128)[5].scales() == (("small", 0.125),)  # FLOPs per bit
    assert names("kWh", 1.05)[-1] == names("J", 3.78e6)[-1] == "kWh vs J"
    assert unit_slips("", 0.8) == (PERCENT_FOR_FRACTION.only("large"),)
    assert unit_slips("", 36.1) == ()  # not a fraction: no percentage
    assert unit_slips("x", 1.9) == (RECIPROCAL,)
    assert unit_slips("tokens", 17_316) == ()
    with pytest.raises(TypeError, match="`unit` must be a str"):
        unit_slips(None, 1.0)
    with pytest.raises(TypeError, match="`value` must be a real number"):
        unit_slips("s", "1")


def test_choice_lists_the_options_and_what_tells_them_apart():
    options = {"compute": "peak FLOP/s sets the time", "memory": "bandwidth sets the time"}
    key = choice_key("compute", salt=SALT)
    check_choice("bound", " Compute", key, options)
    with pytest.raises(AnswerError) as caught:
        check_choice("bound", "memory", key, options)
    assert "'memory': not yet" in str(caught.value)
    assert "'compute': peak FLOP/s sets the time" in str(caught.value)
    with pytest.raises(AnswerError, match="must be one of 'compute', 'memory' \\(got 3\\)"):
        check_choice("bound", 3, key, options)
    with pytest.raises(AnswerError, match="still"):
        check_choice("bound", ..., key, options)
    with pytest.raises(ValueError, match="matches none of `options`"):
        check_choice("bound", "compute", choice_key("disk", salt=SALT), options)


def test_check_count_is_exact_and_names_off_by_one():
    key = count_key(3, salt=SALT)
    check_count("stages", 3, key)
    check_count("stages", np.int64(3), key)
    check_count("stages", 3.0, key)
    for off_by_one in (2, 4):  # never named: it would leave two candidates to try
        with pytest.raises(AnswerError, match=r"`stages` is \d: not yet. Recount and try again.$"):
            check_count("stages", off_by_one, key)
    with pytest.raises(AnswerError, match="not yet. Recount"):
        check_count("stages", 9, key)
    doubled = Slip(factor=2, name="doubled", cause="each stage counted twice", direction="both")
    with pytest.raises(AnswerError, match="not yet, it looks like each stage counted twice"):
        check_count("stages", 6, key, slips=(doubled,))
    unit = Slip(factor=1000, name="k", cause="thousands for units", unit=True)
    with pytest.raises(AnswerError, match="1,000x too large: thousands for units"):
        check_count("stages", 3000, key, slips=(unit,))
    one_way = Slip(factor=2, name="halved", cause="each stage counted half", direction="small")
    with pytest.raises(AnswerError, match="not yet. Recount"):
        check_count("stages", 6, key, slips=(one_way,))  # too large: not this slip's way
    with pytest.raises(AnswerError, match="must be a whole number"):
        check_count("stages", 2.5, key)
    with pytest.raises(AnswerError, match="must be a whole number"):
        check_count("stages", True, key)
    with pytest.raises(TypeError, match="`expected` must be an int"):
        count_key(1.5, salt=SALT)


def test_a_one_way_slip_is_named_only_in_its_direction():
    key = number_key(100.0, rel_tol=0.01, salt=SALT)
    both = Slip(
        factor=2, name="d", cause="one link direction for both", unit=True, direction="small"
    )
    assert "2x too small: one link direction" in fails(50.0, key, slips=(both,))
    assert "one link direction" not in fails(200.0, key, slips=(both,))
    with pytest.raises(ValueError, match="`direction` must be"):
        Slip(factor=2, name="d", cause="c", direction="up")


def test_feedback_keeps_the_message_and_drops_the_test_code():
    message = (
        "❌ Test case failed\nError at line 4 in test q1:\n"
        "      check_number('x', x, 'pm1:number:0.01:a/q1/x:0123', unit='s')\n"
        "AnswerError: `x` is 3 s, which is not within 1% of the right answer"
    )
    assert feedback(message) == "`x` is 3 s, which is not within 1% of the right answer"
    assert feedback("✅ Test case passed") == "passed"


@pytest.mark.parametrize("expected", [1.0, 2.5, 3.7e5, 1e-9, -750.0, 2**-30])
@pytest.mark.parametrize("rel_tol", [1e-4, 1e-3, 0.01, 0.05])
def test_answers_exactly_at_the_tolerance_pass(expected, rel_tol):
    key = number_key(expected, rel_tol=rel_tol, salt=SALT)
    for ratio in (1 - rel_tol, 1 + rel_tol):
        check_number("x", expected * ratio, key)


def test_a_slip_too_close_to_one_for_the_tolerance_is_never_named():
    kib = BINARY_PREFIX_SLIPS[2]
    assert not kib.distinguishable(0.01) and kib.distinguishable(1e-3)
    key = number_key(1e6, rel_tol=0.01, salt=SALT)
    assert kib.cause not in fails(1.024e6 * 1.012, key, unit="B", slips=(kib,))


COPY_KEY = number_key(2e9, rel_tol=0.01, salt="tests/q9/copy")


def implied(answer, rate=2.3e10, **kwargs):
    from perfmodel.exercises import check_implied_work

    check_implied_work(
        "copy_here", answer, COPY_KEY, rate=rate, rate_name="my_bandwidth", work_unit="B",
        slips=kwargs.pop("slips", (COUNTED_TWICE, BITS_FOR_BYTES)), **kwargs,
    )  # fmt: skip


@given(st.floats(1e8, 1e13))
def test_a_time_at_the_learners_own_rate_is_checked_by_the_work_it_implies(rate):
    implied(2e9 / rate, rate=rate)
    implied(np.float32(2e9 / rate), rate=np.float64(rate))
    with pytest.raises(AnswerError, match="it looks like every tensor counted twice"):
        implied(1e9 / rate, rate=rate)


def test_an_overhead_term_is_taken_off_before_the_work_is_checked():
    from perfmodel.exercises import check_implied_work

    key = number_key(24_000, rel_tol=0.01, salt="tests/q9/add")
    check_implied_work("t", 1e-6 + 24_000 / 2e10, key, rate=2e10, rate_name="bw",
                       overhead_s=1e-6, overhead_name="ov", work_unit="B")  # fmt: skip
    with pytest.raises(AnswerError, match=r"\(t - ov\) × bw"):
        check_implied_work("t", 24_000 / 2e10, key, rate=2e10, rate_name="bw",
                           overhead_s=1e-6, overhead_name="ov", work_unit="B")  # fmt: skip
    # The whole prediction in µs, overhead included: a prefix slip, named with its factor.
    in_microseconds = (1e-6 + 24_000 / 2e10) * 1e6
    with pytest.raises(AnswerError, match="the whole time is 1e6x too large: a factor of 1e6"):
        check_implied_work("t", in_microseconds, key, rate=2e10, rate_name="bw",
                           overhead_s=1e-6, overhead_name="ov", work_unit="B")  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (..., "still `...`"),
        ("fast", "must be a number"),
        (2e9 / 2.3e10 * 8, "8x too large: a factor of 8 is the bits-vs-bytes"),
        (0.5, "not yet"),
    ],
)
def test_a_wrong_time_is_caught_without_showing_the_answer(answer, message):
    with pytest.raises(AnswerError) as caught:
        implied(answer)
    text = str(caught.value)
    assert message in text
    assert "2e+09" not in text and "0.087" not in text  # neither the work nor the time


def test_a_measurement_must_be_typed_in_as_printed():
    from perfmodel.exercises import check_recorded

    check_recorded("my_bandwidth", 2.31e10, unit="B/s")
    check_recorded("my_bandwidth", np.float64(7.5e9))
    for value, message in [
        (23148573912.4, "typed in as printed, with 3 significant figures"),
        (-2.3e10, "must be a positive measurement"),
        (..., "still `...`"),
        (float("nan"), "a finite number was expected"),
    ]:
        with pytest.raises(AnswerError, match=re.escape(message)):
            check_recorded("my_bandwidth", value, unit="B/s")


@pytest.mark.parametrize(
    ("figures", "error", "message"),
    [
        (0, ValueError, "`figures` must be a positive integer (got 0)"),
        (-2, ValueError, "`figures` must be a positive integer (got -2)"),
        (2.5, ValueError, "`figures` must be an integer (got 2.5)"),
        ("3", TypeError, "`figures` must be an integer (got str '3')"),
    ],
)
def test_check_recorded_refuses_a_bad_figure_count(figures, error, message):
    from perfmodel.exercises import check_recorded

    # 2e10 has one significant figure, so a silent "0 reads as 1" would let it pass
    with pytest.raises(error, match=re.escape(message)):
        check_recorded("my_bandwidth", 2e10, unit="B/s", figures=figures)
    check_recorded("my_bandwidth", 2.3e10, figures=np.int64(2))  # a numpy count is a count


def test_odd_numbers_get_the_courses_words_as_the_grader_reads_them():
    """An int past a float's range raised OverflowError; a 0-d array and numpy's float32(64.0)
    were refused by the instant check although the grader, which reads them as numbers,
    accepted them."""
    key = number_key(20.0, rel_tol=0.01, salt=SALT)
    check_number("x", np.array(20.0), key)
    for huge in (10**400, -(10**309), Fraction(10**400, 3)):
        with pytest.raises(AnswerError, match="beyond a float's range"):
            check_number("x", huge, key)
    stages = count_key(64, salt=SALT)
    for same in (np.float32(64.0), np.array(64), np.array(64.0)):
        check_count("k", same, stages)
    with pytest.raises(AnswerError, match="401 digits"):
        check_count("k", 10**400, stages)


def test_when_two_slips_fit_the_hint_names_both_and_only_those():
    """Two slips whose windows meet (factors 1.30 and 1.31 at a 1% tolerance): a value that
    fits both gets both named, the closer first, since the hint cannot tell which was made;
    a value that fits one gets that one alone."""
    from perfmodel.exercises import AnswerError, Slip, check_number, number_key

    key = number_key(1000.0, rel_tol=0.01, salt="demo/q9/both")
    low = Slip(factor=1.30, name="low", cause="the low slip", unit=True, direction="large")
    high = Slip(factor=1.31, name="high", cause="the high slip", unit=True, direction="large")

    def message(value):
        with pytest.raises(AnswerError) as caught:
            check_number("x", value, key, slips=(low, high))
        return str(caught.value)

    both = message(1306.0)
    assert low.cause in both and high.cause in both
    assert both.index(high.cause) < both.index(low.cause)  # 1306 is closer to 1310
    alone = message(1290.0)
    assert low.cause in alone and high.cause not in alone


def test_a_count_in_millions_with_all_its_digits_is_named_as_such():
    """354.823168 (million) is the right count in a larger unit, and the hint says so; 354.8
    could be anything near it, so it is only told to be whole."""
    from perfmodel.exercises import PREFIX_SLIPS, AnswerError, check_count, count_key

    key = count_key(354_823_168, salt="demo/q1/parameters")
    check_count("parameters", 354_823_168, key, slips=PREFIX_SLIPS)
    with pytest.raises(AnswerError, match="1e6x too small"):
        check_count("parameters", 354.823168, key, slips=PREFIX_SLIPS)
    with pytest.raises(AnswerError, match="must be a whole number"):
        check_count("parameters", 354.8, key, slips=PREFIX_SLIPS)
    with pytest.raises(AnswerError, match="must be a whole number"):
        check_count("parameters", 354.823168, key)  # no prefix slip declared: nothing named
