"""Five published architectures the zoo does not build, kept apart to check the capstone's
predictions on models nothing was tuned on: ShuffleNetV2, RegNetY, a DenseNet block stack and
a GRU language model, chosen first; then SqueezeNet 1.1, added after the grouped-convolution
and GRU kinds were made in answer to the RegNet's and the GRU's misses, so that one family
stays one nothing was changed for.

Each keeps its paper's building block and proportions at a size a CPU runs in milliseconds
(smaller images, fewer blocks), as the zoo does:

* **ShuffleNetV2** (Ma et al., *ShuffleNet V2: Practical Guidelines for Efficient CNN
  Architecture Design*, 2018), 0.5x widths (24, 48, 96, 192, 1024): each unit splits its
  channels in two, runs one half through 1x1, depthwise 3x3 and 1x1 convolutions, concatenates
  the halves and shuffles the channels (Reshape, Transpose, Reshape);
* **RegNetY-400MF** (Radosavovic et al., *Designing Network Design Spaces*, 2020): widths 48,
  104, 208, 440, group width 8, bottleneck ratio 1, a squeeze-and-excitation of a quarter of
  the block's input width, one block a stage;
* **DenseNet** (Huang et al., *Densely Connected Convolutional Networks*, 2017), DenseNet-121's
  growth rate 32 and bottleneck 4 x 32: its first two dense blocks (6 and 12 layers), each
  layer's batch norm, ReLU, 1x1 and 3x3 convolutions concatenated onto its input, a transition
  (batch norm, ReLU, 1x1 convolution halving the channels, 2x2 average pool) between them;
* **GRU** language model (Cho et al., 2014; the word-level model of Zaremba et al.'s PTB
  setup): an embedding of 200, two GRU layers of 200, a projection to a 2,000-word vocabulary;
* **SqueezeNet 1.1** (Iandola et al., *SqueezeNet: AlexNet-level accuracy with 50x fewer
  parameters and <0.5MB model size*, 2016; version 1.1 of its repository): a 3x3 stem of 64,
  then eight fire modules (a 1x1 squeeze, then 1x1 and 3x3 expands concatenated; squeezes
  16, 16, 32, 32, 48, 48, 64, 64, each expand four times its squeeze) with max pools after the
  stem and the second and fourth fire, and a 1x1 classifier convolution averaged over the
  image: convolutions with biases and no batch norm at all.

>>> model = shufflenet_v2(batch=1, image=64, weights=False)
>>> model.graph.name, model.graph.node[0].op_type
('shufflenet_v2', 'Conv')
"""

from __future__ import annotations

from typing import Any

from perfmodel._validate import count
from perfmodel.capstone.builders.graph import GraphBuilder

__all__ = ["HELD_OUT", "densenet", "gru", "regnet_y", "shufflenet_v2", "squeezenet"]


def _ints(values: list[int]) -> Any:
    import numpy as np

    return np.array(values, dtype=np.int64)


def _image_input(batch: int, image: int) -> Any:
    from onnx import TensorProto, helper

    return helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, image, image])


def _head(g: GraphBuilder, x: str, width: int, classes: int) -> str:
    pooled = g.add("GlobalAveragePool", [x], "pool")
    flat = g.add("Flatten", [pooled], "flatten", axis=1)
    return g.linear(flat, "classifier", width, classes)


def shufflenet_v2(batch: int = 1, image: int = 128, *, weights: bool = True, seed: int = 0) -> Any:
    """ShuffleNetV2 0.5x, one unit a stage after each downsampling one.

    Parameters
    ----------
    batch : int
        Images, count.
    image : int
        The images' side, count of pixels (a multiple of 32).
    weights : bool
        Write random weights; False writes their shapes only.
    seed : int
        Seed of the weights.

    Returns
    -------
    onnx.ModelProto
        The model: ``input`` (batch, 3, image, image) to ``classifier_bias`` (batch, 1000).
    """
    b, side = count("batch", batch), count("image", image)
    g = GraphBuilder("shufflenet_v2", weights=weights, seed=seed)
    x = g.add("Relu", [g.conv_bn("input", "conv1", 3, 24, 3, stride=2)], "conv1_relu")
    x = g.add("MaxPool", [x], "maxpool", kernel_shape=[3, 3], pads=[1] * 4, strides=[2, 2])
    c_in, hw = 24, side // 4
    for stage, c_out in enumerate((48, 96, 192), start=2):
        half = c_out // 2
        for unit in range(2):
            name = f"stage{stage}.{unit}"
            if unit == 0:  # both branches see the whole input, at stride 2
                left = g.conv_bn(x, f"{name}.left_dw", c_in, c_in, 3, stride=2, groups=c_in)
                left = g.add("Relu", [g.conv_bn(left, f"{name}.left_pw", c_in, half, 1)],
                             f"{name}.left_relu")  # fmt: skip
                right, width, stride = x, c_in, 2
                hw //= 2
            else:
                halves = g.constant(f"{name}.halves", _ints([half, half]))
                left, right = g.add_many("Split", [x, halves], f"{name}.split", 2, axis=1)
                width, stride = half, 1
            y = g.add("Relu", [g.conv_bn(right, f"{name}.pw1", width, half, 1)], f"{name}.relu1")
            y = g.conv_bn(y, f"{name}.dw", half, half, 3, stride=stride, groups=half)
            y = g.add("Relu", [g.conv_bn(y, f"{name}.pw2", half, half, 1)], f"{name}.relu2")
            joined = g.add("Concat", [left, y], f"{name}.concat", axis=1)
            groups = g.constant(f"{name}.groups", _ints([b, 2, half, hw, hw]))
            grouped = g.add("Reshape", [joined, groups], f"{name}.to_groups")
            swapped = g.add("Transpose", [grouped], f"{name}.shuffle", perm=[0, 2, 1, 3, 4])
            flat = g.constant(f"{name}.flat", _ints([b, c_out, hw, hw]))
            x = g.add("Reshape", [swapped, flat], f"{name}.from_groups")
        c_in = c_out
    x = g.add("Relu", [g.conv_bn(x, "conv5", c_in, 1024, 1)], "conv5_relu")
    return g.model([_image_input(b, side)], _head(g, x, 1024, 1000), [b, 1000])


def regnet_y(batch: int = 1, image: int = 128, *, weights: bool = True, seed: int = 0) -> Any:
    """RegNetY-400MF's widths and blocks, one block a stage.

    Parameters
    ----------
    batch : int
        Images in one run, count.
    image : int
        Side of each square image, count of pixels; the stem and four stages each halve it.
    weights : bool
        Seeded random weights (to run it), or False for their shapes alone (to price it).
    seed : int
        The weights' random seed, at least 0.

    Returns
    -------
    onnx.ModelProto
        From ``input`` (batch, 3, image, image) to ``classifier_bias``, 1000 logits an image.
    """
    b, side = count("batch", batch), count("image", image)
    g = GraphBuilder("regnet_y", weights=weights, seed=seed)
    x = g.add("Relu", [g.conv_bn("input", "stem", 3, 32, 3, stride=2)], "stem_relu")
    c_in = 32
    for stage, width in enumerate((48, 104, 208, 440), start=1):
        name = f"s{stage}"
        y = g.add("Relu", [g.conv_bn(x, f"{name}.a", c_in, width, 1)], f"{name}.a_relu")
        y = g.conv_bn(y, f"{name}.b", width, width, 3, stride=2, groups=width // 8)
        y = g.add("Relu", [y], f"{name}.b_relu")
        squeeze = max(1, c_in // 4)  # a quarter of the block's input width
        s = g.add("GlobalAveragePool", [y], f"{name}.se_pool")
        s = g.add("Conv", [s, g.weight(f"{name}.se1.weight", (squeeze, width, 1, 1)),
                  g.weight(f"{name}.se1.bias", (squeeze,), scale=0.01)], f"{name}.se1",
                  kernel_shape=[1, 1])  # fmt: skip
        s = g.add("Relu", [s], f"{name}.se_relu")
        s = g.add("Conv", [s, g.weight(f"{name}.se2.weight", (width, squeeze, 1, 1)),
                  g.weight(f"{name}.se2.bias", (width,), scale=0.01)], f"{name}.se2",
                  kernel_shape=[1, 1])  # fmt: skip
        y = g.add("Mul", [y, g.add("Sigmoid", [s], f"{name}.se_gate")], f"{name}.se_scale")
        y = g.conv_bn(y, f"{name}.c", width, width, 1)
        shortcut = g.conv_bn(x, f"{name}.proj", c_in, width, 1, stride=2)
        x = g.add("Relu", [g.add("Add", [y, shortcut], f"{name}.add")], f"{name}.relu")
        c_in = width
    return g.model([_image_input(b, side)], _head(g, x, c_in, 1000), [b, 1000])


def densenet(batch: int = 1, image: int = 64, *, weights: bool = True, seed: int = 0) -> Any:
    """DenseNet-121's stem and first two dense blocks, with the transition between them.

    Parameters
    ----------
    batch : int
        How many images, count.
    image : int
        The square images' edge, count of pixels: the stem's stride, its pool and the
        transition quarter, halve and halve it again.
    weights : bool
        True writes seeded random weights; False only their shapes, never written.
    seed : int
        Where the random weights start, at least 0.

    Returns
    -------
    onnx.ModelProto
        ``input`` (batch, 3, image, image) in, ``classifier_bias`` (batch, 1000) out.
    """
    b, side = count("batch", batch), count("image", image)
    g = GraphBuilder("densenet", weights=weights, seed=seed)
    growth = 32
    x = g.add("Relu", [g.conv_bn("input", "conv0", 3, 64, 7, stride=2)], "relu0")
    x = g.add("MaxPool", [x], "pool0", kernel_shape=[3, 3], pads=[1] * 4, strides=[2, 2])
    channels = 64
    for block, layers in enumerate((6, 12), start=1):
        for layer in range(layers):
            name = f"block{block}.{layer}"
            y = g.add("Relu", [_bn(g, x, f"{name}.norm1", channels)], f"{name}.relu1")
            y = g.conv_bn(y, f"{name}.conv1", channels, 4 * growth, 1)
            y = g.add("Relu", [y], f"{name}.relu2")
            y = g.add("Conv", [y, g.weight(f"{name}.conv2.weight", (growth, 4 * growth, 3, 3))],
                      f"{name}.conv2", kernel_shape=[3, 3], pads=[1] * 4)  # fmt: skip
            x = g.add("Concat", [x, y], f"{name}.concat", axis=1)
            channels += growth
        if block == 1:  # the transition halves the channels and the size
            y = g.add("Relu", [_bn(g, x, "transition.norm", channels)], "transition.relu")
            y = g.add("Conv", [y, g.weight("transition.conv.weight",
                      (channels // 2, channels, 1, 1))], "transition.conv",
                      kernel_shape=[1, 1])  # fmt: skip
            x = g.add("AveragePool", [y], "transition.pool", kernel_shape=[2, 2], strides=[2, 2])
            channels //= 2
    x = g.add("Relu", [_bn(g, x, "norm5", channels)], "relu5")
    return g.model([_image_input(b, side)], _head(g, x, channels, 1000), [b, 1000])


def _bn(g: GraphBuilder, x: str, name: str, channels: int) -> str:
    """Batch norm alone (DenseNet's pre-activation), as an eval-mode export writes it."""
    import numpy as np

    scale = g.weight(f"{name}.scale", (channels,), scale=1.0)
    shift, mean = (g.weight(f"{name}.{p}", (channels,), scale=0.1) for p in ("bias", "mean"))
    var = g.statistic(f"{name}.var", np.ones(channels, dtype=np.float32))
    return g.add("BatchNormalization", [x, scale, shift, mean, var], name, epsilon=1e-5)


def gru(batch: int = 1, seq_len: int = 35, *, weights: bool = True, seed: int = 0) -> Any:
    """A two-layer GRU language model: embedding, two GRU layers of 200, projection.

    Parameters
    ----------
    batch : int
        Sequences, count.
    seq_len : int
        Tokens a sequence, count.
    weights : bool
        Random weights to run it with, or (False) their shapes to price it by.
    seed : int
        The seed those random weights come from.

    Returns
    -------
    onnx.ModelProto
        The model: ``tokens`` (batch, seq_len) int64 to ``decoder_bias`` (batch, seq_len, 2000).
    """
    from onnx import TensorProto, helper

    b, s = count("batch", batch), count("seq_len", seq_len)
    hidden, vocab = 200, 2000
    g = GraphBuilder("gru", weights=weights, seed=seed)
    x = g.add("Gather", [g.weight("embedding.weight", (vocab, hidden)), "tokens"], "embedding")
    x = g.add("Transpose", [x], "time_major", perm=[1, 0, 2])  # (seq, batch, hidden)
    for layer in range(2):
        name = f"gru{layer}"
        w = g.weight(f"{name}.W", (1, 3 * hidden, hidden))
        r = g.weight(f"{name}.R", (1, 3 * hidden, hidden))
        bias = g.weight(f"{name}.B", (1, 6 * hidden), scale=0.01)
        y, _ = g.add_many("GRU", [x, w, r, bias], name, 2, hidden_size=hidden,
                          linear_before_reset=1)  # fmt: skip
        x = g.add("Squeeze", [y, g.constant(f"{name}.axis", _ints([1]))], f"{name}.squeeze")
    x = g.add("Transpose", [x], "batch_major", perm=[1, 0, 2])
    logits = g.linear(x, "decoder", hidden, vocab)
    tokens = helper.make_tensor_value_info("tokens", TensorProto.INT64, [b, s])
    return g.model([tokens], logits, [b, s, vocab])


def squeezenet(batch: int = 1, image: int = 128, *, weights: bool = True, seed: int = 0) -> Any:
    """SqueezeNet 1.1 whole: its stem, eight fire modules and convolutional classifier.

    Parameters
    ----------
    batch : int
        Images in one run, count.
    image : int
        Side of each square image, count of pixels; the stem and three pools each halve it
        (rounding up, as the paper's pools do).
    weights : bool
        Seeded random weights (to run it), or False for their shapes alone (to price it).
    seed : int
        The weights' random seed, at least 0.

    Returns
    -------
    onnx.ModelProto
        From ``input`` (batch, 3, image, image) to ``scores``, 1000 an image.

    Raises
    ------
    ValueError
        If ``image`` is under 32 pixels: the stem and three pools leave nothing to pool.
    """
    b, side = count("batch", batch), count("image", image)
    if side < 32:
        raise ValueError(f"`image` must be at least 32 pixels (got image={side}).")
    g = GraphBuilder("squeezenet", weights=weights, seed=seed)

    def conv(x: str, name: str, c_in: int, c_out: int, k: int, stride: int = 1) -> str:
        w = g.weight(f"{name}.weight", (c_out, c_in, k, k))
        bias = g.weight(f"{name}.bias", (c_out,), scale=0.01)
        pad = 0 if stride > 1 else k // 2  # the stem is unpadded: 224 -> 111
        y = g.add("Conv", [x, w, bias], name, kernel_shape=[k, k], pads=[pad] * 4,
                  strides=[stride, stride])  # fmt: skip
        return g.add("Relu", [y], f"{name}.relu")

    def pool(x: str, name: str) -> str:
        return g.add("MaxPool", [x], name, kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)

    x = pool(conv("input", "features.0", 3, 64, 3, stride=2), "pool1")
    channels = 64
    for index, squeeze in enumerate((16, 16, 32, 32, 48, 48, 64, 64), start=2):
        name = f"fire{index}"
        s = conv(x, f"{name}.squeeze", channels, squeeze, 1)
        left = conv(s, f"{name}.expand1x1", squeeze, 4 * squeeze, 1)
        right = conv(s, f"{name}.expand3x3", squeeze, 4 * squeeze, 3)
        x = g.add("Concat", [left, right], f"{name}.concat", axis=1)
        channels = 8 * squeeze
        if index in (3, 5):
            x = pool(x, f"pool{index}")
    x = conv(x, "classifier", channels, 1000, 1)
    pooled = g.add("GlobalAveragePool", [x], "pool")
    scores = g.add("Flatten", [pooled], "scores", axis=1)
    return g.model([_image_input(b, side)], scores, [b, 1000])


#: The held-out families: name to (builder, size arguments), as :data:`~perfmodel.capstone.ZOO`.
HELD_OUT = {
    "ShuffleNetV2": (shufflenet_v2, {"image": 128}),
    "RegNetY-400MF": (regnet_y, {"image": 128}),
    "DenseNet blocks": (densenet, {"image": 64}),
    "GRU": (gru, {"seq_len": 35}),
    "SqueezeNet 1.1": (squeezenet, {"image": 128}),
}
