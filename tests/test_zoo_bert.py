"""BERT (Devlin et al., "BERT: Pre-training of Deep Bidirectional Transformers for Language
Understanding", 2019) as :func:`perfmodel.capstone.builders.bert.bert` writes it: a valid
graph that onnxruntime runs, BERT-base's published size and work, and clear errors."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import onnx
import pytest

from perfmodel.capstone import import_onnx
from perfmodel.capstone.builders.bert import bert
from perfmodel.capstone.engine import random_inputs

#: A small BERT: every architecture argument smaller than BERT-base's.
SMALL = {
    "batch": 2,
    "seq_len": 8,
    "width": 32,
    "layers": 2,
    "heads": 4,
    "ffn": 64,
    "vocab": 50,
    "context": 16,
    "token_types": 2,
}


def session(model):
    ort = pytest.importorskip("onnxruntime")
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def analytic_flops(*, batch, seq_len, width, layers, heads, ffn):
    """BERT's forward FLOPs layer by layer (a multiply-add is 2 FLOPs), counting what the
    graph computes: every weight matmul and its bias, the attention matmuls, the score
    scaling, mask and softmax (5 per score), the erf GELU (5 per element: Div, Erf, Add,
    Mul, Mul), residual adds and layer norms (8 per element), the mask's Sub and Mul, and
    the pooler (a dense layer and Tanh on the first token)."""
    tokens = batch * seq_len
    scores = batch * heads * seq_len * seq_len
    head = width // heads

    def linear(fan_in, fan_out, rows=tokens):
        return 2 * rows * fan_in * fan_out + rows * fan_out

    embeddings = 2 * tokens * width + 8 * tokens * width  # two adds, layer norm
    mask = 2 * batch * seq_len  # (1 - mask) * lowest, on (batch, 1, 1, seq_len)
    attention = (
        3 * linear(width, width)  # query, key, value
        + 2 * scores * head  # Q·Kᵀ
        + scores * (1 + 1 + 5)  # divide by sqrt(head), add the mask, softmax
        + 2 * scores * head  # P·V
        + linear(width, width)  # output projection
        + tokens * width  # residual
        + 8 * tokens * width  # layer norm
    )
    mlp = (
        linear(width, ffn)
        + 5 * tokens * ffn  # erf GELU
        + linear(ffn, width)
        + tokens * width  # residual
        + 8 * tokens * width  # layer norm
    )
    pooler = linear(width, width, rows=batch) + batch * width  # dense, Tanh
    return embeddings + mask + layers * (attention + mlp) + pooler


def test_the_model_passes_the_onnx_checker_and_strict_shape_inference():
    model = bert(**SMALL)
    onnx.checker.check_model(model, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    shapes = {
        value.name: [d.dim_value for d in value.type.tensor_type.shape.dim]
        for value in inferred.graph.output
    }
    assert shapes == {"last_hidden_state": [2, 8, 32], "pooler_output": [2, 32]}


def test_the_graph_is_what_an_export_writes():
    """An export of BERT in eval mode: the mask becomes a bias through Unsqueeze (twice),
    Cast, Sub, Mul; three embedding Gathers and the pooler's first-token Gather; two
    post-norm layer norms per block and one after the embeddings; the erf GELU."""
    model = bert(**SMALL)
    ops = Counter(node.op_type for node in model.graph.node)
    layers = SMALL["layers"]
    assert ops["Unsqueeze"] == 2 and ops["Cast"] == 1 and ops["Sub"] == 1
    assert ops["Gather"] == 3 + 1
    assert ops["LayerNormalization"] == 1 + 2 * layers
    assert ops["Softmax"] == ops["Erf"] == layers
    assert ops["MatMul"] == layers * (6 + 2)  # six weight matmuls, Q·Kᵀ and P·V
    assert ops["Gemm"] == ops["Tanh"] == 1
    first = {node.op_type: node for node in model.graph.node}
    assert onnx.helper.get_attribute_value(first["Cast"].attribute[0]) == onnx.TensorProto.FLOAT
    epsilons = [
        onnx.helper.get_attribute_value(a)
        for node in model.graph.node
        if node.op_type == "LayerNormalization"
        for a in node.attribute
        if a.name == "epsilon"
    ]
    assert epsilons == pytest.approx([1e-12] * (1 + 2 * layers))  # BERT's, not PyTorch's 1e-5


def test_onnxruntime_runs_a_small_bert_to_finite_outputs_of_the_right_shape():
    model = bert(**SMALL)
    hidden, pooled = session(model).run(None, random_inputs(model))
    assert hidden.shape == (2, 8, 32) and pooled.shape == (2, 32)
    assert np.isfinite(hidden).all() and np.isfinite(pooled).all()
    assert np.abs(pooled).max() <= 1  # through Tanh


def test_a_masked_token_changes_nothing_and_an_attended_one_does():
    """With the last position masked out, changing its token leaves every other position's
    output as it was (its attention weight is exactly zero); changing an attended token
    changes the others (attention mixes them). Fails if the mask's bias had the wrong sign
    or never reached the scores."""
    model = bert(**{**SMALL, "batch": 1})
    run = session(model)
    ids = np.array([[3, 7, 1, 4, 9, 2, 5, 8]], np.int64)
    mask = np.array([[1, 1, 1, 1, 1, 1, 1, 0]], np.int64)

    def hidden(tokens):
        return run.run(None, {"input_ids": tokens, "attention_mask": mask})[0][0]

    base = hidden(ids)
    padded = ids.copy()
    padded[0, 7] = 11
    np.testing.assert_allclose(hidden(padded)[:7], base[:7], rtol=0, atol=1e-6)
    attended = ids.copy()
    attended[0, 6] = 11
    assert np.abs(hidden(attended)[:6] - base[:6]).max() > 1e-4


def test_bert_base_has_its_published_parameter_count():
    """Devlin et al. give BERT-base 110M parameters: the exact count rounded to two
    significant figures, 0.47% above it (hence 0.5%). The closed form, with the pooler:
    embeddings V·W + P·W + T·W + 2W (word, position, token type, layer norm); per layer
    4(W² + W) + (WF + F) + (FW + W) + 2·2W; pooler W² + W. That is 109,482,240, which is
    also the count of Hugging Face's bert-base-uncased. No buffer is an initializer: the
    position and token-type ids are Constant nodes."""
    model = import_onnx(bert(weights=False))
    w, f, v, p, t, n = 768, 3072, 30522, 512, 2, 12
    closed_form = (
        (v + p + t) * w + 2 * w + n * (4 * (w * w + w) + w * f + f + f * w + w + 4 * w) + w * w + w
    )
    assert closed_form == 109_482_240
    assert model.parameters == closed_form
    assert model.parameters == pytest.approx(110e6, rel=0.005)


def test_the_import_counts_the_flops_of_the_analytic_closed_form():
    """At BERT-base and at the small size: every node priced, none missed."""
    for arguments in ({}, SMALL):
        model = import_onnx(bert(weights=False, **arguments))
        full = {"batch": 1, "seq_len": 128, "width": 768, "layers": 12, "heads": 12, "ffn": 3072}
        shape = {k: arguments.get(k, full[k]) for k in full}
        assert model.flops == pytest.approx(analytic_flops(**shape), rel=1e-9)


def test_bert_base_does_the_published_work_at_128_tokens():
    """Jiao et al. ("TinyBERT: Distilling BERT for Natural Language Understanding", 2020,
    Table 1) and Sun et al. ("MobileBERT: a Compact Task-Agnostic BERT for
    Resource-Limited Devices", 2020) give BERT-base 22.5B FLOPs for one 128-token
    sequence. The weight and attention matmuls are 22.35 GFLOP of the 22.42 imported;
    how those papers count the elementwise work is not stated, hence 1%."""
    model = import_onnx(bert(weights=False))
    assert model.flops == pytest.approx(22.5e9, rel=0.01)
    matmuls = sum(n.cost.flops for n in model.nodes if n.op_class in ("matmul", "attention"))
    assert matmuls / model.flops > 0.99


def test_the_import_raises_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = import_onnx(bert(weights=False))
    assert not model.unsupported


@pytest.mark.parametrize(
    "argument",
    ["batch", "seq_len", "width", "layers", "heads", "ffn", "vocab", "context", "token_types"],
)
def test_a_bad_architecture_argument_is_an_error_naming_it(argument):
    with pytest.raises(ValueError, match=f"`{argument}`"):
        bert(**{**SMALL, argument: 0}, weights=False)
    with pytest.raises(ValueError, match=f"`{argument}`"):
        bert(**{**SMALL, argument: 2.5}, weights=False)
    with pytest.raises(TypeError, match=f"`{argument}`"):
        bert(**{**SMALL, argument: "8"}, weights=False)


def test_inconsistent_arguments_are_value_errors_naming_them():
    with pytest.raises(ValueError, match=r"`heads` \(5\) must divide `width` \(32\)"):
        bert(**{**SMALL, "heads": 5})
    with pytest.raises(ValueError, match=r"`seq_len` \(17\) must be at most `context` \(16\)"):
        bert(**{**SMALL, "seq_len": 17})
    with pytest.raises(TypeError, match="`weights`"):
        bert(**SMALL, weights="yes")
    with pytest.raises(ValueError, match="`seed`"):
        bert(**SMALL, seed=-1)
