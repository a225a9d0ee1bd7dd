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
from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Any

from perfmodel import hardware, ops
from perfmodel._validate import count, flag, non_negative, text
from perfmodel.capstone.onnx_import import OP_CLASSES, ImportedModel, Node
from perfmodel.hardware import DeviceLike
from perfmodel.roofline import Estimate, ceilings, estimate

__all__ = [
    "ClassChange",
    "DevicePrediction",
    "Upgrade",
    "node_costs",
    "predict_on",
    "retyped",
    "upgrade",
]

_FLOATS = ("fp64", "fp32", "tf32", "fp16", "bf16", "fp8")
#: Forward plus backward: the backward pass computes two products per forward one (the
#: gradient of the input and of the weight), so a training step costs three forwards.
TRAINING_FACTOR = 3


def retyped(cost: ops.Cost, dtype: str) -> ops.Cost:
    """``cost`` with its floating-point tensors stored as ``dtype``.

    The bytes scale by the width ratio (an fp32 export priced in bf16 moves half the
    bytes); FLOPs do not change. A cost whose dtype is not a floating-point one (an integer
    type, a width in bytes, or mixed) is returned as it is, and so is one already in
    ``dtype``.

    Parameters
    ----------
    cost : ops.Cost
        One node's FLOPs and bytes, at the dtype it was exported in.
    dtype : str
        The dtype to price it in, a catalogue dtype name such as ``"bf16"``.

    Returns
    -------
    ops.Cost
        The same FLOPs, the bytes read and written scaled to ``dtype``'s width, labelled
        ``dtype``.
    """
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


def node_costs(model: ImportedModel, dtype: str, *, times: int = 1) -> tuple[ops.Cost, ...]:
    """Every node's cost in ``model`` priced in ``dtype`` (:func:`retyped`), ``times`` over.

    The costs of the latest few models and settings are kept, so a device or a parallel
    plan tried on the same model does not retype its thousands of nodes again.

    Parameters
    ----------
    model : ImportedModel
        The model whose nodes are priced.
    dtype : str
        The dtype to price them in, a catalogue dtype name such as ``"bf16"``.
    times : int
        How many times each node's cost is counted: 3 for a training step
        (:data:`TRAINING_FACTOR`), 1 for a forward pass, count.

    Returns
    -------
    tuple of ops.Cost
        One cost per node, in the model's node order.
    """
    if not isinstance(model, ImportedModel):
        raise TypeError(f"`model` must be an ImportedModel (got {type(model).__name__}).")
    dtype, times = text("dtype", dtype), count("times", times)
    kept: tuple[ops.Cost, ...] | None = _COSTS.get((model,), (dtype, times))
    if kept is not None:
        return kept
    costs = tuple(retyped(n.cost, dtype) * times for n in model.nodes)
    _COSTS.keep((model,), (dtype, times), costs)
    return costs


@dataclass(frozen=True, slots=True)
class DevicePrediction:
    """A model's nodes on one device's roofline.

    Parameters
    ----------
    device : hardware.Device
        The device priced on.
    dtype : str
        The dtype the model was priced in.
    ceiling : str
        Which roofs were used, as :func:`perfmodel.roofline.ceilings` describes them
        (``"nameplate"``, ``"measured"``, ``"50% of nameplate"``, ...).
    training : bool
        Whether each node was priced as a training step (three forwards).
    overhead_s : float
        Time added per node before any work (a kernel launch), s.
    nodes : tuple of onnx_import.Node
        The model's nodes, in execution order.
    estimates : tuple of roofline.Estimate
        Each node's roofline estimate, in the same order.
    """

    device: hardware.Device
    dtype: str
    ceiling: str
    training: bool
    overhead_s: float
    nodes: tuple[Node, ...]
    estimates: tuple[Estimate, ...]

    @property
    def time_s(self) -> float:
        """Time of one pass (a training step when ``training``), node after node, s."""
        return math.fsum(e.time_s for e in self.estimates) + self.overhead_s * len(self.nodes)

    def by_class(self) -> dict[str, float]:
        """Time per op class, in :data:`~perfmodel.capstone.onnx_import.OP_CLASSES` order.

        Returns
        -------
        dict of str to float
            Op class to the time of its nodes, overhead included, s; classes that take no
            time are left out.
        """
        totals = {name: 0.0 for name in OP_CLASSES}
        for node, step in zip(self.nodes, self.estimates, strict=True):
            totals[node.op_class] += step.time_s + self.overhead_s
        return {name: seconds for name, seconds in totals.items() if seconds > 0}

    def bound_by_class(self) -> dict[str, str]:
        """Which roof most of each op class's time sits under.

        Returns
        -------
        dict of str to str
            Op class (those of :meth:`by_class`) to ``"compute"`` or ``"memory"``; a tie
            goes to ``"compute"``. The per-node overhead is not counted.
        """
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
        """Samples per second when one pass handles ``samples`` samples.

        Parameters
        ----------
        samples : int
            Samples one pass processes (the model's batch), count.

        Returns
        -------
        float
            ``samples`` over :attr:`time_s`: samples per s.

        Raises
        ------
        ValueError
            If the pass takes no time (a model of no nodes, or of nodes that do no FLOP and
            move no byte, with no per-node overhead): there is no rate to give.
        """
        samples = count("samples", samples)
        if not self.time_s:
            raise ValueError(
                f"`throughput` needs a pass that takes time, but this one takes no time on "
                f"{self.device.name} (its {len(self.nodes)} nodes do no FLOP and move no byte, "
                f"and overhead_s is {self.overhead_s:g})."
            )
        return samples / self.time_s

    @property
    def compute_share(self) -> float:
        """The share of the roofline time under the compute roof, fraction (no overhead)."""
        total = math.fsum(e.time_s for e in self.estimates)
        busy = math.fsum(e.time_s for e in self.estimates if e.bound == "compute")
        return busy / total if total else 0.0

    @property
    def bottleneck(self) -> str:
        """The op class with the most time, and its roof: ``"conv (compute)"``.

        Raises
        ------
        ValueError
            If no op class takes time (a model of no nodes, or of nodes that do no FLOP and
            move no byte, with no per-node overhead): nothing limits the pass.
        """
        times = self.by_class()
        if not times:
            raise ValueError(
                f"no op class takes time on {self.device.name} (the model's {len(self.nodes)} "
                f"nodes do no FLOP and move no byte): `bottleneck` has nothing to name."
            )
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
        The model, priced node by node.
    device : str or hardware.Device
        A catalogue name or a device you built.
    dtype : str
        The dtype the model runs in; an fp32 export's bytes are scaled to it (:func:`retyped`).
    ceiling : {"nameplate", "measured"} or float
        The datasheet's roofs, the best published measurements, or a fraction of the
        datasheet's (see :func:`perfmodel.roofline.ceilings`), fraction.
    training : bool
        Price a training step: three times each node's forward cost (FLOPs and bytes).
    overhead_s : float
        Time per node before any work (a kernel launch), s; 0 for the pure roofline.

    Returns
    -------
    DevicePrediction
        Every node's estimate on ``device``, with the settings it was priced under.
    """
    if not isinstance(model, ImportedModel):
        raise TypeError(f"`model` must be an ImportedModel (got {type(model).__name__}).")
    training = flag("training", training)
    overhead_s = non_negative("overhead_s", overhead_s)
    node = hardware.get(device, argument="device")
    dtype = text("dtype", dtype)
    # Kept only for settings of plain types, each tagged with its type: "0.7" is not 0.7
    # (one is refused, the other a fraction), nor is numpy's float32(0.7).
    plain = type(ceiling) in (str, float, int) and type(overhead_s) in (float, int)
    settings = (dtype, type(ceiling).__name__, ceiling, training, overhead_s)
    kept: DevicePrediction | None = _PREDICTIONS.get((model, node), settings) if plain else None
    if kept is not None:
        return kept
    costs = node_costs(model, dtype, times=TRAINING_FACTOR if training else 1)
    estimates = tuple(estimate(cost, node, dtype=dtype, ceiling=ceiling) for cost in costs)
    prediction = DevicePrediction(
        device=node,
        dtype=dtype,
        ceiling=estimates[0].ceiling if estimates else str(ceiling),
        training=training,
        overhead_s=overhead_s,
        nodes=model.nodes,
        estimates=estimates,
    )
    if plain:
        _PREDICTIONS.keep((model, node), settings, prediction)
    return prediction


#: How many of the latest predictions :func:`predict_on` keeps: an explorer prices the same
#: model on the same device again and again (for every device count, every network...).
PREDICTIONS_KEPT = 32


class _Latest:
    """The latest few results, by the identities of the immutable objects each was computed
    from (the model, the device) and its settings, the most recently used last.

    Each entry holds its objects, so no other object can take one's identity while it is
    kept.
    """

    def __init__(self, size: int) -> None:
        self.size = size
        self.entries: OrderedDict[tuple[object, ...], tuple[tuple[object, ...], Any]] = (
            OrderedDict()
        )

    def get(self, sources: tuple[object, ...], settings: tuple[object, ...]) -> Any:
        """The result kept for ``sources`` (by identity) and ``settings``, or None."""
        key = tuple(map(id, sources)) + settings
        kept = self.entries.get(key)
        if kept is None or any(a is not b for a, b in zip(kept[0], sources, strict=True)):
            return None
        self.entries.move_to_end(key)
        return kept[1]

    def keep(self, sources: tuple[object, ...], settings: tuple[object, ...], value: Any) -> None:
        """Keep ``value`` for ``sources`` and ``settings``; the oldest beyond :attr:`size` go."""
        self.entries[tuple(map(id, sources)) + settings] = (sources, value)
        if len(self.entries) > self.size:
            self.entries.popitem(last=False)


#: The latest predictions (:func:`predict_on`), by model, device and settings.
_PREDICTIONS = _Latest(PREDICTIONS_KEPT)
#: The latest models' node costs (:func:`node_costs`), by model, dtype and times.
_COSTS = _Latest(PREDICTIONS_KEPT)


@dataclass(frozen=True, slots=True)
class ClassChange:
    """One op class before and after an upgrade.

    Parameters
    ----------
    op_class : str
        One of :data:`~perfmodel.capstone.onnx_import.OP_CLASSES`.
    before_s : float
        The class's time on the old device, s.
    after_s : float
        Its time on the new device, s.
    bound : str
        ``"compute"`` or ``"memory"``: the roof it sits under on the old device.
    """

    op_class: str
    before_s: float
    after_s: float
    bound: str

    @property
    def speedup(self) -> float:
        """Old time over new, dimensionless; infinite when the new time is 0."""
        return self.before_s / self.after_s if self.after_s else math.inf


@dataclass(frozen=True, slots=True)
class Upgrade:
    """A model on an old device and a new one.

    Parameters
    ----------
    before : DevicePrediction
        The model on the old device.
    after : DevicePrediction
        The model on the new device.
    peak_ratio : float
        The new device's compute roof over the old one's, dimensionless.
    bandwidth_ratio : float
        The new device's memory bandwidth roof over the old one's, dimensionless.
    """

    before: DevicePrediction
    after: DevicePrediction
    peak_ratio: float
    bandwidth_ratio: float

    @property
    def speedup(self) -> float:
        """The whole model's old time over its new one, dimensionless."""
        return self.before.time_s / self.after.time_s

    def node_gains(self) -> dict[str, int]:
        """How many nodes gain the bandwidth ratio, the peak ratio, or something between.

        A node whose intensity lies between the two devices' ridge points is compute-bound
        on one device and memory-bound on the other, so its gain lies between the ratios.
        Nodes that take no time on the new device (a reshape of no bytes) are not counted.

        Returns
        -------
        dict of str to int
            ``"bandwidth"``, ``"peak"`` and ``"between"`` to their numbers of nodes, count.
        """
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
        """Each op class's time before and after, most time first.

        Returns
        -------
        list of ClassChange
            One per op class that takes time on the old device, sorted by old time,
            longest first.
        """
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
    """``model`` on ``old`` and on ``new``: the speed-up, in total and by op class.

    Parameters
    ----------
    model : ImportedModel
        The model, priced node by node.
    old : str or hardware.Device
        The device it runs on now: a catalogue name or a device you built.
    new : str or hardware.Device
        The device it would run on.
    dtype : str
        The dtype the model runs in on both (see :func:`predict_on`).
    ceiling : {"nameplate", "measured"} or float
        Which roofs, on both devices (see :func:`perfmodel.roofline.ceilings`); a number
        is a fraction of the datasheet's, fraction.
    training : bool
        Price a training step (three forwards) rather than one forward pass.

    Returns
    -------
    Upgrade
        Both predictions, with no per-node overhead, and the ratios of the two devices'
        roofs.
    """
    old, new = hardware.get(old, argument="old"), hardware.get(new, argument="new")
    before = predict_on(model, old, dtype=dtype, ceiling=ceiling, training=training)
    after = predict_on(model, new, dtype=dtype, ceiling=ceiling, training=training)
    old_peak, old_bw, _ = ceilings(old, dtype, ceiling)
    new_peak, new_bw, _ = ceilings(new, dtype, ceiling)
    return Upgrade(before, after, new_peak / old_peak, new_bw / old_bw)
