"""ResNet in ONNX (He et al., "Deep Residual Learning for Image Recognition", 2015):
bottleneck blocks, batch norm kept as its own node; the defaults are ResNet-50 v1.5."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perfmodel._validate import count
from perfmodel.capstone.builders.graph import GraphBuilder

__all__ = ["resnet"]


def resnet(
    *,
    batch: int = 1,
    image: int = 224,
    blocks: Sequence[int] = (3, 4, 6, 3),
    widths: Sequence[int] = (64, 128, 256, 512),
    classes: int = 1000,
    weights: bool = True,
    seed: int = 0,
) -> Any:
    """A ResNet with bottleneck blocks (He et al.); the defaults are ResNet-50 (v1.5).

    Stem: 7x7 stride-2 convolution, batch norm, Relu, 3x3 stride-2 max pool. Then one stage
    per entry of ``blocks``: that many bottlenecks (1x1, 3x3, 1x1 convolutions, four times
    wider out); the first of each stage has a projection shortcut and, after the first
    stage, strides by 2 in its 3x3 (v1.5). Global average pool, then a fully connected
    layer. Batch norm is kept as its own node, as an export in eval mode writes it.

    Parameters
    ----------
    batch : int
        Images in the input, count.
    image : int
        Height and width of the square input images, count of pixels; at least 32.
    blocks : sequence of int
        Bottleneck blocks in each stage, count.
    widths : sequence of int
        Each stage's inner width (its output is four times wider), count; one per entry of
        ``blocks``.
    classes : int
        Outputs of the last layer, count.
    weights : bool
        Write random weights; False gives their shapes only (see the module notes). Batch
        norm's running variances (ones) are written either way.
    seed : int
        Seed of the random weights, at least 0.

    Returns
    -------
    onnx.ModelProto
        The model, its fp32 input ``(batch, 3, image, image)`` named ``"input"``.
    """
    import numpy as np
    from onnx import TensorProto, helper

    batch, image, classes = count("batch", batch), count("image", image), count("classes", classes)
    blocks = [count("blocks", b) for b in blocks]
    widths = [count("widths", w) for w in widths]
    if len(blocks) != len(widths) or not blocks:
        raise ValueError(
            f"`blocks` and `widths` must give one entry per stage (got {len(blocks)} and "
            f"{len(widths)})."
        )
    if image < 32:
        raise ValueError(
            f"`image` must be at least 32 pixels, for the stem's two halvings (got {image})."
        )
    g = GraphBuilder("resnet", weights=weights, seed=seed)

    def conv_bn(x: str, name: str, c_in: int, c_out: int, k: int, stride: int, relu: bool) -> str:
        w = g.weight(f"{name}.weight", (c_out, c_in, k, k))
        y = g.add(
            "Conv", [x, w], name, kernel_shape=[k, k], strides=[stride, stride], pads=[k // 2] * 4
        )
        params = [
            g.weight(f"{name}_bn.{p}", (c_out,), scale=0.1) for p in ("scale", "bias", "mean")
        ]
        var = g.statistic(f"{name}_bn.var", np.ones(c_out, dtype=np.float32))
        y = g.add("BatchNormalization", [y, *params, var], f"{name}_bn")
        return g.add("Relu", [y], f"{name}_relu") if relu else y

    x = conv_bn("input", "stem", 3, widths[0], 7, 2, relu=True)
    x = g.add("MaxPool", [x], "stem_pool", kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4)
    channels = widths[0]
    for stage, (repeats, width) in enumerate(zip(blocks, widths, strict=True)):
        for block in range(repeats):
            name = f"layer{stage + 1}.{block}"
            stride = 2 if block == 0 and stage > 0 else 1
            y = conv_bn(x, f"{name}.conv1", channels, width, 1, 1, relu=True)
            y = conv_bn(y, f"{name}.conv2", width, width, 3, stride, relu=True)
            y = conv_bn(y, f"{name}.conv3", width, 4 * width, 1, 1, relu=False)
            if block == 0:
                x = conv_bn(x, f"{name}.downsample", channels, 4 * width, 1, stride, relu=False)
            x = g.add("Relu", [g.add("Add", [y, x], f"{name}.add")], f"{name}.relu")
            channels = 4 * width
    x = g.add("GlobalAveragePool", [x], "avgpool")
    x = g.add("Flatten", [x], "flatten")
    fc_w, fc_b = (
        g.weight("fc.weight", (classes, channels)),
        g.weight("fc.bias", (classes,), scale=0.01),
    )
    x = g.add("Gemm", [x, fc_w, fc_b], "fc", transB=1)
    source = helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, image, image])
    return g.model([source], x, (batch, classes))
