"""EfficientNet in ONNX (Tan and Le, "EfficientNet: Rethinking Model Scaling for
Convolutional Neural Networks", 2019): mobile inverted bottlenecks (MBConv) with
squeeze-and-excitation and the SiLU (Swish) activation, written as Sigmoid then Mul; the
defaults are EfficientNet-B0 at 224x224, and the compound-scaling coefficients give the
larger members of the family."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perfmodel._validate import count, fraction, positive
from perfmodel.capstone.builders.graph import GraphBuilder
from perfmodel.capstone.builders.mobilenet import divisible

__all__ = ["efficientnet_b0"]

#: The paper's Table 1 (EfficientNet-B0), one row per MBConv stage: expansion, kernel,
#: output channels, layers, and the first layer's stride.
B0_STAGES = (
    (1, 3, 16, 1, 1),
    (6, 3, 24, 2, 2),
    (6, 5, 40, 2, 2),
    (6, 3, 80, 3, 2),
    (6, 5, 112, 3, 1),
    (6, 5, 192, 4, 2),
    (6, 3, 320, 1, 1),
)


def _stages(stages: object) -> list[tuple[int, int, int, int, int]]:
    """``stages`` checked: a non-empty sequence of (expansion, kernel, channels, layers,
    stride) rows of counts, the kernel odd and the stride 1 or 2."""
    if isinstance(stages, (str, bytes)) or not isinstance(stages, Sequence):
        raise TypeError(
            f"`stages` must be a sequence of (expansion, kernel, channels, layers, stride) rows "
            f"(got {type(stages).__name__})."
        )
    rows = []
    for row in stages:
        if isinstance(row, (str, bytes)) or not isinstance(row, Sequence) or len(row) != 5:
            raise TypeError(
                f"`stages` rows must be (expansion, kernel, channels, layers, stride), five "
                f"counts (got {row!r})."
            )
        t, k, c, n, s = (count("stages", value) for value in row)
        if k % 2 == 0:
            raise ValueError(f"`stages` kernels must be odd, to keep the size (got {k}).")
        if s > 2:
            raise ValueError(f"`stages` strides must be 1 or 2 (got {s}).")
        rows.append((t, k, c, n, s))
    if not rows:
        raise ValueError("`stages` must have at least one row (got none).")
    return rows


def efficientnet_b0(
    *,
    batch: int = 1,
    image: int = 224,
    width_coefficient: float = 1.0,
    depth_coefficient: float = 1.0,
    stages: Sequence[Sequence[int]] = B0_STAGES,
    stem: int = 32,
    head: int = 1280,
    se_ratio: float = 0.25,
    classes: int = 1000,
    weights: bool = True,
    seed: int = 0,
) -> Any:
    """EfficientNet (Tan and Le); the defaults are EfficientNet-B0: 5.3M parameters, 0.39G
    multiply-adds at 224x224.

    Stem: a 3x3 stride-2 convolution to ``stem`` channels, batch norm, SiLU. Then one stage
    per row ``(t, k, c, n, s)`` of ``stages`` (the paper's Table 1): ``n`` MBConv blocks
    with ``c`` output channels, the first striding by ``s``. A block widens its input ``t``
    times with a 1x1 convolution (left out when ``t`` is 1), batch norm and SiLU; filters
    each channel with a ``k`` x ``k`` depthwise convolution, batch norm and SiLU; scales its
    channels by squeeze-and-excitation (global average pool, a 1x1 convolution down to
    ``se_ratio`` of the block's input channels, SiLU, a 1x1 convolution back, Sigmoid, Mul);
    then projects to ``c`` channels with a 1x1 convolution and batch norm. A block that
    keeps its shape adds its input (stochastic depth is the identity in eval mode). Then a
    1x1 convolution to ``head`` channels, batch norm, SiLU, a global average pool and a
    fully connected layer. SiLU is Sigmoid then Mul, batch norm its own node and dropout
    left out, as an export in eval mode writes them.

    Compound scaling: ``width_coefficient`` scales ``stem``, ``head`` and every ``c``, each
    rounded to a multiple of 8; ``depth_coefficient`` scales every ``n``, rounded up
    (B1 is ``depth_coefficient=1.1, image=240``; B3 is ``1.2, 1.4, 300``).

    Parameters
    ----------
    batch : int
        Images in the input, count.
    image : int
        Height and width of the square input images, count of pixels.
    width_coefficient : float
        The paper's width coefficient w, dimensionless and positive.
    depth_coefficient : float
        The paper's depth coefficient d, dimensionless and positive.
    stages : sequence of (int, int, int, int, int)
        One row per stage: expansion factor t, depthwise kernel k (odd), output channels c,
        layers n, and the first layer's stride s (1 or 2); counts.
    stem : int
        Channels of the first convolution before width scaling, count.
    head : int
        Channels of the last 1x1 convolution before width scaling, count.
    se_ratio : float
        Squeeze-and-excitation width as a fraction of each block's input channels, fraction
        (at least one channel).
    classes : int
        Outputs of the last layer, count.
    weights : bool
        Write random weights; False gives their shapes only (see the package notes). Batch
        norm's running variances (ones) are written either way.
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
        If an argument has the wrong type, or a row of ``stages`` is not five counts.
    ValueError
        If a count is below 1, a coefficient is not positive, ``se_ratio`` is not in
        (0, 1], ``stages`` is empty, a kernel is even or a stride is above 2.

    Examples
    --------
    >>> from perfmodel.capstone import import_onnx
    >>> model = import_onnx(efficientnet_b0(weights=False))
    >>> model.parameters  # torchvision's 5,288,548 plus batch norm's running statistics
    5330564
    >>> conv = sum(n.cost.flops for n in model.nodes if n.op_class in ("conv", "matmul"))
    >>> round(conv / 2 / 1e6)  # million multiply-adds; the paper says 390
    386
    """
    from onnx import TensorProto, helper

    batch, image, classes = count("batch", batch), count("image", image), count("classes", classes)
    width = positive("width_coefficient", width_coefficient)
    depth = positive("depth_coefficient", depth_coefficient)
    stem, head = count("stem", stem), count("head", head)
    se_ratio = fraction("se_ratio", se_ratio)
    rows = _stages(stages)
    g = GraphBuilder("efficientnet", weights=weights, seed=seed)

    def silu(x: str, name: str) -> str:
        return g.add("Mul", [x, g.add("Sigmoid", [x], f"{name}_sigmoid")], name)

    def conv_bn(
        x: str, name: str, c_in: int, c_out: int, k: int, stride: int, groups: int, act: bool
    ) -> str:
        y = g.conv_bn(x, name, c_in, c_out, k, stride=stride, groups=groups)
        return silu(y, f"{name}_silu") if act else y

    def squeeze_excite(x: str, name: str, channels: int, squeezed: int) -> str:
        s = g.add("GlobalAveragePool", [x], f"{name}.avgpool")
        for fc, (c_in, c_out) in enumerate(((channels, squeezed), (squeezed, channels)), 1):
            w = g.weight(f"{name}.fc{fc}.weight", (c_out, c_in, 1, 1))
            b = g.weight(f"{name}.fc{fc}.bias", (c_out,), scale=0.1)
            s = g.add(
                "Conv",
                [s, w, b],
                f"{name}.fc{fc}",
                dilations=[1, 1],
                group=1,
                kernel_shape=[1, 1],
                pads=[0] * 4,
                strides=[1, 1],
            )
            s = silu(s, f"{name}.fc1_silu") if fc == 1 else g.add("Sigmoid", [s], f"{name}.gate")
        return g.add("Mul", [s, x], f"{name}.scale")

    channels = divisible(stem * width)
    x = conv_bn("input", "features.0", 3, channels, 3, 2, 1, act=True)
    index = 1
    for t, k, c, n, s in rows:
        out = divisible(c * width)
        for block in range(math.ceil(n * depth)):
            name, stride, hidden = f"features.{index}", s if block == 0 else 1, channels * t
            y = x
            if t != 1:
                y = conv_bn(y, f"{name}.expand", channels, hidden, 1, 1, 1, act=True)
            y = conv_bn(y, f"{name}.depthwise", hidden, hidden, k, stride, hidden, act=True)
            y = squeeze_excite(y, f"{name}.se", hidden, max(1, int(channels * se_ratio)))
            y = conv_bn(y, f"{name}.project", hidden, out, 1, 1, 1, act=False)
            x = g.add("Add", [y, x], f"{name}.add") if stride == 1 and channels == out else y
            channels, index = out, index + 1
    top = divisible(head * width)
    x = conv_bn(x, f"features.{index}", channels, top, 1, 1, 1, act=True)
    x = g.add("GlobalAveragePool", [x], "avgpool")
    x = g.add("Flatten", [x], "flatten", axis=1)
    fc_w = g.weight("classifier.weight", (classes, top))
    fc_b = g.weight("classifier.bias", (classes,), scale=0.01)
    x = g.add("Gemm", [x, fc_w, fc_b], "classifier", alpha=1.0, beta=1.0, transB=1)
    source = helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, image, image])
    return g.model([source], x, (batch, classes))
