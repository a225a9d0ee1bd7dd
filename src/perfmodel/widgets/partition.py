"""Lecture 10: the best pipeline split of a zoo model, for a device, a link and k stages."""

from __future__ import annotations

from typing import Any

from perfmodel.hardware import get, link_names, names
from perfmodel.widgets.controls import int_slider, live_plot

__all__ = ["ZOO_MODELS", "partition_explorer", "partition_view"]

#: Models the partition explorer offers: menu name -> (``pipeline.zoo`` builder, its
#: options, what one input of it is).
ZOO_MODELS: dict[str, tuple[str, dict[str, int], str]] = {
    "GPT-2 small": ("gpt2_like", {}, "sequences"),
    "ResNet-50": ("resnet50_like", {}, "batches"),
    "Inception-style": ("inception_like", {}, "batches"),
    "MLP, 16 layers": ("mlp", {"layers": 16}, "batches"),
}


def partition_view(
    model: str = "GPT-2 small", device: str = "H100 SXM", link: str = "NVLink 4", k: int = 8
) -> Any:
    """The best split of a zoo model into at most ``k`` stages, as stage bars with the gap.

    Parameters
    ----------
    model : str
        A key of :data:`ZOO_MODELS`.
    device : str
        A catalogue device with a bf16 peak: the zoo prices every layer in bf16 on it.
    link : str
        A catalogue link between stages (``"NVLink 4"``, ``"PCIe 4.0 x16"``...).
    k : int
        The most stages, count; more than the graph's nodes is cut down to its nodes.

    Returns
    -------
    matplotlib.figure.Figure
        The figure of :func:`perfmodel.plotting.pipeline.stage_bars` for the split
        :func:`perfmodel.pipeline.partition` finds, titled with the stages used and the
        throughput in inputs per second.
    """
    from perfmodel.pipeline import partition, zoo
    from perfmodel.plotting.pipeline import stage_bars

    if model not in ZOO_MODELS:
        raise ValueError(f"`model` must be one of {sorted(ZOO_MODELS)} (got {model!r}).")
    builder, options, _ = ZOO_MODELS[model]
    graph = getattr(zoo, builder)(device=device, link=link, **options)
    k = min(k, graph.n)
    result = partition(graph, k)
    used = len(result.stages)
    title = (
        f"{model} on {device} over {link}: {used} of {k} stages used,\n"
        f"{result.throughput:,.0f} inputs/s (one input = {graph.input_description})"
    )
    ax = stage_bars(graph, result, title=title)
    return ax.figure


def partition_explorer() -> Any:
    """Model, device, link and stage-count controls for :func:`partition_view`.

    Returns
    -------
    ipywidgets.VBox
        Dropdowns for the model, the device (catalogue devices with a bf16 peak) and the
        link, and a slider for k (1 to 32), above :func:`partition_view`'s figure, redrawn
        when a control changes.
    """
    import ipywidgets as widgets

    model = widgets.Dropdown(options=list(ZOO_MODELS), value="GPT-2 small", description="model")
    # the zoo prices layers in bf16: offer the devices that have it
    priced = [name for name in names() if "bf16" in get(name).peak_flops_by_dtype]
    device = widgets.Dropdown(options=priced, value="H100 SXM", description="device")
    link = widgets.Dropdown(options=link_names(), value="NVLink 4", description="link")
    k = int_slider(8, 1, 32, "stages k")
    controls = {"model": model, "device": device, "link": link, "k": k}
    out = live_plot(partition_view, controls)
    return widgets.VBox([widgets.HBox([model, device]), widgets.HBox([link, k]), out])
