"""What each ONNX operator costs: FLOPs and bytes from its shapes, by the ONNX spec.

:func:`price` reads one node (its operator, attributes, and the shapes ONNX shape inference
gave its tensors) and returns its :class:`~perfmodel.ops.Cost`, its *op class*
(:data:`OP_CLASSES`, what lecture 12's speed-up breakdown groups by), the *unit* that runs it
(what :class:`perfmodel.measure.calibration.Calibration` prices it on) and how many steps it
runs one after another (a recurrent layer's time steps; 1 for any other node). An operator
none of the rules covers raises :class:`NoRule`; :data:`SUPPORTED` lists the covered ones
and :data:`UNPRICEABLE` those whose cost is not in their shapes (subgraphs, sequences,
strings).

Examples
--------
>>> import onnx
>>> node = onnx.helper.make_node("LSTM", ["x", "w", "r"], ["y"], hidden_size=8)
>>> shapes = {"x": Tensor((5, 2, 4), 1), "w": Tensor((1, 32, 4), 1),
...           "r": Tensor((1, 32, 8), 1), "y": Tensor((5, 1, 2, 8), 1)}
>>> priced = price(node, shapes, weights={"w", "r"})
>>> priced.op_class, priced.steps, priced.cost.flops  # 5 steps x 2 rows x (2·32·12 + 72), no B
('recurrent', 5, 8400)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from perfmodel import ops

__all__ = ["BYTES_ONLY", "KERNEL_KINDS", "OP_CLASSES", "SUPPORTED", "UNPRICEABLE", "NoRule",
           "Priced", "Tensor", "attributes", "im2col_bytes", "kernel_kind", "price"]  # fmt: skip

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
    "recurrent",  # LSTM, GRU, RNN: one small matmul per step, step after step
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
    "CastLike": 0,
    "BitwiseNot": 1,
    "IsInf": 1,
    "Shrink": 2,
    "ThresholdedRelu": 2,
    "QuantizeLinear": 3,  # divide by the scale, round, add the zero point (then saturate)
    "DequantizeLinear": 2,  # subtract the zero point, multiply by the scale
    "DynamicQuantizeLinear": 6,  # a min and a max pass, then quantize each element
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
    "Tan": 1,
    "Asin": 1,
    "Acos": 1,
    "Atan": 1,
    "Sinh": 1,
    "Cosh": 1,
    "Asinh": 1,
    "Acosh": 1,
    "Atanh": 1,
    "Swish": 2,  # x times its sigmoid
    "RotaryEmbedding": 3,  # two multiplies and an add per element (rotate pairs)
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
    "BitwiseAnd",
    "BitwiseOr",
    "BitwiseXor",
}
_NORMALIZATION = {
    "LayerNormalization": 8,
    "BatchNormalization": 2,
    "InstanceNormalization": 8,
    "GroupNormalization": 8,
    "RMSNormalization": 5,
    "SimplifiedLayerNormalization": 5,
    "LpNormalization": 3,
    "MeanVarianceNormalization": 8,
    "LRN": 6,  # a window sum of squares (slid: ~2 per element), a power, a divide
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
    "Compress",
    "ReverseSequence",
    "OneHot",
    "CenterCropPad",
    "Col2Im",
    "Scatter",
    "TensorScatter",
    "MaxUnpool",
    "BitCast",
    "ConcatFromSequence",
    "SplitToSequence",
    "Unique",
    "NonMaxSuppression",
    "NonZero",  # reads its input, writes the indices of the non-zeros
}
#: Made from nothing but their attributes or an input's shape: they write, read nothing.
_GENERATED = {
    "EyeLike",
    "RandomNormal",
    "RandomNormalLike",
    "RandomUniform",
    "RandomUniformLike",
    "Bernoulli",
    "Multinomial",
    "BlackmanWindow",
    "HammingWindow",
    "HannWindow",
    "MelWeightMatrix",
    "ConstantOfShape",  # a causal mask, a buffer of zeros: written in full
    "Range",
}
#: Cost nothing at run time: a shape read, a constant already in memory.
_FREE = {"Shape", "Size", "Constant"}
_SOFTMAX = {"Softmax", "LogSoftmax", "Hardmax"}
#: Gates per step (the ONNX spec's W holds gates x hidden rows), and elementwise FLOPs per
#: hidden unit per step besides the two biases: LSTM 3 sigmoids, 2 tanh, 3 multiplies and an
#: add; GRU 2 sigmoids, a tanh, 3 multiplies, a subtract and an add; RNN one tanh.
_RECURRENT = {"LSTM": (4, 9), "GRU": (3, 8), "RNN": (1, 1)}
#: Matmul-like operators on integers, and where their two matrices are among the inputs.
_INTEGER_MATMULS = {"MatMulInteger": (0, 1), "QLinearMatMul": (0, 3)}
_INTEGER_CONVS = {"ConvInteger": (0, 1), "QLinearConv": (0, 3)}
_SCANS = {"CumSum", "CumProd"}
#: Subgraphs, sequences, optionals and strings: what they cost is not in their shapes.
UNPRICEABLE = frozenset({
    "If", "Loop", "Scan", "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase",
    "SequenceInsert", "SequenceLength", "SequenceMap", "Optional", "OptionalGetElement",
    "OptionalHasElement", "StringConcat", "StringNormalizer", "StringSplit", "RegexFullMatch",
    "TfIdfVectorizer", "ImageDecoder",
})  # fmt: skip

#: Every operator type priced by its own rule (anything else is priced as bytes only).
SUPPORTED = frozenset(
    {"MatMul", "Gemm", "Conv", "ConvTranspose", "Attention", "Einsum", "TopK", "Det"}
    | {"SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss", "DFT", "STFT"}
    | {"GridSample", "AffineGrid", "RoiAlign", "MaxRoiPool", "DeformConv", "SwiGLU"}
    | {*_UNARY, *_TRANSCENDENTAL, *_BINARY, *_RECURRENT, *_INTEGER_MATMULS, *_INTEGER_CONVS}
    | _SCANS
    | _GENERATED
    | set(_NORMALIZATION)
    | _REDUCTIONS
    | _POOLING
    | _GLOBAL_POOLING
    | _MOVEMENT
    | _FREE
    | _SOFTMAX
)

#: What kind of kernel an engine runs for a node: each kind has its own speed on a CPU
#: (:mod:`perfmodel.capstone.kernels` measures each). The compute kinds are timed by their
#: FLOPs, the others by their bytes.
KERNEL_KINDS = ("gemm", "gemv", "conv", "conv 1x1", "grouped conv", "depthwise",
                "depthwise strided", "recurrent", "elementwise", "broadcast", "transcendental",
                "sigmoid", "normalization", "skip normalization", "reduction", "movement",
                "view")  # fmt: skip
_VIEWS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"} | _FREE
_MATMULS = {"MatMul", "Gemm", "Einsum", "Attention", *_INTEGER_MATMULS}
_CONVS = {"Conv", "ConvTranspose", "DeformConv", *_INTEGER_CONVS}
#: A matmul with this many rows or fewer streams its weights: a matrix-vector kernel.
GEMV_ROWS = 4

#: The supported operators that compute nothing: their bytes are their cost.
BYTES_ONLY = frozenset(_MOVEMENT | _FREE | {"Cast", "CastLike", "Identity", "Dropout"})

_DTYPES = {1: "fp32", 10: "fp16", 16: "bf16", 11: "fp64", 3: "int8"}  # ONNX elem type: ours
#: Bits per element of each ONNX element type (complex types hold two floats; the float8 and
#: 4-bit types of opsets 19-23 are packed).
_BITS = {1: 32, 2: 8, 3: 8, 4: 16, 5: 16, 6: 32, 7: 64, 9: 8, 10: 16, 11: 64, 12: 32, 13: 64,
         14: 64, 15: 128, 16: 16, 17: 8, 18: 8, 19: 8, 20: 8, 21: 4, 22: 4, 23: 4}  # fmt: skip


class NoRule(Exception):
    """No rule prices this node (an operator, or a form of one such as 3-D convolution):
    the import prices it as bytes only and flags it."""


@dataclass(frozen=True, slots=True)
class Tensor:
    """A tensor's shape and element type, as shape inference found it.

    Parameters
    ----------
    shape : tuple of int
        Its size along each axis, count.
    elem_type : int
        ONNX's element type (``onnx.TensorProto.FLOAT`` is 1).
    """

    shape: tuple[int, ...]
    elem_type: int

    @property
    def elements(self) -> int:
        """Elements, count."""
        return math.prod(self.shape)

    @property
    def width(self) -> int:
        """Bytes per element, B, at least 1 (a 4-bit type rounds up; see :attr:`nbytes`)."""
        return max(1, self._bits // 8)

    @property
    def _bits(self) -> int:
        bits = _BITS.get(self.elem_type)
        if bits is None:  # strings, or a type newer than the table: no width to price
            raise NoRule(f"a tensor of ONNX element type {self.elem_type}")
        return bits

    @property
    def nbytes(self) -> int:
        """Bytes of the whole tensor as stored, packed types included, B."""
        return math.ceil(self.elements * self._bits / 8)

    @property
    def dtype(self) -> str | int:
        """Our dtype name where there is one, else the width in bytes."""
        return _DTYPES.get(self.elem_type, self.width)


class Priced(NamedTuple):
    """One node's price.

    Parameters
    ----------
    cost : perfmodel.ops.Cost
        Its FLOPs and bytes.
    op_class : str
        One of :data:`OP_CLASSES`.
    unit : str
        What runs it: ``"matrix"``, ``"vector"``, ``"broadcast"`` or ``"exp"``.
    steps : int
        How many steps it runs one after another, count: a recurrent layer's time steps, 1
        for any other node.
    """

    cost: ops.Cost
    op_class: str
    unit: str
    steps: int = 1


def attributes(node: Any) -> dict[str, Any]:
    """A node's attributes as Python values.

    Parameters
    ----------
    node : onnx.NodeProto
        The node.

    Returns
    -------
    dict of str to object
        Each attribute's value, by name (strings as bytes, as onnx gives them).
    """
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


def _with_bias(cost: ops.Cost, inputs: list[Tensor], index: int, out: Tensor) -> ops.Cost:
    """``cost`` plus a bias at ``inputs[index]``, when there is one: an add per output, its
    bytes read."""
    if len(inputs) <= index:
        return cost
    return replace(cost, flops=cost.flops + out.elements,
                   bytes_read=cost.bytes_read + inputs[index].nbytes)  # fmt: skip


def _conv(node: Any, x: Tensor, w: Tensor, out: Tensor, attrs: dict[str, Any]) -> ops.Cost:
    spatial = len(x.shape) - 2
    if spatial not in (1, 2):
        raise NoRule(f"{spatial}-D convolution")

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


def im2col_bytes(node: Any, tensors: dict[str, Tensor]) -> int:
    """Bytes of the im2col matrix of a Conv: (C_in / groups)·k_h·k_w rows per output pixel,
    written once and read once by the GEMM.

    Parameters
    ----------
    node : onnx.NodeProto
        The node; any operator but Conv has none.
    tensors : dict of str to Tensor
        The shapes of its tensors, by name.

    Returns
    -------
    int
        The bytes, B; 0 for a 1x1, stride-1 convolution, which needs no copy, and for any
        other operator.
    """
    if node.op_type != "Conv":
        return 0
    x, w, out = tensors[node.input[0]], tensors[node.input[1]], tensors[node.output[0]]
    attrs = attributes(node)
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
    """(cost, op class, unit) of one node, by the rules the tables above name."""
    op = node.op_type
    inputs = [tensors[name] for name in node.input if name]
    outputs = [tensors[name] for name in node.output if name]
    attrs = attributes(node)
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
        cost = _with_bias(_conv(node, inputs[0], inputs[1], out, attrs), inputs, 2, out)
        return cost, "conv", "matrix"
    if op == "Attention":  # ONNX opset 23: Q (B, H, S, D), K (B, H_kv, S_kv, D), V (..., Dv)
        query, keys = inputs[0], inputs[1]
        if len(query.shape) != 4:
            raise NoRule("Attention with 3-D inputs")

        def fused(head: int) -> ops.Cost:
            return ops.attention(query.shape[0], query.shape[1], query.shape[2], head,
                                 fused=True, dtype=query.dtype, kv_len=keys.shape[2],
                                 kv_heads=keys.shape[1],
                                 causal=bool(attrs.get("is_causal", 0)))  # fmt: skip

        d = query.shape[3]
        dv = inputs[2].shape[3] if len(inputs) > 2 and len(inputs[2].shape) == 4 else d
        # QK^T grows with D and the weighted sum with Dv, alike: the mean of the two costs
        # is QK^T at D plus the sum at Dv; a fused kernel reads its inputs and writes its
        # outputs once
        flops = (fused(d).flops + fused(dv).flops) / 2
        read, written = sum(t.nbytes for t in inputs), sum(t.nbytes for t in outputs)
        cost = ops.Cost(flops=flops, bytes_read=read, bytes_written=written, dtype=_named(inputs))
        return cost, "attention", "matrix"
    if op in ("Cast", "CastLike"):  # reads one width, writes another
        return _bytes_only(inputs, outputs, ""), "data movement", "vector"
    if op in _UNARY or op in _TRANSCENDENTAL:
        flops = _UNARY.get(op, _TRANSCENDENTAL.get(op, 1))
        cost = ops.elementwise(out.elements, flops_per_element=flops, dtype=inputs[0].dtype)
        if op != "DynamicQuantizeLinear" and out.width != inputs[0].width:  # (de)quantize
            cost = replace(cost, bytes_written=out.nbytes, bytes_read=sum(t.nbytes for t in inputs))
        return cost, "elementwise", "exp" if op in _TRANSCENDENTAL else "vector"
    if op in _BINARY:
        broadcast = any(t.elements < out.elements for t in inputs)
        combined = 1 if op == "Where" else max(1, len(inputs) - 1)  # Where picks, adds nothing
        cost = ops.Cost(
            flops=out.elements * combined,
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
        # one compare or add per window element of each output; the output's size comes
        # from shape inference, so auto_pad, ceil_mode and dilations are already in it
        x = inputs[0]
        window = math.prod(attrs["kernel_shape"])
        cost = ops.Cost(
            flops=float(out.elements * window),
            bytes_read=x.nbytes,
            bytes_written=sum(t.nbytes for t in outputs),
            dtype=_named(inputs),
        )
        return cost, "pooling", "vector"
    if op in _MOVEMENT:
        moved = [tensors[name] for name in node.input[:1] if name]
        if op in ("Concat", "Sum"):
            moved = inputs
        if op in ("Gather", "GatherElements", "GatherND"):
            moved = [out]  # only the gathered rows are read
        return _bytes_only(moved, outputs, ""), "data movement", "vector"
    if op in _FREE:
        return ops.Cost(flops=0, bytes_read=0, bytes_written=0), "data movement", "vector"
    return _price_more(node, op, inputs, outputs, out, attrs, weights)


def _einsum(equation: str, inputs: Sequence[Tensor], out: Tensor) -> ops.Cost:
    """An Einsum, contracted two operands at a time, left to right, as engines do: each step
    multiplies one term per combination of the two operands' indices and adds the terms of
    the indices no later operand or the output needs. A single operand only sums. An
    ellipsis stands for the same broadcast axes in every operand (and the output keeps them)."""
    lhs, arrow, rhs = equation.replace(" ", "").partition("->")
    terms = lhs.split(",")
    if len(terms) != len(inputs):
        raise NoRule("Einsum whose equation does not name every operand")
    sizes: dict[str, int] = {}
    indices: list[set[str]] = []
    for term, tensor in zip(terms, inputs, strict=True):
        letters = list(term.replace("...", ""))
        if "..." in term:  # the axes it covers, named by their place from the right
            covered = len(tensor.shape) - len(letters)
            before = term.index("...")
            letters[before:before] = [str(covered - i) for i in range(covered)]
        if len(letters) != len(tensor.shape):
            raise NoRule("Einsum whose indices do not match its operands")
        for letter, size in zip(letters, tensor.shape, strict=True):
            sizes[letter] = max(size, sizes.get(letter, 1))
        indices.append(set(letters))
    ellipsis = {letter for letter in sizes if letter.isdigit()}
    if not arrow:  # implicit output: the indices used once, and any ellipsis axes
        kept = {x for x in set(lhs) - {".", ","} if lhs.count(x) == 1} | ellipsis
    else:
        kept = set(rhs) - {"."} | (ellipsis if "..." in rhs else set())
    if len(indices) == 1:
        flops = math.prod(sizes[x] for x in indices[0]) if indices[0] - kept else 0
    else:
        flops, current = 0, indices[0]
        for step, other in enumerate(indices[1:], start=1):
            both = current | other
            later = set().union(*indices[step + 1 :], kept)
            terms_here = math.prod(sizes[x] for x in both)
            flops += terms_here * (2 if both - later else 1)
            current = both & later
    return ops.Cost(
        flops=flops,
        bytes_read=sum(t.nbytes for t in inputs),
        bytes_written=out.nbytes,
        dtype=_named(inputs),
    )


def _recurrent(
    node: Any, inputs: Sequence[Tensor], outputs: Sequence[Tensor], attrs: dict[str, Any]
) -> tuple[ops.Cost, int]:
    """An LSTM, GRU or RNN node by the ONNX spec: per step and direction, the gate matmuls
    X·Wᵀ and H·Rᵀ (gates x hidden rows each), their two biases, and the cell's elementwise
    work (:data:`_RECURRENT`); steps run one after another. Returns (cost, steps)."""
    gates, elementwise = _RECURRENT[node.op_type]
    x, w = inputs[0], inputs[1]
    hidden = int(attrs.get("hidden_size", w.shape[1] // gates))
    directions = (
        2 if attrs.get("direction", b"forward") in (b"bidirectional", "bidirectional") else 1
    )
    layout = int(attrs.get("layout", 0))
    steps, batch = (x.shape[1], x.shape[0]) if layout else (x.shape[0], x.shape[1])
    width_in = x.shape[2]
    biased = len(node.input) > 3 and bool(node.input[3])  # B is optional
    per_row = 2 * gates * hidden * (width_in + hidden) + 2 * gates * hidden * biased
    per_row += elementwise * hidden
    if node.op_type == "LSTM" and len(node.input) > 7 and node.input[7]:
        per_row += 6 * hidden  # peepholes: a multiply and an add on three gates
    flops = per_row * batch * steps * directions
    cost = ops.Cost(
        flops=flops,
        bytes_read=sum(t.nbytes for t in inputs),
        bytes_written=sum(t.nbytes for t in outputs),
        dtype=_named(inputs),
    )
    return cost, max(1, steps)  # a sequence of no steps still runs the node once


def _conv_transpose(x: Tensor, w: Tensor, out: Tensor, attrs: dict[str, Any]) -> ops.Cost:
    """A transposed convolution: each input pixel of each channel spreads over a window of
    every output channel of its group, one multiply-add per pair."""
    window = math.prod(w.shape[2:])
    flops = 2 * x.elements * w.shape[1] * window  # w: (C_in, C_out / groups, k...)
    return ops.Cost(
        flops=flops,
        bytes_read=x.nbytes + w.nbytes,
        bytes_written=out.nbytes,
        dtype=x.dtype if isinstance(x.dtype, str) else None,
    )


def _price_more(
    node: Any,
    op: str,
    inputs: list[Tensor],
    outputs: list[Tensor],
    out: Tensor,
    attrs: dict[str, Any],
    weights: set[str],
) -> tuple[ops.Cost, str, str]:
    """The rules for the operators of the second rank: integer and quantized matmuls and
    convolutions, Einsum, scans, top-k, sampling, losses, spectra, generators."""
    if op in _INTEGER_MATMULS:
        first, second = (inputs[i] for i in _INTEGER_MATMULS[op])
        cost, op_class = _matmul(first, second, out, node.input[_INTEGER_MATMULS[op][1]] in weights)
        if op == "QLinearMatMul":  # requantize each output: scale, round, zero point
            cost = replace(cost, flops=cost.flops + 3 * out.elements)
        return cost, op_class, "matrix"
    if op in _INTEGER_CONVS:
        x, w = (inputs[i] for i in _INTEGER_CONVS[op])
        cost = _conv(node, x, w, out, attrs)
        if op == "QLinearConv":  # its int32 bias, then requantizing each output
            cost = _with_bias(cost, inputs, 8, out)
            cost = replace(cost, flops=cost.flops + 3 * out.elements)
        return cost, "conv", "matrix"
    if op == "ConvTranspose":
        cost = _with_bias(_conv_transpose(inputs[0], inputs[1], out, attrs), inputs, 2, out)
        return cost, "conv", "matrix"
    if op == "DeformConv":  # a convolution over bilinear samples at learned offsets
        cost = _conv(node, inputs[0], inputs[1], out, attrs)
        samples = out.elements // max(1, out.shape[1]) * math.prod(inputs[1].shape[1:])
        return replace(cost, flops=cost.flops + 7 * samples), "conv", "matrix"
    if op == "Einsum":
        cost = _einsum(
            str(attrs["equation"], "utf-8")
            if isinstance(attrs["equation"], bytes)
            else attrs["equation"],
            inputs,
            out,
        )
        several = len(inputs) > 1
        weight = several and any(name in weights for name in node.input[1:])
        op_class = ("matmul" if weight else "attention") if several else "reduction"
        return cost, op_class, "matrix" if several else "vector"
    if op in _SCANS:
        return (
            replace(ops.scan(inputs[0].elements, dtype=inputs[0].dtype), label=""),
            "reduction",
            "vector",
        )
    if op == "TopK":  # a heap of k kept while each element passes: log2(k) comparisons
        axis = int(attrs.get("axis", -1))
        k = max(1, out.shape[axis] if out.shape else 1)
        x = inputs[0]
        flops = x.elements * max(1, math.ceil(math.log2(k + 1)))
        return (
            ops.Cost(
                flops=flops,
                bytes_read=x.nbytes,
                bytes_written=sum(t.nbytes for t in outputs),
                dtype=_named(inputs),
            ),
            "reduction",
            "vector",
        )
    if op == "Det":  # LU factorisation: 2n³/3 per matrix
        side = inputs[0].shape[-1]
        matrices = inputs[0].elements // max(1, side * side)
        return (
            ops.Cost(
                flops=matrices * 2 * side**3 // 3,
                bytes_read=inputs[0].nbytes,
                bytes_written=out.nbytes,
                dtype=_named(inputs),
            ),
            "reduction",
            "vector",
        )
    if op in ("GridSample", "RoiAlign", "AffineGrid"):
        # Bilinear sampling: four reads and seven FLOPs a sample (RoiAlign: 2x2 samples per
        # output); an affine grid: each coordinate a dot product of three.
        per = {"GridSample": 7, "RoiAlign": 28, "AffineGrid": 6}[op]
        read = out.nbytes if op != "AffineGrid" else inputs[0].nbytes
        return (
            ops.Cost(
                flops=per * out.elements,
                bytes_read=read,
                bytes_written=out.nbytes,
                dtype=_named(outputs),
            ),
            "elementwise",
            "vector",
        )
    if op == "MaxRoiPool":  # each region's pixels compared once
        return (
            ops.reduction(inputs[0].elements, outputs=max(1, out.elements), dtype=inputs[0].dtype),
            "pooling",
            "vector",
        )
    if op == "SwiGLU":  # silu(a) · b over the two halves of the last axis
        cost = ops.elementwise(out.elements, flops_per_element=3, dtype=inputs[0].dtype)
        return replace(cost, bytes_read=inputs[0].nbytes), "elementwise", "exp"
    if op == "SoftmaxCrossEntropyLoss":
        scores = inputs[0]
        rows, cols = scores.shape[0] * math.prod(scores.shape[2:]), scores.shape[1]
        cost = ops.softmax(rows, cols, dtype=scores.dtype)
        return replace(cost, flops=cost.flops + 2 * rows), "softmax", "exp"
    if op == "NegativeLogLikelihoodLoss":  # gather each row's target, then average
        rows = inputs[1].elements
        return (
            ops.Cost(
                flops=2 * rows,
                bytes_read=inputs[1].nbytes + rows * inputs[0].width,
                bytes_written=out.nbytes,
                dtype=_named(inputs),
            ),
            "reduction",
            "vector",
        )
    if op in ("DFT", "STFT"):
        # A radix-2 FFT of length n costs 5·n·log2(n) FLOPs (Cooley and Tukey's count).
        points = out.elements // 2  # complex outputs, two floats each
        length = (
            2 * max(1, out.shape[-2] - 1)
            if op == "STFT"
            else max(2, out.shape[-2] if len(out.shape) > 1 else 2)
        )
        flops = 5 * points * max(1, math.ceil(math.log2(length)))
        return (
            ops.Cost(
                flops=flops,
                bytes_read=inputs[0].nbytes,
                bytes_written=out.nbytes,
                dtype=_named(outputs),
            ),
            "elementwise",
            "exp",
        )
    if op in _GENERATED:  # one value computed per element written, nothing read
        return (
            ops.Cost(
                flops=out.elements, bytes_read=0, bytes_written=out.nbytes, dtype=_named(outputs)
            ),
            "elementwise",
            "vector",
        )
    raise NoRule(op)


def price(node: Any, tensors: dict[str, Tensor], weights: set[str]) -> Priced:
    """Price one ONNX node from its operator, attributes and tensors' shapes.

    Parameters
    ----------
    node : onnx.NodeProto
        The node.
    tensors : dict of str to Tensor
        The shape and type of every tensor it reads and writes, by name.
    weights : set of str
        The names of the model's weights (initializers and Constant outputs): a matmul
        against one is a weight matmul, else attention.

    Returns
    -------
    Priced
        Its cost, op class, unit and sequential steps.

    Raises
    ------
    NoRule
        When no rule covers the node.
    KeyError
        When a tensor it reads or writes is missing from ``tensors``.
    """
    if node.op_type in _RECURRENT:
        inputs = [tensors[name] for name in node.input if name]
        outputs = [tensors[name] for name in node.output if name]
        cost, steps = _recurrent(node, inputs, outputs, attributes(node))
        return Priced(cost, "recurrent", "matrix", steps)
    return Priced(*_price(node, tensors, weights))


def _einsum_rows(node: Any, inputs: list[Tensor]) -> int | None:
    """An Einsum's rows, as its equation names them: the output indices of the first operand
    that the second lacks (None when the equation has an ellipsis or is not two operands)."""
    equation = attributes(node).get("equation", "")
    equation = equation.decode() if isinstance(equation, bytes) else str(equation)
    equation = equation.replace(" ", "")
    if "..." in equation or "->" not in equation:
        return None
    operands, output = equation.split("->")
    terms = operands.split(",")
    if len(terms) != 2 or len(terms[0]) != len(inputs[0].shape):
        return None
    sizes = dict(zip(terms[0], inputs[0].shape, strict=True))
    return math.prod(sizes[i] for i in terms[0] if i in output and i not in terms[1])


def kernel_kind(node: Any, tensors: dict[str, Tensor]) -> str:
    """The kind of kernel a CPU engine runs for a node (one of :data:`KERNEL_KINDS`).

    Parameters
    ----------
    node : onnx.NodeProto
        The node.
    tensors : dict of str to Tensor
        The shapes of its tensors, by name.

    Returns
    -------
    str
        ``"gemm"`` or ``"gemv"`` (a matmul with at most :data:`GEMV_ROWS` rows), ``"conv"``,
        ``"conv 1x1"``, ``"grouped conv"`` (a few channels per group, as ResNeXt and RegNet
        use: small matmuls, slower per FLOP), ``"depthwise"`` or ``"depthwise strided"`` (a
        quarter of the work at stride 2, but not a quarter of the time), ``"recurrent"``,
        ``"elementwise"``,
        ``"broadcast"`` (batch norm, or an elementwise op with a smaller operand stretched
        over the other), ``"transcendental"``, ``"sigmoid"``, ``"normalization"``, ``"reduction"``,
        ``"movement"`` or ``"view"`` (a reshape that copies nothing).

    Examples
    --------
    >>> import onnx
    >>> conv = onnx.helper.make_node("Conv", ["x", "w"], ["y"], group=32)
    >>> kernel_kind(conv, {"x": Tensor((1, 32, 8, 8), 1), "w": Tensor((32, 1, 3, 3), 1)})
    'depthwise'
    """
    op = node.op_type
    inputs = [tensors[name] for name in node.input if name and name in tensors]
    if op in _MATMULS and len(inputs) > 1:
        a = inputs[0]
        einsum_rows = _einsum_rows(node, inputs) if op == "Einsum" else None
        if einsum_rows is not None:
            rows = einsum_rows
        elif op == "Gemm":
            rows = a.shape[1] if attributes(node).get("transA") else a.shape[0]
        elif len(inputs[1].shape) <= 2:  # a weight: every leading axis is more rows
            rows = math.prod(a.shape[:-1])
        else:
            rows = a.shape[-2] if len(a.shape) > 1 else 1
        return "gemv" if rows <= GEMV_ROWS else "gemm"
    if op in _CONVS and inputs:
        group = int(attributes(node).get("group", 1))
        x = inputs[0]
        weight = tensors.get(node.input[_INTEGER_CONVS.get(op, (0, 1))[1]])
        if group > 1 and len(x.shape) > 1 and group == x.shape[1]:
            strided = any(int(v) > 1 for v in attributes(node).get("strides", [1]))
            return "depthwise strided" if strided else "depthwise"
        if group > 1:
            return "grouped conv"
        strides = attributes(node).get("strides", [1])
        if weight is not None and math.prod(weight.shape[2:]) == 1 and set(strides) == {1}:
            return "conv 1x1"
        return "conv"
    if op in _RECURRENT:
        return "recurrent"
    if op in _VIEWS:
        return "view"
    if op in _MOVEMENT or op in ("Cast", "CastLike"):
        return "movement"
    if op in _NORMALIZATION and op != "BatchNormalization" or op in _SOFTMAX:
        return "normalization"
    if op in _REDUCTIONS | _POOLING | _GLOBAL_POOLING | _SCANS or op in ("TopK", "MaxRoiPool"):
        return "reduction"
    if op == "Sigmoid":  # onnxruntime's vectorised logistic: about twice Erf's speed
        return "sigmoid"
    if op in _TRANSCENDENTAL or op in ("SwiGLU", "DFT", "STFT"):
        return "transcendental"
    outputs = [tensors[name] for name in node.output if name and name in tensors]
    spread = outputs and any(0 < t.elements < outputs[0].elements for t in inputs)
    if op == "BatchNormalization" or (op in _BINARY and spread):
        return "broadcast"  # one operand indexed per channel or per row: another loop
    return "elementwise"
