"""Real models in ONNX, built from their architecture: nothing downloaded, no PyTorch.

Each builder writes the graph a ``torch.onnx.export`` of the same architecture would
(opset 17: MatMul plus Add for a linear layer, the erf form of GELU, attention as
Transpose, MatMul, Softmax, MatMul), with seeded random weights, so onnxruntime can run it
and :func:`~perfmodel.capstone.import_onnx` can price it.

``weights=False`` gives the same graph with every weight's shape but none of its data
(external data that was never written): enough to price a full-size GPT-2 or ResNet-50
on any device in a fraction of a second, not enough to run it.

Examples
--------
>>> from perfmodel.capstone import import_onnx
>>> import_onnx(resnet(weights=False)).parameters  # ResNet-50, with batch-norm statistics
25610152
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from perfmodel._validate import count, flag

__all__ = ["CPU_MODELS", "cpu_model", "gpt2", "mlp", "resnet"]

_OPSET = 17


class _Graph:
    """Nodes and weights accumulated while a builder walks an architecture."""

    def __init__(self, name: str, *, weights: bool, seed: int) -> None:
        import numpy as np

        self.name = name
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.weights = flag("weights", weights)
        self.rng = np.random.default_rng(count("seed", seed, minimum=0))

    def weight(self, name: str, shape: Sequence[int], *, scale: float | None = None) -> str:
        """A weight of ``shape``: random normal with fan-in scaling, or shape only."""
        import numpy as np
        from onnx import TensorProto, numpy_helper

        if self.weights:
            std = (
                scale
                if scale is not None
                else 1 / math.sqrt(max(1, math.prod(shape[1:]) or shape[0]))
            )
            values = (self.rng.standard_normal(shape) * std).astype(np.float32)
            tensor = numpy_helper.from_array(values, name)
        else:
            tensor = TensorProto(name=name, dims=list(shape), data_type=TensorProto.FLOAT)
            tensor.data_location = TensorProto.EXTERNAL
            entry = tensor.external_data.add()
            entry.key, entry.value = "location", "never-written.bin"
        self.initializers.append(tensor)
        return name

    def constant(self, name: str, values: Any) -> str:
        """A small constant (a shape, a scale, a mask) as a Constant node, as an export writes
        it: not a weight."""
        from onnx import helper, numpy_helper

        self.nodes.append(
            helper.make_node(
                "Constant", [], [name], name=name, value=numpy_helper.from_array(values, name)
            )
        )
        return name

    def statistic(self, name: str, values: Any) -> str:
        """A stored tensor that is not trained (batch norm's running variance), always written."""
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(values, name))
        return name

    def add(self, op: str, inputs: Sequence[str], name: str, **attrs: Any) -> str:
        """A node named ``name`` whose one output is also called ``name``."""
        return self.add_many(op, inputs, name, 1, **attrs)[0]

    def add_many(
        self, op: str, inputs: Sequence[str], name: str, outputs: int, **attrs: Any
    ) -> list[str]:
        """A node with ``outputs`` outputs, ``name`` itself when there is one, else
        ``name_0``, ``name_1``..."""
        from onnx import helper

        names = [name] if outputs == 1 else [f"{name}_{i}" for i in range(outputs)]
        self.nodes.append(helper.make_node(op, list(inputs), names, name=name, **attrs))
        return names

    def model(self, inputs: Sequence[Any], output: str, output_shape: Sequence[int]) -> Any:
        from onnx import TensorProto, helper

        graph = helper.make_graph(
            self.nodes,
            self.name,
            list(inputs),
            [helper.make_tensor_value_info(output, TensorProto.FLOAT, list(output_shape))],
            self.initializers,
        )
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", _OPSET)], producer_name="perfmodel"
        )
        model.ir_version = 8  # what onnxruntime releases since 1.14 read
        return model


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
    g = _Graph("mlp", weights=weights, seed=seed)
    x = "input"
    for i, (fan_in, fan_out) in enumerate(zip(widths, widths[1:], strict=False)):
        x = g.add("MatMul", [x, g.weight(f"fc{i}.weight", (fan_in, fan_out))], f"fc{i}")
        x = g.add("Add", [x, g.weight(f"fc{i}.bias", (fan_out,), scale=0.01)], f"fc{i}_bias")
        if i < len(widths) - 2:
            x = g.add("Relu", [x], f"fc{i}_relu")
    source = helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, widths[0]])
    return g.model([source], x, (batch, widths[-1]))


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
    g = _Graph("resnet", weights=weights, seed=seed)

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


def gpt2(
    *,
    batch: int = 1,
    seq_len: int = 128,
    width: int = 768,
    layers: int = 12,
    heads: int = 12,
    vocab: int = 50257,
    context: int = 1024,
    weights: bool = True,
    seed: int = 0,
) -> Any:
    """A GPT-2 decoder (Radford et al.): the defaults are GPT-2 small (124M parameters).

    Token and position embeddings (Gather), then ``layers`` pre-norm blocks: layer norm,
    the fused QKV projection, causal attention per head (an additive mask before the
    softmax), the output projection and a residual add; layer norm, an MLP four times as
    wide with the erf GELU, a residual add. A final layer norm and the output projection,
    tied to the token embedding (a Gemm reading it transposed).

    Parameters
    ----------
    batch : int
        Sequences in the input, count.
    seq_len : int
        Tokens in each sequence, count; at most ``context``.
    width : int
        The model's width (embedding size), count.
    layers : int
        Decoder blocks, count.
    heads : int
        Attention heads, count; they must divide ``width``.
    vocab : int
        Tokens in the vocabulary, count.
    context : int
        Rows of the position embedding: the longest sequence the model takes, count.
    weights : bool
        Write random weights; False gives their shapes only (see the module notes). The
        Constant nodes (shapes, the causal mask, scales) are written either way.
    seed : int
        Seed of the random weights, at least 0.

    Returns
    -------
    onnx.ModelProto
        The model, its int64 input ``(batch, seq_len)`` named ``"input_ids"`` and its
        output the logits, ``(batch * seq_len, vocab)``.
    """
    import numpy as np
    from onnx import TensorProto, helper

    batch, seq_len, width = count("batch", batch), count("seq_len", seq_len), count("width", width)
    layers, heads = count("layers", layers), count("heads", heads)
    vocab, context = count("vocab", vocab), count("context", context)
    if width % heads:
        raise ValueError(f"`heads` ({heads}) must divide `width` ({width}).")
    if seq_len > context:
        raise ValueError(f"`seq_len` ({seq_len}) must be at most `context` ({context}).")
    head_dim = width // heads
    g = _Graph("gpt2", weights=weights, seed=seed)
    shape = g.constant
    heads_shape = shape("heads_shape", np.array([batch, seq_len, heads, head_dim], np.int64))
    model_shape = shape("model_shape", np.array([batch, seq_len, width], np.int64))
    rows_shape = shape("rows_shape", np.array([batch * seq_len, width], np.int64))
    mask = np.triu(np.full((seq_len, seq_len), -1e4, np.float32), k=1)
    mask_name = shape("causal_mask", mask)
    positions = shape("positions", np.arange(seq_len, dtype=np.int64))
    half, one, root2 = (
        shape(n, np.array(v, np.float32))
        for n, v in (("half", 0.5), ("one", 1.0), ("sqrt2", math.sqrt(2)))
    )
    scale = shape("attention_scale", np.array(1 / math.sqrt(head_dim), np.float32))

    def layer_norm(x: str, name: str) -> str:
        gamma, beta = (
            g.weight(f"{name}.weight", (width,), scale=0.1),
            g.weight(f"{name}.bias", (width,), scale=0.1),
        )
        return g.add("LayerNormalization", [x, gamma, beta], name, axis=-1, epsilon=1e-5)

    def linear(x: str, name: str, fan_in: int, fan_out: int) -> str:
        y = g.add("MatMul", [x, g.weight(f"{name}.weight", (fan_in, fan_out))], name)
        return g.add("Add", [y, g.weight(f"{name}.bias", (fan_out,), scale=0.01)], f"{name}_bias")

    wte = g.weight("wte", (vocab, width), scale=0.02)
    x = g.add("Gather", [wte, "input_ids"], "token_embedding")
    p = g.add(
        "Gather", [g.weight("wpe", (context, width), scale=0.01), positions], "position_embedding"
    )
    x = g.add("Add", [x, p], "embedding")
    for i in range(layers):
        h = f"h{i}"
        y = layer_norm(x, f"{h}.ln_1")
        qkv = linear(y, f"{h}.attn.c_attn", width, 3 * width)
        q, k, v = g.add_many("Split", [qkv], f"{h}.attn.split", 3, axis=-1)
        q, k, v = (
            g.add("Reshape", [t, heads_shape], f"{h}.attn.{n}_heads")
            for t, n in ((q, "q"), (k, "k"), (v, "v"))
        )
        q = g.add("Transpose", [q], f"{h}.attn.q_t", perm=[0, 2, 1, 3])
        k = g.add("Transpose", [k], f"{h}.attn.k_t", perm=[0, 2, 3, 1])
        v = g.add("Transpose", [v], f"{h}.attn.v_t", perm=[0, 2, 1, 3])
        s = g.add("MatMul", [q, k], f"{h}.attn.scores")
        s = g.add("Mul", [s, scale], f"{h}.attn.scale")
        s = g.add("Add", [s, mask_name], f"{h}.attn.mask")
        s = g.add("Softmax", [s], f"{h}.attn.softmax", axis=-1)
        a = g.add("MatMul", [s, v], f"{h}.attn.context")
        a = g.add("Transpose", [a], f"{h}.attn.merge_t", perm=[0, 2, 1, 3])
        a = g.add("Reshape", [a, model_shape], f"{h}.attn.merge")
        x = g.add("Add", [x, linear(a, f"{h}.attn.c_proj", width, width)], f"{h}.residual_1")
        y = layer_norm(x, f"{h}.ln_2")
        y = linear(y, f"{h}.mlp.c_fc", width, 4 * width)
        erf = g.add("Erf", [g.add("Div", [y, root2], f"{h}.mlp.gelu_div")], f"{h}.mlp.gelu_erf")
        y = g.add(
            "Mul",
            [
                g.add("Mul", [y, half], f"{h}.mlp.gelu_half"),
                g.add("Add", [erf, one], f"{h}.mlp.gelu_add"),
            ],
            f"{h}.mlp.gelu",
        )
        y = linear(y, f"{h}.mlp.c_proj", 4 * width, width)
        x = g.add("Add", [x, y], f"{h}.residual_2")
    x = layer_norm(x, "ln_f")
    x = g.add("Reshape", [x, rows_shape], "ln_f_rows")
    x = g.add("Gemm", [x, wte], "lm_head", transB=1)
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, seq_len])
    return g.model([ids], x, (batch * seq_len, vocab))


#: The models lecture 12 and ``benchmarks/capstone.py`` run on this CPU, each at two sizes:
#: small enough for a few milliseconds a run, large enough to leave the overhead regime.
CPU_MODELS: dict[str, dict[str, tuple[str, dict[str, Any]]]] = {
    "MLP": {
        "small": ("mlp", {"batch": 32, "widths": (784, 1024, 1024, 10)}),
        "large": ("mlp", {"batch": 256, "widths": (784, 2048, 2048, 10)}),
    },
    "ResNet": {
        "small": (
            "resnet",
            {"batch": 1, "image": 64, "blocks": (1, 1, 1, 1), "widths": (16, 32, 64, 128)},
        ),
        "large": (
            "resnet",
            {"batch": 2, "image": 128, "blocks": (2, 2, 2, 2), "widths": (32, 64, 128, 256)},
        ),
    },
    "GPT-2": {
        "small": (
            "gpt2",
            {
                "batch": 1,
                "seq_len": 64,
                "width": 256,
                "layers": 2,
                "heads": 4,
                "vocab": 4096,
                "context": 256,
            },
        ),
        "large": (
            "gpt2",
            {
                "batch": 1,
                "seq_len": 256,
                "width": 512,
                "layers": 4,
                "heads": 8,
                "vocab": 8192,
                "context": 512,
            },
        ),
    },
}


def cpu_model(name: str, size: str, *, seed: int = 0) -> Any:
    """One of :data:`CPU_MODELS`, with its weights: ``cpu_model("GPT-2", "small")``.

    Parameters
    ----------
    name : {"MLP", "ResNet", "GPT-2"}
        Which model.
    size : {"small", "large"}
        Which of its two sizes.
    seed : int
        Seed of the random weights, at least 0.

    Returns
    -------
    onnx.ModelProto
        The model its builder makes with those arguments.
    """
    from perfmodel._validate import choice

    name = choice("name", name, tuple(CPU_MODELS))
    size = choice("size", size, ("small", "large"))
    builder, arguments = CPU_MODELS[name][size]
    return globals()[builder](seed=seed, **arguments)
