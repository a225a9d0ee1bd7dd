"""The checks a workbook's tests call on a learner's answers, and what they raise.

:func:`check_number`, :func:`check_count`, :func:`check_choice`, :func:`check_recorded`
and :func:`check_implied_work` pass or raise :class:`AnswerError`, whose message names a
slip only when the answer fits it; :func:`feedback` keeps a check's words from otter's
message.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable, Mapping

from perfmodel._validate import count
from perfmodel.exercises.keys import NumberKey, is_real, key_digest, parse_key
from perfmodel.exercises.slips import (
    HOURS_FOR_SECONDS,
    MINUTES_FOR_SECONDS,
    PREFIX_SLIPS,
    Slip,
    default_slips,
    match_slip,
    ratio_text,
    slip_text,
)

__all__ = [
    "AnswerError",
    "check_choice",
    "check_count",
    "check_implied_work",
    "check_number",
    "check_recorded",
    "feedback",
]


class AnswerError(AssertionError):
    """A learner's answer failed a check; the message says why and what to try."""

    __module__ = "perfmodel.exercises"  # its name in a traceback, from before the split


def _describe(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _missing(name: str, answer: object) -> str | None:
    if answer is Ellipsis:
        return f"`{name}` is still `...`: replace the `...` with your answer and run the cell."
    if answer is None:
        return (
            f"`{name}` has no value: run the cell that sets it (if you deleted or renamed it, "
            f"put `{name} = ...` back)."
        )
    return None


def _scalar(answer: object) -> object:
    """A 0-d numpy array as the number it holds (the grader reads it so), else unchanged."""
    if getattr(answer, "ndim", None) == 0 and hasattr(answer, "item"):
        return answer.item()
    return answer


def _finite_whole(answer: object) -> bool:
    try:
        value = float(answer)  # type: ignore[arg-type]
    except OverflowError:
        return False
    return math.isfinite(value) and value.is_integer()


def _number_value(name: str, answer: object, unit: str) -> float:
    missing = _missing(name, answer)
    if missing:
        raise AnswerError(missing)
    answer = _scalar(answer)
    if not is_real(answer):
        hint = " Write it as a plain number, such as 4e6." if isinstance(answer, str) else ""
        raise AnswerError(
            f"`{name}` must be a number{f' in {unit}' if unit else ''}, "
            f"but it is a {type(answer).__name__}: {_describe(answer)}.{hint}"
        )
    try:
        value = float(answer)  # type: ignore[arg-type]
    except OverflowError:  # an int or a Fraction beyond any float
        raise AnswerError(
            f"`{name}` is beyond a float's range (over 1e308); a finite number was expected."
        ) from None
    if not math.isfinite(value):
        raise AnswerError(f"`{name}` is {value}; a finite number was expected.")
    return value


def check_number(
    name: str,
    answer: object,
    key: str,
    *,
    unit: str = "",
    slips: Iterable[Slip] | None = None,
) -> None:
    """Check a numeric answer against its key, within the key's tolerance.

    Parameters
    ----------
    name : str
        The variable the learner set, quoted in the message.
    answer : object
        The learner's value. Anything but a finite real number fails, saying why.
    key : str
        Made by :func:`number_key` from the right answer.
    unit : str, optional
        The unit the question asks for, printed after the learner's number.
    slips : iterable of Slip, optional
        The slips this question expects (default: :func:`default_slips` of ``unit``).
        A slip is named only when ``answer / factor`` is within the tolerance.

    Raises
    ------
    AnswerError
        If the answer is missing, not a number or wrong. The message names a slip only when
        the answer really is off by that factor, and never shows the right answer.

    Examples
    --------
    >>> from perfmodel.exercises import number_key
    >>> key = number_key(0.007, rel_tol=0.01, salt="demo/q2/t")
    >>> check_number("t", 0.00701, key, unit="s")
    >>> check_number("t", 7.0, key, unit="s")
    Traceback (most recent call last):
    ...
    perfmodel.exercises.AnswerError: `t` is 7 s: not yet, 1,000x too large: a factor of 1000 ...
    """
    value = _number_value(name, answer, unit)
    _check_value(f"`{name}` is {value:.4g}{f' {unit}' if unit else ''}", value, key, unit, slips)


def _check_value(
    shown: str, value: float, key: str, unit: str, slips: Iterable[Slip] | None
) -> None:
    """Pass, or raise an AnswerError that starts with ``shown`` (the learner's value)."""
    parsed = NumberKey(key)
    slips = default_slips(unit) if slips is None else tuple(slips)
    if parsed.offset(value) is not None:
        return
    slip = match_slip(value, parsed, slips)
    if slip:
        raise AnswerError(f"{shown}: not yet, {_sentence(slip)} Fix that and try again.")
    raise AnswerError(
        f"{shown}: not yet. It is not off by any slip this question knows "
        f"({_slip_list(slips)}). Recheck the formula, one term at a time."
    )


def _sentence(phrase: str) -> str:
    """A phrase closed with a full stop, unless it already ends a sentence."""
    return phrase if phrase.endswith((".", "?", "!")) else phrase + "."


def _slip_list(slips: tuple[Slip, ...]) -> str:
    return ", ".join(dict.fromkeys([*(slip.name for slip in slips), "the sign"]))


def check_count(name: str, answer: object, key: str, *, slips: Iterable[Slip] = ()) -> None:
    """Check a whole-number answer (a count of stages, GPUs, steps...) exactly.

    ``slips`` adds the factors it recognises (a count doubled, say). Off by one is not named:
    with a count, naming it would leave two candidates to try.

    Parameters
    ----------
    name : str
        The variable the learner set, quoted in the message.
    answer : object
        The learner's value: an int, or a float with no fractional part.
    key : str
        Made by :func:`count_key` from the right answer.
    slips : iterable of Slip, optional
        The slips this question expects (default none); one is named only when
        ``answer`` divided or multiplied by its factor is the right count.

    Raises
    ------
    AnswerError
        If the answer is missing, not a whole number or wrong; the message never shows
        the right answer.
    TypeError
        If ``key`` is not a string.
    ValueError
        If ``key`` is not a count key.

    Examples
    --------
    >>> from perfmodel.exercises import count_key
    >>> key = count_key(3, salt="demo/q3/stages")
    >>> check_count("stages", 3, key)
    >>> check_count("stages", 4, key)
    Traceback (most recent call last):
    ...
    perfmodel.exercises.AnswerError: `stages` is 4: not yet. Recount and try again.
    """
    _, salt, digest = parse_key(key, "count")
    missing = _missing(name, answer)
    if missing:
        raise AnswerError(missing)
    answer = _scalar(answer)
    whole = isinstance(answer, numbers.Integral) or (
        is_real(answer) and _finite_whole(answer)  # 64.0, numpy's float32(64.0)
    )
    if isinstance(answer, bool) or not whole:
        scaled = _scaled_count(answer, salt, digest, slips)
        if scaled:  # the whole count, written in a larger unit (354.823168 million)
            raise AnswerError(f"`{name}` is {answer}: not yet, {_sentence(scaled)} Fix that.")
        raise AnswerError(f"`{name}` must be a whole number (got {_describe(answer)[:40]}).")
    value = int(answer)  # type: ignore[call-overload]
    if abs(value) > 2**63:  # past any count a question asks, and past a float's range
        raise AnswerError(f"`{name}` has {len(str(abs(value)))} digits: not yet. Recount.")

    def right(candidate: float) -> bool:
        return candidate.is_integer() and key_digest(salt, f"n{int(candidate)}") == digest

    if right(float(value)):
        return

    def named(slip: Slip) -> str | None:
        if slip.key is not None:
            _, slip_salt, slip_digest = parse_key(slip.key, "count")
            return slip_text(slip) if key_digest(slip_salt, f"n{value}") == slip_digest else None
        return next((slip_text(slip, way) for way, scale in slip.scales() if right(value / scale)),
                    None)  # fmt: skip

    for slip in slips:
        phrase = named(slip)
        if phrase:
            raise AnswerError(
                f"`{name}` is {value}: not yet, {_sentence(phrase)} Fix that and try again."
            )
    raise AnswerError(f"`{name}` is {value}: not yet. Recount and try again.")


def _scaled_count(answer: object, salt: str, digest: str, slips: Iterable[Slip]) -> str | None:
    """The unit slip that makes a fractional answer exactly the right count, as a phrase: a
    count in millions typed with all its digits. None when none does."""
    if isinstance(answer, bool) or not is_real(answer):
        return None
    number = float(answer)  # type: ignore[arg-type]
    if not math.isfinite(number):
        return None
    for slip in slips:
        if not slip.unit or slip.key is not None:
            continue
        for way, scale in slip.scales():
            whole = round(number / scale)
            exact = abs(whole * scale - number) <= 1e-9 * abs(whole * scale)
            if way == "small" and whole and exact and key_digest(salt, f"n{whole}") == digest:
                return slip_text(slip, way)
    return None


def check_choice(name: str, answer: object, key: str, options: Mapping[str, str]) -> None:
    """Check a one-word answer chosen from ``options`` (case and spaces ignored).

    Parameters
    ----------
    name : str
        The variable the learner set, quoted in the message.
    answer : object
        The learner's word.
    key : str
        Made by :func:`choice_key` from the right option.
    options : mapping of str to str
        Each option (a lower-case word) and what distinguishes it; a wrong choice lists
        them all.

    Raises
    ------
    AnswerError
        If the answer is missing, not one of ``options``, or the wrong one.
    TypeError
        If ``key`` is not a string.
    ValueError
        If ``key`` is not a choice key, ``options`` is empty or not lower-case, or the key
        matches none of the options (the test is broken, not the answer).

    Examples
    --------
    >>> from perfmodel.exercises import choice_key
    >>> options = {"compute": "peak FLOP/s sets the time", "memory": "bandwidth sets the time"}
    >>> key = choice_key("memory", salt="demo/q4/bound")
    >>> check_choice("bound", "Memory ", key, options)
    >>> check_choice("bound", "disk", key, options)
    Traceback (most recent call last):
    ...
    perfmodel.exercises.AnswerError: `bound` must be one of 'compute', 'memory' (got 'disk').
    """
    _, salt, digest = parse_key(key, "choice")
    if not options or not all(isinstance(o, str) and o == o.strip().lower() for o in options):
        raise ValueError(f"`options` must map lower-case words to descriptions (got {options!r}).")
    if not any(key_digest(salt, f"w{option}") == digest for option in options):
        raise ValueError("`key` matches none of `options`: the test is broken, not the answer.")
    missing = _missing(name, answer)
    if missing:
        raise AnswerError(missing)
    choices = ", ".join(repr(option) for option in options)
    word = answer.strip().lower() if isinstance(answer, str) else None
    if word not in options:
        raise AnswerError(f"`{name}` must be one of {choices} (got {_describe(answer)}).")
    if key_digest(salt, f"w{word}") != digest:
        described = "; ".join(f"{option!r}: {text}" for option, text in options.items())
        raise AnswerError(
            f"`{name}` is {word!r}: not yet. The options are {described}. "
            f"Which one does your reasoning support?"
        )


def check_recorded(name: str, value: object, *, unit: str = "", figures: int = 3) -> None:
    """Check that a measurement was typed in as printed, to ``figures`` significant figures.

    A question about the learner's own machine is checked against the learner's own
    measurement. The grader runs the workbook again, and measures again; a measurement
    *typed in* stays the same, so the answers built on it are graded against the very
    figure the instant check used. A value computed in code would change under them, so it
    is refused here, where the learner can still fix it.

    Parameters
    ----------
    name : str
        The variable the learner set, quoted in the message.
    value : object
        The learner's value: a positive finite number.
    unit : str, optional
        The measurement's unit, named in the message when it is not a number.
    figures : int, optional
        The significant figures the printed measurement has, count (default 3; at least 1).

    Raises
    ------
    TypeError
        If ``figures`` is not an integer (the workbook's author's slip, not the learner's).
    ValueError
        If ``figures`` is below 1.
    AnswerError
        If the value is missing, not a positive finite number, or has more significant
        figures than ``figures``.

    Examples
    --------
    >>> check_recorded("my_bandwidth", 2.31e10, unit="B/s")
    >>> check_recorded("my_bandwidth", 23148573912.4, unit="B/s")
    Traceback (most recent call last):
    ...
    perfmodel.exercises.AnswerError: `my_bandwidth` must be typed in as printed, ...
    """
    figures = count("figures", figures)
    number = _number_value(name, value, unit)
    if number <= 0:
        raise AnswerError(f"`{name}` must be a positive measurement (got {number:g}).")
    if float(f"{number:.{figures}g}") != number:
        raise AnswerError(
            f"`{name}` must be typed in as printed, with {figures} significant figures "
            f"(got {number!r}). The grader runs your workbook again and measures again: a "
            f"typed figure keeps your answers checked against the measurement you made."
        )


def check_implied_work(
    name: str,
    answer: object,
    key: str,
    *,
    rate: float,
    rate_name: str,
    overhead_s: float = 0.0,
    overhead_name: str = "",
    work_unit: str = "",
    slips: Iterable[Slip] | None = None,
) -> None:
    """Check a time predicted at the learner's own measured rate by the work it implies.

    The right time depends on the machine, so it cannot be keyed; the work cannot depend
    on it. ``(answer - overhead_s) × rate`` is the work the learner's answer implies (the
    bytes moved at their bandwidth, the FLOPs done at their peak), and that is checked
    against ``key`` as :func:`check_number` checks a number, slips included.

    Parameters
    ----------
    name : str
        The learner's variable (seconds).
    answer : object
        The learner's predicted time.
    key : str
        The :func:`number_key` of the work.
    rate : float
        The learner's measured rate, work per second: B/s or FLOP/s.
    rate_name : str
        The variable that holds ``rate``, quoted in the message.
    overhead_s : float, optional
        A fixed time per call the prediction includes, s (default 0).
    overhead_name : str, optional
        The variable that holds ``overhead_s``, quoted in the message.
    work_unit : str, optional
        The unit of the work (``"B"``, ``"FLOP"``).
    slips : iterable of Slip, optional
        The slips this question expects of the work (default: :func:`default_slips` of
        ``work_unit``). With an overhead, a prefix or minutes/hours slip of the whole
        time is also named.

    Raises
    ------
    AnswerError
        If the answer, ``rate`` or ``overhead_s`` is missing or not a finite number, or
        the work the answer implies is wrong.

    Examples
    --------
    >>> from perfmodel.exercises import COUNTED_TWICE, number_key
    >>> key = number_key(2e9, rel_tol=0.01, salt="demo/q6/copy")
    >>> check_implied_work("t", 2e9 / 2.3e10, key, rate=2.3e10, rate_name="bw", work_unit="B")
    >>> check_implied_work("t", 1e9 / 2.3e10, key, rate=2.3e10, rate_name="bw", work_unit="B",
    ...                    slips=[COUNTED_TWICE])
    Traceback (most recent call last):
    ...
    perfmodel.exercises.AnswerError: `t` implies 1e+09 B at your `bw` (t × bw): not yet, it ...
    """
    seconds = _number_value(name, answer, "s")
    rate = _number_value(rate_name, rate, "")
    overhead = _number_value(overhead_name or "overhead_s", overhead_s, "s")
    work = (seconds - overhead) * rate
    formula = (
        f"({name} - {overhead_name}) × {rate_name}" if overhead_name else f"{name} × {rate_name}"
    )
    shown = (
        f"`{name}` implies {work:.4g}{f' {work_unit}' if work_unit else ''} at your "
        f"`{rate_name}` ({formula})"
    )
    try:
        _check_value(shown, work, key, work_unit, slips)
    except AnswerError:
        if overhead:
            _check_whole_time(name, seconds, overhead, rate, key)
        raise


def _check_whole_time(name: str, seconds: float, overhead: float, rate: float, key: str) -> None:
    """Name a unit slip of the whole predicted time (overhead and all in ms, say), if it is one.

    With an overhead in the prediction, a time given in the wrong unit does not imply a
    clean multiple of the work, so it is tried here as a whole.
    """
    parsed = NumberKey(key)
    for slip in (*PREFIX_SLIPS, MINUTES_FOR_SECONDS, HOURS_FOR_SECONDS):
        for direction, scale in slip.scales():
            if parsed.offset((seconds / scale - overhead) * rate) is not None:
                raise AnswerError(
                    f"`{name}` is {seconds:.4g} s: not yet, the whole time is "
                    f"{ratio_text(slip.factor)}x too {direction}: {slip.cause}. "
                    f"Fix that and try again."
                ) from None


def feedback(message: str | None) -> str:
    """The learner-facing part of an otter test-case message: the check's words only.

    otter prefixes a failure with the line of the test that raised; that is test code, not
    feedback, so only the exception's own text is kept.

    Parameters
    ----------
    message : str or None
        otter's message for one test case; None reads as empty.

    Returns
    -------
    str
        ``"passed"`` for a passed case, else the message's last line without an
        ``"AnswerError: "`` prefix (empty for an empty message).

    Examples
    --------
    >>> feedback("❌ Test case failed\\nError at line 3 in test q1:\\n  check(x)\\nAnswerError: no")
    'no'
    >>> feedback("✅ Test case passed")
    'passed'
    """
    lines = [line.strip() for line in (message or "").strip().splitlines() if line.strip()]
    last = lines[-1] if lines else ""
    if last.startswith(("✅", "Test case passed")):
        return "passed"
    return last.removeprefix("AnswerError: ")
