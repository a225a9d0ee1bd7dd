"""This machine's roofline: the nominal roof, the measured one, and the kernels under them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from perfmodel.hardware import Device
from perfmodel.microbench import KernelResult
from perfmodel.plotting import COLOURS, new_axes, si_formatter, style

__all__ = ["empirical_roofline_plot"]


def empirical_roofline_plot(
    device: Device,
    kernels: Sequence[KernelResult],
    *,
    dtype: str = "fp64",
    intensity_range: tuple[float, float] = (0.01, 1000.0),
    ax: Any = None,
) -> Any:
    """The nominal roof (dashed), the measured roof (solid), and each kernel as a point.

    Every STREAM, elementwise and matmul kernel of ``dtype`` with FLOPs is placed at (its
    intensity, its achieved FLOP/s)
    and labelled with its *fraction of the speed of light*: achieved over what the
    measured roof allows at that intensity. Each measured memory level is drawn as its own
    slanted roof.

    Returns
    -------
    matplotlib.axes.Axes
    """
    low, high = intensity_range
    x = np.logspace(np.log10(low), np.log10(high), 400)
    measured_peak = device.measured_flops(dtype)
    measured_bandwidth = device.measured_memory_bandwidth or device.memory_bandwidth
    with style():
        ax = new_axes(ax, (10, 6.5))
        nominal = np.minimum(device.peak_flops(dtype), x * device.memory_bandwidth)
        ax.plot(x, nominal, "--", color="grey", label=f"nominal {dtype}")
        roof = np.minimum(measured_peak, x * measured_bandwidth)
        ax.plot(x, roof, "-", color=COLOURS[0], label=f"measured {dtype}")
        for index, (level, rate) in enumerate(device.memory_levels.items()):
            slope = np.minimum(measured_peak, x * rate)
            colour = COLOURS[(index + 2) % len(COLOURS)]
            ax.plot(x, slope, ":", color=colour, linewidth=1.8, label=f"{level} bandwidth")
        for kernel in kernels:
            if kernel.kind not in ("stream", "elementwise", "matmul"):
                continue  # working sets are the dotted roofs; tiny ops sit below any roof
            if kernel.cost.dtype != dtype or kernel.cost.flops == 0:
                continue
            intensity, achieved = kernel.intensity, kernel.flops_per_s
            if not low <= intensity <= high:
                continue
            light = achieved / min(measured_peak, intensity * measured_bandwidth)
            ax.plot([intensity], [achieved], "D", color="black", markersize=7)
            ax.annotate(
                f"{kernel.name}: {light:.0%}",
                (intensity, achieved),
                textcoords="offset points",
                xytext=(6, -14),
                fontsize=10,
            )
        ax.set(
            xscale="log",
            yscale="log",
            xlabel="arithmetic intensity (FLOP / byte)",
            ylabel="FLOP/s",
            title=f"{device.name}: measured against nominal",
        )
        ax.set_xlim(low, high)
        ax.yaxis.set_major_formatter(si_formatter("FLOP/s"))
        ax.legend(loc="lower right", fontsize=10)
    return ax
