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
from collections.abc import Mapping
from typing import Any

from perfmodel.units import format_quantity

__all__ = ["LIMIT", "device", "gib", "link", "percent", "seconds", "shown", "words"]

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


def shown(title: str, /, **parts: str) -> str:
    """``title(key=value, ...)``, cut to :data:`LIMIT` characters.

    Parameters
    ----------
    title : str
        The type's name.
    **parts : str
        Each headline figure, already formatted with its unit.

    Returns
    -------
    str
        The repr.
    """
    text = f"{title}({', '.join(f'{key}={value}' for key, value in parts.items())})"
    return text if len(text) <= LIMIT else text[: LIMIT - 4] + "...)"


def device(spec: Any) -> str:
    """A catalogue device's repr: its peaks, bandwidth and capacity, not its sources.

    Parameters
    ----------
    spec : hardware.Device
        The device.

    Returns
    -------
    str
        ``Device(name=..., kind=..., peak_flops=..., memory_bandwidth=..., ...)``.
    """

    def rates(table: Mapping[str, float]) -> str:
        items = (f"{dtype} {format_quantity(rate, 'FLOP/s')}" for dtype, rate in table.items())
        return f"[{', '.join(items)}]"

    parts = {"name": repr(spec.name), "kind": repr(spec.kind),
             "peak_flops": rates(spec.peak_flops_by_dtype),
             "memory_bandwidth": format_quantity(spec.memory_bandwidth, "B/s")}  # fmt: skip
    if spec.memory_capacity is not None:
        parts["memory_capacity"] = format_quantity(spec.memory_capacity, "B")
    if spec.measured_flops_by_dtype:
        parts["measured_flops"] = rates(spec.measured_flops_by_dtype)
    if spec.year is not None:
        parts["year"] = str(spec.year)
    return shown("Device", **parts)


def link(spec: Any) -> str:
    """A catalogue link's repr: its bandwidth and latency, not its sources.

    Parameters
    ----------
    spec : hardware.Link
        The link.

    Returns
    -------
    str
        ``Link(name=..., kind=..., bandwidth=..., latency=...)``.
    """
    parts = {"name": repr(spec.name), "kind": repr(spec.kind),
             "bandwidth": format_quantity(spec.bandwidth, "B/s"),
             "latency": seconds(spec.latency)}  # fmt: skip
    if spec.measured_busbw:
        parts["measured_busbw"] = ", ".join(
            f"{algorithm} {format_quantity(rate, 'B/s')}"
            for algorithm, rate in spec.measured_busbw.items()
        )
    return shown("Link", **parts)
