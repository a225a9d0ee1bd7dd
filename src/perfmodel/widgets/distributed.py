"""Lecture 09: a data-parallel step explorer, time and memory side by side.

Pick a model, the batch each device trains on, how many devices, which GPU and network,
whether gradients overlap the backward pass and in how many buckets, and how much of the
model states ZeRO shards. The left panel prices the step at 1, 8, 64... devices up to the
chosen count (compute and the communication left exposed, efficiency on top); the right
panel is one device's memory against its capacity.
"""

from __future__ import annotations

from typing import Any

from perfmodel._validate import choice
from perfmodel.widgets.controls import int_slider, live_plot, view_settings

__all__ = ["data_parallel_explorer", "data_parallel_view"]

GPUS = ("H100 SXM", "H800 SXM", "H200 SXM", "A100 SXM4 80GB")
NETWORKS = ("InfiniBand NDR", "InfiniBand HDR", "400 GbE", "100 GbE", "10 GbE")
#: Each GPU's NVLink generation, inside an 8-GPU node.
NVLINK = {"H100 SXM": "NVLink 4", "H800 SXM": "NVLink 4 (H800)", "H200 SXM": "NVLink 4",
          "A100 SXM4 80GB": "NVLink 3", "B200": "NVLink 5"}  # fmt: skip


def _device_counts(devices: int) -> list[int]:
    counts = [1]
    while counts[-1] * 8 < devices:
        counts.append(counts[-1] * 8)
    return counts if counts[-1] == devices else [*counts, devices]


def data_parallel_view(
    model: str = "Llama 2 7B",
    batch_per_device: int = 1,
    seq_len: int = 4096,
    devices: int = 512,
    device: str = "H100 SXM",
    network: str = "100 GbE",
    overlap: bool = True,
    buckets: int = 16,
    zero_stage: int = 1,
    recompute: str = "full",
) -> Any:
    """The static twin of :func:`data_parallel_explorer`: steps at growing device counts
    (8 GPUs per node, NVLink inside) and one device's memory.

    Parameters
    ----------
    model : str
        A :data:`perfmodel.transformer.PRESETS` name: the model's shape.
    batch_per_device : int
        Sequences each device trains on per step, count.
    seq_len : int
        Tokens per sequence, count.
    devices : int
        The largest data-parallel group priced, count: steps are drawn at 1, 8, 64... up
        to it (and at it).
    device : str
        The GPU, one with an NVLink generation here: ``"H100 SXM"``, ``"H800 SXM"``,
        ``"H200 SXM"``, ``"A100 SXM4 80GB"`` or ``"B200"``.
    network : str
        A catalogue link between nodes, e.g. ``"InfiniBand NDR"`` or ``"100 GbE"``.
    overlap : bool
        Whether each bucket's all-reduce starts as soon as its gradients exist.
    buckets : int
        Equal pieces the gradients are all-reduced in, count.
    zero_stage : int
        ZeRO sharding of the model states, 0 to 3.
    recompute : str
        Activation recomputation: ``"none"``, ``"selective"`` or ``"full"``.

    Returns
    -------
    matplotlib.figure.Figure
        A new 15 x 6.5 inch figure: left, the step at each device count (forward,
        backward, communication not hidden, efficiency on top, see
        :func:`perfmodel.plotting.distributed.step_plot`); right, one device's memory at the
        largest count against its capacity; the title gives tokens a step, the step time,
        the efficiency and whether the memory fits.

    Raises
    ------
    TypeError
        If ``device`` is not a string.
    ValueError
        If ``device`` is not one of the GPUs above (their NVLink is known here); the
        message lists them.
    """
    import matplotlib.pyplot as plt

    from perfmodel.distributed import data_parallel_step
    from perfmodel.hardware import get
    from perfmodel.plotting import style
    from perfmodel.plotting.distributed import memory_plot, step_plot
    from perfmodel.transformer import preset

    device = choice("device", device, tuple(NVLINK))
    shape = preset(model)
    steps = []
    for n in _device_counts(devices):
        per_node = 8 if n % 8 == 0 else 1
        steps.append(data_parallel_step(
            shape, batch_per_device=batch_per_device, seq_len=seq_len, devices=n, device=device,
            link=network, overlap=overlap, buckets=buckets, gpus_per_node=per_node,
            intra_link=NVLINK[device], zero_stage=zero_stage, recompute=recompute,
        ))  # fmt: skip
    last = steps[-1]
    with style():
        figure, (left, right) = plt.subplots(1, 2, figsize=(15, 6.5), layout="constrained",
                                             width_ratios=(3, 1))  # fmt: skip
    step_plot(steps, ax=left)
    memory_plot(last.memory, get(device).memory_capacity, ax=right)
    tokens = batch_per_device * seq_len * devices
    verdict = "fits" if last.memory.fits(device) else "does NOT fit"
    figure.suptitle(
        f"{model} on {devices} x {device} over {network}: {tokens / 1e6:.3g}M tokens a step, "
        f"{last.step_s * 1e3:.0f} ms, efficiency {last.efficiency:.0%}; memory {verdict}",
        fontsize=15,
    )
    return figure


def data_parallel_explorer(**defaults: Any) -> Any:
    """Every knob of :func:`data_parallel_view` as a control; the figure redraws live.

    Parameters
    ----------
    **defaults
        Starting settings, by :func:`data_parallel_view`'s parameter names (a name it does
        not take is a TypeError); each must be one the control offers (``devices`` one of
        8, 64, 512, 4096, 32768; ``seq_len`` one of 1024, 2048, 4096, 8192; ``device``
        one of H100 SXM, H800 SXM, H200 SXM, A100 SXM4 80GB).

    Returns
    -------
    ipywidgets.VBox
        A control per setting (dropdowns, sliders and a checkbox), above
        :func:`data_parallel_view`'s figure, redrawn when a control changes.
    """
    import ipywidgets as widgets

    from perfmodel.transformer import PRESETS

    wide = {"layout": widgets.Layout(width="38em"), "style": {"description_width": "8em"}}
    view = view_settings(data_parallel_view, defaults)
    controls = {
        "model": widgets.Dropdown(options=list(PRESETS), value=view["model"],
                                  description="model", **wide),
        "batch_per_device": int_slider(view["batch_per_device"], 1, 32, "batch / device"),
        "seq_len": widgets.Dropdown(options=[1024, 2048, 4096, 8192], value=view["seq_len"],
                                    description="sequence", **wide),
        "devices": widgets.Dropdown(options=[8, 64, 512, 4096, 32768], value=view["devices"],
                                    description="devices", **wide),
        "device": widgets.Dropdown(options=list(GPUS), value=view["device"],
                                   description="GPU", **wide),
        "network": widgets.Dropdown(options=list(NETWORKS), value=view["network"],
                                    description="network", **wide),
        "overlap": widgets.Checkbox(value=view["overlap"], description="overlap backward"),
        "buckets": int_slider(view["buckets"], 1, 128, "buckets"),
        "zero_stage": int_slider(view["zero_stage"], 0, 3, "ZeRO stage"),
        "recompute": widgets.Dropdown(options=["none", "selective", "full"],
                                      value=view["recompute"], description="recompute", **wide),
    }  # fmt: skip
    out = live_plot(data_parallel_view, controls)
    return widgets.VBox([*controls.values(), out])
