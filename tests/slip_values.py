"""Each keyed slip's value in the workbooks, worked out by hand (shared by the slip tests)."""

from __future__ import annotations

#: Each keyed slip's value, worked out by hand from the question: the value a learner who
#: made exactly that mistake gets. A keyed slip in a master must appear here.
SLIP_VALUES = {
    ("03", "mm_intensity", "C left unread"): 2 * 1024**3 / (4 * 3 * 1024**2),
    ("03", "graded_mm_intensity", "C left unread"): 2
    * 2048**2
    * 512
    / (2 * (2 * 2048 * 512 + 2048**2)),
    ("03", "bytes_saved", "moved vs saved"): 3 * 2 * 4e8,  # the unfused chain: 3 ops, read + write
    ("03", "graded_bytes_saved", "moved vs saved"): 4 * 2 * 4 * 3e7,
    ("04", "small_matmul_flops", "the peak"): 989.5e12,  # the H100's dense bf16 peak
    ("04", "matvec_time_s", "compute time"): 2 * 8192 * 8192 / 312e12,
    ("05", "intensity_m32", "weights only"): 32 / 2,  # 2·N²·M / (4·N²) = M/2
    ("05", "intensity_m512", "weights only"): 512 / 2,
    ("05", "graded_intensity", "weights only"): 128 / 2,
    ("05", "crossover", "width left out"): 8.797,  # R·N / (2(N - R)), R = 15.7e12 / 0.9e12
    ("05", "crossover", "the shortcut"): 2 * 15.7e12 / 0.9e12,  # M/2 = R
    ("05", "graded_crossover", "width left out"): 9.5635 * 2048 / (2 * (2048 - 9.5635)),
    ("05", "best_batch", "the noise scale"): 512,
    ("05", "graded_best_batch", "the noise scale"): 512,
    ("05", "best_batch", "step time alone"): 1,  # the step time grows with the minibatch
    ("05", "best_batch", "steps alone"): 4096,  # the steps fall with it
    ("05", "graded_best_batch", "step time alone"): 1,
    ("05", "graded_best_batch", "steps alone"): 4096,
    ("06", "copy_counted_bytes", "elements for bytes"): 2 * 50_000_000,
    ("06", "copy_moved_bytes", "write-allocate"): 2 * 8 * 50_000_000,
    ("06", "graded_triad_moved_bytes", "write-allocate"): 3 * 8 * 10_000_000,
    ("06", "copy_here", "elements for bytes"): 2 * 1e9 / 8,
    ("06", "graded_triad_here", "the output left out"): 2 * 8 * 60_000_000,
    ("06", "graded_triad_here", "write-allocate"): 4 * 8 * 60_000_000,
    ("06", "graded_triad_here", "arrays counted twice"): 6 * 8 * 60_000_000,
    ("06", "small_add_here", "the output left out"): 2 * 8 * 1000,
    ("06", "graded_multiply_here", "the output left out"): 2 * 4 * 10_000,
    ("06", "copy_here", "write-allocate"): 3 * 1e9,
    ("07", "workers_for_span", "the parallelism rounded up"): 2,  # ceil(1233.9 / 1095.1)
    ("07", "lower_4", "W/P alone"): 12 / 4,
    ("07", "graded_lower_6", "span alone"): 8.0,
    ("07", "graded_lower_6", "greedy upper bound"): 16 + 8,
    ("07", "graded_workers_for_span", "one worker per operation"): 7,
    ("07", "scan_work_ratio", "every block offset"): 2.0,
    ("07", "graded_scan_work_ratio", "every block offset"): 2.0,
    ("07", "scan_work_ratio", "the many-thread limit"): 2.0,  # 1 + (t - 1)/t as t grows
    ("07", "graded_scan_work_ratio", "the many-thread limit"): 2.0,
    ("08", "speedup_16", "ideal"): 16,
    ("08", "speedup_16", "serial and parallel fractions swapped"): 1 / (0.95 + 0.05 / 16),
    ("08", "speedup_limit", "serial and parallel fractions swapped"): 1 / 0.95,
    ("08", "graded_speedup_32", "ideal"): 32,
    ("08", "graded_speedup_32", "serial and parallel fractions swapped"): 1 / (0.9 + 0.1 / 32),
    ("08", "scaled_speedup_64", "Amdahl for Gustafson"): 1 / (0.05 + 0.95 / 64),
    ("08", "graded_scaled_speedup_128", "Amdahl for Gustafson"): 1 / (0.1 + 0.9 / 128),
    ("08", "graded_fitted_alpha", "serial for parallel fraction"): 0.1,
    ("08", "fitted_alpha", "serial for parallel fraction"): 0.2,
    ("08", "speedup_16", "Gustafson for Amdahl"): 0.05 + 0.95 * 16,  # lecture 00's example
    ("08", "graded_speedup_32", "Gustafson for Amdahl"): 0.1 + 0.9 * 32,
    ("09", "ring_seconds", "ring factor forgotten"): 0.0400084,  # n/B + 14 latencies, 8 GPUs
    ("09", "ring_seconds", "ring share dropped"): 0.0800084,  # 2n/B: (p - 1)/p dropped
    ("09", "graded_ring_seconds", "ring share dropped"): 0.01603,  # 2n/B + 6 latencies
    ("09", "busbw_gb_per_s", "all-gather factor"): 240 * 7 / 8,
    ("09", "busbw_gb_per_s", "divided"): 240 / (2 * 7 / 8),
    ("09", "busbw_gb_per_s", "busbw vs algbw"): 240,
    ("09", "graded_busbw_gb_per_s", "busbw vs algbw"): 45,
    ("09", "zero2_gb", "optimizer states alone sharded"): 37.0621,
    ("09", "zero2_gb", "no sharding"): 107.815,
    ("09", "zero2_gb", "weights sharded too"): 13.4768,
    ("09", "graded_zero_gb", "gradients sharded too"): 37.3744,
    ("09", "graded_zero_gb", "no sharding"): 208.0,
    ("09", "critical_tokens_per_gpu", "whole step"): 7 / 8 * 989.5e12 / 50e9 * 4 / 6,  # 6, not 4
    # a link's one direction counted as both, or half the ring (a reduce-scatter alone): the
    # same wrong answer, whose hint names both
    ("09", "critical_tokens_per_gpu", "per direction vs both"): 7 / 8 * 989.5e12 / (2 * 50e9),
    ("09", "critical_tokens_per_gpu", "half the ring"): 7 / 8 * 989.5e12 / 50e9 / 2,
    ("09", "critical_tokens_per_gpu", "(p - 1)/p dropped"): 989.5e12 / 50e9,  # lecture 09's 19,790
    ("09", "graded_critical_tokens", "per direction vs both"): 15 / 16 * 312e12 / (2 * 25e9),
    ("09", "graded_critical_tokens", "half the ring"): 15 / 16 * 312e12 / 25e9 / 2,
    ("09", "ring_seconds", "per direction vs both"): 2 * 7 / 8 * 2e9 / 100e9 + 14 * 0.6e-6,
    ("09", "ring_seconds", "half the ring"): 7 / 8 * 2e9 / 50e9 + 7 * 0.6e-6,
    ("09", "graded_ring_seconds", "per direction vs both"): 2 * 3 / 4 * 1e8 / 25e9 + 6 * 5e-6,
    ("09", "graded_ring_seconds", "half the ring"): 3 / 4 * 1e8 / 12.5e9 + 3 * 5e-6,
    ("09", "graded_critical_tokens", "whole step"): 7800,
    ("09", "nodes_below_80", "GPUs for nodes"): 8 * 8,
    ("09", "graded_nodes_below_90", "GPUs for nodes"): 4 * 8,
    ("09", "graded_critical_tokens", "(p - 1)/p dropped"): 312e12 / 25e9,
    ("09", "gather_x_us", "no wraparound"): 506.316,
    ("09", "gather_x_us", "the book's formula"): 2**26 / (2 * 100e9) * 1e6,
    ("09", "graded_gather_xy_us", "no wraparound"): 3532.22,
    ("09", "gather_x_us", "whole array"): 1008.62,
    ("09", "gather_xy_us", "one axis only"): 1008.66,
    ("09", "gather_xy_us", "one axis after the other"): 1262.3,
    ("10", "stage_cost_123", "a tensor counted per edge"): 9.75,
    ("10", "stage_cost_123", "work alone"): 8.0,
    ("10", "graded_stage_cost_234", "a tensor counted per edge"): 8.0,
    ("10", "graded_stage_cost_234", "work alone"): 7.0,
    ("10", "combinatorial_gap", "B/L - 1"): 1 / (1 - 0.287356) - 1,
    ("10", "graded_combinatorial_gap", "B/L - 1"): 1 / (1 - 0.114286) - 1,
    ("10", "bubble", "bubble ratio"): (6 - 1) / 10,
    ("10", "bubble", "busy share"): 1 - 5 / 15,
    ("10", "bubble_m30", "bubble ratio"): (6 - 1) / 30,
    ("10", "bubble_m30", "busy share"): 1 - 5 / 35,
    ("10", "graded_bubble", "bubble ratio"): (8 - 1) / 24,
    ("10", "graded_bubble", "busy share"): 1 - 7 / 31,
    ("10", "certified_gap", "found.gap"): 0.331234,
    ("10", "graded_certified_gap", "found.gap"): 0.413729,
    ("11", "mean_latency_ms", "L and λ swapped"): 250 / 40,
    ("11", "graded_latency_ms", "L and λ swapped"): 600 / 27,
    ("11", "mean_wait_ms", "time in system"): 14.9108 + 20,
    ("11", "wait_probability", "utilisation"): 160 * 0.020 / 4,
    ("11", "wait_probability", "utilisation as the load"): 0.0095808,  # Erlang C(4, 0.8)
    ("11", "sequences_fit", "no reserve"): 26,  # (141e9 - 69e9) / (8192 x 327,680 B)
    ("11", "sequences_fit", "bf16 weights"): 0,  # 138 GB of weights > 0.9 x 141 GB
    ("11", "graded_sequences_fit", "no reserve"): 59,  # (141e9 - 13.5e9) / (4096 x 524,288 B)
    ("11", "sequences_fit", "no GQA"): 2,  # all 64 heads' keys and values: 8x the cache
    ("11", "sequences_fit", "GiB for GB"): 25,  # 0.9 x 141 GiB
    ("11", "graded_sequences_fit", "GiB for GB"): 57,
    ("11", "mean_wait_ms", "one server"): 80.0,  # M/M/1: rho / (1 - rho) x service
    ("11", "graded_wait_ms", "one server"): 350.0,
    ("11", "graded_wait_ms", "time in system"): 81.765,
    ("12", "parameters", "untied head"): 354_823_168 + 50257 * 1024,
    ("12", "graded_large_parameters", "untied head"): 774_030_080 + 50257 * 1280,
    ("12", "graded_a100_40gb_ms", "bandwidth ratio on everything"): 41.5096,
    ("12", "h100_speedup", "peak ratio"): 3.1715,
    ("12", "h100_speedup", "bandwidth ratio"): 1.643,
    ("12", "graded_mi300x_speedup", "peak ratio"): 4.1905,
    ("12", "graded_mi300x_speedup", "bandwidth ratio"): 2.5992,
    ("12", "graded_efficiency_32", "overlapped"): 1.0,
    ("12", "h200_speedup", "peak ratio"): 3.1714,
    # the old-time-weighted arithmetic mean of each node's gain (3.17 or 1.64), where lecture 12
    # mixes them harmonically
    ("12", "h100_speedup", "arithmetic mix"): 2.0911,
    ("12", "graded_mi300x_speedup", "arithmetic mix"): 3.0658,
    ("12", "h200_speedup", "the H100"): 1.643,  # the bandwidth ratio, 3.35 / 2.039
    ("12", "h200_speedup", "over the H100"): 4.8 / 3.35,
    ("12", "efficiency_64", "overlapped"): 1.0,
}
