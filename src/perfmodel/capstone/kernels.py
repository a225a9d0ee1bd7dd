"""How fast onnxruntime runs each kind of kernel on this CPU, measured kind by kind.

Lecture 06's roofline prices every node on one matmul curve and one bandwidth per memory
level. An engine does not run one kind of kernel: a depthwise convolution reads a window per
output and does a few multiply-adds on it, far below the dense matmul rate of the same FLOPs;
a thin matmul (one row) streams its weights; a transpose reads with a stride. So each kind in
:data:`~perfmodel.capstone.onnx_costs.KERNEL_KINDS` gets its own probes: small one-operator
ONNX models at a range of sizes, each a chain of identical nodes (so the engine's own cost
between nodes is in every probe, as it is in a model), timed end to end with the profiler off.

Measuring is interleaved: the rounds go over all probes in turn, so a passing disturbance
lands on many probes a little rather than on one probe a lot. In each round a probe gets a
session of its own, as a model runs alone: a few untimed runs (its weights into cache, its
threads awake), the timed runs, then the session closes, so that its threads do not spin on
into the next probe's cores (sessions left open made probes swing 2x). Each probe keeps the
median of all its runs, their spread, and the share of the CPUs other programs used meanwhile
(:class:`~perfmodel.measure.timing.Measurement`); a reference probe timed in every round lets
:func:`drift` tell later whether the machine still runs at the speed it was measured at.

A node's time is then read off its kind's curve at its work (FLOPs for the compute kinds,
bytes for the others), interpolated between probes on log-log axes and scaled in proportion
beyond them; a recurrent node is its steps in turn, each read at one step's FLOPs. A compute
node is never faster than streaming its bytes at the elementwise probes' rate for that many
bytes: the compute probes keep their tensors in cache, a model's large layers do not. On top
of the nodes, each run of the model pays a fixed start (binding inputs and outputs).

Examples
--------
>>> rates = measure_kernels(kinds=("elementwise",), rounds=1, runs=1, progress=False)
>>> curve = rates.curves["elementwise"]
>>> curve.unit, len(curve.points) > 2, rates.start_s > 0
('B', True, True)
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import platform
import statistics
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from perfmodel._validate import choice, count, flag, fraction, non_negative, positive
from perfmodel.capstone.engine import OPTIMIZATIONS
from perfmodel.capstone.onnx_costs import KERNEL_KINDS
from perfmodel.capstone.onnx_import import ImportedModel, Node

__all__ = [
    "COMPUTE_KINDS",
    "Curve",
    "KernelRates",
    "Probe",
    "cached_kernels",
    "drift",
    "fingerprint",
    "measure_kernels",
    "probes",
    "reference_model",
]

#: The version of the kept rates' file: a new one measures again.
FORMAT = 1
#: The kinds timed by their FLOPs; every other kind is timed by its bytes.
COMPUTE_KINDS = ("gemm", "gemv", "conv", "conv 1x1", "grouped conv", "depthwise",
                 "depthwise strided", "recurrent")  # fmt: skip
#: One-element Adds in the chain that measures the engine's cost per node, count.
TINY_NODES = 64
#: Untimed runs of each probe before its timed ones, in each round, count.
WARMUP = 3
#: A probe whose runs spread more than this around their median (interquartile range over
#: median) is noisy; a kind with mostly noisy probes is not trusted. On 2 shared cores a quiet
#: machine's probes spread 5-40%: onnxruntime's two threads meet the OS scheduler every run.
NOISY_SPREAD = 0.5


@dataclass(frozen=True, slots=True)
class Probe:
    """One size of one kind: a chain of identical nodes, and the work of one of them.

    Parameters
    ----------
    kind : str
        One of :data:`~perfmodel.capstone.onnx_costs.KERNEL_KINDS`.
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


@dataclass(frozen=True, slots=True)
class Curve:
    """One kind's measured time against work, and how far to trust it.

    Parameters
    ----------
    kind : str
        The kernel kind.
    unit : str
        What its work counts: ``"FLOP"`` or ``"B"``.
    points : tuple of (float, float)
        (work per node, seconds per node) for each probe, sorted by work: FLOP or B, and s.
    spreads : tuple of float
        Each probe's spread: its runs' interquartile range over their median, fraction.
    others : float
        Mean share of the CPUs other programs used while the kind was measured, fraction.
    """

    kind: str
    unit: str
    points: tuple[tuple[float, float], ...]
    spreads: tuple[float, ...] = ()
    others: float = 0.0

    def __post_init__(self) -> None:
        if not self.points:
            raise ValueError(f"`points` of the {self.kind!r} curve must hold a probe (got none).")
        works = [positive("points' work", w) for w, _ in self.points]
        for _, seconds in self.points:
            positive("points' time", seconds)
        if any(b <= a for a, b in zip(works, works[1:], strict=False)):
            raise ValueError(
                f"`points` of the {self.kind!r} curve must have strictly increasing work "
                f"(got {works})."
            )
        fraction("others", self.others, allow_zero=True)

    @property
    def noisy(self) -> bool:
        """True when most of the kind's probes spread more than :data:`NOISY_SPREAD`."""
        return sum(s > NOISY_SPREAD for s in self.spreads) > len(self.spreads) / 2

    def time(self, work: float) -> float:
        """Seconds one node of this kind takes at ``work``.

        Parameters
        ----------
        work : float
            Its FLOP (compute kinds) or B (the others), at least 0.

        Returns
        -------
        float
            Interpolated between the probes on log-log axes; below the smallest probe its
            time (a node never costs less than the smallest one measured), above the largest
            in proportion to the work, s.
        """
        work = non_negative("work", work)
        works = [w for w, _ in self.points]
        times = [t for _, t in self.points]
        if work <= works[0]:
            return times[0]
        if work >= works[-1]:
            return times[-1] * work / works[-1]
        for (w0, t0), (w1, t1) in zip(self.points, self.points[1:], strict=False):
            if w0 <= work <= w1:
                share = math.log(work / w0) / math.log(w1 / w0)
                return math.exp(math.log(t0) + share * math.log(t1 / t0))
        return times[-1]  # pragma: no cover - the loop covers every work in range

    def rate(self, work: float) -> float:
        """The rate the curve gives at ``work``.

        Parameters
        ----------
        work : float
            FLOP or B, positive.

        Returns
        -------
        float
            Work over time: FLOP/s for a compute kind, B/s for the others.
        """
        return work / self.time(work)


@dataclass(frozen=True, slots=True)
class KernelRates:
    """Every kind's curve, the engine's start per run, and where they were measured.

    Parameters
    ----------
    curves : dict of str to Curve
        Each measured kind's curve.
    start_s : float
        What one run of a model costs before its first node: a one-node model of one
        element, end to end, s.
    overhead_s : float
        What the engine spends on each node besides its work: one node of a chain of
        one-element Adds, s. Every probe's time includes it, so each node's prediction does.
    reference_s : float
        One run of the reference probe (:func:`reference_model`), measured in every round,
        s: :func:`drift` times it again later to tell whether the machine still runs at the
        speed the rates were measured at.
    cache_bytes : float
        This machine's last-level cache, B; 0 when unknown. A model whose weights do not fit
        in it reads them from main memory on every run (see :meth:`predict`).
    threads : int
        onnxruntime's intra-op threads while measuring, count.
    machine : str
        The fingerprint of the machine and software measured on (:func:`fingerprint`).
    others : float
        Share of the CPUs other programs used during the whole measurement (one reading
        around it all), fraction.
    optimization : str, optional
        onnxruntime's graph optimisation level the probes ran at (``"none"``, ``"basic"``
        or ``"all"``): the rates price a model imported at that level only.
    """

    curves: dict[str, Curve]
    start_s: float
    threads: int
    machine: str = ""
    others: float = 0.0
    overhead_s: float = 0.0
    reference_s: float = 0.0
    cache_bytes: float = 0.0
    optimization: str = "none"

    def __post_init__(self) -> None:
        positive("start_s", self.start_s)
        non_negative("overhead_s", self.overhead_s)
        non_negative("reference_s", self.reference_s)
        non_negative("cache_bytes", self.cache_bytes)
        fraction("others", self.others, allow_zero=True)  # NaN is no share: refused
        count("threads", self.threads)
        object.__setattr__(
            self, "optimization", choice("optimization", self.optimization, OPTIMIZATIONS)
        )

    @property
    def noisy_kinds(self) -> tuple[str, ...]:
        """The kinds whose probes were too spread to trust."""
        return tuple(kind for kind, curve in self.curves.items() if curve.noisy)

    @property
    def busy(self) -> bool:
        """True when other programs used more than a quarter of the CPUs while measuring."""
        from perfmodel.measure.timing import BUSY_OTHERS

        return self.others > BUSY_OTHERS

    @property
    def trusted(self) -> bool:
        """True unless other programs used more than a quarter of the CPUs while measuring:
        a busy machine slows every probe alike, which no spread can show."""
        return not self.busy

    def warning(self) -> str:
        """What casts doubt on these rates, said plainly; empty when nothing does.

        Returns
        -------
        str
            ``"UNTRUSTED CALIBRATION: ..."`` naming the load when the machine was busy, and a
            note naming each kind whose probes varied by more than :data:`NOISY_SPREAD` from
            run to run (predictions leaning on them carry that spread), or ``""``.
        """
        said = []
        if self.busy:
            said.append(
                f"UNTRUSTED CALIBRATION: other programs used {self.others:.0%} of the CPUs "
                f"while it measured, which slows every probe alike; every prediction built on "
                f"it is unsure. Measure again on a quiet machine."
            )
        if self.noisy_kinds:
            said.append(
                f"Its {', '.join(self.noisy_kinds)} probes varied by more than "
                f"{NOISY_SPREAD:.0%} of their median from run to run: predictions that lean on "
                f"them carry that spread."
            )
        return " ".join(said)

    def _work(self, node: Node) -> float:
        return node.cost.flops if node.kind in COMPUTE_KINDS else node.cost.bytes

    def node_time(self, node: Node, *, cold_weights: bool = False) -> float:
        """Seconds one node takes: its kind's curve at its work (per step, for its steps;
        per image, for its images, for a kind of :data:`BY_IMAGE`),
        and for a compute kind never less than streaming its bytes.

        The compute probes keep their tensors in cache; a model's layers at a large batch do
        not. So a matmul or convolution also gets the time the elementwise probes took to
        stream as many bytes (a roofline's memory roof, measured on the engine), and the
        larger of the two counts.

        A model whose weights outgrow the last-level cache reads them from main memory on
        every run (``cold_weights``): its weight bytes then stream at the largest
        elementwise probe's rate, which is beyond the cache, not at the in-cache rate a
        node of that size alone would get.

        Parameters
        ----------
        node : perfmodel.capstone.onnx_import.Node
            A node of an imported model.
        cold_weights : bool
            Its weights come from main memory, not from the cache.

        Returns
        -------
        float
            The node's predicted time, s.

        Raises
        ------
        ValueError
            If the node's kind was not measured.
        """
        curve = self.curves.get(node.kind)
        if curve is None:
            raise ValueError(
                f"no {node.kind!r} kernels were measured (measured: {', '.join(self.curves)})."
            )
        turns = _turns(node)
        compute = turns * curve.time(self._work(node) / turns)
        stream = self.curves.get("elementwise")
        if node.kind not in COMPUTE_KINDS or stream is None:
            return compute
        moved = node.cost.bytes + node.im2col_bytes
        if not cold_weights or not node.weights:
            return max(compute, turns * stream.time(moved / turns))
        weight_bytes = min(moved, node.weights * _element_bytes(node))
        largest, largest_s = stream.points[-1]
        from_memory = weight_bytes * largest_s / largest
        warm = moved - weight_bytes
        return max(compute, (turns * stream.time(warm / turns) if warm else 0.0) + from_memory)

    def used(self, node: Node) -> str:
        """Which rate priced a node, as a reader would say it.

        Parameters
        ----------
        node : perfmodel.capstone.onnx_import.Node
            A node of an imported model.

        Returns
        -------
        str
            ``"depthwise at 3.1 GFLOP/s"`` or ``"movement at 4.2 GB/s"``.
        """
        work = self._work(node) / _turns(node)
        rate = work / self.curves[node.kind].time(work) if work else 0.0
        unit = "GFLOP/s" if node.kind in COMPUTE_KINDS else "GB/s"
        return f"{node.kind} at {rate / 1e9:.3g} {unit}"

    def predict(self, model: ImportedModel) -> float:
        """A whole run of ``model``: the start, then every node in turn.

        Parameters
        ----------
        model : perfmodel.capstone.onnx_import.ImportedModel
            The model, priced node by node.

        Returns
        -------
        float
            :attr:`start_s` plus every node's :meth:`node_time`, s.
        """
        self._same_level(model)
        cold = self.cold_weights(model)
        return self.start_s + math.fsum(
            self.node_time(node, cold_weights=cold) for node in _runs(model)
        )

    def _same_level(self, model: ImportedModel) -> None:
        level = getattr(model, "optimization", "none")
        if level != self.optimization:
            raise ValueError(
                f"these rates were measured at optimization={self.optimization!r} and the model"
                f" was imported at {level!r}: import it at the rates' level, or measure rates "
                f"at its own (cached_kernels(optimization={level!r}))."
            )

    def cold_weights(self, model: ImportedModel) -> bool:
        """True when ``model``'s weights outgrow this machine's last-level cache, so every
        run reads them from main memory.

        Parameters
        ----------
        model : perfmodel.capstone.onnx_import.ImportedModel
            The model.

        Returns
        -------
        bool
            Its weight bytes exceed :attr:`cache_bytes` (False when the cache is unknown).
        """
        if not self.cache_bytes:
            return False
        held = math.fsum(node.weights * _element_bytes(node) for node in model.nodes)
        return held > self.cache_bytes

    def by_kind(self, model: ImportedModel) -> dict[str, float]:
        """Where a run's predicted time goes: the engine's overhead, then each kind's work.

        Parameters
        ----------
        model : perfmodel.capstone.onnx_import.ImportedModel
            The model, priced node by node.

        Returns
        -------
        dict of str to float
            ``"overhead"`` (the start plus each node's :attr:`overhead_s`, never more than
            the node's whole time) and each kind present to the rest of its nodes' time, s;
            they add up to :meth:`predict`.
        """
        self._same_level(model)
        found = {"overhead": self.start_s}
        cold = self.cold_weights(model)
        for node in _runs(model):
            total = self.node_time(node, cold_weights=cold)
            overhead = min(total, self.overhead_s * _turns(node))
            found["overhead"] += overhead
            found[node.kind] = found.get(node.kind, 0.0) + total - overhead
        return found

    def to_json(self) -> str:
        """The rates as JSON, for :func:`cached_kernels`.

        Returns
        -------
        str
            Every field, curves included.
        """
        return json.dumps(asdict(self), indent=1)

    @classmethod
    def from_json(cls, text: str) -> KernelRates:
        """Rates written by :meth:`to_json`.

        Parameters
        ----------
        text : str
            The JSON.

        Returns
        -------
        KernelRates
            The same rates.
        """
        raw = json.loads(text)
        curves = {
            kind: Curve(
                kind=c["kind"],
                unit=c["unit"],
                points=tuple((float(w), float(t)) for w, t in c["points"]),
                spreads=tuple(c["spreads"]),
                others=c["others"],
            )
            for kind, c in raw["curves"].items()
        }
        return cls(
            curves,
            raw["start_s"],
            raw["threads"],
            raw["machine"],
            raw["others"],
            raw.get("overhead_s", 0.0),
            raw.get("reference_s", 0.0),
            raw["cache_bytes"],  # a file without it predates the cold-weights rule: re-measure
            raw.get("optimization", "none"),
        )


#: Kinds the optimiser leaves as they are in a model but collapses in a probe's chain of
#: identical nodes: probed with the optimisations off at every level.
UNCHANGED = ("movement", "reduction", "view")

#: Kinds whose CPU kernel takes a batch one image at a time: a node of ``N`` images costs
#: ``N`` times one image at a ``1/N`` of its work, as the probes (one image each) measured it.
#: onnxruntime's depthwise and grouped convolutions always do; its other convolutions do
#: outside the blocked layout (:data:`UNBLOCKED_BY_IMAGE`: ``Conv``'s kernel loops over the
#: images, an im2col and a GEMM each), while the blocked layout's kernel spreads the whole
#: batch over its threads.
BY_IMAGE = ("depthwise", "depthwise strided", "grouped conv")
UNBLOCKED_BY_IMAGE = ("conv", "conv 1x1")


def _element_bytes(node: Node) -> int:
    """Bytes of one element of the node's weights: its cost's dtype, fp32 by default."""
    from perfmodel.hardware import dtype_bytes

    try:
        return dtype_bytes(node.cost.dtype or "fp32")
    except (TypeError, ValueError):  # a dtype the catalogue does not name: count 4 B
        return 4


def _last_level_cache() -> float:
    """This machine's largest cache, B; 0 when it cannot be read."""
    from perfmodel.measure.empirical import cpu_caches

    caches = cpu_caches()
    return float(caches[-1][1]) if caches else 0.0


def _turns(node: Node) -> int:
    """How many times a node runs its kernel in turn: its steps, and its images for a kind
    of :data:`BY_IMAGE` (or of :data:`UNBLOCKED_BY_IMAGE` outside the blocked layout)."""
    by_image = node.kind in BY_IMAGE or (node.kind in UNBLOCKED_BY_IMAGE and not node.blocked)
    return node.steps * (node.images if by_image else 1)


def _runs(model: ImportedModel) -> list[Node]:
    """The nodes onnxruntime runs: Constant nodes become weights before the first run."""
    return [node for node in model.nodes if node.op_type != "Constant"]


# --- the probes -----------------------------------------------------------------------------------


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
    still spills; a model that does not fit is priced by :meth:`KernelRates.node_time`'s
    ``cold_weights``."""
    nodes = max(2, min(16, round(target * rate / max(work, 1.0))))
    room = _last_level_cache() / 2
    if weight_bytes and room:
        nodes = max(1, min(nodes, int(room // weight_bytes)))
    return nodes


def probes(kinds: Iterable[str] = KERNEL_KINDS) -> list[Probe]:
    """The probes of each kind, smallest first.

    Parameters
    ----------
    kinds : iterable of str
        Kinds from :data:`~perfmodel.capstone.onnx_costs.KERNEL_KINDS`.

    Returns
    -------
    list of Probe
        A few sizes per kind, in shapes common in vision, language and recurrent models (none
        a zoo model's layer): matmuls from 16x16 to 768x768, one-row matmuls to 1440 wide,
        convolutions from 8 to 960 channels, tensors from a thousand to a few million
        elements.

    Raises
    ------
    ValueError
        If a kind is not one of the kernel kinds.
    """
    import numpy as np
    from onnx import numpy_helper

    chosen = list(kinds)
    unknown = [k for k in chosen if k not in KERNEL_KINDS]
    if unknown:
        raise ValueError(f"`kinds` must be among {KERNEL_KINDS} (got {unknown}).")
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
    if "recurrent" in chosen:
        steps = 10
        # The largest keeps two nodes' W and R (3.3 MB each) within the cache.
        for batch, hidden in ((1, 64), (1, 256), (4, 96), (8, 128), (16, 320)):
            per_step = batch * (2 * 4 * hidden * 2 * hidden + 9 * hidden)  # no bias input
            gates = (1, 4 * hidden, hidden)  # W and R alike
            k = _length(per_step * steps, rate=5e9, weight_bytes=2 * _float_bytes(gates))
            w = [_weight(f"w{i}", gates, i) for i in range(k)]
            r = [_weight(f"r{i}", gates, 100 + i) for i in range(k)]
            model = _recurrent_chain(batch, hidden, k, w, r, steps)
            label = f"LSTM batch {batch} hidden {hidden}"
            found.append(Probe("recurrent", label, model, k, per_step, steps))
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
    batch: int, hidden: int, nodes: int, w: list[Any], r: list[Any], steps: int
) -> Any:
    """LSTM layers in a chain (time-major input), each squeezing its direction axis."""
    from onnx import TensorProto, helper

    chain = []
    source = "x"
    axes = _int64("axes", [1])
    for i in range(nodes):
        chain.append(
            helper.make_node(
                "LSTM", [source, f"w{i}", f"r{i}"], [f"y{i}"], name=f"n{i}", hidden_size=hidden
            )
        )
        chain.append(helper.make_node("Squeeze", [f"y{i}", "axes"], [f"t{i}"], name=f"s{i}"))
        source = f"t{i}"
    graph = helper.make_graph(
        chain,
        "lstm",
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


def drift(rates: KernelRates, *, runs: int = 10) -> float:
    """How much slower the machine runs now than when ``rates`` were measured.

    Parameters
    ----------
    rates : KernelRates
        Rates with a :attr:`~KernelRates.reference_s`.
    runs : int
        Timed runs of the reference probe now, count.

    Returns
    -------
    float
        The reference probe's time now over its time then, dimensionless: 1.0 is the same
        speed, 1.5 is a machine half again as slow (another program, a slower clock), when
        every prediction built on the rates runs that much too fast.

    Raises
    ------
    ValueError
        If ``rates`` hold no reference time.
    """
    import numpy as np

    from perfmodel.capstone.engine import session
    from perfmodel.measure.timing import measure

    if not isinstance(rates, KernelRates):
        raise TypeError(f"`rates` must be KernelRates (got {type(rates).__name__}).")
    if rates.reference_s <= 0:
        raise ValueError("`rates` hold no reference time: measure them with measure_kernels.")
    ready = session(reference_model(), threads=rates.threads, optimization=rates.optimization)
    feed = {"x": np.ones((128, 128), dtype=np.float32)}
    taken = measure(lambda: ready.run(None, feed), warmup=WARMUP, repeats=count("runs", runs),
                    max_repeats=runs, min_time_s=0, min_sample_s=1e-9, max_inner=1)  # fmt: skip
    return taken.median_s / rates.reference_s


def _tiny_adds(nodes: int) -> Any:
    """A chain of one-element Adds: nothing but the engine's cost per node."""
    return _chain("tiny", "Add", (1,), nodes, more=["x"])


def _start_model() -> Any:
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


def measure_kernels(
    *,
    kinds: Iterable[str] = KERNEL_KINDS,
    rounds: int = 3,
    runs: int = 5,
    threads: int | None = None,
    progress: bool = True,
    optimization: str = "none",
) -> KernelRates:
    """Time every probe of ``kinds`` on onnxruntime, in interleaved rounds.

    Parameters
    ----------
    kinds : iterable of str
        The kinds to measure (default: all of them).
    rounds : int
        Rounds over all probes, count; each probe's spread is over its rounds.
    runs : int
        Runs of each probe per round (after one warm-up run per probe), count.
    threads : int, optional
        onnxruntime's intra-op threads (default: every core this process may use).
    progress : bool
        Show a progress bar over the rounds.
    optimization : {"none", "basic", "all"}
        onnxruntime's graph optimisation level for every probe's session. At ``"all"`` a
        chain of convolutions runs in the blocked layout, with a reorder at each end, as a
        model's do at that level: the rates price a graph imported at the same level.

    Returns
    -------
    KernelRates
        Each kind's curve (probe by probe: the median of all its runs, less the start, per
        node), the start per run, and the CPUs' load meanwhile.
    """
    import numpy as np

    from perfmodel.capstone.engine import random_inputs, session
    from perfmodel.measure.empirical import usable_cores
    from perfmodel.measure.timing import OthersWatch, measure

    rounds, runs = count("rounds", rounds), count("runs", runs)
    level = choice("optimization", optimization, OPTIMIZATIONS)
    threads = usable_cores() if threads is None else count("threads", threads)
    progress = flag("progress", progress)
    chosen = probes(kinds)
    feeds = [random_inputs(p.model) for p in chosen]
    one = {"x": np.zeros(1, dtype=np.float32)}

    def timed(model: Any, feed: dict[str, Any], at: str = "none") -> Any:
        # A session of its own, as a model runs alone: warmed up (its weights in cache, its
        # threads awake), timed, then closed, so that its threads do not spin on into the
        # next probe's cores.
        ready = [session(model, threads=threads, optimization=at)]
        taken = measure(lambda: ready[0].run(None, feed), warmup=WARMUP, repeats=runs,
                        max_repeats=runs, min_time_s=0, min_sample_s=1e-9, max_inner=1)  # fmt: skip
        ready.clear()  # the session, and its threads, end here
        return taken

    samples: list[list[float]] = [[] for _ in chosen]
    others: list[list[float]] = [[] for _ in chosen]
    starts: list[float] = []
    tiny: list[float] = []
    tiny_model = _tiny_adds(TINY_NODES)
    reference: list[float] = []
    reference_feed = {"x": np.ones((128, 128), dtype=np.float32)}
    reference_chain = reference_model()
    loop: Iterable[int] = range(rounds)
    if progress:
        from tqdm.auto import tqdm

        loop = tqdm(loop, desc="kernel probes", unit="round")
    with OthersWatch() as watch:  # one reading over the whole calibration
        for _ in loop:
            starts += timed(_start_model(), one).samples_s
            tiny += timed(tiny_model, one).samples_s
            reference += timed(reference_chain, reference_feed).samples_s
            for i, (probe, feed) in enumerate(zip(chosen, feeds, strict=True)):
                # a chain of transposes, reductions or reshapes collapses to one node under
                # the optimiser, while a model's own still run: those kinds are probed as is
                taken = timed(probe.model, feed, "none" if probe.kind in UNCHANGED else level)
                samples[i] += taken.samples_s
                if taken.others is not None:
                    others[i].append(taken.others)
    start_s = statistics.median(starts)
    overhead_s = max(statistics.median(tiny) - start_s, 0.0) / TINY_NODES
    curves: dict[str, Curve] = {}
    for kind in dict.fromkeys(p.kind for p in chosen):
        mine = [i for i, p in enumerate(chosen) if p.kind == kind]
        points, spreads, loads = [], [], []
        for i in mine:
            probe = chosen[i]
            per_node = max(statistics.median(samples[i]) - start_s, 1e-9) / probe.nodes
            points.append((probe.work, per_node / probe.steps))
            middle = statistics.median(samples[i])
            q = statistics.quantiles(samples[i], n=4) if len(samples[i]) > 1 else [middle] * 3
            spreads.append((q[2] - q[0]) / middle if middle > 0 else 0.0)
            loads += others[i]
        ordered = sorted(zip(points, spreads, strict=True))
        curves[kind] = Curve(
            kind=kind,
            unit="FLOP" if kind in COMPUTE_KINDS else "B",
            points=_monotone(tuple(p for p, _ in ordered)),
            spreads=tuple(s for _, s in ordered),
            others=statistics.fmean(loads) if loads else 0.0,
        )
    every = [x for row in others for x in row]
    overall = watch.others if watch.others is not None else (
        statistics.fmean(every) if every else 0.0)  # fmt: skip
    return KernelRates(
        curves=curves,
        start_s=start_s,
        threads=threads,
        machine=fingerprint(threads),
        others=overall,
        overhead_s=overhead_s,
        reference_s=statistics.median(reference),
        cache_bytes=_last_level_cache(),
        optimization=level,
    )


def _monotone(points: tuple[tuple[float, float], ...]) -> tuple[tuple[float, float], ...]:
    """Merge probes of the same work (mean time), so the curve's work strictly increases."""
    merged: dict[float, list[float]] = {}
    for work, seconds in points:
        merged.setdefault(work, []).append(seconds)
    return tuple((work, statistics.fmean(times)) for work, times in sorted(merged.items()))


# --- one calibration per machine ------------------------------------------------------------------


def fingerprint(threads: int | None = None) -> str:
    """What the rates depend on, hashed: the CPU, its cores, the threads and the software.

    Parameters
    ----------
    threads : int, optional
        onnxruntime's intra-op threads (default: every core this process may use).

    Returns
    -------
    str
        16 hexadecimal digits; the same on the same machine and software.
    """
    import numpy as np
    import onnxruntime as ort

    from perfmodel.measure.empirical import usable_cores

    threads = usable_cores() if threads is None else count("threads", threads)
    cpuinfo = Path("/proc/cpuinfo")
    names = [
        line.split(":", 1)[1].strip()
        for line in (cpuinfo.read_text().splitlines() if cpuinfo.exists() else [])
        if line.startswith("model name")
    ]
    parts = [
        names[0] if names else platform.processor(),
        str(os.cpu_count()),
        str(usable_cores()),
        str(threads),
        platform.machine(),
        f"onnxruntime {ort.__version__}",
        f"numpy {np.__version__}",
        f"rates format {FORMAT}",
        # new probes, or a probe run at another level: measure again
        *(f"{p.kind} {p.label} {p.nodes} {p.kind in UNCHANGED}" for p in probes()),
    ]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()[:16]


def _cache_folder() -> Path:
    explicit = os.environ.get("PERFMODEL_CACHE_DIR")
    base = (
        Path(explicit)
        if explicit
        else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "perfmodel"
    )
    return base / "kernels"


def cached_kernels(
    *,
    threads: int | None = None,
    refresh: bool = False,
    progress: bool = True,
    optimization: str = "none",
) -> KernelRates:
    """This machine's kernel rates: measured once, kept, and replaced only by better ones.

    The rates are kept per :func:`fingerprint` in ``$PERFMODEL_CACHE_DIR/kernels`` (else the
    user cache). A measurement is better than another when it is trusted and the other is
    not, or, both alike, when other programs used less of the CPUs during it.

    Parameters
    ----------
    threads : int, optional
        onnxruntime's intra-op threads (default: every core this process may use).
    refresh : bool
        Measure again even when rates are kept; the kept ones stay unless the new ones are
        better (a warning says so).
    progress : bool
        Show a progress bar while measuring.
    optimization : {"none", "basic", "all"}
        onnxruntime's graph optimisation level the probes run at (kept apart per level).

    Returns
    -------
    KernelRates
        The kept rates, or fresh ones (kept for next time).

    Warns
    -----
    UserWarning
        When a fresh measurement is worse than the kept one and is set aside.
    """
    refresh = flag("refresh", refresh)
    level = choice("optimization", optimization, OPTIMIZATIONS)
    key = fingerprint(threads) + ("" if level == "none" else f"-{level}")
    path = _cache_folder() / f"{key}.json"
    kept = _read_kept(path)
    if kept is not None and not refresh:
        return kept
    fresh = measure_kernels(threads=threads, progress=progress, optimization=level)
    if kept is not None and _rank(kept) <= _rank(fresh):
        warnings.warn(
            f"the new kernel measurement ({fresh.warning() or 'trusted'}; others used "
            f"{fresh.others:.0%} of the CPUs) is no better than the kept one ({kept.others:.0%}):"
            f" keeping {path}.",
            stacklevel=2,
        )
        return kept
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}")
        partial.write_text(fresh.to_json())
        partial.replace(path)
    except OSError as error:
        warnings.warn(f"could not keep the kernel rates in {path} ({error}).", stacklevel=2)
    return fresh


def _read_kept(path: Path) -> KernelRates | None:
    """The rates kept at ``path``, or None (and a warning) when the file is not rates this
    version wrote or measures: they are measured again."""
    if not path.exists():
        return None
    try:
        kept = KernelRates.from_json(path.read_text())
    except (OSError, ValueError, KeyError, TypeError) as error:
        warnings.warn(f"{path} holds no kernel rates this version reads ({error!r}): "
                      f"measuring again.", stacklevel=3)  # fmt: skip
        return None
    missing = set(KERNEL_KINDS) - set(kept.curves)
    if missing:
        warnings.warn(f"{path} lacks the {sorted(missing)} kernels: measuring again.", stacklevel=3)
        return None
    return kept


def _rank(rates: KernelRates) -> tuple[bool, int, float]:
    """Lower is better: an untrusted measurement after any trusted one, then the one with
    fewer noisy kinds, then the one taken with less load."""
    return (not rates.trusted, len(rates.noisy_kinds), rates.others)
