"""Model graphs to partition, priced from ``perfmodel.ops`` on a device and a link.

Each node's ``work`` is the roofline time of its operation on the device; its ``comm`` is
the time to move its output tensor over the link (latency plus bytes over bandwidth).
So every graph here is a prediction for a concrete machine, and changing the device or
the link changes where the best cut falls.

* :func:`mlp`: a chain of dense layers.
* :func:`gpt2_like`: a decoder-only transformer with residual connections.
* :func:`resnet50_like`: ResNet-50's stages of bottleneck blocks with skip connections.
* :func:`inception_like`: modules of four parallel branches joined by a concatenation.
* :func:`random_layered_dag`: a seeded random layered DAG, for regenerable testbeds.

Three more follow their papers layer by layer (in :mod:`perfmodel.pipeline.networks`):
:func:`inception_v3`, :func:`nasnet_a_mobile` and :func:`gnmt`.

>>> g = mlp(layers=4, width=1024, batch=32, device="H100 SXM", link="NVLink 4")
>>> g.n, g.is_chain
(4, True)
"""

from __future__ import annotations

import numpy as np

from perfmodel import ops
from perfmodel._validate import count, fraction, non_negative
from perfmodel.hardware import DeviceLike, LinkLike
from perfmodel.pipeline.graph import Graph
from perfmodel.pipeline.model import Model, ModelBuilder
from perfmodel.pipeline.networks import gnmt, inception_v3, nasnet_a_mobile

__all__ = [
    "Model",
    "gnmt",
    "gpt2_like",
    "inception_like",
    "inception_v3",
    "mlp",
    "nasnet_a_mobile",
    "random_layered_dag",
    "resnet50_like",
]


def mlp(
    *,
    layers: int = 8,
    width: int = 4096,
    batch: int = 64,
    device: DeviceLike = "H100 SXM",
    link: LinkLike = "NVLink 4",
    dtype: str = "bf16",
) -> Model:
    """A chain of ``layers`` dense layers of ``width`` x ``width`` on a minibatch.

    Parameters
    ----------
    layers : int
        Dense layers, one node each, count.
    width : int
        Features in and out of every layer, count.
    batch : int
        Vectors in one input, count.
    device : str or hardware.Device
        A catalogue name or a device you built: each node's ``work`` is its operation's
        roofline time there.
    link : str, hardware.Link or hardware.LinkSpec
        A catalogue name or a link: each node's ``comm`` is its output's latency plus
        bytes over bandwidth on it.
    dtype : str
        The dtype of the weights and activations (``"bf16"``, ``"fp32"``, ...).

    Returns
    -------
    Model
        The chain; each layer holds ``width * width + width`` parameters.
    """
    layers, width, batch = count("layers", layers), count("width", width), count("batch", batch)
    b = ModelBuilder(device, link, dtype)
    previous: tuple[int, ...] = ()
    for _ in range(layers):
        node = b.add(
            ops.dense_forward(batch, width, width, dtype=dtype),
            batch * width,
            *previous,
            params=width * width + width,
        )
        previous = (node,)
    return b.graph(f"a batch of {batch:,} vectors of {width:,}")


def gpt2_like(
    *,
    layers: int = 12,
    d_model: int = 768,
    heads: int = 12,
    seq_len: int = 1024,
    batch: int = 8,
    vocab: int = 50257,
    device: DeviceLike = "H100 SXM",
    link: LinkLike = "NVLink 4",
    dtype: str = "bf16",
) -> Model:
    """GPT-2 small's shape by default: 12 blocks of attention and MLP with residual adds.

    Parameters
    ----------
    layers : int
        Transformer blocks, count; each is ten nodes (two layer norms, QKV, attention,
        projection, two residual adds, up, GELU, down).
    d_model : int
        The model width, count; a multiple of ``heads``.
    heads : int
        Attention heads, count.
    seq_len : int
        Tokens per sequence, count.
    batch : int
        Sequences in one input, count.
    vocab : int
        Vocabulary size, count: the embedding's and the output projection's rows.
    device : str or hardware.Device
        A catalogue name or a device you built: each node's ``work`` is its operation's
        roofline time there.
    link : str, hardware.Link or hardware.LinkSpec
        A catalogue name or a link: each node's ``comm`` is its output's latency plus
        bytes over bandwidth on it.
    dtype : str
        The dtype of the weights and activations (``"bf16"``, ``"fp32"``, ...).

    Returns
    -------
    Model
        The graph: an embedding, the blocks, a final layer norm and the output
        projection, ``10 * layers + 3`` nodes.
    """
    layers, d_model, heads = (
        count("layers", layers),
        count("d_model", d_model),
        count("heads", heads),
    )
    seq_len, batch, vocab = count("seq_len", seq_len), count("batch", batch), count("vocab", vocab)
    if d_model % heads:
        raise ValueError(f"`d_model` must be a multiple of `heads` (got {d_model} and {heads}).")
    b = ModelBuilder(device, link, dtype)
    tokens = batch * seq_len
    act = tokens * d_model
    x = b.add(
        ops.elementwise(act, inputs=1, dtype=dtype, label="embed"), act, params=vocab * d_model
    )
    for _ in range(layers):
        ln1 = b.add(ops.layer_norm(tokens, d_model, dtype=dtype), act, x, params=2 * d_model)
        qkv = b.add(
            ops.matmul(tokens, d_model, 3 * d_model, dtype=dtype), 3 * act, ln1,
            params=3 * d_model * d_model,
        )  # fmt: skip
        attn = b.add(
            ops.attention(batch, heads, seq_len, d_model // heads, fused=True, dtype=dtype),
            act,
            qkv,
        )
        proj = b.add(
            ops.matmul(tokens, d_model, d_model, dtype=dtype), act, attn, params=d_model * d_model
        )
        x = b.add(ops.elementwise(act, inputs=2, dtype=dtype, label="residual"), act, x, proj)
        ln2 = b.add(ops.layer_norm(tokens, d_model, dtype=dtype), act, x, params=2 * d_model)
        up = b.add(
            ops.matmul(tokens, d_model, 4 * d_model, dtype=dtype), 4 * act, ln2,
            params=4 * d_model * d_model,
        )  # fmt: skip
        gelu = b.add(
            ops.elementwise(4 * act, flops_per_element=8, dtype=dtype, label="gelu"), 4 * act, up
        )
        down = b.add(
            ops.matmul(tokens, 4 * d_model, d_model, dtype=dtype), act, gelu,
            params=4 * d_model * d_model,
        )  # fmt: skip
        x = b.add(ops.elementwise(act, inputs=2, dtype=dtype, label="residual"), act, x, down)
    final = b.add(ops.layer_norm(tokens, d_model, dtype=dtype), act, x, params=2 * d_model)
    b.add(
        ops.matmul(tokens, d_model, vocab, dtype=dtype), tokens * vocab, final,
        params=d_model * vocab,
    )  # fmt: skip
    return b.graph(f"a batch of {batch:,} sequences of {seq_len:,} tokens")


def resnet50_like(
    *,
    batch: int = 32,
    image: int = 224,
    device: DeviceLike = "H100 SXM",
    link: LinkLike = "NVLink 4",
    dtype: str = "bf16",
) -> Model:
    """ResNet-50: a 7x7 stem, then 3, 4, 6 and 3 bottleneck blocks with skip connections.

    Parameters
    ----------
    batch : int
        Images in one input, count.
    image : int
        The image's side in pixels, at least 32, count.
    device : str or hardware.Device
        A catalogue name or a device you built: each node's ``work`` is its operation's
        roofline time there.
    link : str, hardware.Link or hardware.LinkSpec
        A catalogue name or a link: each node's ``comm`` is its output's latency plus
        bytes over bandwidth on it.
    dtype : str
        The dtype of the weights and activations (``"bf16"``, ``"fp32"``, ...).

    Returns
    -------
    Model
        The graph: the stem, each block's three convolutions and residual add (and
        a projection shortcut in each stage's first block), then the classifier.
    """
    batch, image = count("batch", batch), count("image", image, minimum=32)
    b = ModelBuilder(device, link, dtype)
    size = image // 2
    x = b.add(ops.conv2d(batch, 3, 64, image, image, 7, stride=2, padding=3, dtype=dtype),
              batch * 64 * size * size, params=3 * 64 * 49)  # fmt: skip
    size //= 2  # max pool
    channels = 64
    for stage, (blocks, width) in enumerate(((3, 64), (4, 128), (6, 256), (3, 512))):
        for block in range(blocks):
            stride = 2 if stage > 0 and block == 0 else 1
            out = size // stride
            a = b.add(ops.conv2d(batch, channels, width, size, size, 1, dtype=dtype),
                      batch * width * size * size, x, params=channels * width)  # fmt: skip
            c = b.add(
                ops.conv2d(
                    batch, width, width, size, size, 3, stride=stride, padding=1, dtype=dtype
                ),
                batch * width * out * out,
                a,
                params=9 * width * width,
            )
            d = b.add(ops.conv2d(batch, width, 4 * width, out, out, 1, dtype=dtype),
                      batch * 4 * width * out * out, c, params=4 * width * width)  # fmt: skip
            skip = x
            if block == 0:  # projection shortcut
                skip = b.add(
                    ops.conv2d(
                        batch, channels, 4 * width, size, size, 1, stride=stride, dtype=dtype
                    ),
                    batch * 4 * width * out * out,
                    x,
                    params=channels * 4 * width,
                )
            elements = batch * 4 * width * out * out
            x = b.add(
                ops.elementwise(elements, inputs=2, dtype=dtype, label="add"), elements, d, skip
            )
            channels, size = 4 * width, out
    b.add(ops.matmul(batch, channels, 1000, dtype=dtype), batch * 1000, x, params=channels * 1000)
    return b.graph(f"a batch of {batch:,} images of {image}x{image}")


def inception_like(
    *,
    modules: int = 9,
    channels: int = 256,
    size: int = 28,
    batch: int = 32,
    device: DeviceLike = "H100 SXM",
    link: LinkLike = "NVLink 4",
    dtype: str = "bf16",
) -> Model:
    """Inception-style modules: 1x1, 1x1-3x3, 1x1-5x5 and pool-1x1 branches, concatenated.

    Parameters
    ----------
    modules : int
        Inception modules, eight nodes each, count.
    channels : int
        Channels in and out of every module, at least 4, count; each branch makes a
        quarter of them.
    size : int
        The feature map's side in pixels, count.
    batch : int
        Feature maps in one input, count.
    device : str or hardware.Device
        A catalogue name or a device you built: each node's ``work`` is its operation's
        roofline time there.
    link : str, hardware.Link or hardware.LinkSpec
        A catalogue name or a link: each node's ``comm`` is its output's latency plus
        bytes over bandwidth on it.
    dtype : str
        The dtype of the weights and activations (``"bf16"``, ``"fp32"``, ...).

    Returns
    -------
    Model
        The graph: a 3x3 stem convolution, then the modules.
    """
    modules = count("modules", modules)
    channels = count("channels", channels, minimum=4)
    size = count("size", size)
    batch = count("batch", batch)
    b = ModelBuilder(device, link, dtype)
    elements = batch * channels * size * size
    x = b.add(
        ops.conv2d(batch, 3, channels, size, size, 3, padding=1, dtype=dtype), elements,
        params=27 * channels,
    )  # fmt: skip
    branch = channels // 4
    part = batch * branch * size * size
    for _ in range(modules):
        reduce = channels * branch
        one = b.add(
            ops.conv2d(batch, channels, branch, size, size, 1, dtype=dtype), part, x, params=reduce
        )
        r3 = b.add(
            ops.conv2d(batch, channels, branch, size, size, 1, dtype=dtype), part, x, params=reduce
        )
        three = b.add(
            ops.conv2d(batch, branch, branch, size, size, 3, padding=1, dtype=dtype), part, r3,
            params=9 * branch * branch,
        )  # fmt: skip
        r5 = b.add(
            ops.conv2d(batch, channels, branch, size, size, 1, dtype=dtype), part, x, params=reduce
        )
        five = b.add(
            ops.conv2d(batch, branch, branch, size, size, 5, padding=2, dtype=dtype), part, r5,
            params=25 * branch * branch,
        )  # fmt: skip
        pool = b.add(ops.elementwise(elements, flops_per_element=9, dtype=dtype, label="pool"),
                     elements, x)  # fmt: skip
        proj = b.add(
            ops.conv2d(batch, channels, branch, size, size, 1, dtype=dtype), part, pool,
            params=reduce,
        )  # fmt: skip
        x = b.add(ops.elementwise(elements, inputs=4, dtype=dtype, label="concat"), elements,
                  one, three, five, proj)  # fmt: skip
    return b.graph(f"a batch of {batch:,} feature maps of {size}x{size}")


def random_layered_dag(
    layers: int,
    width: int,
    *,
    edge_probability: float = 0.3,
    seed: int = 0,
    work_range: tuple[float, float] = (1e-4, 1e-3),
    comm_range: tuple[float, float] = (1e-5, 2e-4),
) -> Graph:
    """A random DAG of ``layers`` layers of ``width`` nodes; the same seed, the same graph.

    Every node after the first layer reads one random node of the layer just before it,
    and each earlier node (any layer) with probability ``edge_probability / depth``,
    where ``depth`` is the reading node's layer index: so every node expects about
    ``edge_probability * width`` extra inputs however deep it sits. Times are uniform in
    the given ranges, in seconds.

    Parameters
    ----------
    layers : int
        Layers of nodes, count.
    width : int
        Nodes per layer, count.
    edge_probability : float
        Scales the chance of each extra edge, from 0 to 1, fraction.
    seed : int
        The random generator's seed, count (0 or more).
    work_range : tuple of (float, float)
        ``(low, high)`` of each node's compute time, s.
    comm_range : tuple of (float, float)
        ``(low, high)`` of each node's send time, s.

    Returns
    -------
    Graph
        ``layers * width`` nodes, numbered layer by layer.
    """
    layers, width = count("layers", layers), count("width", width)
    edge_probability = fraction("edge_probability", edge_probability, allow_zero=True)
    seed = count("seed", seed, minimum=0)
    for name, bounds in (("work_range", work_range), ("comm_range", comm_range)):
        if not isinstance(bounds, tuple) or len(bounds) != 2:
            raise TypeError(f"`{name}` must be a (low, high) pair of seconds (got {bounds!r}).")
        low, high = non_negative(f"{name}[0]", bounds[0]), non_negative(f"{name}[1]", bounds[1])
        if low > high:
            raise ValueError(f"`{name}` must have low <= high (got {bounds!r}).")
    rng = np.random.default_rng(seed)
    n = layers * width
    work = rng.uniform(*work_range, size=n).tolist()
    comm = rng.uniform(*comm_range, size=n).tolist()
    edges = []
    for layer in range(1, layers):
        earlier = layer * width
        for offset in range(width):
            node = earlier + offset
            edges.append((int(rng.integers(earlier - width, earlier)), node))
            chosen = np.flatnonzero(rng.random(earlier) < edge_probability / layer)
            edges.extend((int(u), node) for u in chosen)
    return Graph(work, comm, edges)
