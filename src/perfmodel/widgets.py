"""Interactive explorers for the lectures: thin wires from sliders to a model function.

Every explorer has a static twin (a plain function of the same arguments) that the
notebooks call once with the default values, so the page still reads well where widgets
cannot render: a PDF, GitHub's viewer, a projector with a dead kernel.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable
from typing import Any

from perfmodel.hardware import Device
from perfmodel.metrics import transfer_time_s
from perfmodel.units import format_quantity, format_rate

__all__ = [
    "OP_KINDS",
    "ZOO_MODELS",
    "batch_size_explorer",
    "batch_size_view",
    "device_bars",
    "device_explorer",
    "named_op",
    "op_explorer",
    "op_summary",
    "partition_explorer",
    "partition_view",
    "roofline_explorer",
    "roofline_view",
    "run_time_explorer",
    "run_time_text",
    "snap_to_log_grid",
    "transfer_time_explorer",
    "transfer_time_text",
]


def transfer_time_text(nbytes: float, bandwidth_bytes_per_s: float) -> str:
    """One sentence: how long moving ``nbytes`` at a bandwidth takes (the static twin).

    Examples
    --------
    >>> transfer_time_text(10e6, 400e9)
    'Moving 10 MB at 400 GB/s takes 25 µs.'
    """
    seconds = transfer_time_s(nbytes, bandwidth_bytes_per_s)
    return (
        f"Moving {format_quantity(nbytes, 'B')} at {format_rate(bandwidth_bytes_per_s, 'B/s')} "
        f"takes {format_quantity(seconds, 's')}."
    )


#: Log sliders move in tenths of a decade.
_LOG_STEP = 0.1


def snap_to_log_grid(value: float, step: float = _LOG_STEP) -> float:
    """The value a log slider with ``step`` (in decades) will show for ``value``.

    A browser snaps a log slider's value to its grid; snapping in Python first keeps the
    text computed before the first render equal to what the slider then shows.

    Examples
    --------
    >>> snap_to_log_grid(400e9)
    398107170553.49854
    >>> snap_to_log_grid(1e7)
    10000000.0
    """
    if not value > 0:
        raise ValueError(f"`value` must be positive to sit on a log slider (got {value!r}).")
    return float(10 ** (round(math.log10(value) / step) * step))


def _log_slider(value: float, low: int, high: int, description: str) -> Any:
    """A wide log slider from 10**low to 10**high, starting on its grid at ``value``."""
    import ipywidgets as widgets

    return widgets.FloatLogSlider(
        value=snap_to_log_grid(value),
        base=10,
        min=low,
        max=high,
        step=_LOG_STEP,
        description=description,
        readout_format=".3g",
        continuous_update=True,
        style={"description_width": "8em"},
        layout=widgets.Layout(width="38em"),
    )


def _live_text(controls: tuple[Any, ...], render: Callable[[], str], css_class: str) -> Any:
    """An HTML line, large enough for a lecture hall, re-rendered whenever a control moves."""
    import ipywidgets as widgets

    line = widgets.HTML()
    line.add_class(css_class)

    def update(_: object = None) -> None:
        line.value = f"<p style='font-size:1.5em;margin:0.4em 0'>{html.escape(render())}</p>"

    for control in controls:
        control.observe(update, names="value")
    update()
    return line


def transfer_time_explorer(nbytes: float = 10e6, bandwidth_bytes_per_s: float = 100e9) -> Any:
    """Two log sliders (size, bandwidth) driving the sentence from :func:`transfer_time_text`.

    Values snap to tenths of a decade, as the sliders do.

    Returns
    -------
    ipywidgets.VBox
        Display it (leave it as a cell's last expression).
    """
    import ipywidgets as widgets

    size = _log_slider(nbytes, 3, 11, "bytes")
    bandwidth = _log_slider(bandwidth_bytes_per_s, 8, 13, "bandwidth (B/s)")
    sentence = _live_text(
        (size, bandwidth),
        lambda: transfer_time_text(size.value, bandwidth.value),
        "perfmodel-transfer-time",
    )
    return widgets.VBox([size, bandwidth, sentence])


# --- lecture 01 ---------------------------------------------------------------------------


def run_time_text(work: float, time_per_work_s: float, parallelism: float) -> str:
    """T = W·t/P in words (the static twin of :func:`run_time_explorer`).

    >>> run_time_text(1e9, 1e-9, 8)
    'T = W·t/P = 1e+09 x 1 ns / 8 = 125 ms'
    """
    from perfmodel.metrics import run_time_s

    seconds = run_time_s(work, time_per_work_s, parallelism)
    return (
        f"T = W·t/P = {work:.3g} x {format_quantity(time_per_work_s, 's')} / {parallelism:g} "
        f"= {format_quantity(seconds, 's')}"
    )


def run_time_explorer(work: float = 1e9, time_per_work_s: float = 1e-9) -> Any:
    """Sliders for W, t and P driving the sentence from :func:`run_time_text`."""
    import ipywidgets as widgets

    w = _log_slider(work, 3, 15, "W (work)")
    t = _log_slider(time_per_work_s, -12, -3, "t (s/work)")
    p = widgets.IntSlider(value=8, min=1, max=1024, description="P (parallel)")
    text = _live_text(
        (w, t, p), lambda: run_time_text(w.value, t.value, p.value), "perfmodel-run-time"
    )
    return widgets.VBox([w, t, p, text])


# --- lecture 02 ---------------------------------------------------------------------------

_METRICS: dict[str, tuple[str, Callable[[Device, str], float]]] = {
    "peak FLOP/s": ("FLOP/s", lambda d, dtype: d.peak_flops(dtype)),
    "memory bandwidth": ("B/s", lambda d, dtype: d.memory_bandwidth),
    "ridge point": ("FLOP/B", lambda d, dtype: d.ridge_point(dtype)),
}


def device_bars(dtype: str = "bf16", metric: str = "peak FLOP/s", ax: Any = None) -> Any:
    """Bars of one metric for every catalogue device with a peak in ``dtype``."""
    from perfmodel.hardware import catalogue
    from perfmodel.plotting import bar_compare

    if metric not in _METRICS:
        raise ValueError(f"`metric` must be one of {', '.join(_METRICS)} (got {metric!r}).")
    unit, read = _METRICS[metric]
    devices = [d for d in catalogue().devices.values() if dtype in d.peak_flops_by_dtype]
    if not devices:
        raise ValueError(f"no catalogue device has a {dtype!r} peak.")
    return bar_compare(
        [d.name for d in devices],
        [read(d, dtype) for d in devices],
        unit=unit,
        title=f"{metric} ({dtype})",
        ax=ax,
    )


def device_explorer() -> Any:
    """Pick a dtype and a metric; compare every device in the catalogue."""
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from perfmodel.hardware import DTYPES

    dtype = widgets.Dropdown(options=DTYPES, value="bf16", description="dtype")
    metric = widgets.ToggleButtons(options=list(_METRICS), description="metric")

    def draw(dtype: str, metric: str) -> None:
        device_bars(dtype, metric)
        plt.show()

    out = widgets.interactive_output(draw, {"dtype": dtype, "metric": metric})
    return widgets.VBox([widgets.HBox([dtype]), metric, out])


# --- lecture 03 ---------------------------------------------------------------------------


def named_op(kind: str, n: int, dtype: str = "fp32") -> Any:
    """A square op of size ``n`` by name, for the explorers."""
    from perfmodel import ops

    makers = {
        "vector add": lambda: ops.elementwise(n * n, inputs=2, dtype=dtype, label="vector add"),
        "matvec": lambda: ops.matvec(n, n, dtype=dtype),
        "matmul": lambda: ops.matmul(n, n, n, dtype=dtype),
        "softmax": lambda: ops.softmax(n, n, dtype=dtype),
        "attention": lambda: ops.attention(1, 1, n, 128, dtype=dtype),
        "attention (fused)": lambda: ops.attention(1, 1, n, 128, fused=True, dtype=dtype),
    }
    if kind not in makers:
        raise ValueError(f"`kind` must be one of {', '.join(makers)} (got {kind!r}).")
    return makers[kind]()


OP_KINDS = ("vector add", "matvec", "matmul", "softmax", "attention", "attention (fused)")


def op_summary(kind: str, n: int, dtype: str = "fp32") -> str:
    """FLOPs, bytes and intensity of a named op (the static twin of :func:`op_explorer`).

    >>> print(op_summary("matmul", 512))
    matmul 512x512x512 (fp32): 268 MFLOP, 3.15 MB moved, intensity 85.3 FLOP/B
    """
    cost = named_op(kind, n, dtype)
    return (
        f"{cost.label} ({dtype}): {format_quantity(cost.flops, 'FLOP')}, "
        f"{format_quantity(cost.bytes, 'B')} moved, intensity {cost.intensity:.3g} FLOP/B"
    )


def op_explorer() -> Any:
    """Choose an op, its size and dtype; read its FLOPs, bytes and intensity."""
    import ipywidgets as widgets

    from perfmodel.hardware import DTYPES

    kind = widgets.Dropdown(options=OP_KINDS, value="matmul", description="op")
    size = widgets.IntSlider(value=512, min=16, max=8192, step=16, description="size n")
    dtype = widgets.Dropdown(options=DTYPES, value="fp32", description="dtype")
    text = _live_text(
        (kind, size, dtype),
        lambda: op_summary(kind.value, size.value, dtype.value),
        "perfmodel-op-summary",
    )
    return widgets.VBox([widgets.HBox([kind, dtype]), size, text])


# --- lecture 04 ---------------------------------------------------------------------------


def roofline_view(device: str, compare: str | None, dtype: str, n: int) -> Any:
    """The roofline of ``device`` (and ``compare``) with a matvec and a matmul of size n."""
    from perfmodel.plotting import roofline_plot

    ops_ = [named_op("matvec", n, dtype), named_op("matmul", n, dtype)]
    return roofline_plot(device, dtypes=[dtype], ops=ops_, compare=compare)


def roofline_explorer(device: str = "H100 SXM", compare: str = "A100 SXM4 80GB") -> Any:
    """Pick devices, a dtype and a size; see where a matvec and a matmul land."""
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from perfmodel.hardware import names

    first = widgets.Dropdown(options=names(), value=device, description="device")
    second = widgets.Dropdown(options=["(none)", *names()], value=compare, description="compare")
    dtype = widgets.Dropdown(
        options=["fp32", "bf16", "fp8", "int8"], value="bf16", description="dtype"
    )
    size = widgets.IntSlider(value=1024, min=64, max=16384, step=64, description="size n")

    def draw(device: str, compare: str, dtype: str, n: int) -> None:
        try:
            roofline_view(device, None if compare == "(none)" else compare, dtype, n)
        except ValueError as error:  # a device without this dtype: say so, don't crash
            print(error)
            return
        plt.show()

    out = widgets.interactive_output(
        draw, {"device": first, "compare": second, "dtype": dtype, "n": size}
    )
    return widgets.VBox([widgets.HBox([first, second, dtype]), size, out])


# --- lecture 05 ---------------------------------------------------------------------------


def batch_size_view(width: int = 4096, device: str = "GPU circa 2015", dtype: str = "fp32") -> Any:
    """Intensity and time per sample of an N×N layer against the minibatch size."""
    import matplotlib.pyplot as plt
    import numpy as np

    from perfmodel.hardware import get
    from perfmodel.minibatch import crossover_batch, step_time_s
    from perfmodel.ops import dense_forward
    from perfmodel.plotting import style

    node_ridge = get(device).ridge_point(dtype)
    batches = [2**k for k in range(0, 13)]
    intensity = [dense_forward(m, width, width, dtype=dtype).intensity for m in batches]
    per_sample = [step_time_s(width, m, device, dtype) / m for m in batches]
    with style():
        fig, (left, right) = plt.subplots(1, 2, figsize=(13, 5), layout="constrained")
        left.plot(batches, intensity, "o-", label="layer intensity")
        left.axhline(node_ridge, color="#d1495b", linestyle="--", label=f"ridge {node_ridge:.3g}")
        crossover = crossover_batch(width, device, dtype)
        if np.isfinite(crossover):
            left.axvline(crossover, color="grey", linestyle=":", label=f"M* = {crossover:.3g}")
        left.set(
            xscale="log",
            yscale="log",
            xlabel="minibatch M",
            ylabel="FLOP / byte",
            title=f"{width}x{width} layer, {dtype}",
        )
        left.legend()
        right.plot(batches, per_sample, "o-", color="#2e933c")
        right.set(
            xscale="log",
            yscale="log",
            xlabel="minibatch M",
            ylabel="seconds per sample",
            title=f"time per sample on {device}",
        )
    return fig


def batch_size_explorer() -> Any:
    """Layer width, device and dtype sliders for :func:`batch_size_view`."""
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from perfmodel.hardware import names

    width = widgets.IntSlider(value=4096, min=256, max=16384, step=256, description="width N")
    device = widgets.Dropdown(options=names(), value="GPU circa 2015", description="device")
    dtype = widgets.Dropdown(options=["fp32", "bf16"], value="fp32", description="dtype")

    def draw(width: int, device: str, dtype: str) -> None:
        try:
            batch_size_view(width, device, dtype)
        except ValueError as error:
            print(error)
            return
        plt.show()

    out = widgets.interactive_output(draw, {"width": width, "device": device, "dtype": dtype})
    return widgets.VBox([widgets.HBox([device, dtype]), width, out])


# --- lecture 10 ---------------------------------------------------------------------------

#: Models the partition explorer offers: menu name -> (``pipeline_zoo`` builder, its options).
ZOO_MODELS: dict[str, tuple[str, dict[str, int]]] = {
    "GPT-2 small": ("gpt2_like", {}),
    "ResNet-50": ("resnet50_like", {}),
    "Inception-style": ("inception_like", {}),
    "MLP, 16 layers": ("mlp", {"layers": 16}),
}


def partition_view(
    model: str = "GPT-2 small", device: str = "H100 SXM", link: str = "NVLink 4", k: int = 8
) -> Any:
    """The best split of a zoo model into at most ``k`` stages, as stage bars with the gap."""
    from perfmodel import pipeline, pipeline_zoo
    from perfmodel.pipeline_plots import stage_bars

    if model not in ZOO_MODELS:
        raise ValueError(f"`model` must be one of {sorted(ZOO_MODELS)} (got {model!r}).")
    builder, options = ZOO_MODELS[model]
    graph = getattr(pipeline_zoo, builder)(device=device, link=link, **options)
    k = min(k, graph.n)
    result = pipeline.partition(graph, k)
    used = len(result.stages)
    title = (
        f"{model} on {device} over {link}: {used} of {k} stages used, "
        f"{result.throughput:,.0f} inputs/s"
    )
    ax = stage_bars(graph, result, title=title)
    return ax.figure


def partition_explorer() -> Any:
    """Model, device, link and stage-count controls for :func:`partition_view`."""
    import ipywidgets as widgets
    import matplotlib.pyplot as plt

    from perfmodel.hardware import link_names, names

    model = widgets.Dropdown(options=list(ZOO_MODELS), value="GPT-2 small", description="model")
    device = widgets.Dropdown(options=names(), value="H100 SXM", description="device")
    link = widgets.Dropdown(options=link_names(), value="NVLink 4", description="link")
    k = widgets.IntSlider(value=8, min=1, max=32, description="stages k")

    def draw(model: str, device: str, link: str, k: int) -> None:
        try:
            partition_view(model, device, link, k)
        except ValueError as error:
            print(error)
            return
        plt.show()

    controls = {"model": model, "device": device, "link": link, "k": k}
    out = widgets.interactive_output(draw, controls)
    return widgets.VBox([widgets.HBox([model, device]), widgets.HBox([link, k]), out])
