"""Roofline estimates: the seed's numbers, invariants, errors."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfmodel import hardware, ops, roofline
from perfmodel.metrics import headroom, utilization
from perfmodel.minibatch import (
    crossover_batch,
    experiment_time_s,
    smallest_compute_bound_power_of_two,
)
from perfmodel.ops import Cost


def test_seed_matvec_on_gpu_circa_2015():
    # Seed 004: time = max(7 us memory, 0.16 us compute); 1e6 FLOPs / 7 us = 142 GFLOP/s.
    exact = roofline.estimate(ops.matvec(1024, 512), "GPU circa 2015")
    assert exact.bound == "memory"
    assert math.isclose(exact.memory_time_s, 7e-6, rel_tol=0.03)
    assert math.isclose(exact.compute_time_s, 0.17e-6, rel_tol=0.03)
    # The seed rounds the FLOPs to 1e6 and the bytes to 2.1e6 before dividing:
    seed = roofline.estimate(Cost(flops=1e6, bytes_read=2.1e6, bytes_written=0, dtype="fp32"),
                             "GPU circa 2015")  # fmt: skip
    assert math.isclose(seed.achieved_flops, 142e9, rel_tol=0.03)


def test_seed_ridge_20_and_matmul_compute_bound():
    gpu = hardware.get("GPU circa 2015")
    assert gpu.ridge_point("fp32") == pytest.approx(20)
    assert roofline.estimate(ops.matmul(512, 512, 512, accumulate=True), gpu).bound == "compute"


def test_seed_minibatch_turns_compute_bound_near_64():
    # Seed 004: "Below ~ M=64, operations are memory-bound"; the exact crossover is ~41 and
    # 64 is the first power of two past it.
    assert math.isclose(crossover_batch(4096, "GPU circa 2015"), 40.8, rel_tol=0.03)
    assert smallest_compute_bound_power_of_two(4096, "GPU circa 2015") == 64
    assert crossover_batch(64, "GPU circa 2015") == math.inf


def test_experiment_time_falls_then_rises():
    times = [
        experiment_time_s(4096, 2**k, "GPU circa 2015", min_steps=1e4, noise_scale=256)
        for k in range(13)
    ]
    best = times.index(min(times))
    assert 0 < best < len(times) - 1
    assert all(a > b for a, b in zip(times[:best], times[1 : best + 1], strict=True))
    assert all(a < b for a, b in zip(times[best:-1], times[best + 1 :], strict=True))


def test_speed_of_light_headroom_and_utilization():
    assert headroom(0.5) == 2 and headroom(0.8) == pytest.approx(1.25)
    assert utilization(150e9, 6e12) == pytest.approx(0.025)
    with pytest.raises(ValueError, match="a fraction in \\(0, 1\\]; above 1 the model is wrong"):
        headroom(1.2)


def test_sequence_overlap_is_never_slower():
    seq = roofline.estimate_sequence(
        [ops.matmul(256, 256, 256, dtype="bf16"), ops.softmax(256, 256, dtype="bf16")], "H100 SXM"
    )
    assert seq.time_s <= seq.time_no_overlap_s
    assert sum(share for _, share in seq.share()) == pytest.approx(1)


@given(
    flops=st.floats(1, 1e18), nbytes=st.floats(1, 1e15),
    device=st.sampled_from(["H100 SXM", "GPU circa 2015", "MI300X", "EPYC 9654"]),
)  # fmt: skip
def test_achieved_never_exceeds_the_roof(flops, nbytes, device):
    cost = Cost(flops=flops, bytes_read=nbytes, bytes_written=0, dtype="fp32")
    result = roofline.estimate(cost, device)
    roof = roofline.attainable_flops(cost.intensity, device, "fp32")
    assert result.achieved_flops <= roof * (1 + 1e-9)
    assert math.isclose(result.achieved_flops, roof, rel_tol=1e-9)
    assert 0 < result.fraction_of_peak <= 1


def test_errors():
    with pytest.raises(ValueError, match="`dtype` is needed"):
        roofline.estimate(ops.matvec(4, 4) + ops.matvec(4, 4, dtype="bf16"), "H100 SXM")
    with pytest.raises(TypeError, match="`cost` must be an ops.Cost"):
        roofline.estimate(3.0, "H100 SXM")
    with pytest.raises(TypeError, match="`device` must be a device name"):
        roofline.estimate(ops.matvec(4, 4), 42)
    with pytest.raises(ValueError, match="TPU v5p has no dense peak for 'fp32'"):
        roofline.estimate(ops.matvec(4, 4), "TPU v5p")
    with pytest.raises(ValueError, match="`intensity` must be a non-negative"):
        roofline.attainable_flops(-1, "H100 SXM")
    with pytest.raises(ValueError, match="`intensity` must be a non-negative"):
        roofline.attainable_flops(float("nan"), "H100 SXM")  # once gave the full peak
    with pytest.raises(ValueError, match="`ceiling` must be one of 'nameplate', 'measured'"):
        roofline.estimate(ops.matvec(4, 4), "H100 SXM", ceiling="datasheet")
    with pytest.raises(ValueError, match="`ceiling` must be a number in \\(0, 1\\]"):
        roofline.estimate(ops.matvec(4, 4), "H100 SXM", ceiling=1.5)
    with pytest.raises(ValueError, match="V100 SXM2 has no measured ceiling"):
        roofline.estimate(ops.matvec(4, 4, dtype="fp16"), "V100 SXM2", ceiling="measured")


def test_nameplate_and_measured_ceilings_rank_devices_differently():
    # By nameplate the MI300X does a big bf16 matmul 1.32x faster than an H100 SXM; by the
    # best published measurements the H100 is 1.19x faster. Compare measured, not printed.
    big = ops.matmul(16384, 16384, 16384, dtype="bf16")

    def ratio(ceiling):
        h100 = roofline.estimate(big, "H100 SXM", ceiling=ceiling).time_s
        return h100 / roofline.estimate(big, "MI300X", ceiling=ceiling).time_s

    assert ratio("nameplate") == pytest.approx(1307.4 / 989.5, rel=1e-3)
    assert ratio("measured") == pytest.approx(668.4 / 794.5, rel=1e-3)
    assert ratio("nameplate") > 1 > ratio("measured")


def test_an_efficiency_scales_both_roofs():
    cost = ops.matvec(4096, 4096, dtype="bf16")  # memory-bound
    full = roofline.estimate(cost, "H100 SXM")
    half = roofline.estimate(cost, "H100 SXM", ceiling=0.5)
    assert half.time_s == pytest.approx(2 * full.time_s) and half.ceiling == "50% of nameplate"
    measured = roofline.estimate(cost, "H100 SXM", ceiling="measured")  # a published copy
    assert measured.memory_time_s == pytest.approx(full.memory_time_s * 3.35e12 / 2.475e12)
    assert measured.ceiling == "measured"
    h200 = roofline.estimate(cost, "H200 SXM", ceiling="measured")
    assert h200.memory_time_s == roofline.estimate(cost, "H200 SXM").memory_time_s  # none
    assert "nameplate bandwidth" in h200.ceiling
