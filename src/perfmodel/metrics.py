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
        Bytes to move (non-negative).
    bandwidth_bytes_per_s : float
        Sustained bandwidth of the channel, bytes per second (positive).
    latency_s : float, optional
        Fixed start-up cost per transfer, seconds (default 0).

    Returns
    -------
    float
        ``latency_s + nbytes / bandwidth_bytes_per_s``.

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
        Units of work W (operations, samples, requests).
    time_per_work_s : float
        Average cost t of one unit, seconds.
    parallelism : float, optional
        Average number of units in progress at once, P >= 1 (default 1).

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

    >>> throughput(1e6, 7e-6) / 1e9  # FLOP/s -> GFLOP/s
    142.85714285714286
    """
    return non_negative("work", work) / positive("seconds", seconds)


def utilization(achieved: float, peak: float) -> float:
    """Fraction of the peak rate reached, in [0, 1] for any honest measurement.

    >>> utilization(150e9, 6e12)
    0.025
    """
    return non_negative("achieved", achieved) / positive("peak", peak)


def energy_j(power_w: float, seconds: float) -> float:
    """Energy used, joules: power times time.

    >>> energy_j(700, 3600) / 3.6e6  # an H100-class board for an hour, in kWh
    0.7
    """
    return non_negative("power_w", power_w) * non_negative("seconds", seconds)


def flops_per_joule(flops: float, power_w: float, seconds: float) -> float:
    """Energy efficiency: FLOPs done per joule spent.

    >>> flops_per_joule(1e15, 500, 2.0) / 1e12  # TFLOP per joule
    1.0
    """
    energy = energy_j(power_w, seconds)
    if energy == 0:
        raise ValueError("`power_w` and `seconds` must both be positive to spend any energy.")
    return non_negative("flops", flops) / energy


def headroom(fraction_of_light: float) -> float:
    """The most speed-up left when running at ``fraction_of_light`` of the best time.

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
