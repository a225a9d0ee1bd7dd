"""ConvNeXt-T (Liu, Mao, Wu, Feichtenhofer, Darrell and Xie, "A ConvNet for the 2020s", 2022)
as ``perfmodel.capstone.builders.convnext`` writes it: valid ONNX, runs, and its size and
work agree with the paper, with torchvision's count and with a count by hand."""

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
from perfmodel.capstone.builders.convnext import convnext_t
from perfmodel.capstone.engine import random_inputs

#: A ConvNeXt small enough to run in well under a millisecond: four stages, two blocks in
#: the third.
SMALL = {"batch": 2, "image": 32, "depths": (1, 1, 2, 1), "widths": (8, 16, 32, 64), "classes": 10}
TINY_T = {"depths": (3, 3, 9, 3), "widths": (96, 192, 384, 768)}


def run(model, feeds):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = options.inter_op_num_threads = 1
    session = ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    return session.run(None, feeds)[0]


def by_hand(*, batch, image, depths, widths, kernel=7, classes=1000):
    """The work of a ConvNeXt, layer by layer from the paper's architecture, as a dict:
    ``macs``, the multiply-adds of the convolutions and linear layers; ``biases``, the adds
    of the biases the Conv and Gemm nodes hold; ``vector``, every other FLOP the import
    prices per element: 1 per MatMul bias, residual, layer-scale and GELU step (Div, Erf,
    Add, Mul, Mul), 8 per layer-norm element, ``n - outputs`` for the mean over the image."""
    macs = biases = vector = 0
    side = image // 4  # the 4x4 stride-4 stem, then a layer norm over channels
    macs += side**2 * widths[0] * 3 * 4 * 4
    biases += side**2 * widths[0]
    vector += side**2 * widths[0] * 8
    for stage, (depth, dim) in enumerate(zip(depths, widths, strict=True)):
        if stage:  # a layer norm, then a 2x2 stride-2 convolution
            vector += side**2 * widths[stage - 1] * 8
            side //= 2
            macs += side**2 * dim * widths[stage - 1] * 2 * 2
            biases += side**2 * dim
        pixels = depth * side**2  # over every block of the stage
        macs += pixels * (dim * kernel**2 + 2 * 4 * dim * dim)  # depthwise, two linears
        biases += pixels * dim  # the depthwise convolution's
        # layer norm, first bias, GELU, second bias, layer scale, residual
        vector += pixels * (8 * dim + 4 * dim + 5 * 4 * dim + dim + dim + dim)
    last = widths[-1]
    vector += last * (side**2 - 1) + 8 * last  # the mean over the image, a layer norm
    macs += last * classes
    biases += classes
    return {"macs": batch * macs, "biases": batch * biases, "vector": batch * vector}


def weights_of(model):
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def reference(model, x, *, depths, widths, kernel=7):
    """The forward pass in numpy from the paper's description, reading the model's weights
    by name: an oracle for what the ONNX graph computes."""
    w = weights_of(model)

    def layer_norm(y, name):  # over the last axis, eps 1e-6
        mean, var = y.mean(-1, keepdims=True), y.var(-1, keepdims=True)
        return (y - mean) / np.sqrt(var + 1e-6) * w[f"{name}.weight"] + w[f"{name}.bias"]

    def layer_norm_2d(y, name):  # over channels of (n, c, h, w)
        return layer_norm(y.transpose(0, 2, 3, 1), name).transpose(0, 3, 1, 2)

    def patchify(y, name, k):  # a k x k convolution of stride k: non-overlapping patches
        n, c, h, width = y.shape
        h, width = h // k, width // k
        y = y[:, :, : h * k, : width * k].reshape(n, c, h, k, width, k)
        y = y.transpose(0, 2, 4, 1, 3, 5).reshape(n, h, width, c * k * k)
        kernel_w = w[f"{name}.weight"]
        out = y @ kernel_w.reshape(len(kernel_w), -1).T + w[f"{name}.bias"]
        return out.transpose(0, 3, 1, 2)

    def depthwise(y, name):
        taps, pad = w[f"{name}.weight"][:, 0], kernel // 2
        h, width = y.shape[2:]
        padded = np.pad(y, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
        out = sum(
            taps[:, i, j][None, :, None, None] * padded[:, :, i : i + h, j : j + width]
            for i in range(kernel)
            for j in range(kernel)
        )
        return out + w[f"{name}.bias"][None, :, None, None]

    def linear(y, name):
        return y @ w[f"{name}.weight"] + w[f"{name}.bias"]

    x = layer_norm_2d(patchify(x, "downsample_layers.0.0", 4), "downsample_layers.0.1")
    for stage, depth in enumerate(depths):
        if stage:
            x = layer_norm_2d(x, f"downsample_layers.{stage}.0")
            x = patchify(x, f"downsample_layers.{stage}.1", 2)
        for i in range(depth):
            name = f"stages.{stage}.{i}"
            y = layer_norm(depthwise(x, f"{name}.dwconv").transpose(0, 2, 3, 1), f"{name}.norm")
            y = linear(y, f"{name}.pwconv1")
            y = 0.5 * y * (1 + erf(y / math.sqrt(2)))
            y = linear(y, f"{name}.pwconv2") * w[f"{name}.gamma"]
            x = x + y.transpose(0, 3, 1, 2)
    x = layer_norm(x.mean(axis=(2, 3)), "norm")
    return x @ w["head.weight"].T + w["head.bias"]


# --- valid ONNX ---------------------------------------------------------------------------------


def test_the_model_passes_the_full_checker_and_strict_shape_inference():
    model = convnext_t(**SMALL)
    onnx.checker.check_model(model, full_check=True)
    inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
    shapes = {
        v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
        for v in inferred.graph.value_info
    }
    assert all(all(shape) for shape in shapes.values())  # every tensor's shape is static
    assert shapes["stages.3.0.residual"] == [2, 64, 1, 1]  # 32 / 4 / 2 / 2 / 2
    assert shapes["mean"] == [2, 64]


def test_the_graph_has_the_operators_an_export_writes():
    """Per block: one depthwise Conv (group = channels), two Transposes, a LayerNormalization,
    two MatMuls with bias Adds, the erf GELU; two Transposes around each channel norm."""
    depths, widths = SMALL["depths"], SMALL["widths"]
    model = convnext_t(**SMALL)
    ops = Counter(node.op_type for node in model.graph.node)
    blocks, stages = sum(depths), len(depths)
    assert ops["Conv"] == 1 + (stages - 1) + blocks
    assert ops["LayerNormalization"] == 1 + (stages - 1) + blocks + 1
    assert ops["Transpose"] == 2 * (1 + (stages - 1)) + 2 * blocks
    assert ops["MatMul"] == 2 * blocks
    assert ops["Erf"] == blocks
    assert ops["Gemm"] == ops["ReduceMean"] == 1
    groups = [
        onnx.helper.get_attribute_value(a)
        for node in model.graph.node
        if node.op_type == "Conv"
        for a in node.attribute
        if a.name == "group"
    ]
    assert groups == [widths[0], widths[1], widths[2], widths[2], widths[3]]


# --- it runs and computes what the paper describes ----------------------------------------------


def test_onnxruntime_runs_it_and_matches_a_numpy_forward_pass():
    model = convnext_t(**SMALL)
    feeds = random_inputs(model)
    out = run(model, feeds)
    assert out.shape == (2, 10)
    assert np.isfinite(out).all()
    expected = reference(
        model, feeds["input"].astype(np.float64), depths=SMALL["depths"], widths=SMALL["widths"]
    )
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-6)


def test_a_batch_of_two_gives_each_image_the_answer_it_gets_alone():
    """The same seed writes the same weights whatever the batch: no image leaks into another."""
    pair = convnext_t(**SMALL)
    alone = convnext_t(**SMALL | {"batch": 1})
    images = random_inputs(pair)["input"]
    both = run(pair, {"input": images})
    for i in range(2):
        np.testing.assert_allclose(
            run(alone, {"input": images[i : i + 1]})[0], both[i], rtol=1e-4, atol=1e-5
        )
    assert not np.allclose(both[0], both[1])


def test_another_kernel_and_an_image_that_does_not_halve_evenly_still_match_numpy():
    arguments = {"batch": 1, "image": 45, "depths": (1, 2), "widths": (8, 12), "kernel": 3}
    model = convnext_t(**arguments, classes=5)
    feeds = random_inputs(model, seed=3)
    expected = reference(
        model, feeds["input"].astype(np.float64), depths=(1, 2), widths=(8, 12), kernel=3
    )
    np.testing.assert_allclose(run(model, feeds), expected, rtol=1e-4, atol=1e-6)


# --- size and work against the paper ------------------------------------------------------------


def test_convnext_t_has_the_published_parameter_count():
    """28,589,128: torchvision's ``convnext_tiny`` (num_params; the paper's Table 1 rounds it
    to 29M, its model zoo to 28.6M). ConvNeXt has no batch norm, so no running statistics:
    every initializer is a trained parameter (conv and linear weights and biases, layer-norm
    scales and shifts, the layer-scale vectors) and the counts agree exactly."""
    model = import_onnx(convnext_t(weights=False))
    assert model.parameters == 28_589_128
    assert round(model.parameters / 1e6, 1) == 28.6


@pytest.mark.parametrize(
    "arguments",
    [
        {"batch": 1, "image": 224, **TINY_T},
        {"batch": 3, "image": 100, "depths": (2, 1, 3), "widths": (16, 24, 40), "kernel": 5},
        {"batch": 1, "image": 64, "depths": (1,), "widths": (32,), "classes": 7},
    ],
    ids=["convnext-t", "odd-sizes", "one-stage"],
)
def test_the_import_counts_the_flops_a_count_by_hand_gives(arguments):
    """2 FLOPs per multiply-add in every convolution and linear layer, plus the per-element
    work (biases, norms, GELU, layer scale, residuals): the import and the count by hand
    agree exactly, in total and on the convolutions and linear layers alone. For ConvNeXt-T
    the per-element work is 0.9% of the total."""
    work = by_hand(**{"classes": 1000} | arguments)
    model = import_onnx(convnext_t(weights=False, **arguments))
    dense = sum(n.cost.flops for n in model.nodes if n.op_class in ("conv", "matmul"))
    assert dense == 2 * work["macs"] + work["biases"]
    assert model.flops == pytest.approx(
        2 * work["macs"] + work["biases"] + work["vector"], rel=1e-12
    )


def test_convnext_t_does_the_published_multiply_adds():
    """Liu et al., Table 1: ConvNeXt-T at 224 x 224 is 4.5G FLOPs, counted as multiply-adds
    and rounded to 0.1G, so the count must lie in [4.45G, 4.55G); torchvision lists 4.46G
    for ``convnext_tiny``. The import prices 4.456G multiply-adds in the convolutions and
    linear layers (and 2.7M bias adds beside them)."""
    model = import_onnx(convnext_t(weights=False))
    dense = sum(n.cost.flops for n in model.nodes if n.op_class in ("conv", "matmul"))
    macs = (dense - by_hand(batch=1, image=224, **TINY_T)["biases"]) / 2
    assert 4.45e9 <= macs < 4.55e9
    assert macs / 1e9 == pytest.approx(4.46, abs=0.005)


def test_the_import_raises_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = import_onnx(convnext_t(weights=False))
    assert all(node.supported for node in model.nodes)


# --- bad architectures --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("arguments", "error", "message"),
    [
        ({"batch": 1.5}, ValueError, "`batch` must be an integer"),
        ({"image": 0}, ValueError, "`image` must be a positive integer"),
        ({"depths": 3}, TypeError, "`depths` must be a sequence of integers"),
        ({"widths": "96"}, TypeError, "`widths` must be a sequence of integers"),
        ({"widths": (96, 192, 384, 0)}, ValueError, "`widths` must be a positive integer"),
        ({"depths": (3, 3)}, ValueError, "`depths` and `widths` must give one entry per stage"),
        ({"depths": (), "widths": ()}, ValueError, "one entry per stage"),
        ({"kernel": 4}, ValueError, "`kernel` must be odd"),
        ({"image": 31}, ValueError, "`image` must be at least 32 pixels"),
        ({"classes": True}, TypeError, "`classes` must be an integer"),
        ({"weights": 1}, TypeError, "`weights`"),
        ({"seed": -1}, ValueError, "`seed`"),
    ],
)
def test_bad_architectures_are_refused_naming_the_argument(arguments, error, message):
    with pytest.raises(error, match=message):
        convnext_t(**{"weights": False} | arguments)
