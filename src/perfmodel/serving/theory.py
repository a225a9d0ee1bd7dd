"""Closed forms from queueing theory: what the simulator must reproduce.

Kendall's notation A/S/c: arrivals (M, Poisson), service times (M exponential, D fixed,
G general), c identical servers, first come first served, an infinite queue. With arrival
rate λ, mean service time E[S] and ρ = λ·E[S]/c < 1:

* **M/M/c** (Erlang C): a request waits with probability ``C(c, a)``, ``a = λ·E[S]``, and
  the mean wait is ``Wq = C(c, a) · E[S] / (c - a)``; ``c = 1`` gives M/M/1's
  ``ρ·E[S] / (1 - ρ)``.
* **M/G/1** (Pollaczek-Khinchine): ``Wq = λ·E[S²] / (2(1 - ρ))``; fixed service times
  (M/D/1) wait half as long as exponential ones.
* **Little's law**, for any stable system: the mean number present ``L = λ·W``.

>>> round(mmc_wait(0.9, 1.0, 1), 6), round(md1_wait(0.9, 1.0), 6)   # ρ = 0.9
(9.0, 4.5)
>>> round(mmc_wait(1.8, 1.0, 2), 4)          # two servers at the same ρ wait less
4.2632
"""

from __future__ import annotations

import warnings
from collections.abc import Callable

from perfmodel._validate import count, non_negative, positive

__all__ = ["OverloadWarning", "erlang_c", "mg1_wait", "md1_wait", "mmc_wait", "utilization"]


class OverloadWarning(UserWarning):
    """``serving.simulate`` was asked for more requests per second than its workers serve."""


def _stable(arrival_rate: float, mean_service_s: float, servers: int) -> tuple[float, float]:
    lam = positive("arrival_rate", arrival_rate)
    mean = positive("mean_service_s", mean_service_s)
    c = count("servers", servers)
    rho = lam * mean / c
    if rho >= 1:
        raise ValueError(
            f"`arrival_rate` must keep utilization below 1 (got ρ = λ·E[S]/c = {rho:.3g}): "
            f"the queue grows without bound."
        )
    return lam, mean


def utilization(arrival_rate: float, mean_service_s: float, servers: int = 1) -> float:
    """ρ = λ·E[S]/c, the share of the time each server is busy (any queue, when stable).

    Parameters
    ----------
    arrival_rate : float
        λ, the mean arrival rate, positive, requests per s.
    mean_service_s : float
        E[S], the mean service time, positive, s.
    servers : int
        c, the servers, count.

    Returns
    -------
    float
        ρ, fraction; 1 or more means the queue grows without bound (not checked here).
    """
    lam, mean = positive("arrival_rate", arrival_rate), positive("mean_service_s", mean_service_s)
    return lam * mean / count("servers", servers)


def erlang_c(servers: int, offered_load: float) -> float:
    """The probability that a request waits in M/M/c, with ``offered_load`` a = λ·E[S] < c.

    Computed through the Erlang B recursion, which stays stable for hundreds of servers.

    Parameters
    ----------
    servers : int
        c, the servers, count.
    offered_load : float
        a = λ·E[S] in erlangs, from 0 to below ``servers``, dimensionless.

    Returns
    -------
    float
        The probability that an arriving request finds every server busy, fraction.

    >>> round(erlang_c(1, 0.5), 6), round(erlang_c(10, 8.0), 4)
    (0.5, 0.4092)
    """
    c = count("servers", servers)
    a = non_negative("offered_load", offered_load)
    if a >= c:
        raise ValueError(f"`offered_load` must be below `servers` = {c} (got {a:g}).")
    blocking = 1.0  # Erlang B with 0 servers
    for k in range(1, c + 1):
        blocking = a * blocking / (k + a * blocking)
    return c * blocking / (c - a * (1 - blocking))


def mmc_wait(arrival_rate: float, mean_service_s: float, servers: int = 1) -> float:
    """Mean time in the queue (before service) in M/M/c.

    Parameters
    ----------
    arrival_rate : float
        λ, the mean arrival rate, positive, requests per s.
    mean_service_s : float
        E[S], the mean of the exponential service time, positive, s.
    servers : int
        c, the servers, count; ρ = λ·E[S]/c must be below 1.

    Returns
    -------
    float
        Wq, the mean wait before service, s.
    """
    lam, mean = _stable(arrival_rate, mean_service_s, servers)
    a = lam * mean
    return erlang_c(servers, a) * mean / (servers - a)


def mg1_wait(arrival_rate: float, mean_service_s: float, service_variance: float) -> float:
    """Mean time in the queue in M/G/1 (Pollaczek-Khinchine), from E[S] and Var[S].

    Parameters
    ----------
    arrival_rate : float
        λ, the mean arrival rate, positive, requests per s.
    mean_service_s : float
        E[S], the mean service time, positive, s; ρ = λ·E[S] must be below 1.
    service_variance : float
        Var[S], the service time's variance, non-negative, in s^2 (E[S]^2 for
        exponential times, 0 for fixed ones).

    Returns
    -------
    float
        Wq, the mean wait before service, s.
    """
    lam, mean = _stable(arrival_rate, mean_service_s, 1)
    second_moment = non_negative("service_variance", service_variance) + mean * mean
    return lam * second_moment / (2 * (1 - lam * mean))


def md1_wait(arrival_rate: float, service_s: float) -> float:
    """Mean time in the queue in M/D/1: P-K with no variance, half of M/M/1's.

    Parameters
    ----------
    arrival_rate : float
        λ, the mean arrival rate, positive, requests per s.
    service_s : float
        The fixed service time, positive, s; ρ = λ·service_s must be below 1.

    Returns
    -------
    float
        Wq, the mean wait before service, s.
    """
    return mg1_wait(arrival_rate, service_s, 0.0)


def warn_if_overloaded(
    rate: float, batch_time: Callable[[int], float], workers: int, max_batch: int
) -> None:
    """Warn (:class:`OverloadWarning`) when ``rate`` meets the workers' capacity at their best
    batch size; the sizes tried are 1, the powers of two and ``max_batch``.

    Parameters
    ----------
    rate : float
        Requests arriving per s, on average.
    batch_time : callable
        Mean seconds a worker takes for a batch of b requests.
    workers : int
        Workers in all, count.
    max_batch : int
        The largest batch a worker takes, count.
    """
    sizes = {1, max_batch, *(2**k for k in range(max_batch.bit_length()) if 2**k < max_batch)}
    times = {b: batch_time(b) for b in sorted(sizes)}
    if any(not t > 0 for t in times.values()):
        return
    best = max(times, key=lambda b: b / times[b])
    capacity = workers * best / times[best]
    if rate >= capacity:
        warnings.warn(
            f"requests arrive at {rate:,.4g}/s, {rate / capacity:.2f} times what {workers} "
            f"worker(s) can serve ({capacity:,.4g}/s at batches of {best}): utilization >= 1, "
            f"so the queue grows without bound and the latencies depend on how many requests "
            f"were simulated (serving.mmc_wait refuses such a load).",
            OverloadWarning,
            stacklevel=3,
        )
