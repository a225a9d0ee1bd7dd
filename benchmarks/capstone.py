"""Predicted against measured on onnxruntime: each capstone model at two sizes.

Lecture 06's calibration of this machine (the full profile unless ``--quick``), read the way
onnxruntime runs (see :mod:`perfmodel.capstone.predict`), predicts every node of an MLP, a
ResNet and a GPT-2 decoder at two sizes each; onnxruntime runs each model with its profiler on.
The table gives, per model and size, the predicted and measured end-to-end times, the error,
and the median error over the nodes; the goal (issue 14) is an end-to-end error within 25%.

    .venv/bin/python benchmarks/capstone.py [--quick] [--runs 20]
"""

from __future__ import annotations

import argparse

from perfmodel import capstone
from perfmodel.capstone import builders


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="lecture 06's quick profile")
    parser.add_argument("--runs", type=int, default=20, help="measured onnxruntime runs")
    args = parser.parse_args()
    engine = capstone.calibrate_engine(quick=args.quick)
    dram = engine.calibration.level(10**10, "matrix")[1]
    print(
        f"onnxruntime overhead per node {engine.overhead_s * 1e6:.1f} us; "
        f"{engine.calibration.device.name}: DRAM {dram / 1e9:.1f} GB/s"
    )
    print(f"{'model':8s} {'size':6s} {'predicted':>11s} {'measured':>11s} {'error':>7s} "
          f"{'node median':>12s} {'all fused':>11s}")  # fmt: skip
    worst = 0.0
    for name in builders.CPU_MODELS:
        for size in ("small", "large"):
            result = capstone.compare(builders.cpu_model(name, size), engine, runs=args.runs)
            worst = max(worst, abs(result.error))
            fused = result.fused_s
            print(
                f"{name:8s} {size:6s} {result.predicted_s * 1e3:8.2f} ms "
                f"{result.measured_s * 1e3:8.2f} ms {result.error:+7.0%} "
                f"{result.median_node_error:12.0%} "
                + (f"{fused * 1e3:8.2f} ms" if fused is not None else f"{'-':>11s}")
            )
    verdict = "within" if worst <= 0.25 else "OUTSIDE"
    print(f"largest end-to-end error {worst:.0%} ({verdict} the 25% goal)")


if __name__ == "__main__":
    main()
