"""The slips a check names and how a hint names them.

:class:`Slip` is one likely slip (a unit slip with its factor, or a conceptual one);
the catalogue (:data:`PREFIX_SLIPS`, :data:`BITS_FOR_BYTES`, ...) and
:func:`default_slips` are the slips a question expects; :func:`match_slip` finds the slips
a wrong value fits and words the hint.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, replace

from perfmodel.exercises.keys import (
    VERSION,
    NumberKey,
    is_real,
    parse_key,
    tolerance_window,
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
    "Slip",
    "default_slips",
    "unit_slips",
]


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
    >>> from perfmodel.exercises import check_number, number_key
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
            counted = isinstance(self.key, str) and self.key.startswith(f"{VERSION}:count:")
            parse_key(self.key, "count" if counted else "number")
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
            is_real(self.factor) and math.isfinite(self.factor) and self.factor > 1
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
        return math.log(self.factor) > 2 * tolerance_window(rel_tol)


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
    return (*PREFIX_SLIPS, *_own_slips(base, unit, BINARY_PREFIX_SLIPS))


def _own_slips(base: str, unit: str, binary: tuple[Slip, ...]) -> tuple[Slip, ...]:
    """A unit's slips besides the metric prefixes: bits and ``binary`` for bytes, multiply-adds
    for FLOPs, minutes and hours for seconds, kWh for joules."""
    if base in ("B", "bit"):
        return (BITS_FOR_BYTES, *binary)
    if base in ("FLOP", "OP"):
        return (FLOPS_FOR_MACS,)
    if unit == "s":
        return (MINUTES_FOR_SECONDS, HOURS_FOR_SECONDS)
    if unit == "J":
        return (KWH_FOR_JOULES,)
    return ()


#: The SI units a metric prefix can scale, and the prefixes with their multiples.
_SI = ("s", "B", "bit", "FLOP", "OP", "J", "W", "Hz")
_PREFIXES = {"": 1.0, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "m": 1e-3, "µ": 1e-6, "n": 1e-9}


def _si(unit: str) -> tuple[str, float] | None:
    """(base unit, its prefix's multiple) of an SI unit such as ``"GB"`` or ``"ms"``; else None."""
    for prefix, multiple in _PREFIXES.items():
        base = unit[len(prefix) :] if unit.startswith(prefix) else None
        if base in _SI:
            return base, multiple
    return None


def unit_slips(unit: str, value: float) -> tuple[Slip, ...]:
    """The unit slips that apply to an answer of about ``value`` in ``unit``: the ones its
    check should name.

    A table of hints is tested against this list (a workbook's tests must not call it: its
    choice of binary prefix depends on the answer's size).

    Parameters
    ----------
    unit : str
        The question's unit. ``""`` is a fraction; ``"x"`` a ratio (a speed-up); an SI unit
        with or without a metric prefix, alone or over another (``"ms"``, ``"GB/s"``,
        ``"FLOP/B"``), gets the metric prefixes and its own slips; any other word
        (``"tokens"``, a count of things) gets none.
    value : float
        The right answer, about, in ``unit``: it picks the binary prefix a size in bytes
        is written with, and whether a fraction can be a percentage.

    Returns
    -------
    tuple of Slip
        A fraction up to 1: a percentage given for it (too large). A ratio: its reciprocal.
        An SI unit: :data:`PREFIX_SLIPS`; bytes add bits for bytes and the binary prefix of the
        size (GiB from 1e9 bytes, MiB from 1e6, KiB from 1e3); FLOPs add multiply-adds;
        seconds add minutes and hours; joules and kWh add kWh for joules; a rate per byte
        (``"FLOP/B"``) adds bits for bytes (too small) and the reciprocal.

    Raises
    ------
    TypeError
        If ``unit`` is not a str or ``value`` not a real number.

    Examples
    --------
    >>> [slip.name for slip in unit_slips("GB", 25.3)][4:]
    ['bits vs bytes', 'GiB vs GB']
    >>> [slip.name for slip in unit_slips("", 0.8)]
    ['percent vs fraction']
    >>> unit_slips("tokens", 19_480.8)
    ()
    """
    if not isinstance(unit, str):
        raise TypeError(f"`unit` must be a str (got {type(unit).__name__}).")
    if not is_real(value):
        raise TypeError(f"`value` must be a real number (got {type(value).__name__}).")
    if unit == "":
        return (PERCENT_FOR_FRACTION.only("large"),) if 0 < abs(value) <= 1 else ()
    if unit == "x":
        return (RECIPROCAL,)
    if unit == "kWh":
        return (*PREFIX_SLIPS, KWH_FOR_JOULES)
    top, _, below = unit.partition("/")
    parsed = _si(top.strip())
    if parsed is None:
        return ()
    base, multiple = parsed
    size = abs(value) * multiple
    floors = (1e9, 1e6, 1e3)  # GiB, MiB, KiB: the prefix a size this large is written in
    binary = [s for s, floor in zip(BINARY_PREFIX_SLIPS, floors, strict=True) if size >= floor]
    extra = _own_slips(base, top.strip(), tuple(binary[:1]))
    if below.strip() == "B":
        extra = (*extra, BITS_FOR_BYTES.only("small"), RECIPROCAL)
    return (*PREFIX_SLIPS, *dict.fromkeys(extra))


def match_slip(value: float, key: NumberKey, slips: Iterable[Slip]) -> str | None:
    """Every slip the value fits, as one phrase, or None.

    A unit slip's phrase carries its exact factor; a conceptual slip's only its concept. When
    two slips fit (their windows meet, or they share a factor), both are named, the closer
    first: the hint cannot tell which mistake was made.
    """
    window = tolerance_window(key.rel_tol)
    found: list[tuple[int, str]] = []
    for slip in slips:
        if slip.reciprocal:
            shift = key.offset(1 / value) if value else None
            if shift is not None and abs(math.log(abs(value))) > window:
                found.append((abs(shift), f"the reciprocal of the right answer: {slip.cause}"))
            continue
        if slip.key is not None:
            shift = NumberKey(slip.key).offset(value)
            if shift is not None:
                found.append((abs(shift), slip_text(slip)))
            continue
        if not slip.distinguishable(key.rel_tol):
            continue
        for direction, scale in slip.scales():
            shift = key.offset(value / scale)
            if shift is not None:
                found.append((abs(shift), slip_text(slip, direction)))
    shift = key.offset(-value)
    if shift is not None:
        found.append((abs(shift), _SIGN))
    if not found:
        return None
    found.sort(key=lambda item: item[0])  # the closest first; ties keep the declared order
    return "; or ".join(dict.fromkeys(phrase for _, phrase in found))


def slip_text(slip: Slip, direction: str | None = None) -> str:
    """How a hint names ``slip``: a unit slip by its factor and the way the answer is off,
    any other by its cause alone."""
    if slip.unit and direction is not None:
        return f"{ratio_text(slip.factor)}x too {direction}: {slip.cause}"
    return f"it looks like {slip.cause}"


def ratio_text(ratio: float) -> str:
    """A factor as a person writes it: 8, 60, 1,000, 1e+06, 1.074."""
    if ratio >= 1e5:
        return f"{ratio:.4g}".replace("e+0", "e").replace("e+", "e")
    if float(ratio).is_integer():
        return f"{int(ratio):,}"
    return f"{ratio:.4g}"
