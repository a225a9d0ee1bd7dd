"""The scaling laws: Amdahl's and Gustafson's speedups, and the serial fractions they imply.

Examples
--------
>>> amdahl_speedup(0.8, 4)
2.5
>>> gustafson_speedup(0.25, 4)   # s + N·(1 - s)
3.25
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, overload

from perfmodel._validate import each, fraction, number, positive

if TYPE_CHECKING:
    from numpy.typing import NDArray

__all__ = [
    "amdahl_limit",
    "amdahl_serial_fraction",
    "amdahl_speedup",
    "efficiency",
    "gustafson_serial_share",
    "gustafson_speedup",
    "karp_flatt",
    "processor_count",
]


def processor_count(name: str, p: object) -> float:
    """A processor count as given, checked: any number of at least one.

    Parameters
    ----------
    name : str
        The argument's name, for the error.
    p : object
        What the caller gave.

    Returns
    -------
    float
        The count, count.

    Raises
    ------
    TypeError, ValueError
        Naming the argument, unless ``p`` is a real number of at least 1.
    """
    return number(name, p, minimum=1, what="a number of processors >= 1")


@overload
def amdahl_speedup(parallel_fraction: float, p: float) -> float: ...
@overload
def amdahl_speedup(parallel_fraction: float, p: Sequence[float] | NDArray[Any]) -> NDArray[Any]: ...
def amdahl_speedup(parallel_fraction: float, p: Any) -> Any:
    """Strong-scaling speedup on ``p`` processors when ``parallel_fraction`` of the work is
    parallel: ``1 / ((1 - α) + α / p)``.

    Parameters
    ----------
    parallel_fraction : float
        The share ``α`` of the one-processor run's work that can run in parallel, in [0, 1],
        fraction.
    p : float or array_like
        Processors, count (at least 1; need not be whole); a sequence or 1-D array gives
        one speedup per count.

    Returns
    -------
    float or numpy.ndarray
        The speedup over one processor, dimensionless (an array when ``p`` is one).

    Raises
    ------
    ValueError
        If the fraction is outside [0, 1] or ``p`` is below 1.

    Examples
    --------
    >>> amdahl_speedup(1.0, 8), amdahl_speedup(0.0, 8)
    (8.0, 1.0)
    >>> amdahl_speedup(0.8, [1, 4, 16])
    array([1. , 2.5, 4. ])
    """
    alpha = fraction("parallel_fraction", parallel_fraction, allow_zero=True)
    return each("p", p, processor_count, lambda n: 1 / ((1 - alpha) + alpha / n))


def amdahl_limit(parallel_fraction: float) -> float:
    """The most any number of processors can give: ``1 / (1 - α)`` (infinite when α = 1).

    Parameters
    ----------
    parallel_fraction : float
        The share ``α`` of the work that can run in parallel, in [0, 1], fraction.

    Returns
    -------
    float
        The speedup as ``p`` grows without bound, dimensionless; ``math.inf`` when α = 1.

    Raises
    ------
    ValueError
        If the fraction is outside [0, 1].
    """
    alpha = fraction("parallel_fraction", parallel_fraction, allow_zero=True)
    return math.inf if alpha == 1 else 1 / (1 - alpha)


@overload
def gustafson_speedup(serial_fraction: float, p: float) -> float: ...
@overload
def gustafson_speedup(
    serial_fraction: float, p: Sequence[float] | NDArray[Any]
) -> NDArray[Any]: ...
def gustafson_speedup(serial_fraction: float, p: Any) -> Any:
    """Weak-scaling (scaled) speedup on ``p`` processors: ``s + p·(1 - s)``, where ``s`` is
    the share of the parallel run's time spent in serial work.

    Parameters
    ----------
    serial_fraction : float
        Gustafson's ``s``: the share of the ``p``-processor run's time spent in serial work,
        in [0, 1], fraction.
    p : float or array_like
        Processors, count (at least 1; need not be whole); a sequence or 1-D array gives
        one speedup per count.

    Returns
    -------
    float or numpy.ndarray
        The scaled speedup, dimensionless (an array when ``p`` is one).

    Raises
    ------
    ValueError
        If the fraction is outside [0, 1] or ``p`` is below 1.

    Examples
    --------
    >>> gustafson_speedup(0.0, 1024), gustafson_speedup(1.0, 1024)
    (1024.0, 1.0)
    """
    s = fraction("serial_fraction", serial_fraction, allow_zero=True)
    return each("p", p, processor_count, lambda n: s + n * (1 - s))


def amdahl_serial_fraction(serial_share: float, p: float) -> float:
    """Amdahl's serial fraction ``1 - α`` (a share of the one-processor run) of the problem
    whose ``p``-processor run spends the share ``serial_share`` (Gustafson's ``s``) in serial work.

    One processor does the serial part once and all ``p`` processors' parallel work itself, so
    the serial part is a smaller share of its run: ``s / (s + p·(1 - s))``, which is ``s``
    over the scaled speedup.

    Parameters
    ----------
    serial_share : float
        Gustafson's ``s``: the share of the ``p``-processor run's time spent in serial work,
        in [0, 1], fraction.
    p : float
        Processors of that run, count (at least 1).

    Returns
    -------
    float
        Amdahl's serial fraction ``1 - α``, a share of the one-processor run, fraction.

    Raises
    ------
    ValueError
        If the share is outside [0, 1] or ``p`` is below 1.

    Notes
    -----
    Take the ``p``-processor run as one unit of time: ``s`` serial, ``1 - s`` parallel. One
    processor needs ``s + p·(1 - s)`` for the same work, of which ``s`` is serial. Amdahl's law
    with this fraction gives, on ``p`` processors, exactly Gustafson's scaled speedup.

    Examples
    --------
    >>> round(amdahl_serial_fraction(0.5, 3), 6)   # 1 serial + 3·1 parallel on one processor
    0.25
    >>> amdahl_serial_fraction(0.3, 1)
    0.3
    """
    s = fraction("serial_share", serial_share, allow_zero=True)
    p = processor_count("p", p)
    return s / (s + p * (1 - s)) if s > 0 else 0.0


def gustafson_serial_share(serial_fraction: float, p: float) -> float:
    """Gustafson's ``s`` (a share of the ``p``-processor run) of the problem whose
    one-processor run spends ``serial_fraction`` (Amdahl's ``1 - α``) in serial work:
    ``p·f / (p·f + 1 - f)``. The inverse of :func:`amdahl_serial_fraction`.

    Parameters
    ----------
    serial_fraction : float
        Amdahl's ``1 - α``: the share of the one-processor run's time spent in serial work,
        in [0, 1], fraction.
    p : float
        Processors of the run the share is taken of, count (at least 1).

    Returns
    -------
    float
        Gustafson's ``s``, a share of the ``p``-processor run, fraction.

    Raises
    ------
    ValueError
        If the fraction is outside [0, 1] or ``p`` is below 1.

    Examples
    --------
    >>> round(gustafson_serial_share(0.25, 3), 6)
    0.5
    """
    f = fraction("serial_fraction", serial_fraction, allow_zero=True)
    p = processor_count("p", p)
    return p * f / (p * f + 1 - f) if f > 0 else 0.0


def efficiency(speedup: float, p: float) -> float:
    """Speedup per processor: 1 is perfect scaling.

    Parameters
    ----------
    speedup : float
        The measured or modelled speedup, dimensionless (positive).
    p : float
        Processors, count (at least 1).

    Returns
    -------
    float
        ``speedup / p``, fraction (above 1 when the speedup is superlinear).

    Raises
    ------
    ValueError
        If the speedup is not positive or ``p`` is below 1.

    Examples
    --------
    >>> efficiency(6.0, 8)
    0.75
    """
    return positive("speedup", speedup) / processor_count("p", p)


def karp_flatt(speedup: float, p: float) -> float:
    """The experimentally determined serial fraction: ``(1/S - 1/p) / (1 - 1/p)``.

    For a program that follows Amdahl's law exactly it is ``1 - α`` at every ``p``; a value
    that *grows* with ``p`` says the overhead grows with the processors (communication,
    contention), not just a fixed serial part.

    Parameters
    ----------
    speedup : float
        The measured speedup on ``p`` processors, dimensionless, in (0, p].
    p : float
        Processors, count (above 1).

    Returns
    -------
    float
        The serial fraction the speedup implies, fraction: 0 at a speedup of ``p``, above 1
        when ``p`` processors were slower than one.

    Raises
    ------
    ValueError
        If ``p`` is not above 1 (one processor says nothing about scaling), or the speedup is
        not in (0, p] (more than ``p`` is superlinear: caches, not this model).

    Examples
    --------
    >>> round(karp_flatt(5.0, 8), 4)
    0.0857
    """
    p = number("p", p, minimum=1, strict_minimum=True, what="a number of processors > 1")
    speedup = number("speedup", speedup, minimum=0, maximum=p, strict_minimum=True,
                     what=f"a speedup in (0, p] = (0, {p:g}]")  # fmt: skip
    return (1 / speedup - 1 / p) / (1 - 1 / p)
