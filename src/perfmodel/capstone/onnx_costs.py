"""What each ONNX operator costs: FLOPs and bytes from its shapes, by the ONNX spec.

:func:`price` reads one node (its operator, attributes, and the shapes ONNX shape inference
gave its tensors) and returns its :class:`~perfmodel.ops.Cost`, its *op class*
(:data:`~perfmodel.capstone.onnx_ops.OP_CLASSES`, what lecture 12's speed-up breakdown
groups by), the *unit* that runs it (what :class:`perfmodel.measure.calibration.Calibration`
prices it on) and how many steps it runs one after another (a recurrent layer's time steps;
1 for any other node). An operator none of the rules covers raises
:class:`~perfmodel.capstone.onnx_ops.NoRule`; :mod:`perfmodel.capstone.onnx_ops` holds the
tables of operators each rule covers, and the kind of kernel each node runs.

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
from dataclasses import replace
from typing import Any, NamedTuple

from perfmodel import ops
from perfmodel.capstone.onnx_ops import (
    BINARY,
    FREE,
    GENERATED,
    GLOBAL_POOLING,
    INTEGER_CONVS,
    INTEGER_MATMULS,
    MOVEMENT,
    NORMALIZATION,
    POOLING,
    RECURRENT,
    REDUCTIONS,
    SCANS,
    SOFTMAX,
    TRANSCENDENTAL,
    UNARY,
    NoRule,
    Tensor,
    attributes,
)

__all__ = ["Priced", "im2col_bytes", "price", "reread_bytes"]


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


def reread_bytes(node: Any, tensors: dict[str, Tensor]) -> int:
    """Bytes of a recurrent layer's recurrent weights (R) read again at every step after the
    first: each step's H·Rᵀ waits on the step before, so R streams through the core once a
    step, where the one-pass cost counts it once.

    Parameters
    ----------
    node : onnx.NodeProto
        The node; any operator but LSTM, GRU and RNN has none.
    tensors : dict of str to Tensor
        The shapes of its tensors, by name.

    Returns
    -------
    int
        The bytes, B; 0 for any other operator, and for a layer of one step.
    """
    if node.op_type not in RECURRENT or len(node.input) < 3 or node.input[2] not in tensors:
        return 0
    x, r = tensors[node.input[0]], tensors[node.input[2]]
    steps = x.shape[1] if int(attributes(node).get("layout", 0)) else x.shape[0]
    return max(0, steps - 1) * r.nbytes


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
    if op in UNARY or op in TRANSCENDENTAL:
        flops = UNARY.get(op, TRANSCENDENTAL.get(op, 1))
        cost = ops.elementwise(out.elements, flops_per_element=flops, dtype=inputs[0].dtype)
        if op != "DynamicQuantizeLinear" and out.width != inputs[0].width:  # (de)quantize
            cost = replace(cost, bytes_written=out.nbytes, bytes_read=sum(t.nbytes for t in inputs))
        return cost, "elementwise", "exp" if op in TRANSCENDENTAL else "vector"
    if op in BINARY:
        broadcast = any(t.elements < out.elements for t in inputs)
        combined = 1 if op == "Where" else max(1, len(inputs) - 1)  # Where picks, adds nothing
        cost = ops.Cost(
            flops=out.elements * combined,
            bytes_read=sum(t.nbytes for t in inputs),
            bytes_written=out.nbytes,
            dtype=_named(outputs),
        )
        return cost, "elementwise", "broadcast" if broadcast else "vector"
    if op in SOFTMAX:
        # Opset 13 normalises along one axis, earlier opsets over the flattened tail: the
        # same 5 FLOPs per element either way.
        rows, cols = _axis_split(inputs[0].shape, int(attrs.get("axis", -1)))
        return ops.softmax(rows, cols, dtype=inputs[0].dtype), "softmax", "exp"
    if op in NORMALIZATION:
        x = inputs[0]
        if op == "LayerNormalization" or op.endswith("LayerNormalization"):
            rows, cols = _axis_split(x.shape, int(attrs.get("axis", -1)))
            return ops.layer_norm(rows, cols, dtype=x.dtype), "normalization", "vector"
        params = sum(t.nbytes for t in inputs[1:])
        cost = ops.elementwise(x.elements, flops_per_element=NORMALIZATION[op], dtype=x.dtype)
        return replace(cost, bytes_read=cost.bytes_read + params), "normalization", "broadcast"
    if op in REDUCTIONS:
        x = inputs[0]
        cost = ops.reduction(x.elements, outputs=max(1, out.elements), dtype=x.dtype)
        return cost, "reduction", "vector"
    if op in GLOBAL_POOLING:
        x = inputs[0]
        cost = ops.reduction(x.elements, outputs=out.elements, dtype=x.dtype)
        return cost, "pooling", "vector"
    if op in POOLING:
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
    if op in MOVEMENT:
        moved = [tensors[name] for name in node.input[:1] if name]
        if op in ("Concat", "Sum"):
            moved = inputs
        if op in ("Gather", "GatherElements", "GatherND"):
            moved = [out]  # only the gathered rows are read
        return _bytes_only(moved, outputs, ""), "data movement", "vector"
    if op in FREE:
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
    work (:data:`RECURRENT`); steps run one after another. Returns (cost, steps)."""
    gates, elementwise = RECURRENT[node.op_type]
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
    if op in INTEGER_MATMULS:
        first, second = (inputs[i] for i in INTEGER_MATMULS[op])
        cost, op_class = _matmul(first, second, out, node.input[INTEGER_MATMULS[op][1]] in weights)
        if op == "QLinearMatMul":  # requantize each output: scale, round, zero point
            cost = replace(cost, flops=cost.flops + 3 * out.elements)
        return cost, op_class, "matrix"
    if op in INTEGER_CONVS:
        x, w = (inputs[i] for i in INTEGER_CONVS[op])
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
    if op in SCANS:
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
    if op in GENERATED:  # one value computed per element written, nothing read
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
    if node.op_type in RECURRENT:
        inputs = [tensors[name] for name in node.input if name]
        outputs = [tensors[name] for name in node.output if name]
        cost, steps = _recurrent(node, inputs, outputs, attributes(node))
        return Priced(cost, "recurrent", "matrix", steps)
    return Priced(*_price(node, tensors, weights))
