"""Price every node of an ONNX model with :mod:`perfmodel.ops`.

ONNX shape inference gives each tensor its shape; each node's operator and shapes then
give its :class:`~perfmodel.ops.Cost`. The operators real models use are covered (see
:data:`SUPPORTED`); any other node is priced as bytes only (read its inputs, write its
outputs), flagged, and named in an :class:`UnsupportedOpWarning`, so a model with one
exotic op is still priced.

Each node also gets an *op class* (:data:`OP_CLASSES`), which is what lecture 12's
speed-up breakdown groups by, and a *unit*, which is what
:class:`perfmodel.measure.calibration.Calibration` prices it on.

Examples
--------
>>> from perfmodel.capstone import builders
>>> model = from_onnx(builders.mlp(batch=4, widths=(8, 16, 2)))
>>> [(cost.label, cost.flops) for cost in model]
[('fc0', 1024), ('fc0_bias', 64), ('fc0_relu', 64), ('fc1', 256), ('fc1_bias', 8)]
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from perfmodel import ops
from perfmodel._validate import count

__all__ = [
    "OP_CLASSES",
    "SUPPORTED",
    "ImportedModel",
    "Node",
    "UnsupportedOpWarning",
    "from_onnx",
    "import_onnx",
]

#: What lecture 12 groups a model's time by.
OP_CLASSES = (
    "matmul",  # a weight matmul (MatMul or Gemm against a weight)
    "conv",
    "attention",  # matmuls of two activations (Q·Kᵀ, P·V) and the Attention op
    "normalization",
    "softmax",
    "elementwise",
    "reduction",
    "pooling",
    "data movement",  # Reshape, Transpose, Concat, Gather, ...: bytes only
    "unsupported",
)

_UNARY = {  # op type: FLOPs per element
    "Relu": 1,
    "LeakyRelu": 2,
    "Elu": 3,
    "Selu": 3,
    "Celu": 3,
    "PRelu": 2,
    "Clip": 2,
    "Neg": 1,
    "Abs": 1,
    "Reciprocal": 1,
    "Sqrt": 1,
    "Floor": 1,
    "Ceil": 1,
    "Round": 1,
    "Sign": 1,
    "Not": 1,
    "IsNaN": 1,
    "HardSigmoid": 3,
    "HardSwish": 4,
    "Softsign": 3,
    "Identity": 0,
    "Dropout": 0,
    "Cast": 0,
}
_TRANSCENDENTAL = {  # evaluated as a function call per element: priced on the exp unit
    "Exp": 1,
    "Log": 1,
    "Tanh": 1,
    "Sigmoid": 1,
    "Erf": 1,
    "Gelu": 1,
    "FastGelu": 1,
    "Softplus": 1,
    "Sin": 1,
    "Cos": 1,
    "Mish": 1,
    "Pow": 1,
}
_BINARY = {
    "Add",
    "Sub",
    "Mul",
    "Div",
    "Max",
    "Min",
    "Mod",
    "Equal",
    "Less",
    "Greater",
    "LessOrEqual",
    "GreaterOrEqual",
    "And",
    "Or",
    "Xor",
    "Where",
    "Sum",
    "Mean",
    "BitShift",
}
_NORMALIZATION = {
    "LayerNormalization": 8,
    "BatchNormalization": 2,
    "InstanceNormalization": 8,
    "GroupNormalization": 8,
    "RMSNormalization": 5,
    "SimplifiedLayerNormalization": 5,
    "LpNormalization": 3,
}
_REDUCTIONS = {
    "ReduceMean",
    "ReduceSum",
    "ReduceMax",
    "ReduceMin",
    "ReduceProd",
    "ReduceL1",
    "ReduceL2",
    "ReduceSumSquare",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ArgMax",
    "ArgMin",
}
_POOLING = {"MaxPool", "AveragePool", "LpPool"}
_GLOBAL_POOLING = {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}
_MOVEMENT = {
    "Reshape",
    "Flatten",
    "Squeeze",
    "Unsqueeze",
    "Transpose",
    "Concat",
    "Split",
    "Slice",
    "Gather",
    "GatherElements",
    "GatherND",
    "Expand",
    "Tile",
    "Pad",
    "DepthToSpace",
    "SpaceToDepth",
    "ScatterND",
    "ScatterElements",
    "Resize",
    "Upsample",
    "Trilu",
}
_FREE = {"Shape", "Size", "Constant", "ConstantOfShape", "Range", "NonZero"}
_SOFTMAX = {"Softmax", "LogSoftmax", "Hardmax"}

#: Every operator type priced by its own rule (anything else is priced as bytes only).
SUPPORTED = frozenset(
    {"MatMul", "Gemm", "Conv", "Attention", *_UNARY, *_TRANSCENDENTAL, *_BINARY}
    | set(_NORMALIZATION)
    | _REDUCTIONS
    | _POOLING
    | _GLOBAL_POOLING
    | _MOVEMENT
    | _FREE
    | _SOFTMAX
)

_DTYPES = {1: "fp32", 10: "fp16", 16: "bf16", 11: "fp64", 3: "int8"}  # ONNX elem type: ours
_WIDTHS = {1: 4, 10: 2, 16: 2, 11: 8, 2: 1, 3: 1, 4: 2, 5: 2, 6: 4, 7: 8, 9: 1, 12: 4, 13: 8}


class UnsupportedOpWarning(UserWarning):
    """A model holds operators :mod:`perfmodel.capstone` has no cost rule for."""


class _NoRule(Exception):
    """Raised inside the pricing rules for a node none of them covers (an operator, or a
    form of one, such as 3-D convolution): the import then prices it as bytes only."""


@dataclass(frozen=True, slots=True)
class Tensor:
    """A tensor's shape and element width, as shape inference found it."""

    shape: tuple[int, ...]
    elem_type: int

    @property
    def elements(self) -> int:
        return math.prod(self.shape)

    @property
    def width(self) -> int:
        return _WIDTHS.get(self.elem_type, 4)

    @property
    def nbytes(self) -> int:
        return self.elements * self.width

    @property
    def dtype(self) -> str | int:
        """Our dtype name where there is one, else the width in bytes."""
        return _DTYPES.get(self.elem_type, self.width)


@dataclass(frozen=True, slots=True)
class Node:
    """One ONNX node, priced.

    Parameters
    ----------
    name : str
        The node's name; ``"<op_type>_<index>"`` when the model left it empty.
    op_type : str
        Its ONNX operator, ``"MatMul"``, ``"Conv"``, ...
    op_class : str
        One of :data:`OP_CLASSES`.
    unit : str
        What runs it, for :class:`perfmodel.measure.calibration.Calibration`: ``"matrix"``,
        ``"vector"``, ``"broadcast"`` or ``"exp"``.
    cost : ops.Cost
        Its FLOPs and bytes, labelled with ``name``.
    inputs : tuple of str
        The names of the tensors it reads.
    outputs : tuple of str
        The names of the tensors it writes.
    output_bytes : int
        Bytes of its outputs, B: what another pipeline stage would receive.
    weights : int
        Elements of the model's weights (initializers and Constant outputs) it reads, count.
    supported : bool
        False when its operator had no cost rule and it was priced as bytes only.
    im2col_bytes : int
        For a convolution whose window is more than one pixel or whose stride is more
        than one: the bytes of the matrix of input windows that a CPU engine copies out
        before its GEMM (im2col), written once and read once, B; 0 for any other node.
        Not part of ``cost``, which is the one-pass cost;
        :mod:`perfmodel.capstone.predict` adds it.
    """

    name: str
    op_type: str
    op_class: str
    unit: str
    cost: ops.Cost
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    output_bytes: int
    weights: int
    supported: bool = True
    im2col_bytes: int = 0


@dataclass(frozen=True, slots=True)
class ImportedModel:
    """An ONNX model priced node by node, in execution (topological) order.

    Parameters
    ----------
    name : str
        The ONNX graph's name, ``"model"`` when it has none.
    nodes : tuple of Node
        Every node, priced, in execution order.
    parameters : int
        Elements of every stored weight (initializer), batch-norm statistics included,
        count.
    parameter_bytes : int
        Bytes of those weights, at the width they are stored in, B.
    batch : int
        The first dimension of the first input that is not a weight, count; 1 when the
        model has no such input or it is a scalar.
    """

    name: str
    nodes: tuple[Node, ...]
    parameters: int
    parameter_bytes: int
    batch: int = 1

    @property
    def costs(self) -> list[ops.Cost]:
        """Each node's cost, in execution order."""
        return [node.cost for node in self.nodes]

    @property
    def flops(self) -> float:
        """Floating-point operations of one pass, all nodes together, FLOP."""
        return math.fsum(node.cost.flops for node in self.nodes)

    @property
    def bytes(self) -> float:
        """Bytes every node reads and writes, all nodes together, B."""
        return math.fsum(node.cost.bytes for node in self.nodes)

    @property
    def unsupported(self) -> dict[str, int]:
        """Operator types priced as bytes only, and how many nodes of each."""
        return dict(Counter(node.op_type for node in self.nodes if not node.supported))

    @property
    def activation_bytes(self) -> int:
        """Bytes of every node's outputs: what training keeps for the backward pass."""
        return sum(node.output_bytes for node in self.nodes)

    def by_class(self) -> dict[str, list[Node]]:
        """The nodes of each op class present, in :data:`OP_CLASSES` order.

        Returns
        -------
        dict of str to list of Node
            Op class to its nodes, in execution order; classes with no node are left out.
        """
        groups: dict[str, list[Node]] = {name: [] for name in OP_CLASSES}
        for node in self.nodes:
            groups[node.op_class].append(node)
        return {name: nodes for name, nodes in groups.items() if nodes}

    def edges(self) -> list[tuple[int, int]]:
        """``(u, v)`` for each node v that reads an output of node u.

        Returns
        -------
        list of (int, int)
            Pairs of node indices into :attr:`nodes`, sorted, each once; a node reading
            its own output makes no edge, and neither do the graph's inputs and weights.
        """
        producer = {tensor: i for i, node in enumerate(self.nodes) for tensor in node.outputs}
        return sorted(
            {
                (producer[tensor], v)
                for v, node in enumerate(self.nodes)
                for tensor in node.inputs
                if tensor in producer and producer[tensor] != v
            }
        )


def _load(model: Any) -> Any:
    import onnx

    if isinstance(model, onnx.ModelProto):
        return model
    if isinstance(model, (str, Path)):
        path = Path(model)
        if not path.is_file():
            raise ValueError(f"`model` must be an ONNX file that exists (got {str(path)!r}).")
        return onnx.load(str(path), load_external_data=False)
    raise TypeError(
        f"`model` must be an onnx.ModelProto or the path of a .onnx file "
        f"(got {type(model).__name__})."
    )


def _fix_inputs(model: Any, shapes: Mapping[str, Sequence[int]] | None) -> Any:
    """A copy of ``model`` whose graph inputs all have fixed shapes."""
    import onnx

    initializers = {tensor.name for tensor in model.graph.initializer}
    given = dict(shapes or {})
    if not isinstance(given, dict):
        raise TypeError("`shapes` must map input names to shapes.")
    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    names = {value.name for value in copy.graph.input}
    for name in given:
        if name not in names:
            raise ValueError(
                f"`shapes` names {name!r}, which is not an input of the model "
                f"(its inputs: {sorted(names - initializers)})."
            )
    for value in copy.graph.input:
        if value.name in initializers:
            continue
        dims = value.type.tensor_type.shape.dim
        if value.name in given:
            shape = [count(f"shapes[{value.name!r}]", d) for d in given[value.name]]
            del dims[:]
            for d in shape:
                dims.add().dim_value = d
        elif any(not d.HasField("dim_value") for d in dims):
            described = [
                d.dim_value if d.HasField("dim_value") else d.dim_param or "?" for d in dims
            ]
            raise ValueError(
                f"input {value.name!r} has no fixed shape ({described}); pass "
                f"shapes={{{value.name!r}: (...)}} with the sizes to price, as an export "
                f"with dynamic axes leaves them open."
            )
    return copy


def _tensors(model: Any) -> dict[str, Tensor]:
    import onnx

    inferred = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True)
    graph = inferred.graph
    found: dict[str, Tensor] = {}
    for value in [*graph.input, *graph.value_info, *graph.output]:
        kind = value.type.tensor_type
        if kind.HasField("shape") and all(d.HasField("dim_value") for d in kind.shape.dim):
            found[value.name] = Tensor(tuple(d.dim_value for d in kind.shape.dim), kind.elem_type)
    for tensor in graph.initializer:
        found[tensor.name] = Tensor(tuple(tensor.dims), tensor.data_type)
    for node in graph.node:  # Constant nodes' outputs, which inference may leave without shape
        if node.op_type == "Constant" and node.output[0] not in found:
            for attribute in node.attribute:
                if attribute.name == "value":
                    found[node.output[0]] = Tensor(tuple(attribute.t.dims), attribute.t.data_type)
    return found


def _attributes(node: Any) -> dict[str, Any]:
    import onnx

    return {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}


def _named(tensors: Sequence[Tensor]) -> str | None:
    """The dtype name of the first tensor, when it has one of ours."""
    dtype = tensors[0].dtype if tensors else None
    return dtype if isinstance(dtype, str) else None


def _bytes_only(inputs: Sequence[Tensor], outputs: Sequence[Tensor], label: str) -> ops.Cost:
    return ops.Cost(
        flops=0,
        bytes_read=sum(t.nbytes for t in inputs),
        bytes_written=sum(t.nbytes for t in outputs),
        dtype=_named(outputs),
        label=label,
    )


def _matmul(a: Tensor, b: Tensor, out: Tensor, b_is_weight: bool) -> tuple[ops.Cost, str]:
    """A (batched) MatMul: a weight shared by every row is one matmul of all the rows."""
    a_shape = (1, *a.shape) if len(a.shape) == 1 else a.shape
    b_shape = (*b.shape, 1) if len(b.shape) == 1 else b.shape
    m, k, n = a_shape[-2], a_shape[-1], b_shape[-1]
    if len(b_shape) == 2:  # a weight (or any 2-D operand): every leading dim is more rows
        rows = math.prod(a_shape[:-1])
        return ops.matmul(rows, k, n, dtype=a.dtype), "matmul" if b_is_weight else "attention"
    batch = max(1, out.elements // max(1, m * n))
    return ops.matmul(m, k, n, dtype=a.dtype) * batch, "attention"


def _conv(node: Any, x: Tensor, w: Tensor, out: Tensor, attrs: dict[str, Any]) -> ops.Cost:
    spatial = len(x.shape) - 2
    if spatial not in (1, 2):
        raise _NoRule(f"{spatial}-D convolution")

    def as_2d(values: Sequence[int]) -> tuple[int, ...]:
        return (1, *values) if spatial == 1 else tuple(values)

    kernel = as_2d(attrs.get("kernel_shape", w.shape[2:]))
    strides = as_2d(attrs.get("strides", [1] * spatial))
    dilations = as_2d(attrs.get("dilations", [1] * spatial))
    in_hw = as_2d(x.shape[2:])
    out_hw = as_2d(out.shape[2:])
    groups = int(attrs.get("group", 1))
    # The padding that gives the inferred output size (auto_pad and asymmetric pads included):
    # priced as the input grown by the extra rows, then the input bytes put right.
    pad_total = [
        max(0, (o - 1) * s + d * (k - 1) + 1 - i)
        for o, s, d, k, i in zip(out_hw, strides, dilations, kernel, in_hw, strict=True)
    ]
    cost = ops.conv2d(
        x.shape[0],
        x.shape[1],
        w.shape[0],
        in_hw[0] + pad_total[0] % 2,
        in_hw[1] + pad_total[1] % 2,
        (kernel[0], kernel[1]),
        stride=(strides[0], strides[1]),
        padding=(pad_total[0] // 2, pad_total[1] // 2),
        dilation=(dilations[0], dilations[1]),
        groups=groups,
        dtype=x.dtype,
    )
    return replace(cost, bytes_read=x.nbytes + w.nbytes)


def _im2col_bytes(node: Any, tensors: dict[str, Tensor]) -> int:
    """Bytes of the im2col matrix of a Conv: (C_in / groups)·k_h·k_w rows per output pixel,
    written once and read once by the GEMM. Zero for a 1x1, stride-1 convolution, which
    needs no copy."""
    if node.op_type != "Conv":
        return 0
    x, w, out = tensors[node.input[0]], tensors[node.input[1]], tensors[node.output[0]]
    attrs = _attributes(node)
    window = math.prod(w.shape[2:])
    if window == 1 and all(s == 1 for s in attrs.get("strides", [1])):
        return 0
    return (
        2
        * x.width
        * w.shape[1]
        * window
        * out.elements
        // max(1, w.shape[0])
        * int(attrs.get("group", 1))
    )


def _axis_split(shape: Sequence[int], axis: int) -> tuple[int, int]:
    """(rows, cols) of a tensor normalised or softmaxed over ``axis`` onwards."""
    axis = axis % len(shape) if shape else 0
    return math.prod(shape[:axis]), math.prod(shape[axis:])


def _price(node: Any, tensors: dict[str, Tensor], weights: set[str]) -> tuple[ops.Cost, str, str]:
    """(cost, op class, unit) of one node. Raises KeyError when a shape is unknown."""
    op = node.op_type
    inputs = [tensors[name] for name in node.input if name]
    outputs = [tensors[name] for name in node.output if name]
    attrs = _attributes(node)
    out = outputs[0] if outputs else Tensor((), 1)
    if op == "MatMul":
        cost, op_class = _matmul(inputs[0], inputs[1], out, node.input[1] in weights)
        return cost, op_class, "matrix"
    if op == "Gemm":
        a, b = inputs[0], inputs[1]
        m = a.shape[1] if attrs.get("transA") else a.shape[0]
        k = a.shape[0] if attrs.get("transA") else a.shape[1]
        n = b.shape[0] if attrs.get("transB") else b.shape[1]
        cost = ops.matmul(m, k, n, dtype=a.dtype)
        if len(inputs) > 2:  # + C, broadcast onto every row
            cost = replace(
                cost, flops=cost.flops + m * n, bytes_read=cost.bytes_read + inputs[2].nbytes
            )
        return cost, "matmul", "matrix"
    if op == "Conv":
        cost = _conv(node, inputs[0], inputs[1], out, attrs)
        if len(inputs) > 2:
            cost = replace(
                cost, flops=cost.flops + out.elements, bytes_read=cost.bytes_read + inputs[2].nbytes
            )
        return cost, "conv", "matrix"
    if op == "Attention":  # ONNX opset 23: Q (B, H, S, D), K and V (B, H_kv, S_kv, D)
        query, keys = inputs[0], inputs[1]
        if len(query.shape) != 4:
            raise _NoRule("Attention with 3-D inputs")
        cost = ops.attention(
            query.shape[0],
            query.shape[1],
            query.shape[2],
            query.shape[3],
            fused=True,
            dtype=query.dtype,
            kv_len=keys.shape[2],
            kv_heads=keys.shape[1],
            causal=bool(attrs.get("is_causal", 0)),
        )
        return cost, "attention", "matrix"
    if op == "Cast":  # reads one width, writes another
        return _bytes_only(inputs, outputs, ""), "data movement", "vector"
    if op in _UNARY or op in _TRANSCENDENTAL:
        flops = _UNARY.get(op, _TRANSCENDENTAL.get(op, 1))
        cost = ops.elementwise(out.elements, flops_per_element=flops, dtype=inputs[0].dtype)
        return cost, "elementwise", "exp" if op in _TRANSCENDENTAL else "vector"
    if op in _BINARY:
        broadcast = any(t.elements < out.elements for t in inputs)
        cost = ops.Cost(
            flops=out.elements * max(1, len(inputs) - 1),
            bytes_read=sum(t.nbytes for t in inputs),
            bytes_written=out.nbytes,
            dtype=_named(outputs),
        )
        return cost, "elementwise", "broadcast" if broadcast else "vector"
    if op in _SOFTMAX:
        # Opset 13 normalises along one axis, earlier opsets over the flattened tail: the
        # same 5 FLOPs per element either way.
        rows, cols = _axis_split(inputs[0].shape, int(attrs.get("axis", -1)))
        return ops.softmax(rows, cols, dtype=inputs[0].dtype), "softmax", "exp"
    if op in _NORMALIZATION:
        x = inputs[0]
        if op == "LayerNormalization" or op.endswith("LayerNormalization"):
            rows, cols = _axis_split(x.shape, int(attrs.get("axis", -1)))
            return ops.layer_norm(rows, cols, dtype=x.dtype), "normalization", "vector"
        params = sum(t.nbytes for t in inputs[1:])
        cost = ops.elementwise(x.elements, flops_per_element=_NORMALIZATION[op], dtype=x.dtype)
        return replace(cost, bytes_read=cost.bytes_read + params), "normalization", "broadcast"
    if op in _REDUCTIONS:
        x = inputs[0]
        cost = ops.reduction(x.elements, outputs=max(1, out.elements), dtype=x.dtype)
        return cost, "reduction", "vector"
    if op in _GLOBAL_POOLING:
        x = inputs[0]
        cost = ops.reduction(x.elements, outputs=out.elements, dtype=x.dtype)
        return cost, "pooling", "vector"
    if op in _POOLING:
        x = inputs[0]
        window = tuple(attrs["kernel_shape"])
        strides = tuple(attrs.get("strides", [1] * len(window)))
        if len(window) != 2:
            raise _NoRule(f"{len(window)}-D pooling")
        pads = attrs.get("pads", [0] * 4)
        cost = ops.pooling(
            x.shape[0],
            x.shape[1],
            x.shape[2] + pads[0] + pads[2],
            x.shape[3] + pads[1] + pads[3],
            (window[0], window[1]),
            stride=(strides[0], strides[1]),
            dtype=x.dtype,
        )
        return replace(cost, bytes_read=x.nbytes), "pooling", "vector"
    if op in _MOVEMENT:
        moved = [tensors[name] for name in node.input[:1] if name]
        if op in ("Concat", "Sum"):
            moved = inputs
        if op in ("Gather", "GatherElements", "GatherND"):
            moved = [out]  # only the gathered rows are read
        return _bytes_only(moved, outputs, ""), "data movement", "vector"
    if op in _FREE:
        return ops.Cost(flops=0, bytes_read=0, bytes_written=0), "data movement", "vector"
    raise _NoRule(op)


def import_onnx(model: Any, *, shapes: Mapping[str, Sequence[int]] | None = None) -> ImportedModel:
    """Price every node of an ONNX model, in execution order.

    Parameters
    ----------
    model : onnx.ModelProto or str or pathlib.Path
        The model, or the path of its ``.onnx`` file. Weights stored as external data are
        not read: only their shapes matter.
    shapes : mapping of str to sequence of int, optional
        Sizes for inputs exported with dynamic axes, ``{"input": (8, 3, 224, 224)}``.

    Returns
    -------
    ImportedModel
        Every node priced, with the model's name, weights and batch.

    Warns
    -----
    UnsupportedOpWarning
        Naming each operator type with no cost rule; those nodes are priced as bytes only
        and flagged (``Node.supported`` is False).

    Raises
    ------
    TypeError
        If ``model`` is neither a ModelProto nor a path.
    ValueError
        If an input has no fixed shape and ``shapes`` does not give one, or a node's
        shapes cannot be inferred.
    """
    proto = _fix_inputs(_load(model), shapes)
    tensors = _tensors(proto)
    weights = {tensor.name for tensor in proto.graph.initializer}
    for node in proto.graph.node:  # constants computed once count as weights too
        if node.op_type == "Constant":
            weights.update(node.output)
    nodes: list[Node] = []
    skipped: Counter[str] = Counter()
    for index, onnx_node in enumerate(proto.graph.node):
        name = onnx_node.name or f"{onnx_node.op_type}_{index}"
        missing = [t for t in [*onnx_node.input, *onnx_node.output] if t and t not in tensors]
        if missing:
            raise ValueError(
                f"node {name!r} ({onnx_node.op_type}): ONNX shape inference found no shape for "
                f"{missing[:3]}; give the model's inputs fixed sizes with `shapes=`."
            )
        supported = True
        try:
            cost, op_class, unit = _price(onnx_node, tensors, weights)
        except _NoRule:
            supported, op_class, unit = False, "unsupported", "vector"
            skipped[onnx_node.op_type] += 1
            cost = _bytes_only(
                [tensors[t] for t in onnx_node.input if t],
                [tensors[t] for t in onnx_node.output if t],
                "",
            )
        nodes.append(
            Node(
                im2col_bytes=_im2col_bytes(onnx_node, tensors) if supported else 0,
                name=name,
                op_type=onnx_node.op_type,
                op_class=op_class,
                unit=unit,
                cost=replace(cost, label=name),
                inputs=tuple(t for t in onnx_node.input if t),
                outputs=tuple(t for t in onnx_node.output if t),
                output_bytes=sum(tensors[t].nbytes for t in onnx_node.output if t),
                weights=sum(tensors[t].elements for t in onnx_node.input if t in weights),
                supported=supported,
            )
        )
    if skipped:
        listed = ", ".join(f"{op} ({n} node{'s' * (n > 1)})" for op, n in sorted(skipped.items()))
        warnings.warn(
            UnsupportedOpWarning(
                f"no cost rule for {listed}: priced as bytes only (read inputs, write "
                f"outputs) and flagged with supported=False."
            ),
            stacklevel=2,
        )
    initializers = [tensors[t.name] for t in proto.graph.initializer]
    first = next((v.name for v in proto.graph.input if v.name not in weights), None)
    batch = tensors[first].shape[0] if first and tensors[first].shape else 1
    return ImportedModel(
        batch=batch,
        name=proto.graph.name or "model",
        nodes=tuple(nodes),
        parameters=sum(t.elements for t in initializers),
        parameter_bytes=sum(t.nbytes for t in initializers),
    )


def from_onnx(model: Any, *, shapes: Mapping[str, Sequence[int]] | None = None) -> list[ops.Cost]:
    """Every node's :class:`~perfmodel.ops.Cost`, in execution order.

    The costs of :func:`import_onnx`'s nodes, without their op class, unit and edges.

    Parameters
    ----------
    model : onnx.ModelProto or str or pathlib.Path
        The model, or the path of its ``.onnx`` file (see :func:`import_onnx`).
    shapes : mapping of str to sequence of int, optional
        Sizes for inputs exported with dynamic axes, ``{"input": (8, 3, 224, 224)}``.

    Returns
    -------
    list of ops.Cost
        One cost per node, labelled with its ONNX node name.

    Warns
    -----
    UnsupportedOpWarning
        As :func:`import_onnx` does.
    """
    return import_onnx(model, shapes=shapes).costs
