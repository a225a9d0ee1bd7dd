"""Predict every node of a model on this CPU, then measure it on onnxruntime.

The prediction is lecture 06's calibrated empirical roofline, read the way an inference
engine runs: each node costs ``overhead + max(F / P, B / W)`` where

* ``overhead`` is what onnxruntime spends per node before any work, measured on a chain of
  one-element Adds (:func:`~perfmodel.capstone.engine.engine_overhead`) and including the
  executor's time between kernels;
* ``P`` is the fp32 matmul rate this machine measured at the node's size (BLAS-like
  kernels reach their peak only on large matrices; lecture 06's sizes, extended down to
  16x16 here because a small model's matmuls are that small), for matmuls, convolutions and
  attention; for every other node the fp32 peak, which only a rare elementwise op reaches;
* ``W`` is the bandwidth of the memory level that holds the node's bytes (a cache when they
  fit, which they do when the node before just wrote them).

Unlike numpy, onnxruntime runs one vectorised kernel per node on every thread, so none of
lecture 06's numpy corrections (one-thread loops, a slow ``exp``, five passes per softmax)
applies. One engine effect is modelled: a convolution wider than 1x1 first copies its input
windows into a matrix (im2col), whose bytes are added to the node's.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from perfmodel._validate import flag
from perfmodel.capstone.engine import EngineProfile, engine_overhead, profile
from perfmodel.capstone.onnx_import import ImportedModel, Node, import_onnx
from perfmodel.measure.calibration import Calibration, calibrate
from perfmodel.measure.comparison import Comparison
from perfmodel.measure.empirical import MachineProfile, profile_machine, usable_cores

if TYPE_CHECKING:
    import onnx

__all__ = ["EngineModel", "NodeComparison", "calibrate_engine", "compare"]

#: Square fp32 matmuls measured below lecture 06's smallest (256): a small model's sizes.
SMALL_MATMULS = (16, 32, 64, 128)


@dataclass(frozen=True, slots=True)
class EngineModel:
    """This machine's empirical roofline as onnxruntime meets it (see the module notes).

    Parameters
    ----------
    calibration : perfmodel.measure.calibration.Calibration
        Lecture 06's calibration, its matrix rates in fp32.
    overhead_s : float
        Time onnxruntime spends per node before any work, s.
    disturbed : tuple of str
        The calibration's kernels measured while other programs held a quarter of the CPUs
        (busy): a busy machine slows them all alike, which their spreads cannot show. A noisy
        kernel alone (its samples disagree, common for sub-microsecond ones) is not counted.
    measured : int
        How many kernels the calibration measured, count.
    """

    calibration: Calibration
    overhead_s: float
    disturbed: tuple[str, ...] = ()
    measured: int = 0

    @property
    def unsure(self) -> bool:
        """True when more than a quarter of the calibration's kernels were measured on a busy
        machine: it slows them all alike, so every prediction built on them is unsure too."""
        return len(self.disturbed) > self.measured / 4

    def __post_init__(self) -> None:
        if not isinstance(self.calibration, Calibration):
            raise TypeError(
                f"`calibration` must be a calibration.Calibration "
                f"(got {type(self.calibration).__name__})."
            )

    def _terms(self, node: Node) -> tuple[float, float, str]:
        cost = node.cost
        moved = cost.bytes + node.im2col_bytes
        level, bandwidth = self.calibration.level(int(moved), "matrix")
        if node.unit == "matrix":  # a recurrent node: one small matmul per step, in turn
            rate = self.calibration.rate("matrix", cost.flops / node.steps)
        else:
            rate = self.calibration.device.measured_flops(self.calibration.dtype)
        return cost.flops / rate, moved / bandwidth, level

    def node_time(self, node: Node) -> float:
        """``overhead + max(F / P, B / W)`` for one node.

        Parameters
        ----------
        node : onnx_import.Node
            A node of an imported model; its im2col bytes count with its own.

        Returns
        -------
        float
            The node's predicted time on this machine, s.
        """
        compute, memory, _ = self._terms(node)
        return self.overhead_s + max(compute, memory)

    def bound(self, node: Node) -> str:
        """Which term of :meth:`node_time` is the largest.

        Parameters
        ----------
        node : onnx_import.Node
            A node of an imported model.

        Returns
        -------
        str
            ``"overhead"`` (when it is at least both roofs' times), else ``"compute"`` or
            ``"memory (<level>)"`` with the memory level that serves the node's bytes.
        """
        compute, memory, level = self._terms(node)
        if self.overhead_s >= max(compute, memory):
            return "overhead"
        return "compute" if compute >= memory else f"memory ({level})"

    def predict(self, model: ImportedModel) -> float:
        """The whole model's time, node after node.

        Parameters
        ----------
        model : ImportedModel
            The model, priced node by node.

        Returns
        -------
        float
            The sum of every node's :meth:`node_time`, s.
        """
        return math.fsum(self.node_time(node) for node in model.nodes)


def _busy(kernels: Any) -> tuple[str, ...]:
    """The names of ``kernels`` measured while other programs held the CPUs.

    Noise alone does not count: sub-microsecond kernels disagree with themselves on a quiet
    machine, and it is a busy one that slows every kernel alike.
    """
    return tuple(kernel.name for kernel in kernels if kernel.measurement.busy)


def calibrate_engine(
    machine: MachineProfile | None = None, *, quick: bool = True, progress: bool = True
) -> EngineModel:
    """Measure what :class:`EngineModel` needs on this machine.

    Lecture 06's profile (unless ``machine`` is given), fp32 matmuls down to 16x16, and
    onnxruntime's overhead per node. About 4 s in quick mode on 2 cores, all of it bounded
    by repetitions.

    Parameters
    ----------
    machine : perfmodel.measure.empirical.MachineProfile, optional
        A profile already taken with :func:`perfmodel.measure.empirical.profile_machine`;
        None measures one.
    quick : bool
        Measure the profile with fewer sizes and repetitions (when ``machine`` is None).
    progress : bool
        Show a progress bar while the profile is measured (when ``machine`` is None).

    Returns
    -------
    EngineModel
        The calibration with the small matmuls' rates added, the overhead per node, and
        which kernels were measured on a busy machine.
    """
    from perfmodel.measure import microbench

    quick = flag("quick", quick)
    if machine is None:
        machine = profile_machine(quick=quick, progress=progress)
    elif not isinstance(machine, MachineProfile):
        raise TypeError(
            f"`machine` must be a MachineProfile from empirical.profile_machine "
            f"(got {type(machine).__name__})."
        )
    calibration = calibrate(machine, dtype="fp32")
    cores = usable_cores()
    small = [
        microbench.matmul(n, dtype="fp32", threads=cores, repeats=3, min_time_s=0.02)
        for n in SMALL_MATMULS
    ]
    rates = {flops: rate for flops, rate in calibration.matrix_rates}
    for kernel in small:
        rates[kernel.cost.flops] = kernel.flops_per_s
    kernels = [*machine.kernels, *small]
    return EngineModel(
        calibration=replace(calibration, matrix_rates=tuple(sorted(rates.items()))),
        overhead_s=engine_overhead(),
        disturbed=_busy(kernels),
        measured=len(kernels),
    )


@dataclass(frozen=True, slots=True)
class NodeComparison:
    """One node: what was predicted, what onnxruntime measured, and why they may differ.

    Parameters
    ----------
    name : str
        The node's name.
    op_type : str
        Its ONNX operator.
    op_class : str
        Its op class, one of :data:`~perfmodel.capstone.onnx_import.OP_CLASSES`.
    predicted_s : float
        The engine model's time for it, s.
    measured_s : float
        onnxruntime's median kernel time for it, s.
    bound : str
        The largest term of the prediction (see :meth:`EngineModel.bound`).
    why : str
        A reason for the gap, or that there is none to speak of.
    """

    name: str
    op_type: str
    op_class: str
    predicted_s: float
    measured_s: float
    bound: str
    why: str

    @property
    def ratio(self) -> float:
        """Measured over predicted, dimensionless."""
        return self.measured_s / self.predicted_s

    @property
    def error(self) -> float:
        """Predicted over measured, less one, fraction: +0.2 is a 20% overestimate."""
        return self.predicted_s / self.measured_s - 1


def _why(node: Node, engine: EngineModel, measured_s: float, threads: int) -> str:
    """A reason for the gap, from what is known about the node and the engine."""
    predicted = engine.node_time(node)
    ratio = measured_s / predicted
    said = f"measured {ratio:.2f}x the prediction"
    if 0.8 <= ratio <= 1.25:
        return f"{said}: within ±25% of the prediction"
    bound = engine.bound(node)
    slower = ratio > 1
    if node.op_type == "Transpose" and slower:
        return f"{said}: a layout transpose reads with a stride, far below stream bandwidth"
    if node.op_type == "Conv" and slower:
        return (
            f"{said}: the im2col copy and a GEMM of this thin shape run below the rate "
            f"square matmuls of the same FLOPs reached"
        )
    if node.unit == "matrix":
        return (
            f"{said}: a {'slower' if slower else 'faster'} kernel than the square matmul of "
            f"the same FLOPs (shape, cache blocking, {threads} threads sharing small work)"
        )
    if bound == "overhead":
        return (
            f"{said}: too small for either roof; this op's own overhead differs from the tiny Add's"
        )
    if slower and (node.op_class == "softmax" or node.unit == "exp"):
        return f"{said}: exp and erf cost tens of instructions per element, priced as one FLOP"
    if not slower and bound.startswith("memory ("):
        return (
            f"{said}: run on {threads} threads from cache, where the calibration has one "
            f"core's bandwidth"
        )
    return f"{said}: {'below' if slower else 'above'} the {bound} roof"


def compare(
    model: onnx.ModelProto,
    engine: EngineModel,
    *,
    runs: int = 10,
    warmup: int = 2,
    fused: bool = True,
    measured: EngineProfile | None = None,
) -> Comparison[NodeComparison]:
    """Predict every node of ``model`` with ``engine``, then run it on onnxruntime.

    Parameters
    ----------
    model : onnx.ModelProto
        A model with its weights.
    engine : EngineModel
        From :func:`calibrate_engine`.
    runs, warmup : int
        onnxruntime runs measured, and dropped before them.
    fused : bool
        Also time the model with every graph optimisation on (``Comparison.fused_s``).
    measured : EngineProfile, optional
        A profile already taken (then nothing is run but the fused timing).

    Returns
    -------
    perfmodel.measure.comparison.Comparison
        One :class:`NodeComparison` per node that ran, the model timed end to end, and
        fused when ``fused``.
    """
    if not isinstance(engine, EngineModel):
        raise TypeError(
            f"`engine` must be an EngineModel from calibrate_engine (got {type(engine).__name__})."
        )
    imported = import_onnx(model)
    if measured is None:
        measured = profile(model, runs=runs, warmup=warmup)
    fused_s = (
        profile(model, runs=runs, warmup=warmup, optimization="all").total_s
        if flag("fused", fused)
        else None
    )
    rows = tuple(
        NodeComparison(
            name=node.name,
            op_type=node.op_type,
            op_class=node.op_class,
            predicted_s=engine.node_time(node),
            measured_s=measured.node_s[node.name],
            bound=engine.bound(node),
            why=_why(node, engine, measured.node_s[node.name], measured.threads),
        )
        for node in imported.nodes
        if node.name in measured.node_s  # Constant nodes become weights and never run
    )
    return Comparison(
        rows,
        engine.calibration,
        model=imported.name,
        end_to_end_s=measured.total_s,
        fused_s=fused_s,
        threads=measured.threads,
        noisy=measured.noisy,
    )
