"""Does ``partition(..., time_limit_s=T)`` return within T? Elapsed over limit, per graph.

The partitioner is bounded by work (evaluations, probes, simplex rounds, branch-and-bound
nodes) so that its answers do not depend on the machine; ``time_limit_s`` is only a
safety net over the whole call. This benchmark feeds it graphs whose work bounds take far
longer than the limit and reports ``elapsed / limit`` (the goal: at most 1.10) and whether
the result says it was cut short (``complete=False``).

Run from the repository root::

    .venv/bin/python benchmarks/time_limit.py           # about 2 minutes
"""

from __future__ import annotations

import argparse
import time

from perfmodel import pipeline
from perfmodel.pipeline import zoo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--limits", type=float, nargs="+", default=[5.0, 20.0])
    args = parser.parse_args()
    graphs = {
        "random DAG, 1,250 nodes": zoo.random_layered_dag(125, 10, edge_probability=0.05, seed=7),
        "GPT-2-like, 125 blocks (1,252 nodes)": zoo.gpt2_like(layers=125),
    }
    print(f"{'graph':<40} {'k':>3} {'limit':>6} {'elapsed':>8} {'ratio':>6}  complete")
    for name, graph in graphs.items():
        for limit in args.limits:
            start = time.perf_counter()
            result = pipeline.partition(graph, 16, time_limit_s=limit)
            elapsed = time.perf_counter() - start
            print(
                f"{name:<40} {16:>3} {limit:>6.1f} {elapsed:>8.2f} {elapsed / limit:>6.2f}  "
                f"{result.complete}"
            )


if __name__ == "__main__":
    main()
