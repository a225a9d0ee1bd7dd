"""Predict, then measure: a real numpy server on this machine next to the simulator.

Times one forward pass of the MLP per batch size alone, then load-tests the server (two
worker threads, dynamic batching up to 8 with a 2 ms wait) with Poisson traffic at three
loads, and simulates the same arrivals with the measured batch times. Prints, per load,
measured vs predicted throughput, p50 and p99, mean batch, and the batch time inside the
server next to the batch time measured alone (the contention the model leaves out).

    .venv/bin/python benchmarks/serving_server.py
"""

from __future__ import annotations

import numpy as np

from perfmodel.serving.server import MLP, load_test, measure_batch_times, predict

WORKERS, MAX_BATCH, MAX_WAIT = 2, 8, 0.002


def main() -> None:
    model = MLP(width=1024, layers=4)
    alone = measure_batch_times(model, [1, 2, 4, 8])
    capacity = WORKERS * MAX_BATCH / alone[MAX_BATCH]
    print("batch time alone: " + ", ".join(f"{b}: {t * 1e3:.2f} ms" for b, t in alone.items()))
    print(f"capacity with full batches: {capacity:.0f} requests/s")
    print(f"{'load':>6} {'rate':>6} | {'throughput':>17} | {'p50 ms':>13} | {'p99 ms':>13} | "
          f"{'batch':>11} | in-server batch time vs alone")  # fmt: skip
    for share in (0.1, 0.3, 0.6):
        rate = share * capacity
        measured = load_test(model, arrival_rate=rate, requests=3000, workers=WORKERS,
                             max_batch=MAX_BATCH, max_wait_s=MAX_WAIT, time_limit_s=60)  # fmt: skip
        sim = predict(measured, alone, workers=WORKERS, max_batch=MAX_BATCH, max_wait_s=MAX_WAIT)
        inside = float(np.mean(measured.service_times_s))
        expected = float(np.mean([alone[min(b for b in alone if b >= n)]
                                  for n in measured.batch_sizes]))  # fmt: skip
        print(f"{share:6.0%} {measured.arrival_rate:6.0f} | {measured.throughput:7.0f} vs "
              f"{sim.throughput:7.0f} | {measured.p50_latency_s * 1e3:5.2f} vs "
              f"{sim.p50_latency_s * 1e3:5.2f} | {measured.p99_latency_s * 1e3:5.2f} vs "
              f"{sim.p99_latency_s * 1e3:5.2f} | {measured.mean_batch:4.2f} vs "
              f"{sim.mean_batch:4.2f} | "
              f"{inside * 1e3:.2f} ms vs {expected * 1e3:.2f} ms")  # fmt: skip


if __name__ == "__main__":
    main()
