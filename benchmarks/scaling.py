"""This machine's thread scaling, fitted: strong and weak, matmul and ``sin``, and the three
serial bottlenecks of lecture 08, each with its fitted fraction and 95% interval.

Run from the repository root::

    .venv/bin/python benchmarks/scaling.py          # about 10 s on 2 cores
"""

from __future__ import annotations

import os
import tempfile

from perfmodel import scaling
from perfmodel.measure import parallel
from perfmodel.measure.empirical import usable_cores


def main() -> None:
    cores = usable_cores()
    threads = list(range(1, max(cores, 2) + 1))
    top = threads[-1]
    print(f"{cores} usable cores; thread counts {threads}; every repeat is a point of the fit")
    scratch = tempfile.mkdtemp()
    strong = {
        "strong, matmul 1024": parallel.matmul_work(1024),
        "strong, sin 4M": parallel.elementwise_work(4_000_000),
        "bottleneck: load, then compute": parallel.io_then_compute_work(
            4_000_000, os.path.join(scratch, "x.npy")
        ),
        "bottleneck: half under a lock": parallel.locked_work(4_000_000, held=0.5),
        "bottleneck: memory-bound add": parallel.memory_bound_work(16_000_000),
    }
    for name, make in strong.items():
        run = parallel.measure_scaling(make, threads, label=name, progress=False)
        fit = scaling.fit_amdahl(run.processors, run.times)
        print(f"{name:<32} speedup {run.speedup(top):5.2f} on {top}; parallel fraction "
              f"{fit.value:.3f} [{fit.low:.3f}, {fit.high:.3f}]")  # fmt: skip
    weak = {
        "weak, matmul 512 per thread": parallel.matmul_work(512, weak=True),
        "weak, sin 2M per thread": parallel.elementwise_work(2_000_000, weak=True),
    }
    for name, make in weak.items():
        run = parallel.measure_scaling(make, threads, label=name, progress=False)
        fit = scaling.fit_gustafson(*run.scaled_points())
        print(f"{name:<32} scaled speedup {run.scaled_speedup(top):5.2f} on {top}; serial "
              f"fraction {fit.value:.3f} [{fit.low:.3f}, {fit.high:.3f}]")  # fmt: skip


if __name__ == "__main__":
    main()
