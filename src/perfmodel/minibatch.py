"""Minibatch size: when a bigger batch makes a layer faster, and when it stops helping.

An N×N dense layer with minibatch M does ``2·N²·M`` FLOPs and moves ``w·(N² + 2·N·M)``
bytes (weights once, inputs and outputs once), so its intensity ``2·N·M / (w·(N + 2·M))``
grows like ``2·M/w`` while M is much smaller than N, then flattens towards ``N/w``. It
crosses a device's ridge point R at

    M* = R·w·N / (2·(N − R·w)),

below which the layer is memory-bound (a bigger batch is almost free) and above which it
is compute-bound (time grows in proportion to M).

Throughput is gameable, though: a bigger batch also changes how many steps training
needs. :func:`steps_to_converge` uses the empirical model of McCandlish et al. (2018),
``S = S_min · (1 + B_noise / M)``, so :func:`experiment_time_s` falls, then rises, with M.

References
----------
McCandlish, Kaplan, Amodei et al., "An Empirical Model of Large-Batch Training",
arXiv:1812.06162, 2018.

Examples
--------
The example of Adam Coates's talk *Deep Learning (hopefully faster)*: an N×N fp32 layer on
its 2015 GPU (ridge 20 FLOP/byte).

>>> round(crossover_batch(4096, "GPU circa 2015", "fp32"), 1)
40.8
>>> smallest_compute_bound_power_of_two(4096, "GPU circa 2015", "fp32")
64
"""

from __future__ import annotations

import math

from perfmodel._validate import count, non_negative, positive
from perfmodel.hardware import DeviceLike, dtype_bytes, get
from perfmodel.ops import dense_forward
from perfmodel.roofline import estimate

__all__ = [
    "crossover_batch",
    "experiment_time_s",
    "smallest_compute_bound_power_of_two",
    "step_time_s",
    "steps_to_converge",
]


def crossover_batch(width: int, device: DeviceLike, dtype: str = "fp32") -> float:
    """The minibatch at which an N×N dense layer reaches the ridge point.

    Parameters
    ----------
    width : int
        The layer's width N (it is N×N), count.
    device : str or hardware.Device
        A catalogue name or a device you built.
    dtype : str
        The layer's dtype, which picks the peak FLOP/s and the bytes per value.

    Returns
    -------
    float
        The minibatch M*, count (may be fractional); ``math.inf`` when the layer is too
        narrow ever to be compute-bound (``N <= R·w``).
    """
    width = count("width", width)
    node = get(device, argument="device")
    ridge_w = node.ridge_point(dtype) * dtype_bytes(dtype)
    if width <= ridge_w:
        return math.inf
    return ridge_w * width / (2 * (width - ridge_w))


def smallest_compute_bound_power_of_two(
    width: int, device: DeviceLike, dtype: str = "fp32", *, largest: int = 2**20
) -> int | None:
    """The smallest power-of-two minibatch at which the layer is compute-bound, if any.

    Parameters
    ----------
    width : int
        The layer's width N (it is N×N), count.
    device : str or hardware.Device
        A catalogue name or a device you built.
    dtype : str
        The layer's dtype, which picks the peak FLOP/s and the bytes per value.
    largest : int
        The largest minibatch tried, count.

    Returns
    -------
    int or None
        The minibatch, count; None if none up to ``largest`` is compute-bound.
    """
    width, largest = count("width", width), count("largest", largest)
    node = get(device, argument="device")
    batch = 1
    while batch <= largest:
        if estimate(dense_forward(batch, width, width, dtype=dtype), node).bound == "compute":
            return batch
        batch *= 2
    return None


def step_time_s(width: int, batch: int, device: DeviceLike, dtype: str = "fp32") -> float:
    """Roofline time of one forward pass of the N×N layer on a minibatch of ``batch``.

    Parameters
    ----------
    width : int
        The layer's width N (it is N×N), count.
    batch : int
        The minibatch M, count.
    device : str or hardware.Device
        A catalogue name or a device you built.
    dtype : str
        The layer's dtype, which picks the peak FLOP/s and the bytes per value.

    Returns
    -------
    float
        Seconds, s.
    """
    width, batch = count("width", width), count("batch", batch)
    return estimate(dense_forward(batch, width, width, dtype=dtype), device).time_s


def steps_to_converge(batch: int, *, min_steps: float, noise_scale: float) -> float:
    """Optimizer steps to reach a target loss: ``S_min · (1 + B_noise / batch)``.

    Parameters
    ----------
    batch : int
        The minibatch, count.
    min_steps : float
        ``S_min``, the steps an infinite batch would need, count.
    noise_scale : float
        ``B_noise``, the gradient noise scale, count (examples).

    Returns
    -------
    float
        Steps, count.

    Examples
    --------
    >>> steps_to_converge(1000, min_steps=1e4, noise_scale=1000)
    20000.0
    """
    batch = count("batch", batch)
    min_steps = positive("min_steps", min_steps)
    noise_scale = non_negative("noise_scale", noise_scale)
    return min_steps * (1 + noise_scale / batch)


def experiment_time_s(
    width: int,
    batch: int,
    device: DeviceLike,
    dtype: str = "fp32",
    *,
    min_steps: float,
    noise_scale: float,
) -> float:
    """Steps to converge times the time per step: the number a researcher waits for.

    Parameters
    ----------
    width : int
        The layer's width N (it is N×N), count.
    batch : int
        The minibatch, count.
    device : str or hardware.Device
        A catalogue name or a device you built.
    dtype : str
        The layer's dtype, which picks the peak FLOP/s and the bytes per value.
    min_steps : float
        ``S_min`` (see :func:`steps_to_converge`), count.
    noise_scale : float
        ``B_noise``, count (examples).

    Returns
    -------
    float
        Seconds, s.
    """
    steps = steps_to_converge(batch, min_steps=min_steps, noise_scale=noise_scale)
    return steps * step_time_s(width, batch, device, dtype)
