"""An LSTM language model in ONNX (Zaremba, Sutskever and Vinyals, "Recurrent Neural Network
Regularization", 2014): a word embedding, stacked LSTM layers and a linear decoder; the
defaults are the paper's "medium" model on the Penn Treebank."""

from __future__ import annotations

from typing import Any

from perfmodel._validate import count
from perfmodel.capstone.builders.graph import GraphBuilder

__all__ = ["lstm_lm"]


def lstm_lm(
    *,
    batch: int = 20,
    seq_len: int = 35,
    hidden: int = 650,
    layers: int = 2,
    vocab: int = 10000,
    embedding: int = 650,
    weights: bool = True,
    seed: int = 0,
) -> Any:
    """An LSTM language model (Zaremba et al.): the defaults are their medium model.

    Written as ``torch.onnx.export`` writes ``nn.LSTM(batch_first=True)`` between an
    ``nn.Embedding`` and an ``nn.Linear``: the embedding is a Gather, turned time-major by
    a Transpose; each layer is one ONNX ``LSTM`` node (forward, no peepholes) whose weights
    are ``W`` ``(1, 4·hidden, input)``, ``R`` ``(1, 4·hidden, hidden)`` and ``B``
    ``(1, 8·hidden)`` (the input and the recurrent bias), gates in ONNX's order i, o, f, c;
    its initial state is that layer's slice of ``h0`` and ``c0``, and its output sequence
    loses the direction axis (Squeeze) before the next layer. A Transpose back to
    batch-major, then the decoder (MatMul and bias Add) gives the logits. Each layer's final
    state is concatenated into ``h_n`` and ``c_n``, which a truncated back-propagation run
    feeds back as the next window's ``h0`` and ``c0``.

    Parameters
    ----------
    batch : int
        Sequences in the input, count.
    seq_len : int
        Time steps the LSTM is unrolled for (tokens per sequence), count.
    hidden : int
        Units in each LSTM layer, count.
    layers : int
        Stacked LSTM layers, count.
    vocab : int
        Words in the vocabulary, count.
    embedding : int
        Width of the word embedding, the first layer's input, count.
    weights : bool
        Write random weights; False gives their shapes only (see
        :mod:`perfmodel.capstone.builders`). The Constant nodes (slice bounds, axes) are
        written either way.
    seed : int
        Seed of the random weights, at least 0.

    Returns
    -------
    onnx.ModelProto
        The model. Its inputs are int64 ``"input_ids"``, ``(batch, seq_len)``, and the
        fp32 initial states ``"h0"`` and ``"c0"``, ``(layers, batch, hidden)``; its outputs
        are the logits, ``(batch, seq_len, vocab)``, then ``"h_n"`` and ``"c_n"``,
        ``(layers, batch, hidden)``.

    Examples
    --------
    >>> from perfmodel.capstone import import_onnx
    >>> model = lstm_lm(weights=False)  # Zaremba et al.'s medium model: about 20M parameters
    >>> import_onnx(model).parameters
    19780400
    >>> [node.op_type for node in model.graph.node].count("LSTM")
    2
    """
    import numpy as np
    from onnx import TensorProto, helper

    batch, seq_len, hidden = (
        count("batch", batch),
        count("seq_len", seq_len),
        count("hidden", hidden),
    )
    layers, vocab = count("layers", layers), count("vocab", vocab)
    embedding = count("embedding", embedding)
    g = GraphBuilder("lstm_lm", weights=weights, seed=seed)
    const = g.constant
    axis0, axis1 = const("axis0", np.array([0], np.int64)), const("axis1", np.array([1], np.int64))
    scale = hidden**-0.5  # the spread of PyTorch's LSTM initialisation

    x = g.add(
        "Gather",
        [g.weight("encoder.weight", (vocab, embedding), scale=0.1), "input_ids"],
        "encoder",
    )
    x = g.add("Transpose", [x], "time_major", perm=[1, 0, 2])
    finals: dict[str, list[str]] = {"h": [], "c": []}
    fan_in = embedding
    for i in range(layers):
        name = f"rnn.layer{i}"
        start, end = (
            const(f"{name}.start", np.array([i], np.int64)),
            const(f"{name}.end", np.array([i + 1], np.int64)),
        )
        h0, c0 = (
            g.add("Slice", [state, start, end, axis0], f"{name}.{state}_slice")
            for state in ("h0", "c0")
        )
        w = g.weight(f"{name}.W", (1, 4 * hidden, fan_in), scale=scale)
        r = g.weight(f"{name}.R", (1, 4 * hidden, hidden), scale=scale)
        b = g.weight(f"{name}.B", (1, 8 * hidden), scale=scale)
        y, y_h, y_c = g.add_many("LSTM", [x, w, r, b, "", h0, c0], name, 3, hidden_size=hidden)
        x = g.add("Squeeze", [y, axis1], f"{name}.squeeze")  # (seq_len, batch, hidden)
        finals["h"].append(y_h)
        finals["c"].append(y_c)
        fan_in = hidden
    x = g.add("Transpose", [x], "batch_major", perm=[1, 0, 2])
    x = g.add("MatMul", [x, g.weight("decoder.weight", (hidden, vocab))], "decoder")
    x = g.add("Add", [x, g.weight("decoder.bias", (vocab,), scale=0.01)], "logits")
    states = [g.add("Concat", finals[s], f"{s}_n", axis=0) for s in ("h", "c")]
    state_shape = [layers, batch, hidden]
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, [batch, seq_len]),
        *(helper.make_tensor_value_info(s, TensorProto.FLOAT, state_shape) for s in ("h0", "c0")),
    ]
    model = g.model(inputs, x, (batch, seq_len, vocab))
    model.graph.output.extend(
        helper.make_tensor_value_info(s, TensorProto.FLOAT, state_shape) for s in states
    )
    return model
