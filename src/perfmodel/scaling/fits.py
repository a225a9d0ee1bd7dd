"""Fitting the laws to measurements: the serial fraction behind times or scaled speedups
measured at several processor counts, with a confidence interval and a doubt when the data
cannot support it.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from perfmodel._show import percent, shown, words
from perfmodel._validate import fraction, positive, sequence
from perfmodel.scaling.laws import processor_count

__all__ = ["BOOTSTRAP_RESAMPLES", "ROUNDING", "Fit", "fit_amdahl", "fit_gustafson"]

#: Resamples behind a fit's interval when the processor counts were repeated (seeded, so a
#: fit of the same times always gives the same interval).
BOOTSTRAP_RESAMPLES = 2000
#: How far outside [0, 1] a fitted fraction may fall by rounding alone and still count as inside.
ROUNDING = 1e-12


@dataclass(frozen=True, slots=True, repr=False)
class Fit:
    """A fitted fraction with its confidence interval, and whether the data support it.

    Parameters
    ----------
    value : float
        The fitted fraction, held to [0, 1], fraction: the parallel fraction α for Amdahl,
        the serial share s for Gustafson (see ``law``).
    low : float or None
        The interval's lower end, clipped to [0, 1], fraction; None when the data cannot say
        how uncertain the value is (each processor count measured once, and no more counts
        than parameters).
    high : float or None
        The interval's upper end, clipped to [0, 1], fraction; None when ``low`` is.
    confidence : float
        The interval's confidence level, in (0, 1], fraction.
    points : int
        The points given to the fit, count (repeats included; for Gustafson, points at one
        processor too, which the fit skips).
    scale : float or None
        The other fitted parameter: for Amdahl the one-processor time ``T1``, in the unit of
        the times fitted (s when they are seconds); None for Gustafson.
    unclipped : float or None
        The least-squares value before it was held to [0, 1], fraction (may lie outside);
        None means the same as ``value``.
    law : str
        Which fraction ``value`` is: ``"amdahl"`` (the parallel fraction α) or
        ``"gustafson"`` (the serial share s).
    """

    value: float
    low: float | None
    high: float | None
    confidence: float
    points: int
    scale: float | None = None
    unclipped: float | None = None
    law: str = "amdahl"

    @property
    def has_interval(self) -> bool:
        """Whether the fit has a confidence interval (``low`` and ``high`` are not None)."""
        return self.low is not None

    @property
    def doubt(self) -> str:
        """Why the data cannot support :attr:`value`, in words; empty when they can.

        Two reasons. The law cannot describe the data: the best fit lies outside [0, 1] (more
        processors made it slower, or faster than the processor count allows). Or the noise
        swamps the effect: the interval reaches the value at which more processors buy
        nothing (α = 0, or s = 1), so the data cannot tell a speedup from none.

        Returns
        -------
        str
            One sentence naming the reason, or ``""`` when the fit can be trusted.

        Examples
        --------
        >>> fit_amdahl([1, 2], [2.0, 2.6]).doubt.startswith("the best fit")
        True
        >>> fit_amdahl([1, 1, 1, 2, 2, 2], [1.0, 1.01, 0.99, 0.55, 0.56, 0.54]).doubt
        ''
        """
        amdahl = self.law == "amdahl"
        what = "parallel fraction α" if amdahl else "serial share s"
        raw = self.value if self.unclipped is None else self.unclipped
        # a least-squares fit through equal medians lands a rounding error off 0 (-3e-18)
        if not -ROUNDING <= raw <= 1 + ROUNDING:
            return (
                f"the best fit puts the {what} at {raw:.2f}, outside 0 to 1: no fraction "
                f"describes these times (was the machine busy?)"
            )
        useless = 0.0 if amdahl else 1.0
        if self.low is not None and self.high is not None and self.low <= useless <= self.high:
            return (
                f"the {self.confidence:.0%} interval of the {what} reaches {useless:g}, where "
                f"more processors buy nothing: the noise swamps the effect"
            )
        return ""

    def __repr__(self) -> str:
        name = "alpha" if self.law == "amdahl" else "s"
        within = "none" if self.low is None else f"{self.low:.3f} to {self.high:.3f}"
        parts = {"law": repr(self.law), name: f"{self.value:.3f}", "points": str(self.points),
                 "interval": f"{within} ({percent(self.confidence)})"}  # fmt: skip
        if self.scale is not None:
            parts["T1"] = f"{self.scale:.4g} (the times' unit)"
        return shown("Fit", **parts, doubt=words(self.doubt, 300))


def _points(
    processors: Sequence[float], values: Sequence[float], name: str
) -> tuple[list[float], list[float]]:
    processors, values = sequence("processors", processors), sequence(name, values)
    if len(processors) != len(values):
        raise ValueError(
            f"`processors` and `{name}` must have the same length "
            f"(got {len(processors)} and {len(values)})."
        )
    ps = [processor_count(f"processors[{i}]", p) for i, p in enumerate(processors)]
    vs = [positive(f"{name}[{i}]", v) for i, v in enumerate(values)]
    return ps, vs


def _t_interval(
    value: float, sigma: float, dof: int, confidence: float
) -> tuple[float | None, float | None]:
    if dof <= 0 or not math.isfinite(sigma):
        return None, None
    from scipy import stats

    half = float(stats.t.ppf(0.5 + confidence / 2, dof)) * sigma
    return max(0.0, value - half), min(1.0, value + half)


def _fit_medians(
    processors: list[float],
    values: list[float],
    estimate: Callable[[Any, Any], Any],
    sigma: Callable[[Any, Any], float],
    parameters: int,
    confidence: float,
) -> tuple[float, float | None, float | None, Any]:
    """Fit a law to the median value at each processor count: the unclipped fraction, its
    interval and the medians.

    ``estimate(counts, medians)`` takes a ``(rows, counts)`` array of medians and returns one
    unclipped fraction per row. The fraction's standard error is the scatter of the fractions
    fitted to :data:`BOOTSTRAP_RESAMPLES` resamples of the repeats (seeded) when some count was
    repeated, else ``sigma(counts, medians)``, the least-squares one from the scatter of the
    medians about the curve. The interval is Student's t on it, with as many degrees of
    freedom as points beyond the ``parameters`` (none: no interval).
    """
    import numpy as np

    p_arr, v_arr = np.asarray(processors), np.asarray(values)
    counts = np.unique(p_arr)
    groups = [v_arr[p_arr == c] for c in counts]
    medians = np.array([float(np.median(g)) for g in groups])
    raw = float(estimate(counts, medians[None, :])[0])
    dof = len(processors) - parameters
    if dof <= 0:
        return raw, None, None, medians
    if len(processors) > len(counts):  # repeats: resample them
        rng = np.random.default_rng(0)
        resampled = np.stack(
            [np.median(rng.choice(g, (BOOTSTRAP_RESAMPLES, len(g))), axis=1) for g in groups], 1
        )
        error = float(np.std(estimate(counts, resampled), ddof=1))
    else:
        error = sigma(counts, medians)
    low, high = _t_interval(min(max(raw, 0.0), 1.0), error, dof, confidence)
    return raw, low, high, medians


def fit_amdahl(
    processors: Sequence[float], times: Sequence[float], *, confidence: float = 0.95
) -> Fit:
    """Fit Amdahl's law ``T(p) = T1·((1 - α) + α/p)`` to measured times; ``α`` with an interval.

    Pass every repeat as its own point (``processors=[1, 1, 1, 2, 2, 2]``). The law is fitted to
    the median time at each count (least squares in ``T = a + b/p``, so ``α = b/(a + b)``), the
    statistic a speedup is quoted from: with two counts the fit passes through both medians,
    and ``amdahl_speedup(fit.value, p)`` is the median speedup. The interval is Student's t on a
    standard error found by resampling the repeats at each count; with one time per count, on
    the least-squares one from the scatter of the times about the curve.

    Parameters
    ----------
    processors : sequence of float
        The processor count of each run, count (each at least 1; repeat a count once per
        repeat).
    times : sequence of float
        Each run's time, s (any one unit will do: ``Fit.scale`` comes back in it); positive,
        as many as ``processors``.
    confidence : float
        The interval's confidence level, in (0, 1], fraction.

    Returns
    -------
    Fit
        The parallel fraction α (``law="amdahl"``), its interval, and the one-processor time
        ``T1`` as ``scale``.

    Raises
    ------
    TypeError
        If ``processors`` or ``times`` is not a sequence of numbers.
    ValueError
        With fewer than two distinct processor counts: one count cannot separate the serial
        part from the parallel one. Also if the lengths differ, a count is below 1, a time is
        not positive, or ``confidence`` is outside (0, 1].

    Examples
    --------
    >>> p = [1, 2, 4, 8]
    >>> fit = fit_amdahl(p, [10 * (0.1 + 0.9 / n) for n in p])
    >>> round(fit.value, 6), round(fit.scale, 6)
    (0.9, 10.0)
    >>> fit = fit_amdahl([1, 1, 1, 2, 2, 2], [1.0, 1.02, 0.98, 0.6, 0.61, 0.9])  # one slow sample
    >>> from perfmodel.scaling import amdahl_speedup
    >>> round(amdahl_speedup(fit.value, 2), 4), round(1.0 / 0.61, 4)   # the median speedup
    (1.6393, 1.6393)
    """
    confidence = fraction("confidence", confidence)
    ps, ts = _points(processors, times, "times")
    if len(set(ps)) < 2:
        raise ValueError(
            f"`processors` must hold at least two different counts to fit a serial fraction "
            f"(got {sorted(set(ps))})."
        )
    import numpy as np

    def line(counts: Any, medians: Any) -> tuple[Any, Any]:
        """Least squares ``T = a + b/p`` for each row of medians: ``a`` and ``b``."""
        design = np.stack([np.ones(len(counts)), 1 / counts], 1)
        (a, b), *_ = np.linalg.lstsq(design, medians.T, rcond=None)
        return a, b

    def estimate(counts: Any, medians: Any) -> Any:
        a, b = line(counts, medians)
        with np.errstate(all="ignore"):
            return b / (a + b)

    def sigma(counts: Any, medians: Any) -> float:
        # the delta method on α = b/(a + b), with (a, b)'s least-squares covariance
        a, b = (float(x[0]) for x in line(counts, medians[None, :]))
        design = np.stack([np.ones(len(counts)), 1 / counts], 1)
        residual = medians - design @ np.array([a, b])
        variance = float(residual @ residual) / (len(counts) - 2)
        covariance = variance * np.linalg.inv(design.T @ design)
        gradient = np.array([-b, a]) / (a + b) ** 2
        return float(np.sqrt(gradient @ covariance @ gradient))

    raw, low, high, medians = _fit_medians(ps, ts, estimate, sigma, 2, confidence)
    counts = np.unique(np.asarray(ps))
    # Speedups start at exactly 1 on one processor and rise at every count; a slowdown measured
    # in seconds on two counts can look the same, so it takes three counts to say so.
    rising = len(counts) >= 3 and bool(np.all(np.diff(medians) > 0))
    starts_at_one = counts[0] == 1 and abs(float(medians[0]) - 1.0) <= 0.02
    if (
        raw < -ROUNDING
        and rising
        and starts_at_one
        and all(m <= 1.1 * c for c, m in zip(counts, medians, strict=True))
    ):
        warnings.warn(
            f"`times` look like speedups: they rise with the processor count, from about 1 "
            f"at {counts[0]:g} to at most the count (medians {np.round(medians, 3).tolist()}). "
            f"fit_amdahl takes times (s); pass 1 / speedup for each run to fit speedups.",
            UserWarning,
            stacklevel=2,
        )
    alpha = min(max(raw, 0.0), 1.0)
    # T1 that best fits the medians at the clipped α (the least-squares line when α is inside)
    shape = (1 - alpha) + alpha / counts
    t1 = float(shape @ medians / (shape @ shape))
    return Fit(alpha, low, high, confidence, len(ps), t1, raw, "amdahl")


def fit_gustafson(
    processors: Sequence[float], scaled_speedups: Sequence[float], *, confidence: float = 0.95
) -> Fit:
    """Fit Gustafson's law ``S(N) = s + N·(1 - s)`` to scaled speedups; ``s`` with an interval.

    Least squares through the line ``N - S = s·(N - 1)``, which has no intercept, fitted to the
    median scaled speedup at each count: each count alone gives ``s = (N - S) / (N - 1)``.
    Pass every repeat as its own point: the interval's standard error comes from resampling
    them; with one point per count, two or more counts above 1 give one from their scatter
    about the line.

    Parameters
    ----------
    processors : sequence of float
        The processor count ``N`` of each run, count (each at least 1; at least one above 1).
    scaled_speedups : sequence of float
        Each run's scaled speedup ``S(N)``, dimensionless; positive, as many as
        ``processors``.
    confidence : float
        The interval's confidence level, in (0, 1], fraction.

    Returns
    -------
    Fit
        The serial share s (``law="gustafson"``) and its interval; ``scale`` is None.

    Raises
    ------
    TypeError
        If ``processors`` or ``scaled_speedups`` is not a sequence of numbers.
    ValueError
        If no count is above 1, the lengths differ, a count is below 1, a speedup is not
        positive, or ``confidence`` is outside (0, 1].

    Examples
    --------
    >>> fit = fit_gustafson([1024], [1020])   # Gustafson's wave simulation at Sandia, 1988
    >>> round(fit.value, 5), fit.has_interval
    (0.00391, False)
    """
    confidence = fraction("confidence", confidence)
    ps, ss = _points(processors, scaled_speedups, "scaled_speedups")
    above = [(p, s) for p, s in zip(ps, ss, strict=True) if p > 1]
    if not above:
        raise ValueError("`processors` must include a count above 1 (got only 1).")

    def estimate(counts: Any, medians: Any) -> Any:
        x = counts - 1
        return (counts - medians) @ x / (x @ x)

    def sigma(counts: Any, medians: Any) -> float:
        x, y = counts - 1, counts - medians
        value = float(y @ x / (x @ x))
        return math.sqrt(float((y - value * x) @ (y - value * x)) / (len(x) - 1) / float(x @ x))

    raw, low, high, _ = _fit_medians(
        [p for p, _ in above], [s for _, s in above], estimate, sigma, 1, confidence
    )
    return Fit(min(max(raw, 0.0), 1.0), low, high, confidence, len(ps), None, raw, "gustafson")
