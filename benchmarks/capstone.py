"""Predicted against measured on onnxruntime: the whole zoo, at batch 1 and batch 8.

This machine's kernel rates (:func:`perfmodel.capstone.calibrate.measure_kernels`: each kind
of kernel probed on onnxruntime, none of them a zoo model) predict a run of each model of
:data:`perfmodel.capstone.zoo.ZOO`; each model then runs ``--repeats`` times in a fresh
session, ``--runs`` timed runs each, at ``--optimization``: ``none`` (graph optimisations
off, every ONNX node runs as itself, as the prediction prices it) or ``all`` (a session's
default: the prediction prices the graph onnxruntime runs, from kernel probes run at the
same level). A row gives the median of the repeats' medians, the
ratio measured/predicted, the repeat furthest from the prediction, and the CPU share other
programs took. The goal (issue 26): median |measured/predicted - 1| at most 20% over the zoo,
no model's worse than 40%, on a quiet 2-core machine.

    .venv/bin/python benchmarks/capstone.py [--repeats 5] [--runs 10] [--optimization all]
        [--held-out]

``--held-out`` runs the four families of :data:`perfmodel.capstone.builders.HELD_OUT`
(ShuffleNetV2, RegNetY-400MF, DenseNet blocks, a GRU), chosen before anything was tuned on them
(issue 53), instead of the zoo.
"""

from __future__ import annotations

import argparse
import statistics

from perfmodel.capstone.builders import HELD_OUT
from perfmodel.capstone.calibrate import measure_kernels
from perfmodel.capstone.zoo import run_zoo


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=5, help="sessions per model and batch")
    parser.add_argument("--runs", type=int, default=10, help="timed runs per session")
    parser.add_argument(
        "--optimization",
        choices=("none", "basic", "all"),
        default="none",
        help="onnxruntime's graph optimisation level, predicted and timed",
    )
    parser.add_argument(
        "--held-out",
        action="store_true",
        help="the held-out families (capstone.builders.HELD_OUT) instead of the zoo",
    )
    args = parser.parse_args()
    rates = measure_kernels(progress=False, optimization=args.optimization)
    print(
        f"kernel rates: start {rates.start_s * 1e6:.1f} us a run, {rates.overhead_s * 1e6:.2f} us "
        f"a node; others used {rates.others:.0%} of the CPUs. {rates.warning()}"
    )
    rows = run_zoo(
        rates,
        runs=args.runs,
        repeats=args.repeats,
        progress=False,
        optimization=args.optimization,
        names=list(HELD_OUT) if args.held_out else None,
    )
    print(f"{'model':16s} {'batch':>5s} {'predicted':>10s} {'measured':>10s} {'ratio':>6s} "
          f"{'worst':>6s} {'spread':>7s} {'others':>7s} {'drift':>6s}  largest share")  # fmt: skip
    for row in rows:
        kind, seconds = max(row.by_kind.items(), key=lambda item: item[1])
        print(
            f"{row.model:16s} {row.batch:5d} {row.predicted_s * 1e3:7.2f} ms "
            f"{row.measured_s * 1e3:7.2f} ms {row.ratio:6.2f} {row.worst:6.2f} "
            f"{row.spread:7.0%} {row.others:7.0%} {row.drift:6.2f}  "
            f"{kind} {seconds / row.predicted_s:.0%}" + ("  UNSURE" if row.unsure else "")
        )
    errors = [abs(row.ratio - 1) for row in rows]
    by_model = {
        name: statistics.median(abs(r.ratio - 1) for r in rows if r.model == name)
        for name in dict.fromkeys(r.model for r in rows)
    }
    worst_model = max(by_model, key=by_model.__getitem__)
    worst_row = max(rows, key=lambda r: abs(r.worst - 1))
    busy = [f"{r.model} b{r.batch}" for r in rows if r.unsure]
    steady = [abs(r.ratio - 1) for r in rows if not r.unsure]
    print(
        f"median |measured/predicted - 1| = {statistics.median(errors):.0%} over {len(rows)} runs "
        f"(goal 20%); worst model {worst_model} at {by_model[worst_model]:.0%} (goal 40%); "
        f"worst single repeat {worst_row.model} b{worst_row.batch} at {worst_row.worst:.2f}x"
        + (f"; busy or drifted while measured: {', '.join(busy)}" if busy else "")
    )
    if steady:
        print(f"over the {len(steady)} steady runs: median {statistics.median(steady):.0%}")


if __name__ == "__main__":
    main()
