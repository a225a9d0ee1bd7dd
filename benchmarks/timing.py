"""Measure the timing harness itself, side by side with references, in one run.

* bandwidth: the best STREAM kernel through ``perfmodel.measure.microbench`` against a STREAM triad
  compiled from ``benchmarks/c/triad.c`` (when a C compiler is on the PATH), on 1 thread and
  on every core (goal: at least 0.80 of it);
* matmul: FLOP/s through ``perfmodel.measure.timing.measure`` against the best of a plain
  ``time.perf_counter`` loop around ``numpy.matmul`` (goal: at least 0.90);
* measured peaks against this CPU's nominal peak (``perfmodel.measure.empirical.cpu_nominal``);
* the calibrated model's median absolute error on the held-out ops of
  ``perfmodel.measure.held_out`` (goal: at most 0.25), next to the plain roofline's;
* the run-to-run spread of each figure over ``--runs`` runs (max / min).

Run from the repository root::

    .venv/bin/python benchmarks/timing.py            # about a minute on 2 cores
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np

from perfmodel.measure import calibration, held_out, microbench
from perfmodel.measure.empirical import cpu_nominal, profile_machine, usable_cores
from perfmodel.units import format_quantity

HERE = Path(__file__).resolve().parent


def c_triad(threads: int, n: int, binary: Path) -> float:
    """Bytes/s of the compiled STREAM triad on ``threads`` threads."""
    env = {**os.environ, "OMP_NUM_THREADS": str(threads)}
    out = subprocess.run([str(binary), str(n), "10"], env=env, capture_output=True, text=True)
    out.check_returncode()
    return float(out.stdout.split()[0])


def harness_bandwidth(threads: int, n: int) -> float:
    """The best STREAM kernel's bytes/s through the harness."""
    return max(
        microbench.stream(kind, n, threads=threads, repeats=5, min_time_s=0.2).bytes_per_s
        for kind in microbench.STREAM_KERNELS
    )


def raw_matmul(n: int, repeats: int = 10) -> float:
    """FLOP/s of ``numpy.matmul`` timed the plainest way: the best of a perf_counter loop."""
    rng = np.random.default_rng(0)
    a, b = rng.random((n, n)), rng.random((n, n))
    out = np.empty((n, n))
    np.matmul(a, b, out=out)
    best = min(_timed(lambda: np.matmul(a, b, out=out)) for _ in range(repeats))
    return 2 * n**3 / best


def _timed(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="runs of each figure (default 5)")
    parser.add_argument("--stream-n", type=int, default=20_000_000, help="STREAM array length")
    parser.add_argument("--matmul-n", type=int, default=1024, help="matmul size")
    args = parser.parse_args()
    cores = usable_cores()
    figures: dict[str, list[float]] = {}
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    with tempfile.TemporaryDirectory() as scratch:
        binary = Path(scratch) / "triad"
        if compiler:
            flags = ["-O3", "-march=native", "-fopenmp"]
            built = subprocess.run(
                [compiler, *flags, str(HERE / "c" / "triad.c"), "-o", str(binary)]
            )
            if built.returncode != 0:  # no OpenMP: one thread only
                subprocess.run([compiler, "-O3", str(HERE / "c" / "triad.c"), "-o", str(binary)],
                               check=True)  # fmt: skip
        for _ in range(args.runs):
            for threads in sorted({1, cores}):
                harness = harness_bandwidth(threads, args.stream_n)
                figures.setdefault(f"harness bandwidth, {threads} thread(s)", []).append(harness)
                if compiler:
                    reference = c_triad(threads, args.stream_n, binary)
                    figures.setdefault(f"C triad, {threads} thread(s)", []).append(reference)
                    figures.setdefault(f"ratio harness / C, {threads} thread(s)", []).append(
                        harness / reference
                    )
            harness = microbench.matmul(args.matmul_n, repeats=10, min_time_s=0.5).flops_per_s
            raw = raw_matmul(args.matmul_n)
            figures.setdefault("harness matmul fp64", []).append(harness)
            figures.setdefault("raw numpy matmul fp64", []).append(raw)
            figures.setdefault("ratio harness / raw matmul", []).append(harness / raw)
            profile = profile_machine(quick=True, progress=False)
            comparison = held_out.predict_vs_measure(calibration.calibrate(profile), progress=False)
            figures.setdefault("calibrated model median |error|", []).append(
                comparison.median_abs_error
            )
            figures.setdefault("plain roofline median |error|", []).append(
                comparison.roofline_median_abs_error
            )
            for row in comparison.rows:
                figures.setdefault(f"ratio {row.name}", []).append(row.ratio)
    nominal = cpu_nominal()
    print(nominal.assumptions)
    print(f"{'figure':<44} {'median':>14} {'spread (max/min)':>17}  runs")
    for name, values in figures.items():
        median = statistics.median(values)
        unit = "B/s" if "bandwidth" in name or "triad" in name else "FLOP/s"
        plain = name.startswith("ratio") or "error" in name
        shown = f"{median:.3f}" if plain else format_quantity(median, unit)
        runs = " ".join(f"{v:.3g}" for v in values) if plain else ""
        print(f"{name:<44} {shown:>14} {max(values) / min(values):>17.3f}  {runs}")
    peak = statistics.median(figures["harness matmul fp64"])
    print(
        f"measured fp64 matmul / nominal fp64 peak: {peak / nominal.peak('fp64'):.2f} "
        f"({format_quantity(peak, 'FLOP/s')} of {format_quantity(nominal.peak('fp64'), 'FLOP/s')})"
    )


if __name__ == "__main__":
    main()
