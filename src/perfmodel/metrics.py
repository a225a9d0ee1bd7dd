"""Metrics and the simplest performance models (lecture 01).

* Time: ``T = W · t / P`` (work, average time per unit of work, average parallelism).
* Throughput: work per second. Utilization: achieved rate over peak rate.
* Energy: power times time; efficiency in FLOPs per joule.
* The speed of light: running at a fraction ``f`` of the best possible time leaves at most
  ``1 / f`` of speed-up on the table (0.5c: 2x left; 0.8c: 1.25x).
* Moving ``nbytes`` over a channel with bandwidth ``B`` and latency ``L`` takes
  ``L + nbytes / B``.

Examples
--------
>>> round(run_time_s(work=1e12, time_per_work_s=2e-9, parallelism=100), 9)  # seconds
20.0
>>> headroom(0.8)
1.25
"""

from __future__ import annotations

from perfmodel._validate import non_negative, number, positive

__all__ = [
    "energy_j",
    "flops_per_joule",
    "headroom",
    "run_time_s",
    "throughput",
    "transfer_time_s",
    "utilization",
]


def transfer_time_s(
    nbytes: float, bandwidth_bytes_per_s: float, *, latency_s: float = 0.0
) -> float:
    """Seconds to move ``nbytes`` over a channel.

    Parameters
    ----------
    nbytes : float
        Bytes to move (non-negative), B.
    bandwidth_bytes_per_s : float
        Sustained bandwidth of the channel (positive), B/s.
    latency_s : float, optional
        Fixed start-up cost per transfer (default 0), s.

    Returns
    -------
    float
        ``latency_s + nbytes / bandwidth_bytes_per_s``, s.

    Raises
    ------
    TypeError
        If an argument is not a number.
    ValueError
        If ``nbytes`` or ``latency_s`` is negative or the bandwidth is not positive.

    Notes
    -----
    The model ignores everything but the two numbers: real transfers reach their
    bandwidth only when they are large, which is what the latency term stands in for.

    Examples
    --------
    >>> transfer_time_s(10e6, 400e9)  # 10 MB at 400 GB/s
    2.5e-05
    >>> transfer_time_s(0, 12.5e9, latency_s=2e-6)
    2e-06
    """
    size = non_negative("nbytes", nbytes)
    bandwidth = positive("bandwidth_bytes_per_s", bandwidth_bytes_per_s)
    latency = non_negative("latency_s", latency_s)
    return latency + size / bandwidth


def run_time_s(work: float, time_per_work_s: float, parallelism: float = 1.0) -> float:
    """Total time ``T = W · t / P``.

    Parameters
    ----------
    work : float
        Units of work W (operations, samples, requests), count.
    time_per_work_s : float
        Average cost t of one unit, s.
    parallelism : float, optional
        Average number of units in progress at once, P (positive; default 1), count.

    Returns
    -------
    float
        The total time T, s.

    Raises
    ------
    TypeError
        If an argument is not a number.
    ValueError
        If ``work`` or ``time_per_work_s`` is negative or ``parallelism`` is not positive.

    Examples
    --------
    >>> run_time_s(1e6, 2e-6, parallelism=4)
    0.5
    """
    w = non_negative("work", work)
    t = non_negative("time_per_work_s", time_per_work_s)
    p = positive("parallelism", parallelism)
    return w * t / p


def throughput(work: float, seconds: float) -> float:
    """Work done per second.

    Parameters
    ----------
    work : float
        Work done, in any unit: FLOP, B, tokens (non-negative).
    seconds : float
        The time it took (positive), s.

    Returns
    -------
    float
        ``work / seconds``: FLOP/s for FLOP, B/s for B, tokens/s for tokens.

    Raises
    ------
    TypeError
        If an argument is not a number.
    ValueError
        If ``work`` is negative or ``seconds`` is not positive.

    Examples
    --------
    >>> throughput(1e6, 7e-6) / 1e9  # FLOP/s -> GFLOP/s
    142.85714285714286
    """
    return non_negative("work", work) / positive("seconds", seconds)


def utilization(achieved: float, peak: float) -> float:
    """Fraction of the peak rate reached, in [0, 1] for any honest measurement.

    Parameters
    ----------
    achieved : float
        The rate reached (non-negative), in any rate unit: FLOP/s, B/s, tokens/s.
    peak : float
        The peak rate (positive), in the same unit as ``achieved``: FLOP/s, B/s, tokens/s.

    Returns
    -------
    float
        ``achieved / peak``, fraction. Not capped at 1: above 1 the peak was wrong.

    Raises
    ------
    TypeError
        If an argument is not a number.
    ValueError
        If ``achieved`` is negative or ``peak`` is not positive.

    Examples
    --------
    >>> utilization(150e9, 6e12)
    0.025
    """
    return non_negative("achieved", achieved) / positive("peak", peak)


def energy_j(power_w: float, seconds: float) -> float:
    """Energy used, joules: power times time.

    Parameters
    ----------
    power_w : float
        Average power drawn (non-negative), W: joules per s.
    seconds : float
        How long it was drawn (non-negative), s.

    Returns
    -------
    float
        ``power_w · seconds``, J (W · s).

    Raises
    ------
    TypeError
        If an argument is not a number.
    ValueError
        If an argument is negative.

    Examples
    --------
    >>> energy_j(700, 3600) / 3.6e6  # an H100-class board for an hour, in kWh
    0.7
    """
    return non_negative("power_w", power_w) * non_negative("seconds", seconds)


def flops_per_joule(flops: float, power_w: float, seconds: float) -> float:
    """Energy efficiency: FLOPs done per joule spent.

    Parameters
    ----------
    flops : float
        Work done (non-negative), FLOP.
    power_w : float
        Average power drawn (positive), W: joules per s.
    seconds : float
        How long it ran (positive), s.

    Returns
    -------
    float
        ``flops / (power_w · seconds)``, FLOP per joule.

    Raises
    ------
    TypeError
        If an argument is not a number.
    ValueError
        If ``flops`` is negative, or ``power_w`` or ``seconds`` is negative or zero.

    Examples
    --------
    >>> flops_per_joule(1e15, 500, 2.0) / 1e12  # TFLOP per joule
    1.0
    """
    energy = energy_j(power_w, seconds)
    if energy == 0:
        raise ValueError("`power_w` and `seconds` must both be positive to spend any energy.")
    return non_negative("flops", flops) / energy


def headroom(fraction_of_light: float) -> float:
    """The most speed-up left when running at ``fraction_of_light`` of the best time.

    Parameters
    ----------
    fraction_of_light : float
        The best possible time over the time taken, in (0, 1], fraction.

    Returns
    -------
    float
        ``1 / fraction_of_light``: the largest speed-up still possible, dimensionless.

    Raises
    ------
    TypeError
        If ``fraction_of_light`` is not a number.
    ValueError
        If ``fraction_of_light`` is not in (0, 1].

    Examples
    --------
    >>> headroom(0.5)
    2.0
    """
    f = number(
        "fraction_of_light",
        fraction_of_light,
        minimum=0,
        maximum=1,
        strict_minimum=True,
        what="a fraction in (0, 1]; above 1 the model is wrong, not the code",
    )
    return 1 / f
