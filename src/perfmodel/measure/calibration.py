"""A roofline calibrated on this machine: numpy's calls priced, and the fit that prices them.

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
``overhead + max(F / P_unit, B / W_level)``; :func:`calibrate` fits a :class:`Calibration`
to a measured machine. :func:`perfmodel.measure.held_out.held_out_ops` builds a sweep of real
operations whose measurements the calibration never saw (matvec, matmuls, softmax, layer
norm, a convolution, an elementwise chain unfused and fused, a tiny add), and
:func:`perfmodel.measure.held_out.predict_vs_measure` times them next to both predictions,
in a :class:`perfmodel.measure.comparison.Comparison`.

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

import math
from collections.abc import Sequence
from dataclasses import dataclass

from perfmodel import ops
from perfmodel._validate import choice, count, non_negative, number, positive
from perfmodel.hardware import Device
from perfmodel.measure.empirical import MachineProfile, cpu_caches
from perfmodel.measure.microbench import KernelResult

__all__ = [
    "UNITS",
    "Calibration",
    "Call",
    "calibrate",
    "fit_overhead",
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
