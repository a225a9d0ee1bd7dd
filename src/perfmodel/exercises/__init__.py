"""Answer checks for workbook tests: right or wrong, the likely slip, never the answer.

A workbook's tests ship inside the student copy, so they must not contain the answer. Each
check therefore compares the learner's value with an **answer key**: a salted hash of the
right answer, quantised at the question's tolerance. The key is made once, when the
workbook is written (:func:`number_key`, :func:`count_key`, :func:`choice_key`, or
``perfmodel key`` on the command line), and checked by :func:`check_number`,
:func:`check_count` and :func:`check_choice`.

A wrong number is rarely random. In performance modelling it is usually off by a clean
factor: a prefix applied twice (1e3), bits for bytes (8), multiply-adds for FLOPs (2),
minutes for seconds (60), a percentage for a fraction (100), or the reciprocal. A check
hashes ``answer / factor`` for each :class:`Slip` the question expects and names the one
that matches, so the hint is only given when it is true.

What a hint may say
    A check says the answer is right, or not yet. It names a slip only when the learner's
    value matches that slip within the tolerance. A **unit slip** (``unit=True``: a metric
    or binary prefix, bits for bytes, multiply-adds for FLOPs, minutes or hours for
    seconds, a percentage for a fraction) prints its exact factor, because the factor is
    the lesson. A **conceptual slip** (the default: reading C as well, 6 vs 4 FLOPs per
    parameter, a ZeRO stage, Amdahl for Gustafson...) names the concept and never its
    factor, which depends on the problem: the learner redoes the reasoning instead of
    dividing by a number. No message carries a measured ratio or a residual.

How a number key works
    The positive reals are cut into buckets of constant width in ``log(x)``, a quarter of
    ``-log(1 - rel_tol)`` wide. The key holds the hash of the bucket of the right answer
    (and its sign). An answer passes when its bucket is within four buckets of that one:
    every answer within ``rel_tol`` passes, and none beyond about ``1.26 * rel_tol``. The
    same test runs in the instant check and in the grader, so both always agree.

The hashes keep the answer out of the test source and out of every message; they do not
stop a determined learner from trying every bucket with this module's own code. That is
the same trade the whole genre makes: the grade, not the hint, is what counts.

The package's modules
    :mod:`~perfmodel.exercises.keys` makes and reads the keys, :mod:`~perfmodel.exercises.slips`
    holds the slips and words the hints, :mod:`~perfmodel.exercises.checks` the checks a
    workbook's tests call. This package's top level is the one public door to them all.

Examples
--------
>>> key = number_key(4e6, rel_tol=0.01, salt="demo/q1/bytes_moved")
>>> check_number("bytes_moved", 4.02e6, key, unit="B")
>>> check_number("bytes_moved", 32e6, key, unit="B")
Traceback (most recent call last):
...
perfmodel.exercises.AnswerError: `bytes_moved` is 3.2e+07 B: not yet, 8x too large: a factor ...
"""

from __future__ import annotations

from perfmodel.exercises.checks import (
    AnswerError,
    check_choice,
    check_count,
    check_implied_work,
    check_number,
    check_recorded,
    feedback,
)
from perfmodel.exercises.keys import choice_key, count_key, number_key
from perfmodel.exercises.slips import (
    BINARY_PREFIX_SLIPS,
    BITS_FOR_BYTES,
    COUNTED_TWICE,
    DTYPE_WIDTH,
    FLOPS_FOR_MACS,
    HOURS_FOR_SECONDS,
    KWH_FOR_JOULES,
    MINUTES_FOR_SECONDS,
    PERCENT_FOR_FRACTION,
    PREFIX_SLIPS,
    RECIPROCAL,
    SPARSE_PEAK,
    Slip,
    default_slips,
    unit_slips,
)

__all__ = [
    "BINARY_PREFIX_SLIPS",
    "BITS_FOR_BYTES",
    "COUNTED_TWICE",
    "DTYPE_WIDTH",
    "FLOPS_FOR_MACS",
    "HOURS_FOR_SECONDS",
    "KWH_FOR_JOULES",
    "MINUTES_FOR_SECONDS",
    "PERCENT_FOR_FRACTION",
    "PREFIX_SLIPS",
    "RECIPROCAL",
    "SPARSE_PEAK",
    "AnswerError",
    "Slip",
    "check_choice",
    "check_count",
    "check_implied_work",
    "check_number",
    "check_recorded",
    "choice_key",
    "count_key",
    "default_slips",
    "feedback",
    "number_key",
    "unit_slips",
]
