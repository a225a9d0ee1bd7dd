"""ConvNeXt in ONNX (Liu, Mao, Wu, Feichtenhofer, Darrell and Xie, "A ConvNet for the
2020s", 2022): a ResNet modernised stage by stage towards a vision transformer; the
defaults are ConvNeXt-T.

Each block is a 7x7 depthwise convolution (a Conv with ``group`` equal to its channels),
then, channels-last, a layer norm, a linear layer four times wider, the erf GELU, a linear
layer back, and the layer-scale Mul; a Transpose back to channels-first and the residual
Add. The layer norms of the stem and of the downsampling layers normalise over channels
the way ``torch.onnx.export`` writes torchvision's ``LayerNorm2d``: Transpose to
channels-last, LayerNormalization, Transpose back. Stochastic depth acts only in training
and is absent from an export in eval mode, as here.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perfmodel._validate import count, sequence
from perfmodel.capstone.builders.graph import GraphBuilder

__all__ = ["convnext_t"]

_CHANNELS_LAST = [0, 2, 3, 1]
_CHANNELS_FIRST = [0, 3, 1, 2]


def _counts(name: str, values: object) -> list[int]:
    """``values`` as a list of positive integers, one per stage."""
    given = sequence(name, values, "integers, one per stage")
    return [count(name, value) for value in given]


def convnext_t(
    *,
    batch: int = 1,
    image: int = 224,
    depths: Sequence[int] = (3, 3, 9, 3),
    widths: Sequence[int] = (96, 192, 384, 768),
    kernel: int = 7,
    classes: int = 1000,
    weights: bool = True,
    seed: int = 0,
) -> Any:
    """A ConvNeXt (Liu et al.); the defaults are ConvNeXt-T (28.6M parameters).

    Stem: a 4x4 convolution of stride 4 ("patchify") and a layer norm over channels. Then
    one stage per entry of ``depths``: that many ConvNeXt blocks (depthwise ``kernel`` x
    ``kernel`` convolution, layer norm, linear to four times the width, GELU, linear back,
    layer scale, residual add); every stage but the first opens with a layer norm and a
    2x2 convolution of stride 2 that doubles the width to the stage's. Head: the mean over
    height and width (ReduceMean), a layer norm and a fully connected layer (Gemm).

    Parameters
    ----------
    batch : int
        Images in the input, count.
    image : int
        Height and width of the square input images, count of pixels; at least 4 for the
        stem, doubled for each stage after the first (32 for four stages).
    depths : sequence of int
        Blocks in each stage, count.
    widths : sequence of int
        Each stage's width (channels), count; one per entry of ``depths``.
    kernel : int
        Height and width of the depthwise convolutions, count of pixels; odd, so that
        padding ``kernel // 2`` keeps the size.
    classes : int
        Outputs of the last layer, count.
    weights : bool
        Write random weights; False gives their shapes only, enough to price the model but
        not to run it. Shapes and the GELU's constants are Constant nodes, written either
        way.
    seed : int
        Seed of the random weights, at least 0.

    Returns
    -------
    onnx.ModelProto
        The model, its fp32 input ``(batch, 3, image, image)`` named ``"input"`` and its
        output the logits, ``(batch, classes)``.

    Raises
    ------
    TypeError
        If an argument has the wrong type (its name is in the message).
    ValueError
        If ``depths`` and ``widths`` differ in length, ``kernel`` is even or ``image`` is
        too small for the stages.

    Examples
    --------
    >>> from perfmodel.capstone import import_onnx
    >>> model = import_onnx(convnext_t(weights=False))  # ConvNeXt-T at 224 x 224
    >>> model.parameters
    28589128
    >>> round(sum(n.cost.flops for n in model.nodes if n.op_class in ("conv", "matmul")) / 2e9, 2)
    4.46
    """
    import numpy as np
    from onnx import TensorProto, helper

    batch, image, classes = count("batch", batch), count("image", image), count("classes", classes)
    kernel = count("kernel", kernel)
    depths, widths = _counts("depths", depths), _counts("widths", widths)
    if len(depths) != len(widths) or not depths:
        raise ValueError(
            f"`depths` and `widths` must give one entry per stage (got {len(depths)} and "
            f"{len(widths)})."
        )
    if kernel % 2 == 0:
        raise ValueError(f"`kernel` must be odd, so that padding keeps the size (got {kernel}).")
    smallest = 4 * 2 ** (len(depths) - 1)
    if image < smallest:
        raise ValueError(
            f"`image` must be at least {smallest} pixels: the stem divides it by 4 and each "
            f"of the {len(depths) - 1} later stages by 2 (got {image})."
        )
    g = GraphBuilder("convnext", weights=weights, seed=seed)
    half, one, root2 = (
        g.constant(n, np.array(v, np.float32))
        for n, v in (("half", 0.5), ("one", 1.0), ("sqrt2", math.sqrt(2)))
    )

    def layer_norm(x: str, name: str, channels: int) -> str:
        return g.layer_norm(x, name, channels, epsilon=1e-6)

    def layer_norm_2d(x: str, name: str, channels: int) -> str:
        x = g.add("Transpose", [x], f"{name}.to_last", perm=_CHANNELS_LAST)
        x = layer_norm(x, name, channels)
        return g.add("Transpose", [x], f"{name}.to_first", perm=_CHANNELS_FIRST)

    def conv(x: str, name: str, c_in: int, c_out: int, k: int, stride: int) -> str:
        w = g.weight(f"{name}.weight", (c_out, c_in, k, k))
        b = g.weight(f"{name}.bias", (c_out,), scale=0.01)
        return g.add("Conv", [x, w, b], name, kernel_shape=[k, k], strides=[stride] * 2)

    def gelu(x: str, name: str) -> str:
        erf = g.add("Erf", [g.add("Div", [x, root2], f"{name}_div")], f"{name}_erf")
        return g.add(
            "Mul",
            [g.add("Mul", [x, half], f"{name}_half"), g.add("Add", [erf, one], f"{name}_add")],
            name,
        )

    def block(x: str, name: str, dim: int) -> str:
        w = g.weight(f"{name}.dwconv.weight", (dim, 1, kernel, kernel))
        b = g.weight(f"{name}.dwconv.bias", (dim,), scale=0.01)
        y = g.add(
            "Conv",
            [x, w, b],
            f"{name}.dwconv",
            kernel_shape=[kernel, kernel],
            pads=[kernel // 2] * 4,
            group=dim,
        )
        y = g.add("Transpose", [y], f"{name}.to_last", perm=_CHANNELS_LAST)
        y = layer_norm(y, f"{name}.norm", dim)
        y = gelu(g.linear(y, f"{name}.pwconv1", dim, 4 * dim), f"{name}.act")
        y = g.linear(y, f"{name}.pwconv2", 4 * dim, dim)
        y = g.add("Mul", [y, g.weight(f"{name}.gamma", (dim,), scale=0.1)], f"{name}.layer_scale")
        y = g.add("Transpose", [y], f"{name}.to_first", perm=_CHANNELS_FIRST)
        return g.add("Add", [x, y], f"{name}.residual")

    x = conv("input", "downsample_layers.0.0", 3, widths[0], 4, 4)
    x = layer_norm_2d(x, "downsample_layers.0.1", widths[0])
    for stage, (depth, dim) in enumerate(zip(depths, widths, strict=True)):
        if stage:
            name = f"downsample_layers.{stage}"
            x = layer_norm_2d(x, f"{name}.0", widths[stage - 1])
            x = conv(x, f"{name}.1", widths[stage - 1], dim, 2, 2)
        for i in range(depth):
            x = block(x, f"stages.{stage}.{i}", dim)
    x = g.add("ReduceMean", [x], "mean", axes=[2, 3], keepdims=0)
    x = layer_norm(x, "norm", widths[-1])
    head_w = g.weight("head.weight", (classes, widths[-1]))
    x = g.add("Gemm", [x, head_w, g.weight("head.bias", (classes,), scale=0.01)], "head", transB=1)
    source = helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, image, image])
    return g.model([source], x, (batch, classes))
