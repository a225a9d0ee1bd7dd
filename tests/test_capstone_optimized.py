"""onnxruntime's optimised graph, imported and priced: fused nodes as the nodes they stand for."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from perfmodel.capstone import builders, coverage, import_onnx  # noqa: E402
from perfmodel.capstone.onnx_ops import Tensor  # noqa: E402
from perfmodel.capstone.onnx_optimized import (  # noqa: E402
    FUSED_OPS,
    fused_kind,
    optimized,
    price_fused,
)
from perfmodel.capstone.zoo import zoo_model  # noqa: E402

F32 = onnx.TensorProto.FLOAT


def test_a_fused_mlp_is_priced_as_its_gemms_biases_and_activations():
    mlp = builders.mlp(batch=8, widths=(32, 64, 8))
    plain, fused = import_onnx(mlp), import_onnx(mlp, optimization="all")
    assert [n.op_type for n in fused.nodes] == ["FusedGemm", "Gemm"]
    # one node stands for each MatMul, its bias Add and its ReLU, in the export's order
    assert fused.nodes[0].origin == ("fc0", "fc0_bias", "fc0_relu")
    assert fused.nodes[1].origin == ("fc1", "fc1_bias")
    # the same FLOPs; the intermediates are no longer written and read back
    flops = sum(n.cost.flops for n in plain.nodes)
    assert sum(n.cost.flops for n in fused.nodes) == pytest.approx(flops)
    moved = sum(n.cost.bytes_read + n.cost.bytes_written for n in fused.nodes)
    assert moved < sum(n.cost.bytes_read + n.cost.bytes_written for n in plain.nodes)
    head = fused.nodes[0]
    assert head.cost.bytes_read == 4 * (8 * 32 + 32 * 64 + 64)  # x, W, b read once (fp32)
    assert head.cost.bytes_written == 4 * 8 * 64
    assert head.kind == "gemm" and head.op_class == "matmul"


def test_every_zoo_model_imports_at_every_level_without_a_warning():
    for name in ("MobileNetV2", "BERT", "EfficientNet-B0", "ViT"):
        model = zoo_model(name, 1)
        plain = import_onnx(model)
        for level in ("basic", "all"):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                found = import_onnx(model, optimization=level)
            assert all(node.supported for node in found.nodes), (name, level)

            # folding a batch norm into its convolution removes its FLOPs; padding the blocked
            # layout's channels adds some: the matrix work stays, give or take that padding
            def matrix(imported: object) -> float:
                return sum(n.cost.flops for n in imported.nodes  # type: ignore[attr-defined]
                           if n.op_class in ("conv", "matmul", "attention"))  # fmt: skip

            assert 0.99 <= matrix(found) / matrix(plain) <= 1.1, (name, level)
            # each exported node stands in at most one optimised node
            named = [o for node in found.nodes for o in node.origin]
            assert len(named) == len(set(named)), (name, level)
        fused = import_onnx(model, optimization="all")
        assert len(fused.nodes) < len(plain.nodes)


def test_a_blocked_depthwise_convolution_keeps_its_kind_and_its_fused_activation():
    found = import_onnx(zoo_model("MobileNetV2", 1), optimization="all")
    depthwise = next(n for n in found.nodes if n.name == "features.1.depthwise_relu6_nchwc")
    assert depthwise.kind == "depthwise" and depthwise.im2col_bytes == 0
    assert depthwise.origin == (
        "features.1.depthwise", "features.1.depthwise_bn", "features.1.depthwise_relu6"
    )  # fmt: skip
    assert "com.microsoft.nchwc:Conv" in coverage().fused
    # every exported node is in exactly one optimised node: residual adds and the fused SiLUs
    # (QuickGelu) included
    for name in ("ResNet-50", "EfficientNet-B0"):
        exported = zoo_model(name, 1, weights=False)
        named = [o for node in import_onnx(exported, optimization="all").nodes for o in node.origin]
        wanted = [n.name for n in import_onnx(exported).nodes if n.op_type != "Constant"]
        assert sorted(named) == sorted(wanted), name


def _node(op: str, inputs: list[str], outputs: list[str], domain: str = "com.microsoft",
          **attrs: object) -> object:  # fmt: skip
    return onnx.helper.make_node(op, inputs, outputs, domain=domain, **attrs)


def test_contrib_attention_and_gelus_are_their_closed_forms():
    b, s, d = 2, 16, 64
    tensors = {"x": Tensor((b, s, d), F32), "w": Tensor((d, 3 * d), F32),
               "bias": Tensor((3 * d,), F32), "y": Tensor((b, s, d), F32)}  # fmt: skip
    attention = _node("Attention", ["x", "w", "bias"], ["y"], num_heads=4)
    priced = price_fused(attention, tensors, {"w", "bias"})
    assert priced.cost.flops == 2 * b * s * d * 3 * d + 4 * b * s * s * d + 5 * b * 4 * s * s
    assert priced.op_class == "attention" and fused_kind(attention, tensors) == "gemm"
    gelu = _node("Gelu", ["x"], ["y"])
    priced = price_fused(gelu, tensors, set())
    assert priced.cost.flops == 5 * b * s * d  # divide, erf, add, two multiplies
    assert priced.cost.bytes_read == priced.cost.bytes_written == 4 * b * s * d
    assert fused_kind(gelu, tensors) == "transcendental"
    assert fused_kind(_node("QuickGelu", ["x"], ["y"]), tensors) == "sigmoid"  # x·sigmoid(αx)
    skip = _node("SkipLayerNormalization", ["x", "x", "bias", "bias"], ["y"])
    tensors["bias"] = Tensor((d,), F32)
    priced = price_fused(skip, tensors, set())
    assert priced.op_class == "normalization"
    assert fused_kind(skip, tensors) == "skip normalization"  # its own, slower kernel
    assert priced.cost.bytes_read == 4 * (2 * b * s * d + 2 * d)  # input, skip, gamma, beta
    assert "SkipLayerNormalization" in FUSED_OPS["com.microsoft"]


def test_the_level_is_checked():
    mlp = builders.mlp(batch=1, widths=(4, 2))
    with pytest.raises(ValueError, match="`optimization` must be one of"):
        import_onnx(mlp, optimization="fast")
    with pytest.raises(ValueError, match="`optimization` must be one of"):
        optimized(mlp, "none")


def test_kernel_rates_are_measured_and_used_at_one_level():
    from perfmodel.capstone import measure_kernels

    rates = measure_kernels(kinds=("gemm", "gemv"), rounds=1, runs=1, progress=False,
                            optimization="all")  # fmt: skip
    assert rates.optimization == "all"
    mlp = builders.mlp(batch=8, widths=(32, 64, 8))
    assert rates.predict(import_onnx(mlp, optimization="all")) > 0
    with pytest.raises(ValueError, match="measured at optimization='all'.*imported at 'none'"):
        rates.predict(import_onnx(mlp))
    again = type(rates).from_json(rates.to_json())
    assert again.optimization == "all"
    with pytest.raises(ValueError, match="`optimization` must be one of"):
        measure_kernels(kinds=("conv",), optimization="most", progress=False)


def test_the_held_out_families_build_run_and_import_at_every_level():
    import onnxruntime as ort

    from perfmodel.capstone.builders import HELD_OUT
    from perfmodel.capstone.engine import random_inputs

    for name in HELD_OUT:
        model = zoo_model(name, 2)
        onnx.checker.check_model(model)
        session = ort.InferenceSession(model.SerializeToString(),
                                       providers=["CPUExecutionProvider"])  # fmt: skip
        out = session.run(None, random_inputs(model))[0]
        assert out.shape[0] == 2 and out.shape[-1] in (1000, 2000), name
        for level in ("none", "all"):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                found = import_onnx(zoo_model(name, 2, weights=False), optimization=level)
            assert all(node.supported for node in found.nodes), (name, level)
    shuffle = import_onnx(zoo_model("ShuffleNetV2", 1, weights=False))
    assert {"Split", "Transpose", "Concat"} <= {node.op_type for node in shuffle.nodes}
    gru = import_onnx(zoo_model("GRU", 1, weights=False))
    assert [node.kind for node in gru.nodes].count("gru") == 2  # priced on GRU probes


def test_squeezenet_has_the_published_parameters_and_multiply_adds():
    """torchvision's squeezenet1_1: 1,235,496 parameters and 0.349 G multiply-adds at 224."""
    from perfmodel.capstone.builders import squeezenet

    model = import_onnx(squeezenet(1, 224, weights=False))
    assert model.parameters == 1_235_496
    macs = sum(node.cost.flops for node in model.nodes if node.op_type == "Conv") / 2
    assert macs == pytest.approx(0.349e9, rel=0.01)
    assert "BatchNormalization" not in {node.op_type for node in model.nodes}


def _already_fused(*, data_dependent: bool) -> onnx.ModelProto:
    """An export onnxruntime's transformer optimiser already fused: a skip layer norm (and,
    when asked, a NonZero whose length depends on the values)."""
    from onnx import helper, numpy_helper

    nodes = [_node("SkipLayerNormalization", ["x", "x", "g", "b"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", F32, None)]
    if data_dependent:
        nodes.append(helper.make_node("NonZero", ["x"], ["where"]))
        outputs.append(helper.make_tensor_value_info("where", onnx.TensorProto.INT64, None))
    params = [numpy_helper.from_array(np.full(64, v, np.float32), name)
              for name, v in (("g", 1.0), ("b", 0.0))]  # fmt: skip
    graph = helper.make_graph(nodes, "fused", [helper.make_tensor_value_info("x", F32, [2, 8, 64])],
                              outputs, params)  # fmt: skip
    model = helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    )
    model.ir_version = 8
    return model


def test_an_export_already_fused_imports_as_exported_sized_by_one_run():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (skip,) = import_onnx(_already_fused(data_dependent=False)).nodes
    assert (skip.kind, skip.op_class) == ("skip normalization", "normalization")
    assert skip.cost.bytes_written == 4 * 2 * 8 * 64  # its output, sized by the run
    with pytest.raises(ValueError, match="NonZero.*not known before the model runs"):
        import_onnx(_already_fused(data_dependent=True))  # a value-dependent size: refused


@pytest.mark.parametrize(("batch", "seq", "heads", "head"), [(2, 16, 4, 8), (1, 7, 12, 64)])
def test_fused_attention_has_one_price_the_one_lectures_07_and_09_use(batch, seq, heads, head):
    """onnxruntime's MultiHeadAttention keeps its scores inside the kernel: priced as
    ops.attention(..., fused=True), FlashAttention's count, FLOPs and bytes alike."""
    from perfmodel import ops

    tensors = {name: Tensor((batch, seq, heads * head), F32) for name in "qkvy"}
    mha = _node("MultiHeadAttention", ["q", "k", "v"], ["y"], num_heads=heads)
    priced = price_fused(mha, tensors, set()).cost
    closed = ops.attention(batch, heads, seq, head, fused=True, dtype="fp32")
    assert (priced.flops, priced.bytes_read, priced.bytes_written) == (
        closed.flops, closed.bytes_read, closed.bytes_written)  # fmt: skip


def test_what_a_hostile_caller_tried_is_priced_or_refused_clearly():
    from onnx import helper

    b, s, n, h = 2, 8, 4, 16
    d = n * h
    tensors = {"q": Tensor((b, s, d), F32), "k": Tensor((b, n, 12, h), F32),
               "v": Tensor((b, n, 12, 2 * h), F32), "y": Tensor((b, s, 2 * d), F32)}  # fmt: skip
    mha = _node("MultiHeadAttention", ["q", "k", "v"], ["y"], num_heads=n)
    # keys as (batch, heads, length, head): 12 keys, values twice as wide
    assert price_fused(mha, tensors, set()).cost.flops == (
        2 * b * s * 12 * (d + 2 * d) + 5 * b * n * s * 12
    )
    skip = _node("SkipLayerNormalization", ["q", "q", "g"], ["o"])  # no beta, no bias
    sized = {"q": Tensor((b, s, d), F32), "g": Tensor((d,), F32), "o": Tensor((b, s, d), F32)}
    with_bias = _node("SkipLayerNormalization", ["q", "q", "g", "", "g"], ["o"])
    plain, biased = (price_fused(x, sized, set()).cost.flops for x in (skip, with_bias))
    assert biased - plain == b * s * d  # one add more
    # a model onnxruntime will not run: a clear refusal naming the level
    custom = helper.make_model(
        helper.make_graph(
            [helper.make_node("MyOp", ["x"], ["y"], domain="my.ops")], "custom",
            [helper.make_tensor_value_info("x", F32, [2, 2])],
            [helper.make_tensor_value_info("y", F32, [2, 2])],
        ),
        opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my.ops", 1)],
    )  # fmt: skip
    with pytest.raises(ValueError, match="could not optimise and run this model at optimization"):
        import_onnx(custom, optimization="all")
    # rates keep the level as spelled by the package
    from perfmodel.capstone import measure_kernels

    rates = measure_kernels(kinds=("gemm",), rounds=1, runs=1, progress=False,
                            optimization=" ALL ")  # fmt: skip
    assert rates.optimization == "all"


def test_the_readme_counts_the_fused_operators_priced():
    from conftest import ROOT

    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert f"its {len(coverage().fused)} fused and contrib operators" in readme
    assert len(coverage().fused) == sum(len(ops) for ops in FUSED_OPS.values())


def test_each_fusion_saves_its_origins_time_less_its_own():
    from perfmodel.capstone import fusions, measure_kernels

    mlp = builders.mlp(batch=8, widths=(32, 64, 8))
    plain = measure_kernels(kinds=("gemm", "gemv", "elementwise", "broadcast"), rounds=1, runs=1,
                            progress=False)  # fmt: skip
    fused = measure_kernels(kinds=("gemm", "gemv", "elementwise", "broadcast"), rounds=1, runs=1,
                            progress=False, optimization="all")  # fmt: skip
    found = fusions(mlp, plain, fused)
    exported = {n.name: n for n in import_onnx(mlp).nodes}
    optimised = {n.name: n for n in import_onnx(mlp, optimization="all").nodes}
    assert [f.origin for f in found] and all(len(f.origin) > 1 for f in found)
    assert [f.saved_s for f in found] == sorted((f.saved_s for f in found), reverse=True)
    for f in found:  # closed form: the exported nodes' time less the fused node's
        alone = sum(plain.node_time(exported[o]) for o in f.origin)
        assert f.saved_s == pytest.approx(alone - fused.node_time(optimised[f.name]))
        assert f.origin_ops == tuple(exported[o].op_type for o in f.origin)
    with pytest.raises(TypeError, match="`fused` must be KernelRates"):
        fusions(mlp, plain, "fast")  # type: ignore[arg-type]
