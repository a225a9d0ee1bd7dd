"""GPT-2 in ONNX (Radford et al., "Language Models are Unsupervised Multitask Learners", 2019):
a decoder-only transformer with the erf GELU and tied embeddings."""

from __future__ import annotations

import math
from typing import Any

from perfmodel._validate import count
from perfmodel.capstone.builders.graph import GraphBuilder

__all__ = ["gpt2"]


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
    g = GraphBuilder("gpt2", weights=weights, seed=seed)
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
        return g.layer_norm(x, name, width, epsilon=1e-5)

    wte = g.weight("wte", (vocab, width), scale=0.02)
    x = g.add("Gather", [wte, "input_ids"], "token_embedding")
    p = g.add(
        "Gather", [g.weight("wpe", (context, width), scale=0.01), positions], "position_embedding"
    )
    x = g.add("Add", [x, p], "embedding")
    for i in range(layers):
        h = f"h{i}"
        y = layer_norm(x, f"{h}.ln_1")
        qkv = g.linear(y, f"{h}.attn.c_attn", width, 3 * width)
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
        x = g.add("Add", [x, g.linear(a, f"{h}.attn.c_proj", width, width)], f"{h}.residual_1")
        y = layer_norm(x, f"{h}.ln_2")
        y = g.linear(y, f"{h}.mlp.c_fc", width, 4 * width)
        erf = g.add("Erf", [g.add("Div", [y, root2], f"{h}.mlp.gelu_div")], f"{h}.mlp.gelu_erf")
        y = g.add(
            "Mul",
            [
                g.add("Mul", [y, half], f"{h}.mlp.gelu_half"),
                g.add("Add", [erf, one], f"{h}.mlp.gelu_add"),
            ],
            f"{h}.mlp.gelu",
        )
        y = g.linear(y, f"{h}.mlp.c_proj", 4 * width, width)
        x = g.add("Add", [x, y], f"{h}.residual_2")
    x = layer_norm(x, "ln_f")
    x = g.add("Reshape", [x, rows_shape], "ln_f_rows")
    x = g.add("Gemm", [x, wte], "lm_head", transB=1)
    ids = helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, seq_len])
    return g.model([ids], x, (batch * seq_len, vocab))
