"""EfficientNet (Tan and Le, "EfficientNet: Rethinking Model Scaling for Convolutional
Neural Networks", 2019) as ``builders.efficientnet.efficientnet_b0`` writes it: a valid ONNX
graph that runs, has the published size at B0 and under compound scaling, and costs what a
count from the architecture says."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bad_input import BAD, names_the_argument
from test_zoo_mobilenet import batch_norm, conv2d, weights_of

from perfmodel.capstone import import_onnx
from perfmodel.capstone.builders.efficientnet import efficientnet_b0
from perfmodel.capstone.engine import random_inputs

#: The paper's Table 1: expansion t, kernel k, channels c, layers n, first stride s.
TABLE_1 = [(1, 3, 16, 1, 1), (6, 3, 24, 2, 2), (6, 5, 40, 2, 2), (6, 3, 80, 3, 2),
           (6, 5, 112, 3, 1), (6, 5, 192, 4, 2), (6, 3, 320, 1, 1)]  # fmt: skip
#: A small variant for onnxruntime: three stages (both kernel sizes), a narrow head.
SMALL = {
    "batch": 2,
    "image": 32,
    "width_coefficient": 0.5,
    "stages": ((1, 3, 16, 1, 1), (6, 3, 24, 2, 2), (6, 5, 40, 1, 2)),
    "head": 64,
    "classes": 10,
}


def count_from_the_architecture(
    batch: int, image: int, stages: list[tuple[int, int, int, int, int]], stem: int, head: int,
    classes: int,
) -> tuple[int, int, int]:  # fmt: skip
    """(multiply-adds, FLOPs, batch-norm channels), layer by layer, at width and depth 1.

    FLOPs as perfmodel prices each node: a convolution or the classifier 2 per multiply-add
    (a bias 1 per output); batch norm 2 per element; SiLU 2 per element (Sigmoid, then
    Mul); the excitation's gate 1 per channel (Sigmoid) and its scaling 1 per element (Mul);
    a residual Add 1 per element; a global average pool 1 per input element less one per
    output. Written from the paper's description, not from the builder; the import must
    agree exactly.
    """
    macs = flops = bn_channels = 0
    size = image

    def conv(c_in: int, c_out: int, k: int, stride: int, depthwise: bool, silu: bool) -> None:
        nonlocal macs, flops, bn_channels, size
        size = (size + 2 * (k // 2) - k) // stride + 1
        out = batch * c_out * size * size
        layer = out * k * k * (1 if depthwise else c_in)
        macs += layer
        flops += 2 * layer + 2 * out + (2 * out if silu else 0)  # conv, BN, SiLU
        bn_channels += c_out

    def squeeze_excite(channels: int, squeezed: int) -> None:
        nonlocal macs, flops
        pixels = batch * channels * size * size
        flops += pixels - batch * channels  # the global average pool
        macs += 2 * batch * channels * squeezed  # two 1x1 convolutions on one pixel
        flops += 4 * batch * channels * squeezed + batch * (squeezed + channels)  # and biases
        flops += 2 * batch * squeezed + batch * channels + pixels  # SiLU, gate, scaling

    conv(3, stem, 3, 2, depthwise=False, silu=True)
    channels = stem
    for t, k, c, n, s in stages:
        for layer in range(n):
            stride = s if layer == 0 else 1
            hidden = channels * t
            if t != 1:
                conv(channels, hidden, 1, 1, depthwise=False, silu=True)
            conv(hidden, hidden, k, stride, depthwise=True, silu=True)
            squeeze_excite(hidden, max(1, channels // 4))
            conv(hidden, c, 1, 1, depthwise=False, silu=False)
            if stride == 1 and channels == c:
                flops += batch * c * size * size  # the residual Add
            channels = c
    conv(channels, head, 1, 1, depthwise=False, silu=True)
    flops += batch * head * size * size - batch * head  # the global average pool
    macs += batch * head * classes
    flops += 2 * batch * head * classes + batch * classes  # the classifier and its bias
    return macs, flops, bn_channels


def reference(model, x, *, stages, stem, head):
    """EfficientNet by hand in numpy (width and depth 1), reading the model's weights by
    name."""
    w = weights_of(model)

    def silu(y):
        return y / (1 + np.exp(-y))

    def conv_bn(y, name, stride, act):
        y = batch_norm(conv2d(y, w[f"{name}.weight"], stride), w, f"{name}_bn")
        return silu(y) if act else y

    def squeeze_excite(y, name):
        s = y.mean(axis=(2, 3), keepdims=True)
        s = silu(conv2d(s, w[f"{name}.fc1.weight"], 1, w[f"{name}.fc1.bias"]))
        s = conv2d(s, w[f"{name}.fc2.weight"], 1, w[f"{name}.fc2.bias"])
        return y / (1 + np.exp(-s))

    x = conv_bn(x, "features.0", 2, act=True)
    channels, index = stem, 1
    for t, _, c, n, s in stages:
        for layer in range(n):
            name, stride = f"features.{index}", s if layer == 0 else 1
            y = conv_bn(x, f"{name}.expand", 1, act=True) if t != 1 else x
            y = squeeze_excite(conv_bn(y, f"{name}.depthwise", stride, act=True), f"{name}.se")
            y = conv_bn(y, f"{name}.project", 1, act=False)
            x = x + y if stride == 1 and channels == c else y
            channels, index = c, index + 1
    x = conv_bn(x, f"features.{index}", 1, act=True).mean(axis=(2, 3))
    return x @ w["classifier.weight"].T + w["classifier.bias"]


def test_the_graph_passes_the_onnx_checker_and_strict_shape_inference():
    for model, logits in ((efficientnet_b0(), [1, 1000]), (efficientnet_b0(**SMALL), [2, 10])):
        onnx.checker.check_model(model, full_check=True)
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        output = inferred.graph.output[0].type.tensor_type.shape
        assert [d.dim_value for d in output.dim] == logits


def test_the_graph_is_the_one_an_export_of_b0_writes():
    graph = efficientnet_b0(weights=False).graph
    ops = Counter(node.op_type for node in graph.node)
    # 16 MBConv blocks: 15 expand; all have a depthwise, two excitation and a projection
    # convolution. Batch norm follows all but the 32 excitation convolutions; SiLU
    # (Sigmoid, Mul) follows the stem, the head, each expansion, depthwise and first
    # excitation convolution; each excitation adds a Sigmoid gate and a Mul.
    assert ops["Conv"] == 1 + 15 + 16 * 4 + 1
    assert ops["BatchNormalization"] == ops["Conv"] - 2 * 16
    silu = 1 + 15 + 16 + 16 + 1
    assert ops["Sigmoid"] == ops["Mul"] == silu + 16
    assert ops["GlobalAveragePool"] == 16 + 1
    assert ops["Add"] == 9  # n - 1 per stage, plus none where 80 becomes 112
    assert (ops["Flatten"], ops["Gemm"]) == (1, 1)
    weights = {t.name: list(t.dims) for t in graph.initializer}
    kernels = Counter()
    for node in graph.node:
        if node.op_type == "Conv" and node.name.endswith("depthwise"):
            group = next(a.i for a in node.attribute if a.name == "group")
            shape = weights[node.input[1]]
            assert shape[:2] == [group, 1]
            kernels[shape[2]] += 1
    assert kernels == {3: 7, 5: 9}
    for node in graph.node:  # SiLU is x * sigmoid(x), on the same tensor
        if node.op_type == "Sigmoid" and not node.name.endswith("gate"):
            (user,) = [n for n in graph.node if node.output[0] in n.input]
            assert user.op_type == "Mul" and sorted(user.input) == sorted(
                [*node.input, *node.output]
            )


def test_a_small_variant_runs_on_onnxruntime_and_its_output_depends_on_the_input():
    import onnxruntime as ort

    model = efficientnet_b0(**SMALL)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 2
    session = ort.InferenceSession(model.SerializeToString(), options)
    first = session.run(None, random_inputs(model, seed=0))[0]
    second = session.run(None, random_inputs(model, seed=1))[0]
    assert first.shape == (2, 10)
    assert np.isfinite(first).all() and np.isfinite(second).all()
    assert not np.allclose(first[0], first[1]), "the two images of a batch give one answer"
    assert not np.allclose(first, second), "the logits ignore the input"


def test_onnxruntime_matches_a_numpy_forward_pass_written_from_the_paper():
    import onnxruntime as ort

    stages = [(1, 3, 8, 1, 1), (6, 5, 16, 2, 2), (4, 3, 16, 2, 1), (6, 7, 24, 1, 2)]
    arguments = {"stages": stages, "stem": 8, "head": 32}
    model = efficientnet_b0(batch=2, image=19, classes=5, seed=3, **arguments)
    feeds = random_inputs(model, seed=2)
    got = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    expected = reference(model, feeds["input"].astype(np.float64), **arguments)
    assert np.abs(expected).max() > 0.1
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())


def test_b0_has_its_published_parameter_count():
    """torchvision's EfficientNet-B0 has 5,288,548 trained parameters, which the paper
    prints as 5.3M; ONNX also stores batch norm's running mean and variance, 21,008
    channels each (Keras counts the same 42,016 as non-trainable, plus 7 of its input
    normalisation)."""
    model = import_onnx(efficientnet_b0(weights=False))
    *_, bn_channels = count_from_the_architecture(1, 224, TABLE_1, 32, 1280, 1000)
    assert bn_channels == 21_008
    assert model.parameters == 5_288_548 + 2 * bn_channels
    assert 5.25e6 <= model.parameters - 2 * bn_channels < 5.35e6


@pytest.mark.parametrize(
    ("width", "depth", "image", "trained"),
    [(1.0, 1.1, 240, 7_794_184), (1.1, 1.2, 260, 9_109_994), (1.2, 1.4, 300, 12_233_232)],
    ids=["B1", "B2", "B3"],
)
def test_compound_scaling_gives_the_published_sizes_of_b1_to_b3(width, depth, image, trained):
    """torchvision's trained-parameter counts of B1, B2 and B3 (the paper: 7.8M, 9.2M, 12M):
    widths rounded to multiples of 8, depths rounded up."""
    model = import_onnx(
        efficientnet_b0(
            width_coefficient=width, depth_coefficient=depth, image=image, weights=False
        )
    )
    bn_values = sum(n.weights for n in model.nodes if n.op_type == "BatchNormalization")
    assert model.parameters == trained + bn_values // 2


def test_the_flops_agree_with_a_count_from_the_architecture_and_the_paper():
    model = import_onnx(efficientnet_b0(weights=False))
    macs, flops, _ = count_from_the_architecture(1, 224, TABLE_1, 32, 1280, 1000)
    assert model.flops == flops  # exactly: the same pricing rules, node by node
    graph = efficientnet_b0(weights=False).graph
    biases = sum(  # one add per output: the excitation convolutions' and the classifier's
        int(np.prod(t.dims))
        for t in graph.initializer
        if t.name.endswith(("fc1.bias", "fc2.bias", "classifier.bias"))
    )
    assert biases == 1000 + 9_340
    layers = sum(n.cost.flops for n in model.nodes if n.op_class in ("conv", "matmul"))
    assert layers == 2 * macs + biases
    # The paper's 0.39B FLOPs (multiply-adds), two figures: 385.81M rounds to it.
    assert macs == 385_814_752
    assert 0.385e9 <= macs < 0.395e9


def test_a_small_variant_also_matches_the_count_from_the_architecture():
    # Width and depth 1 so the count needs no rounding; an odd image size exercises the
    # ceil of each halving, a 7x7 kernel the padding.
    stages = [(1, 3, 8, 1, 1), (6, 5, 16, 2, 2), (4, 7, 24, 2, 2), (3, 3, 24, 1, 1)]
    model = import_onnx(
        efficientnet_b0(batch=3, image=45, stages=stages, stem=8, head=40, classes=7,
                        weights=False)
    )  # fmt: skip
    _, flops, bn_channels = count_from_the_architecture(3, 45, stages, 8, 40, 7)
    assert model.flops == flops
    bn_values = sum(n.weights for n in model.nodes if n.op_type == "BatchNormalization")
    assert bn_values == 4 * bn_channels


def test_the_import_raises_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = import_onnx(efficientnet_b0(weights=False))
    assert all(node.supported for node in model.nodes)


VALID = {"batch": 1, "image": 16, "width_coefficient": 0.5, "stages": ((1, 3, 8, 1, 1),),
         "head": 16, "classes": 4, "weights": False}  # fmt: skip
KINDS = {"batch": "count", "image": "count", "width_coefficient": "positive",
         "depth_coefficient": "positive", "stem": "count", "head": "count",
         "se_ratio": "fraction", "classes": "count", "weights": "flag",
         "seed": "count0"}  # fmt: skip


@pytest.mark.parametrize(("argument", "kind"), KINDS.items())
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_a_bad_argument_is_a_clear_error_naming_it(argument, kind, data):
    bad = data.draw(BAD[kind], label=argument)
    with pytest.raises((TypeError, ValueError)) as caught:
        efficientnet_b0(**{**VALID, argument: bad})
    assert names_the_argument(str(caught.value), argument), str(caught.value)


@pytest.mark.parametrize(
    ("stages", "error", "message"),
    [
        ((), ValueError, "at least one row"),
        ("1,3,16,1,1", TypeError, "sequence of"),
        (None, TypeError, "sequence of"),
        (((1, 3, 16, 1),), TypeError, "five counts"),
        (((1, 4, 16, 1, 1),), ValueError, "kernels must be odd"),
        (((1, 3, 16, 1, 3),), ValueError, "strides must be 1 or 2"),
        (((1, 3, 16, 0, 1),), ValueError, "positive integer"),
        (((1, 3.5, 16, 1, 1),), ValueError, "integer"),
    ],
)
def test_bad_stages_are_a_clear_error(stages, error, message):
    with pytest.raises(error, match=message) as caught:
        efficientnet_b0(**{**VALID, "stages": stages})
    assert "`stages`" in str(caught.value)


def test_numpy_numbers_are_numbers():
    as_numpy = {
        "batch": np.int64(1),
        "se_ratio": np.float64(0.25),
        "depth_coefficient": np.float64(1.0),
    }
    made = efficientnet_b0(**{**VALID, **as_numpy})
    assert made.SerializeToString() == efficientnet_b0(**VALID).SerializeToString()
