"""How the minibatch size moves a layer along the roofline: intensity and time per sample."""

from __future__ import annotations

from typing import Any

import matplotlib.pyplot as plt

from perfmodel.hardware import get
from perfmodel.minibatch import crossover_batch, step_time_s
from perfmodel.ops import dense_forward
from perfmodel.plotting import COLOURS, LOG_MINOR, plain_formatter, si_formatter, style

__all__ = ["batch_size_plot"]


def batch_size_plot(width: int = 4096, device: str = "GPU circa 2015", dtype: str = "fp32") -> Any:
    """Intensity and time per sample of an N×N layer against the minibatch size M.

    The left panel puts the layer's intensity against the device's ridge, with the
    crossover M* where it meets it; the right panel shows the time per sample falling
    until M* and then flattening.

    Parameters
    ----------
    width : int
        N, the layer's input and output width, count.
    device : str
        A catalogue device name, for its ridge point and its roofline.
    dtype : str
        The precision of the layer's operands and of the device's peak.

    Returns
    -------
    matplotlib.figure.Figure
        A new 13 x 5 inch figure of two log-log panels over M = 1, 2, 4, ..., 4096: the
        layer's intensity (FLOP/B) against the ridge, and the time per sample (s).
    """
    import math

    node_ridge = get(device).ridge_point(dtype)
    batches = [2**k for k in range(0, 13)]
    intensity = [dense_forward(m, width, width, dtype=dtype).intensity for m in batches]
    per_sample = [step_time_s(width, m, device, dtype) / m for m in batches]
    crossover = crossover_batch(width, device, dtype)
    with style():
        fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5), layout="constrained")
        left.plot(batches, intensity, "o-", color=COLOURS[0], label="layer intensity")
        left.axhline(node_ridge, color=COLOURS[1], linestyle="--", label=f"ridge {node_ridge:.3g}")
        if math.isfinite(crossover):
            left.axvline(crossover, color="grey", linestyle=":", label=f"M* = {crossover:.3g}")
        for ax in (left, right):
            ax.set_xscale("log", subs=LOG_MINOR)
            ax.set_yscale("log", subs=LOG_MINOR)
            ax.xaxis.set_major_formatter(plain_formatter())
        left.yaxis.set_major_formatter(plain_formatter())
        right.yaxis.set_major_formatter(si_formatter("s"))
        left.set(
            xlabel="minibatch M",
            ylabel="FLOP / byte",
            title=f"{width}x{width} layer, {dtype}",
        )
        left.legend()
        right.plot(batches, per_sample, "o-", color=COLOURS[2])
        right.set(
            xlabel="minibatch M",
            ylabel="seconds per sample",
            title=f"time per sample on {device}",
        )
    return fig
