"""Collectives predicted against published nccl-tests runs, then this machine's own link.

First two tables, no MPI needed: every published H100 and A100 bus bandwidth of
:data:`perfmodel.comms.published.PUBLISHED_BUSBW` (one node, then several) beside what the
models predict at the measured and the nameplate ceiling, across nodes as NCCL's ring over
rails and as the hierarchical all-reduce pipelined and end to end, and all three at 2, 4, 8
and 16 H100 nodes. The goal (issue 27):
within 10% in a node (ring and NVLS), within 15% across 2-16 InfiniBand nodes.

Then this machine's link between two MPI ranks: α and B fitted, and a held-out size predicted.

Runs ``mpiexec -n 2 python -m perfmodel.comms.bench`` (the full sizes, 8 B to 128 MiB, with
256 MiB held out) ``--runs`` times and prints, per run and collective, the fit over every
size and the fit above the last-level cache, each with its typical miss and its error on the
held-out size. The spread between runs is the machine's own noise.

    .venv/bin/python benchmarks/comms.py --runs 3      # --runs 0: the published tables only
"""

from __future__ import annotations

import argparse
import statistics

from perfmodel.comms import bench
from perfmodel.comms.published import (
    ACROSS,
    PUBLISHED_BUSBW,
    across_nodes_busbw,
    predicted_busbw,
)
from perfmodel.measure import empirical


def published_tables() -> None:
    """Print the published runs beside the predictions, in a node and across nodes."""
    print("In one node: busbw in GB/s; published | predicted at the measured ceiling (ratio), "
          "at the nameplate")  # fmt: skip
    for row in (r for r in PUBLISHED_BUSBW if r.nodes == 1):
        measured, nameplate = (predicted_busbw(row, ceiling=c) for c in ("measured", "nameplate"))
        print(
            f"  {row.system[:38]:38s} {row.collective:>14s} {row.algorithm:>4s} "
            f"{row.busbw / 1e9:5.0f} | {measured / 1e9:5.0f} ({measured / row.busbw:4.2f}) "
            f"{nameplate / 1e9:5.0f}  {row.note}"
        )
    print("Across nodes: busbw in GB/s; published | predicted, NCCL's ring over rails (ratio), "
          "the hierarchy pipelined, end to end")  # fmt: skip
    for row in (r for r in PUBLISHED_BUSBW if r.nodes > 1):
        ring, piped, summed = (predicted_busbw(row, across=a) for a in ACROSS)
        print(
            f"  {row.system[:40]:40s} {row.nodes:>2d} nodes {row.busbw / 1e9:5.0f} | "
            f"{ring / 1e9:5.0f} ({ring / row.busbw:4.2f}) {piped / 1e9:5.0f} {summed / 1e9:5.0f}"
            f"  {row.note}"
        )
    print("8x H100 + 8x NDR per node, all-reduce of 1 GiB, busbw GB/s (measured ceiling):")
    for nodes in (2, 4, 8, 16):
        busbw = across_nodes_busbw(nodes)
        print(
            f"  {nodes:>2d} nodes: ring {busbw['ring'] / 1e9:4.0f}, "
            f"pipelined {busbw['pipelined'] / 1e9:4.0f}, "
            f"end to end {busbw['end_to_end'] / 1e9:4.0f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    published_tables()
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
