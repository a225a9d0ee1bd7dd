"""MobileNetV2 in ONNX (Sandler, Howard, Zhu, Zhmoginov and Chen, "MobileNetV2: Inverted
Residuals and Linear Bottlenecks", 2018): inverted residual blocks of a 1x1 expansion, a
3x3 depthwise convolution and a linear 1x1 projection, ReLU6 written as Clip(0, 6); the
defaults are the paper's network at width multiplier 1.0 and 224x224 input."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from perfmodel._validate import count, positive
from perfmodel.capstone.builders.graph import GraphBuilder

__all__ = ["divisible", "mobilenet_v2"]

#: The paper's Table 2, one row per stage: expansion t, output channels c, blocks n and
#: the first block's stride s.
PAPER_STAGES = (
    (1, 16, 1, 1),
    (6, 24, 2, 2),
    (6, 32, 3, 2),
    (6, 64, 4, 2),
    (6, 96, 3, 1),
    (6, 160, 3, 2),
    (6, 320, 1, 1),
)


def divisible(channels: float, divisor: int = 8) -> int:
    """Channels rounded to the nearest multiple of ``divisor`` (never down by more than
    10 %, never below ``divisor``), as the reference implementations round a width times
    its multiplier (EfficientNet's builder rounds the same way).

    Parameters
    ----------
    channels : float
        A stage's width times its multiplier, count.
    divisor : int
        What the width must be a multiple of, count.

    Returns
    -------
    int
        The rounded width, count.
    """
    rounded = max(divisor, int(channels + divisor / 2) // divisor * divisor)
    return rounded + divisor if rounded < 0.9 * channels else rounded


def _stages(stages: object) -> list[tuple[int, int, int, int]]:
    """``stages`` checked: a non-empty sequence of (t, c, n, s) rows of counts, s 1 or 2."""
    if isinstance(stages, (str, bytes)) or not isinstance(stages, Sequence):
        raise TypeError(
            f"`stages` must be a sequence of (t, c, n, s) rows (got {type(stages).__name__})."
        )
    rows = []
    for row in stages:
        if isinstance(row, (str, bytes)) or not isinstance(row, Sequence) or len(row) != 4:
            raise TypeError(f"`stages` rows must be (t, c, n, s), four counts (got {row!r}).")
        t, c, n, s = (count("stages", value) for value in row)
        if s > 2:
            raise ValueError(f"`stages` strides must be 1 or 2 (got {s}).")
        rows.append((t, c, n, s))
    if not rows:
        raise ValueError("`stages` must have at least one row (got none).")
    return rows


def mobilenet_v2(
    *,
    batch: int = 1,
    image: int = 224,
    width_multiplier: float = 1.0,
    stages: Sequence[Sequence[int]] = PAPER_STAGES,
    stem: int = 32,
    last: int = 1280,
    classes: int = 1000,
    weights: bool = True,
    seed: int = 0,
) -> Any:
    """MobileNetV2 (Sandler et al.); the defaults are the paper's network: 3.5M parameters,
    300M multiply-adds at 224x224.

    Stem: a 3x3 stride-2 convolution to ``stem`` channels, batch norm, ReLU6. Then one
    stage per row ``(t, c, n, s)`` of ``stages`` (the paper's Table 2): ``n`` inverted
    residual blocks with ``c`` output channels, the first striding by ``s``. A block widens
    its input ``t`` times with a 1x1 convolution (left out when ``t`` is 1), batch norm and
    ReLU6; filters each channel with a 3x3 depthwise convolution (``group`` equal to the
    channels), batch norm and ReLU6; then projects to ``c`` channels with a 1x1 convolution
    and batch norm, no activation (the linear bottleneck). A block that keeps its shape adds
    its input. Then a 1x1 convolution to ``last`` channels, batch norm, ReLU6, a global
    average pool and a fully connected layer. Batch norm is kept as its own node and dropout
    is left out, as an export in eval mode writes them.

    The width multiplier scales ``stem`` and every ``c`` (and ``last`` when it is above 1),
    each rounded to a multiple of 8 as the reference implementations do.

    Parameters
    ----------
    batch : int
        Images in the input, count.
    image : int
        Height and width of the square input images, count of pixels.
    width_multiplier : float
        The paper's width multiplier, dimensionless and positive (1.0, 0.75, 1.4, ...).
    stages : sequence of (int, int, int, int)
        One row per stage: expansion factor t, output channels c, blocks n, and the first
        block's stride s (1 or 2); counts.
    stem : int
        Channels of the first convolution before the width multiplier, count.
    last : int
        Channels of the last 1x1 convolution before the width multiplier, count.
    classes : int
        Outputs of the last layer, count.
    weights : bool
        Write random weights; False gives their shapes only (see the package notes). Batch
        norm's running variances (ones) and the Clip bounds are written either way.
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
        If an argument has the wrong type, or a row of ``stages`` is not four counts.
    ValueError
        If a count is below 1, ``width_multiplier`` is not positive, ``stages`` is empty
        or a stride is above 2.

    Examples
    --------
    >>> from perfmodel.capstone import import_onnx
    >>> model = import_onnx(mobilenet_v2(weights=False))
    >>> model.parameters  # torchvision's 3,504,872 plus batch norm's running statistics
    3538984
    >>> conv = sum(n.cost.flops for n in model.nodes if n.op_class in ("conv", "matmul"))
    >>> round(conv / 2 / 1e6)  # million multiply-adds; the paper says 300
    301
    """
    import numpy as np
    from onnx import TensorProto, helper

    batch, image, classes = count("batch", batch), count("image", image), count("classes", classes)
    multiplier = positive("width_multiplier", width_multiplier)
    stem, last = count("stem", stem), count("last", last)
    rows = _stages(stages)
    g = GraphBuilder("mobilenet_v2", weights=weights, seed=seed)
    low = g.constant("relu6_min", np.array(0.0, np.float32))
    high = g.constant("relu6_max", np.array(6.0, np.float32))

    def conv_bn(
        x: str, name: str, c_in: int, c_out: int, k: int, stride: int, groups: int, relu6: bool
    ) -> str:
        y = g.conv_bn(x, name, c_in, c_out, k, stride=stride, groups=groups)
        return g.add("Clip", [y, low, high], f"{name}_relu6") if relu6 else y

    channels = divisible(stem * multiplier)
    x = conv_bn("input", "features.0", 3, channels, 3, 2, 1, relu6=True)
    index = 1
    for t, c, n, s in rows:
        out = divisible(c * multiplier)
        for block in range(n):
            name, stride, hidden = f"features.{index}", s if block == 0 else 1, channels * t
            y = x
            if t != 1:
                y = conv_bn(y, f"{name}.expand", channels, hidden, 1, 1, 1, relu6=True)
            y = conv_bn(y, f"{name}.depthwise", hidden, hidden, 3, stride, hidden, relu6=True)
            y = conv_bn(y, f"{name}.project", hidden, out, 1, 1, 1, relu6=False)
            x = g.add("Add", [x, y], f"{name}.add") if stride == 1 and channels == out else y
            channels, index = out, index + 1
    head = divisible(last * max(1.0, multiplier))
    x = conv_bn(x, f"features.{index}", channels, head, 1, 1, 1, relu6=True)
    x = g.add("GlobalAveragePool", [x], "avgpool")
    x = g.add("Flatten", [x], "flatten", axis=1)
    fc_w = g.weight("classifier.weight", (classes, head))
    fc_b = g.weight("classifier.bias", (classes,), scale=0.01)
    x = g.add("Gemm", [x, fc_w, fc_b], "classifier", alpha=1.0, beta=1.0, transB=1)
    source = helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, image, image])
    return g.model([source], x, (batch, classes))
