"""MobileNetV2 (Sandler et al., "MobileNetV2: Inverted Residuals and Linear Bottlenecks",
2018) as ``builders.mobilenet.mobilenet_v2`` writes it: a valid ONNX graph that runs, has
the published size, and costs what a count from the architecture says."""

from __future__ import annotations

import warnings
from collections import Counter

import numpy as np
import onnx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_bad_input import BAD, names_the_argument

from perfmodel.capstone import import_onnx
from perfmodel.capstone.builders.mobilenet import mobilenet_v2
from perfmodel.capstone.engine import random_inputs

#: The paper's Table 2: expansion t, channels c, blocks n, first stride s.
TABLE_2 = [(1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1),
           (6, 160, 3, 2), (6, 320, 1, 1)]  # fmt: skip
#: A small variant for onnxruntime: three stages, a narrow head, ten classes.
SMALL = {
    "batch": 2,
    "image": 32,
    "width_multiplier": 0.5,
    "stages": ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 2, 2)),
    "last": 64,
    "classes": 10,
}


def count_from_the_architecture(
    batch: int, image: int, stages: list[tuple[int, int, int, int]], stem: int, last: int,
    classes: int,
) -> tuple[int, int, int]:  # fmt: skip
    """(multiply-adds, FLOPs, batch-norm channels), layer by layer, at width multiplier 1.

    FLOPs as perfmodel prices each node: a convolution or the classifier 2 per
    multiply-add (the classifier's bias 1 per output); batch norm 2 per element (a scale and
    a shift), ReLU6 as Clip 2 per element (a max and a min), a residual Add 1 per element,
    the global average pool 1 per input element less one per output (the adds of a sum).
    Written from the paper's description, not from the builder; the import must agree
    exactly.
    """
    macs = flops = bn_channels = 0
    size = image

    def conv(c_in: int, c_out: int, k: int, stride: int, depthwise: bool, relu6: bool) -> None:
        nonlocal macs, flops, bn_channels, size
        size = (size + 2 * (k // 2) - k) // stride + 1
        out = batch * c_out * size * size
        layer = out * k * k * (1 if depthwise else c_in)
        macs += layer
        flops += 2 * layer + 2 * out + (2 * out if relu6 else 0)  # conv, BN, Clip
        bn_channels += c_out

    conv(3, stem, 3, 2, depthwise=False, relu6=True)
    channels = stem
    for t, c, n, s in stages:
        for block in range(n):
            stride = s if block == 0 else 1
            hidden = channels * t
            if t != 1:
                conv(channels, hidden, 1, 1, depthwise=False, relu6=True)
            conv(hidden, hidden, 3, stride, depthwise=True, relu6=True)
            conv(hidden, c, 1, 1, depthwise=False, relu6=False)
            if stride == 1 and channels == c:
                flops += batch * c * size * size  # the residual Add
            channels = c
    conv(channels, last, 1, 1, depthwise=False, relu6=True)
    flops += batch * last * size * size - batch * last  # the global average pool
    macs += batch * last * classes
    flops += 2 * batch * last * classes + batch * classes  # the classifier and its bias
    return macs, flops, bn_channels


def conv2d(x, w, stride, bias=None):
    """A convolution in numpy (float64), padded by half the kernel, its groups read off the
    weight: ``w`` is (out, in / groups, k, k)."""
    n, c, h, width = x.shape
    out, per_group, k, _ = w.shape
    groups = c // per_group
    x = np.pad(x, ((0, 0), (0, 0), (k // 2, k // 2), (k // 2, k // 2)))
    rows, cols = (h + 2 * (k // 2) - k) // stride + 1, (width + 2 * (k // 2) - k) // stride + 1
    x = x.reshape(n, groups, per_group, *x.shape[2:])
    w = w.reshape(groups, out // groups, per_group, k, k)
    y = np.zeros((n, groups, out // groups, rows, cols))
    for i in range(k):
        for j in range(k):
            patch = x[..., i : i + stride * rows : stride, j : j + stride * cols : stride]
            y += np.einsum("ngchw,goc->ngohw", patch, w[..., i, j])
    y = y.reshape(n, out, rows, cols)
    return y if bias is None else y + bias[None, :, None, None]


def batch_norm(x, w, name, eps=1e-5):
    """Eval-mode batch norm with the running statistics stored under ``name``."""
    scale, shift, mean, var = (w[f"{name}.{p}"][None, :, None, None]
                               for p in ("scale", "bias", "mean", "var"))  # fmt: skip
    return (x - mean) / np.sqrt(var + eps) * scale + shift


def weights_of(model):
    return {
        t.name: onnx.numpy_helper.to_array(t).astype(np.float64) for t in model.graph.initializer
    }


def reference(model, x, *, stages, stem, last):
    """MobileNetV2 by hand in numpy (width multiplier 1), reading the model's weights by name."""
    w = weights_of(model)

    def conv_bn(y, name, stride, relu6):
        y = batch_norm(conv2d(y, w[f"{name}.weight"], stride), w, f"{name}_bn")
        return np.clip(y, 0.0, 6.0) if relu6 else y

    x = conv_bn(x, "features.0", 2, relu6=True)
    channels, index = stem, 1
    for t, c, n, s in stages:
        for block in range(n):
            name, stride = f"features.{index}", s if block == 0 else 1
            y = conv_bn(x, f"{name}.expand", 1, relu6=True) if t != 1 else x
            y = conv_bn(y, f"{name}.depthwise", stride, relu6=True)
            y = conv_bn(y, f"{name}.project", 1, relu6=False)
            x = x + y if stride == 1 and channels == c else y
            channels, index = c, index + 1
    x = conv_bn(x, f"features.{index}", 1, relu6=True).mean(axis=(2, 3))
    return x @ w["classifier.weight"].T + w["classifier.bias"]


def test_the_graph_passes_the_onnx_checker_and_strict_shape_inference():
    for model, logits in ((mobilenet_v2(), [1, 1000]), (mobilenet_v2(**SMALL), [2, 10])):
        onnx.checker.check_model(model, full_check=True)
        inferred = onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)
        output = inferred.graph.output[0].type.tensor_type.shape
        assert [d.dim_value for d in output.dim] == logits


def test_the_graph_is_the_one_an_export_of_the_paper_network_writes():
    graph = mobilenet_v2(weights=False).graph
    ops = Counter(node.op_type for node in graph.node)
    # 1 stem, 2 in the first block, 3 in each of the other 16, 1 head: 52 convolutions, each
    # followed by batch norm; ReLU6 after all but the 17 projections; 10 blocks keep
    # their shape (n - 1 per stage but the first and last, plus none where 64 becomes 96).
    assert ops["Conv"] == ops["BatchNormalization"] == 52
    assert ops["Clip"] == 52 - 17
    assert ops["Add"] == 10
    assert (ops["GlobalAveragePool"], ops["Flatten"], ops["Gemm"]) == (1, 1, 1)
    depthwise = [n for n in graph.node if n.op_type == "Conv" and n.name.endswith("depthwise")]
    assert len(depthwise) == 17
    weights = {t.name: list(t.dims) for t in graph.initializer}
    for node in depthwise:
        group = next(a.i for a in node.attribute if a.name == "group")
        assert weights[node.input[1]] == [group, 1, 3, 3]
    clip = next(n for n in graph.node if n.op_type == "Clip")
    bounds = {n.output[0]: onnx.numpy_helper.to_array(n.attribute[0].t) for n in graph.node
              if n.op_type == "Constant"}  # fmt: skip
    assert [float(bounds[name]) for name in clip.input[1:]] == [0.0, 6.0]


def test_a_small_variant_runs_on_onnxruntime_and_its_output_depends_on_the_input():
    import onnxruntime as ort

    model = mobilenet_v2(**SMALL)
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

    stages = [(1, 8, 1, 1), (6, 16, 2, 2), (4, 16, 2, 1), (6, 24, 1, 2)]
    arguments = {"stages": stages, "stem": 8, "last": 32}
    model = mobilenet_v2(batch=2, image=19, classes=5, seed=3, **arguments)
    feeds = random_inputs(model, seed=2)
    got = ort.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    expected = reference(model, feeds["input"].astype(np.float64), **arguments)
    assert np.abs(expected).max() > 0.1
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5 * np.abs(expected).max())


def test_the_paper_network_has_its_published_parameter_count():
    """torchvision's MobileNetV2 has 3,504,872 trained parameters (batch norm's scale and
    shift included); ONNX also stores batch norm's running mean and variance, 17,056
    channels each. Convolution and classifier tensors alone are 3,470,760, the 3.47M of
    TensorFlow's slim model table, which the paper prints as 3.4M (two figures, cut)."""
    model = import_onnx(mobilenet_v2(weights=False))
    *_, bn_channels = count_from_the_architecture(1, 224, TABLE_2, 32, 1280, 1000)
    assert bn_channels == 17_056
    assert model.parameters == 3_504_872 + 2 * bn_channels
    layers = sum(n.weights for n in model.nodes if n.op_type in ("Conv", "Gemm"))
    assert layers == 3_470_760
    assert 3.4e6 <= layers < 3.5e6


def test_the_flops_agree_with_a_count_from_the_architecture_and_the_paper():
    model = import_onnx(mobilenet_v2(weights=False))
    macs, flops, _ = count_from_the_architecture(1, 224, TABLE_2, 32, 1280, 1000)
    layers = sum(n.cost.flops for n in model.nodes if n.op_class in ("conv", "matmul"))
    assert layers == 2 * macs + 1000  # the classifier's bias is the only add on top
    assert model.flops == flops  # exactly: the same pricing rules, node by node
    # The paper's 300M multiply-adds at 224x224, width 1.0: we count 300.77M (0.26 % more);
    # at width 1.4 the paper's 585M against 582.2M (0.5 % fewer).
    assert macs == 300_774_272
    assert macs == pytest.approx(300e6, rel=0.005)
    wide = import_onnx(mobilenet_v2(width_multiplier=1.4, weights=False))
    wide_layers = sum(n.cost.flops for n in wide.nodes if n.op_class in ("conv", "matmul"))
    assert wide_layers / 2 == pytest.approx(585e6, rel=0.01)


def test_a_small_variant_also_matches_the_count_from_the_architecture():
    # Width multiplier 1 so the count needs no rounding; an odd image size exercises the
    # ceil of each halving.
    stages = [(1, 8, 1, 1), (6, 16, 2, 2), (4, 24, 2, 2), (6, 24, 1, 1)]
    model = import_onnx(
        mobilenet_v2(batch=3, image=45, stages=stages, stem=8, last=40, classes=7, weights=False)
    )
    macs, flops, bn_channels = count_from_the_architecture(3, 45, stages, 8, 40, 7)
    layers = sum(n.cost.flops for n in model.nodes if n.op_class in ("conv", "matmul"))
    assert layers == 2 * macs + 3 * 7
    assert model.flops == flops  # exactly: the same pricing rules, node by node
    assert sum(n.weights for n in model.nodes if n.op_type == "BatchNormalization") == 4 * (
        bn_channels
    )


def test_the_import_raises_no_warning():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model = import_onnx(mobilenet_v2(weights=False))
    assert all(node.supported for node in model.nodes)


VALID = {"batch": 1, "image": 16, "width_multiplier": 0.5, "stages": ((1, 8, 1, 1),),
         "last": 16, "classes": 4, "weights": False}  # fmt: skip
KINDS = {"batch": "count", "image": "count", "width_multiplier": "positive", "stem": "count",
         "last": "count", "classes": "count", "weights": "flag", "seed": "count0"}  # fmt: skip


@pytest.mark.parametrize(("argument", "kind"), KINDS.items())
@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_a_bad_argument_is_a_clear_error_naming_it(argument, kind, data):
    bad = data.draw(BAD[kind], label=argument)
    with pytest.raises((TypeError, ValueError)) as caught:
        mobilenet_v2(**{**VALID, argument: bad})
    assert names_the_argument(str(caught.value), argument), str(caught.value)


@pytest.mark.parametrize(
    ("stages", "error", "message"),
    [
        ((), ValueError, "at least one row"),
        ("1,16,1,1", TypeError, "sequence of"),
        (3, TypeError, "sequence of"),
        (((1, 16, 1),), TypeError, "four counts"),
        (((1, 16, 1, 3),), ValueError, "strides must be 1 or 2"),
        (((0, 16, 1, 1),), ValueError, "positive integer"),
        (((1, 16.5, 1, 1),), ValueError, "integer"),
    ],
)
def test_bad_stages_are_a_clear_error(stages, error, message):
    with pytest.raises(error, match=message) as caught:
        mobilenet_v2(**{**VALID, "stages": stages})
    assert "`stages`" in str(caught.value)


def test_numpy_numbers_are_numbers():
    as_numpy = {"batch": np.int64(1), "image": np.int64(16), "width_multiplier": np.float64(0.5)}
    made = mobilenet_v2(**{**VALID, **as_numpy})
    assert made.SerializeToString() == mobilenet_v2(**VALID).SerializeToString()
