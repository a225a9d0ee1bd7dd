"""Measure this machine's kernel rates with the probes, and keep them.

Measuring is interleaved: the rounds go over all probes in turn, so a passing disturbance
lands on many probes a little rather than on one probe a lot. In each round a probe gets a
session of its own, as a model runs alone: a few untimed runs (its weights into cache, its
threads awake), the timed runs, then the session closes, so that its threads do not spin on
into the next probe's cores (sessions left open made probes swing 2x). Each probe keeps the
median of all its runs, their spread, and the share of the CPUs other programs used meanwhile
(:class:`~perfmodel.measure.timing.Measurement`); a reference probe timed in every round lets
:func:`drift` tell later whether the machine still runs at the speed it was measured at.
:func:`cached_kernels` keeps the rates per machine and software (:func:`fingerprint`) and
replaces them only with better ones.

Examples
--------
>>> rates = measure_kernels(kinds=("elementwise",), rounds=1, runs=1, progress=False)
>>> curve = rates.curves["elementwise"]
>>> curve.unit, len(curve.points) > 2, rates.start_s > 0
('B', True, True)
"""

from __future__ import annotations

import hashlib
import os
import platform
import statistics
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from perfmodel._validate import choice, count, flag
from perfmodel.capstone.engine import OPTIMIZATIONS
from perfmodel.capstone.kernels import COMPUTE_KINDS, Curve, KernelRates
from perfmodel.capstone.onnx_ops import KERNEL_KINDS
from perfmodel.capstone.probes import (
    UNCHANGED,
    last_level_cache,
    probes,
    reference_model,
    start_model,
    tiny_adds,
)

__all__ = ["FORMAT", "cached_kernels", "drift", "fingerprint", "measure_kernels"]

#: The version of the kept rates' file: a new one measures again.
FORMAT = 1


#: One-element Adds in the chain that measures the engine's cost per node, count.
TINY_NODES = 64


#: Untimed runs of each probe before its timed ones, in each round, count.
WARMUP = 3


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
    from perfmodel.measure.load import OthersWatch
    from perfmodel.measure.timing import measure

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
    tiny_model = tiny_adds(TINY_NODES)
    reference: list[float] = []
    reference_feed = {"x": np.ones((128, 128), dtype=np.float32)}
    reference_chain = reference_model()
    loop: Iterable[int] = range(rounds)
    if progress:
        from tqdm.auto import tqdm

        loop = tqdm(loop, desc="kernel probes", unit="round")
    with OthersWatch() as watch:  # one reading over the whole calibration
        for _ in loop:
            starts += timed(start_model(), one).samples_s
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
        cache_bytes=last_level_cache(),
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

    from perfmodel.measure.empirical import cpu_name, usable_cores

    threads = usable_cores() if threads is None else count("threads", threads)
    parts = [
        cpu_name(),
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
