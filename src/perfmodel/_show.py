"""Short reprs for result types: the headline numbers with their units, under one screen.

A result keeps all its data in its fields (every request's latency, every batch size); its
repr shows what a person asks first, such as the time and the bound, or p50, p99 and the
utilization, so that ``print(result)`` or a notebook cell's last line stays readable.

Examples
--------
>>> shown("Example", time=seconds(0.0012), memory=gib(3 * 2**30), busy=percent(0.5))
'Example(time=1.2 ms, memory=3 GiB, busy=50.0%)'
"""

from __future__ import annotations

import math

from perfmodel.units import format_quantity

__all__ = ["LIMIT", "gib", "percent", "seconds", "shown", "words"]

#: The most characters a repr built here holds: about one screen.
LIMIT = 1000


def seconds(value: float) -> str:
    """``value`` seconds with a metric prefix, such as ``'1.38 ms'``.

    Parameters
    ----------
    value : float
        A time, s.

    Returns
    -------
    str
        The time with three significant digits and its unit.
    """
    return format_quantity(value, "s")


def gib(value: float) -> str:
    """``value`` bytes in GiB (2**30 bytes), such as ``'13.0 GiB'``.

    Parameters
    ----------
    value : float
        A size, B.

    Returns
    -------
    str
        The size in GiB: three significant digits below 10 GiB, one decimal above.
    """
    size = value / 2**30
    return f"{size:.3g} GiB" if abs(size) < 10 else f"{size:,.1f} GiB"


def percent(value: float) -> str:
    """A fraction as a percentage with one decimal, such as ``'79.8%'``.

    Parameters
    ----------
    value : float
        A fraction (1 is 100%).

    Returns
    -------
    str
        The percentage; ``'nan'`` for NaN.
    """
    return "nan" if math.isnan(value) else f"{value:.1%}"


def words(text: str, limit: int = 120) -> str:
    """``text`` quoted, cut to ``limit`` characters with an ellipsis if longer.

    Parameters
    ----------
    text : str
        A label or a sentence.
    limit : int
        The most characters kept, count.

    Returns
    -------
    str
        The text's repr, shortened.
    """
    return repr(text if len(text) <= limit else text[: limit - 3] + "...")


def shown(name: str, **parts: str) -> str:
    """``name(key=value, ...)``, cut to :data:`LIMIT` characters.

    Parameters
    ----------
    name : str
        The type's name.
    **parts : str
        Each headline figure, already formatted with its unit.

    Returns
    -------
    str
        The repr.
    """
    text = f"{name}({', '.join(f'{key}={value}' for key, value in parts.items())})"
    return text if len(text) <= LIMIT else text[: LIMIT - 4] + "...)"
