"""How fast the serving simulator runs: requests simulated per second, per configuration.

The target (issue 13) is 20,000 requests in under 0.2 s on the course's 2-core machine, so a
widget can redraw a whole load curve. Each configuration is simulated ``--repeats`` times;
the best time is reported, as a rate.

    .venv/bin/python benchmarks/serving.py
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from perfmodel import serving

CONFIGURATIONS: dict[str, dict[str, Any]] = {
    "M/M/1 at 90% load": {"arrival_rate": 0.9, "mean_service_s": 1.0, "workers": 1},
    "M/M/8 at 90% load": {"arrival_rate": 7.2, "mean_service_s": 1.0, "workers": 8},
    "dynamic batching (max 8, wait 0.5 s)": {
        "arrival_rate": 2.0, "mean_service_s": 1.0, "workers": 1, "max_batch": 8,
        "max_wait_s": 0.5, "batch_time": serving.linear_batch_time(0.8, 0.1),
    },
    "8 servers, power of two choices": {
        "arrival_rate": 7.2, "mean_service_s": 1.0, "workers": 1, "servers": 8,
        "policy": "power_of_two",
    },
}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for name, config in CONFIGURATIONS.items():
        best = float("inf")
        for seed in range(args.repeats):
            start = time.perf_counter()
            serving.simulate(**config, requests=args.requests, seed=seed)
            best = min(best, time.perf_counter() - start)
        print(f"{name:>38}: {args.requests} requests in {best * 1e3:6.1f} ms, "
              f"{args.requests / best:9,.0f} requests/s simulated")  # fmt: skip


if __name__ == "__main__":
    main()
