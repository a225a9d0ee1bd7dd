"""Display formatting for SI quantities.

Everything inside perfmodel is kept in base SI units (seconds, bytes, FLOPs, FLOP/s,
bytes/s). This module is the one place that turns such a number into text a person reads,
so a notebook never hand-writes ``/ 1e12``.
"""

from __future__ import annotations

import math

from perfmodel._validate import count, number

__all__ = ["format_quantity", "format_rate"]

_PREFIXES = [
    (1e18, "E"),
    (1e15, "P"),
    (1e12, "T"),
    (1e9, "G"),
    (1e6, "M"),
    (1e3, "k"),
    (1.0, ""),
    (1e-3, "m"),
    (1e-6, "µ"),
    (1e-9, "n"),
    (1e-12, "p"),
]


def format_quantity(value: float, unit: str, *, digits: int = 3) -> str:
    """Format ``value`` (in base SI units) with a metric prefix.

    Parameters
    ----------
    value : float
        The quantity in base units (seconds, bytes, FLOPs, FLOP/s...).
    unit : str
        The unit symbol appended after the prefix, such as ``"s"``, ``"B"`` or ``"FLOP/s"``.
    digits : int, optional
        Significant digits to keep (default 3).

    Returns
    -------
    str
        For example ``"3.35 TB/s"``.

    Raises
    ------
    TypeError
        If ``value`` is not a real number.
    ValueError
        If ``digits`` is below 1.

    Examples
    --------
    >>> format_quantity(3.35e12, "B/s")
    '3.35 TB/s'
    >>> format_quantity(7e-6, "s")
    '7 µs'
    >>> format_quantity(0, "FLOP")
    '0 FLOP'
    """
    value = number("value", value, allow_infinity=True)
    digits = count("digits", digits)
    if not isinstance(unit, str):
        raise TypeError(f"`unit` must be a string (got {type(unit).__name__}).")
    if value == 0 or not math.isfinite(value):
        return f"{value:g} {unit}"
    magnitude = abs(value)
    scale, prefix = _PREFIXES[-1]
    for candidate_scale, candidate_prefix in _PREFIXES:
        if magnitude >= candidate_scale * (1 - 0.5 * 10 ** (-digits)):
            scale, prefix = candidate_scale, candidate_prefix
            break
    return f"{value / scale:.{digits}g} {prefix}{unit}"


def format_rate(value: float, unit: str = "FLOP/s", *, digits: int = 3) -> str:
    """Format a rate such as a bandwidth or a FLOP rate.

    A thin alias of :func:`format_quantity` that reads better where the number is a rate.

    Parameters
    ----------
    value : float
        The rate in base units, such as B/s or FLOP/s.
    unit : str, optional
        The unit symbol appended after the prefix (default ``"FLOP/s"``).
    digits : int, optional
        Significant digits to keep (default 3).

    Returns
    -------
    str
        For example ``"6 TFLOP/s"``.

    Raises
    ------
    TypeError
        If ``value`` is not a real number or ``unit`` is not a string.
    ValueError
        If ``digits`` is below 1.

    Examples
    --------
    >>> format_rate(3.35e12, "B/s")
    '3.35 TB/s'
    >>> format_rate(6e12)
    '6 TFLOP/s'
    """
    return format_quantity(value, unit, digits=digits)
