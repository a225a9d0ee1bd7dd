"""Lecture 09's pictures: a measured link against its alpha-beta fit, and a data-parallel step.

* :func:`alpha_beta_plot`: measured collective times on log-log axes, the fitted
  ``α + n/B`` line through them, and the held-out size's prediction and measurement;
* :func:`step_plot`: a data-parallel step at several device counts, compute and exposed
  communication stacked, with the scaling efficiency written on each bar;
* :func:`memory_plot`: one device's training memory by kind against its capacity;
* :func:`step_parts_plot`: why a whole training step is not at 100%: its time by part;
* :func:`sweep_plot`: a published nccl-tests sweep's bus bandwidth beside NCCL's own model,
  each size drawn in the colour of the algorithm and protocol NCCL picks there.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from perfmodel.plotting import COLOURS, new_axes, si_formatter, style

__all__ = ["alpha_beta_plot", "memory_plot", "step_parts_plot", "step_plot", "sweep_plot"]


def alpha_beta_plot(result: Any, collective: str = "allreduce", *, ax: Any = None) -> Any:
    """Measured times of ``collective`` from a :class:`perfmodel.comms.bench.BenchResult`, the
    fit, and the held-out size: predicted (open) and measured (filled).

    Parameters
    ----------
    result : perfmodel.comms.bench.BenchResult
        A benchmark run: its raw times per size, its fits and its held-out sizes.
    collective : str
        The collective drawn, a key of ``result.fits`` (``"allreduce"``...).
    ax : matplotlib.axes.Axes or None
        Axes to draw on, log-log: every repeat's time per message size (grey), the medians
        (filled where fitted, open where left out of the fit), the fitted ``α + n/B`` line
        up to the held-out size, and that size's prediction and measurement; None makes an
        11 x 6.5 inch figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    fit = result.fits[collective]
    table = result.raw["results"][collective]
    held = result.held_out[collective]
    with style():
        ax = new_axes(ax, (11, 6.5))
        for size, samples in zip(table["sizes"], table["times"], strict=True):
            ax.plot([size] * len(samples), samples, ".", color="grey", alpha=0.6)
        fitted = set(fit.sizes)
        ax.plot(fit.sizes, fit.times, "o", color=COLOURS[0], label="measured (median), fitted")
        measured = zip(table["sizes"], table["times"], strict=True)
        others = [(n, float(np.median(s))) for n, s in measured if n not in fitted]
        if others:
            ax.plot(*zip(*others, strict=True), "o", mfc="none", color=COLOURS[0],
                    label="measured, left out of the fit")  # fmt: skip
        span = np.geomspace(min(fit.sizes), held.size, 200)  # the fit holds where it was made
        line = f"fit: α = {fit.latency * 1e6:.3g} µs, B = {fit.bandwidth / 1e9:.3g} GB/s"
        ax.plot(span, [fit.predict(n) for n in span], color=COLOURS[1], label=line)
        ax.plot([held.size], [held.predicted_s], "s", mfc="none", mew=2.5, markersize=13,
                color=COLOURS[2], label="held-out size: predicted")  # fmt: skip
        ax.plot([held.size], [held.measured_s], "s", color=COLOURS[2], markersize=11,
                label=f"held-out size: measured ({held.error:+.0%})")  # fmt: skip
        ax.set(xscale="log", yscale="log", xlabel="message size", ylabel="time per call",
               title=f"{collective} on {result.ranks} ranks: the alpha-beta model")  # fmt: skip
        ax.xaxis.set_major_formatter(si_formatter("B"))
        ax.yaxis.set_major_formatter(si_formatter("s"))
        ax.legend(loc="upper left", fontsize=11)
    return ax


def step_plot(steps: Sequence[Any], *, ax: Any = None) -> Any:
    """Data-parallel steps (:class:`perfmodel.distributed.DataParallelStep`) side by side:
    forward, backward and exposed communication stacked per device count.

    Parameters
    ----------
    steps : sequence of perfmodel.distributed.DataParallelStep
        One step per bar, left to right, e.g. the same model at 1, 2, 4, 8 devices.
    ax : matplotlib.axes.Axes or None
        Axes to draw on: per step, a bar of forward, backward and communication not hidden
        behind the backward pass, in milliseconds, its scaling efficiency on top; None
        makes an 11 x 6 inch figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    with style():
        ax = new_axes(ax, (11, 6))
        x = np.arange(len(steps))
        forward = np.array([s.forward_s for s in steps]) * 1e3
        backward = np.array([s.backward_s for s in steps]) * 1e3
        exposed = np.array([s.exposed_communication_s for s in steps]) * 1e3
        ax.bar(x, forward, color=COLOURS[0], label="forward")
        ax.bar(x, backward, bottom=forward, color=COLOURS[5], label="backward")
        ax.bar(x, exposed, bottom=forward + backward, color=COLOURS[1],
               label="communication not hidden")  # fmt: skip
        for i, s in enumerate(steps):
            ax.annotate(f"{s.efficiency:.0%}", (i, s.step_s * 1e3), xytext=(0, 4),
                        textcoords="offset points", ha="center", fontsize=13)  # fmt: skip
        ax.set_xticks(x, [str(s.devices) for s in steps])
        ax.set(xlabel="devices (efficiency on top)", ylabel="step time (ms)",
               ylim=(0, max(s.step_s for s in steps) * 1e3 * 1.12),
               title="One data-parallel step: what the network adds")  # fmt: skip
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=3, fontsize=12)
    return ax


def memory_plot(memory: Any, capacity: float | None, *, ax: Any = None) -> Any:
    """One device's :class:`perfmodel.distributed.TrainingMemory`, stacked, against
    ``capacity`` bytes (a dashed line; none drawn when None).

    Parameters
    ----------
    memory : perfmodel.distributed.TrainingMemory
        One device's weights, gradients, optimizer states and activations, B.
    capacity : float or None
        The device's memory, B; None draws no capacity line.
    ax : matplotlib.axes.Axes or None
        Axes to draw on: one bar of the four kinds stacked, in GB (1e9 B), with the
        capacity as a dashed line; None makes a 5 x 6 inch figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    parts = [
        ("weights", memory.weights),
        ("gradients", memory.gradients),
        ("optimizer states", memory.optimizer),
        ("activations", memory.activations),
    ]
    with style():
        ax = new_axes(ax, (5, 6))
        bottom = 0.0
        for (name, value), colour in zip(parts, COLOURS, strict=False):
            ax.bar([0], [value / 1e9], bottom=bottom / 1e9, color=colour, label=name, width=0.6)
            bottom += value
        if capacity is not None:
            ax.axhline(capacity / 1e9, color="black", linestyle="--",
                       label=f"device memory {capacity / 1e9:.0f} GB")  # fmt: skip
        top = max(bottom, capacity or 0) / 1e9
        ax.set(xticks=[], ylabel="GB per device", ylim=(0, top * 1.25),
               title="Memory per device")  # fmt: skip
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.02), fontsize=11)
    return ax


def step_parts_plot(steps: Sequence[tuple[str, Any]], *, ax: Any = None) -> Any:
    """Why a training step is not at 100%: each step's time split into its parts, as shares,
    with its MFU marked.

    Parameters
    ----------
    steps : sequence of (str, perfmodel.distributed.TrainingStep)
        A label and a step per bar, top to bottom.
    ax : matplotlib.axes.Axes or None
        Axes to draw on: per step a horizontal bar of 100% of its time split into its parts
        (GEMMs, attention, memory-bound kernels, then what the layout adds), and a white mark
        at the MFU, the share the model's FLOPs would take at the device's peak; None makes a
        12 x (1.2 per bar + 2.5) inch figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    import matplotlib.pyplot as plt

    names = [name for name, _ in steps[0][1].parts()] if steps else []
    colours = [plt.get_cmap("tab10")(i) for i in range(len(names))]
    with style():
        ax = new_axes(ax, (12, 1.2 * len(steps) + 2.5))
        for row, (_, step) in enumerate(steps):
            left = 0.0
            for i, (name, seconds) in enumerate(step.parts()):
                width = 100 * seconds / step.step_s
                ax.barh([row], [width], left=left, color=colours[i],
                        label=name if row == 0 else None, height=0.6)  # fmt: skip
                left += width
            ax.plot([100 * step.mfu] * 2, [row - 0.38, row + 0.38], color="white", lw=4)
            ax.plot([100 * step.mfu] * 2, [row - 0.38, row + 0.38], color="black", lw=1.5)
            ax.annotate(f"MFU {step.mfu:.0%}", (100 * step.mfu, row - 0.38), xytext=(0, 3),
                        textcoords="offset points", ha="center", va="bottom",
                        fontsize=12)  # fmt: skip
        ax.set_yticks(np.arange(len(steps)), [label for label, _ in steps])
        ax.set_ylim(len(steps) - 0.5, -0.85)  # top to bottom, room above for the MFU marks
        ax.set(xlim=(0, 100), xlabel="share of the step (%)",
               title="Why not 100%: where a training step's time goes")  # fmt: skip
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.18), ncol=4, fontsize=11)
    return ax


def sweep_plot(sweep: Any, fabric: Any, *, title: str = "", ax: Any = None) -> Any:
    """A measured sweep's bus bandwidth per size beside what NCCL's model predicts, the
    prediction coloured by the algorithm and protocol NCCL picks and each switch marked.

    Parameters
    ----------
    sweep : perfmodel.comms.Sweep
        What :func:`perfmodel.comms.read_nccl_tests` read.
    fabric : perfmodel.comms.Fabric
        The GPUs and links, as NCCL's topology search finds them.
    title : str
        The title; by default the collective and the ranks.
    ax : matplotlib.axes.Axes or None
        Axes to draw on: the measured bus bandwidth (black dots), the model's (a line per
        algorithm and protocol, each over the sizes where it is NCCL's pick) and a dotted
        line at every size where the pick changes; None makes an 11 x 6.5 inch figure.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on.
    """
    from perfmodel.comms import bus_factor, nccl_choice

    ranks, name = sweep.ranks, sweep.collective
    factor = bus_factor(name, ranks)
    sizes = np.geomspace(max(min(n for n in sweep.sizes if n > 0), 8), max(sweep.sizes), 400)
    picks = [nccl_choice(name, n, fabric) for n in sizes]
    with style():
        ax = new_axes(ax, (11, 6.5))
        measured = [(n, b) for n, b in zip(sweep.sizes, sweep.bus_bandwidths, strict=True) if n]
        ax.plot(*zip(*measured, strict=True), "o", color="black", label="measured (nccl-tests)")
        order = list(dict.fromkeys((p.algorithm, p.protocol) for p in picks))
        for i, option in enumerate(order):
            span = [(n, n / p.time_s * factor) if (p.algorithm, p.protocol) == option
                    else (n, np.nan) for n, p in zip(sizes, picks, strict=True)]  # fmt: skip
            ax.plot(*zip(*span, strict=True), lw=3.5, color=COLOURS[1 + i % (len(COLOURS) - 1)],
                    label=f"NCCL's model: {option[0]}, {option[1]}")  # fmt: skip
        for before, after, n in zip(picks, picks[1:], sizes[1:], strict=False):
            if (before.algorithm, before.protocol) != (after.algorithm, after.protocol):
                ax.axvline(n, color="grey", ls=":", lw=1.5)
        ax.set(xscale="log", xlabel="message size", ylabel="bus bandwidth",
               title=title or f"{name} on {ranks} GPUs: measured and NCCL's model")  # fmt: skip
        ax.xaxis.set_major_formatter(si_formatter("B"))
        ax.yaxis.set_major_formatter(si_formatter("B/s"))
        ax.set_ylim(bottom=0)
        ax.legend(loc="upper left", fontsize=11)
    return ax
