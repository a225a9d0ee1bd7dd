"""Time to move data: the first model of the course.

Moving ``nbytes`` over a channel with bandwidth ``B`` (bytes/s) and start-up latency
``L`` (s) takes ``L + nbytes / B``. The same two numbers describe a memory bus, a PCIe
link or a network, which is why the course keeps coming back to them.
"""

from __future__ import annotations

import math

__all__ = ["transfer_time_s"]


def _require_number(name: str, value: object, *, positive: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"`{name}` must be a number (got {type(value).__name__}: {value!r}).")
    number = float(value)
    if not math.isfinite(number) or number < 0 or (positive and number == 0):
        need = "a positive" if positive else "a non-negative"
        raise ValueError(f"`{name}` must be {need} finite number (got {name}={value!r}).")
    return number


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
    size = _require_number("nbytes", nbytes, positive=False)
    bandwidth = _require_number("bandwidth_bytes_per_s", bandwidth_bytes_per_s, positive=True)
    latency = _require_number("latency_s", latency_s, positive=False)
    return latency + size / bandwidth
