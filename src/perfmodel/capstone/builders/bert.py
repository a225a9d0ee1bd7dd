"""BERT in ONNX (Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers for
Language Understanding", 2019): a post-norm transformer encoder with the erf GELU and a
pooler; the defaults are BERT-base."""

from __future__ import annotations

import math
from typing import Any

from perfmodel._validate import count
from perfmodel.capstone.builders.graph import GraphBuilder

__all__ = ["bert"]


def bert(
    *,
    batch: int = 1,
    seq_len: int = 128,
    width: int = 768,
    layers: int = 12,
    heads: int = 12,
    ffn: int = 3072,
    vocab: int = 30522,
    context: int = 512,
    token_types: int = 2,
    weights: bool = True,
    seed: int = 0,
) -> Any:
    """A BERT encoder (Devlin et al.): the defaults are BERT-base (110M parameters).

    Word, position and token-type embeddings (Gather; every token of type 0, as when an
    export is given no ``token_type_ids``), added and layer-normed. The attention mask
    becomes an additive bias as an export writes it: Unsqueeze twice to
    ``(batch, 1, 1, seq_len)``, Cast to float, ``(1 - mask)`` times the lowest float32.
    Then ``layers`` post-norm blocks: the query, key and value projections, attention per
    head (scores divided by the square root of the head width, the mask added, a softmax),
    the output projection, a residual add and layer norm; an MLP ``ffn`` wide with the erf
    GELU, a residual add and layer norm. The pooler takes the first token through a dense
    layer (Gemm) and Tanh.

    Parameters
    ----------
    batch : int
        Sequences in the input, count.
    seq_len : int
        Tokens in each sequence, count; at most ``context``.
    width : int
        The model's width (hidden size), count.
    layers : int
        Encoder blocks, count.
    heads : int
        Attention heads, count; they must divide ``width``.
    ffn : int
        Width of each block's MLP (BERT's intermediate size), count.
    vocab : int
        Tokens in the vocabulary (WordPiece), count.
    context : int
        Rows of the position embedding: the longest sequence the model takes, count.
    token_types : int
        Rows of the token-type (segment) embedding, count.
    weights : bool
        Write random weights; False gives their shapes only (see
        :mod:`perfmodel.capstone.builders`). The Constant nodes (positions, token types,
        shapes, scales) are written either way.
    seed : int
        Seed of the random weights, at least 0.

    Returns
    -------
    onnx.ModelProto
        The model. Its inputs are int64 ``"input_ids"`` and ``"attention_mask"`` (1 for a
        token to attend to, 0 for padding), both ``(batch, seq_len)``; its outputs are
        ``"last_hidden_state"``, ``(batch, seq_len, width)``, and ``"pooler_output"``,
        ``(batch, width)``.

    Examples
    --------
    >>> from perfmodel.capstone import import_onnx
    >>> import_onnx(bert(weights=False)).parameters  # BERT-base, with its pooler
    109482240
    """
    import numpy as np
    from onnx import TensorProto, helper

    batch, seq_len, width = count("batch", batch), count("seq_len", seq_len), count("width", width)
    layers, heads, ffn = count("layers", layers), count("heads", heads), count("ffn", ffn)
    vocab, context = count("vocab", vocab), count("context", context)
    token_types = count("token_types", token_types)
    if width % heads:
        raise ValueError(f"`heads` ({heads}) must divide `width` ({width}).")
    if seq_len > context:
        raise ValueError(f"`seq_len` ({seq_len}) must be at most `context` ({context}).")
    head_dim = width // heads
    g = GraphBuilder("bert", weights=weights, seed=seed)
    const = g.constant
    heads_shape = const("heads_shape", np.array([batch, seq_len, heads, head_dim], np.int64))
    model_shape = const("model_shape", np.array([batch, seq_len, width], np.int64))
    positions = const("position_ids", np.arange(seq_len, dtype=np.int64)[None, :])
    types = const("token_type_ids", np.zeros((batch, seq_len), np.int64))
    one, half, root2 = (
        const(n, np.array(v, np.float32))
        for n, v in (("one", 1.0), ("half", 0.5), ("sqrt2", math.sqrt(2)))
    )
    lowest = const("lowest", np.array(np.finfo(np.float32).min, np.float32))
    scale = const("attention_scale", np.array(math.sqrt(head_dim), np.float32))

    def layer_norm(x: str, name: str, output: str | None = None) -> str:
        return g.layer_norm(x, name, width, epsilon=1e-12, output=output)

    def table(name: str, rows: int, ids: str) -> str:
        return g.add("Gather", [g.weight(f"{name}.weight", (rows, width), scale=0.02), ids], name)

    # The additive mask: attention_mask[:, None, None, :], as float, (1 - mask) * lowest.
    mask = g.add(
        "Unsqueeze", ["attention_mask", const("axis1", np.array([1], np.int64))], "mask_unsqueeze_1"
    )
    mask = g.add("Unsqueeze", [mask, const("axis2", np.array([2], np.int64))], "mask_unsqueeze_2")
    mask = g.add("Cast", [mask], "mask_cast", to=TensorProto.FLOAT)
    mask = g.add("Sub", [one, mask], "mask_invert")
    mask = g.add("Mul", [mask, lowest], "mask_bias")

    x = table("embeddings.word_embeddings", vocab, "input_ids")
    t = table("embeddings.token_type_embeddings", token_types, types)
    x = g.add("Add", [x, t], "embeddings.add_token_type")
    p = table("embeddings.position_embeddings", context, positions)
    x = g.add("Add", [x, p], "embeddings.add_position")
    x = layer_norm(x, "embeddings.LayerNorm")
    for i in range(layers):
        h = f"encoder.layer.{i}"
        q, k, v = (
            g.add(
                "Reshape",
                [g.linear(x, f"{h}.attention.self.{n}", width, width), heads_shape],
                f"{h}.attention.self.{n}_heads",
            )
            for n in ("query", "key", "value")
        )
        q = g.add("Transpose", [q], f"{h}.attention.self.query_t", perm=[0, 2, 1, 3])
        k = g.add("Transpose", [k], f"{h}.attention.self.key_t", perm=[0, 2, 3, 1])
        v = g.add("Transpose", [v], f"{h}.attention.self.value_t", perm=[0, 2, 1, 3])
        s = g.add("MatMul", [q, k], f"{h}.attention.self.scores")
        s = g.add("Div", [s, scale], f"{h}.attention.self.scale")
        s = g.add("Add", [s, mask], f"{h}.attention.self.mask")
        s = g.add("Softmax", [s], f"{h}.attention.self.softmax", axis=-1)
        a = g.add("MatMul", [s, v], f"{h}.attention.self.context")
        a = g.add("Transpose", [a], f"{h}.attention.self.merge_t", perm=[0, 2, 1, 3])
        a = g.add("Reshape", [a, model_shape], f"{h}.attention.self.merge")
        a = g.linear(a, f"{h}.attention.output.dense", width, width)
        x = g.add("Add", [a, x], f"{h}.attention.output.residual")
        x = layer_norm(x, f"{h}.attention.output.LayerNorm")
        y = g.linear(x, f"{h}.intermediate.dense", width, ffn)
        erf = g.add("Erf", [g.add("Div", [y, root2], f"{h}.gelu_div")], f"{h}.gelu_erf")
        y = g.add(
            "Mul",
            [
                g.add("Mul", [y, half], f"{h}.gelu_half"),
                g.add("Add", [erf, one], f"{h}.gelu_add"),
            ],
            f"{h}.gelu",
        )
        y = g.linear(y, f"{h}.output.dense", ffn, width)
        x = g.add("Add", [y, x], f"{h}.output.residual")
        last = i == layers - 1  # the model's first output, named as an export names it
        x = layer_norm(x, f"{h}.output.LayerNorm", "last_hidden_state" if last else None)
    first = g.add(
        "Gather", [x, const("first_token", np.array(0, np.int64))], "pooler.first", axis=1
    )
    pooled = g.add(
        "Gemm",
        [
            first,
            g.weight("pooler.dense.weight", (width, width)),
            g.weight("pooler.dense.bias", (width,), scale=0.01),
        ],
        "pooler.dense",
        transB=1,
    )
    pooled = g.add("Tanh", [pooled], "pooler_output")
    inputs = [
        helper.make_tensor_value_info(name, TensorProto.INT64, [batch, seq_len])
        for name in ("input_ids", "attention_mask")
    ]
    model = g.model(inputs, x, (batch, seq_len, width))
    model.graph.output.append(
        helper.make_tensor_value_info(pooled, TensorProto.FLOAT, [batch, width])
    )
    return model
