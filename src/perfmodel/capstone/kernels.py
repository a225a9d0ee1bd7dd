"""How fast onnxruntime runs each kind of kernel on this CPU: a curve per kind, and a node's
time read off it.

Lecture 06's roofline prices every node on one matmul curve and one bandwidth per memory
level. An engine does not run one kind of kernel: a depthwise convolution reads a window per
output and does a few multiply-adds on it, far below the dense matmul rate of the same FLOPs;
a thin matmul (one row) streams its weights; a transpose reads with a stride. So each kind in
:data:`~perfmodel.capstone.onnx_ops.KERNEL_KINDS` gets its own :class:`Curve`, measured with
one-operator probes (:mod:`perfmodel.capstone.probes`, timed by
:func:`~perfmodel.capstone.calibrate.measure_kernels`).

A node's time is read off its kind's curve at its work (FLOPs for the compute kinds,
bytes for the others), interpolated between probes on log-log axes and scaled in proportion
beyond them; a recurrent node is its steps in turn, each read at one step's FLOPs, and a
convolution whose kernel takes a batch one image at a time is its images in turn. A compute
node is never faster than streaming its bytes at the elementwise probes' rate for that many
bytes: the compute probes keep their tensors in cache, a model's large layers do not. On top
of the nodes, each run of the model pays a fixed start (binding inputs and outputs).

Examples
--------
>>> curve = Curve("elementwise", "B", ((1e3, 1e-6), (1e6, 1e-4)))
>>> round(curve.time(1e6), 6), round(curve.time(2e6), 6)
(0.0001, 0.0002)
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass

from perfmodel._validate import choice, count, fraction, non_negative, positive
from perfmodel.capstone.engine import OPTIMIZATIONS
from perfmodel.capstone.onnx_import import ImportedModel, Node
from perfmodel.capstone.onnx_ops import GEMV_ROWS

__all__ = ["BY_IMAGE", "COMPUTE_KINDS", "NOISY_SPREAD", "UNBLOCKED_BY_IMAGE", "Curve",
           "KernelRates"]  # fmt: skip

#: The kinds timed by their FLOPs; every other kind is timed by its bytes.
COMPUTE_KINDS = ("gemm", "gemv", "conv", "conv 1x1", "grouped conv", "depthwise",
                 "depthwise strided", "recurrent", "gru")  # fmt: skip


#: A probe whose runs spread more than this around their median (interquartile range over
#: median) is noisy; a kind with mostly noisy probes is not trusted. On 2 shared cores a quiet
#: machine's probes spread 5-40%: onnxruntime's two threads meet the OS scheduler every run.
NOISY_SPREAD = 0.5


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
        One run of the reference probe (:func:`~perfmodel.capstone.probes.reference_model`),
        measured in every round, s: :func:`~perfmodel.capstone.calibrate.drift` times it
        again later to tell whether the machine still runs at the speed the rates were
        measured at.
    cache_bytes : float
        This machine's last-level cache, B; 0 when unknown. A model whose weights do not fit
        in it reads them from main memory on every run (see :meth:`predict`).
    threads : int
        onnxruntime's intra-op threads while measuring, count.
    machine : str
        The fingerprint of the machine and software measured on
        (:func:`~perfmodel.capstone.calibrate.fingerprint`).
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
        object.__setattr__(self, "threads", count("threads", self.threads))
        if not isinstance(self.curves, dict) or not all(
            isinstance(curve, Curve) and curve.kind == kind for kind, curve in self.curves.items()
        ):
            raise TypeError("`curves` must be a dict of each kind's Curve, keyed by its kind.")
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
                f"The calibration's {', '.join(self.noisy_kinds)} probes varied by more than "
                f"{NOISY_SPREAD:.0%} of their median from run to run: predictions that lean on "
                f"them carry that spread."
            )
        return " ".join(said)

    def _work(self, node: Node) -> float:
        if node.kind == "gemv":  # probed with one row; a few rows share each weight streamed
            return node.cost.flops / _rows(node)
        return node.cost.flops if node.kind in COMPUTE_KINDS else node.cost.bytes

    def node_time(self, node: Node, *, cold_weights: bool = False) -> float:
        """Seconds one node takes: its kind's curve at its work (per step, for its steps;
        per image, for its images, for a kind of :data:`BY_IMAGE`),
        and for a compute kind never less than streaming its bytes.

        The compute probes keep their tensors in cache; a model's layers at a large batch do
        not. So a matmul or convolution also gets the time the elementwise probes took to
        stream as many bytes (a roofline's memory roof, measured on the engine), and the
        larger of the two counts. A recurrent layer streams its recurrent weights once a step
        (``reread_bytes``): at batch 1 that, not its FLOPs, sets each step's time. A matmul of
        two to four rows (``gemv``) streams its weights once for all its rows, so it is read
        off the one-row probes at one row's FLOPs.

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
        TypeError
            If ``node`` is not a :class:`~perfmodel.capstone.onnx_import.Node`.
        ValueError
            If the node's kind was not measured.
        """
        if not isinstance(node, Node):
            raise TypeError(
                f"`node` must be a Node of an ImportedModel (got {type(node).__name__})."
            )
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
        moved = _moved(node)
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
            ``"depthwise at 3.1 GFLOP/s"`` or ``"movement at 4.2 GB/s"``; for a compute node
            whose bytes take longer to stream than its FLOPs to compute, ``"the memory floor
            at 12.3 GB/s (not recurrent at 125 GFLOP/s)"``.
        """
        turns = _turns(node)
        work = self._work(node) / turns
        rate = work / self.curves[node.kind].time(work) if work else 0.0
        unit = "GFLOP/s" if node.kind in COMPUTE_KINDS else "GB/s"
        said = f"{node.kind} at {rate / 1e9:.3g} {unit}"
        total = self.node_time(node)
        if (
            node.kind in COMPUTE_KINDS
            and total > turns * self.curves[node.kind].time(work) * 1.000001
        ):
            moved = _moved(node)
            return f"the memory floor at {moved / total / 1e9:.3g} GB/s (not {said})"
        return said

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
        _imported(model)
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
        _imported(model)
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
        """The rates as JSON, for :func:`~perfmodel.capstone.calibrate.cached_kernels`.

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


def _moved(node: Node) -> float:
    """Bytes a node streams: its one-pass bytes, an im2col copy, recurrent weights re-read."""
    return node.cost.bytes + node.im2col_bytes + node.reread_bytes


def _rows(node: Node) -> int:
    """A one-to-four-row matmul's rows: two FLOPs per weight per row (1 without weights)."""
    if not node.weights:
        return 1
    return max(1, min(GEMV_ROWS, round(node.cost.flops / (2 * node.weights))))


def _imported(model: object) -> None:
    if not isinstance(model, ImportedModel):
        raise TypeError(
            f"`model` must be an ImportedModel from import_onnx (got {type(model).__name__})."
        )


def _turns(node: Node) -> int:
    """How many times a node runs its kernel in turn: its steps, and its images for a kind
    of :data:`BY_IMAGE` (or of :data:`UNBLOCKED_BY_IMAGE` outside the blocked layout)."""
    by_image = node.kind in BY_IMAGE or (node.kind in UNBLOCKED_BY_IMAGE and not node.blocked)
    return node.steps * (node.images if by_image else 1)


def _runs(model: ImportedModel) -> list[Node]:
    """The nodes onnxruntime runs: Constant nodes become weights before the first run."""
    return [node for node in model.nodes if node.op_type != "Constant"]
