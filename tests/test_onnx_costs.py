"""Cost rules for the operators exporters write, checked against closed forms and onnxruntime,
and shapes that only constant folding settles."""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from perfmodel import capstone, ops
from perfmodel.capstone.onnx_costs import price
from perfmodel.capstone.onnx_ops import NoRule, Tensor


def model_of(nodes, inputs, output, output_shape, initializers=(), elem=TensorProto.FLOAT):
    values = [helper.make_tensor_value_info(name, elem, list(shape)) for name, shape in inputs]
    out = helper.make_tensor_value_info(output, elem, output_shape)
    graph = helper.make_graph(nodes, "g", values, [out], list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def weight(name, shape, seed=0):
    values = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return numpy_helper.from_array(values, name)


def run(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)


# --- recurrent layers, by the ONNX spec -----------------------------------------------------------


@pytest.mark.parametrize(
    ("op", "gates", "elementwise"), [("LSTM", 4, 9), ("GRU", 3, 8), ("RNN", 1, 1)]
)
@pytest.mark.parametrize("direction", ["forward", "bidirectional"])
def test_a_recurrent_layer_costs_its_gate_matmuls_biases_and_cell_every_step(
    op, gates, elementwise, direction
):
    steps, batch, width, hidden = 7, 3, 5, 6
    directions = 2 if direction == "bidirectional" else 1
    node = helper.make_node(op, ["x", "w", "r", "b"], ["y"], name="cell", hidden_size=hidden,
                            direction=direction)  # fmt: skip
    inits = [
        weight("w", (directions, gates * hidden, width)),
        weight("r", (directions, gates * hidden, hidden), 1),
        weight("b", (directions, 2 * gates * hidden), 2),
    ]
    model = model_of([node], [("x", (steps, batch, width))], "y", None, inits)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (priced,) = capstone.import_onnx(model).nodes
    per_row_step = 2 * gates * hidden * (width + hidden) + 2 * gates * hidden + elementwise * hidden
    assert priced.cost.flops == per_row_step * batch * steps * directions
    assert priced.op_class == "recurrent" and priced.unit == "matrix" and priced.steps == steps
    # The output shape inference gave is the one onnxruntime computes.
    (y,) = run(model, {"x": np.ones((steps, batch, width), np.float32)})
    assert y.shape == (steps, directions, batch, hidden)
    assert priced.output_bytes == y.nbytes


def test_a_recurrent_layer_is_predicted_as_steps_in_turn_not_one_big_matmul():
    """The engine reads the matmul rate at one step's size: slower per FLOP than the whole."""
    from perfmodel.capstone.predict import EngineModel

    node = helper.make_node("LSTM", ["x", "w", "r"], ["y"], hidden_size=64)
    inits = [weight("w", (1, 256, 64)), weight("r", (1, 256, 64), 1)]
    model = model_of([node], [("x", (100, 1, 64))], "y", None, inits)
    (priced,) = capstone.import_onnx(model).nodes
    rates = {10.0**3: 1e9, 10.0**5: 1e10, 10.0**7: 1e11}
    calls = []

    class Rates:
        def rate(self, unit, flops):
            calls.append(flops)
            return rates[min(rates, key=lambda f: abs(np.log(f / flops)))]

        def level(self, nbytes, unit):
            return "DRAM", 1e10

    engine = EngineModel.__new__(EngineModel)  # only its rate lookup is read here
    object.__setattr__(engine, "calibration", Rates())
    object.__setattr__(engine, "overhead_s", 0.0)
    engine.node_time(priced)
    assert calls == [priced.cost.flops / 100]


# --- Einsum ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("equation", "shapes", "out", "flops"),
    [
        ("ij,jk->ik", [(3, 4), (4, 5)], (3, 5), ops.matmul(3, 4, 5).flops),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)], (2, 3, 5), 2 * ops.matmul(3, 4, 5).flops),
        ("...ij,...jk->...ik", [(2, 3, 4), (2, 4, 5)], (2, 3, 5), 2 * ops.matmul(3, 4, 5).flops),
        ("ij,jk", [(3, 4), (4, 5)], (3, 5), ops.matmul(3, 4, 5).flops),  # implicit output
        ("ij->ji", [(3, 4)], (4, 3), 0),  # a transpose computes nothing
        ("ij->i", [(3, 4)], (3,), 12),  # a row sum: one add per element
        ("i,i->", [(6,), (6,)], (), 12),  # a dot product
        # Three operands, two at a time: (ij,jk)->ik, then (ik,kl)->il, not one 4-index product.
        ("ij,jk,kl->il", [(8, 8), (8, 8), (8, 8)], (8, 8), 2 * ops.matmul(8, 8, 8).flops),
        ("...a,...b", [(2, 3), (2, 4)], (2, 3, 4), 24),  # implicit: the ellipsis axes are kept
        ("...ij->...ij", [(2, 3, 4)], (2, 3, 4), 0),  # nothing summed, nothing computed
    ],
)
def test_einsum_counts_a_multiply_add_per_term(equation, shapes, out, flops):
    names = [f"x{i}" for i in range(len(shapes))]
    node = helper.make_node("Einsum", names, ["y"], equation=equation)
    model = model_of([node], list(zip(names, shapes, strict=True)), "y", list(out))
    (priced,) = capstone.import_onnx(model).nodes
    assert priced.supported and priced.cost.flops == flops
    feeds = {n: np.ones(s, np.float32) for n, s in zip(names, shapes, strict=True)}
    assert run(model, feeds)[0].shape == out


# --- quantized operators --------------------------------------------------------------------------


def test_quantized_matmuls_and_convolutions_cost_their_float_twins_plus_requantizing():
    m, k, n = 4, 8, 5
    scale = numpy_helper.from_array(np.array(0.1, np.float32), "s")
    zero = numpy_helper.from_array(np.array(0, np.uint8), "z")
    b = numpy_helper.from_array(np.ones((k, n), np.uint8), "b")
    qmatmul = helper.make_node("QLinearMatMul", ["a", "s", "z", "b", "s", "z", "s", "z"], ["y"])
    model = model_of([qmatmul], [("a", (m, k))], "y", [m, n], [scale, zero, b], TensorProto.UINT8)
    (priced,) = capstone.import_onnx(model).nodes
    assert priced.cost.flops == ops.matmul(m, k, n).flops + 3 * m * n
    assert priced.op_class == "matmul"  # b is a weight
    integer = helper.make_node("MatMulInteger", ["a", "b"], ["y"])
    model = model_of([integer], [("a", (m, k))], "y", [m, n], [b], TensorProto.UINT8)
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.INT32
    (priced,) = capstone.import_onnx(model).nodes
    assert priced.cost.flops == ops.matmul(m, k, n).flops
    assert priced.cost.bytes_read == m * k + k * n  # one byte an element


def test_dynamic_quantization_reads_floats_and_writes_bytes():
    node = helper.make_node("DynamicQuantizeLinear", ["x"], ["y", "scale", "zero"])
    model = model_of([node], [("x", (10, 10))], "y", [10, 10])
    model.graph.output[0].type.tensor_type.elem_type = TensorProto.UINT8
    (priced,) = capstone.import_onnx(model).nodes
    assert priced.supported and priced.cost.flops == 600
    assert priced.cost.bytes_read == 400


# --- the rest of the exporters' operators ---------------------------------------------------------


def test_topk_cumsum_and_conv_transpose_follow_their_closed_forms():
    x = Tensor((4, 100), TensorProto.FLOAT)
    topk = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=1)
    shapes = {"x": x, "k": Tensor((1,), 7), "v": Tensor((4, 7), 1), "i": Tensor((4, 7), 7)}
    assert price(topk, shapes, set()).cost.flops == 400 * 3  # log2(8): three comparisons
    cumsum = helper.make_node("CumSum", ["x", "axis"], ["y"])
    shapes = {"x": x, "axis": Tensor((), 7), "y": x}
    assert price(cumsum, shapes, set()).cost.flops == 399
    # Transposed 3x3 convolution, 2 -> 5 channels, 4x4 -> 6x6: every input pixel of every
    # channel meets a 3x3 window of each output channel.
    deconv = helper.make_node("ConvTranspose", ["x", "w"], ["y"], kernel_shape=[3, 3])
    shapes = {
        "x": Tensor((1, 2, 4, 4), 1),
        "w": Tensor((2, 5, 3, 3), 1),
        "y": Tensor((1, 5, 6, 6), 1),
    }
    assert price(deconv, shapes, {"w"}).cost.flops == 2 * (2 * 16) * 5 * 9


def test_the_exporters_operators_are_all_priced():
    found = capstone.coverage(capstone.EXPORTED)
    assert found.unknown == () and found.fraction == 1.0
    everything = capstone.coverage()
    assert everything.fraction >= 0.85
    assert set(everything.unknown) >= {"If", "Loop", "Scan"}  # subgraphs: not in the shapes
    assert {"LSTM", "GRU", "RNN", "Einsum", "QLinearConv"} <= set(everything.priced)
    assert {"Reshape", "Expand", "Gather"} <= set(everything.bytes_only)


def test_coverage_rejects_what_is_not_a_list_of_names():
    with pytest.raises(TypeError, match="`operators` must be an iterable of operator names"):
        capstone.coverage("LSTM")
    with pytest.raises(TypeError, match="`operators` must hold operator names as strings"):
        capstone.coverage(["LSTM", 3])


# --- shapes that only constant folding settles ----------------------------------------------------


def expand_like_an_export(batch=2, tokens=5, width=4):
    """``cls.expand(x.shape[0], -1, -1)`` as torch.onnx.export writes it: the -1s become the
    token's own sizes through Equal and Where on a shape computed at run time."""
    c = lambda name, values: helper.make_node(  # noqa: E731
        "Constant", [], [name], value=numpy_helper.from_array(np.array(values, np.int64), name)
    )
    nodes = [
        helper.make_node("Shape", ["x"], ["shape"]),
        c("zero", 0),
        helper.make_node("Gather", ["shape", "zero"], ["batch"], axis=0),
        helper.make_node("Unsqueeze", ["batch", "axes"], ["batch1"]),
        c("axes", [0]),
        c("minus", [-1, -1]),
        helper.make_node("Concat", ["batch1", "minus"], ["wanted"], axis=0),
        c("neg", [-1, -1, -1]),
        helper.make_node("Equal", ["wanted", "neg"], ["keep"]),
        c("ones", [1, 1, 1]),
        helper.make_node("Where", ["keep", "ones", "wanted"], ["target"]),
        helper.make_node("Expand", ["cls", "target"], ["tokens"]),
        helper.make_node("Concat", ["tokens", "x"], ["y"], axis=1),
    ]
    nodes.insert(3, nodes.pop(4))  # the axes constant before its reader
    cls = weight("cls", (1, 1, width))
    return model_of(nodes, [("x", (batch, tokens, width))], "y", None, [cls])


def test_a_shape_computed_at_run_time_is_found_by_constant_folding():
    model = expand_like_an_export()
    inferred = onnx.shape_inference.infer_shapes(model, data_prop=True).graph
    sized = {
        v.name
        for v in inferred.value_info
        if all(d.HasField("dim_value") for d in v.type.tensor_type.shape.dim)
    }
    assert "tokens" not in sized  # ONNX's own inference leaves it open
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        imported = capstone.import_onnx(model)
    expand = next(node for node in imported.nodes if node.op_type == "Expand")
    assert expand.output_bytes == 2 * 1 * 4 * 4  # (2, 1, 4) floats
    (y,) = run(model, {"x": np.ones((2, 5, 4), np.float32)})
    assert imported.nodes[-1].output_bytes == y.nbytes


def test_a_size_that_depends_on_data_names_the_node_and_its_unknown_dimension():
    nodes = [
        helper.make_node("NonZero", ["x"], ["where"]),
        helper.make_node("Transpose", ["where"], ["y"]),
    ]
    model = model_of(nodes, [("x", (3, 4))], "y", None)
    with pytest.raises(
        ValueError,
        match=r"node 'NonZero_0' \(NonZero\): the size of 'where' \(2, \?\) is not known",
    ) as raised:
        capstone.import_onnx(model)
    assert "shapes=" not in str(raised.value)  # fixed input sizes would not help


def test_new_input_sizes_replace_the_shapes_a_saved_model_carries():
    model = onnx.shape_inference.infer_shapes(capstone.builders.mlp(batch=1, widths=(8, 16, 4)))
    assert len(model.graph.value_info) > 0  # saved with the batch-1 shapes, as onnxsim does
    at_32 = capstone.import_onnx(model, shapes={"input": (32, 8)})
    fresh = capstone.import_onnx(capstone.builders.mlp(batch=32, widths=(8, 16, 4)))
    assert at_32.flops == fresh.flops and at_32.activation_bytes == fresh.activation_bytes


def test_a_declared_size_below_one_is_named_at_the_input():
    model = model_of([helper.make_node("Relu", ["x"], ["y"])], [("x", (0, 4))], "y", [0, 4])
    with pytest.raises(ValueError, match=r"input 'x' declares a size below 1 \(\[0, 4\]\)"):
        capstone.import_onnx(model)


def test_packed_and_complex_types_count_their_real_bytes():
    assert Tensor((1000,), TensorProto.FLOAT8E4M3FN).nbytes == 1000
    assert Tensor((1000,), TensorProto.INT4).nbytes == 500
    assert Tensor((1000,), TensorProto.COMPLEX64).nbytes == 8000
    with pytest.raises(NoRule, match="element type 8"):  # a string has no width to price
        _ = Tensor((3,), TensorProto.STRING).nbytes


def test_a_mask_made_from_a_shape_writes_it_and_a_select_adds_nothing():
    mask = helper.make_node("ConstantOfShape", ["s"], ["m"])
    shapes = {"s": Tensor((2,), TensorProto.INT64), "m": Tensor((64, 64), TensorProto.FLOAT)}
    assert price(mask, shapes, set()).cost.bytes_written == 64 * 64 * 4
    where = helper.make_node("Where", ["c", "a", "b"], ["y"])
    x = Tensor((10, 10), TensorProto.FLOAT)
    shapes = {"c": Tensor((10, 10), TensorProto.BOOL), "a": x, "b": x, "y": x}
    assert price(where, shapes, set()).cost.flops == 100


def test_topk_reads_k_on_its_axis_and_a_recurrent_layer_without_b_adds_no_bias():
    topk = helper.make_node("TopK", ["x", "k"], ["v", "i"], axis=0)
    shapes = {"x": Tensor((100, 4), 1), "k": Tensor((1,), 7), "v": Tensor((7, 4), 1),
              "i": Tensor((7, 4), 7)}  # fmt: skip
    assert price(topk, shapes, set()).cost.flops == 400 * 3
    rnn = helper.make_node("RNN", ["x", "w", "r"], ["y"], hidden_size=4)
    shapes = {"x": Tensor((3, 1, 2), 1), "w": Tensor((1, 4, 2), 1), "r": Tensor((1, 4, 4), 1),
              "y": Tensor((3, 1, 1, 4), 1)}  # fmt: skip
    assert price(rnn, shapes, {"w", "r"}).cost.flops == 3 * (2 * 4 * (2 + 4) + 4)


@pytest.mark.parametrize(
    "attrs",
    [
        {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
        {"kernel_shape": [3, 3], "strides": [2, 2], "auto_pad": "SAME_UPPER"},
        {"kernel_shape": [3, 3], "strides": [2, 2], "ceil_mode": 1},
        {"kernel_shape": [3, 3], "dilations": [2, 2]},
        {"kernel_shape": [3], "strides": [2]},
    ],
)
def test_pooling_counts_a_window_per_output_onnxruntime_really_writes(attrs):
    """auto_pad, ceil_mode and dilations change the output's size; the cost follows it (the old
    rule recomputed the output from the pads alone, and refused 1-D pooling)."""
    shape = (1, 8, 15) if len(attrs["kernel_shape"]) == 1 else (1, 8, 15, 15)
    node = helper.make_node("MaxPool", ["x"], ["y"], name="pool", **attrs)
    model = model_of([node], [("x", shape)], "y", None)
    (priced,) = capstone.import_onnx(model).nodes
    (y,) = run(model, {"x": np.ones(shape, np.float32)})
    window = int(np.prod(attrs["kernel_shape"]))
    assert priced.cost.flops == y.size * window
    assert priced.cost.bytes_written == y.nbytes
    assert priced.cost.dtype == "fp32"  # the roofline picks its peak by it


def test_an_empty_kv_cache_is_a_size_the_caller_may_give():
    """shapes= took only sizes of 1 or more, so the first step of a decoder with an empty
    past could not be priced; a size declared 0 in the file is still refused."""
    concat = helper.make_node("Concat", ["past", "new"], ["y"], name="cache", axis=2)
    model = model_of([concat], [("past", (1, 2, 3, 4)), ("new", (1, 2, 1, 4))], "y", None)
    (node,) = capstone.import_onnx(model, shapes={"past": (1, 2, 0, 4)}).nodes
    assert node.cost.bytes_written == 1 * 2 * 1 * 4 * 4  # only the new token is left
    with pytest.raises(ValueError, match=r"`shapes\['past'\]`"):
        capstone.import_onnx(model, shapes={"past": (1, 2, -1, 4)})


def test_a_bias_adds_one_add_per_output_to_every_convolution():
    """ConvTranspose and QLinearConv dropped their bias; Conv always counted it."""
    c, out_c = 4, 6
    x = ("x", (1, c, 5, 5))
    w_t = weight("w", (c, out_c, 3, 3))
    bias = weight("b", (out_c,), 1)
    plain = helper.make_node("ConvTranspose", ["x", "w"], ["y"], name="t")
    biased = helper.make_node("ConvTranspose", ["x", "w", "b"], ["y"], name="t")
    (without,) = capstone.import_onnx(model_of([plain], [x], "y", None, [w_t])).nodes
    (with_,) = capstone.import_onnx(model_of([biased], [x], "y", None, [w_t, bias])).nodes
    outputs = 1 * out_c * 7 * 7
    assert with_.cost.flops - without.cost.flops == outputs
    assert with_.cost.bytes_read - without.cost.bytes_read == bias.dims[0] * 4

    s = numpy_helper.from_array(np.array(0.1, np.float32), "s")
    z = numpy_helper.from_array(np.array(0, np.uint8), "z")
    wq = numpy_helper.from_array(np.ones((out_c, c, 3, 3), np.uint8), "wq")
    bq = numpy_helper.from_array(np.ones((out_c,), np.int32), "bq")
    names = ["x", "s", "z", "wq", "s", "z", "s", "z"]
    nodes = [
        helper.make_node("QLinearConv", names + extra, ["y"], name="q") for extra in ([], ["bq"])
    ]
    priced = [
        capstone.import_onnx(model_of([node], [x], "y", None, inits, TensorProto.UINT8)).nodes[0]
        for node, inits in zip(nodes, ([s, z, wq], [s, z, wq, bq]), strict=True)
    ]
    assert priced[1].cost.flops - priced[0].cost.flops == 1 * out_c * 3 * 3
    assert priced[1].cost.bytes_read - priced[0].cost.bytes_read == out_c * 4


def test_attention_prices_the_value_heads_at_their_own_width():
    """The weighted sum of V runs at V's head width, which may differ from Q's and K's (the
    rule priced both matmuls at the query's)."""

    def attention(value_width):
        node = helper.make_node("Attention", ["q", "k", "v"], ["y"], name="a")
        inputs = [("q", (1, 2, 4, 8)), ("k", (1, 2, 6, 8)), ("v", (1, 2, 6, value_width))]
        model = model_of([node], inputs, "y", None)
        model.opset_import[0].version, model.ir_version = 23, 10
        (priced,) = capstone.import_onnx(model).nodes
        return priced.cost

    narrow, wide = attention(8), attention(16)
    assert wide.flops - narrow.flops == 2 * 1 * 2 * 4 * 6 * (16 - 8)  # the weighted sum alone
    assert wide.bytes_written == 1 * 2 * 4 * 16 * 4  # the output has V's width
    assert wide.bytes_read - narrow.bytes_read == 1 * 2 * 6 * (16 - 8) * 4


def test_an_einsums_rows_are_read_from_its_equation_not_its_layout():
    """'ki,kj->ij' with a (64, 2) first operand has 2 output rows: a matrix-vector kernel.
    The layout rule read 64 rows from the first operand's leading axis."""
    from perfmodel.capstone.onnx_ops import kernel_kind

    node = helper.make_node("Einsum", ["a", "b"], ["y"], equation="ki,kj->ij")
    assert kernel_kind(node, {"a": Tensor((64, 2), 1), "b": Tensor((64, 8), 1)}) == "gemv"
    assert kernel_kind(node, {"a": Tensor((64, 32), 1), "b": Tensor((64, 8), 1)}) == "gemm"
    ellipsis = helper.make_node("Einsum", ["a", "b"], ["y"], equation="...ij,jk->...ik")
    assert kernel_kind(ellipsis, {"a": Tensor((3, 32, 8), 1), "b": Tensor((8, 4), 1)}) == "gemm"


@pytest.mark.parametrize(
    ("op", "attrs", "kind"),
    [
        ("Sigmoid", {}, "sigmoid"),  # onnxruntime's logistic, about twice Erf's speed
        ("Erf", {}, "transcendental"),
        ("Conv", {"group": 1}, "conv"),
        ("Conv", {"group": 4}, "grouped conv"),  # 8 channels in each of 4 groups
        ("Conv", {"group": 32}, "depthwise"),
    ],
)
def test_each_operator_runs_the_kernel_of_its_kind(op, attrs, kind):
    from perfmodel.capstone.onnx_ops import kernel_kind

    inputs = ["x", "w"] if op == "Conv" else ["x"]
    node = helper.make_node(op, inputs, ["y"], pads=[1] * 4, **attrs) if op == "Conv" else (
        helper.make_node(op, inputs, ["y"]))  # fmt: skip
    group = attrs.get("group", 1)
    tensors = {"x": Tensor((2, 32, 8, 8), 1), "w": Tensor((32, 32 // group, 3, 3), 1),
               "y": Tensor((2, 32, 8, 8), 1)}  # fmt: skip
    assert kernel_kind(node, tensors) == kind
