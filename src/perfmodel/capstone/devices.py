"""Will it run faster on new hardware? A model priced on catalogue devices, by op class.

Every node goes on the device's roofline (:func:`perfmodel.roofline.estimate`), with the
datasheet's ceilings or the best published measurements. Grouping the nodes by op class
shows where an upgrade helps: a memory-bound class gains the bandwidth ratio, a
compute-bound one the peak ratio, and the whole model gains the time-weighted harmonic mix
of the two, which is why a device with three times the FLOP/s can make a model only 1.4
times faster.

Examples
--------
>>> from perfmodel.capstone import builders, import_onnx
>>> model = import_onnx(builders.gpt2(batch=1, seq_len=128, weights=False))
>>> change = upgrade(model, "A100 SXM4 80GB", "H100 SXM")
>>> round(change.peak_ratio, 2), round(change.bandwidth_ratio, 2)
(3.17, 1.64)
>>> 1.64 <= round(change.speedup, 2) <= 3.17
True
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from perfmodel import hardware, ops
from perfmodel._validate import count, flag, non_negative, text
from perfmodel.capstone.onnx_import import OP_CLASSES, ImportedModel, Node
from perfmodel.hardware import DeviceLike
from perfmodel.roofline import Estimate, ceilings, estimate

__all__ = ["ClassChange", "DevicePrediction", "Upgrade", "predict_on", "retyped", "upgrade"]

_FLOATS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8")
#: Forward plus backward: the backward pass computes two products per forward one (the
#: gradient of the input and of the weight), so a training step costs three forwards.
TRAINING_FACTOR = 3


def retyped(cost: ops.Cost, dtype: str) -> ops.Cost:
    """``cost`` with its floating-point tensors stored as ``dtype``: the bytes scale by the
    width ratio (an fp32 export priced in bf16 moves half the bytes); FLOPs do not change."""
    dtype = text("dtype", dtype)
    if cost.dtype not in _FLOATS or cost.dtype == dtype:
        return cost
    scale = hardware.dtype_bytes(dtype) / hardware.dtype_bytes(cost.dtype)
    return replace(
        cost,
        bytes_read=cost.bytes_read * scale,
        bytes_written=cost.bytes_written * scale,
        dtype=dtype,
    )


@dataclass(frozen=True, slots=True)
class DevicePrediction:
    """A model's nodes on one device's roofline."""

    device: hardware.Device
    dtype: str
    ceiling: str
    training: bool
    overhead_s: float
    nodes: tuple[Node, ...]
    estimates: tuple[Estimate, ...]

    @property
    def time_s(self) -> float:
        """Seconds for one pass (a training step when ``training``), node after node."""
        return math.fsum(e.time_s for e in self.estimates) + self.overhead_s * len(self.nodes)

    def by_class(self) -> dict[str, float]:
        """Seconds per op class, in :data:`~perfmodel.capstone.onnx_import.OP_CLASSES` order."""
        totals = {name: 0.0 for name in OP_CLASSES}
        for node, step in zip(self.nodes, self.estimates, strict=True):
            totals[node.op_class] += step.time_s + self.overhead_s
        return {name: seconds for name, seconds in totals.items() if seconds > 0}

    def bound_by_class(self) -> dict[str, str]:
        """``"compute"`` or ``"memory"``: which roof most of each class's time sits under."""
        compute: dict[str, float] = {}
        memory: dict[str, float] = {}
        for node, step in zip(self.nodes, self.estimates, strict=True):
            side = compute if step.bound == "compute" else memory
            side[node.op_class] = side.get(node.op_class, 0.0) + step.time_s
        return {
            name: "compute" if compute.get(name, 0.0) >= memory.get(name, 0.0) else "memory"
            for name in self.by_class()
        }

    def throughput(self, samples: int) -> float:
        """Samples per second when one pass handles ``samples`` samples."""
        return count("samples", samples) / self.time_s

    @property
    def compute_share(self) -> float:
        """The share of the time under the compute roof."""
        total = math.fsum(e.time_s for e in self.estimates)
        busy = math.fsum(e.time_s for e in self.estimates if e.bound == "compute")
        return busy / total if total else 0.0

    @property
    def bottleneck(self) -> str:
        """The op class with the most time, and its roof: ``"conv (compute)"``."""
        times = self.by_class()
        worst = max(times, key=times.__getitem__)
        return f"{worst} ({self.bound_by_class()[worst]})"


def predict_on(
    model: ImportedModel,
    device: DeviceLike,
    *,
    dtype: str = "bf16",
    ceiling: str | float = "nameplate",
    training: bool = False,
    overhead_s: float = 0.0,
) -> DevicePrediction:
    """Price every node of ``model`` on ``device``'s roofline.

    Parameters
    ----------
    model : ImportedModel
    device : str or hardware.Device
    dtype : str
        The dtype the model runs in; an fp32 export's bytes are scaled to it (:func:`retyped`).
    ceiling : {"nameplate", "measured"} or float
        The datasheet's roofs, the best published measurements, or a fraction of the
        datasheet's (see :func:`perfmodel.roofline.ceilings`).
    training : bool
        Price a training step: three times each node's forward cost.
    overhead_s : float
        Seconds per node before any work (a kernel launch); 0 for the pure roofline.
    """
    if not isinstance(model, ImportedModel):
        raise TypeError(f"`model` must be an ImportedModel (got {type(model).__name__}).")
    training = flag("training", training)
    overhead_s = non_negative("overhead_s", overhead_s)
    node = hardware.get(device, argument="device")
    factor = TRAINING_FACTOR if training else 1
    estimates = tuple(
        estimate(retyped(n.cost, dtype) * factor, node, dtype=dtype, ceiling=ceiling)
        for n in model.nodes
    )
    return DevicePrediction(
        device=node,
        dtype=dtype,
        ceiling=estimates[0].ceiling if estimates else str(ceiling),
        training=training,
        overhead_s=overhead_s,
        nodes=model.nodes,
        estimates=estimates,
    )


@dataclass(frozen=True, slots=True)
class ClassChange:
    """One op class before and after an upgrade."""

    op_class: str
    before_s: float
    after_s: float
    bound: str

    @property
    def speedup(self) -> float:
        return self.before_s / self.after_s if self.after_s else math.inf


@dataclass(frozen=True, slots=True)
class Upgrade:
    """A model on an old device and a new one."""

    before: DevicePrediction
    after: DevicePrediction
    peak_ratio: float
    bandwidth_ratio: float

    @property
    def speedup(self) -> float:
        return self.before.time_s / self.after.time_s

    def node_gains(self) -> dict[str, int]:
        """How many nodes gain the ``"bandwidth"`` ratio, the ``"peak"`` ratio, or something
        ``"between"`` them: a node whose intensity lies between the two devices' ridge points
        is compute-bound on the old device and memory-bound on the new one. Nodes that cost
        nothing (a reshape of no bytes) are not counted."""
        gains = {"bandwidth": 0, "peak": 0, "between": 0}
        for old, new in zip(self.before.estimates, self.after.estimates, strict=True):
            if not new.time_s:
                continue
            gain = old.time_s / new.time_s
            if math.isclose(gain, self.bandwidth_ratio, rel_tol=1e-9):
                gains["bandwidth"] += 1
            elif math.isclose(gain, self.peak_ratio, rel_tol=1e-9):
                gains["peak"] += 1
            else:
                gains["between"] += 1
        return gains

    def by_class(self) -> list[ClassChange]:
        """Each op class's time before and after, most time first."""
        before, after = self.before.by_class(), self.after.by_class()
        bounds = self.before.bound_by_class()
        rows = [
            ClassChange(name, before[name], after.get(name, 0.0), bounds[name]) for name in before
        ]
        return sorted(rows, key=lambda row: -row.before_s)


def upgrade(
    model: ImportedModel,
    old: DeviceLike,
    new: DeviceLike,
    *,
    dtype: str = "bf16",
    ceiling: str | float = "nameplate",
    training: bool = False,
) -> Upgrade:
    """``model`` on ``old`` and on ``new``: the speed-up, in total and by op class."""
    old, new = hardware.get(old, argument="old"), hardware.get(new, argument="new")
    before = predict_on(model, old, dtype=dtype, ceiling=ceiling, training=training)
    after = predict_on(model, new, dtype=dtype, ceiling=ceiling, training=training)
    old_peak, old_bw, _ = ceilings(old, dtype, ceiling)
    new_peak, new_bw, _ = ceilings(new, dtype, ceiling)
    return Upgrade(before, after, new_peak / old_peak, new_bw / old_bw)
