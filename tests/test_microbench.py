"""Micro-benchmarks: exact accounting of what numpy does, and a measurement of each call.

The accounting is checked exactly; the measurements only for what holds on any machine
(positive, finite, recorded with their sizes and threads). Their speed is benchmarks' job.
"""

from __future__ import annotations

import math

import pytest

from perfmodel.measure import microbench as mb

QUICK = {"repeats": 2, "min_time_s": 0.0, "min_sample_s": 1e-4}


@pytest.mark.parametrize(
    ("kind", "flops", "reads", "writes"),
    [("copy", 0, 1, 1), ("scale", 1, 1, 1), ("add", 1, 2, 1), ("triad", 2, 3, 2)],
)
def test_stream_counts_words_as_stream_does(kind, flops, reads, writes):
    n = 10_000
    result = mb.stream(kind, n, dtype="fp32", **QUICK)
    assert result.cost.flops == flops * n
    assert (result.cost.bytes_read, result.cost.bytes_written) == (4 * reads * n, 4 * writes * n)
    assert 0 < result.bytes_per_s < math.inf and result.measurement.sizes["n"] == n


def test_stream_on_a_thread_pool_records_its_threads():
    # Two threads, each on half of the arrays (one of them an element longer).
    result = mb.stream("triad", 10_001, threads=2, **QUICK)
    assert result.measurement.threads == 2 and result.cost.flops == 2 * 10_001


def test_the_elementwise_roof_kernel_does_the_arithmetic_it_counts():
    few, many = (mb.elementwise_roof(20_000, r, block=1024, **QUICK) for r in (1, 16))
    assert few.cost.bytes == many.cost.bytes == 2 * 8 * 20_000
    assert (few.intensity, many.intensity) == (1 / 8, 2.0)
    assert many.cost.flops == 16 * few.cost.flops


def test_matmul_and_tiny_ops_are_costed_by_the_ops_module():
    from perfmodel import ops

    assert mb.matmul(48, dtype="fp32", **QUICK).cost == ops.matmul(48, 48, 48, dtype="fp32")
    tiny = mb.tiny_op(8, **QUICK)
    assert tiny.cost == ops.elementwise(8, inputs=2, dtype="fp64", label="add of 8 elements")


def test_a_small_working_set_is_passed_over_many_times_per_call():
    import numpy as np

    small = mb.working_set(8 * 1024, per_call=1024 * 1024, **QUICK)
    n, passes = 512, 128  # half of 8 kB in doubles; 1 MB per call
    assert small.cost.bytes_read == (2 * passes - 1) * n * 8
    assert small.cost.bytes_written == passes * n * 8 and small.cost.flops == (passes - 1) * n
    big = mb.working_set(2 * 1024 * 1024, per_call=1024 * 1024, **QUICK)
    assert big.cost.bytes_written == 4 * 1024 * 1024  # never fewer than four passes
    # the counted arithmetic is the arithmetic done: four passes of acc += x over ones
    x = np.ones(n)
    acc = np.add.reduce(np.broadcast_to(x, (4, n)), axis=0)
    assert (acc == 4).all()


def test_exp_and_tiny_matmul_are_their_own_kinds():
    exp = mb.exponential(1000, **QUICK)
    assert exp.kind == "special" and exp.cost.flops == 1000 and exp.cost.bytes == 16_000
    tiny = mb.tiny_matmul(4, **QUICK)
    assert tiny.kind == "tiny" and tiny.name == "matmul 4" and tiny.cost.flops == 2 * 4**3


def test_rates_are_taken_at_the_fastest_sample():
    result = mb.tiny_op(8, **QUICK)
    assert result.bytes_per_s == result.cost.bytes / result.measurement.minimum_s


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: mb.stream("sum", 10), ValueError, "`kind` must be one of 'copy'"),
        (lambda: mb.stream("copy", 0), ValueError, "`n` must be a positive integer"),
        (lambda: mb.stream("copy", 10, dtype="bf16"), ValueError, "`dtype` must be one of"),
        (lambda: mb.matmul(8.5), ValueError, "`n` must be an integer"),
        (lambda: mb.elementwise_roof(10, 0), ValueError, "`multiply_adds` must be a positive"),
        (lambda: mb.stream("copy", 10, threads=0), ValueError, "`threads` must be a positive"),
    ],
)
def test_bad_arguments_are_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
