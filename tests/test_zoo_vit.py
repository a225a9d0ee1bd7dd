"""ViT-B/16 (Dosovitskiy et al., "An Image is Worth 16x16 Words: Transformers for Image
Recognition at Scale", 2021) as ``perfmodel.capstone.builders.vit`` writes it: valid ONNX,
runs, its class token written as an export writes it, and its size and work agree with the
published figures and a count by hand."""

from __future__ import annotations

import math
import warnings
from collections import Counter

import numpy as np
import onnx
import pytest
from onnx import numpy_helper
from scipy.special import erf

from perfmodel.capstone import import_onnx
from perfmodel.capstone.builders.vit import vit
from perfmodel.capstone.engine import random_inputs

#: A ViT small enough to run in well under a millisecond: 16 patches of 8 x 8, two blocks.
SMALL = {
    "batch": 2,
    "image": 32,
    "patch": 8,
    "width": 32,
    "layers": 2,
    "heads": 4,
    "mlp_width": 64,
    "classes": 10,
}
DENSE = ("conv", "matmul", "attention")  # the op classes that hold the multiply-adds


def run(model, feeds):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, feeds)[0]


def by_hand(
    *, batch=1, image=224, patch=16, width=768, layers=12, heads=12, mlp_width=3072, classes=1000
):
    """The work of a ViT, layer by layer from the paper's architecture, as a dict: ``macs``,
    the multiply-adds of the patch embedding, the linear layers and the two attention
    products; ``biases``, the adds of the biases the Conv and Gemm nodes hold; ``vector``,
    every other FLOP the import prices per element: 1 per MatMul bias, residual, position
    add, attention scale and GELU step (Div, Erf, Add, Mul, Mul), 8 per layer-norm element,
    5 per softmax element."""
    tokens = (image // patch) ** 2
    seq = tokens + 1  # the class token in front
    d, m = width, mlp_width
    per_layer_macs = (
        seq * d * 3 * d  # Q, K and V
        + 2 * seq * seq * d  # scores and context, over every head
        + seq * d * d  # output projection
        + 2 * seq * d * m  # the MLP's two layers
    )
    per_layer_vector = (
        2 * 8 * seq * d  # two layer norms
        + 3 * seq * d  # QKV bias
        + 6 * heads * seq * seq  # the scale, then the softmax
        + 4 * seq * d  # output and second MLP biases, two residuals
        + 6 * seq * m  # first MLP bias, GELU
    )
    macs = 3 * patch * patch * d * tokens + layers * per_layer_macs + d * classes
    vector = seq * d + layers * per_layer_vector + 8 * seq * d  # position add, final norm
    biases = d * tokens + classes
    return {"macs": batch * macs, "biases": batch * biases, "vector": batch * vector}


def reference(model, x, *, patch, width, layers, heads, **_):
    """The forward pass in numpy from the paper's description, reading the model's weights
    by name: an oracle for what the ONNX graph computes."""
    w = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    n, head_dim = len(x), width // heads

    def layer_norm(y, name):  # over the last axis, eps 1e-6
        mean, var = y.mean(-1, keepdims=True), y.var(-1, keepdims=True)
        return (y - mean) / np.sqrt(var + 1e-6) * w[f"{name}.weight"] + w[f"{name}.bias"]

    def linear(y, name):
        return y @ w[f"{name}.weight"] + w[f"{name}.bias"]

    def split_heads(y):  # (n, seq, width) -> (n, heads, seq, head_dim)
        return y.reshape(n, -1, heads, head_dim).transpose(0, 2, 1, 3)

    side = x.shape[2] // patch  # cut into patches, each flattened as (channel, row, column)
    patches = x.reshape(n, 3, side, patch, side, patch).transpose(0, 2, 4, 1, 3, 5)
    kernel = w["conv_proj.weight"].reshape(width, -1)
    tokens = patches.reshape(n, side * side, -1) @ kernel.T + w["conv_proj.bias"]
    cls = np.broadcast_to(w["class_token"], (n, 1, width))
    x = np.concatenate([cls, tokens], axis=1) + w["encoder.pos_embedding"]
    for i in range(layers):
        name = f"encoder.layers.encoder_layer_{i}"
        qkv = linear(layer_norm(x, f"{name}.ln_1"), f"{name}.self_attention.in_proj")
        q, k, v = (split_heads(t) for t in np.split(qkv, 3, axis=-1))
        scores = q @ k.transpose(0, 1, 3, 2) / math.sqrt(head_dim)
        weights = np.exp(scores - scores.max(-1, keepdims=True))
        weights /= weights.sum(-1, keepdims=True)
        context = (weights @ v).transpose(0, 2, 1, 3).reshape(n, -1, width)
        x = x + linear(context, f"{name}.self_attention.out_proj")
        y = linear(layer_norm(x, f"{name}.ln_2"), f"{name}.mlp.0")
        x = x + linear(0.5 * y * (1 + erf(y / math.sqrt(2))), f"{name}.mlp.3")
    x = layer_norm(x, "encoder.ln")[:, 0]
    return x @ w["heads.head.weight"].T + w["heads.head.bias"]


def static_shapes(model, **inference):
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, **inference)
    dims = {v.name: v.type.tensor_type.shape.dim for v in inferred.graph.value_info}
    return {
        name: [d.dim_value if d.HasField("dim_value") else None for d in shape]
        for name, shape in dims.items()
    }


# --- valid ONNX, and the class token as an export writes it ------------------------------------


def test_the_model_passes_the_full_checker_and_strict_shape_inference():
    model = vit(**SMALL)
    onnx.checker.check_model(model, full_check=True)
    shapes = static_shapes(model, strict_mode=True)
    assert shapes["tokens"] == [2, 16, 32]  # (32 / 8) ** 2 patches of width 32
    assert shapes["encoder.layers.encoder_layer_1.residual_2"] == [2, 17, 32]
    assert shapes["class_row"] == [2, 32]


def test_the_class_token_is_expanded_to_a_shape_computed_from_the_input():
    """Shape(input) -> Gather(0) -> Unsqueeze -> Concat with constants -> Expand, as
    ``torch.onnx.export`` writes ``class_token.expand(batch, -1, -1)``: a shape that is data,
    so ONNX shape inference alone does not know the Expand's output; with data propagation
    (which the import asks for) it does."""
    model = vit(**SMALL)
    producer = {node.output[0]: node for node in model.graph.node}
    (expand,) = [node for node in model.graph.node if node.op_type == "Expand"]
    chain, tensor = [], expand.input[1]
    while tensor in producer and producer[tensor].op_type != "Constant":
        chain.append(producer[tensor].op_type)
        tensor = producer[tensor].input[0]
    assert chain == ["Concat", "Unsqueeze", "Gather", "Shape"]
    assert tensor == "input"
    assert static_shapes(model, strict_mode=True)["class_tokens"] == [None, None, 32]
    assert static_shapes(model, data_prop=True)["class_tokens"] == [2, 1, 32]


def test_the_graph_has_the_operators_an_export_writes():
    model = vit(**SMALL)
    ops = Counter(node.op_type for node in model.graph.node)
    layers = SMALL["layers"]
    assert ops["Conv"] == ops["Expand"] == ops["Shape"] == ops["Gemm"] == 1
    assert ops["LayerNormalization"] == 2 * layers + 1
    assert ops["MatMul"] == 6 * layers  # QKV, scores, context, output, two MLP layers
    assert ops["Softmax"] == ops["Erf"] == ops["Split"] == layers
    assert ops["Gather"] == 2  # the batch size, then the class token's row


# --- it runs and computes what the paper describes ----------------------------------------------


def test_onnxruntime_runs_it_and_matches_a_numpy_forward_pass():
    model = vit(**SMALL)
    feeds = random_inputs(model)
    out = run(model, feeds)
    assert out.shape == (2, 10)
    assert np.isfinite(out).all()
    expected = reference(model, feeds["input"].astype(np.float64), **SMALL)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-6)


def test_a_batch_of_three_gives_each_image_the_answer_it_gets_alone():
    """The class token is broadcast to every image; the same seed writes the same weights
    whatever the batch, so no image leaks into another."""
    three = vit(**SMALL | {"batch": 3})
    alone = vit(**SMALL | {"batch": 1})
    images = random_inputs(three, seed=1)["input"]
    together = run(three, {"input": images})
    for i in range(3):
        np.testing.assert_allclose(
            run(alone, {"input": images[i : i + 1]})[0], together[i], rtol=1e-4, atol=1e-6
        )
    assert not np.allclose(together[0], together[1])


def test_another_shape_matches_numpy_too():
    arguments = {"batch": 1, "image": 30, "patch": 5, "width": 24, "layers": 1, "heads": 3}
    model = vit(**arguments, mlp_width=40, classes=7)
    feeds = random_inputs(model, seed=2)
    expected = reference(model, feeds["input"].astype(np.float64), **arguments)
    np.testing.assert_allclose(run(model, feeds), expected, rtol=1e-4, atol=1e-6)


# --- size and work against the paper ------------------------------------------------------------


def test_vit_b16_has_the_published_parameter_count():
    """86,567,656: torchvision's ``vit_b_16`` (num_params; 86.6M, which Dosovitskiy et al.'s
    Table 1 rounds to 86M). A ViT has no batch norm, and its shapes and scales are Constant
    nodes, not initializers: every initializer is a trained parameter (the patch embedding,
    class token, position embedding, linear layers, layer-norm scales and shifts) and the
    counts agree exactly."""
    model = import_onnx(vit(weights=False))
    assert model.parameters == 86_567_656
    assert round(model.parameters / 1e6, 1) == 86.6


@pytest.mark.parametrize(
    "arguments",
    [
        {},
        {"batch": 2, "image": 96, "patch": 8, "width": 192, "layers": 3, "heads": 3},
        {"image": 64, "patch": 32, "width": 40, "layers": 1, "heads": 5, "mlp_width": 50},
    ],
    ids=["vit-b16", "small-patches", "odd-widths"],
)
def test_the_import_counts_the_flops_a_count_by_hand_gives(arguments):
    """2 FLOPs per multiply-add in the patch embedding, the linear layers and the attention
    products, plus the per-element work (biases, norms, softmax, GELU, residuals): the
    import and the count by hand agree exactly, in total and on the multiply-adds alone.
    For ViT-B/16 the per-element work is 0.3% of the total."""
    work = by_hand(**arguments)
    model = import_onnx(vit(weights=False, **arguments))
    dense = sum(n.cost.flops for n in model.nodes if n.op_class in DENSE)
    assert dense == 2 * work["macs"] + work["biases"]
    total = 2 * work["macs"] + work["biases"] + work["vector"]
    assert model.flops == pytest.approx(total, rel=1e-12)


def test_vit_b16_does_the_published_multiply_adds():
    """17.6G FLOPs counted as multiply-adds at 224 x 224: Liu et al. ("A ConvNet for the
    2020s", 2022), Table 1, for DeiT-B, which is the ViT-B/16 architecture; rounded to 0.1G,
    so the count must lie in [17.55G, 17.65G). torchvision lists 17.56G for ``vit_b_16``.
    The import prices 17.564G multiply-adds."""
    model = import_onnx(vit(weights=False))
    dense = sum(n.cost.flops for n in model.nodes if n.op_class in DENSE)
    macs = (dense - by_hand()["biases"]) / 2
    assert 17.55e9 <= macs < 17.65e9
    assert macs / 1e9 == pytest.approx(17.56, abs=0.005)


def test_the_import_raises_no_warning_and_prices_the_expanded_class_token():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = import_onnx(vit(weights=False, batch=4))
    assert all(node.supported for node in model.nodes)
    (expand,) = [node for node in model.nodes if node.op_type == "Expand"]
    assert expand.output_bytes == 4 * 4 * 1 * 768  # (batch, 1, width) fp32


# --- bad architectures --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"batch": 0}, ValueError, "`batch` must be a positive integer"),
        ({"image": 224.5}, ValueError, "`image` must be an integer"),
        ({"patch": 0}, ValueError, "`patch` must be a positive integer"),
        ({"patch": 15}, ValueError, r"`patch` \(15\) must divide `image` \(224\)"),
        ({"image": 8}, ValueError, r"`patch` \(16\) must divide `image` \(8\)"),
        ({"heads": 5}, ValueError, r"`heads` \(5\) must divide `width` \(768\)"),
        ({"width": "768"}, TypeError, "`width` must be an integer"),
        ({"layers": True}, TypeError, "`layers` must be an integer"),
        ({"mlp_width": -1}, ValueError, "`mlp_width` must be a positive integer"),
        ({"classes": 0}, ValueError, "`classes` must be a positive integer"),
        ({"weights": "yes"}, TypeError, "`weights`"),
        ({"seed": 0.5}, ValueError, "`seed`"),
    ],
)
def test_bad_architectures_are_refused_naming_the_argument(arguments, error, message):
    with pytest.raises(error, match=message):
        vit(**{"weights": False} | arguments)
