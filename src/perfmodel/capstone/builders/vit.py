"""The Vision Transformer in ONNX (Dosovitskiy, Beyer, Kolesnikov, Weissenborn, Zhai,
Unterthiner, Dehghani, Minderer, Heigold, Gelly, Uszkoreit and Houlsby, "An Image is Worth
16x16 Words: Transformers for Image Recognition at Scale", 2021); the defaults are ViT-B/16.

The image is cut into patches by a convolution whose kernel and stride are the patch size,
flattened into tokens, and a learned class token is put in front of them. The class token
is written the way ``torch.onnx.export`` writes ``class_token.expand(batch, -1, -1)``: the
Shape of the input, a Gather of its first entry, an Unsqueeze and a Concat with constants
give the shape that an Expand broadcasts the token to (the exporter's rewrite of each -1
into 1 already folded). That shape is data to ONNX, not a static attribute: shape inference
knows the Expand's output only by propagating the Shape's values.
"""

from __future__ import annotations

import math
from typing import Any

from perfmodel._validate import count
from perfmodel.capstone.builders.graph import GraphBuilder

__all__ = ["vit"]


def vit(
    *,
    batch: int = 1,
    image: int = 224,
    patch: int = 16,
    width: int = 768,
    layers: int = 12,
    heads: int = 12,
    mlp_width: int = 3072,
    classes: int = 1000,
    weights: bool = True,
    seed: int = 0,
) -> Any:
    """A Vision Transformer (Dosovitskiy et al.); the defaults are ViT-B/16 (86.6M parameters).

    Patch embedding (a ``patch`` x ``patch`` convolution of stride ``patch``), a Reshape and
    Transpose to tokens, the class token in front (Concat) and the learned position
    embedding added. Then ``layers`` pre-norm encoder blocks: layer norm, the fused QKV
    projection, attention per head (MatMul, scale, Softmax, MatMul, no mask), the output
    projection and a residual add; layer norm, an MLP of width ``mlp_width`` with the erf
    GELU, a residual add. A final layer norm, the class token's row (Gather) and the
    classification head (Gemm), as torchvision's ``vit_b_16`` exports.

    Parameters
    ----------
    batch : int
        Images in the input, count.
    image : int
        Height and width of the square input images, count of pixels; a multiple of
        ``patch``.
    patch : int
        Height and width of each patch, count of pixels.
    width : int
        The model's width (each token's size), count.
    layers : int
        Encoder blocks, count.
    heads : int
        Attention heads, count; they must divide ``width``.
    mlp_width : int
        Hidden width of each block's MLP, count.
    classes : int
        Outputs of the last layer, count.
    weights : bool
        Write random weights; False gives their shapes only, enough to price the model but
        not to run it. Shapes, scales and indices are Constant nodes, written either way.
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
        If ``heads`` does not divide ``width`` or ``patch`` does not divide ``image``.

    Examples
    --------
    >>> from perfmodel.capstone import import_onnx
    >>> model = import_onnx(vit(weights=False))  # ViT-B/16 at 224 x 224
    >>> model.parameters
    86567656
    >>> dense = ("conv", "matmul", "attention")  # the multiply-adds, 2 FLOPs each
    >>> round(sum(n.cost.flops for n in model.nodes if n.op_class in dense) / 2e9, 2)
    17.56
    """
    import numpy as np
    from onnx import TensorProto, helper

    batch, image, patch = count("batch", batch), count("image", image), count("patch", patch)
    width, layers, heads = count("width", width), count("layers", layers), count("heads", heads)
    mlp_width, classes = count("mlp_width", mlp_width), count("classes", classes)
    if width % heads:
        raise ValueError(f"`heads` ({heads}) must divide `width` ({width}).")
    if image % patch:
        raise ValueError(
            f"`patch` ({patch}) must divide `image` ({image}), so that the patches tile it."
        )
    tokens = (image // patch) ** 2
    seq = tokens + 1  # the class token and the patches
    head_dim = width // heads
    g = GraphBuilder("vit", weights=weights, seed=seed)
    shape = g.constant
    patches_shape = shape("patches_shape", np.array([batch, width, tokens], np.int64))
    heads_shape = shape("heads_shape", np.array([batch, seq, heads, head_dim], np.int64))
    model_shape = shape("model_shape", np.array([batch, seq, width], np.int64))
    half, one, root2 = (
        shape(n, np.array(v, np.float32))
        for n, v in (("half", 0.5), ("one", 1.0), ("sqrt2", math.sqrt(2)))
    )
    zero = shape("zero", np.array(0, np.int64))  # a scalar index: the Gather drops its axis
    scale = shape("attention_scale", np.array(1 / math.sqrt(head_dim), np.float32))

    def layer_norm(x: str, name: str) -> str:
        return g.layer_norm(x, name, width, epsilon=1e-6)

    def gelu(x: str, name: str) -> str:
        erf = g.add("Erf", [g.add("Div", [x, root2], f"{name}_div")], f"{name}_erf")
        return g.add(
            "Mul",
            [g.add("Mul", [x, half], f"{name}_half"), g.add("Add", [erf, one], f"{name}_add")],
            name,
        )

    def attention(x: str, name: str) -> str:
        qkv = g.linear(x, f"{name}.in_proj", width, 3 * width)
        q, k, v = g.add_many("Split", [qkv], f"{name}.split", 3, axis=-1)
        q, k, v = (
            g.add("Reshape", [t, heads_shape], f"{name}.{n}_heads")
            for t, n in ((q, "q"), (k, "k"), (v, "v"))
        )
        q = g.add("Transpose", [q], f"{name}.q_t", perm=[0, 2, 1, 3])
        k = g.add("Transpose", [k], f"{name}.k_t", perm=[0, 2, 3, 1])
        v = g.add("Transpose", [v], f"{name}.v_t", perm=[0, 2, 1, 3])
        s = g.add("Mul", [g.add("MatMul", [q, k], f"{name}.scores"), scale], f"{name}.scale")
        s = g.add("Softmax", [s], f"{name}.softmax", axis=-1)
        a = g.add("MatMul", [s, v], f"{name}.context")
        a = g.add("Transpose", [a], f"{name}.merge_t", perm=[0, 2, 1, 3])
        a = g.add("Reshape", [a, model_shape], f"{name}.merge")
        return g.linear(a, f"{name}.out_proj", width, width)

    w = g.weight("conv_proj.weight", (width, 3, patch, patch))
    b = g.weight("conv_proj.bias", (width,), scale=0.01)
    x = g.add("Conv", ["input", w, b], "conv_proj", kernel_shape=[patch] * 2, strides=[patch] * 2)
    x = g.add("Reshape", [x, patches_shape], "patches")
    x = g.add("Transpose", [x], "tokens", perm=[0, 2, 1])
    # class_token.expand(batch, -1, -1), as the exporter writes it
    input_shape = g.add("Shape", ["input"], "input_shape")
    n = g.add("Gather", [input_shape, zero], "batch_size", axis=0)
    n = g.add("Unsqueeze", [n, shape("axis_0", np.array([0], np.int64))], "batch_size_1d")
    expand_to = g.add("Concat", [n, shape("ones", np.array([1, 1], np.int64))], "expand_to", axis=0)
    cls = g.weight("class_token", (1, 1, width), scale=0.02)
    cls = g.add("Expand", [cls, expand_to], "class_tokens")
    x = g.add("Concat", [cls, x], "with_class_token", axis=1)
    position = g.weight("encoder.pos_embedding", (1, seq, width), scale=0.02)
    x = g.add("Add", [x, position], "encoder.position")
    for i in range(layers):
        name = f"encoder.layers.encoder_layer_{i}"
        y = attention(layer_norm(x, f"{name}.ln_1"), f"{name}.self_attention")
        x = g.add("Add", [x, y], f"{name}.residual_1")
        y = g.linear(layer_norm(x, f"{name}.ln_2"), f"{name}.mlp.0", width, mlp_width)
        y = gelu(y, f"{name}.mlp.1")
        x = g.add("Add", [x, g.linear(y, f"{name}.mlp.3", mlp_width, width)], f"{name}.residual_2")
    x = layer_norm(x, "encoder.ln")
    x = g.add("Gather", [x, zero], "class_row", axis=1)
    head_w = g.weight("heads.head.weight", (classes, width))
    head_b = g.weight("heads.head.bias", (classes,), scale=0.01)
    x = g.add("Gemm", [x, head_w, head_b], "heads.head", transB=1)
    source = helper.make_tensor_value_info("input", TensorProto.FLOAT, [batch, 3, image, image])
    return g.model([source], x, (batch, classes))
