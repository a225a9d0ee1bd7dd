"""Answer checks for workbook tests, with hints a learner can act on.

A wrong number is rarely random. In performance modelling it is usually off by a clean
factor: a prefix applied twice (1e3, 1e6, 1e9), bits where bytes were meant (8),
multiply-adds where FLOPs were meant (2), or GiB where GB were meant (1024**3 / 1e9).
:func:`check_number` recognises those factors and names the slip instead of just saying
"wrong".

Workbook test cases (otter-grader's exception-based format) call these checks; a failed
check raises :class:`AnswerError`, an ``AssertionError`` whose message is shown to the
learner by ``grader.check("q1")``.

Examples
--------
>>> check_number("bytes_moved", 4e6, 4e6, unit="B")
>>> check_number("bytes_moved", 32e6, 4e6, unit="B")
Traceback (most recent call last):
...
perfmodel.exercises.AnswerError: `bytes_moved` is 3.2e+07 B, but that is exactly 8x too large: ...
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import cast

__all__ = [
    "SLIPS",
    "AnswerError",
    "Slip",
    "check_choice",
    "check_count",
    "check_number",
    "diagnose",
]


class AnswerError(AssertionError):
    """A learner's answer failed a check; the message says why and what to try."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Slip:
    """A common unit slip: an answer off from the truth by exactly ``factor``."""

    factor: float
    cause: str


#: The slips :func:`check_number` recognises, largest factor first.
SLIPS: tuple[Slip, ...] = (
    Slip(
        factor=1e9,
        cause="a factor of 1e9 is a giga/nano prefix slip (G vs base units, ns vs s)",
    ),
    Slip(
        factor=1e6,
        cause="a factor of 1e6 is a mega/micro prefix slip (MB vs B, µs vs s)",
    ),
    Slip(
        factor=1e3,
        cause=(
            "a factor of 1000 is one metric prefix step (ms vs s, GB vs MB, TFLOP/s vs GFLOP/s)"
        ),
    ),
    Slip(factor=8.0, cause="a factor of 8 is the bits-vs-bytes slip (1 byte = 8 bits)"),
    Slip(
        factor=2.0,
        cause=(
            "a factor of 2 is the FLOPs-vs-multiply-adds slip "
            "(one multiply-add, or MAC, is 2 FLOPs)"
        ),
    ),
    Slip(
        factor=1024**3 / 1e9,
        cause="a factor of 1.074 is the GiB-vs-GB slip (1 GiB = 2**30 bytes, 1 GB = 10**9 bytes)",
    ),
    Slip(
        factor=1024**2 / 1e6,
        cause="a factor of 1.049 is the MiB-vs-MB slip (1 MiB = 2**20 bytes, 1 MB = 10**6 bytes)",
    ),
    Slip(
        factor=1.024,
        cause="a factor of 1.024 is the KiB-vs-kB slip (1 KiB = 1024 bytes, 1 kB = 1000 bytes)",
    ),
)


def diagnose(answer: float, expected: float, *, rel_tol: float) -> str | None:
    """Name the slip that turns ``expected`` into ``answer``, if there is one.

    Parameters
    ----------
    answer, expected : float
        The learner's number and the right one, in the same units.
    rel_tol : float
        The question's relative tolerance; a slip only counts when the answer matches
        ``expected * factor`` (or ``expected / factor``) within it, and the factor itself is
        bigger than the tolerance (so a 1.024 slip is not reported on a 5% question).

    Returns
    -------
    str or None
        A sentence such as ``"exactly 8x too large: ..."``, or ``None`` when no known slip fits.

    Examples
    --------
    >>> diagnose(16.0, 2.0, rel_tol=0.01)
    'exactly 8x too large: a factor of 8 is the bits-vs-bytes slip (1 byte = 8 bits)'
    >>> diagnose(3.0, 2.0, rel_tol=0.01) is None
    True
    """
    if expected == 0 or answer == 0:
        return None
    if (answer < 0) != (expected < 0):
        if math.isclose(-answer, expected, rel_tol=rel_tol):
            return "the right size but the wrong sign"
        return None
    ratio = answer / expected
    for slip in SLIPS:
        if slip.factor - 1 <= 2 * rel_tol:
            continue
        for direction, scale in (("large", slip.factor), ("small", 1 / slip.factor)):
            if math.isclose(ratio, scale, rel_tol=rel_tol):
                return f"exactly {slip.factor:g}x too {direction}: {slip.cause}"
    return None


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


def check_number(
    name: str,
    answer: object,
    expected: float,
    *,
    rel_tol: float = 0.01,
    unit: str = "",
) -> None:
    """Check a numeric answer against the expected value within a relative tolerance.

    Parameters
    ----------
    name : str
        The variable the learner set, quoted in the message.
    answer : object
        The learner's value. Anything but a real number fails with a message saying so.
    expected : float
        The right answer, nonzero and finite, in the units the question asks for.
    rel_tol : float, optional
        Relative tolerance, strictly between 0 and 1 (default 1%).
    unit : str, optional
        The unit the question asks for, printed after each number (``"s"``, ``"B"``...).

    Raises
    ------
    AnswerError
        If the answer is missing, not a number, or off by more than ``rel_tol``; the message
        names a likely slip when the answer is off by a known factor.
    ValueError
        If ``expected`` or ``rel_tol`` is unusable (a mistake in the test, not the answer).

    Examples
    --------
    >>> check_number("t", 0.007, 0.007, unit="s")
    >>> check_number("t", 7.0, 0.007, unit="s")
    Traceback (most recent call last):
    ...
    perfmodel.exercises.AnswerError: `t` is 7 s, but that is exactly 1000x too large: ...
    """
    if not 0 < rel_tol < 1:
        raise ValueError(f"`rel_tol` must be strictly between 0 and 1 (got rel_tol={rel_tol}).")
    if not math.isfinite(expected) or expected == 0:
        raise ValueError(f"`expected` must be a finite nonzero number (got {expected!r}).")
    unit_text = f" {unit}" if unit else ""
    missing = _missing(name, answer)
    if missing:
        raise AnswerError(missing)
    if isinstance(answer, bool) or not isinstance(answer, numbers.Real):
        hint = " Write it as a plain number, such as 4e6." if isinstance(answer, str) else ""
        raise AnswerError(
            f"`{name}` must be a number{f' in {unit}' if unit else ''}, "
            f"but it is a {type(answer).__name__}: {_describe(answer)}.{hint}"
        )
    value = float(answer)
    if not math.isfinite(value):
        raise AnswerError(f"`{name}` is {value}; a finite number was expected.")
    if math.isclose(value, expected, rel_tol=rel_tol):
        return
    slip = diagnose(value, expected, rel_tol=rel_tol)
    if slip:
        raise AnswerError(
            f"`{name}` is {value:.4g}{unit_text}, but that is {slip}. "
            f"Check your units and try again."
        )
    direction = "too large" if abs(value) > abs(expected) else "too small"
    raise AnswerError(
        f"`{name}` is {value:.4g}{unit_text}, which is {direction} "
        f"(off by more than {rel_tol:.0%}, and not by a simple unit factor). "
        f"Recheck the formula, one term at a time."
    )


def check_count(name: str, answer: object, expected: object) -> None:
    """Check a whole-number answer (a count of stages, GPUs, steps...) exactly.

    Unit slips make no sense for a count, so none are named; the message says whether the
    answer is too many or too few.

    Examples
    --------
    >>> check_count("stages", 3, 3)
    >>> check_count("stages", 4, 3)
    Traceback (most recent call last):
    ...
    perfmodel.exercises.AnswerError: `stages` is 4, which is too many. Recount and try again.
    """
    if isinstance(expected, bool) or not isinstance(expected, numbers.Integral):
        raise ValueError(f"`expected` must be an integer (got {expected!r}).")
    missing = _missing(name, answer)
    if missing:
        raise AnswerError(missing)
    whole = isinstance(answer, numbers.Integral) or (
        isinstance(answer, float) and answer.is_integer()
    )
    if isinstance(answer, bool) or not whole:
        raise AnswerError(f"`{name}` must be a whole number (got {_describe(answer)}).")
    value = int(cast(float, answer))
    if value != int(cast(int, expected)):
        direction = "too many" if value > int(cast(int, expected)) else "too few"
        raise AnswerError(f"`{name}` is {value}, which is {direction}. Recount and try again.")


def check_choice(name: str, answer: object, options: tuple[str, ...], expected: str) -> None:
    """Check a one-word answer chosen from ``options`` (case and spaces ignored).

    Examples
    --------
    >>> check_choice("bound", "Memory ", ("compute", "memory"), "memory")
    >>> check_choice("bound", "disk", ("compute", "memory"), "memory")
    Traceback (most recent call last):
    ...
    perfmodel.exercises.AnswerError: `bound` must be one of 'compute', 'memory' (got 'disk').
    """
    if expected not in options:
        raise ValueError(f"`expected` must be one of `options` (got {expected!r}).")
    missing = _missing(name, answer)
    if missing:
        raise AnswerError(missing)
    choices = ", ".join(repr(option) for option in options)
    if not isinstance(answer, str) or answer.strip().lower() not in options:
        raise AnswerError(f"`{name}` must be one of {choices} (got {_describe(answer)}).")
    if answer.strip().lower() != expected:
        raise AnswerError(
            f"`{name}` is {answer.strip().lower()!r}, which is not right. Think again."
        )
