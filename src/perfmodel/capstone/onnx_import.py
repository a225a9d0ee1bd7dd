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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from perfmodel import ops
from perfmodel._validate import choice, count
from perfmodel.capstone.onnx_costs import im2col_bytes, price, reread_bytes
from perfmodel.capstone.onnx_ops import OP_CLASSES, SUPPORTED, NoRule, Tensor, kernel_kind
from perfmodel.capstone.onnx_shapes import tensors_of

if TYPE_CHECKING:
    import onnx

#: What the import reads: a model in memory, or the path of its ``.onnx`` file.
ModelLike: TypeAlias = "onnx.ModelProto | str | Path"

__all__ = [
    "OP_CLASSES",
    "ModelLike",
    "SUPPORTED",
    "ImportedModel",
    "Node",
    "UnsupportedOpWarning",
    "from_onnx",
    "import_onnx",
]


class UnsupportedOpWarning(UserWarning):
    """A model holds operators :mod:`perfmodel.capstone` has no cost rule for."""


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
    reread_bytes : int
        For a recurrent layer: its recurrent weights read again at every step after the
        first, each step waiting on the one before, B; 0 for any other node. Not part of
        ``cost``, which reads them once; :mod:`perfmodel.capstone.kernels` adds it.
    steps : int
        How many steps it runs one after another, count: a recurrent layer's time steps
        (each a small matmul that must wait for the one before), 1 for any other node.
    kind : str
        The kind of kernel a CPU engine runs for it, one of
        :data:`~perfmodel.capstone.onnx_ops.KERNEL_KINDS` (``"depthwise"``, ``"gemv"``...).
    images : int
        For a convolution, the images of its batch (its input's first dimension), count; 1
        for any other node. onnxruntime's convolution kernel takes them one at a time
        (outside the blocked layout, see ``blocked``).
    origin : tuple of str
        In an optimised graph, the exported nodes this one stands for (a fused node's
        several); empty for a graph imported as exported.
    blocked : bool
        It runs in onnxruntime's blocked channel layout (``com.microsoft.nchwc``), whose
        convolutions take a batch whole rather than one image at a time.
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
    reread_bytes: int = 0
    steps: int = 1
    kind: str = "elementwise"
    images: int = 1
    origin: tuple[str, ...] = ()
    blocked: bool = False


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
    initializer_elements : mapping of str to int
        Elements of each stored weight, by the name its nodes read it under, count
        (:func:`import_onnx` gives every initializer; empty when not given).
    optimization : str, optional
        The graph imported: ``"none"`` (as exported) or onnxruntime's optimised graph at
        ``"basic"`` or ``"all"``; kernel rates price only a graph of their own level.
    """

    name: str
    nodes: tuple[Node, ...]
    parameters: int
    parameter_bytes: int
    batch: int = 1
    initializer_elements: Mapping[str, int] = field(default_factory=dict, compare=False)
    optimization: str = "none"

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
    if shapes is not None and not isinstance(shapes, Mapping):
        raise TypeError(
            f"`shapes` must map input names to shapes, such as {{'input': (8, 3, 224, 224)}} "
            f"(got {type(shapes).__name__})."
        )
    given = {name: sizes.tolist() if hasattr(sizes, "tolist") else sizes  # a numpy array
             for name, sizes in dict(shapes or {}).items()}  # fmt: skip
    for name, sizes in given.items():
        if isinstance(sizes, (str, bytes)) or not isinstance(sizes, Sequence):
            raise TypeError(
                f"`shapes[{name!r}]` must be a sequence of sizes, such as (8, 3, 224, 224) "
                f"(got {type(sizes).__name__})."
            )
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
            # 0 is a size a caller may mean (an empty KV cache); a declared 0 is a placeholder
            shape = [count(f"shapes[{value.name!r}]", d, minimum=0) for d in given[value.name]]
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
        elif any(d.dim_value <= 0 for d in dims):
            raise ValueError(
                f"input {value.name!r} declares a size below 1 "
                f"({[d.dim_value for d in dims]}); pass shapes={{{value.name!r}: (...)}} with "
                f"the sizes to price."
            )
    if given:  # shapes saved with the model were inferred from the old input sizes
        del copy.graph.value_info[:]
        for value in copy.graph.output:
            value.type.tensor_type.ClearField("shape")
    return copy


def _images(node: Any, tensors: dict[str, Tensor]) -> int:
    """A convolution's batch (its input's first dimension); 1 for any other node."""
    if node.op_type not in ("Conv", "FusedConv", "QLinearConv", "ConvInteger") or not node.input:
        return 1
    shape = tensors[node.input[0]].shape
    return max(1, int(shape[0])) if shape else 1


def _downstream(model: Any, start: Callable[[Any], bool]) -> set[str]:
    """The tensors the nodes ``start`` picks write, and every tensor computed from one."""
    found: set[str] = set()
    for node in model.graph.node:  # ONNX stores nodes in execution order
        if start(node) or any(name in found for name in node.input):
            found.update(name for name in node.output if name)
    return found


def import_onnx(
    model: ModelLike,
    *,
    shapes: Mapping[str, Sequence[int]] | None = None,
    optimization: str = "none",
) -> ImportedModel:
    """Price every node of an ONNX model, in execution order.

    Parameters
    ----------
    model : onnx.ModelProto or str or pathlib.Path
        The model, or the path of its ``.onnx`` file. Weights stored as external data are
        not read: only their shapes matter.
    shapes : mapping of str to sequence of int, optional
        Sizes for inputs exported with dynamic axes, ``{"input": (8, 3, 224, 224)}``; a
        size may be 0 (an empty KV cache at a decoder's first step).
    optimization : {"none", "basic", "all"}, optional
        Which graph: the export as it is (``"none"``, each node as its own kernel), or the one
        onnxruntime's CPU session runs at that optimisation level (``"all"`` is a session's
        default: fused nodes, the blocked convolution layout), its fused and contrib operators
        priced as the nodes they stand for (:mod:`perfmodel.capstone.onnx_optimized`), each
        node's ``origin`` naming them.

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
    from perfmodel.capstone import onnx_optimized as fusion

    level = choice("optimization", optimization, ("none", "basic", "all"))
    proto = _fix_inputs(_load(model), shapes)
    origin: dict[str, tuple[str, ...]] = {}
    if level != "none":  # the graph onnxruntime runs, sized by running it once
        _, open_sizes = tensors_of(proto)
        if open_sizes:  # sizes that depend on values: as unknown as at "none"
            return import_onnx(proto, optimization="none")
        exported = proto
        try:
            proto = fusion.optimized(proto, level)
            ran = fusion.run_shapes(proto)
        except Exception as error:  # noqa: BLE001 - onnxruntime's own exception types
            reason = str(error).strip().splitlines()[0][:300]
            raise ValueError(
                f"onnxruntime could not optimise and run this model at optimization={level!r} "
                f"({type(error).__name__}: {reason}); import it as exported, "
                f"optimization='none'."
            ) from None
        origin = fusion.origins(exported, proto)
        tensors, unknown = ran, dict[str, str]()  # one run sized every tensor
    else:
        tensors, unknown = tensors_of(proto)
        # Contrib operators (an export onnxruntime's optimiser already fused) are outside
        # ONNX's shape inference: one run sizes what they write and what follows from it,
        # unless it also follows from a size that depends on values, which stays refused.
        after_contrib = _downstream(proto, lambda node: node.domain in fusion.FUSED_OPS)
        open_elsewhere = set(unknown) - after_contrib
        sized = after_contrib - _downstream(
            proto, lambda node: any(name in open_elsewhere for name in node.output)
        )
        if sized:
            ran = fusion.run_shapes(proto)
            tensors = {**{name: ran[name] for name in sized if name in ran}, **tensors}
            unknown = {name: said for name, said in unknown.items() if name not in sized}
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
            said = ", ".join(f"{t!r} {unknown.get(t, 'unknown rank')}" for t in missing[:3])
            raise ValueError(
                f"node {name!r} ({onnx_node.op_type}): the size of {said} is not known before "
                f"the model runs (ONNX shape inference and onnxruntime's constant folding both "
                f"left it open, ? marking each unknown dimension): it depends on the values of "
                f"a tensor computed at run time, so this node cannot be priced from shapes."
            )
        supported = True
        fused = onnx_node.op_type in fusion.FUSED_OPS.get(onnx_node.domain, ())
        try:
            if fused:
                cost, op_class, unit, steps = fusion.price_fused(onnx_node, tensors, weights)
            else:
                cost, op_class, unit, steps = price(onnx_node, tensors, weights)
        except NoRule:
            supported, op_class, unit, steps = False, "unsupported", "vector", 1
            skipped[onnx_node.op_type] += 1
            cost = ops.Cost(
                flops=0,
                bytes_read=sum(tensors[t].nbytes for t in onnx_node.input if t),
                bytes_written=sum(tensors[t].nbytes for t in onnx_node.output if t),
            )
        nodes.append(
            Node(
                im2col_bytes=im2col_bytes(onnx_node, tensors)
                if supported and onnx_node.domain != "com.microsoft.nchwc"
                else 0,  # the blocked layout's convolutions copy out no windows
                reread_bytes=reread_bytes(onnx_node, tensors) if supported else 0,
                steps=steps,
                kind=(fusion.fused_kind if fused else kernel_kind)(onnx_node, tensors),
                images=_images(onnx_node, tensors),
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
                origin=origin.get(name, ()),
                blocked=onnx_node.domain == "com.microsoft.nchwc",
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
        initializer_elements={t.name: tensors[t.name].elements for t in proto.graph.initializer},
        optimization=level,
    )


def from_onnx(
    model: ModelLike, *, shapes: Mapping[str, Sequence[int]] | None = None
) -> list[ops.Cost]:
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
