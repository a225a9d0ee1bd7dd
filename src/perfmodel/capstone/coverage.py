"""Which ONNX operators perfmodel prices, and how.

Every operator of ONNX's default domain (as the installed ``onnx`` package lists it, without
the deprecated ones) falls in one of three kinds:

* **priced**: a rule gives its FLOPs and bytes from its shapes;
* **bytes only**: it computes nothing, so its bytes are its cost (Reshape, Transpose,
  Gather, Concat, ...; Shape and Constant cost nothing at all);
* **unknown**: no rule, because its cost is not in its shapes (subgraphs such as If and
  Loop, sequences, optionals, strings) or because the operator is newer than the rules. Such
  a node is priced as bytes only, flagged, and named in a warning.

An operator is sorted by its type alone: a few forms of a priced one have no rule yet (a 3-D
convolution, 1-D pooling, Attention on 3-D inputs) and are priced as bytes only and warned
about like an unknown one. The operators onnxruntime's optimiser writes (``com.microsoft``'s
fused and contrib ones, the CPU's blocked ``com.microsoft.nchwc`` layout) are listed apart, as
``fused``: an import at ``optimization="basic"`` or ``"all"`` prices them as the ONNX nodes they
stand for.

Examples
--------
>>> found = coverage()
>>> "LSTM" in found.priced and "Reshape" in found.bytes_only and "Loop" in found.unknown
True
>>> "com.microsoft:FusedConv" in found.fused
True
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from perfmodel.capstone.onnx_ops import BYTES_ONLY, SUPPORTED
from perfmodel.capstone.onnx_optimized import FUSED_OPS

__all__ = ["EXPORTED", "Coverage", "coverage"]

#: Operators the common exporters (``torch.onnx.export``, tf2onnx, onnxruntime's quantizer)
#: write for vision, transformer and recurrent models.
EXPORTED = frozenset({
    "Conv", "ConvTranspose", "BatchNormalization", "Relu", "Clip", "Sigmoid", "HardSigmoid",
    "HardSwish", "Mul", "Add", "Sub", "Div", "Pow", "Sqrt", "Neg", "Exp", "Log", "Tanh", "Erf",
    "Gelu", "MaxPool", "AveragePool", "GlobalAveragePool", "Flatten", "Gemm", "MatMul",
    "Reshape", "Transpose", "Squeeze", "Unsqueeze", "Concat", "Split", "Slice", "Gather",
    "GatherElements", "GatherND", "ScatterND", "ScatterElements", "Expand", "Where", "Equal",
    "Less", "Greater", "Not", "And", "Cast", "Shape", "Constant", "ConstantOfShape", "Range",
    "Einsum", "LayerNormalization", "ReduceMean", "ReduceSum", "ReduceMax", "Softmax",
    "LogSoftmax", "Resize", "Pad", "TopK", "CumSum", "Tile", "Trilu", "Identity", "Dropout",
    "LSTM", "GRU", "RNN", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear",
    "QLinearConv", "QLinearMatMul", "MatMulInteger", "ConvInteger", "ArgMax", "Min", "Max",
    "Abs", "Reciprocal", "Floor", "Ceil", "Round", "Sin", "Cos", "NonZero", "InstanceNormalization",
    "LeakyRelu", "PRelu", "Elu", "Softplus", "Mod", "DepthToSpace", "SpaceToDepth",
})  # fmt: skip


@dataclass(frozen=True, slots=True)
class Coverage:
    """The operators of a list, by how perfmodel prices them.

    Parameters
    ----------
    priced : tuple of str
        Operators a rule prices from their shapes (FLOPs and bytes), sorted.
    bytes_only : tuple of str
        Operators that compute nothing, priced by the bytes they move, sorted.
    unknown : tuple of str
        Operators with no rule (priced as bytes only, flagged and warned about), sorted.
    fused : tuple of str
        The fused and contrib operators of onnxruntime's optimised graphs that are priced,
        ``"domain:op"``, sorted.
    """

    priced: tuple[str, ...]
    bytes_only: tuple[str, ...]
    unknown: tuple[str, ...]
    fused: tuple[str, ...] = ()

    @property
    def fraction(self) -> float:
        """Share of the operators with a rule (priced or bytes only), fraction."""
        total = len(self.priced) + len(self.bytes_only) + len(self.unknown)
        return (len(self.priced) + len(self.bytes_only)) / total if total else 1.0


def _default_domain() -> list[str]:
    import onnx

    return sorted(
        {
            schema.name
            for schema in onnx.defs.get_all_schemas_with_history()
            if schema.domain in ("", "ai.onnx") and not schema.deprecated
        }
    )


def coverage(operators: Iterable[str] | None = None) -> Coverage:
    """Sort operators by how perfmodel prices them.

    Parameters
    ----------
    operators : iterable of str, optional
        Operator types (``"LSTM"``, ``"Conv"``, ... or a model's
        ``{node.op_type for node in model.graph.node}``); None takes every operator of
        ONNX's default domain that the installed ``onnx`` defines and has not deprecated.

    Returns
    -------
    Coverage
        The operators sorted into priced, bytes only and unknown.

    Raises
    ------
    TypeError
        If ``operators`` is a string or holds anything but strings.
    """
    if isinstance(operators, str):
        raise TypeError(
            f"`operators` must be an iterable of operator names (got the string {operators!r})."
        )
    given = _default_domain() if operators is None else list(operators)
    bad = [name for name in given if not isinstance(name, str)]
    if bad:
        raise TypeError(f"`operators` must hold operator names as strings (got {bad[0]!r}).")
    names = sorted(set(given))
    return Coverage(
        priced=tuple(n for n in names if n in SUPPORTED and n not in BYTES_ONLY),
        bytes_only=tuple(n for n in names if n in BYTES_ONLY),
        unknown=tuple(n for n in names if n not in SUPPORTED),
        fused=tuple(sorted(f"{domain}:{op}" for domain, ops in FUSED_OPS.items() for op in ops)),
    )
