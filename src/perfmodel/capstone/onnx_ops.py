"""ONNX's operators as data: which are priced how, the kinds of kernel they run, and the shape
and type of a tensor.

Each table groups operator types that one cost rule of :mod:`perfmodel.capstone.onnx_costs`
prices alike (unary, transcendental, binary, normalisation, reduction, data movement...).
:data:`SUPPORTED` is every type a rule covers, :data:`BYTES_ONLY` those priced by the bytes
they move and :data:`UNPRICEABLE` those whose cost is not in their shapes (subgraphs,
sequences, strings). :data:`OP_CLASSES` is what lecture 12 groups a model's time by;
:func:`kernel_kind` names the kind of CPU kernel a node runs (:data:`KERNEL_KINDS`), each of
which :mod:`perfmodel.capstone.probes` measures.

Examples
--------
>>> "Relu" in UNARY and "Relu" in SUPPORTED, "Loop" in UNPRICEABLE
(True, True)
>>> Tensor((2, 3), 1).nbytes
24
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

__all__ = ["BINARY", "BYTES_ONLY", "CONVS", "FREE", "GENERATED", "GEMV_ROWS", "GLOBAL_POOLING",
           "INTEGER_CONVS", "INTEGER_MATMULS", "KERNEL_KINDS", "MATMULS", "MOVEMENT",
           "NORMALIZATION", "OP_CLASSES", "POOLING", "RECURRENT", "REDUCTIONS", "SCANS",
           "SOFTMAX", "SUPPORTED", "TRANSCENDENTAL", "UNARY", "UNPRICEABLE", "VIEWS", "Tensor",
           "NoRule", "attributes", "kernel_kind"]  # fmt: skip

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

UNARY = {  # op type: FLOPs per element
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

TRANSCENDENTAL = {  # evaluated as a function call per element: priced on the exp unit
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

BINARY = {
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

NORMALIZATION = {
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

REDUCTIONS = {
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

POOLING = {"MaxPool", "AveragePool", "LpPool"}

GLOBAL_POOLING = {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"}

MOVEMENT = {
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
GENERATED = {
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
FREE = {"Shape", "Size", "Constant"}

SOFTMAX = {"Softmax", "LogSoftmax", "Hardmax"}

#: Gates per step (the ONNX spec's W holds gates x hidden rows), and elementwise FLOPs per
#: hidden unit per step besides the two biases: LSTM 3 sigmoids, 2 tanh, 3 multiplies and an
#: add; GRU 2 sigmoids, a tanh, 3 multiplies, a subtract and an add; RNN one tanh.
RECURRENT = {"LSTM": (4, 9), "GRU": (3, 8), "RNN": (1, 1)}

#: Matmul-like operators on integers, and where their two matrices are among the inputs.
INTEGER_MATMULS = {"MatMulInteger": (0, 1), "QLinearMatMul": (0, 3)}

INTEGER_CONVS = {"ConvInteger": (0, 1), "QLinearConv": (0, 3)}

SCANS = {"CumSum", "CumProd"}

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
    | {*UNARY, *TRANSCENDENTAL, *BINARY, *RECURRENT, *INTEGER_MATMULS, *INTEGER_CONVS}
    | SCANS
    | GENERATED
    | set(NORMALIZATION)
    | REDUCTIONS
    | POOLING
    | GLOBAL_POOLING
    | MOVEMENT
    | FREE
    | SOFTMAX
)

#: What kind of kernel an engine runs for a node: each kind has its own speed on a CPU
#: (:mod:`perfmodel.capstone.kernels` measures each). The compute kinds are timed by their
#: FLOPs, the others by their bytes.
KERNEL_KINDS = ("gemm", "gemv", "conv", "conv 1x1", "grouped conv", "depthwise",
                "depthwise strided", "recurrent", "gru", "elementwise", "broadcast",
                "transcendental",
                "sigmoid", "normalization", "skip normalization", "reduction", "movement",
                "view")  # fmt: skip

VIEWS = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity", "Dropout"} | FREE

MATMULS = {"MatMul", "Gemm", "Einsum", "Attention", *INTEGER_MATMULS}

CONVS = {"Conv", "ConvTranspose", "DeformConv", *INTEGER_CONVS}

#: A matmul with this many rows or fewer streams its weights: a matrix-vector kernel.
GEMV_ROWS = 4

#: The supported operators that compute nothing: their bytes are their cost.
BYTES_ONLY = frozenset(MOVEMENT | FREE | {"Cast", "CastLike", "Identity", "Dropout"})

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
        quarter of the work at stride 2, but not a quarter of the time), ``"recurrent"`` (LSTM
        and RNN), ``"gru"`` (onnxruntime's GRU: two matmuls a step, the second after the reset
        gate, so it runs about as long as an LSTM of its size for three quarters of the FLOPs),
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
    if op in MATMULS and len(inputs) > 1:
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
    if op in CONVS and inputs:
        group = int(attributes(node).get("group", 1))
        x = inputs[0]
        weight = tensors.get(node.input[INTEGER_CONVS.get(op, (0, 1))[1]])
        if group > 1 and len(x.shape) > 1 and group == x.shape[1]:
            strided = any(int(v) > 1 for v in attributes(node).get("strides", [1]))
            return "depthwise strided" if strided else "depthwise"
        if group > 1:
            return "grouped conv"
        strides = attributes(node).get("strides", [1])
        if weight is not None and math.prod(weight.shape[2:]) == 1 and set(strides) == {1}:
            return "conv 1x1"
        return "conv"
    if op == "GRU":  # two matmuls a step, the second waiting on the reset gate: its own speed
        return "gru"
    if op in RECURRENT:
        return "recurrent"
    if op in VIEWS:
        return "view"
    if op in MOVEMENT or op in ("Cast", "CastLike"):
        return "movement"
    if op in NORMALIZATION and op != "BatchNormalization" or op in SOFTMAX:
        return "normalization"
    if op in REDUCTIONS | POOLING | GLOBAL_POOLING | SCANS or op in ("TopK", "MaxRoiPool"):
        return "reduction"
    if op == "Sigmoid":  # onnxruntime's vectorised logistic: about twice Erf's speed
        return "sigmoid"
    if op in TRANSCENDENTAL or op in ("SwiGLU", "DFT", "STFT"):
        return "transcendental"
    outputs = [tensors[name] for name in node.output if name and name in tensors]
    spread = outputs and any(0 < t.elements < outputs[0].elements for t in inputs)
    if op == "BatchNormalization" or (op in BINARY and spread):
        return "broadcast"  # one operand indexed per channel or per row: another loop
    return "elementwise"
