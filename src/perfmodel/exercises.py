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

import hashlib
import math
import numbers
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace

from perfmodel._validate import count

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
]

#: Buckets per tolerance width: answers up to (1 + 1/SUBDIVISIONS) * rel_tol may pass.
SUBDIVISIONS = 4
_VERSION = "pm1"


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


class AnswerError(AssertionError):
    """A learner's answer failed a check; the message says why and what to try."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Slip:
    """A likely slip: an answer off from the right one by exactly ``factor``, or, for a
    conceptual slip of one question, the very value that mistake gives (``key``).

    A workbook's test ships to the learner, so a conceptual slip of one question is keyed
    like the answer: its factor beside its name would give the answer away (the ideal
    speedup is 16 and 1.75 times the answer).

    Parameters
    ----------
    factor : float
        The ratio the slip produces (greater than 1), dimensionless; both directions are
        checked unless ``direction`` says otherwise. Ignored when ``reciprocal`` is true or
        ``key`` is given.
    name : str
        A few words that name the slip in a list ("bits vs bytes").
    cause : str
        What the learner probably did, as the rest of a sentence.
    reciprocal : bool, optional
        The slip gives ``1 / right answer`` instead of a multiple of it.
    unit : bool, optional
        A unit slip (a prefix, bits for bytes, FLOPs for multiply-adds...), whose factor is
        the same in every problem and is printed. A conceptual slip (the default) is named
        by its ``cause`` alone, which must not state the factor.
    direction : {"both", "large", "small"}, optional
        Which way the slip moves the answer: ``"large"`` checks only ``answer * factor``,
        ``"small"`` only ``answer / factor``, ``"both"`` either. A unit slip goes both ways
        unless told otherwise. A conceptual slip with a factor must say: it is one mistake
        with one value (the ideal speedup is always too large), so a hint that also named it
        for the mirror value, ``answer / factor``, would name a mistake the learner did not
        make. Give ``"both"`` only when its ``cause`` names both ways ("..., or the reverse").
    key : str, optional
        The value the slip gives, keyed as the answer is (:func:`number_key` with the
        question's tolerance, or :func:`count_key`) under a salt of its own: the slip is
        named when the learner's value matches it. Only for a conceptual slip.

    Raises
    ------
    ValueError
        If a conceptual slip (not ``unit``, not ``reciprocal``) gives neither a ``key`` nor a
        ``direction``, or a ``key`` comes with a unit or reciprocal slip.

    Examples
    --------
    >>> ideal = Slip(factor=1.75, name="ideal", cause="the ideal speedup", direction="large")
    >>> ideal.scales()
    (('large', 1.75),)
    >>> ideal = Slip(key=number_key(16, rel_tol=0.01, salt="demo/q1/s~ideal"), name="ideal",
    ...              cause="the ideal speedup")
    >>> check_number("s", 16, number_key(9.14, rel_tol=0.01, salt="demo/q1/s"), slips=[ideal])
    Traceback (most recent call last):
    ...
    perfmodel.exercises.AnswerError: `s` is 16: not yet, it looks like the ideal speedup. ...
    """

    factor: float = 1.0
    name: str
    cause: str
    reciprocal: bool = False
    unit: bool = False
    direction: str | None = None
    key: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.reciprocal, bool):
            raise TypeError(f"`reciprocal` must be a bool (got {self.reciprocal!r}).")
        if not isinstance(self.unit, bool):
            raise TypeError(f"`unit` must be a bool (got {self.unit!r}).")
        if self.key is not None:
            if self.unit or self.reciprocal:
                raise ValueError(
                    f"`key` is for a conceptual slip; {self.name!r} is a "
                    f"{'unit' if self.unit else 'reciprocal'} slip."
                )
            counted = isinstance(self.key, str) and self.key.startswith(f"{_VERSION}:count:")
            _parse_key(self.key, "count" if counted else "number")
            return
        if self.direction is None:
            if not (self.unit or self.reciprocal):
                raise ValueError(
                    f"`direction` must be given for the conceptual slip {self.name!r}: "
                    "'large' or 'small' (which way the mistake moves the answer), or 'both' "
                    "when its cause names both ways (got None)."
                )
            object.__setattr__(self, "direction", "both")
        if self.direction not in ("both", "large", "small"):
            raise ValueError(
                f"`direction` must be 'both', 'large' or 'small' (got {self.direction!r})."
            )
        if not self.reciprocal and not (
            _is_real(self.factor) and math.isfinite(self.factor) and self.factor > 1
        ):
            raise ValueError(f"`factor` must be a finite number above 1 (got {self.factor!r}).")

    def only(self, direction: str) -> Slip:
        """This slip checked one way only, for a question where it can go no other way.

        Parameters
        ----------
        direction : {"large", "small"}
            Which way the slip moves this question's answer.

        Returns
        -------
        Slip
            A copy with ``direction`` set.

        Examples
        --------
        >>> SPARSE_PEAK.only("small").scales()  # a time at the sparse peak is too short
        (('small', 0.5),)
        """
        if direction not in ("large", "small"):
            raise ValueError(f"`direction` must be 'large' or 'small' (got {direction!r}).")
        return replace(self, direction=direction)

    def scales(self) -> tuple[tuple[str, float], ...]:
        """(direction, multiple of the right answer) for each way this slip is checked.

        Returns
        -------
        tuple of (str, float)
            ``("large", factor)`` and/or ``("small", 1 / factor)``, as ``direction``
            allows; the multiple is dimensionless. Empty for a keyed slip.
        """
        if self.key is not None:
            return ()
        both = (("large", self.factor), ("small", 1 / self.factor))
        return tuple(item for item in both if self.direction in ("both", item[0]))

    def distinguishable(self, rel_tol: float) -> bool:
        """Whether this factor can be told apart from rounding at ``rel_tol`` (checks name
        only such slips: 1.024 on a 1% question never is).

        Parameters
        ----------
        rel_tol : float
            The question's relative tolerance, fraction.

        Returns
        -------
        bool
            True for a reciprocal slip, or when ``log(factor)`` exceeds twice the widest
            log-distance a check still accepts at ``rel_tol``.
        """
        if self.reciprocal or self.key is not None:
            return True
        return math.log(self.factor) > 2 * _window(rel_tol)


def _slip(
    factor: float, name: str, cause: str, *, unit: bool = True, direction: str | None = None
) -> Slip:
    return Slip(factor=factor, name=name, cause=cause, unit=unit, direction=direction)


PREFIX_SLIPS: tuple[Slip, ...] = (
    _slip(
        1e12,
        "tera/pico prefix",
        "a factor of 1e12 is a tera/pico prefix slip (T vs base units, ps vs s)",
    ),
    _slip(
        1e9,
        "giga/nano prefix",
        "a factor of 1e9 is a giga/nano prefix slip (G vs base units, ns vs s)",
    ),
    _slip(
        1e6, "mega/micro prefix", "a factor of 1e6 is a mega/micro prefix slip (MB vs B, µs vs s)"
    ),
    _slip(
        1e3,
        "one prefix step",
        "a factor of 1000 is one metric prefix step (ms vs s, GB vs MB, T vs G)",
    ),
)
BITS_FOR_BYTES = _slip(
    8, "bits vs bytes", "a factor of 8 is the bits-vs-bytes slip (1 byte = 8 bits)"
)
BINARY_PREFIX_SLIPS: tuple[Slip, ...] = (
    _slip(
        1024**3 / 1e9,
        "GiB vs GB",
        "a factor of 1.074 is GiB vs GB (1 GiB = 2**30 B, 1 GB = 10**9 B)",
    ),
    _slip(
        1024**2 / 1e6,
        "MiB vs MB",
        "a factor of 1.049 is MiB vs MB (1 MiB = 2**20 B, 1 MB = 10**6 B)",
    ),
    _slip(1.024, "KiB vs kB", "a factor of 1.024 is KiB vs kB (1 KiB = 1024 B, 1 kB = 1000 B)"),
)
FLOPS_FOR_MACS = _slip(
    2,
    "FLOPs vs multiply-adds",
    "a factor of 2 is FLOPs vs multiply-adds (one multiply-add is 2 FLOPs)",
)
MINUTES_FOR_SECONDS = _slip(60, "minutes vs seconds", "a factor of 60 is minutes vs seconds")
HOURS_FOR_SECONDS = _slip(3600, "hours vs seconds", "a factor of 3600 is hours vs seconds")
KWH_FOR_JOULES = _slip(3.6e6, "kWh vs J", "a factor of 3.6e6 is kWh vs J (1 kWh = 3.6e6 J)")
PERCENT_FOR_FRACTION = _slip(
    100,
    "percent vs fraction",
    "a factor of 100 is a percentage where a fraction was asked, or the reverse",
)
#: Too large, as a peak or a ridge point is; ``SPARSE_PEAK.only("small")`` for a quantity
#: the peak divides (a time, a utilisation).
SPARSE_PEAK = _slip(
    2,
    "sparse vs dense peak",
    "the sparse (structured-sparsity) peak where the dense one was meant",
    unit=False,
    direction="large",
)
DTYPE_WIDTH = _slip(
    2,
    "element width",
    "the wrong element width: check how many bytes one element of this dtype takes",
    unit=False,
    direction="both",
)
#: For an answer of two tensors of one size (a copy's read and its write): twice it counts
#: both twice, half of it leaves one out.
COUNTED_TWICE = _slip(
    2,
    "tensors counted twice or left out",
    "every tensor counted twice, or half of them left out: list every read and write",
    unit=False,
    direction="both",
)
RECIPROCAL = Slip(
    name="x vs 1/x", cause="1/x where x was asked, or the other way round", reciprocal=True
)
_SIGN = "the right size but the wrong sign"


def default_slips(unit: str) -> tuple[Slip, ...]:
    """The slips a question in ``unit`` is checked for when it declares none.

    Every unit gets the metric prefixes; bytes add bits and the binary prefixes, FLOPs add
    multiply-adds, seconds add minutes and hours, joules add kWh.

    Parameters
    ----------
    unit : str
        The question's unit. Its part before any ``"/"`` decides: ``"B"`` or ``"bit"``
        (so ``"B/s"`` too) adds bits and binary prefixes, ``"FLOP"`` or ``"OP"`` adds
        multiply-adds; exactly ``"s"`` adds minutes and hours, exactly ``"J"`` adds kWh.

    Returns
    -------
    tuple of Slip
        :data:`PREFIX_SLIPS`, then the unit's own slips.

    Examples
    --------
    >>> [slip.factor for slip in default_slips("FLOP/s")]
    [1000000000000.0, 1000000000.0, 1000000.0, 1000.0, 2]
    """
    base = unit.split("/")[0].strip()
    extra: tuple[Slip, ...] = ()
    if base in ("B", "bit"):
        extra = (BITS_FOR_BYTES, *BINARY_PREFIX_SLIPS)
    elif base in ("FLOP", "OP"):
        extra = (FLOPS_FOR_MACS,)
    elif unit == "s":
        extra = (MINUTES_FOR_SECONDS, HOURS_FOR_SECONDS)
    elif unit == "J":
        extra = (KWH_FOR_JOULES,)
    return (*PREFIX_SLIPS, *extra)


# --- keys ---------------------------------------------------------------------------------


def _digest(salt: str, token: str) -> str:
    return hashlib.sha256(f"{_VERSION}\0{salt}\0{token}".encode()).hexdigest()[:20]


def _width(rel_tol: float) -> float:
    # Within rel_tol means |answer - right| <= rel_tol * |right|; its wider side in log terms
    # is -log(1 - rel_tol). The 1e-9 keeps an answer exactly at the tolerance from landing
    # one bucket too far through rounding.
    return -math.log1p(-rel_tol) / SUBDIVISIONS * (1 + 1e-9)


def _window(rel_tol: float) -> float:
    """The widest log-distance from the right answer that a check may still accept."""
    return _width(rel_tol) * (SUBDIVISIONS + 1)


def _token(value: float, width: float, shift: int = 0) -> str:
    if value == 0:
        return "0"
    return f"{'-' if value < 0 else '+'}{math.floor(math.log(abs(value)) / width) - shift}"


def _check_salt(salt: object) -> str:
    if not isinstance(salt, str):
        raise TypeError(f"`salt` must be a str (got {type(salt).__name__}).")
    if not salt or ":" in salt:
        raise ValueError(f"`salt` must be a non-empty string without ':' (got {salt!r}).")
    return salt


def _check_rel_tol(rel_tol: object) -> float:
    if not _is_real(rel_tol):
        raise TypeError(f"`rel_tol` must be a number (got {type(rel_tol).__name__}).")
    if not 0 < float(rel_tol) < 0.5:  # type: ignore[arg-type]
        raise ValueError(f"`rel_tol` must be strictly between 0 and 0.5 (got rel_tol={rel_tol}).")
    return float(rel_tol)  # type: ignore[arg-type]


def number_key(expected: float, *, rel_tol: float, salt: str) -> str:
    """The answer key of a numeric question.

    Parameters
    ----------
    expected : float
        The right answer, finite, in the unit the question asks for (s, B, FLOP...).
    rel_tol : float
        Relative tolerance, fraction, strictly between 0 and 0.5 (0.01 accepts answers
        within 1%).
    salt : str
        Unique per question and variable, e.g. ``"01_measure_what_matters/q1/energy_j"``.

    Returns
    -------
    str
        The key, ``"pm1:number:<rel_tol>:<salt>:<hash>"``.

    Raises
    ------
    TypeError
        If ``expected``, ``rel_tol`` or ``salt`` is of the wrong type.
    ValueError
        If ``expected`` is not finite, ``rel_tol`` is out of range, or ``salt`` is empty or
        contains ``":"``.

    Examples
    --------
    >>> number_key(750.0, rel_tol=0.01, salt="demo/q1/t")
    'pm1:number:0.01:demo/q1/t:...'
    """
    if not _is_real(expected):
        raise TypeError(f"`expected` must be a number (got {type(expected).__name__}).")
    if not math.isfinite(expected):
        raise ValueError(f"`expected` must be finite (got {expected!r}).")
    tol = _check_rel_tol(rel_tol)
    digest = _digest(_check_salt(salt), _token(float(expected), _width(tol)))
    return f"{_VERSION}:number:{tol!r}:{salt}:{digest}"


def count_key(expected: object, *, salt: str) -> str:
    """The answer key of a whole-number question (stages, GPUs, steps...).

    Parameters
    ----------
    expected : int
        The right answer.
    salt : str
        Unique per question and variable, as for :func:`number_key`.

    Returns
    -------
    str
        The key, ``"pm1:count:<salt>:<hash>"``.

    Raises
    ------
    TypeError
        If ``expected`` or ``salt`` is of the wrong type.
    ValueError
        If ``salt`` is empty or contains ``":"``.
    """
    if isinstance(expected, bool) or not isinstance(expected, numbers.Integral):
        raise TypeError(f"`expected` must be an int (got {type(expected).__name__}).")
    whole = int(expected)
    return f"{_VERSION}:count:{_check_salt(salt)}:{_digest(salt, f'n{whole}')}"


def choice_key(expected: str, *, salt: str) -> str:
    """The answer key of a question answered with one word from a list of options.

    Parameters
    ----------
    expected : str
        The right option (case and surrounding spaces ignored).
    salt : str
        Unique per question and variable, as for :func:`number_key`.

    Returns
    -------
    str
        The key, ``"pm1:choice:<salt>:<hash>"``.

    Raises
    ------
    TypeError
        If ``expected`` or ``salt`` is of the wrong type.
    ValueError
        If ``salt`` is empty or contains ``":"``.
    """
    if not isinstance(expected, str):
        raise TypeError(f"`expected` must be a str (got {type(expected).__name__}).")
    word = expected.strip().lower()
    return f"{_VERSION}:choice:{_check_salt(salt)}:{_digest(salt, f'w{word}')}"


def _parse_key(key: object, kind: str) -> tuple[str, str, str]:
    """Split a key into (parameter, salt, digest); raise ValueError for a broken key."""
    if not isinstance(key, str):
        raise TypeError(f"`key` must be a str made by {kind}_key (got {type(key).__name__}).")
    parts = key.split(":")
    if parts[:2] != [_VERSION, kind] or len(parts) not in (4, 5):
        raise ValueError(f"`key` must be a key made by {kind}_key (got {key[:40]!r}).")
    if kind == "number" and len(parts) == 5:
        return parts[2], parts[3], parts[4]
    if kind != "number" and len(parts) == 4:
        return "", parts[2], parts[3]
    raise ValueError(f"`key` must be a key made by {kind}_key (got {key[:40]!r}).")


# --- checks -------------------------------------------------------------------------------


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
    if not _is_real(answer):
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


class _NumberKey:
    """A parsed number key: tells how many buckets a value sits from the right answer."""

    def __init__(self, key: object) -> None:
        tol, self.salt, self.digest = _parse_key(key, "number")
        try:
            self.rel_tol = _check_rel_tol(float(tol))
        except ValueError:
            raise ValueError(f"`key` has a broken tolerance ({tol!r}).") from None
        self.width = _width(self.rel_tol)

    def offset(self, value: float) -> int | None:
        """Buckets between ``value`` and the right answer (None: more than SUBDIVISIONS)."""
        if not math.isfinite(value):
            return None
        if value == 0:
            return 0 if _digest(self.salt, "0") == self.digest else None
        for shift in sorted(range(-SUBDIVISIONS, SUBDIVISIONS + 1), key=abs):
            if _digest(self.salt, _token(value, self.width, shift)) == self.digest:
                return shift
        return None


def _match_slip(value: float, key: _NumberKey, slips: Iterable[Slip]) -> str | None:
    """Every slip the value fits, as one phrase, or None.

    A unit slip's phrase carries its exact factor; a conceptual slip's only its concept. When
    two slips fit (their windows meet, or they share a factor), both are named, the closer
    first: the hint cannot tell which mistake was made.
    """
    window = _window(key.rel_tol)
    found: list[tuple[int, str]] = []
    for slip in slips:
        if slip.reciprocal:
            shift = key.offset(1 / value) if value else None
            if shift is not None and abs(math.log(abs(value))) > window:
                found.append((abs(shift), f"the reciprocal of the right answer: {slip.cause}"))
            continue
        if slip.key is not None:
            shift = _NumberKey(slip.key).offset(value)
            if shift is not None:
                found.append((abs(shift), _phrase(slip)))
            continue
        if not slip.distinguishable(key.rel_tol):
            continue
        for direction, scale in slip.scales():
            shift = key.offset(value / scale)
            if shift is not None:
                found.append((abs(shift), _phrase(slip, direction)))
    shift = key.offset(-value)
    if shift is not None:
        found.append((abs(shift), _SIGN))
    if not found:
        return None
    found.sort(key=lambda item: item[0])  # the closest first; ties keep the declared order
    return "; or ".join(dict.fromkeys(phrase for _, phrase in found))


def _phrase(slip: Slip, direction: str | None = None) -> str:
    """How a hint names ``slip``: a unit slip by its factor and the way the answer is off,
    any other by its cause alone."""
    if slip.unit and direction is not None:
        return f"{_ratio_text(slip.factor)}x too {direction}: {slip.cause}"
    return f"it looks like {slip.cause}"


def _ratio_text(ratio: float) -> str:
    """A factor as a person writes it: 8, 60, 1,000, 1e+06, 1.074."""
    if ratio >= 1e5:
        return f"{ratio:.4g}".replace("e+0", "e").replace("e+", "e")
    if float(ratio).is_integer():
        return f"{int(ratio):,}"
    return f"{ratio:.4g}"


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
    parsed = _NumberKey(key)
    slips = default_slips(unit) if slips is None else tuple(slips)
    if parsed.offset(value) is not None:
        return
    slip = _match_slip(value, parsed, slips)
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
    >>> key = count_key(3, salt="demo/q3/stages")
    >>> check_count("stages", 3, key)
    >>> check_count("stages", 4, key)
    Traceback (most recent call last):
    ...
    perfmodel.exercises.AnswerError: `stages` is 4: not yet. Recount and try again.
    """
    _, salt, digest = _parse_key(key, "count")
    missing = _missing(name, answer)
    if missing:
        raise AnswerError(missing)
    answer = _scalar(answer)
    whole = isinstance(answer, numbers.Integral) or (
        _is_real(answer) and _finite_whole(answer)  # 64.0, numpy's float32(64.0)
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
        return candidate.is_integer() and _digest(salt, f"n{int(candidate)}") == digest

    if right(float(value)):
        return

    def named(slip: Slip) -> str | None:
        if slip.key is not None:
            _, slip_salt, slip_digest = _parse_key(slip.key, "count")
            return _phrase(slip) if _digest(slip_salt, f"n{value}") == slip_digest else None
        return next((_phrase(slip, way) for way, scale in slip.scales() if right(value / scale)),
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
    if isinstance(answer, bool) or not _is_real(answer):
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
            if way == "small" and whole and exact and _digest(salt, f"n{whole}") == digest:
                return _phrase(slip, way)
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
    >>> options = {"compute": "peak FLOP/s sets the time", "memory": "bandwidth sets the time"}
    >>> key = choice_key("memory", salt="demo/q4/bound")
    >>> check_choice("bound", "Memory ", key, options)
    >>> check_choice("bound", "disk", key, options)
    Traceback (most recent call last):
    ...
    perfmodel.exercises.AnswerError: `bound` must be one of 'compute', 'memory' (got 'disk').
    """
    _, salt, digest = _parse_key(key, "choice")
    if not options or not all(isinstance(o, str) and o == o.strip().lower() for o in options):
        raise ValueError(f"`options` must map lower-case words to descriptions (got {options!r}).")
    if not any(_digest(salt, f"w{option}") == digest for option in options):
        raise ValueError("`key` matches none of `options`: the test is broken, not the answer.")
    missing = _missing(name, answer)
    if missing:
        raise AnswerError(missing)
    choices = ", ".join(repr(option) for option in options)
    word = answer.strip().lower() if isinstance(answer, str) else None
    if word not in options:
        raise AnswerError(f"`{name}` must be one of {choices} (got {_describe(answer)}).")
    if _digest(salt, f"w{word}") != digest:
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
    parsed = _NumberKey(key)
    for slip in (*PREFIX_SLIPS, MINUTES_FOR_SECONDS, HOURS_FOR_SECONDS):
        for direction, scale in slip.scales():
            if parsed.offset((seconds / scale - overhead) * rate) is not None:
                raise AnswerError(
                    f"`{name}` is {seconds:.4g} s: not yet, the whole time is "
                    f"{_ratio_text(slip.factor)}x too {direction}: {slip.cause}. "
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
