"""Answer keys: a right answer as the salted hash of its tolerance bucket.

:func:`number_key`, :func:`count_key` and :func:`choice_key` make the keys a workbook's
tests carry; :class:`NumberKey` reads a number key back and tells how many buckets a value
sits from the right answer, for the checks and the slips alike.
"""

from __future__ import annotations

import hashlib
import math
import numbers

__all__ = ["choice_key", "count_key", "number_key"]

#: Buckets per tolerance width: answers up to (1 + 1/SUBDIVISIONS) * rel_tol may pass.
SUBDIVISIONS = 4
VERSION = "pm1"


def is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def key_digest(salt: str, token: str) -> str:
    return hashlib.sha256(f"{VERSION}\0{salt}\0{token}".encode()).hexdigest()[:20]


def bucket_width(rel_tol: float) -> float:
    # Within rel_tol means |answer - right| <= rel_tol * |right|; its wider side in log terms
    # is -log(1 - rel_tol). The 1e-9 keeps an answer exactly at the tolerance from landing
    # one bucket too far through rounding.
    return -math.log1p(-rel_tol) / SUBDIVISIONS * (1 + 1e-9)


def tolerance_window(rel_tol: float) -> float:
    """The widest log-distance from the right answer that a check may still accept."""
    return bucket_width(rel_tol) * (SUBDIVISIONS + 1)


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
    if not is_real(rel_tol):
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
    if not is_real(expected):
        raise TypeError(f"`expected` must be a number (got {type(expected).__name__}).")
    if not math.isfinite(expected):
        raise ValueError(f"`expected` must be finite (got {expected!r}).")
    tol = _check_rel_tol(rel_tol)
    digest = key_digest(_check_salt(salt), _token(float(expected), bucket_width(tol)))
    return f"{VERSION}:number:{tol!r}:{salt}:{digest}"


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
    return f"{VERSION}:count:{_check_salt(salt)}:{key_digest(salt, f'n{whole}')}"


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
    return f"{VERSION}:choice:{_check_salt(salt)}:{key_digest(salt, f'w{word}')}"


def parse_key(key: object, kind: str) -> tuple[str, str, str]:
    """Split a key into (parameter, salt, digest); raise ValueError for a broken key."""
    if not isinstance(key, str):
        raise TypeError(f"`key` must be a str made by {kind}_key (got {type(key).__name__}).")
    parts = key.split(":")
    if parts[:2] != [VERSION, kind] or len(parts) not in (4, 5):
        raise ValueError(f"`key` must be a key made by {kind}_key (got {key[:40]!r}).")
    if kind == "number" and len(parts) == 5:
        return parts[2], parts[3], parts[4]
    if kind != "number" and len(parts) == 4:
        return "", parts[2], parts[3]
    raise ValueError(f"`key` must be a key made by {kind}_key (got {key[:40]!r}).")


class NumberKey:
    """A parsed number key: tells how many buckets a value sits from the right answer."""

    def __init__(self, key: object) -> None:
        tol, self.salt, self.digest = parse_key(key, "number")
        try:
            self.rel_tol = _check_rel_tol(float(tol))
        except ValueError:
            raise ValueError(f"`key` has a broken tolerance ({tol!r}).") from None
        self.width = bucket_width(self.rel_tol)

    def offset(self, value: float) -> int | None:
        """Buckets between ``value`` and the right answer (None: more than SUBDIVISIONS)."""
        if not math.isfinite(value):
            return None
        if value == 0:
            return 0 if key_digest(self.salt, "0") == self.digest else None
        for shift in sorted(range(-SUBDIVISIONS, SUBDIVISIONS + 1), key=abs):
            if key_digest(self.salt, _token(value, self.width, shift)) == self.digest:
                return shift
        return None
