"""The one set of argument checks every perfmodel module uses.

The rule is scipy's: a wrong *type* raises :class:`TypeError`, a bad *value* raises
:class:`ValueError`, and the message names the argument, says what it must be, and shows
what it got::

    `nbytes` must be a non-negative finite number (got nan).
    `k` must be an integer (got str '4').

numpy integers and floats are numbers everywhere; ``bool`` never is (``True`` is an int
in Python, but never a count of anything here). A count takes a whole-number float as
people type it (``7e9``, ``4.0``); a fractional one is a ValueError. NaN and infinity are
rejected wherever a check does not explicitly allow infinity. A sequence may be a list, a
tuple or a 1-D numpy array; a choice ignores case. Flags must be real bools (``numpy.bool_``
included): ``fused="no"`` is a TypeError, not a truthy string.

Examples
--------
>>> import numpy as np
>>> positive("bandwidth", np.int64(10))
10.0
>>> count("k", np.int64(4)), count("params", 7e9)
(4, 7000000000)
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
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any

__all__ = [
    "choice",
    "count",
    "describe",
    "each",
    "flag",
    "fraction",
    "is_number",
    "non_negative",
    "number",
    "positive",
    "sequence",
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
    """An integer with ``minimum <= value``: an int, a numpy integer, or a whole-number float.

    ``7e9`` and ``4.0`` are counts as people type them; ``7.5``, NaN and infinity are not
    (ValueError); a bool or a string is not a number at all (TypeError).

    >>> count("layers", 0, minimum=0), count("n", 2.0)
    (0, 2)
    >>> count("n", 2.5)
    Traceback (most recent call last):
    ...
    ValueError: `n` must be an integer (got 2.5).
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"`{name}` must be an integer (got {_typed(value)}).")
    if isinstance(value, numbers.Integral):
        result = int(value)
    else:
        whole = float(value)
        if not whole.is_integer():  # NaN and infinity are not integers either
            raise ValueError(f"`{name}` must be an integer (got {describe(value)}).")
        result = int(whole)
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


def choice(
    name: str, value: object, options: Collection[str], aliases: Mapping[str, str] | None = None
) -> str:
    """One of ``options``, as the option is spelled; case and surrounding space are ignored.

    ``aliases`` maps other names people use (lower case) to an option: ``{"adamw": "adam"}``.

    >>> choice("ceiling", "nameplate", ("nameplate", "measured"))
    'nameplate'
    >>> choice("algorithm", " Ring", ("ring", "tree"))
    'ring'
    >>> choice("optimizer", "AdamW", ("adam", "sgd"), {"adamw": "adam"})
    'adam'
    """
    if not isinstance(value, str):
        raise TypeError(f"`{name}` must be a string (got {_typed(value)}).")
    if value in options:
        return value
    folded = value.strip().casefold()
    found = [option for option in options if option.casefold() == folded]
    if len(found) != 1 and aliases and aliases.get(folded) in options:
        found = [aliases[folded]]
    if len(found) != 1:
        raise ValueError(
            f"`{name}` must be one of {', '.join(map(repr, options))} (got {value!r})."
        )
    return found[0]


def sequence(name: str, value: object, what: str = "numbers") -> list[Any]:
    """``value``'s items as a list: from a list, a tuple, any sequence, or a 1-D array.

    numpy arrays (and anything numpy can read as one, such as a pandas Series) come back
    as Python numbers; a string is not a sequence of numbers.

    >>> import numpy as np
    >>> sequence("times", np.array([1.0, 2.0])), sequence("times", (3, 4))
    ([1.0, 2.0], [3, 4])
    >>> sequence("times", np.ones((2, 2)))
    Traceback (most recent call last):
    ...
    ValueError: `times` must be a 1-D sequence of numbers (got an array of shape (2, 2)).
    """
    if isinstance(value, (str, bytes)):
        raise TypeError(f"`{name}` must be a sequence of {what} (got {_typed(value)}).")
    if isinstance(value, Sequence):
        return list(value)
    numpy = _loaded_numpy()
    if numpy is not None and (isinstance(value, numpy.ndarray) or hasattr(value, "__array__")):
        array = numpy.asarray(value)
        if array.ndim == 0:
            raise TypeError(f"`{name}` must be a sequence of {what} (got {_typed(value)}).")
        if array.ndim != 1:
            raise ValueError(
                f"`{name}` must be a 1-D sequence of {what} "
                f"(got an array of shape {tuple(array.shape)})."
            )
        return list(array.tolist())
    raise TypeError(f"`{name}` must be a sequence of {what} (got {type(value).__name__}).")


def each(
    name: str,
    value: object,
    check: Callable[[str, object], float],
    law: Callable[[float], float],
) -> Any:
    """``law`` of ``value`` checked by ``check``: a float for a number, a numpy array of one
    value per item for a sequence or a 1-D array (each item checked as ``name[i]``).

    >>> each("p", 4, positive, lambda p: 2 * p), each("p", [1, 2], positive, lambda p: 2 * p)
    (8.0, array([2., 4.]))
    """
    if is_number(value):
        return law(check(name, value))
    import numpy as np

    items = sequence(name, value)
    return np.array([law(check(f"{name}[{i}]", v)) for i, v in enumerate(items)], dtype=float)
