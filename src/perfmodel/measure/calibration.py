"""Predict, then measure: a roofline calibrated on this machine, against real numpy ops.

Lecture 04's roofline prices an operation as one pass: ``max(F / P, B / W)`` with one peak
``P`` and one bandwidth ``W``. Real code on a real machine differs in four ways, and a
:class:`Calibration` models each with a number measured by :mod:`perfmodel.measure.microbench`:

* **overhead**: every numpy call costs about a microsecond before it touches a byte
  (Python, argument parsing, dispatch, allocation), a matmul more. Fitted as the
  intercept of a straight line through the times of tiny adds, and of tiny matmuls
  (:func:`fit_overhead`).
* **several units**: BLAS matmuls reach the matmul peak (large ones do: the rate measured
  at each size is kept); numpy's elementwise loops run on one thread, one operation per
  pass, far below it (the flat roof of the Empirical Roofline Toolkit's sweep), and slower
  still when an operand is broadcast along rows; ``exp`` costs tens of instructions per
  element.
* **several passes**: numpy runs a softmax as five calls, each a pass over memory, where a
  fused kernel (and ``ops.softmax``) would make one.
* **caches**: an operation whose data fits a cache is served at that cache's bandwidth,
  not main memory's.

So an operation is priced as numpy runs it, a list of :class:`Call`, each
``overhead + max(F / P_unit, B / W_level)``. :func:`held_out_ops` builds a sweep of real
operations whose measurements the calibration never saw (matvec, matmuls, softmax, layer
norm, a convolution, an elementwise chain unfused and fused, a tiny add), and
:func:`predict_vs_measure` times them next to both predictions.

Examples
--------
>>> from perfmodel import ops
>>> from perfmodel.hardware import Device
>>> machine = Device(name="toy", kind="cpu", peak_flops_by_dtype={"fp64": 1e11},
...                  memory_bandwidth=1e10, measured_flops_by_dtype={"fp64": 5e10},
...                  measured_memory_bandwidth=1e10, measured_source="a toy",
...                  memory_levels={"L2": 1e11, "DRAM": 1e10}, source="a toy")
>>> calibration = Calibration(machine, overhead_s=1e-6, blas_overhead_s=2e-6,
...                           vector_flops=2e9, exp_rate=1e8, caches=(("L2", 1_000_000),))
>>> add = Call(ops.elementwise(1000, inputs=2, dtype="fp64"), "vector", footprint=24_000)
>>> calibration.level(add.footprint)   # 24 kB fits the 1 MB cache
('L2', 100000000000.0)
>>> round(calibration.call_time(add) * 1e6, 2)   # 1 us overhead + 24 kB at 100 GB/s
1.5
"""

from __future__ import annotations

import functools
import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from perfmodel import ops
from perfmodel._validate import choice, count, flag, non_negative, number, positive, text
from perfmodel.hardware import Device
from perfmodel.measure.empirical import MachineProfile, cpu_caches, usable_cores
from perfmodel.measure.microbench import KernelResult
from perfmodel.measure.timing import Measurement, measure
from perfmodel.roofline import estimate

__all__ = [
    "UNITS",
    "Calibration",
    "Call",
    "Case",
    "Compared",
    "Comparison",
    "Row",
    "calibrate",
    "fit_overhead",
    "held_out_ops",
    "predict_vs_measure",
]

#: What runs a call: ``"matrix"`` (BLAS, at the matmul peak), ``"vector"`` (a numpy
#: elementwise loop or reduction), ``"broadcast"`` (an elementwise loop with an operand
#: broadcast along rows) and ``"exp"`` (a transcendental function).
UNITS = ("matrix", "vector", "broadcast", "exp")


@dataclass(frozen=True, slots=True)
class Call:
    """One numpy call: its cost, the unit that runs it, and the bytes it keeps touching.

    Parameters
    ----------
    cost : ops.Cost
        The FLOPs and bytes of the call.
    unit : str
        What runs it, one of :data:`UNITS`.
    footprint : int
        The bytes the operation reads and writes again and again, B (0 or more): it
        decides which memory level serves the call, a cache when it fits.
    """

    cost: ops.Cost
    unit: str = "vector"
    footprint: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.cost, ops.Cost):
            raise TypeError(f"`cost` must be an ops.Cost (got {type(self.cost).__name__}).")
        object.__setattr__(self, "unit", choice("unit", self.unit, UNITS))
        object.__setattr__(self, "footprint", count("footprint", self.footprint, minimum=0))


@dataclass(frozen=True, slots=True)
class Calibration:
    """This machine's roofline with the four corrections the module notes describe.

    Parameters
    ----------
    device : hardware.Device
        Measured ceilings: the matmul peak (``measured_flops``, which must exist for
        ``dtype``), main memory (``measured_memory_bandwidth``) and each cache
        (``memory_levels``).
    overhead_s : float
        What a numpy elementwise call costs before any work, s (non-negative).
    blas_overhead_s : float
        The same for a matmul (``unit="matrix"``): more checks, and a call into BLAS, s.
    vector_flops : float
        The rate of numpy's elementwise loops on data in cache, FLOP/s (positive).
    exp_rate : float
        ``exp`` evaluations per second, FLOP/s (one "FLOP" per evaluation; positive).
    caches : sequence of (str, int)
        Each cache level's name and capacity, B, fastest first; a name missing from the
        device's ``memory_levels`` is skipped.
    dtype : str
        The dtype the matmul peak is read for.
    matrix_rates : sequence of (float, float), optional
        ``(FLOPs, FLOP/s)`` of matmuls measured at several sizes, FLOP and FLOP/s. BLAS
        reaches its peak only on large matrices (threads to start, panels to pack, edges to
        finish), so a matrix call is priced at the rate interpolated, in log FLOPs, between
        the two measured sizes nearest its own, and at the nearest one's rate beyond them.
        Empty: the device's measured peak for every size.
    broadcast_flops : float, optional
        The rate of an elementwise loop with a broadcast operand, FLOP/s (default:
        ``vector_flops``).
    """

    device: Device
    overhead_s: float
    blas_overhead_s: float
    vector_flops: float
    exp_rate: float
    caches: tuple[tuple[str, int], ...]
    dtype: str = "fp64"
    matrix_rates: tuple[tuple[float, float], ...] = ()
    broadcast_flops: float | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.device, Device):
            raise TypeError(
                f"`device` must be a hardware.Device (got {type(self.device).__name__})."
            )
        non_negative("overhead_s", self.overhead_s)
        non_negative("blas_overhead_s", self.blas_overhead_s)
        positive("vector_flops", self.vector_flops)
        positive("exp_rate", self.exp_rate)
        if self.broadcast_flops is not None:
            positive("broadcast_flops", self.broadcast_flops)
        object.__setattr__(
            self,
            "caches",
            tuple((str(name), count("cache capacity", size)) for name, size in self.caches),
        )
        self.device.measured_flops(self.dtype)  # a clear error now rather than at predict time
        rates = sorted(
            (positive("matrix_rates FLOPs", flops), positive("matrix_rates FLOP/s", rate))
            for flops, rate in self.matrix_rates
        )
        object.__setattr__(self, "matrix_rates", tuple(rates))

    def level(self, footprint: int, unit: str = "vector") -> tuple[str, float]:
        """The memory level that serves ``footprint`` bytes, and its bandwidth (bytes/s).

        Caches are served at what one core measured. Main memory is too for numpy's
        one-thread elementwise loops; BLAS (``unit="matrix"``) runs on every core and gets
        the whole machine's bandwidth.

        Parameters
        ----------
        footprint : int
            The bytes the call keeps touching, B (0 or more).
        unit : str
            What runs the call, one of :data:`UNITS`.

        Returns
        -------
        tuple of (str, float)
            The first cache level that holds ``footprint`` (``"L2"``), else ``"DRAM"``, and
            its bandwidth, B/s.
        """
        footprint = count("footprint", footprint, minimum=0)
        unit = choice("unit", unit, UNITS)
        for name, capacity in self.caches:
            if footprint <= capacity and name in self.device.memory_levels:
                return name, self.device.memory_levels[name]
        machine = self.device.measured_memory_bandwidth or self.device.memory_bandwidth
        if unit == "matrix" or "DRAM" not in self.device.memory_levels:
            return "DRAM", machine
        return "DRAM", self.device.memory_levels["DRAM"]

    def rate(self, unit: str, flops: float = math.inf) -> float:
        """FLOP/s of ``unit`` (see :data:`UNITS`) on a call of ``flops`` FLOPs.

        Only a matrix call's rate depends on its size (see ``matrix_rates``).

        Parameters
        ----------
        unit : str
            What runs the call, one of :data:`UNITS`.
        flops : float
            The call's FLOPs, FLOP (0 or more); the default, infinity, reads the largest
            measured matmul's rate (0 reads the smallest's).

        Returns
        -------
        float
            The rate, FLOP/s (evaluations per second for ``"exp"``).

        Raises
        ------
        TypeError
            If ``unit`` is not a string or ``flops`` not a number.
        ValueError
            If ``unit`` is not one of :data:`UNITS`, or ``flops`` is negative or NaN.
        """
        unit = choice("unit", unit, UNITS)
        flops = number("flops", flops, minimum=0, allow_infinity=True)
        if unit == "vector":
            return self.vector_flops
        if unit == "broadcast":
            return self.broadcast_flops or self.vector_flops
        if unit == "exp":
            return self.exp_rate
        if not self.matrix_rates:
            return self.device.measured_flops(self.dtype)
        import numpy as np

        sizes = [math.log(f) for f, _ in self.matrix_rates]
        rates = [r for _, r in self.matrix_rates]
        size = math.log(flops) if 0 < flops < math.inf else (sizes[-1] if flops else sizes[0])
        return float(np.interp(size, sizes, rates))

    def _work(self, call: Call) -> tuple[float, float, str]:
        """Seconds of compute and of memory traffic for ``call``, and the level serving it."""
        level, bandwidth = self.level(call.footprint, call.unit)
        compute = call.cost.flops / self.rate(call.unit, call.cost.flops)
        return compute, call.cost.bytes / bandwidth, level

    def call_time(self, call: Call) -> float:
        """``overhead + max(F / P_unit, B / W_level)`` for one call, seconds.

        Parameters
        ----------
        call : Call
            The call priced.

        Returns
        -------
        float
            The predicted time, s.
        """
        compute, memory, _ = self._work(call)
        return self.overhead(call.unit) + max(compute, memory)

    def overhead(self, unit: str) -> float:
        """Seconds a call on ``unit`` costs before any work.

        Parameters
        ----------
        unit : str
            What runs the call, one of :data:`UNITS`.

        Returns
        -------
        float
            ``blas_overhead_s`` for ``"matrix"``, else ``overhead_s``, s.
        """
        return self.blas_overhead_s if choice("unit", unit, UNITS) == "matrix" else self.overhead_s

    def predict(self, calls: Sequence[Call]) -> float:
        """Seconds for the calls run one after another.

        Parameters
        ----------
        calls : sequence of Call
            The calls, as numpy makes them.

        Returns
        -------
        float
            The sum of their :meth:`call_time`, s (0 for no calls).
        """
        return sum(self.call_time(call) for call in calls)

    def bound(self, calls: Sequence[Call]) -> str:
        """What most of the predicted time goes to: ``"overhead"``, ``"compute (exp)"``,
        ``"memory (L2)"`` and so on.

        Each call's time beyond its overhead counts towards its compute unit or its memory
        level, whichever is larger; every call's overhead counts towards ``"overhead"``.

        Parameters
        ----------
        calls : sequence of Call
            The calls, as numpy makes them (at least one).

        Returns
        -------
        str
            The key with the most predicted seconds.

        Raises
        ------
        ValueError
            If ``calls`` is empty: no time goes anywhere.
        """
        shares: dict[str, float] = {}
        for call in calls:
            compute, memory, level = self._work(call)
            key = f"compute ({call.unit})" if compute >= memory else f"memory ({level})"
            shares[key] = shares.get(key, 0.0) + max(compute, memory)
            shares["overhead"] = shares.get("overhead", 0.0) + self.overhead(call.unit)
        if not shares:
            raise ValueError("`calls` must hold at least one Call (got none).")
        return max(shares, key=shares.__getitem__)


def fit_overhead(tiny: Sequence[KernelResult]) -> tuple[float, float]:
    """Least-squares line ``time = overhead + FLOPs / rate`` through tiny calls of one kind.

    Each call is placed at its fastest sample.

    Parameters
    ----------
    tiny : sequence of KernelResult
        Tiny calls of one kind, of at least two different FLOP counts.

    Returns
    -------
    (float, float)
        The intercept, s per call, and the slope, s per FLOP; each floored at zero.

    Raises
    ------
    ValueError
        With fewer than two different FLOP counts.

    Examples
    --------
    >>> from perfmodel.measure.microbench import tiny_op
    >>> overhead, per_flop = fit_overhead([tiny_op(n, repeats=3, min_time_s=0)
    ...                                    for n in (1, 64, 1024, 4096)])
    >>> 0 <= overhead < 1e-3 and per_flop >= 0
    True
    """
    import numpy as np

    points = [(kernel.cost.flops, kernel.measurement.minimum_s) for kernel in tiny]
    if len({work for work, _ in points}) < 2:
        raise ValueError(
            f"`tiny` must hold calls of at least two sizes to fit a line (got {len(points)})."
        )
    slope, intercept = np.polyfit([w for w, _ in points], [t for _, t in points], 1)
    return max(0.0, float(intercept)), max(0.0, float(slope))


def calibrate(profile: MachineProfile, *, dtype: str = "fp64") -> Calibration:
    """The :class:`Calibration` of a measured machine
    (:func:`perfmodel.measure.empirical.profile_machine`).

    The vector rate is the flat part of the Empirical Roofline Toolkit's sweep (its best
    elementwise kernel), the exp rate the ``exp`` kernel's, and the overhead the fit through
    the tiny adds (the tiny matmuls' for BLAS, when the profile holds them).

    Parameters
    ----------
    profile : MachineProfile
        From :func:`perfmodel.measure.empirical.profile_machine`: it must hold the tiny,
        elementwise and ``exp`` kernels.
    dtype : {"fp64", "fp32"}
        Whose matmuls give the matrix rates, and whose measured peak the device is read for.

    Returns
    -------
    Calibration
        The device of the profile with the rates and overheads fitted to its kernels. The
        cache capacities are read from the machine that runs this
        (:func:`perfmodel.measure.empirical.cpu_caches`), not from the profile: calibrate on
        the machine profiled.

    Raises
    ------
    TypeError
        If ``profile`` is not a MachineProfile.
    ValueError
        If it lacks a kernel kind a calibration needs, or ``dtype`` is neither.
    """
    dtype = choice("dtype", dtype, ("fp64", "fp32"))
    if not isinstance(profile, MachineProfile):
        raise TypeError(
            f"`profile` must be a MachineProfile from empirical.profile_machine "
            f"(got {type(profile).__name__})."
        )
    kinds: dict[str, list[KernelResult]] = {}
    for kernel in profile.kernels:
        kinds.setdefault(kernel.kind, []).append(kernel)
    missing = {"tiny", "elementwise", "special"} - set(kinds)
    if missing:
        raise ValueError(
            f"`profile` lacks the {', '.join(sorted(missing))} kernels a calibration needs."
        )
    adds = [k for k in kinds["tiny"] if k.name.startswith("add")]
    matmuls = [k for k in kinds["tiny"] if k.name.startswith("matmul")]
    overhead, _ = fit_overhead(adds)
    return Calibration(
        device=profile.device,
        overhead_s=overhead,
        blas_overhead_s=fit_overhead(matmuls)[0] if matmuls else overhead,
        vector_flops=max(k.flops_per_s for k in kinds["elementwise"]),
        exp_rate=max(k.flops_per_s for k in kinds["special"]),
        broadcast_flops=max((k.flops_per_s for k in kinds.get("broadcast", [])), default=None),
        caches=tuple(cpu_caches()),
        dtype=dtype,
        matrix_rates=tuple(
            (k.cost.flops, k.flops_per_s) for k in kinds.get("matmul", []) if k.cost.dtype == dtype
        ),
    )


@dataclass(frozen=True, slots=True)
class Case:
    """An operation to predict and measure.

    Parameters
    ----------
    name : str
        What the operation is, with its sizes (``"matvec 3072x3072"``).
    run : callable
        The numpy code, called with no arguments.
    cost : ops.Cost
        The one-pass cost lecture 04's roofline would price.
    calls : tuple of Call
        The numpy calls it really makes, which the calibrated model prices.
    """

    name: str
    run: Callable[[], Any]
    cost: ops.Cost
    calls: tuple[Call, ...]


@dataclass(frozen=True, slots=True)
class Row:
    """One op: the plain roofline, the calibrated prediction, and the measurement.

    Parameters
    ----------
    name : str
        The case's name.
    cost : ops.Cost
        Its one-pass cost.
    roofline_s : float
        The plain roofline's time on the measured ceilings, s.
    predicted_s : float
        The calibrated prediction, s.
    bound : str
        What most of the prediction goes to (see :meth:`Calibration.bound`).
    measurement : Measurement
        The op timed.
    """

    name: str
    cost: ops.Cost
    roofline_s: float
    predicted_s: float
    bound: str
    measurement: Measurement

    @property
    def measured_s(self) -> float:
        """The fastest sample: the least disturbed run, as the ceilings were measured."""
        return self.measurement.minimum_s

    @property
    def ratio(self) -> float:
        """Measured over calibrated prediction: above 1, the machine was slower than the model."""
        return self.measured_s / self.predicted_s if self.predicted_s > 0 else math.inf

    @property
    def roofline_ratio(self) -> float:
        """Measured over the plain one-pass roofline."""
        return self.measured_s / self.roofline_s if self.roofline_s > 0 else math.inf

    @property
    def beats_roofline(self) -> bool:
        """True when the op ran faster than the plain roofline said it could."""
        return self.measured_s < self.roofline_s

    @property
    def counted_bytes_per_s(self) -> float:
        """The one-pass cost's bytes over the measured time: the bandwidth the op reached, as
        STREAM counts bytes (no write-allocate traffic)."""
        return self.cost.bytes / self.measured_s if self.measured_s > 0 else math.inf

    @property
    def doubt(self) -> str:
        """Why the measurement cannot be trusted (noisy, or a busy machine); empty if it can."""
        return self.measurement.doubt


class Compared(Protocol):
    """A row of a :class:`Comparison`: a name, a prediction and a measurement.

    Lecture 06's :class:`Row` (an op timed with numpy) is one; so is lecture 12's
    :class:`perfmodel.capstone.NodeComparison` (a node timed by onnxruntime).

    Parameters
    ----------
    *args, **kwargs
        None: a protocol is never built; any object with the four properties is a row.
    """

    @property
    def name(self) -> str:
        """The op's or node's name."""

    @property
    def predicted_s(self) -> float:
        """The predicted time, s."""

    @property
    def measured_s(self) -> float:
        """The measured time, s."""

    @property
    def ratio(self) -> float:
        """Measured over predicted, dimensionless: above 1, slower than predicted."""


class Classified(Compared, Protocol):
    """A row that belongs to an op class (``"matmul"``, ``"elementwise"``, ...)."""

    @property
    def op_class(self) -> str: ...


RowT = TypeVar("RowT", bound=Compared, covariant=True)


def _miss_s(row: Compared) -> float:
    return abs(row.measured_s - row.predicted_s)


@dataclass(frozen=True, slots=True)
class Comparison(Generic[RowT]):
    """Predictions next to measurements, one row per op or per node of a model.

    Lecture 06 compares numpy ops (rows of :class:`Row`) and lecture 12 the nodes of a model
    run on onnxruntime (rows of :class:`perfmodel.capstone.NodeComparison`); both read the
    same medians and misses from it.

    Parameters
    ----------
    rows : tuple
        One :class:`Compared` per op or node, in the order they ran.
    calibration : Calibration
        The calibration behind the predictions.
    model : str
        The model compared (its ONNX graph's name); empty for ops timed one by one.
    end_to_end_s : float, optional
        The whole model timed at once, s (onnxruntime's total); None when only the rows
        were timed, and :attr:`measured_s` is their sum.
    fused_s : float, optional
        The model timed with every graph optimisation on, s; None when not timed.
    threads : int, optional
        Threads the measurement ran on, count; None when not recorded.
    noisy : bool
        The measured runs disagreed by more than the house threshold (a busy machine,
        whose errors say nothing about the model).
    """

    rows: tuple[RowT, ...]
    calibration: Calibration
    model: str = ""
    end_to_end_s: float | None = None
    fused_s: float | None = None
    threads: int | None = None
    noisy: bool = False

    @property
    def predicted_s(self) -> float:
        """Every row's prediction added up, s."""
        return math.fsum(row.predicted_s for row in self.rows)

    @property
    def measured_s(self) -> float:
        """The whole measured end to end when it was, else every row's measurement added, s."""
        if self.end_to_end_s is not None:
            return self.end_to_end_s
        return math.fsum(row.measured_s for row in self.rows)

    @property
    def error(self) -> float:
        """End to end, predicted over measured, less one: +0.2 overestimates by 20%, fraction."""
        return self.predicted_s / self.measured_s - 1

    @property
    def median_abs_error(self) -> float:
        """Median over the rows of ``|measured / predicted - 1|``, fraction."""
        return statistics.median(abs(row.ratio - 1) for row in self.rows)

    @property
    def median_node_error(self) -> float:
        """Median over the rows of ``|predicted / measured - 1|``: each prediction's error as a
        share of what was measured, fraction."""
        return statistics.median(abs(row.predicted_s / row.measured_s - 1) for row in self.rows)

    def misses(self, tolerance: float = 0.25) -> tuple[RowT, ...]:
        """The rows the prediction is off by more than ``tolerance``.

        Parameters
        ----------
        tolerance : float
            The largest ``|measured / predicted - 1|`` that counts as a hit, fraction.

        Returns
        -------
        tuple
            Every row with ``abs(row.ratio - 1) > tolerance``, in table order.
        """
        tolerance = non_negative("tolerance", tolerance)
        return tuple(row for row in self.rows if abs(row.ratio - 1) > tolerance)

    def largest_misses(self, n: int = 5) -> list[RowT]:
        """The ``n`` rows whose predictions are furthest from their measurements in seconds.

        Parameters
        ----------
        n : int
            How many rows, count.

        Returns
        -------
        list
            The rows, the largest ``|measured - predicted|`` first.
        """
        n = count("n", n)
        return sorted(self.rows, key=_miss_s, reverse=True)[:n]

    def row(self, name: str) -> RowT:
        """The row whose name starts with ``name`` (``"matvec"``, ``"add of 8"``).

        Parameters
        ----------
        name : str
            The start of one row's name.

        Returns
        -------
        Compared
            That row.

        Raises
        ------
        ValueError
            If no row's name, or more than one, starts with ``name``.
        """
        name = text("name", name)
        found = [row for row in self.rows if row.name.startswith(name)]
        if len(found) != 1:
            names = ", ".join(row.name for row in self.rows)
            raise ValueError(
                f"`name` must start exactly one row's name (got {name!r}; the rows: {names})."
            )
        return found[0]

    @property
    def beat_roofline(self: Comparison[Row]) -> tuple[Row, ...]:
        """The ops measured faster than the plain roofline: where a measured ceiling was not
        the machine's limit (see :attr:`Row.beats_roofline`)."""
        return tuple(row for row in self.rows if row.beats_roofline)

    @property
    def roofline_median_abs_error(self: Comparison[Row]) -> float:
        """The same for the plain roofline: how far lecture 04's model alone is off, fraction."""
        return statistics.median(abs(row.roofline_ratio - 1) for row in self.rows)

    def class_ratios(self: Comparison[Classified]) -> dict[str, tuple[int, float, int]]:
        """Each op class's rows, their median measured/predicted ratio, and how many ran slower.

        Returns
        -------
        dict of str to tuple
            For each op class in the order first met: its rows (count), their median
            ``measured / predicted`` (a ratio, dimensionless), and how many exceed 1 (count).
        """
        found: dict[str, list[float]] = {}
        for row in self.rows:
            found.setdefault(row.op_class, []).append(row.ratio)
        return {name: (len(ratios), statistics.median(ratios), sum(r > 1 for r in ratios))
                for name, ratios in found.items()}  # fmt: skip

    def by_class(self: Comparison[Classified]) -> dict[str, tuple[float, float]]:
        """Predicted and measured seconds of each op class.

        Returns
        -------
        dict of str to tuple of float
            For each op class in the order first met: (predicted, measured), s.
        """
        totals: dict[str, tuple[float, float]] = {}
        for row in self.rows:
            predicted, measured = totals.get(row.op_class, (0.0, 0.0))
            totals[row.op_class] = (predicted + row.predicted_s, measured + row.measured_s)
        return totals


def _vector(n: int, *, inputs: int = 1, outputs: int = 1, flops: float = 1, footprint: int,
            unit: str = "vector", label: str = "elementwise") -> Call:  # fmt: skip
    cost = ops.elementwise(
        n, flops_per_element=flops, inputs=inputs, outputs=outputs, dtype="fp64", label=label
    )
    return Call(cost, unit, footprint)


def _row_reduction(rows: int, cols: int, *, footprint: int) -> Call:
    """``x.sum(axis=1)`` (or max, or mean): read every element, write one per row."""
    n = rows * cols
    return Call(ops.Cost(flops=n, bytes_read=8 * n, bytes_written=8 * rows, dtype="fp64",
                         label="row reduction"), "vector", footprint)  # fmt: skip


def held_out_ops(*, quick: bool = True) -> list[Case]:
    """Real numpy operations in fp64, each with its one-pass cost and its numpy calls.

    None of them is a micro-benchmark the calibration measured. ``quick`` picks sizes that
    run in a few seconds in all; ``False`` doubles the large ones.

    Parameters
    ----------
    quick : bool
        The small sizes; ``False`` doubles the large ones.

    Returns
    -------
    list of Case
        A matvec, four matmuls, a softmax, a layer norm, a 3x3 convolution, a chain of four
        elementwise ops unfused and fused, and an add of 8 elements, in that order.

    Examples
    --------
    >>> [case.name.split()[0] for case in held_out_ops(quick=True)][:5]
    ['matvec', 'matmul', 'matmul', 'matmul', 'matmul']
    """
    import numpy as np
    from numpy.lib.stride_tricks import sliding_window_view

    quick = flag("quick", quick)
    rng = np.random.default_rng(0)
    scale = 1 if quick else 2
    cases: list[Case] = []

    n = 3072 * scale
    matrix, vector, product = rng.random((n, n)), rng.random(n), np.empty(n)
    cost = ops.matvec(n, n, dtype="fp64")
    matvec = functools.partial(np.matmul, matrix, vector, out=product)
    cases.append(Case(f"matvec {n}x{n}", matvec, cost, (Call(cost, "matrix", int(cost.bytes)),)))

    for size in (16, 128, 384, 768 * scale):
        a, b, c = rng.random((size, size)), rng.random((size, size)), np.empty((size, size))
        cost = ops.matmul(size, size, size, dtype="fp64")
        run = functools.partial(np.matmul, a, b, out=c)
        cases.append(Case(f"matmul {size}", run, cost, (Call(cost, "matrix", int(cost.bytes)),)))

    rows, cols = 512 * scale, 1024
    x, y, w = rng.random((rows, cols)), np.empty((rows, cols)), np.empty((rows, cols))
    per_row, per_row_2 = np.empty((rows, 1)), np.empty((rows, 1))
    gamma, beta = rng.random(cols), rng.random(cols)
    elements = rows * cols

    def softmax() -> None:
        np.max(x, axis=1, keepdims=True, out=per_row)
        np.subtract(x, per_row, out=y)
        np.exp(y, out=y)
        np.sum(y, axis=1, keepdims=True, out=per_row)
        np.divide(y, per_row, out=y)

    two = 2 * 8 * elements  # x and y
    softmax_calls = (
        _row_reduction(rows, cols, footprint=two),
        _vector(elements, footprint=two, unit="broadcast", label="subtract the row max"),
        _vector(elements, footprint=two, unit="exp", label="exp"),
        _row_reduction(rows, cols, footprint=two),
        _vector(elements, footprint=two, unit="broadcast", label="divide by the row sum"),
    )
    cases.append(
        Case(
            f"softmax {rows}x{cols}", softmax, ops.softmax(rows, cols, dtype="fp64"), softmax_calls
        )
    )

    def layer_norm() -> None:
        np.mean(x, axis=1, keepdims=True, out=per_row)
        np.subtract(x, per_row, out=y)
        np.multiply(y, y, out=w)
        np.mean(w, axis=1, keepdims=True, out=per_row_2)
        np.add(per_row_2, 1e-5, out=per_row_2)
        np.sqrt(per_row_2, out=per_row_2)
        np.divide(y, per_row_2, out=y)
        np.multiply(y, gamma, out=y)
        np.add(y, beta, out=y)

    three = 3 * 8 * elements  # x, y and w
    per_rows = [_vector(rows, footprint=three) for _ in range(2)]  # + eps and sqrt, one per row
    layer_norm_calls = (
        _row_reduction(rows, cols, footprint=three),
        _vector(rows, footprint=three, unit="vector"),  # mean: the sum's divide by cols
        _vector(elements, footprint=three, unit="broadcast", label="subtract the mean"),
        _vector(elements, footprint=three, label="square"),
        _row_reduction(rows, cols, footprint=three),
        _vector(rows, footprint=three, unit="vector"),
        *per_rows,
        _vector(elements, footprint=three, unit="broadcast", label="divide by the deviation"),
        _vector(elements, footprint=three, unit="broadcast", label="scale"),
        _vector(elements, footprint=three, unit="broadcast", label="shift"),
    )
    cases.append(
        Case(
            f"layer norm {rows}x{cols}",
            layer_norm,
            ops.layer_norm(rows, cols, dtype="fp64"),
            layer_norm_calls,
        )  # fmt: skip
    )

    channels, side = 32, 48 * scale
    image = rng.random((1, channels, side, side))
    kernel = rng.random((channels, channels, 3, 3))
    out_side = side - 2
    pixels = out_side * out_side

    def conv() -> Any:
        windows = sliding_window_view(image, (3, 3), axis=(2, 3))  # (1, c, h-2, w-2, 3, 3)
        return np.tensordot(windows, kernel, axes=([1, 4, 5], [1, 2, 3]))

    patch = channels * 9
    im2col = ops.Cost(flops=0, bytes_read=8 * pixels * patch, bytes_written=8 * pixels * patch,
                      dtype="fp64", label="gather the 3x3 windows")  # fmt: skip
    gemm = ops.matmul(pixels, patch, channels, dtype="fp64")
    conv_cost = ops.conv2d(1, channels, channels, side, side, 3, dtype="fp64")
    footprint = int(im2col.bytes + gemm.bytes)
    cases.append(
        Case(
            f"conv 3x3, {channels} channels, {side}x{side}",
            conv,
            conv_cost,
            (Call(im2col, "vector", footprint), Call(gemm, "matrix", footprint)),
        )
    )

    length = 8_000_000 * scale
    source, result = rng.random(length), np.empty(length)
    chain = ops.fusion(length, [1, 1, 1, 1], dtype="fp64")

    def unfused() -> None:
        np.multiply(source, 0.5, out=result)
        np.add(result, 1.0, out=result)
        np.multiply(result, result, out=result)
        np.subtract(result, 0.25, out=result)

    block = 32_768  # 256 kB of fp64, the block the Empirical Roofline Toolkit's kernel used
    buffer = np.empty(block)

    def fused() -> None:  # the same four ops, one cache-sized block at a time
        for start in range(0, length, block):
            part = buffer[: min(block, length - start)]
            np.multiply(source[start : start + block], 0.5, out=part)
            np.add(part, 1.0, out=part)
            np.multiply(part, part, out=part)
            np.subtract(part, 0.25, out=part)
            result[start : start + block] = part

    both, one = 2 * 8 * length, 8 * length  # source and result; result alone
    unfused_calls = (
        _vector(length, footprint=both, label="scale into the result"),
        *(_vector(length, footprint=one, label="in place") for _ in range(3)),
    )

    # Fused, each block is read from main memory once (into a buffer in cache), worked on
    # there, and written back once.
    def per_block(size: int) -> tuple[Call, ...]:
        read = ops.Cost(flops=size, bytes_read=8 * size, bytes_written=0, dtype="fp64",
                        label="read and scale a block")  # fmt: skip
        write = ops.Cost(flops=0, bytes_read=0, bytes_written=8 * size, dtype="fp64",
                         label="write a block back")  # fmt: skip
        in_cache = (_vector(size, footprint=8 * block, label="in cache") for _ in range(3))
        return (Call(read, "vector", both), *in_cache, Call(write, "vector", both))

    fused_calls = tuple(
        call for start in range(0, length, block) for call in per_block(min(block, length - start))
    )
    cases.append(
        Case(f"chain of 4 ops, unfused, {length:,}", unfused, chain.unfused, unfused_calls)
    )
    cases.append(Case(f"chain of 4 ops, fused, {length:,}", fused, chain.fused, fused_calls))

    small, small_out = np.ones(8), np.empty(8)
    tiny = ops.elementwise(8, inputs=2, dtype="fp64", label="add")
    cases.append(
        Case(
            "add of 8 elements",
            lambda: np.add(small, small, out=small_out),
            tiny,
            (Call(tiny, "vector", int(tiny.bytes)),),
        )  # fmt: skip
    )
    return cases


def predict_vs_measure(
    calibration: Calibration,
    cases: Sequence[Case] | None = None,
    *,
    quick: bool = True,
    progress: bool = True,
    **timing: Any,
) -> Comparison[Row]:
    """Time every case and put it next to the plain roofline and the calibrated prediction.

    Parameters
    ----------
    calibration : Calibration
        From :func:`calibrate`.
    cases : sequence of Case, optional
        Default :func:`held_out_ops` (``quick`` chooses their sizes).
    quick : bool
        The sizes of the default cases (see :func:`held_out_ops`); unused when ``cases`` is
        given.
    progress : bool
        Show a progress bar.
    **timing
        Passed to :func:`perfmodel.measure.timing.measure` (default 5 repeats, at least 0.05 s, and
        BLAS on every usable core, as :func:`perfmodel.measure.empirical.profile_machine` measured
        the ceilings).

    Returns
    -------
    Comparison
        One :class:`Row` per case, in order.
    """
    if not isinstance(calibration, Calibration):
        raise TypeError(
            f"`calibration` must be a Calibration from calibrate() "
            f"(got {type(calibration).__name__})."
        )
    cases = list(held_out_ops(quick=quick) if cases is None else cases)
    if not cases:
        raise ValueError("`cases` must hold at least one Case (got none).")
    from tqdm.auto import tqdm

    options = {"repeats": 5, "min_time_s": 0.05, "threads": usable_cores(), **timing}
    rows = []
    for case in tqdm(cases, desc="predict, then measure", disable=not progress):
        plain = estimate(case.cost, calibration.device, dtype=calibration.dtype, ceiling="measured")
        measured = measure(case.run, label=case.name, dtype=calibration.dtype, **options)
        rows.append(
            Row(
                name=case.name,
                cost=case.cost,
                roofline_s=plain.time_s,
                predicted_s=calibration.predict(case.calls),
                bound=calibration.bound(case.calls),
                measurement=measured,
            )
        )
    threads = options["threads"]
    threads = threads if isinstance(threads, int) else None
    return Comparison(tuple(rows), calibration, threads=threads)
