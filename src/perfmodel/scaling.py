"""Scale with more processors: Amdahl's and Gustafson's laws, and the serial fraction measured.

Two questions, two laws (Sreepathi Pai, *Making systems fast and scalable*):

* **Strong scaling**, the same problem on more processors. If a fraction ``α`` of the work
  can run in parallel, ``p`` processors give :func:`amdahl_speedup`
  ``1 / ((1 - α) + α / p)``, never more than ``1 / (1 - α)``: a 20% serial portion caps
  the speedup at 5, however many processors.
* **Weak scaling**, a problem that grows with the machine. If a run on ``N`` processors
  spends a fraction ``s`` of its time in serial work, one processor would need
  ``s + N·(1 - s)`` times as long: :func:`gustafson_speedup`, which grows without bound.

A measurement says which applies. :func:`karp_flatt` turns one measured speedup into the
serial fraction it implies (Karp and Flatt, 1990); :func:`fit_amdahl` fits ``α`` to times
measured at several processor counts, and :func:`fit_gustafson` fits ``s`` to scaled
speedups, each with a confidence interval from the scatter of the measurements.

Examples
--------
>>> amdahl_speedup(0.8, 4)
2.5
>>> round(amdahl_limit(0.8), 9)   # a 20% serial portion caps the speedup at 5
5.0
>>> gustafson_speedup(0.25, 4)   # s + N·(1 - s)
3.25
>>> round(karp_flatt(amdahl_speedup(0.8, 4), 4), 12)
0.2
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from perfmodel._validate import fraction, number, positive

__all__ = [
    "Fit",
    "amdahl_limit",
    "amdahl_speedup",
    "efficiency",
    "fit_amdahl",
    "fit_gustafson",
    "gustafson_speedup",
    "karp_flatt",
]


def _processors(name: str, p: object) -> float:
    return number(name, p, minimum=1, what="a number of processors >= 1")


def amdahl_speedup(parallel_fraction: float, p: float) -> float:
    """Strong-scaling speedup on ``p`` processors when ``parallel_fraction`` of the work is
    parallel: ``1 / ((1 - α) + α / p)``.

    Raises
    ------
    ValueError
        If the fraction is outside [0, 1] or ``p`` is below 1.

    Examples
    --------
    >>> amdahl_speedup(1.0, 8), amdahl_speedup(0.0, 8)
    (8.0, 1.0)
    """
    alpha = fraction("parallel_fraction", parallel_fraction, allow_zero=True)
    p = _processors("p", p)
    return 1 / ((1 - alpha) + alpha / p)


def amdahl_limit(parallel_fraction: float) -> float:
    """The most any number of processors can give: ``1 / (1 - α)`` (infinite when α = 1)."""
    alpha = fraction("parallel_fraction", parallel_fraction, allow_zero=True)
    return math.inf if alpha == 1 else 1 / (1 - alpha)


def gustafson_speedup(serial_fraction: float, p: float) -> float:
    """Weak-scaling (scaled) speedup on ``p`` processors: ``s + p·(1 - s)``, where ``s`` is
    the share of the parallel run's time spent in serial work.

    Examples
    --------
    >>> gustafson_speedup(0.0, 1024), gustafson_speedup(1.0, 1024)
    (1024.0, 1.0)
    """
    s = fraction("serial_fraction", serial_fraction, allow_zero=True)
    p = _processors("p", p)
    return s + p * (1 - s)


def efficiency(speedup: float, p: float) -> float:
    """Speedup per processor: 1 is perfect scaling.

    >>> efficiency(6.0, 8)
    0.75
    """
    return positive("speedup", speedup) / _processors("p", p)


def karp_flatt(speedup: float, p: float) -> float:
    """The experimentally determined serial fraction: ``(1/S - 1/p) / (1 - 1/p)``.

    For a program that follows Amdahl's law exactly it is ``1 - α`` at every ``p``; a value
    that *grows* with ``p`` says the overhead grows with the processors (communication,
    contention), not just a fixed serial part.

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


@dataclass(frozen=True, slots=True)
class Fit:
    """A fitted fraction with its confidence interval.

    ``low`` and ``high`` bound ``value`` at ``confidence`` (a Student-t interval from the
    scatter of the points about the fit, clipped to [0, 1]); they are None when there are
    no more points than parameters, so the scatter cannot be estimated. ``scale`` is the
    other fitted parameter: the one-processor time for Amdahl, absent for Gustafson.
    """

    value: float
    low: float | None
    high: float | None
    confidence: float
    points: int
    scale: float | None = None

    @property
    def has_interval(self) -> bool:
        return self.low is not None


def _points(
    processors: Sequence[float], values: Sequence[float], name: str
) -> tuple[list[float], list[float]]:
    if isinstance(processors, (str, bytes)) or not isinstance(processors, Sequence):
        raise TypeError(
            f"`processors` must be a sequence of numbers (got {type(processors).__name__})."
        )
    if isinstance(values, (str, bytes)) or not isinstance(values, Sequence):
        raise TypeError(f"`{name}` must be a sequence of numbers (got {type(values).__name__}).")
    if len(processors) != len(values):
        raise ValueError(
            f"`processors` and `{name}` must have the same length "
            f"(got {len(processors)} and {len(values)})."
        )
    ps = [_processors(f"processors[{i}]", p) for i, p in enumerate(processors)]
    vs = [positive(f"{name}[{i}]", v) for i, v in enumerate(values)]
    return ps, vs


def _interval(
    value: float, sigma: float, dof: int, confidence: float
) -> tuple[float | None, float | None]:
    if dof <= 0 or not math.isfinite(sigma):
        return None, None
    from scipy import stats

    half = float(stats.t.ppf(0.5 + confidence / 2, dof)) * sigma
    return max(0.0, value - half), min(1.0, value + half)


def fit_amdahl(
    processors: Sequence[float], times: Sequence[float], *, confidence: float = 0.95
) -> Fit:
    """Fit Amdahl's law ``T(p) = T1·((1 - α) + α/p)`` to measured times; ``α`` with an interval.

    Pass every repeat as its own point (``processors=[1, 1, 1, 2, 2, 2]``): the interval comes
    from their scatter. Least squares through scipy's ``curve_fit``.

    Raises
    ------
    ValueError
        With fewer than two distinct processor counts: one count cannot separate the serial
        part from the parallel one.

    Examples
    --------
    >>> p = [1, 2, 4, 8]
    >>> fit = fit_amdahl(p, [10 * (0.1 + 0.9 / n) for n in p])
    >>> round(fit.value, 6), round(fit.scale, 6)
    (0.9, 10.0)
    """
    confidence = fraction("confidence", confidence)
    ps, ts = _points(processors, times, "times")
    if len(set(ps)) < 2:
        raise ValueError(
            f"`processors` must hold at least two different counts to fit a serial fraction "
            f"(got {sorted(set(ps))})."
        )
    import numpy as np
    from scipy.optimize import curve_fit

    p_arr, t_arr = np.asarray(ps), np.asarray(ts)

    def model(p: object, t1: float, alpha: float) -> object:
        return t1 * ((1 - alpha) + alpha / p)  # type: ignore[operator]

    guess = (float(t_arr[p_arr == p_arr.min()].mean()), 0.5)
    with np.errstate(all="ignore"):
        (t1, alpha), covariance = curve_fit(
            model, p_arr, t_arr, p0=guess, bounds=([0, 0], [np.inf, 1])
        )
    dof = len(ps) - 2
    sigma = float(np.sqrt(covariance[1, 1])) if dof > 0 else math.inf
    low, high = _interval(float(alpha), sigma, dof, confidence)
    return Fit(float(alpha), low, high, confidence, len(ps), float(t1))


def fit_gustafson(
    processors: Sequence[float], scaled_speedups: Sequence[float], *, confidence: float = 0.95
) -> Fit:
    """Fit Gustafson's law ``S(N) = s + N·(1 - s)`` to scaled speedups; ``s`` with an interval.

    Least squares through the line ``N - S = s·(N - 1)``, which has no intercept: each point
    alone gives ``s = (N - S) / (N - 1)``, and two or more give an interval.

    Examples
    --------
    >>> fit = fit_gustafson([1024], [1020])   # Gustafson's wave simulation at Sandia, 1988
    >>> round(fit.value, 5), fit.has_interval
    (0.00391, False)
    """
    confidence = fraction("confidence", confidence)
    ps, ss = _points(processors, scaled_speedups, "scaled_speedups")
    pairs = [(p - 1, p - s) for p, s in zip(ps, ss, strict=True) if p > 1]
    if not pairs:
        raise ValueError("`processors` must include a count above 1 (got only 1).")
    sxx = sum(x * x for x, _ in pairs)
    value = sum(x * y for x, y in pairs) / sxx
    dof = len(pairs) - 1
    if dof > 0:
        residual = sum((y - value * x) ** 2 for x, y in pairs) / dof
        sigma = math.sqrt(residual / sxx)
    else:
        sigma = math.inf
    low, high = _interval(min(max(value, 0.0), 1.0), sigma, dof, confidence)
    return Fit(min(max(value, 0.0), 1.0), low, high, confidence, len(ps))
