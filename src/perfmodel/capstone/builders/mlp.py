"""A multilayer perceptron in ONNX, layer by layer as an export writes it."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perfmodel._validate import count
from perfmodel.capstone.builders.graph import GraphBuilder

__all__ = ["mlp"]


def mlp(
    *,
    batch: int = 64,
    widths: Sequence[int] = (784, 2048, 2048, 10),
    weights: bool = True,
    seed: int = 0,
) -> Any:
    """A multilayer perceptron: MatMul, bias Add and Relu per layer (no Relu after the last).

    Parameters
    ----------
    batch : int
        Rows of the input, count.
    widths : sequence of int
        Input width, then each layer's output width, count; at least two.
    weights : bool
        Write random weights; False gives their shapes only (see the module notes).
    seed : int
        Seed of the random weights, at least 0.

    Returns
    -------
    onnx.ModelProto
        The model, its fp32 input named ``"input"``.
    """
    from onnx import TensorProto, helper

    batch = count("batch", batch)
    widths = [count("widths", w) for w in widths]
    if len(widths) < 2:
        raise ValueError(
            f"`widths` must give an input width and at least one layer (got {widths})."
        )
    g = GraphBuilder("mlp", weights=weights, seed=seed)
    x = "input"
    for i, (fan_in, fan_out) in enumerate(zip(widths, widths[1:], strict=False)):
        x = g.add("MatMul", [x, g.weight(f"fc{i}.weight", (fan_in, fan_out))], f"fc{i}")
        x = g.add("Add", [x, g.weight(f"fc{i}.bias", (fan_out,), scale=0.01)], f"fc{i}_bias")
        if i < len(widths) - 2:
            x = g.add("Relu", [x], f"fc{i}_relu")
    source = helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, widths[0]])
    return g.model([source], x, (batch, widths[-1]))
