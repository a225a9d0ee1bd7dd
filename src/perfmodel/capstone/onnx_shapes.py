"""Every tensor's shape in an ONNX model whose inputs have fixed sizes.

ONNX shape inference (with data propagation) comes first. An export often computes a shape
at run time from another tensor's shape (``x.expand(batch, -1, -1)`` becomes Shape, Gather,
Equal, Where, Expand), which inference may leave open. Then a copy of the model goes through
onnxruntime's constant folding, which evaluates such shape arithmetic on the fixed input
sizes, and inference runs again on the folded copy: its tensors keep their names, so the
shapes found there fill the gaps. Weights stored as external data that was never written
become inputs of the copy, so folding needs none of their values.

What is still unknown after both is named, node and dimension, by :func:`tensors_of`'s
caller.

Examples
--------
>>> from perfmodel.capstone import builders
>>> found, unknown = tensors_of(builders.mlp(batch=2, widths=(3, 4)))
>>> found["fc0"].shape, unknown
((2, 4), {})
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfmodel.capstone.onnx_ops import Tensor

if TYPE_CHECKING:
    import onnx

__all__ = ["describe", "tensors_of"]


def describe(value: Any) -> str:
    """A value's shape as inference left it, each unknown dimension as ``?`` or its name.

    Parameters
    ----------
    value : onnx.ValueInfoProto
        A tensor's value info.

    Returns
    -------
    str
        ``"(1, ?, 768)"``, or ``"unknown rank"`` when inference found no shape at all.
    """
    kind = value.type.tensor_type
    if not kind.HasField("shape"):
        return "unknown rank"
    dims = [  # inference names the sizes it invents unk__0, unk__1...: those are unknown too
        str(d.dim_value)
        if d.HasField("dim_value")
        else ("?" if d.dim_param.startswith("unk__") else d.dim_param or "?")
        for d in kind.shape.dim
    ]
    return "(" + ", ".join(dims) + ("," if len(dims) == 1 else "") + ")"


def _inferred(model: Any) -> tuple[dict[str, Tensor], dict[str, str]]:
    """(fully known shapes, partial shapes described) after ONNX shape inference."""
    import onnx

    graph = onnx.shape_inference.infer_shapes(model, strict_mode=False, data_prop=True).graph
    found: dict[str, Tensor] = {}
    partial: dict[str, str] = {}
    for value in [*graph.input, *graph.value_info, *graph.output]:
        kind = value.type.tensor_type
        if kind.HasField("shape") and all(d.HasField("dim_value") for d in kind.shape.dim):
            found[value.name] = Tensor(tuple(d.dim_value for d in kind.shape.dim), kind.elem_type)
        else:
            partial[value.name] = describe(value)
    for tensor in graph.initializer:
        found[tensor.name] = Tensor(tuple(tensor.dims), tensor.data_type)
    for node in graph.node:  # Constant nodes' outputs, which inference may leave without shape
        if node.op_type == "Constant" and node.output[0] not in found:
            for attribute in node.attribute:
                if attribute.name == "value":
                    found[node.output[0]] = Tensor(tuple(attribute.t.dims), attribute.t.data_type)
    return found, partial


def _folded(model: Any) -> Any:
    """A copy of ``model`` after onnxruntime's constant folding (basic optimisations)."""
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper

    copy = onnx.ModelProto()
    copy.CopyFrom(model)
    unwritten = [t for t in copy.graph.initializer if t.data_location == TensorProto.EXTERNAL]
    for tensor in unwritten:  # never written: an input of the same shape instead
        copy.graph.initializer.remove(tensor)
        copy.graph.input.append(
            helper.make_tensor_value_info(tensor.name, tensor.data_type, list(tensor.dims))
        )
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
    options.log_severity_level = 3  # errors only
    with tempfile.TemporaryDirectory() as folder:
        options.optimized_model_filepath = str(Path(folder) / "folded.onnx")
        ort.InferenceSession(copy.SerializeToString(), options, providers=["CPUExecutionProvider"])
        return onnx.load(options.optimized_model_filepath, load_external_data=False)


def tensors_of(model: onnx.ModelProto) -> tuple[dict[str, Tensor], dict[str, str]]:
    """The shape and type of every tensor whose size can be known before the model runs.

    Parameters
    ----------
    model : onnx.ModelProto
        A model whose graph inputs all have fixed sizes.

    Returns
    -------
    found : dict of str to Tensor
        Every tensor with a fully known shape, by name: inputs, weights, Constant outputs and
        every intermediate that inference (or inference after constant folding) sized.
    unknown : dict of str to str
        Tensors still not fully sized, with their partial shapes described (``"(1, ?, 768)"``).
    """
    found, partial = _inferred(model)
    needed = {name for node in model.graph.node for name in [*node.input, *node.output] if name}
    if not needed - found.keys():
        return found, {}
    try:
        folded, _ = _inferred(_folded(model))
    except Exception:  # noqa: BLE001 - onnxruntime refuses the model: keep what inference found
        folded = {}
    for name, tensor in folded.items():
        found.setdefault(name, tensor)
    unknown = {name: partial.get(name, "unknown rank") for name in needed - found.keys()}
    return found, unknown
