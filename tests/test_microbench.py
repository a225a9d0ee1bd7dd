"""Micro-benchmarks: exact accounting of what numpy does, and a measurement of each call.

The accounting is checked exactly; the measurements only for what holds on any machine
(positive, finite, recorded with their sizes and threads). Their speed is benchmarks' job.
"""

from __future__ import annotations

import math

import pytest

from perfmodel import microbench as mb

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


def test_a_small_working_set_is_read_many_times_per_call():
    small = mb.working_set(8 * 1024, per_call=1024 * 1024, **QUICK)
    assert small.cost.bytes == 128 * 8 * 1024 and small.cost.bytes_written == 0
    big = mb.working_set(2 * 1024 * 1024, per_call=1024 * 1024, **QUICK)
    assert big.cost.bytes == 2 * 1024 * 1024  # at least one whole pass


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: mb.stream("sum", 10), ValueError, "`kind` must be one of 'copy'"),
        (lambda: mb.stream("copy", 0), ValueError, "`n` must be a positive integer"),
        (lambda: mb.stream("copy", 10, dtype="bf16"), ValueError, "`dtype` must be one of"),
        (lambda: mb.matmul(8.0), TypeError, "`n` must be an integer"),
        (lambda: mb.elementwise_roof(10, 0), ValueError, "`multiply_adds` must be a positive"),
        (lambda: mb.stream("copy", 10, threads=0), ValueError, "`threads` must be a positive"),
    ],
)
def test_bad_arguments_are_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()
