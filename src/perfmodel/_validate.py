"""The one set of argument checks every perfmodel module uses.

The rule is scipy's: a wrong *type* raises :class:`TypeError`, a bad *value* raises
:class:`ValueError`, and the message names the argument, says what it must be, and shows
what it got::

    `nbytes` must be a non-negative finite number (got nan).
    `k` must be an integer (got str '4').

numpy integers and floats are numbers everywhere; ``bool`` never is (``True`` is an int
in Python, but never a count of anything here). NaN and infinity are rejected wherever
a check does not explicitly allow infinity. Flags must be real bools (``numpy.bool_``
included): ``fused="no"`` is a TypeError, not a truthy string.

Examples
--------
>>> import numpy as np
>>> positive("bandwidth", np.int64(10))
10.0
>>> count("k", np.int64(4))
4
>>> positive("bandwidth", float("nan"))
Traceback (most recent call last):
...
ValueError: `bandwidth` must be a positive finite number (got nan).
>>> flag("fused", "no")
Traceback (most recent call last):
...
TypeError: `fused` must be True or False (got str 'no').
"""

from __future__ import annotations

import math
import numbers
import sys
from collections.abc import Collection
from typing import Any

__all__ = [
    "choice",
    "count",
    "describe",
    "flag",
    "fraction",
    "is_number",
    "non_negative",
    "number",
    "positive",
    "text",
]


def describe(value: object) -> str:
    """How a message shows a bad value: its repr, numpy scalars as plain Python numbers.

    >>> import numpy as np
    >>> describe(float("nan")), describe(np.float64(-1.0)), describe("x" * 80)[-6:]
    ('nan', '-1.0', 'xxx...')
    """
    shown = repr(value.item()) if _is_numpy_scalar(value) else repr(value)  # type: ignore[attr-defined]
    return shown if len(shown) <= 60 else shown[:57] + "..."


def _typed(value: object) -> str:
    """A value of the wrong type, shown with its type: ``float 2.0``, ``str '4'``."""
    return "None" if value is None else f"{type(value).__name__} {describe(value)}"


def _loaded_numpy() -> Any:
    """numpy if something has imported it already (a numpy value implies it), else None."""
    return sys.modules.get("numpy")


def _is_numpy_scalar(value: object) -> bool:
    numpy = _loaded_numpy()
    return numpy is not None and isinstance(value, numpy.generic)


def is_number(value: object) -> bool:
    """A real number that is not a bool: int, float, numpy integers and floats.

    >>> import numpy as np
    >>> is_number(np.float32(1.5)), is_number(True), is_number("1")
    (True, False, False)
    """
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def number(
    name: str,
    value: object,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    strict_minimum: bool = False,
    allow_infinity: bool = False,
    what: str | None = None,
) -> float:
    """``value`` as a float, checked: a number (TypeError), in range and finite (ValueError).

    Parameters
    ----------
    name : str
        The argument's name, as the caller wrote it.
    value : object
        What the caller passed.
    minimum, maximum : float, optional
        Bounds, inclusive (``minimum`` exclusive when ``strict_minimum``).
    allow_infinity : bool
        Accept ``+inf`` (never NaN).
    what : str, optional
        What the value must be, for the message (derived from the bounds by default).
    """
    kind = type(value)  # a plain float or int first: an ABC check costs a microsecond
    if kind is not float and kind is not int and not is_number(value):
        raise TypeError(f"`{name}` must be a number (got {_typed(value)}).")
    result = float(value)  # type: ignore[arg-type]  # is_number checked it is Real
    bad = math.isnan(result) or (math.isinf(result) and not (allow_infinity and result > 0))
    if minimum is not None:
        bad = bad or result < minimum or (strict_minimum and result == minimum)
    if maximum is not None:
        bad = bad or result > maximum
    if bad:
        if what is None:
            what = _range_words(minimum, maximum, strict_minimum, allow_infinity)
        raise ValueError(f"`{name}` must be {what} (got {describe(value)}).")
    return result


def _range_words(
    minimum: float | None, maximum: float | None, strict: bool, allow_infinity: bool
) -> str:
    finite = "" if allow_infinity else " finite"
    if minimum == 0 and maximum is None:
        return f"a positive{finite} number" if strict else f"a non-negative{finite} number"
    if minimum is not None and maximum is not None:
        low = "(" if strict else "["
        return f"a number in {low}{minimum:g}, {maximum:g}]"
    if minimum is not None:
        return f"a{finite} number {'>' if strict else '>='} {minimum:g}"
    if maximum is not None:
        return f"a{finite} number <= {maximum:g}"
    return f"a{finite} number"


def positive(name: str, value: object, *, allow_infinity: bool = False) -> float:
    """A number > 0 (finite unless ``allow_infinity``)."""
    return number(name, value, minimum=0, strict_minimum=True, allow_infinity=allow_infinity)


def non_negative(name: str, value: object) -> float:
    """A finite number >= 0."""
    return number(name, value, minimum=0)


def fraction(name: str, value: object, *, allow_zero: bool = False) -> float:
    """A number in (0, 1], or [0, 1] with ``allow_zero``."""
    return number(name, value, minimum=0, maximum=1, strict_minimum=not allow_zero)


def count(name: str, value: object, *, minimum: int = 1, maximum: int | None = None) -> int:
    """An integer (int or numpy integer; not bool, not float) with ``minimum <= value``.

    >>> count("layers", 0, minimum=0)
    0
    >>> count("n", 2.0)
    Traceback (most recent call last):
    ...
    TypeError: `n` must be an integer (got float 2.0).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"`{name}` must be an integer (got {_typed(value)}).")
    result = int(value)
    if result < minimum or (maximum is not None and result > maximum):
        if maximum is not None:
            need = f"an integer from {minimum} to {maximum}"
        elif minimum == 1:
            need = "a positive integer"
        else:
            need = f"an integer >= {minimum}"
        raise ValueError(f"`{name}` must be {need} (got {result}).")
    return result


def flag(name: str, value: object) -> bool:
    """A real bool: ``True``/``False`` or a numpy bool; anything else is a TypeError."""
    if isinstance(value, bool):
        return value
    numpy = _loaded_numpy()
    if numpy is not None and isinstance(value, numpy.bool_):
        return bool(value)
    raise TypeError(f"`{name}` must be True or False (got {_typed(value)}).")


def text(name: str, value: object) -> str:
    """A non-empty string (surrounding space stripped)."""
    if not isinstance(value, str):
        raise TypeError(f"`{name}` must be a string (got {_typed(value)}).")
    if not value.strip():
        raise ValueError(f"`{name}` must be a non-empty string (got {value!r}).")
    return value.strip()


def choice(name: str, value: object, options: Collection[str]) -> str:
    """One of ``options`` (exactly, as a string).

    >>> choice("ceiling", "nameplate", ("nameplate", "measured"))
    'nameplate'
    """
    if not isinstance(value, str):
        raise TypeError(f"`{name}` must be a string (got {_typed(value)}).")
    if value not in options:
        raise ValueError(
            f"`{name}` must be one of {', '.join(map(repr, options))} (got {value!r})."
        )
    return value
