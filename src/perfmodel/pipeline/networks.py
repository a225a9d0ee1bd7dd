"""Three published networks, layer by layer, as graphs to partition.

Each follows its paper's layer shapes and connections, one node per layer as a framework
profiles them (a convolution, its batch norm and its ReLU are three nodes unless
``fused=True``), priced by the roofline on a device with each output sent over a link:

* :func:`inception_v3`: Szegedy, Vanhoucke, Ioffe, Shlens and Wojna, "Rethinking the
  Inception Architecture for Computer Vision", CVPR 2016; the inference graph (no
  auxiliary classifier), 23.8 million parameters. Its concatenations are series points,
  so the exact dynamic program (:mod:`perfmodel.pipeline.lattice`) solves it.
* :func:`nasnet_a_mobile`: Zoph, Vasudevan, Shlens and Le, "Learning Transferable
  Architectures for Scalable Image Recognition", CVPR 2018; NASNet-A 4 @ 1056, 5.3 million
  parameters. Every cell reads the two cells before it, so it has no series points and
  astronomically many downsets: the wide graph the bounds must certify.
* :func:`gnmt`: Wu et al., "Google's Neural Machine Translation System", 2016: eight LSTM
  layers of 1,024 units in the encoder (the first bidirectional) and eight in the
  decoder, residual connections from the third layer up, and attention from the first
  decoder layer feeding every decoder layer above it.

>>> g = inception_v3()
>>> g.n, sum(g.params)
(312, 23834568)
"""

from __future__ import annotations

from dataclasses import dataclass

from perfmodel import ops
from perfmodel._validate import count, flag
from perfmodel.hardware import DeviceLike, LinkLike
from perfmodel.pipeline.model import Model, ModelBuilder

__all__ = ["gnmt", "inception_v3", "nasnet_a_mobile"]


@dataclass(frozen=True, slots=True)
class _Tensor:
    """A node's output: which node, and its shape for one input."""

    node: int
    channels: int
    height: int
    width: int


class _Layers:
    """Adds layers to a builder and tracks each output's shape."""

    def __init__(self, builder: ModelBuilder, batch: int, fused: bool) -> None:
        self.b, self.batch, self.fused, self.dtype = builder, batch, fused, builder.dtype

    def _elements(self, channels: int, height: int, width: int) -> int:
        return self.batch * channels * height * width

    def conv(
        self,
        x: _Tensor,
        out: int,
        kernel: int | tuple[int, int],
        *,
        stride: int = 1,
        padding: int | tuple[int, int] = 0,
        groups: int = 1,
        name: str,
    ) -> _Tensor:
        kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
        ph, pw = (padding, padding) if isinstance(padding, int) else padding
        height = (x.height + 2 * ph - kh) // stride + 1
        width = (x.width + 2 * pw - kw) // stride + 1
        cost = ops.conv2d(
            self.batch, x.channels, out, x.height, x.width, (kh, kw),
            stride=stride, padding=(ph, pw), groups=groups, dtype=self.dtype,
        )  # fmt: skip
        reads = (x.node,) if x.node >= 0 else ()  # the image is no node
        params = kh * kw * x.channels // groups * out
        node = self.b.add(
            cost, self._elements(out, height, width), *reads, params=params, label=name
        )
        return _Tensor(node, out, height, width)

    def pointwise(self, x: _Tensor, name: str, *, flops: int = 1, params: int = 0) -> _Tensor:
        """A per-element layer (batch norm, ReLU) keeping its input's shape."""
        elements = self._elements(x.channels, x.height, x.width)
        cost = ops.elementwise(elements, flops_per_element=flops, dtype=self.dtype, label=name)
        return _Tensor(self.b.add(cost, elements, x.node, params=params, label=name), *_shape(x))

    def bn(self, x: _Tensor, name: str) -> _Tensor:
        return self.pointwise(x, f"{name} bn", flops=2, params=2 * x.channels)

    def relu(self, x: _Tensor, name: str) -> _Tensor:
        return self.pointwise(x, f"{name} relu")

    def conv_bn_relu(
        self, x: _Tensor, out: int, kernel: int | tuple[int, int], name: str, **conv: object
    ) -> _Tensor:
        """Convolution, batch norm, ReLU: three nodes, or one when fused."""
        y = self.conv(x, out, kernel, name=name, **conv)  # type: ignore[arg-type]
        if self.fused:
            self.b.params[y.node] += 2 * out  # the folded batch norm's scale and shift
            return y
        return self.relu(self.bn(y, name), name)

    def pool(self, x: _Tensor, window: int, *, stride: int, padding: int = 0, name: str) -> _Tensor:
        height = (x.height + 2 * padding - window) // stride + 1
        width = (x.width + 2 * padding - window) // stride + 1
        cost = ops.pooling(self.batch, x.channels, x.height, x.width, window, stride=stride,
                           padding=padding, dtype=self.dtype)  # fmt: skip
        node = self.b.add(cost, self._elements(x.channels, height, width), x.node, label=name)
        return _Tensor(node, x.channels, height, width)

    def join(self, parts: list[_Tensor], name: str, *, add: bool = False) -> _Tensor:
        """Concatenate ``parts`` along channels, or add them (same shapes)."""
        channels = parts[0].channels if add else sum(p.channels for p in parts)
        elements = self._elements(channels, parts[0].height, parts[0].width)
        cost = ops.elementwise(elements, inputs=len(parts), dtype=self.dtype, label=name)
        node = self.b.add(cost, elements, *(p.node for p in parts), label=name)
        return _Tensor(node, channels, parts[0].height, parts[0].width)


def _shape(x: _Tensor) -> tuple[int, int, int]:
    return x.channels, x.height, x.width


def _begin(batch: int, image: int, device: DeviceLike, link: LinkLike, dtype: str,
           fused: object) -> tuple[_Layers, _Tensor]:  # fmt: skip
    batch, image = count("batch", batch), count("image", image, minimum=75)
    layers = _Layers(ModelBuilder(device, link, dtype), batch, flag("fused", fused))
    return layers, _Tensor(-1, 3, image, image)


def _classifier(layers: _Layers, x: _Tensor, name: str) -> None:
    pooled = layers.pool(x, x.height, stride=x.height, name=f"{name} average pool")
    cost = ops.matmul(layers.batch, pooled.channels, 1000, dtype=layers.dtype)
    layers.b.add(cost, layers.batch * 1000, pooled.node, params=pooled.channels * 1000 + 1000,
                 label=f"{name} fc")  # fmt: skip


def inception_v3(
    *,
    batch: int = 32,
    image: int = 299,
    fused: bool = False,
    device: DeviceLike = "H100 SXM",
    link: LinkLike = "NVLink 4",
    dtype: str = "bf16",
) -> Model:
    """Inception-v3 for inference: the stem, eleven Inception modules, the classifier.

    Modules 5b-5d are four-branch "A" modules at 35x35, 6a reduces to 17x17, 6b-6e factor
    the 7x7 convolutions into 1x7 and 7x1, 7a reduces to 8x8, and 7b-7c split their 3x3
    branches into 1x3 and 3x1 halves (Szegedy et al. 2016, figures 5-7 and table 1).

    Parameters
    ----------
    batch : int
        Images in one input, count.
    image : int
        The image's side in pixels, at least 75, count.
    fused : bool
        One node per convolution with its batch norm and ReLU folded in (312 nodes
        become 124), as an inference engine runs it.
    device : str or hardware.Device
        Where each node's work is its roofline time.
    link : str, hardware.Link or hardware.LinkSpec
        Where each node's send time is its output's latency plus bytes over bandwidth.
    dtype : str
        The dtype of the weights and activations (``"bf16"``, ``"fp32"``, ...).

    Returns
    -------
    Model
        23,834,568 parameters, as torchvision's ``inception_v3`` without its auxiliary
        classifier.
    """
    net, x = _begin(batch, image, device, link, dtype, fused)
    conv = net.conv_bn_relu
    x = conv(x, 32, 3, "Conv2d_1a_3x3", stride=2)
    x = conv(x, 32, 3, "Conv2d_2a_3x3")
    x = conv(x, 64, 3, "Conv2d_2b_3x3", padding=1)
    x = net.pool(x, 3, stride=2, name="maxpool1")
    x = conv(x, 80, 1, "Conv2d_3b_1x1")
    x = conv(x, 192, 3, "Conv2d_4a_3x3")
    x = net.pool(x, 3, stride=2, name="maxpool2")
    for name, pool_features in (("Mixed_5b", 32), ("Mixed_5c", 64), ("Mixed_5d", 64)):
        one = conv(x, 64, 1, f"{name} 1x1")
        five = conv(conv(x, 48, 1, f"{name} 5x5_1"), 64, 5, f"{name} 5x5_2", padding=2)
        three = conv(x, 64, 1, f"{name} 3x3dbl_1")
        three = conv(three, 96, 3, f"{name} 3x3dbl_2", padding=1)
        three = conv(three, 96, 3, f"{name} 3x3dbl_3", padding=1)
        pool = net.pool(x, 3, stride=1, padding=1, name=f"{name} avgpool")
        pool = conv(pool, pool_features, 1, f"{name} pool")
        x = net.join([one, five, three, pool], f"{name} concat")
    three = conv(x, 384, 3, "Mixed_6a 3x3", stride=2)
    dbl = conv(conv(x, 64, 1, "Mixed_6a 3x3dbl_1"), 96, 3, "Mixed_6a 3x3dbl_2", padding=1)
    dbl = conv(dbl, 96, 3, "Mixed_6a 3x3dbl_3", stride=2)
    x = net.join([three, dbl, net.pool(x, 3, stride=2, name="Mixed_6a maxpool")],
                 "Mixed_6a concat")  # fmt: skip
    for name, c7 in (("Mixed_6b", 128), ("Mixed_6c", 160), ("Mixed_6d", 160), ("Mixed_6e", 192)):
        one = conv(x, 192, 1, f"{name} 1x1")
        seven = conv(x, c7, 1, f"{name} 7x7_1")
        seven = conv(seven, c7, (1, 7), f"{name} 7x7_2", padding=(0, 3))
        seven = conv(seven, 192, (7, 1), f"{name} 7x7_3", padding=(3, 0))
        dbl = conv(x, c7, 1, f"{name} 7x7dbl_1")
        for step, (kernel, pad, out) in enumerate(
            (((7, 1), (3, 0), c7), ((1, 7), (0, 3), c7), ((7, 1), (3, 0), c7),
             ((1, 7), (0, 3), 192)), start=2):  # fmt: skip
            dbl = conv(dbl, out, kernel, f"{name} 7x7dbl_{step}", padding=pad)
        pool = conv(net.pool(x, 3, stride=1, padding=1, name=f"{name} avgpool"), 192, 1,
                    f"{name} pool")  # fmt: skip
        x = net.join([one, seven, dbl, pool], f"{name} concat")
    three = conv(conv(x, 192, 1, "Mixed_7a 3x3_1"), 320, 3, "Mixed_7a 3x3_2", stride=2)
    seven = conv(x, 192, 1, "Mixed_7a 7x7x3_1")
    seven = conv(seven, 192, (1, 7), "Mixed_7a 7x7x3_2", padding=(0, 3))
    seven = conv(seven, 192, (7, 1), "Mixed_7a 7x7x3_3", padding=(3, 0))
    seven = conv(seven, 192, 3, "Mixed_7a 7x7x3_4", stride=2)
    x = net.join([three, seven, net.pool(x, 3, stride=2, name="Mixed_7a maxpool")],
                 "Mixed_7a concat")  # fmt: skip
    for name in ("Mixed_7b", "Mixed_7c"):
        one = conv(x, 320, 1, f"{name} 1x1")
        three = conv(x, 384, 1, f"{name} 3x3_1")
        three = net.join([conv(three, 384, (1, 3), f"{name} 3x3_2a", padding=(0, 1)),
                          conv(three, 384, (3, 1), f"{name} 3x3_2b", padding=(1, 0))],
                         f"{name} 3x3 concat")  # fmt: skip
        dbl = conv(conv(x, 448, 1, f"{name} 3x3dbl_1"), 384, 3, f"{name} 3x3dbl_2", padding=1)
        dbl = net.join([conv(dbl, 384, (1, 3), f"{name} 3x3dbl_3a", padding=(0, 1)),
                        conv(dbl, 384, (3, 1), f"{name} 3x3dbl_3b", padding=(1, 0))],
                       f"{name} 3x3dbl concat")  # fmt: skip
        pool = conv(net.pool(x, 3, stride=1, padding=1, name=f"{name} avgpool"), 192, 1,
                    f"{name} pool")  # fmt: skip
        x = net.join([one, three, dbl, pool], f"{name} concat")
    _classifier(net, x, "Inception-v3")
    return net.b.graph(f"a batch of {net.batch:,} images of {image}x{image}")


def _separable(net: _Layers, x: _Tensor, out: int, kernel: int, stride: int, name: str) -> _Tensor:
    """NASNet's separable block: twice ReLU, depthwise, pointwise, batch norm."""
    for rep in (1, 2):
        x = net.relu(x, f"{name}_{rep}")
        pad = kernel // 2
        x = net.conv(x, x.channels, kernel, stride=stride if rep == 1 else 1, padding=pad,
                     groups=x.channels, name=f"{name}_{rep} depthwise")  # fmt: skip
        x = net.conv(x, out, 1, name=f"{name}_{rep} pointwise")
        x = net.bn(x, f"{name}_{rep}")
    return x


def _relu_conv_bn(net: _Layers, x: _Tensor, out: int, name: str) -> _Tensor:
    return net.bn(net.conv(net.relu(x, name), out, 1, name=f"{name} 1x1"), name)


def _adjust(net: _Layers, p: _Tensor, ip: _Tensor, filters: int, name: str) -> _Tensor:
    """Bring the cell before last to this cell's shape (Zoph et al.'s factorized reduction)."""
    if p == ip:  # the first cell reads the stem twice, as it is
        return p
    if p.height != ip.height:
        relu = net.relu(p, f"{name} adjust")
        halves = []
        for half in (1, 2):
            shifted = net.pool(relu, 1, stride=2, name=f"{name} adjust path{half}")
            halves.append(net.conv(shifted, filters // 2, 1, name=f"{name} adjust path{half} 1x1"))
        return net.bn(net.join(halves, f"{name} adjust concat"), f"{name} adjust")
    if p.channels != filters:
        return _relu_conv_bn(net, p, filters, f"{name} adjust")
    return p


def _normal_cell(net: _Layers, ip: _Tensor, p: _Tensor, filters: int, name: str) -> _Tensor:
    p = _adjust(net, p, ip, filters, name)
    h = _relu_conv_bn(net, ip, filters, f"{name} begin")
    x1 = net.join([_separable(net, h, filters, 5, 1, f"{name} left1"),
                   _separable(net, p, filters, 3, 1, f"{name} right1")], f"{name} add1",
                  add=True)  # fmt: skip
    x2 = net.join([_separable(net, p, filters, 5, 1, f"{name} left2"),
                   _separable(net, p, filters, 3, 1, f"{name} right2")], f"{name} add2",
                  add=True)  # fmt: skip
    x3 = net.join([net.pool(h, 3, stride=1, padding=1, name=f"{name} left3"), p],
                  f"{name} add3", add=True)  # fmt: skip
    x4 = net.join([net.pool(p, 3, stride=1, padding=1, name=f"{name} left4"),
                   net.pool(p, 3, stride=1, padding=1, name=f"{name} right4")], f"{name} add4",
                  add=True)  # fmt: skip
    x5 = net.join([_separable(net, h, filters, 3, 1, f"{name} left5"), h], f"{name} add5",
                  add=True)  # fmt: skip
    return net.join([p, x1, x2, x3, x4, x5], f"{name} concat")


def _reduction_cell(net: _Layers, ip: _Tensor, p: _Tensor, filters: int, name: str) -> _Tensor:
    p = _adjust(net, p, ip, filters, name)
    h = _relu_conv_bn(net, ip, filters, f"{name} begin")
    x1 = net.join([_separable(net, h, filters, 5, 2, f"{name} left1"),
                   _separable(net, p, filters, 7, 2, f"{name} right1")], f"{name} add1",
                  add=True)  # fmt: skip
    x2 = net.join([net.pool(h, 3, stride=2, padding=1, name=f"{name} left2"),
                   _separable(net, p, filters, 7, 2, f"{name} right2")], f"{name} add2",
                  add=True)  # fmt: skip
    x3 = net.join([net.pool(h, 3, stride=2, padding=1, name=f"{name} left3"),
                   _separable(net, p, filters, 5, 2, f"{name} right3")], f"{name} add3",
                  add=True)  # fmt: skip
    x4 = net.join([net.pool(x1, 3, stride=1, padding=1, name=f"{name} left4"), x2],
                  f"{name} add4", add=True)  # fmt: skip
    x5 = net.join([_separable(net, x1, filters, 3, 1, f"{name} left5"),
                   net.pool(h, 3, stride=2, padding=1, name=f"{name} right5")], f"{name} add5",
                  add=True)  # fmt: skip
    return net.join([x2, x3, x4, x5], f"{name} concat")


def nasnet_a_mobile(
    *,
    batch: int = 32,
    image: int = 224,
    device: DeviceLike = "H100 SXM",
    link: LinkLike = "NVLink 4",
    dtype: str = "bf16",
) -> Model:
    """NASNet-A Mobile (4 @ 1056): a stem, two reduction cells, three stacks of four normal
    cells with a reduction cell between each, and the classifier.

    Every cell reads the outputs of the two cells before it; a separable block is two
    rounds of ReLU, depthwise, pointwise and batch norm (Zoph et al. 2018, figure 4 and
    appendix A), wired as the Keras ``NASNetMobile``.

    Parameters
    ----------
    batch : int
        Images in one input, count.
    image : int
        The image's side in pixels, at least 75, count.
    device : str or hardware.Device
        Where each node's work is its roofline time.
    link : str, hardware.Link or hardware.LinkSpec
        Where each node's send time is its output's latency plus bytes over bandwidth.
    dtype : str
        The dtype of the weights and activations (``"bf16"``, ``"fp32"``, ...).

    Returns
    -------
    Model
        5,289,978 trainable parameters, as Keras's ``NASNetMobile``.
    """
    net, x = _begin(batch, image, device, link, dtype, False)
    x = net.bn(net.conv(x, 32, 3, stride=2, name="stem conv"), "stem")
    filters = 1056 // 24
    p = x
    x, p = _reduction_cell(net, x, p, filters // 4, "stem_1"), x
    x, p = _reduction_cell(net, x, p, filters // 2, "stem_2"), x
    for stack in range(3):
        if stack:
            x, p = _reduction_cell(net, x, p, filters, f"reduce_{4 * stack}"), x
        for cell in range(4):
            number = 4 * stack + cell + (stack > 0)  # Keras's numbering: 0-3, 5-8, 9-12
            x, p = _normal_cell(net, x, p, filters, f"cell_{number}"), x
        filters *= 2
    _classifier(net, net.relu(x, "final"), "NASNet-A")
    return net.b.graph(f"a batch of {net.batch:,} images of {image}x{image}")


def gnmt(
    *,
    batch: int = 128,
    tokens: int = 50,
    hidden: int = 1024,
    layers: int = 8,
    vocabulary: int = 32_000,
    device: DeviceLike = "H100 SXM",
    link: LinkLike = "NVLink 4",
    dtype: str = "bf16",
) -> Model:
    """GNMT: an LSTM encoder and decoder with residual connections and attention.

    One node per LSTM layer (its four gates' matrix products over the sequence). The
    encoder's first layer runs both directions and concatenates them; from the third
    layer up each layer adds its input back (a residual connection), in the encoder and
    the decoder. Attention reads the first decoder layer and the encoder's top, and its
    context is an input of every decoder layer above (Wu et al. 2016, figure 1).

    Parameters
    ----------
    batch : int
        Sentences in one input, count.
    tokens : int
        Tokens per sentence, source and target alike, count.
    hidden : int
        Units per LSTM layer and per embedding, count.
    layers : int
        LSTM layers in the encoder and in the decoder, at least 3, count.
    vocabulary : int
        Wordpieces, count.
    device : str or hardware.Device
        Where each node's work is its roofline time.
    link : str, hardware.Link or hardware.LinkSpec
        Where each node's send time is its output's latency plus bytes over bandwidth.
    dtype : str
        The dtype of the weights and activations (``"bf16"``, ``"fp32"``, ...).

    Returns
    -------
    Model
        ``4 * layers + 2`` nodes.
    """
    batch, tokens = count("batch", batch), count("tokens", tokens)
    hidden, layers = count("hidden", hidden), count("layers", layers, minimum=3)
    vocabulary = count("vocabulary", vocabulary)
    b = ModelBuilder(device, link, dtype)
    rows = batch * tokens
    act = rows * hidden

    def lstm(inputs: tuple[int, ...], width: int, name: str) -> int:
        cost = ops.matmul(rows, width + hidden, 4 * hidden, dtype=dtype)
        return b.add(cost, act, *inputs, params=4 * hidden * (width + hidden + 2), label=name)

    def add(x: int, y: int, name: str) -> int:
        return b.add(ops.elementwise(act, inputs=2, dtype=dtype, label=name), act, x, y, label=name)

    embed = b.add(ops.elementwise(act, dtype=dtype, label="gather"), act,
                  params=vocabulary * hidden, label="encoder embedding")  # fmt: skip
    forward = lstm((embed,), hidden, "encoder 1 forward")
    backward = lstm((embed,), hidden, "encoder 1 backward")
    x = b.add(ops.elementwise(2 * act, inputs=2, dtype=dtype, label="concat"), 2 * act, forward,
              backward, label="encoder 1 concat")  # fmt: skip
    x = lstm((x,), 2 * hidden, "encoder 2")
    for layer in range(3, layers + 1):
        x = add(lstm((x,), hidden, f"encoder {layer}"), x, f"encoder {layer} residual")
    encoded = x
    embed = b.add(ops.elementwise(act, dtype=dtype, label="gather"), act,
                  params=vocabulary * hidden, label="decoder embedding")  # fmt: skip
    first = lstm((embed,), hidden, "decoder 1")
    scores = ops.matmul(batch * tokens, hidden, tokens, dtype=dtype)
    context = b.add(scores, act, first, encoded, params=hidden * hidden, label="attention")
    x = lstm((first, context), 2 * hidden, "decoder 2")
    for layer in range(3, layers + 1):
        y = lstm((x, context), 2 * hidden, f"decoder {layer}")
        x = add(y, x, f"decoder {layer} residual")
    cost = ops.matmul(rows, hidden, vocabulary, dtype=dtype)
    b.add(cost, rows * vocabulary, x, params=hidden * vocabulary + vocabulary, label="softmax")
    return b.graph(f"a batch of {batch:,} sentences of {tokens} tokens")
