"""Benchmark the pipeline partitioner: bounds, baselines and run times.

The testbed is the model zoo (MLP, GPT-2-like, ResNet-50-like, Inception-like, and the
published Inception-v3, NASNet-A Mobile and GNMT, layer by layer, priced on an H100 SXM with
NVLink 4) and 50 seeded random layered DAGs of 8-40 layers, 1-4 nodes wide, for k in
{2, 4, 8, 16, 32, 64} (k at most the node count), each case under a 20 s time limit. For
every case it records the best split, its lower bound, the combinatorial bound, three
practitioners' baselines and the time taken, then prints per k the geometric means of

* lower bound / best split (the paper's measure; 1 is a proven optimum),
* combinatorial bound / best split, for contrast,
* best split / baseline bottleneck (below 1: better than the baseline; never above 1),

the run times and how many cases overran their limit by more than 10% plus one second;
then each zoo model's bound at k = 16, the slowest case, and the two speed goals: a
10,000-layer chain at k=64 and a 1,000-node random DAG at k=16, split and bounded.

``--finer`` runs every graph twice: as drawn, and redrawn finer
(:func:`perfmodel.pipeline.reduce.redraw_finer`: each node a chain of two or three,
identities and concatenations added; the same network), and prints the two drawings'
geometric means side by side: a certificate should not depend on how the graph is drawn.

Run from the repository root::

    .venv/bin/python benchmarks/partition.py            # about 15 min on 2 cores
    .venv/bin/python benchmarks/partition.py --quick    # 10 DAGs
    .venv/bin/python benchmarks/partition.py --finer --stages 16 --jobs 1
"""

from __future__ import annotations

import argparse
import csv
import math
import multiprocessing
import os
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from perfmodel import pipeline
from perfmodel.pipeline import networks, zoo
from perfmodel.pipeline.baselines import balance_by_params, balance_by_time, equal_layers
from perfmodel.pipeline.reduce import redraw_finer

STAGES = (2, 4, 8, 16, 32, 64)


def testbed(dags: int) -> dict[str, pipeline.Graph]:
    """The zoo on an H100 SXM with NVLink 4, then ``dags`` seeded random layered DAGs."""
    graphs: dict[str, pipeline.Graph] = {
        "mlp": zoo.mlp(layers=64),
        "gpt2_like": zoo.gpt2_like(),
        "resnet50_like": zoo.resnet50_like(),
        "inception_like": zoo.inception_like(),
        "inception_v3": networks.inception_v3(),
        "nasnet_a_mobile": networks.nasnet_a_mobile(),
        "gnmt": networks.gnmt(),
    }
    rng = np.random.default_rng(2024)
    for index in range(dags):
        layers, width = int(rng.integers(8, 41)), int(rng.integers(1, 5))
        p = float(rng.uniform(0.05, 0.4))
        graphs[f"dag{index:02d}_{layers}x{width}"] = zoo.random_layered_dag(
            layers, width, edge_probability=p, seed=index
        )
    return graphs


def run_case(case: tuple[str, pipeline.Graph, int, float]) -> dict[str, object]:
    name, graph, k, time_limit_s = case
    start = time.perf_counter()
    result = pipeline.partition(graph, k, time_limit_s=time_limit_s)
    seconds = time.perf_counter() - start
    row: dict[str, object] = {
        "graph": name,
        "nodes": graph.n,
        "k": k,
        "method": result.method,
        "best": result.bottleneck,
        "lower_bound": result.lower_bound,
        "combinatorial": pipeline.combinatorial_lower_bound(graph, k),
        "seconds": seconds,
        "limit": time_limit_s,
        "complete": result.complete,
        "equal_layers": equal_layers(graph, k).bottleneck,
        "balance_by_time": balance_by_time(graph, k).bottleneck,
        "balance_by_params": math.nan,
    }
    if isinstance(graph, zoo.Model):
        row["balance_by_params"] = balance_by_params(graph, k, graph.params).bottleneck
    return row


def geomean(values: list[float]) -> float:
    kept = [v for v in values if not math.isnan(v)]
    return math.exp(sum(math.log(v) for v in kept) / len(kept)) if kept else math.nan


def overran(row: dict[str, object]) -> bool:
    """Past the limit by more than 10% plus one second."""
    return float(row["seconds"]) > 1.1 * float(row["limit"]) + 1  # type: ignore[arg-type]


def zoo_table(rows: list[dict[str, object]], k: int = 16) -> str:
    """Each zoo model at ``k``: nodes, method, lower bound / best, seconds."""
    lines = [f"{'model':<16} {'nodes':>5} {'LB/best':>8} {'seconds':>8}  method"]
    for r in rows:
        if r["k"] == k and not str(r["graph"]).startswith("dag"):
            ratio = float(r["lower_bound"]) / float(r["best"])  # type: ignore[arg-type]
            lines.append(
                f"{r['graph']!s:<16} {r['nodes']!s:>5} {ratio:>8.4f} "
                f"{float(r['seconds']):>8.1f}  {r['method']}"  # type: ignore[arg-type]
            )
    slowest = max(rows, key=lambda r: float(r["seconds"]))  # type: ignore[arg-type]
    lines.append(
        f"slowest case: {slowest['graph']} at k={slowest['k']}, "
        f"{float(slowest['seconds']):.1f} s under a {float(slowest['limit']):g} s limit"  # type: ignore[arg-type]
    )
    return "\n".join(lines)


def summarise(rows: list[dict[str, object]]) -> str:
    head = (
        f"{'k':>3} {'cases':>5} {'LB/best':>8} {'comb/best':>9} {'exact':>5} "
        f"{'best/equal':>10} {'best/time':>9} {'best/params':>11} {'worst vs any':>12} "
        f"{'mean s':>7} {'max s':>6} {'over':>4}"
    )
    lines = [head, "-" * len(head)]
    for k in STAGES:
        group = [r for r in rows if r["k"] == k]
        if not group:
            continue
        best = [float(r["best"]) for r in group]  # type: ignore[arg-type]

        def ratio(
            key: str, over: bool = False, group: list[Any] = group, best: list[float] = best
        ) -> list[float]:
            values = [float(r[key]) for r in group]
            return [b / v if over else v / b for b, v in zip(best, values, strict=True)]

        worst = max(
            max(b / float(r[key]) for key in ("equal_layers", "balance_by_time"))  # type: ignore[arg-type]
            for b, r in zip(best, group, strict=True)
        )
        exact = sum(float(r["lower_bound"]) >= 0.99999 * float(r["best"]) for r in group)  # type: ignore[arg-type]
        seconds = [float(r["seconds"]) for r in group]  # type: ignore[arg-type]
        over = sum(overran(r) for r in group)
        lines.append(
            f"{k:>3} {len(group):>5} {geomean(ratio('lower_bound')):>8.4f} "
            f"{geomean(ratio('combinatorial')):>9.4f} {exact:>5} "
            f"{geomean(ratio('equal_layers', True)):>10.4f} "
            f"{geomean(ratio('balance_by_time', True)):>9.4f} "
            f"{geomean(ratio('balance_by_params', True)):>11.4f} {worst:>12.4f} "
            f"{sum(seconds) / len(seconds):>7.2f} {max(seconds):>6.1f} {over:>4}"
        )
    return "\n".join(lines)


FINER = " (finer)"


def compare_drawings(rows: list[dict[str, object]]) -> str:
    """Per k: the geometric mean of lower bound / best as drawn and redrawn finer."""
    lines = [f"{'k':>3} {'cases':>5} {'as drawn':>9} {'finer':>9} {'difference':>10} {'over':>4}"]
    for k in STAGES:
        pairs: dict[str, dict[bool, dict[str, Any]]] = {}
        for r in rows:
            if r["k"] == k:
                name = str(r["graph"])
                pairs.setdefault(name.removesuffix(FINER), {})[name.endswith(FINER)] = r
        both = [p for p in pairs.values() if len(p) == 2]
        if not both:
            continue
        means = [
            geomean([float(p[fine]["lower_bound"]) / float(p[fine]["best"]) for p in both])
            for fine in (False, True)
        ]
        over = sum(overran(r) for p in both for r in p.values())
        lines.append(
            f"{k:>3} {len(both):>5} {means[0]:>9.4f} {means[1]:>9.4f} "
            f"{means[1] - means[0]:>+10.4f} {over:>4}"
        )
    return "\n".join(lines)


def speed_goals(time_limit_s: float) -> str:
    rng = np.random.default_rng(7)
    chain = pipeline.Graph.chain(
        rng.uniform(1e-4, 1e-3, 10_000).tolist(), rng.uniform(1e-5, 5e-4, 10_000).tolist()
    )
    start = time.perf_counter()
    result = pipeline.partition(chain, 64)
    chain_s = time.perf_counter() - start
    lines = [f"10,000-layer chain, k=64: {chain_s:.2f} s ({result.method}, gap {result.gap:.1e})"]
    big = zoo.random_layered_dag(100, 10, edge_probability=0.05, seed=7)
    start = time.perf_counter()
    result = pipeline.partition(big, 16, time_limit_s=time_limit_s)
    big_s = time.perf_counter() - start
    lines.append(
        f"{big.n}-node DAG ({len(big.edges)} edges), k=16: {big_s:.1f} s "
        f"({result.method}, lower bound / best {result.lower_bound / result.bottleneck:.3f})"
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--dags", type=int, default=50, help="random DAGs (default 50)")
    parser.add_argument(
        "--time-limit", type=float, default=20.0, help="wall-clock safety net per case (s)"
    )
    parser.add_argument("--jobs", type=int, default=2, help="worker processes")
    parser.add_argument("--quick", action="store_true", help="10 random DAGs instead of 50")
    parser.add_argument(
        "--finer", action="store_true", help="also every graph redrawn finer, compared"
    )
    parser.add_argument(
        "--stages", type=int, nargs="+", default=list(STAGES), help="the k to try (default all)"
    )
    parser.add_argument("--no-speed", action="store_true", help="skip the two speed goals")
    parser.add_argument("--csv", type=Path, default=Path("test-output/partition-benchmark.csv"))
    args = parser.parse_args()
    if args.quick:
        args.dags = 10
    graphs = testbed(args.dags)
    if args.finer:
        graphs |= {
            name + FINER: redraw_finer(graph, seed=index)
            for index, (name, graph) in enumerate(list(graphs.items()))
        }
    cases = [
        (name, graph, k, args.time_limit)
        for name, graph in graphs.items()
        for k in STAGES
        if k <= graph.n and k in args.stages
    ]
    # One BLAS thread per worker: several workers each spinning several threads on two
    # cores slow every small matrix product down many times over.
    for variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[variable] = "1"
    with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
        rows = list(tqdm(pool.map(run_case, cases), total=len(cases), desc="cases"))
    args.csv.parent.mkdir(parents=True, exist_ok=True)
    with args.csv.open("w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    for drawing, kept in (("", False), (FINER, True)):
        drawn = [r for r in rows if str(r["graph"]).endswith(FINER) == kept]
        if not drawn:
            continue
        zoo = [r for r in drawn if not str(r["graph"]).startswith("dag")]
        dags = [r for r in drawn if str(r["graph"]).startswith("dag")]
        total = sum(name.endswith(FINER) == kept for name in graphs)
        print(f"\nAll {total} graphs{drawing} ({len(drawn)} cases)\n" + summarise(drawn))
        print(f"\nZoo only{drawing}\n" + summarise(zoo))
        print(f"\nRandom DAGs only{drawing}\n" + summarise(dags))
    if any(r["k"] == 16 for r in rows):
        print("\nThe zoo at k = 16\n" + zoo_table(rows))
    if args.finer:
        print("\nLower bound / best, as drawn and redrawn finer\n" + compare_drawings(rows))
    if not args.no_speed:
        print("\nSpeed goals\n" + speed_goals(args.time_limit))
    print(f"\nPer-case results: {args.csv}")


if __name__ == "__main__":
    main()
