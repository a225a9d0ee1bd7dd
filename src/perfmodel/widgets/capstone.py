"""Lecture 12: model x device x devices x parallelism, one training step predicted.

Pick a model (priced from its ONNX graph), a GPU from the catalogue, how many devices, and
whether they split the batch (data parallel) or the model (pipeline stages, the rest data
parallel). The left panel is one device's step by op class, each bar labelled with the roof
it sits under; the right panel is the memory each device holds against its capacity. The
title names the step time, the throughput, what the gradient all-reduce costs and whether it
hides, and the bottleneck; a configuration that does not fit gets no step time at all.
"""

from __future__ import annotations

import textwrap
from functools import lru_cache
from typing import Any

from perfmodel._validate import count
from perfmodel.units import format_quantity
from perfmodel.widgets.controls import live_plot, view_settings

__all__ = ["DEVICE_COUNTS", "MODELS", "capstone_explorer", "capstone_view"]

#: The explorer's models: a builder of :mod:`perfmodel.capstone.builders` and its arguments.
MODELS: dict[str, tuple[str, dict[str, Any]]] = {
    "GPT-2 small, 8 x 1024 tokens": ("gpt2", {"batch": 8, "seq_len": 1024}),
    "GPT-2 XL, 1 x 1024 tokens": (
        "gpt2",
        {"batch": 1, "seq_len": 1024, "width": 1600, "layers": 48, "heads": 25},
    ),
    "GPT-2 XL, 8 x 1024 tokens": (
        "gpt2",
        {"batch": 8, "seq_len": 1024, "width": 1600, "layers": 48, "heads": 25},
    ),
    "7B decoder, 8 x 2048 tokens": (
        "gpt2",
        {
            "batch": 8,
            "seq_len": 2048,
            "width": 4096,
            "layers": 32,
            "heads": 32,
            "vocab": 32000,
            "context": 4096,
        },
    ),
    "ResNet-50, 256 images": ("resnet", {"batch": 256}),
    "MLP 784-2048-2048-10, 4096 rows": ("mlp", {"batch": 4096}),
}
GPUS = ("H100 SXM", "A100 SXM4 80GB", "H200 SXM", "B200", "MI300X", "V100 SXM2", "T4")
NETWORKS = ("InfiniBand NDR", "InfiniBand HDR", "400 GbE", "100 GbE")
PARALLELISM = ("data", "pipeline")
#: The most characters in a line of the figure's title: about 860 points of its 1,080 at
#: 15 points, with room for wide letters (a line of "does not fit" ran past both edges).
TITLE_CHARACTERS = 110
#: The device counts the explorer's slider offers.
DEVICE_COUNTS = (1, 2, 4, 8, 16, 32, 64, 256, 1024)
#: The most stages a pipeline gets (one 8-GPU node, NVLink between stages); more devices
#: become data-parallel copies of it on other nodes, their gradients all-reduced over the network.
MAX_STAGES = 8


@lru_cache(maxsize=len(MODELS))
def _model(name: str) -> Any:
    from perfmodel.capstone import builders, import_onnx

    builder, arguments = MODELS[name]
    return import_onnx(getattr(builders, builder)(weights=False, **arguments))


def _intra_link(device: str) -> str:
    """The GPU's NVLink inside an 8-GPU node (lecture 09's table), else PCIe."""
    from perfmodel.widgets.distributed import NVLINK

    return NVLINK.get(device, "PCIe 4.0 x16")


def _dtype(device: str) -> str:
    """bf16 where the GPU has it; fp16 on the V100 and T4, which predate bf16."""
    from perfmodel.hardware import get

    return "bf16" if "bf16" in get(device).peak_flops_by_dtype else "fp16"


def _plural(n: int, word: str) -> str:
    return word if n == 1 else word + ("es" if word.endswith("h") else "s")


def _summary(
    imported: Any, device: str, devices: int, parallelism: str, network: str
) -> tuple[str, float, bool]:
    """The figure's headline (what was priced, the step or why there is none, and what the
    network does), the bytes one device holds, and whether they fit."""
    from perfmodel.capstone import data_parallel, pipeline_parallel, predict_on
    from perfmodel.hardware import get

    capacity = get(device).memory_capacity
    dtype = _dtype(device)
    if parallelism == "data":
        per_node = min(8, devices)
        step = data_parallel(imported, device, devices=devices, link=network, dtype=dtype,
                             gpus_per_node=per_node, intra_link=_intra_link(device))  # fmt: skip
        how, memory, step_s = f"data parallel x{devices}", step.memory_bytes, step.step_s
        rate, efficiency = step.samples_per_s, step.efficiency
        if devices == 1:
            wire = "no all-reduce on one device, so the network is not used"
        else:
            over = network if devices > per_node else _intra_link(device)
            hidden = (
                "hidden under the backward pass"
                if step.exposed_s == 0
                else f"{format_quantity(step.exposed_s, 's')} of it not hidden"
            )
            wire = f"all-reduce {format_quantity(step.allreduce_s, 's')} over {over}, {hidden}"
            if devices <= per_node:
                wire += f"; all {devices} devices sit in one node, so the network is not used"
        bottleneck = step.bottleneck
        if bottleneck == "compute: the step on each device":
            one = predict_on(imported, device, dtype=dtype, training=True)
            bottleneck = f"compute: {one.bottleneck}"
    else:
        stages = min(devices, MAX_STAGES)
        replicas = devices // stages
        microbatches = min(4 * stages, imported.batch)  # a sequence is never split
        plan = pipeline_parallel(imported, device, stages=stages, link=_intra_link(device),
                                 microbatches=microbatches, replicas=replicas,
                                 network=network, dtype=dtype)  # fmt: skip
        how = f"{plan.stages} pipeline stages x {replicas} {_plural(replicas, 'replica')}"
        memory, step_s = max(plan.stage_memory_bytes), plan.step_s
        rate = replicas * imported.batch / plan.step_s
        alone_s = predict_on(imported, device, dtype=dtype, training=True).time_s
        efficiency = alone_s / (plan.step_s * plan.stages)
        wire = (
            "one copy of the pipeline, inside one node, so the network is not used"
            if replicas == 1
            else f"the {replicas} copies all-reduce each stage's gradients over {network} "
            f"after the pipeline drains: {format_quantity(plan.allreduce_s, 's')}"
        )
        pipelined_s = plan.step_s - plan.allreduce_s
        bottleneck = (
            f"network: the copies' all-reduce takes longer than the pipelined batch "
            f"({format_quantity(pipelined_s, 's')})" if plan.allreduce_s > pipelined_s else
            f"pipeline: {microbatches} {_plural(microbatches, 'micro-batch')}, "
            f"bubble {plan.bubble_fraction:.0%}, "
            f"slowest stage {format_quantity(plan.bottleneck_s, 's')}")  # fmt: skip
    fits = capacity is None or memory <= capacity
    if not fits:
        instead = "split the model (pipeline)" if parallelism == "data" else "more stages"
        return (
            f"{how}: does not fit ({memory / 1e9:.0f} GB a device, {capacity / 1e9:.0f} GB "  # type: ignore[operator]
            f"available), so no step time: {instead}",
            memory,
            False,
        )
    return (
        f"{how}: step {format_quantity(step_s, 's')}, {rate:,.0f} samples/s, efficiency "
        f"{efficiency:.0%}\n{wire}\nbottleneck: {bottleneck}",
        memory,
        True,
    )


def capstone_view(
    model: str = "GPT-2 XL, 1 x 1024 tokens",
    device: str = "H100 SXM",
    devices: int = 64,
    parallelism: str = "data",
    network: str = "100 GbE",
) -> Any:
    """The static twin of :func:`capstone_explorer`.

    A configuration whose memory does not fit gets no step time: the headline says by how
    much it misses instead. Every control changes the headline, or the headline says why
    it cannot (the network, when every device sits in one node).

    Parameters
    ----------
    model : str
        A key of :data:`MODELS`: the model and batch priced.
    device : str
        A catalogue GPU (the explorer offers the H100 SXM, A100 SXM4 80GB, H200 SXM, B200,
        MI300X, V100 SXM2 and T4); priced in bf16 where it has a bf16 peak, else fp16.
    devices : int
        How many GPUs share the step, count; up to 8 share a node and its NVLink (PCIe for
        a GPU without one in lecture 09's table).
    parallelism : str
        ``"data"`` (each device holds the whole model and a share of the batch) or
        ``"pipeline"`` (up to 8 pipeline stages in a node, further devices data-parallel
        copies of the pipeline).
    network : str
        The link between nodes: ``"InfiniBand NDR"``, ``"InfiniBand HDR"``, ``"400 GbE"`` or
        ``"100 GbE"``.

    Returns
    -------
    matplotlib.figure.Figure
        A new 15 x 7 inch figure: left, one device's predicted training step by op class
        (bars coloured by the roof each sits under); right, the memory one device holds
        (GB) against its capacity; the title gives the step time, throughput and efficiency,
        what the network does, and the bottleneck, or why the configuration does not fit.
    """
    import matplotlib.pyplot as plt

    from perfmodel._validate import choice
    from perfmodel.capstone import predict_on
    from perfmodel.hardware import get
    from perfmodel.plotting import COLOURS, si_formatter, style

    model = choice("model", model, tuple(MODELS))
    parallelism = choice("parallelism", parallelism, PARALLELISM)
    network = choice("network", network, NETWORKS)
    imported = _model(model)
    one = predict_on(imported, device, dtype=_dtype(device), training=True)
    capacity = get(device).memory_capacity
    headline, memory, fits = _summary(imported, device, devices, parallelism, network)
    times = one.by_class()
    bounds = one.bound_by_class()
    with style():
        figure, (left, right) = plt.subplots(
            1, 2, figsize=(15, 7), layout="constrained", width_ratios=(3, 1)
        )
        names = list(times)
        left.barh(
            names,
            [times[n] for n in names],
            color=[COLOURS[0] if bounds[n] == "compute" else COLOURS[1] for n in names],
        )
        for name in names:
            left.annotate(f" {bounds[name]}", (times[name], name), va="center", fontsize=13)
        left.invert_yaxis()
        left.set_xlim(0, max(times.values()) * 1.35)
        left.xaxis.set_major_formatter(si_formatter("s"))
        left.set(
            xlabel="one device's training step by op class "
            "(blue: compute-bound, red: memory-bound)",
            title=f"{one.device.name}, {_dtype(device)}: "
            f"{format_quantity(one.time_s, 's')} a step on one device",
        )
        right.bar([0], [memory / 1e9], color=COLOURS[2] if fits else COLOURS[1], width=0.6)
        if capacity is not None:
            right.axhline(
                capacity / 1e9,
                color="black",
                linestyle="--",
                label=f"capacity {capacity / 1e9:.0f} GB",
            )
            right.legend(loc="upper center", fontsize=12)
        right.set(
            xticks=[],
            ylabel="GB per device",
            ylim=(0, max(memory, capacity or 0) / 1e9 * 1.3),
            title="fits" if fits else "does NOT fit",
        )
    lines = f"{model} on {devices} x {device}, {headline}".split("\n")
    # wrapped to the figure's width: a configuration that does not fit says why at length
    title = "\n".join(textwrap.fill(line, TITLE_CHARACTERS) for line in lines)
    figure.suptitle(title, fontsize=15)
    return figure


def capstone_explorer(**defaults: Any) -> Any:
    """Every knob of :func:`capstone_view` as a control; the figure redraws live.

    Parameters
    ----------
    **defaults
        Starting settings, by :func:`capstone_view`'s parameter names (a name it does not
        take is a TypeError); ``devices`` must be one of the slider's
        :data:`DEVICE_COUNTS` (1, 2, 4, 8, 16, 32, 64, 256, 1024) and ``device`` one of the
        dropdown's GPUs.

    Returns
    -------
    ipywidgets.VBox
        Dropdowns for the model, GPU and network, a slider of device counts and toggle
        buttons for the parallelism, above :func:`capstone_view`'s figure, redrawn when a
        control changes.

    Raises
    ------
    TypeError
        If a setting is not one :func:`capstone_view` takes, or ``devices`` is not an
        integer.
    ValueError
        If ``devices`` is not on the slider; the message lists those that are.
    """
    import ipywidgets as widgets

    wide = {"layout": widgets.Layout(width="38em"), "style": {"description_width": "8em"}}
    view = view_settings(capstone_view, defaults)
    devices = count("devices", view["devices"])
    if devices not in DEVICE_COUNTS:
        raise ValueError(
            f"`devices` must be one of the slider's {', '.join(map(str, DEVICE_COUNTS))} "
            f"(got {devices})."
        )
    controls = {
        "model": widgets.Dropdown(
            options=list(MODELS), value=view["model"], description="model", **wide
        ),
        "device": widgets.Dropdown(
            options=list(GPUS), value=view["device"], description="GPU", **wide
        ),
        "devices": widgets.SelectionSlider(
            options=list(DEVICE_COUNTS),
            value=devices,
            description="devices",
            **wide,
        ),
        "parallelism": widgets.ToggleButtons(
            options=list(PARALLELISM),
            value=view["parallelism"],
            description="split the",
            style={"description_width": "8em"},
        ),
        "network": widgets.Dropdown(
            options=list(NETWORKS), value=view["network"], description="network", **wide
        ),
    }
    for name in MODELS:  # imported now, so that no first switch to a model waits for it
        _model(name)
    import perfmodel.pipeline  # noqa: F401  (a pipeline split's partitioner, loaded now too)

    out = live_plot(capstone_view, controls)
    return widgets.VBox([*controls.values(), out])
