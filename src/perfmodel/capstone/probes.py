"""The probes: tiny one-operator ONNX models that time one kind of kernel each.

A probe is a chain of identical nodes (so the engine's own cost between nodes is in every
probe, as it is in a model) at one size of one kind of
:data:`~perfmodel.capstone.onnx_ops.KERNEL_KINDS`, in shapes common in vision, language and
recurrent models but none a zoo model's layer. Each kind gets a few sizes spanning two decades
of work at least. A chain's weights together stay within half the last-level cache, as a
small model's do run after run. Three more models time the engine itself: a reference chain of
matmuls (:func:`reference_model`), one node of one element (:func:`start_model`) and a chain of
one-element Adds (:func:`tiny_adds`).

Examples
--------
>>> [p.label for p in probes(["view"])]
['Reshape of 1,000 floats', 'Reshape of 1,000,000 floats']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from perfmodel.capstone.onnx_ops import KERNEL_KINDS

__all__ = ["UNCHANGED", "Probe", "last_level_cache", "probes", "reference_model", "start_model",
           "tiny_adds"]  # fmt: skip


@dataclass(frozen=True, slots=True)
class Probe:
    """One size of one kind: a chain of identical nodes, and the work of one of them.

    Parameters
    ----------
    kind : str
        One of :data:`~perfmodel.capstone.onnx_ops.KERNEL_KINDS`.
    label : str
        What it runs, ``"MatMul 256x256"``.
    model : onnx.ModelProto
        The chain, with its weights.
    nodes : int
        Nodes in the chain, count.
    work : float
        One node's work: FLOP for a compute kind, else B.
    steps : int
        Steps one node runs in turn (a recurrent probe's time steps), count.
    """

    kind: str
    label: str
    model: Any
    nodes: int
    work: float
    steps: int = 1


#: Kinds the optimiser leaves as they are in a model but collapses in a probe's chain of
#: identical nodes: probed with the optimisations off at every level.
UNCHANGED = ("movement", "reduction", "view")


def last_level_cache() -> float:
    """This machine's largest cache, which a probe chain's weights stay within half of.

    Returns
    -------
    float
        Its size, B; 0 when it cannot be read.
    """
    from perfmodel.measure.empirical import cpu_caches

    caches = cpu_caches()
    return float(caches[-1][1]) if caches else 0.0


def _chain(
    name: str,
    op: str,
    shape: Sequence[int],
    nodes: int,
    *,
    more: Sequence[str] = (),
    weights: Sequence[Any] = (),
    output_shape: Sequence[int] | None = None,
    constants: Sequence[Any] = (),
    domain: str = "",
    **attrs: Any,
) -> Any:
    """``nodes`` nodes of ``op`` (of ``domain``) in a chain, each reading the one before (the
    first reads x), then its own weight ``w{i}`` when ``weights`` are given (as a model's
    layers each have their own), then ``more``."""
    from onnx import TensorProto, helper

    chain = []
    for i in range(nodes):
        reads = ["x" if i == 0 else f"t{i - 1}", *([f"w{i}"] if weights else []), *more]
        chain.append(
            helper.make_node(op, reads, [f"t{i}"], name=f"n{i}", domain=domain or None, **attrs)
        )
    graph = helper.make_graph(
        chain,
        name,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [
            helper.make_tensor_value_info(
                f"t{nodes - 1}", TensorProto.FLOAT, list(output_shape or shape)
            )
        ],
        [*weights, *constants],
    )
    opsets = [helper.make_opsetid("", 17)] + ([helper.make_opsetid(domain, 1)] if domain else [])
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model


def _weight(name: str, shape: Sequence[int], seed: int = 0) -> Any:
    import numpy as np
    from onnx import numpy_helper

    scale = 1 / math.sqrt(max(1, math.prod(shape[1:])))
    rng = np.random.default_rng(seed)
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype("float32"), name)


def _float_bytes(shape: Sequence[int]) -> int:
    """Bytes of one fp32 weight of ``shape``, as :func:`_weight` writes it."""
    return 4 * math.prod(shape)


def _length(
    work: float, target: float = 2e-3, rate: float = 1e9, *, weight_bytes: float = 0.0
) -> int:
    """Nodes in a probe's chain: about ``target`` seconds at ``rate``, between 2 and 16, and
    no more than keep the chain's weights (``weight_bytes`` a node) within half the
    last-level cache, down to a single node: a model's weights that fit stay there run after
    run, and a chain whose weights spilled would time main memory instead and price every
    model that fits as if it did not (one-row matmul probes to 1536 wide, 19 MB of weights on
    a 16 MiB cache, put the MLP at 1.6x its time). A single node larger than half the cache
    still spills; a model that does not fit is priced by ``cold_weights`` in
    :meth:`~perfmodel.capstone.kernels.KernelRates.node_time`."""
    nodes = max(2, min(16, round(target * rate / max(work, 1.0))))
    room = last_level_cache() / 2
    if weight_bytes and room:
        nodes = max(1, min(nodes, int(room // weight_bytes)))
    return nodes


def probes(kinds: Iterable[str] = KERNEL_KINDS) -> list[Probe]:
    """The probes of each kind, smallest first.

    Parameters
    ----------
    kinds : iterable of str
        Kinds from :data:`~perfmodel.capstone.onnx_ops.KERNEL_KINDS`.

    Returns
    -------
    list of Probe
        A few sizes per kind, in shapes common in vision, language and recurrent models (none
        a zoo model's layer): matmuls from 16x16 to 768x768, one-row matmuls to 1440 wide,
        convolutions from 8 to 960 channels, tensors from a thousand to a few million
        elements.

    Raises
    ------
    TypeError
        If ``kinds`` is a string or not iterable.
    ValueError
        If a kind is not one of the kernel kinds (in any case), or none is named.
    """
    import numpy as np
    from onnx import numpy_helper

    if isinstance(kinds, str) or not isinstance(kinds, Iterable):
        raise TypeError(f"`kinds` must be a list of kernel kinds, such as ['gru'] (got {kinds!r}).")
    chosen = [k.lower() if isinstance(k, str) else k for k in kinds]
    unknown = [k for k in chosen if k not in KERNEL_KINDS]
    if unknown:
        raise ValueError(f"`kinds` must be among {KERNEL_KINDS} (got {unknown}).")
    if not chosen:
        raise ValueError("`kinds` must name at least one kernel kind (got none).")
    found: list[Probe] = []
    if "gemm" in chosen:
        for n in (16, 32, 64, 128, 256, 512, 768):
            k = _length(2 * n**3, rate=3e10, weight_bytes=_float_bytes((n, n)))
            w = [_weight(f"w{i}", (n, n), i) for i in range(k)]
            model = _chain("gemm", "MatMul", (n, n), k, weights=w)
            found.append(Probe("gemm", f"MatMul {n}x{n}x{n}", model, k, 2 * n**3))
    if "gemv" in chosen:
        # One row against a weight: the weights stream. A chain's weights together stay
        # within half the last-level cache (the largest, 8.3 MB, alone), as a small model's
        # do run after run; a model whose weights do not fit is priced by the memory floor
        # and cold_weights (see KernelRates.node_time). The largest is a classifier head's
        # size (ResNet-50's 2048 x 1000 is 4.1 MFLOP).
        for rows, n in ((1, 64), (1, 256), (1, 768), (1, 1152), (1, 1440)):
            k = _length(2 * rows * n * n, rate=5e9, weight_bytes=_float_bytes((n, n)))
            w = [_weight(f"w{i}", (n, n), i) for i in range(k)]
            model = _chain("gemv", "MatMul", (rows, n), k, weights=w)
            found.append(Probe("gemv", f"MatMul {rows}x{n}x{n}", model, k, 2 * rows * n * n))
    convs = {
        "conv": ((8, 32, 3), (16, 56, 3), (32, 56, 3), (64, 28, 3), (128, 14, 3), (64, 28, 5)),
        "conv 1x1": (
            (16, 56, 1),
            (64, 28, 1),
            (96, 56, 1),
            (256, 14, 1),
            (512, 7, 1),
            (96, 112, 1),
        ),
        "depthwise": (
            (16, 14, 3),
            (192, 112, 3),
            (32, 112, 3),
            (96, 56, 3),
            (144, 28, 3),
            (384, 14, 3),
            (960, 7, 3),
            (240, 14, 5),
            (96, 56, 7),
        ),
    }
    for kind in ("conv", "conv 1x1", "depthwise"):
        if kind not in chosen:
            continue
        for channels, side, window in convs[kind]:
            group = channels if kind == "depthwise" else 1
            flops = 2 * channels * (channels // group) * window * window * side * side
            shape = (channels, channels // group, window, window)
            k = _length(flops, rate=3e10 if group == 1 else 3e9, weight_bytes=_float_bytes(shape))
            w = [_weight(f"w{i}", shape, i) for i in range(k)]
            model = _chain(
                "conv",
                "Conv",
                (1, channels, side, side),
                k,
                weights=w,
                kernel_shape=[window, window],
                pads=[window // 2] * 4,
                group=group,
            )
            label = f"Conv {channels}ch {side}x{side} {window}x{window}"
            found.append(Probe(kind, label + " depthwise" * (group > 1), model, k, flops))
    if "grouped conv" in chosen:
        # A few channels per group (ResNeXt's 32 groups of 4 to 32, not RegNet's widths):
        # many small matmuls, slower per FLOP than one wide one.
        for channels, side, width in ((16, 14, 4), (32, 28, 4), (128, 28, 4), (384, 14, 8),
                                      (512, 7, 32), (96, 56, 8), (192, 28, 24)):  # fmt: skip
            flops = 2 * channels * width * 9 * side * side
            shape = (channels, width, 3, 3)
            k = _length(flops, rate=1e10, weight_bytes=_float_bytes(shape))
            w = [_weight(f"w{i}", shape, i) for i in range(k)]
            model = _chain("grouped", "Conv", (1, channels, side, side), k, weights=w,
                           kernel_shape=[3, 3], pads=[1] * 4, group=channels // width)  # fmt: skip
            label = f"Conv {channels}ch {side}x{side} 3x3 groups of {width}"
            found.append(Probe("grouped conv", label, model, k, flops))
    if "depthwise strided" in chosen:
        # Stride 2 halves each side: a quarter of the work, but the input is read whole. The
        # output cannot feed the next node, so the nodes fan out from x and one Sum joins them.
        for channels, side, window in ((8, 14, 3), (16, 28, 3), (96, 112, 3), (144, 56, 3),
                                       (240, 28, 5), (672, 14, 5)):  # fmt: skip
            flops = 2 * channels * window * window * (side // 2) ** 2
            k = _length(flops, rate=3e9)
            w = [_weight(f"w{i}", (channels, 1, window, window), i) for i in range(k)]
            model = _fan(
                "Conv", (1, channels, side, side), k, (1, channels, side // 2, side // 2),
                reads=lambda i: [f"w{i}"], initializers=w, group=channels,
                kernel_shape=[window, window], pads=[window // 2] * 4, strides=[2, 2],
            )  # fmt: skip
            label = f"Conv {channels}ch {side}x{side} {window}x{window} depthwise stride 2"
            found.append(Probe("depthwise strided", label, model, k, flops))
    for kind, op, (gates, cell) in (("recurrent", "LSTM", (4, 9)), ("gru", "GRU", (3, 8))):
        if kind not in chosen:
            continue
        steps = 10
        # The largest keeps two nodes' W and R (3.3 MB each for an LSTM) within the cache.
        for batch, hidden in ((1, 64), (1, 256), (4, 96), (8, 128), (16, 320)):
            per_step = batch * (2 * gates * hidden * 2 * hidden + cell * hidden)  # no bias
            gate_rows = (1, gates * hidden, hidden)  # W and R alike
            k = _length(per_step * steps, rate=5e9, weight_bytes=2 * _float_bytes(gate_rows))
            w = [_weight(f"w{i}", gate_rows, i) for i in range(k)]
            r = [_weight(f"r{i}", gate_rows, 100 + i) for i in range(k)]
            model = _recurrent_chain(op, batch, hidden, k, w, r, steps)
            label = f"{op} batch {batch} hidden {hidden}"
            found.append(Probe(kind, label, model, k, per_step, steps))
    for kind, op in (("elementwise", "Add"), ("transcendental", "Erf"), ("sigmoid", "Sigmoid")):
        if kind not in chosen:
            continue
        for n in (1_000, 10_000, 100_000, 1_000_000, 4_000_000):
            nbytes = 4 * n * (3 if op == "Add" else 2)
            k = _length(nbytes, rate=2e10)
            model = _chain(kind, op, (n,), k, more=["x"] if op == "Add" else ())
            found.append(Probe(kind, f"{op} of {n:,} floats", model, k, nbytes))
    if "broadcast" in chosen:
        # Batch norm (a scale and shift per channel) and a per-channel multiply: a second
        # operand read once per channel, not once per element.
        for channels, side in ((16, 14), (32, 56), (96, 56), (144, 28), (384, 14), (192, 112)):
            shape = (1, channels, side, side)
            elements = math.prod(shape)
            stats = [
                numpy_helper.from_array(np.full(channels, v, dtype=np.float32), name)
                for name, v in (("g", 1.0), ("b", 0.0), ("m", 0.0), ("v", 1.0))
            ]
            nbytes = 8 * elements + 16 * channels
            k = _length(nbytes, rate=2e10)
            model = _chain("bn", "BatchNormalization", shape, k, more=["g", "b", "m", "v"],
                           constants=stats)  # fmt: skip
            found.append(Probe("broadcast", f"BatchNormalization {channels}ch {side}x{side}",
                               model, k, nbytes))  # fmt: skip
            per_channel = numpy_helper.from_array(np.ones((1, channels, 1, 1), np.float32), "s")
            nbytes = 8 * elements + 4 * channels
            model = _chain("scale", "Mul", shape, k, more=["s"], constants=[per_channel])
            found.append(Probe("broadcast", f"Mul by a channel scale {channels}ch {side}x{side}",
                               model, k, nbytes))  # fmt: skip
    if "normalization" in chosen:
        for rows in (1, 16, 128, 512):
            nbytes = 8 * rows * 768 + 8 * 768  # x in, y out, and the scale and shift
            k = _length(nbytes, rate=1e10)
            scale = numpy_helper.from_array(np.ones(768, dtype=np.float32), "g")
            model = _chain(
                "norm", "LayerNormalization", (rows, 768), k, more=["g"], constants=[scale], axis=-1
            )
            found.append(Probe("normalization", f"LayerNormalization {rows}x768", model, k, nbytes))
        for rows in (12 * 16, 12 * 128):
            nbytes = 8 * rows * 128
            k = _length(nbytes, rate=1e10)
            model = _chain("softmax", "Softmax", (rows, 128), k, axis=-1)
            found.append(Probe("normalization", f"Softmax {rows}x128", model, k, nbytes))
    if "skip normalization" in chosen:
        # onnxruntime's fused residual add and layer norm (what an optimised transformer runs):
        # its own CPU kernel, several times slower than a layer norm on the same rows.
        for rows in (1, 16, 128, 512):
            nbytes = 4 * (3 * rows * 768 + 2 * 768)  # x and the skip in, y out; scale, shift
            k = _length(nbytes, rate=3e9)
            params = [numpy_helper.from_array(np.full(768, v, dtype=np.float32), name)
                      for name, v in (("g", 1.0), ("b", 0.0))]  # fmt: skip
            model = _chain("skipnorm", "SkipLayerNormalization", (1, rows, 768), k,
                           more=["x", "g", "b"], constants=params,
                           domain="com.microsoft")  # fmt: skip
            label = f"SkipLayerNormalization {rows}x768"
            found.append(Probe("skip normalization", label, model, k, nbytes))
    if "movement" in chosen:
        for tokens, heads in ((4, 2), (16, 4), (64, 8), (128, 12), (512, 12)):
            shape = (1, tokens, heads, 64)
            nbytes = 8 * math.prod(shape)
            k = _length(nbytes, rate=1e10)
            last = shape if k % 2 == 0 else (1, heads, tokens, 64)
            model = _chain("transpose", "Transpose", shape, k, perm=[0, 2, 1, 3], output_shape=last)
            found.append(Probe("movement", f"Transpose 1x{tokens}x{heads}x64", model, k, nbytes))
    if "reduction" in chosen:
        for channels, side in ((64, 7), (256, 14), (96, 56), (32, 112)):
            shape = (1, channels, side, side)
            nbytes = 4 * math.prod(shape) + 4 * channels
            k = _length(nbytes, rate=1e10)
            model = _fan("ReduceMean", shape, k, (1, channels, 1, 1), axes=[2, 3])
            found.append(
                Probe("reduction", f"ReduceMean {channels}ch {side}x{side}", model, k, nbytes)
            )
    if "view" in chosen:
        for n in (1_000, 1_000_000):
            k = _length(8 * n, rate=1e12)
            model = _chain(
                "view", "Reshape", (n,), k, more=["shape"], constants=[_int64("shape", [-1])]
            )
            found.append(Probe("view", f"Reshape of {n:,} floats", model, k, 8 * n))
    return found


def _recurrent_chain(
    op: str, batch: int, hidden: int, nodes: int, w: list[Any], r: list[Any], steps: int
) -> Any:
    """``op`` (LSTM or GRU) layers in a chain (time-major input), each squeezing its
    direction axis."""
    from onnx import TensorProto, helper

    chain = []
    source = "x"
    axes = _int64("axes", [1])
    for i in range(nodes):
        chain.append(
            helper.make_node(
                op, [source, f"w{i}", f"r{i}"], [f"y{i}"], name=f"n{i}", hidden_size=hidden
            )
        )
        chain.append(helper.make_node("Squeeze", [f"y{i}", "axes"], [f"t{i}"], name=f"s{i}"))
        source = f"t{i}"
    graph = helper.make_graph(
        chain,
        op.lower(),
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [steps, batch, hidden])],
        [helper.make_tensor_value_info(source, TensorProto.FLOAT, [steps, batch, hidden])],
        [*w, *r, axes],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _int64(name: str, values: Sequence[int]) -> Any:
    import numpy as np
    from onnx import numpy_helper

    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def _fan(
    op: str,
    shape: Sequence[int],
    nodes: int,
    out: Sequence[int],
    *,
    reads: Callable[[int], list[str]] | None = None,
    initializers: Sequence[Any] = (),
    **attrs: Any,
) -> Any:
    """``nodes`` nodes of ``op`` side by side, each reading x (then ``reads(i)``), whose
    outputs are summed by one Sum node: for operators whose output cannot feed the next."""
    from onnx import TensorProto, helper

    fan = [
        helper.make_node(op, ["x", *(reads(i) if reads else [])], [f"t{i}"], name=f"n{i}", **attrs)
        for i in range(nodes)
    ]
    fan.append(helper.make_node("Sum", [f"t{i}" for i in range(nodes)], ["y"], name="sum"))
    graph = helper.make_graph(
        fan,
        "fan",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, list(shape))],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, list(out))],
        list(initializers),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


# --- measuring ------------------------------------------------------------------------------------


def reference_model() -> Any:
    """The probe every calibration and every later check of it times: four 128x128 matmuls
    in a chain (about 17 MFLOP, a millisecond or less), compute-bound on both threads.

    Returns
    -------
    onnx.ModelProto
        The chain, with its weights.
    """
    return _chain("reference", "MatMul", (128, 128), 4,
                  weights=[_weight(f"w{i}", (128, 128), i) for i in range(4)])  # fmt: skip


def tiny_adds(nodes: int) -> Any:
    """A chain of one-element Adds: nothing but the engine's cost per node.

    Parameters
    ----------
    nodes : int
        Adds in the chain, count.

    Returns
    -------
    onnx.ModelProto
        The chain; its input ``x`` is one float.
    """
    return _chain("tiny", "Add", (1,), nodes, more=["x"])


def start_model() -> Any:
    """One node of one element: what a run costs before its first node's work.

    Returns
    -------
    onnx.ModelProto
        An Identity of one float.
    """
    from onnx import TensorProto, helper

    node = helper.make_node("Identity", ["x"], ["y"], name="only")
    graph = helper.make_graph(
        [node],
        "start",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model
