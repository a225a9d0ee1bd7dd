"""The graph onnxruntime really runs: its optimised model, sized and priced node by node.

A default ``InferenceSession`` applies every graph optimisation (``ORT_ENABLE_ALL``): a
convolution absorbs its batch norm, activation and residual add, a MatMul its bias, a GELU's
five nodes become one, a layer norm and the residual add before it one kernel, and on a CPU
the convolutions move to a blocked channel layout (``com.microsoft.nchwc``) with reorders at
its edges. onnxruntime writes the graph it will run to a file on request
(``SessionOptions.optimized_model_filepath``); :func:`optimized` reads it back.

Its fused and contrib operators are outside ONNX's shape inference, so :func:`run_shapes`
runs the optimised graph once on random inputs with every tensor exposed and keeps each
one's shape (the blocked layout's padded channels included). :func:`price_fused` prices each
fused node as the ONNX nodes it stands for, read and written once: their FLOPs, its own
inputs and outputs. :func:`origins` says which exported nodes each one replaced.

Examples
--------
>>> from perfmodel.capstone import builders
>>> mlp = builders.mlp(batch=2, widths=(8, 16, 2))
>>> [(n.domain, n.op_type) for n in optimized(mlp, "all").graph.node]
[('com.microsoft', 'FusedGemm'), ('', 'Gemm')]
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfmodel import ops
from perfmodel._validate import choice
from perfmodel.capstone.onnx_costs import Priced, price
from perfmodel.capstone.onnx_ops import NoRule, Tensor, attributes, kernel_kind

if TYPE_CHECKING:
    import onnx

__all__ = ["FUSED_OPS", "fused_kind", "optimized", "origins", "price_fused", "run_shapes"]

#: The fused and contrib operators priced, by domain: what onnxruntime's CPU optimisations
#: write (``FusedConv``, ``FusedGemm``, ``FusedMatMul``, the GELUs, ``SkipLayerNormalization``,
#: the attention ops, and the blocked layout's convolution, pools and reorders).
FUSED_OPS = {
    "com.microsoft": ("FusedConv", "FusedGemm", "FusedMatMul", "Gelu", "FastGelu", "BiasGelu",
                      "QuickGelu", "SkipLayerNormalization", "SkipSimplifiedLayerNormalization",
                      "Attention", "MultiHeadAttention"),
    "com.microsoft.nchwc": ("Conv", "MaxPool", "AveragePool", "GlobalAveragePool",
                            "GlobalMaxPool", "ReorderInput", "ReorderOutput", "Upsample"),
}  # fmt: skip
_LEVELS = {"basic": "ORT_ENABLE_BASIC", "extended": "ORT_ENABLE_EXTENDED", "all": "ORT_ENABLE_ALL"}
#: FLOPs per element of a fused activation (``activation`` attribute).
_ACTIVATION = {"Relu": 1, "Clip": 2, "LeakyRelu": 2, "Sigmoid": 4, "Tanh": 6, "HardSigmoid": 3}
#: FLOPs per element of each GELU, as the exported nodes it replaces count them: the erf form
#: (divide, erf, add, two multiplies), the tanh form (a cube, three multiplies, two adds, a
#: tanh), x·sigmoid(αx) (a multiply, a sigmoid, a multiply; SiLU when α is 1: two), and one
#: add more for a bias.
_GELU = {"Gelu": 5, "FastGelu": 8, "BiasGelu": 6, "QuickGelu": 3}


def optimized(model: onnx.ModelProto, level: str) -> onnx.ModelProto:
    """The graph onnxruntime's CPU session runs at optimisation ``level``.

    Parameters
    ----------
    model : onnx.ModelProto
        A model whose inputs have fixed sizes.
    level : {"basic", "all"}
        onnxruntime's ``ORT_ENABLE_BASIC`` (constant folding, redundant nodes removed) or
        ``ORT_ENABLE_ALL`` (fusions and the CPU's blocked layout too; a session's default).

    Returns
    -------
    onnx.ModelProto
        The optimised graph, as onnxruntime writes it.
    """
    import onnx
    import onnxruntime as ort

    level = choice("optimization", level, tuple(_LEVELS))
    model = _filled(model)
    options = ort.SessionOptions()
    options.graph_optimization_level = getattr(ort.GraphOptimizationLevel, _LEVELS[level])
    options.log_severity_level = 3  # errors only
    with tempfile.TemporaryDirectory() as folder:
        options.optimized_model_filepath = str(Path(folder) / "optimized.onnx")
        ort.InferenceSession(model.SerializeToString(), options, providers=["CPUExecutionProvider"])
        return onnx.load(options.optimized_model_filepath)


def _filled(model: onnx.ModelProto) -> onnx.ModelProto:
    """``model``, or a copy whose weights stored as external data (which the import never
    reads) are zeros of their shapes: the optimiser needs values, the price only shapes."""
    import numpy as np
    import onnx
    from onnx import TensorProto, numpy_helper

    external = [t for t in model.graph.initializer if t.data_location == TensorProto.EXTERNAL]
    if not external:
        return model
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    for tensor in list(copy.graph.initializer):
        if tensor.data_location == TensorProto.EXTERNAL:
            dtype = onnx.helper.tensor_dtype_to_np_dtype(tensor.data_type)
            zeros = numpy_helper.from_array(np.zeros(tuple(tensor.dims), dtype), tensor.name)
            copy.graph.initializer.remove(tensor)
            copy.graph.initializer.append(zeros)
    return copy


def run_shapes(model: onnx.ModelProto) -> dict[str, Tensor]:
    """Every tensor's shape, found by running ``model`` once on random inputs.

    Parameters
    ----------
    model : onnx.ModelProto
        An optimised graph whose inputs have fixed sizes.

    Returns
    -------
    dict of str to Tensor
        Every tensor's shape and element type, by name: the graph's inputs, its weights and
        each node's outputs.
    """
    import onnx
    import onnxruntime as ort

    from perfmodel.capstone.engine import random_inputs

    exposed = onnx.ModelProto()
    exposed.CopyFrom(model)
    shown = {value.name for value in exposed.graph.output}
    for node in exposed.graph.node:
        for name in node.output:
            if name and name not in shown:
                exposed.graph.output.append(onnx.ValueInfoProto(name=name))
                shown.add(name)
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    options.log_severity_level = 3
    session = ort.InferenceSession(
        exposed.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )
    feeds = random_inputs(model)
    names = [value.name for value in session.get_outputs()]
    arrays = {**feeds, **dict(zip(names, session.run(None, feeds), strict=True))}
    found = {name: Tensor(tuple(int(d) for d in array.shape),
                          onnx.helper.np_dtype_to_tensor_dtype(array.dtype))
             for name, array in arrays.items()}  # fmt: skip
    for tensor in model.graph.initializer:
        found[tensor.name] = Tensor(tuple(tensor.dims), tensor.data_type)
    return found


def _name(tensor: Tensor) -> str | None:
    """The tensor's dtype name, where it has one of ours."""
    return tensor.dtype if isinstance(tensor.dtype, str) else None


def _standard(node: Any, op_type: str, inputs: list[str], drop: tuple[str, ...] = ()) -> Any:
    """An ONNX node of ``op_type`` with ``node``'s outputs and attributes (less ``drop``)."""
    import onnx

    kept = {k: v for k, v in attributes(node).items() if k not in drop}
    return onnx.helper.make_node(op_type, inputs, list(node.output), name=node.name, **kept)


def _activation_flops(node: Any, out: Tensor) -> float:
    act = attributes(node).get("activation", b"")
    act = act.decode() if isinstance(act, bytes) else str(act)
    return float(_ACTIVATION.get(act, 2) * out.elements) if act else 0.0


def _once(cost: ops.Cost, node: Any, tensors: dict[str, Tensor], flops: float) -> ops.Cost:
    """``cost``'s FLOPs plus ``flops``, and the fused node's own inputs read, outputs written."""
    read = sum(tensors[t].nbytes for t in node.input if t and t in tensors)
    written = sum(tensors[t].nbytes for t in node.output if t and t in tensors)
    return replace(cost, flops=cost.flops + flops, bytes_read=read, bytes_written=written)


def price_fused(node: Any, tensors: dict[str, Tensor], weights: set[str]) -> Priced:
    """Price a fused or contrib node as the ONNX nodes it stands for, read and written once.

    Parameters
    ----------
    node : onnx.NodeProto
        A node of a domain in :data:`FUSED_OPS`.
    tensors : dict of str to Tensor
        Every tensor's shape (:func:`run_shapes`).
    weights : set of str
        The model's weights, by name.

    Returns
    -------
    Priced
        Its cost, op class and unit (see :func:`perfmodel.capstone.onnx_costs.price`).

    Raises
    ------
    NoRule
        For an operator outside :data:`FUSED_OPS`.
    """
    op, domain = node.op_type, node.domain
    if op not in FUSED_OPS.get(domain, ()):
        raise NoRule(f"{domain}:{op}")
    ins = [t for t in node.input if t]
    out = tensors[node.output[0]]
    if op in ("Conv", "FusedConv"):  # (X, W, B, Sum): the convolution, its add, its activation
        base = price(_standard(node, "Conv", ins[:3], ("activation", "activation_params")),
                     tensors, weights)  # fmt: skip
        extra = _activation_flops(node, out) + (out.elements if len(ins) > 3 else 0)
        return Priced(_once(base.cost, node, tensors, extra), "conv", "matrix")
    if op == "FusedGemm":
        base = price(_standard(node, "Gemm", ins, ("activation", "activation_alpha",
                     "activation_beta", "activation_gamma")), tensors, weights)  # fmt: skip
        return Priced(_once(base.cost, node, tensors, _activation_flops(node, out)), "matmul",
                      "matrix")  # fmt: skip
    if op == "FusedMatMul":  # MatMul with its operands transposed as attributes say
        a = tensors[ins[0]]
        attrs = attributes(node)
        k = a.shape[-2] if attrs.get("transA") and len(a.shape) > 1 else a.shape[-1]
        cost = ops.Cost(flops=2.0 * out.elements * k, bytes_read=0, bytes_written=0,
                        dtype=_name(out))  # fmt: skip
        op_class = "matmul" if ins[1] in weights else "attention"
        return Priced(_once(cost, node, tensors, 0.0), op_class, "matrix")
    if op in _GELU:
        per = _GELU[op] + (1 if op == "FastGelu" and len(ins) > 1 else 0)
        if op == "QuickGelu" and float(attributes(node).get("alpha", 1.0)) == 1.0:
            per = 2  # SiLU: x·sigmoid(x)
        cost = ops.elementwise(out.elements, flops_per_element=per, dtype=out.dtype)
        return Priced(_once(cost, node, tensors, 0.0), "elementwise", "exp")
    if op.startswith("Skip"):  # input + skip (+ bias), then a layer norm or an RMS norm
        x = tensors[ins[0]]
        bias_at = 3 if "Simplified" in op else 4
        adds = 1 + (len(node.input) > bias_at and bool(node.input[bias_at]))
        axis = int(attributes(node).get("axis", -1)) % len(x.shape)
        rows, cols = math.prod(x.shape[:axis]), math.prod(x.shape[axis:])
        if "Simplified" in op:  # as ONNX's RMSNormalization is counted
            cost = ops.elementwise(x.elements, flops_per_element=5, dtype=x.dtype)
        else:
            cost = ops.layer_norm(rows, cols, dtype=x.dtype)
        return Priced(_once(cost, node, tensors, float(adds * x.elements)), "normalization",
                      "vector")  # fmt: skip
    if op in ("Attention", "MultiHeadAttention"):
        return Priced(_attention(node, tensors), "attention", "matrix")
    if op in ("ReorderInput", "ReorderOutput"):
        cost = ops.Cost(flops=0, bytes_read=0, bytes_written=0, dtype=_name(out))
        return Priced(_once(cost, node, tensors, 0.0), "data movement", "vector")
    # the blocked layout's pools and resize: the standard operator on the same shapes
    base = price(_standard(node, op, ins), tensors, weights)
    return Priced(base.cost, base.op_class, base.unit)


def _attention(node: Any, tensors: dict[str, Tensor]) -> ops.Cost:
    """onnxruntime's Attention (input, its QKV weights and bias, a mask, a past) or
    MultiHeadAttention (queries, keys and values already projected, 3-D or keys and values as
    (batch, heads, length, head)): the projection, the scores, their softmax, the values."""
    given = list(node.input)
    attrs = attributes(node)
    heads = int(attrs.get("num_heads", 1))
    x = tensors[given[0]]
    if len(x.shape) != 3:
        raise NoRule(f"{node.op_type} with {len(x.shape)}-D queries (packed QKV)")
    batch, seq, width = x.shape
    flops = 0.0
    if node.op_type == "Attention":  # (B, S, D_in) times (D_in, Dq + Dk + Dv)
        total = tensors[given[1]].shape[-1]
        sizes = [int(v) for v in attrs.get("qkv_hidden_sizes", [])] or [total // 3] * 3
        flops += 2.0 * batch * seq * width * total
        q_width, v_width = sizes[0], sizes[2]
        past = tensors.get(given[4]) if len(given) > 4 and given[4] else None
        kv_len = seq + (past.shape[3] if past is not None and len(past.shape) == 5 else 0)
    else:
        q_width = width
        keys = tensors[given[1]] if len(given) > 1 and given[1] else x
        values = tensors[given[2]] if len(given) > 2 and given[2] else keys
        kv_len = keys.shape[2] if len(keys.shape) == 4 else keys.shape[1]
        v_width = (values.shape[1] * values.shape[3] if len(values.shape) == 4
                   else values.shape[-1])  # fmt: skip
    flops += 2.0 * batch * seq * kv_len * (q_width + v_width)  # Q·Kᵀ and P·V
    flops += 5.0 * batch * heads * seq * kv_len  # the scale and the softmax
    cost = ops.Cost(flops=flops, bytes_read=0, bytes_written=0, dtype=_name(x))
    return _once(cost, node, tensors, 0.0)


def fused_kind(node: Any, tensors: dict[str, Tensor]) -> str:
    """The kind of CPU kernel a fused or contrib node runs (one of ``KERNEL_KINDS``).

    Parameters
    ----------
    node : onnx.NodeProto
        A node of a domain in :data:`FUSED_OPS`.
    tensors : dict of str to Tensor
        Every tensor's shape.

    Returns
    -------
    str
        As :func:`perfmodel.capstone.onnx_ops.kernel_kind` names it: a blocked or fused
        convolution as the convolution, a fused matmul as the matmul, the GELUs
        ``"transcendental"`` (``QuickGelu``, a sigmoid's, ``"sigmoid"``), the skip layer norms
        ``"skip normalization"`` (their own kernel, slower than a layer norm's), the reorders
        ``"movement"``.
    """
    op, ins = node.op_type, [t for t in node.input if t]
    if op in ("Conv", "FusedConv"):
        w = tensors.get(ins[1]) if len(ins) > 1 else None
        group = int(attributes(node).get("group", 1))
        if w is not None and group > 1 and group == w.shape[0]:  # one filter per channel
            strided = any(int(v) > 1 for v in attributes(node).get("strides", [1]))
            return "depthwise strided" if strided else "depthwise"
        return kernel_kind(_standard(node, "Conv", ins[:2], ("activation", "activation_params")),
                           tensors)  # fmt: skip
    if op in ("FusedGemm", "FusedMatMul"):
        return kernel_kind(_standard(node, "MatMul" if op == "FusedMatMul" else "Gemm", ins[:2],
                                     tuple(attributes(node))), tensors)  # fmt: skip
    if op == "QuickGelu":  # x·sigmoid(αx): the logistic kernel
        return "sigmoid"
    if op in ("Gelu", "FastGelu", "BiasGelu"):
        return "transcendental"
    if op.startswith("Skip"):  # onnxruntime's CPU kernel: several times a layer norm's time
        return "skip normalization"
    if op.endswith("LayerNormalization"):
        return "normalization"
    if op in ("Attention", "MultiHeadAttention"):
        return "gemm"
    if op in ("ReorderInput", "ReorderOutput"):
        return "movement"
    if op == "BiasAdd":
        return "broadcast"
    return kernel_kind(_standard(node, op, ins), tensors)


def _absorbed(end: Any, node: Any, consumers_of: dict[str, list[Any]],
              readers: dict[str, int]) -> list[Any]:  # fmt: skip
    """The residual Add a blocked convolution with a Sum input took in after ``end``, and the
    activation after that Add when the convolution applies one."""
    found: list[Any] = []
    tensor = end.output[0]
    wanted = ["Add"]
    act = attributes(node).get("activation", b"")
    if act:
        wanted.append(act.decode() if isinstance(act, bytes) else str(act))
    for op in wanted:
        after = consumers_of.get(tensor, [])
        if readers.get(tensor, 0) != 1 or len(after) != 1 or after[0].op_type != op:
            break
        found.append(after[0])
        tensor = after[0].output[0]
    return found


def origins(original: onnx.ModelProto, fused: onnx.ModelProto) -> dict[str, tuple[str, ...]]:
    """Which exported nodes each node of the optimised graph stands for.

    A fused node ends where an exported node ended (its output keeps that node's name, or,
    in the blocked layout, its own name is that node's with ``_nchwc`` added). Walking back
    from there, it took in every node whose output only it read, up to and including the
    matrix operation at its head (a Conv, MatMul or Gemm), and none an earlier node took. A
    node the optimiser left alone stands for itself; one it added (a reorder, a reshape for
    a Gemm), for nothing.

    Parameters
    ----------
    original : onnx.ModelProto
        The exported model.
    fused : onnx.ModelProto
        Its optimised graph (:func:`optimized`).

    Returns
    -------
    dict of str to tuple of str
        For each node of ``fused``, by name, the names of the exported nodes it replaced, in
        the export's order.
    """
    from collections import Counter

    nodes = list(original.graph.node)
    order = {id(n): i for i, n in enumerate(nodes)}
    called = {id(n): n.name or f"{n.op_type}_{i}" for i, n in enumerate(nodes)}  # as imported
    optimised = list(fused.graph.node)  # one list: a protobuf's elements are new objects each pass
    mine = {id(n): n.name or f"{n.op_type}_{i}" for i, n in enumerate(optimised)}
    consumers_of: dict[str, list[Any]] = {}
    for n in nodes:
        for t in n.input:
            consumers_of.setdefault(t, []).append(n)
    producer = {t: n for n in nodes for t in n.output if t}
    by_name = {n.name: n for n in nodes if n.name}
    readers = Counter(t for n in nodes for t in n.input if t)
    outputs = {value.name for value in original.graph.output}
    heads = {"Conv", "ConvTranspose", "MatMul", "Gemm", "Einsum", "LSTM", "GRU", "RNN"}
    result: dict[str, tuple[str, ...]] = {}
    claimed: set[int] = set()  # each exported node stands in one optimised node, the first
    for node in optimised:
        name = mine[id(node)]
        if node.op_type in ("ReorderInput", "ReorderOutput"):
            result[name] = ()
            continue
        ends = [producer[t] for t in node.output if t in producer]
        stem = name[: -len("_nchwc")] if name.endswith("_nchwc") else name.split("/")[0]
        if not ends and stem in by_name:  # "features.0_bn_nchwc", "features.0_silu/QuickGelu…"
            ends = [by_name[stem]]
        elif not ends and stem in producer:  # named after its output: "/relu/Relu_output_0_nchwc"
            ends = [producer[stem]]
        elif not ends and name in by_name:  # left alone, its output renamed
            ends = [by_name[name]]
        if ends and len(node.input) > 3 and node.op_type == "Conv":  # it adds its Sum input too
            ends += _absorbed(ends[0], node, consumers_of, readers)
        own = set(node.input)
        taken: dict[int, Any] = {}
        todo = list(ends)
        while todo:
            n = todo.pop()
            if id(n) in taken or id(n) in claimed or n.op_type == "Constant":
                continue
            taken[id(n)] = n
            if n.op_type in heads:
                continue
            for t in n.input:
                if t in producer and t not in own and readers[t] == 1 and t not in outputs:
                    todo.append(producer[t])
        claimed.update(taken)
        chosen = sorted(taken.values(), key=lambda n: order[id(n)])
        result[name] = tuple(called[id(n)] for n in chosen)
    # A MatMul with its bias becomes Reshape, Gemm, Reshape, the last keeping the bias Add's
    # output: what it stands for belongs to the Gemm (a new node) that feeds it.
    made = {t: n for n in optimised for t in n.output if t}
    head_names = {called[id(n)] for n in nodes if n.op_type in heads}
    for node in optimised:
        name = mine[id(node)]
        carries_head = any(o in head_names for o in result[name])
        if node.op_type in ("Reshape", "Flatten", "Squeeze", "Unsqueeze") and carries_head:
            before = made.get(node.input[0]) if node.input else None
            if before is not None and not result[mine[id(before)]]:
                result[mine[id(before)]], result[name] = result[name], ()
    return result
