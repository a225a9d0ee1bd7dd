"""The roofline: the fastest an operation can run on a device, and what bounds it.

A device streams memory at ``B`` bytes/s and computes at ``P`` FLOP/s, and (the model's
key assumption) it can do both at once. An operation with intensity ``I`` FLOP/byte can
therefore reach at most ``min(P, I·B)`` FLOP/s. Below the ridge point ``P / B`` the
memory is the limit; above it, the arithmetic.

References
----------
Williams, Waterman and Patterson, "Roofline: an insightful visual performance model for
multicore architectures", Communications of the ACM 52(4), 2009.

Examples
--------
The matrix-vector product of Adam Coates's talk *Deep Learning (hopefully faster)* on its 2015
GPU: memory-bound at about 150 GFLOP/s (the talk rounds its counts and gets 142).

>>> from perfmodel import ops
>>> e = estimate(ops.matvec(1024, 512), "GPU circa 2015")
>>> e.bound, round(e.memory_time_s * 1e6, 2), round(e.compute_time_s * 1e6, 2)
('memory', 7.01, 0.17)
>>> round(e.achieved_flops / 1e9)
150
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from perfmodel._show import percent, seconds, shown, words
from perfmodel._validate import choice, fraction, is_number, number
from perfmodel.hardware import Device, DeviceLike, get
from perfmodel.ops import Cost
from perfmodel.units import format_rate

__all__ = [
    "CEILINGS",
    "Estimate",
    "SequenceEstimate",
    "attainable_flops",
    "ceilings",
    "estimate",
    "estimate_sequence",
]


def _device(device: DeviceLike) -> Device:
    return get(device, argument="device")


#: What ``ceiling`` may name: the maker's figures, or the best published measurements.
CEILINGS = ("nameplate", "measured")


def ceilings(
    device: DeviceLike, dtype: str, ceiling: str | float = "nameplate"
) -> tuple[float, float, str]:
    """The compute peak and the memory bandwidth a roofline uses, and what they are.

    Parameters
    ----------
    device : str or hardware.Device
        A catalogue name or a device you built.
    dtype : str
        Which compute peak: a dtype name the device lists, such as ``"bf16"``.
    ceiling : {"nameplate", "measured"} or float
        ``"nameplate"``: the datasheet's peak and bandwidth. ``"measured"``: the best
        published measurements (a large matmul; a STREAM-style copy), falling back to the
        nameplate bandwidth where none is published, and saying so. A number in (0, 1]:
        that fraction of both nameplate figures.

    Returns
    -------
    (float, float, str)
        Peak FLOP/s, bandwidth in B/s, and a description of the two (``"nameplate"``,
        ``"measured"``, ``"50% of nameplate"``...).

    Raises
    ------
    TypeError
        If ``ceiling`` is neither a string nor a number.
    ValueError
        If ``ceiling`` names neither roof or is a number outside (0, 1], the device has
        no peak for ``dtype``, or (``"measured"``) no published measurement for it.

    Examples
    --------
    >>> peak, bandwidth, what = ceilings("H100 SXM", "bf16", "measured")
    >>> round(peak / 1e12, 1), round(bandwidth / 1e12, 3), what
    (794.5, 2.475, 'measured')
    >>> ceilings("H200 SXM", "bf16", "measured")[2]
    'measured compute, nameplate bandwidth (none published)'
    >>> ceilings("H100 SXM", "bf16", 0.5)[:2] == (989.5e12 / 2, 3.35e12 / 2)
    True
    """
    node = _device(device)
    if isinstance(ceiling, str):
        if choice("ceiling", ceiling, CEILINGS) == "nameplate":
            return node.peak_flops(dtype), node.memory_bandwidth, "nameplate"
        peak = node.measured_flops(dtype)
        if node.measured_memory_bandwidth is None:
            what = "measured compute, nameplate bandwidth (none published)"
            return peak, node.memory_bandwidth, what
        return peak, node.measured_memory_bandwidth, "measured"
    if not is_number(ceiling):
        raise TypeError(
            "`ceiling` must be 'nameplate', 'measured' or an efficiency in (0, 1] "
            f"(got {type(ceiling).__name__} {ceiling!r})."
        )
    efficiency = fraction("ceiling", ceiling)
    return (
        efficiency * node.peak_flops(dtype),
        efficiency * node.memory_bandwidth,
        f"{efficiency:.0%} of nameplate",
    )


def attainable_flops(
    intensity: float,
    device: DeviceLike,
    dtype: str = "fp32",
    *,
    ceiling: str | float = "nameplate",
) -> float:
    """The roof at ``intensity`` (FLOP/byte): ``min(peak, intensity · bandwidth)``.

    Parameters
    ----------
    intensity : float
        Arithmetic intensity, FLOP/B (non-negative; ``inf`` for an op that moves nothing).
    device : str or hardware.Device
        A catalogue name or a device you built.
    dtype : str, optional
        Which compute peak (default ``"fp32"``).
    ceiling : {"nameplate", "measured"} or float, optional
        Which roof: the datasheet's (the default), the best published measurements, or
        a fraction of the datasheet's (see :func:`ceilings`).

    Returns
    -------
    float
        The most FLOP/s an operation of that intensity can reach.

    Raises
    ------
    TypeError
        If ``intensity`` is not a number, or ``device`` or ``ceiling`` is of the wrong type.
    ValueError
        If ``intensity`` is negative or NaN, or ``device``, ``dtype`` or ``ceiling`` is
        unknown (see :func:`ceilings`).

    Examples
    --------
    >>> attainable_flops(0.5, "GPU circa 2015") / 1e9
    150.0
    >>> attainable_flops(1000, "GPU circa 2015") / 1e12
    6.0
    """
    intensity = number(
        "intensity",
        intensity,
        minimum=0,
        allow_infinity=True,
        what="a non-negative number of FLOP/byte (inf for an op that moves nothing)",
    )
    node = _device(device)
    peak, bandwidth, _ = ceilings(node, dtype, ceiling)
    return min(peak, intensity * bandwidth)


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Estimate:
    """The roofline's verdict on one operation on one device.

    ``time_s`` is the larger of the compute and memory times (they overlap);
    ``achieved_flops`` is the FLOP rate that time implies.

    Parameters
    ----------
    cost : ops.Cost
        The operation's FLOPs and bytes.
    device : str
        The device's name.
    dtype : str
        The dtype whose compute peak was used.
    compute_time_s : float
        FLOPs over the compute ceiling, s.
    memory_time_s : float
        Bytes over the bandwidth ceiling, s.
    ceiling : str
        What the two ceilings were (the description :func:`ceilings` returns).
    """

    cost: Cost
    device: str
    dtype: str
    compute_time_s: float
    memory_time_s: float
    ceiling: str = "nameplate"

    @property
    def time_s(self) -> float:
        """The larger of the compute and memory times, s."""
        return max(self.compute_time_s, self.memory_time_s)

    @property
    def bound(self) -> str:
        """``"compute"`` or ``"memory"``: which of the two limits sets the time."""
        return "compute" if self.compute_time_s >= self.memory_time_s else "memory"

    @property
    def achieved_flops(self) -> float:
        """The operation's FLOPs over ``time_s``, FLOP/s (0 for a zero time)."""
        return self.cost.flops / self.time_s if self.time_s > 0 else 0.0

    @property
    def fraction_of_peak(self) -> float:
        """Achieved FLOP/s over the compute ceiling used (see ``ceiling``), fraction."""
        return self.compute_time_s / self.time_s if self.time_s > 0 else 0.0

    def __repr__(self) -> str:
        return shown(
            "Estimate",
            time=seconds(self.time_s),
            bound=repr(self.bound),
            compute=seconds(self.compute_time_s),
            memory=seconds(self.memory_time_s),
            achieved=format_rate(self.achieved_flops),
            op=words(self.cost.label or "unlabelled", 80),
            device=repr(self.device),
            dtype=repr(self.dtype),
            ceiling=words(self.ceiling),
        )


def estimate(
    cost: Cost,
    device: DeviceLike,
    *,
    dtype: str | None = None,
    ceiling: str | float = "nameplate",
) -> Estimate:
    """How fast ``cost`` can run on ``device``: the speed of light for that operation.

    Parameters
    ----------
    cost : ops.Cost
        FLOPs and bytes of the operation.
    device : str or hardware.Device
        A catalogue name or a device you built.
    dtype : str, optional
        Which peak to use; defaults to the cost's own dtype.
    ceiling : {"nameplate", "measured"} or float
        Which roof: the datasheet's, the best published measurements, or a fraction of
        the datasheet's (see :func:`ceilings`).

    Returns
    -------
    Estimate
        The compute and memory times and what bounds the operation.

    Raises
    ------
    TypeError
        If ``cost`` is not an :class:`ops.Cost` or ``dtype`` is not a string.
    ValueError
        If no dtype is given or known, or the device has no peak (or no measurement) for it.

    Examples
    --------
    Nameplate and measured ceilings give different answers to the same question:

    >>> from perfmodel import ops
    >>> big = ops.matmul(8192, 8192, 8192, dtype="bf16")
    >>> nameplate = estimate(big, "H100 SXM")
    >>> measured = estimate(big, "H100 SXM", ceiling="measured")
    >>> round(measured.time_s / nameplate.time_s, 2)
    1.25
    """
    if not isinstance(cost, Cost):
        raise TypeError(f"`cost` must be an ops.Cost (got {type(cost).__name__}).")
    node = _device(device)
    if dtype is not None and not isinstance(dtype, str):
        raise TypeError(
            f"`dtype` must be a dtype name such as 'bf16' (got {type(dtype).__name__})."
        )
    dtype = cost.dtype if dtype is None else dtype
    if dtype is None:
        raise ValueError(
            "`dtype` is needed: this cost mixes dtypes (or was given a width in bytes); "
            "pass dtype='bf16' or similar."
        )
    peak, bandwidth, what = ceilings(node, dtype, ceiling)
    return Estimate(
        cost=cost,
        device=node.name,
        dtype=dtype,
        compute_time_s=cost.flops / peak,
        memory_time_s=cost.bytes / bandwidth,
        ceiling=what,
    )


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class SequenceEstimate:
    """Estimates for a sequence of operations run one after another.

    ``time_s`` assumes each op overlaps its own memory traffic with its arithmetic;
    ``time_no_overlap_s`` assumes nothing overlaps (compute, then memory, op by op).

    Parameters
    ----------
    steps : tuple of Estimate
        One estimate per operation, in order.
    """

    steps: tuple[Estimate, ...]

    @property
    def time_s(self) -> float:
        """The steps' times added up, each overlapping its compute and memory, s."""
        return math.fsum(step.time_s for step in self.steps)

    @property
    def time_no_overlap_s(self) -> float:
        """Every step's compute time plus its memory time, added up, s."""
        return math.fsum(step.compute_time_s + step.memory_time_s for step in self.steps)

    @property
    def flops(self) -> float:
        """The steps' FLOPs added up, FLOP."""
        return math.fsum(step.cost.flops for step in self.steps)

    @property
    def bytes(self) -> float:
        """The steps' bytes moved added up, B."""
        return math.fsum(step.cost.bytes for step in self.steps)

    def share(self) -> list[tuple[str, float]]:
        """Each op's label and its share of ``time_s``: where the time goes.

        Returns
        -------
        list of (str, float)
            One ``(label, share)`` per step, in order; the share is a fraction of
            ``time_s`` (all 0 when it is 0).
        """
        total = self.time_s
        return [(s.cost.label, s.time_s / total if total else 0.0) for s in self.steps]

    def __repr__(self) -> str:
        top = max(self.share(), key=lambda pair: pair[1], default=("none", 0.0))
        return shown(
            "SequenceEstimate",
            steps=str(len(self.steps)),
            time=seconds(self.time_s),
            time_no_overlap=seconds(self.time_no_overlap_s),
            largest=f"{words(top[0] or 'unlabelled', 80)} ({percent(top[1])})",
            device=repr(self.steps[0].device) if self.steps else "None",
        )


def estimate_sequence(
    costs: Iterable[Cost],
    device: DeviceLike,
    *,
    dtype: str | None = None,
    ceiling: str | float = "nameplate",
) -> SequenceEstimate:
    """Estimate each op of a sequence on one device and add them up.

    Parameters
    ----------
    costs : iterable of ops.Cost
        The operations, in the order they run (at least one).
    device : str or hardware.Device
        A catalogue name or a device you built.
    dtype : str, optional
        Which peak to use for every op; defaults to each cost's own dtype.
    ceiling : {"nameplate", "measured"} or float, optional
        Which roof: the datasheet's (the default), the best published measurements, or
        a fraction of the datasheet's (see :func:`ceilings`).

    Returns
    -------
    SequenceEstimate
        One :class:`Estimate` per op, and their totals.

    Raises
    ------
    TypeError
        If ``costs`` is not an iterable of :class:`ops.Cost`.
    ValueError
        If ``costs`` is empty, or an op fails as in :func:`estimate`.

    Examples
    --------
    >>> from perfmodel import ops
    >>> seq = estimate_sequence(
    ...     [ops.matmul(512, 512, 512), ops.elementwise(512 * 512)], "GPU circa 2015"
    ... )
    >>> [step.bound for step in seq.steps]
    ['compute', 'memory']
    """
    given: object = costs
    if isinstance(given, (str, bytes)) or not isinstance(given, Iterable):
        raise TypeError(f"`costs` must be an iterable of ops.Cost (got {type(costs).__name__}).")
    steps = tuple(estimate(cost, device, dtype=dtype, ceiling=ceiling) for cost in costs)
    if not steps:
        raise ValueError("`costs` must hold at least one ops.Cost.")
    return SequenceEstimate(steps=steps)
