"""Every published training and serving run beside the course's prediction of it.

    .venv/bin/python benchmarks/published.py          # every row, then both halves' errors
    .venv/bin/python benchmarks/published.py --fit    # refit the constants on calibration rows

Each row prints its id, half (calibration or held-out), metric, the published and the
predicted value, their ratio and the matmul ceiling the prediction used. The summary gives,
per kind and half, the median and the worst ``|predicted / published - 1|``. ``--fit`` fits
:data:`perfmodel.achieved.FITTED` and the engine's step cost on the calibration half only and
prints them (copy them into the package by hand; the held-out half is never read).
"""

from __future__ import annotations

import argparse

from perfmodel import published

UNITS = {
    "tflops_per_gpu": (1e12, "TFLOP/s"),
    "mfu": (0.01, "%"),
    "hfu": (0.01, "%"),
    "tokens_per_s": (1, "tok/s"),
    "tokens_per_s_per_gpu": (1, "tok/s"),
    "step_s": (1, "s"),
    "ttft_s": (1e-3, "ms"),
    "tpot_s": (1e-3, "ms"),
    "e2e_latency_s": (1, "s"),
    "output_tokens_per_s": (1, "tok/s"),
    "output_tokens_per_s_per_gpu": (1, "tok/s"),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--fit", action="store_true", help="refit on the calibration half")
    args = parser.parse_args()
    if args.fit:
        for use in ("training", "serving"):
            for key, value in published.fit(use).items():
                print(f"{use} {key} = {value:.4g}")
        return
    comparisons = published.compare()
    width = max(len(c.row.id) for c in comparisons)
    print(f"{'row':{width}s} {'half':11s} {'metric':28s} {'published':>10s} {'predicted':>10s}"
          f" {'ratio':>6s}  matmul ceiling")  # fmt: skip
    for c in comparisons:
        scale, unit = UNITS[c.row.metric]
        ceiling = c.ceilings.splitlines()[0].split(":")[0]
        print(
            f"{c.row.id:{width}s} {c.row.split:11s} {c.row.metric + ' (' + unit + ')':28s} "
            f"{c.row.value / scale:10.4g} {c.predicted / scale:10.4g} {c.ratio:6.2f}  {ceiling}"
        )
    print()
    for (kind, split), (rows, median, worst) in published.summary(comparisons).items():
        print(f"{kind:9s} {split:11s} {rows:3d} rows: median |pred/pub - 1| {median:6.1%}, "
              f"worst {worst:6.1%}")  # fmt: skip


if __name__ == "__main__":
    main()
