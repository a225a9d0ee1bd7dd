"""This machine's link between two MPI ranks: α and B fitted, and a held-out size predicted.

Runs ``mpiexec -n 2 python -m perfmodel.comms.bench`` (the full sizes, 8 B to 128 MiB, with
256 MiB held out) ``--runs`` times and prints, per run and collective, the fit over every
size and the fit above the last-level cache, each with its typical miss and its error on the
held-out size. The spread between runs is the machine's own noise.

    .venv/bin/python benchmarks/comms.py --runs 3
"""

from __future__ import annotations

import argparse
import statistics

from perfmodel.comms import bench
from perfmodel.measure import empirical


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    cache = empirical.cpu_caches()[-1][1]
    errors: dict[str, list[float]] = {}
    for run in range(1, args.runs + 1):
        result = bench.run(2, quick=False)
        large = bench.read_results(result.raw, fit_from=cache)
        print(f"run {run}: {result.library}, last-level cache {cache / 2**20:.0f} MiB")
        for collective, fit in result.fits.items():
            above = large.fits[collective]
            held, held_above = result.held_out[collective], large.held_out[collective]
            errors.setdefault(collective, []).append(held_above.error)
            print(
                f"  {collective:>9}: all sizes α {fit.latency * 1e6:5.2f} µs, B "
                f"{fit.bandwidth / 1e9:5.2f} GB/s, rms {fit.rms_relative_error:4.0%}, "
                f"256 MiB {held.error:+5.0%} | above the cache B {above.bandwidth / 1e9:5.2f} "
                f"GB/s, rms {above.rms_relative_error:4.0%}, 256 MiB {held_above.error:+5.0%}"
            )
    for collective, values in errors.items():
        worst = max(values, key=abs)
        median = statistics.median(values)
        print(
            f"{collective:>9}: held-out error above the cache, median {median:+.0%}, "
            f"worst {worst:+.0%} over {len(values)} runs"
        )


if __name__ == "__main__":
    main()
