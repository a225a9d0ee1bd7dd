"""Put this machine in the catalogue: measure its roofline and describe it as a Device.

:func:`profile_machine` runs the micro-benchmarks of :mod:`perfmodel.measure.microbench` (matmul per
dtype, STREAM, one working set per memory level) and returns a :class:`MachineProfile`: a
:class:`~perfmodel.hardware.Device` like the catalogue's, and the kernels it measured.
:func:`empirical_roofline` returns just the device. Its nameplate figures are this CPU's
nominal peaks, derived as the catalogue derives CPUs' (cores x clock x FLOPs per cycle),
and its ``measured_*`` figures are what the benchmarks reached, so
``roofline.estimate(op, machine, ceiling="measured")`` predicts with the measured roof.
:func:`perfmodel.hardware.save` writes it to TOML and :func:`perfmodel.hardware.load` reads
it back in any later lecture.

The nominal peak is an estimate, with its assumptions written into the device's notes:
the cores this process may use, the clock the kernel reports, and two fused multiply-add
units per core of the widest vector width the CPU advertises (AVX-512, AVX2 with FMA, or
SSE2). Where the measurement beats that estimate, the estimate was wrong for this CPU; the
nominal figure is then raised to the measurement and the notes say so.
"""

from __future__ import annotations

import functools
import os
import platform
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfmodel._validate import choice, count, flag, text
from perfmodel.hardware import Device
from perfmodel.measure import microbench
from perfmodel.measure.microbench import KernelResult
from perfmodel.measure.timing import combine
from perfmodel.units import format_quantity

__all__ = [
    "MachineProfile",
    "RoofReading",
    "cpu_caches",
    "cpu_name",
    "cpu_nominal",
    "empirical_roofline",
    "fraction_of_roof",
    "profile_machine",
    "read_roof",
    "usable_cores",
    "working_set_sweep",
]

#: The kernels a roofline plot places, by kind, and what each kind is called in words.
ROOF_KINDS = {"matmul": "matmuls", "stream": "STREAM kernels", "elementwise": "elementwise sweep"}

_FALLBACK_CACHES = (("L1", 32 * 1024), ("L2", 512 * 1024), ("L3", 8 * 1024 * 1024))


@dataclass(frozen=True, slots=True)
class Nominal:
    """This CPU's nominal compute: ``cores x clock_hz x flops_per_cycle[dtype]``."""

    cores: int
    clock_hz: float
    flops_per_cycle: dict[str, int]
    assumptions: str

    def peak(self, dtype: str) -> float:
        return self.cores * self.clock_hz * self.flops_per_cycle[dtype]


def cpu_name() -> str:
    """The CPU's model name, as /proc/cpuinfo gives it, else as :mod:`platform` does.

    Returns
    -------
    str
        ``"AMD EPYC 9654"``...; ``platform.processor()`` where there is no /proc/cpuinfo
        (possibly empty).
    """
    return _cpuinfo().get("model name") or platform.processor()


def _cpuinfo() -> dict[str, str]:
    """The first processor's fields from /proc/cpuinfo (empty where there is none)."""
    try:
        lines = Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines()
    except OSError:
        return {}
    info: dict[str, str] = {}
    for line in lines:
        if not line.strip():
            break
        key, _, value = line.partition(":")
        info[key.strip()] = value.strip()
    return info


def usable_cores() -> int:
    """The cores this process may run on (its CPU affinity where the OS has one).

    Returns
    -------
    int
        Cores, count (at least 1); all the OS reports where there is no affinity.

    Examples
    --------
    >>> usable_cores() >= 1
    True
    """
    usable = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else None
    return len(usable) if usable else os.cpu_count() or 1


def cpu_nominal() -> Nominal:
    """This CPU's nominal peak per dtype, with the assumptions it rests on.

    Returns
    -------
    Nominal
        Usable cores, the clock (Hz), fp64 and fp32 FLOPs per cycle per core, and the
        assumptions in words; ``peak(dtype)`` multiplies them, FLOP/s.

    Examples
    --------
    >>> nominal = cpu_nominal()
    >>> nominal.peak("fp32") == 2 * nominal.peak("fp64")
    True
    """
    cores = usable_cores()
    info = _cpuinfo()
    flags = set(info.get("flags", "").split())
    if "avx512f" in flags:
        lanes, isa = 8, "AVX-512"
    elif {"avx2", "fma"} <= flags:
        lanes, isa = 4, "AVX2 with FMA"
    else:
        lanes, isa = 2, "SSE2 (no wider vector flag found)"
    clock = float(info.get("cpu MHz", "0") or 0) * 1e6
    if clock <= 0:
        clock = 3.0e9
        clock_source = "an assumed 3 GHz (no clock reported)"
    else:
        clock_source = f"{clock / 1e9:.2f} GHz, as /proc/cpuinfo reports it"
    per_cycle = 2 * 2 * lanes  # two FMA units, each lanes x (multiply + add)
    assumptions = (
        f"Nominal: {cores} usable cores x {clock_source} x {per_cycle} fp64 FLOP/cycle "
        f"({isa}, two FMA units per core assumed); fp32 twice that."
    )
    return Nominal(
        cores=cores,
        clock_hz=clock,
        flops_per_cycle={"fp64": per_cycle, "fp32": 2 * per_cycle},
        assumptions=assumptions,
    )


def cpu_caches() -> list[tuple[str, int]]:
    """The data caches of CPU 0, fastest first: ``[("L1", bytes), ("L2", bytes), ...]``.

    Read from Linux's sysfs; elsewhere a typical 32 KB / 512 KB / 8 MB hierarchy.

    Returns
    -------
    list of tuple of (str, int)
        Each level's name (``"L1"``, ...) and size, B, by level; a unified cache counts as
        a data cache.
    """
    root = Path("/sys/devices/system/cpu/cpu0/cache")
    found: dict[int, int] = {}
    for index in sorted(root.glob("index*")):
        try:
            kind = (index / "type").read_text().strip()
            level = int((index / "level").read_text())
            size = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        if kind == "Instruction":
            continue
        scale = {"K": 1024, "M": 1024**2, "G": 1024**3}.get(size[-1:], 1)
        found[level] = int(size.rstrip("KMG")) * scale
    if not found:
        return list(_FALLBACK_CACHES)
    return [(f"L{level}", found[level]) for level in sorted(found)]


@dataclass(frozen=True, slots=True)
class MachineProfile:
    """What :func:`profile_machine` measured: the device, and each kernel behind it.

    Parameters
    ----------
    device : hardware.Device
        This machine, with its nominal and measured ceilings and memory levels.
    kernels : tuple of KernelResult
        Every kernel measured, in the order measured: the ceilings (matmuls, STREAM), then
        the memory levels and the other kernels.
    """

    device: Device
    kernels: tuple[KernelResult, ...]


def fraction_of_roof(device: Device, kernel: KernelResult, *, dtype: str = "fp64") -> float:
    """Achieved FLOP/s over what the measured roof allows at the kernel's intensity: its
    fraction of the *speed of light* (1.0 on the roof).

    Parameters
    ----------
    device : hardware.Device
        A machine with a measured peak for ``dtype``; its ``measured_memory_bandwidth``
        is the sloped roof, or its nameplate ``memory_bandwidth`` when that is not set.
    kernel : microbench.KernelResult
        A kernel with FLOPs.
    dtype : str
        Whose measured peak is the flat roof.

    Returns
    -------
    float
        ``flops_per_s / min(peak, intensity * bandwidth)``, fraction (1.0 on the roof, above
        it when the kernel beat the measured roof; 0.0 when the roof is 0).

    Examples
    --------
    >>> from perfmodel import ops
    >>> from perfmodel.measure.timing import Measurement
    >>> machine = Device(name="toy", kind="cpu", peak_flops_by_dtype={"fp64": 1e11},
    ...                  memory_bandwidth=1e10, measured_flops_by_dtype={"fp64": 1e11},
    ...                  measured_memory_bandwidth=1e10, measured_source="a toy", source="a toy")
    >>> cost = ops.elementwise(1000, inputs=2, dtype="fp64")   # 1000 FLOPs, 24 kB
    >>> half = KernelResult(cost, Measurement(samples_s=[4.8e-6], inner_loops=1), "stream", "add")
    >>> round(fraction_of_roof(machine, half), 2)   # 1000 FLOPs in 4.8 us, roof 2.4 us
    0.5
    """
    if not isinstance(device, Device):
        raise TypeError(f"`device` must be a hardware.Device (got {type(device).__name__}).")
    if not isinstance(kernel, KernelResult):
        raise TypeError(f"`kernel` must be a KernelResult (got {type(kernel).__name__}).")
    bandwidth = device.measured_memory_bandwidth or device.memory_bandwidth
    roof = min(device.measured_flops(dtype), kernel.intensity * bandwidth)
    return kernel.flops_per_s / roof if roof > 0 else 0.0


@dataclass(frozen=True, slots=True)
class RoofReading:
    """Where the kernels of one kind sit under a measured roof (see :func:`read_roof`).

    Parameters
    ----------
    kind : str
        ``"matmul"``, ``"stream"`` or ``"elementwise"``.
    kernels : tuple of (str, float, float)
        Each kernel's name, its fraction of the roof (:func:`fraction_of_roof`, fraction) and
        its achieved FLOP/s, by intensity.
    disturbed : tuple of str
        The kernels measured on a disturbed machine (noisy or busy): read nothing from them.
    peak : float
        The measured flat roof, FLOP/s.
    """

    kind: str
    kernels: tuple[tuple[str, float, float], ...]
    disturbed: tuple[str, ...]
    peak: float

    @property
    def trusted(self) -> dict[str, float]:
        """The fractions of the roof of the kernels measured on a quiet machine."""
        return {name: share for name, share, _ in self.kernels if name not in self.disturbed}

    @property
    def best_share_of_peak(self) -> float:
        """The kind's best FLOP/s over the measured flat roof, fraction."""
        return max(rate for _, _, rate in self.kernels) / self.peak

    def __str__(self) -> str:
        if self.kind == "elementwise":  # the sweep is read by its rate: it climbs, then flattens
            shares = ", ".join(
                f"{name} {format_quantity(rate, 'FLOP/s')} ({share:.0%})"
                for name, share, rate in self.kernels
            )
            line = (f"{ROOF_KINDS[self.kind]}: {shares} of the measured roof; the best "
                    f"{self.best_share_of_peak:.0%} of the flat roof")  # fmt: skip
        else:
            shares = ", ".join(f"{name} {share:.0%}" for name, share, _ in self.kernels)
            line = f"{ROOF_KINDS[self.kind]}: {shares} of the measured roof"
        if self.disturbed:
            line += f" (disturbed, read nothing from: {', '.join(self.disturbed)})"
        return line


def read_roof(profile: MachineProfile, kind: str, *, dtype: str = "fp64") -> RoofReading:
    """The kernels of ``kind`` that :func:`perfmodel.plotting.empirical.empirical_roofline_plot`
    places, each with its fraction of the measured roof, and which were disturbed.

    Parameters
    ----------
    profile : MachineProfile
        From :func:`profile_machine`.
    kind : str
        One of ``"matmul"``, ``"stream"`` and ``"elementwise"``.
    dtype : str
        The kernels' dtype and whose peak is the flat roof.

    Returns
    -------
    RoofReading
        Printed, one line: ``"matmuls: matmul 256 72%, ... of the measured roof"``.

    Raises
    ------
    ValueError
        If the profile holds no kernel of ``kind`` with FLOPs in ``dtype``.
    """
    if not isinstance(profile, MachineProfile):
        raise TypeError(
            f"`profile` must be a MachineProfile from profile_machine "
            f"(got {type(profile).__name__})."
        )
    kind = choice("kind", kind, tuple(ROOF_KINDS))
    kernels = sorted(
        (k for k in profile.kernels if k.kind == kind and k.cost.dtype == dtype and k.cost.flops),
        key=lambda k: k.intensity,
    )
    if not kernels:
        raise ValueError(f"`profile` holds no {kind} kernel with FLOPs in {dtype}.")
    device = profile.device
    return RoofReading(
        kind=kind,
        kernels=tuple(
            (k.name, fraction_of_roof(device, k, dtype=dtype), k.flops_per_s) for k in kernels
        ),
        disturbed=tuple(k.name for k in kernels if k.measurement.doubt),
        peak=device.measured_flops(dtype),
    )


def profile_machine(
    *, quick: bool = True, name: str = "This machine", progress: bool = True
) -> MachineProfile:
    """Measure this machine's roofline: matmul peaks, STREAM bandwidth, one level per cache,
    and, kept in ``kernels``, the Empirical Roofline Toolkit's elementwise sweep, an ``exp``
    kernel, a broadcast kernel and tiny adds and matmuls (what
    :func:`perfmodel.measure.calibration.calibrate` needs).

    Matmul (BLAS) and STREAM run on every core the process may use: they give the
    machine's ceilings. Each ceiling is the best of several rounds, interleaved (every
    ceiling kernel once, then again), so that a moment when the machine was busy, or the
    clock low, lowers one round of every kernel rather than every round of one. The memory
    levels and the elementwise kernels run on one thread,
    as numpy's own elementwise loops do: ``memory_levels`` is what one core sees.

    Parameters
    ----------
    quick : bool
        Small sizes and few repeats (about 10 s on 2 cores); ``False`` for larger matmuls,
        larger STREAM arrays and more repeats (about a minute).
    name : str
        The device's name.
    progress : bool
        Show a progress bar.

    Returns
    -------
    MachineProfile
        The device (nominal and measured ceilings, one bandwidth per memory level) and
        every kernel measured.
    """
    quick = flag("quick", quick)
    name = text("name", name)
    from tqdm.auto import tqdm

    timing: dict[str, Any] = (
        {"repeats": 3, "min_time_s": 0.05} if quick else {"repeats": 7, "min_time_s": 0.3}
    )
    rounds = 3
    # each round of a ceiling takes a share of the samples one measurement would
    per_round = {"repeats": 1, "min_time_s": timing["min_time_s"] / rounds}
    sizes = (256, 512, 1024) if quick else (256, 512, 1024, 2048, 4096)
    stream_n = 4_000_000 if quick else 32_000_000
    ert_n = 1_000_000 if quick else 8_000_000
    caches = cpu_caches()
    cores = cpu_nominal().cores
    levels_to_measure = [(level, size // 2) for level, size in caches]
    levels_to_measure.append(("DRAM", 4 * caches[-1][1]))
    # (what it feeds: a dtype's peak, "bandwidth" or a memory level; how to measure it)
    ceilings: list[tuple[str, Callable[[], KernelResult]]] = [
        *(
            (
                dtype,
                functools.partial(microbench.matmul, n, dtype=dtype, threads=cores, **per_round),
            )
            for dtype in ("fp64", "fp32")
            for n in sizes
        ),
        *(  # main memory on every core: the machine's ceiling
            (
                "bandwidth",
                functools.partial(microbench.stream, kind, stream_n, threads=cores, **per_round),
            )
            for kind in microbench.STREAM_KERNELS
        ),
    ]
    steps: list[tuple[str, Callable[[], KernelResult]]] = [
        *(
            (level, functools.partial(microbench.working_set, nbytes, **timing))
            for level, nbytes in levels_to_measure
        ),
        *(  # the Empirical Roofline Toolkit's sweep: up the sloped roof towards the flat one
            ("kernel", functools.partial(microbench.elementwise_roof, ert_n, r, **timing))
            for r in (1, 4, 16, 64)
        ),
        ("kernel", functools.partial(microbench.exponential, **timing)),
        ("kernel", functools.partial(microbench.broadcast, **timing)),
        *(  # the overhead regime: adds and matmuls too small for either roof
            ("kernel", functools.partial(microbench.tiny_op, n, **timing))
            for n in (1, 64, 1024, 4096)
        ),
        *(("kernel", functools.partial(microbench.tiny_matmul, n, **timing)) for n in (1, 2, 4, 8)),
    ]
    bar = tqdm(total=rounds * len(ceilings) + len(steps), desc="measuring this machine",
               disable=not progress)  # fmt: skip
    each_round: list[list[KernelResult]] = [[] for _ in ceilings]
    for _ in range(rounds):
        for index, (_, run) in enumerate(ceilings):
            each_round[index].append(run())
            bar.update()
    results = [
        (feeds, _best_of(rounds_measured))
        for (feeds, _), rounds_measured in zip(ceilings, each_round, strict=True)
    ]
    for feeds, run in steps:
        results.append((feeds, run()))
        bar.update()
    bar.close()
    kernels: list[KernelResult] = []
    peaks: dict[str, float] = {}
    levels: dict[str, float] = {}
    bandwidth = 0.0
    for feeds, result in results:
        kernels.append(result)
        if feeds in ("fp64", "fp32"):
            peaks[feeds] = max(peaks.get(feeds, 0.0), result.flops_per_s)
        elif feeds == "bandwidth":
            bandwidth = max(bandwidth, result.bytes_per_s)
        elif feeds != "kernel":
            levels[feeds] = result.bytes_per_s
    nominal = cpu_nominal()
    notes = [
        nominal.assumptions,
        "Memory bandwidth: no nominal figure can be read from inside the machine, so the "
        "nameplate is the best measurement too.",
    ]
    nameplate = {dtype: nominal.peak(dtype) for dtype in peaks}
    for dtype, measured in peaks.items():
        if measured > nameplate[dtype]:
            nameplate[dtype] = measured
            notes.append(
                f"The {dtype} measurement beat that estimate, so the nominal is the measurement."
            )
    device = Device(
        name=name,
        kind="cpu",
        peak_flops_by_dtype=nameplate,
        memory_bandwidth=max(bandwidth, levels.get("DRAM", 0.0)),
        measured_flops_by_dtype=peaks,
        measured_memory_bandwidth=max(bandwidth, levels.get("DRAM", 0.0)),
        measured_source=(
            f"perfmodel.measure.empirical.profile_machine(quick={quick}): the best numpy "
            f"matmul per dtype and the best STREAM kernel on {cores} thread(s), each at its "
            f"fastest sample of {rounds} interleaved rounds"
        ),
        memory_levels=levels,
        source="measured on this machine (lecture 06)",
        notes=" ".join(notes),
    )
    return MachineProfile(device=device, kernels=tuple(kernels))


def _best_of(rounds: list[KernelResult]) -> KernelResult:
    """One kernel measured in several rounds, as one result holding every round's samples."""
    first = rounds[0]
    measurement = combine([r.measurement for r in rounds])
    return KernelResult(first.cost, measurement, first.kind, first.name)


def empirical_roofline(
    *, quick: bool = True, name: str = "This machine", progress: bool = True
) -> Device:
    """This machine as a :class:`~perfmodel.hardware.Device` (see :func:`profile_machine`).

    Parameters
    ----------
    quick : bool
        Small sizes and few repeats; ``False`` for larger ones and more repeats.
    name : str
        The device's name.
    progress : bool
        Show a progress bar.

    Returns
    -------
    hardware.Device
        The device of :func:`profile_machine`'s profile; its kernels are dropped.
    """
    return profile_machine(quick=quick, name=name, progress=progress).device


def working_set_sweep(
    largest: int = 256 * 1024**2,
    *,
    points: int = 12,
    smallest: int = 8 * 1024,
    progress: bool = True,
    **timing: Any,
) -> list[KernelResult]:
    """One-core bandwidth of :func:`perfmodel.measure.microbench.working_set` from ``smallest`` to
    ``largest`` bytes, ``points`` sizes evenly spaced in log: a staircase, one step per
    memory level.

    Shows a progress bar. Ctrl-C (or the notebook's stop button) ends the sweep early and
    returns the sizes measured so far.

    Parameters
    ----------
    largest : int
        The largest working set, B (at least ``smallest``).
    points : int
        Sizes, count (at least 2); fewer come back when rounding makes two equal.
    smallest : int
        The smallest working set, B (at least 64).
    progress : bool
        Show a progress bar.
    **timing
        Passed to :func:`perfmodel.measure.timing.measure`; by default ``repeats=3`` and
        ``min_time_s=0.02``.

    Returns
    -------
    list of KernelResult
        One :func:`perfmodel.measure.microbench.working_set` per size, ascending (each size
        rounded down to a multiple of 16 B); only those measured when interrupted.

    Examples
    --------
    >>> kernels = working_set_sweep(256 * 1024, points=3, progress=False, repeats=2,
    ...                             min_time_s=0)
    >>> [k.measurement.sizes["bytes"] for k in kernels]
    [8192, 46336, 262144]
    """
    import numpy as np
    from tqdm.auto import tqdm

    smallest = count("smallest", smallest, minimum=64)
    largest = count("largest", largest, minimum=smallest)
    points = count("points", points, minimum=2)
    options = {"repeats": 3, "min_time_s": 0.02, **timing}
    sizes = sorted({int(x) // 16 * 16 for x in np.geomspace(smallest, largest, points)})
    kernels: list[KernelResult] = []
    try:
        for nbytes in tqdm(sizes, desc="working sets", disable=not progress):
            kernels.append(microbench.working_set(nbytes, **options))
    except KeyboardInterrupt:
        pass  # keep what was measured
    return kernels
