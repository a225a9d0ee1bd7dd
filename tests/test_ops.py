"""Cost models against the seed's worked examples and hand counts."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfmodel import ops


def within(value, expected, rel=0.03):
    """The course's acceptance bar for worked examples: within 3%."""
    return math.isclose(value, expected, rel_tol=rel)


def test_seed_matvec_1024_by_512_fp32():
    # Seed 004: "Memory: 4 bytes x (1024x512 + 512 + 1024) = 2.1e6 bytes; FLOPs 2x1024x512 = 1e6"
    cost = ops.matvec(1024, 512, dtype="fp32")
    assert within(cost.bytes, 2.1e6) and within(cost.flops, 1.05e6)
    assert within(cost.intensity, 0.5)


def test_seed_matmul_accumulate_512_fp32():
    # Seed 004: bytes 4 (MK + KN + 2MN), FLOPs ~ 2 MKN, intensity 64 FLOP/byte.
    cost = ops.matmul(512, 512, 512, dtype="fp32", accumulate=True)
    assert cost.bytes == 4 * (3 * 512**2 + 512**2)
    assert cost.flops == 2 * 512**3
    assert cost.intensity == 64


def test_seed_dense_layer_with_minibatch():
    # Seed 004: N x N weights, minibatch M: Ops = 2 N^2 M, Memory = 4 (N^2 + 2 N M).
    n, m = 1024, 64
    cost = ops.dense_forward(m, n, n, dtype="fp32")
    assert cost.flops == 2 * n**2 * m and cost.bytes == 4 * (n**2 + 2 * n * m)


def test_macs_are_half_the_flops():
    assert ops.flops_from_macs(5e9) == 1e10


def test_dtypes_change_bytes_not_flops():
    fp32, bf16, int8 = (ops.matmul(64, 64, 64, dtype=d) for d in ("fp32", "bf16", "int8"))
    assert fp32.flops == bf16.flops == int8.flops
    assert fp32.bytes == 2 * bf16.bytes == 4 * int8.bytes
    assert ops.matvec(8, 8, dtype=2).bytes == ops.matvec(8, 8, dtype="fp16").bytes


def test_costs_add_and_scale():
    a, b = ops.matvec(4, 4), ops.elementwise(4)
    total = a + 2 * b
    assert total.flops == a.flops + 2 * b.flops
    assert total.bytes == a.bytes + 2 * b.bytes
    assert (ops.matvec(4, 4, dtype="bf16") + b).dtype is None


def test_reduction_and_scan_do_the_same_flops_but_scan_writes_everything():
    r, s = ops.reduction(1000), ops.scan(1000)
    assert r.flops == s.flops == 999
    assert s.bytes_written == 1000 * r.bytes_written


def test_conv2d_counts():
    cost = ops.conv2d(2, 3, 8, 32, 32, 3, padding=1)
    assert cost.flops == 2 * 2 * 8 * 32 * 32 * 3 * 9  # same-size output
    assert cost.bytes_written == 4 * 2 * 8 * 32 * 32
    with pytest.raises(ValueError, match="`kernel` \\(9x9, dilated to 9x9\\) is larger than"):
        ops.conv2d(1, 1, 1, 4, 4, 9)


def test_grouped_conv_is_that_many_independent_convs():
    grouped = ops.conv2d(2, 32, 64, 16, 16, 3, padding=1, groups=4)
    one = ops.conv2d(2, 8, 16, 16, 16, 3, padding=1)
    assert grouped.flops == 4 * one.flops
    assert grouped.bytes == 4 * one.bytes
    with pytest.raises(ValueError, match="`groups` \\(3\\) must divide"):
        ops.conv2d(1, 32, 64, 8, 8, 3, groups=3)


def test_dilated_and_rectangular_conv_output_sizes_match_a_direct_count():
    """The output size against counting the window positions that fit, one by one."""
    for size, kernel, stride, padding, dilation in [(17, 3, 2, 1, 2), (9, (1, 5), 1, (0, 2), 1)]:
        cost = ops.conv2d(
            1, 1, 1, size, size, kernel, stride=stride, padding=padding, dilation=dilation
        )
        k_h, k_w = kernel if isinstance(kernel, tuple) else (kernel, kernel)
        p_h, p_w = padding if isinstance(padding, tuple) else (padding, padding)
        fits = [
            sum(1 for start in range(0, size + 2 * p - dilation * (k - 1), stride))
            for k, p in ((k_h, p_h), (k_w, p_w))
        ]
        assert cost.bytes_written == 4 * fits[0] * fits[1]
        assert cost.flops == 2 * fits[0] * fits[1] * k_h * k_w


def test_fused_attention_moves_far_fewer_bytes_for_long_sequences():
    unfused = ops.attention(1, 16, 8192, 128)
    fused = ops.attention(1, 16, 8192, 128, fused=True)
    assert unfused.flops == fused.flops
    assert unfused.bytes / fused.bytes > 30
    assert fused.intensity > unfused.intensity


def test_fusion_saves_the_temporaries():
    chain = ops.fusion(1000, [1, 2, 3], dtype="fp32")
    assert chain.unfused.flops == chain.fused.flops == 6000
    assert chain.bytes_saved == (3 - 1) * 2 * 4 * 1000


def test_backward_is_twice_forward():
    fwd, bwd = ops.dense_forward(32, 256, 512), ops.dense_backward(32, 256, 512)
    assert bwd.flops == 2 * fwd.flops


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: ops.matvec(0, 4), ValueError, "`m` must be a positive integer \\(got 0\\)"),
        (lambda: ops.matmul(4, 4.5, 4), ValueError, "`k` must be an integer \\(got 4.5\\)"),
        (lambda: ops.matvec(4, 4, dtype="fp12"), ValueError, "`dtype` must be one of"),
        (lambda: ops.elementwise(4, flops_per_element=-1), ValueError,
         "`flops_per_element` must be a non-negative finite number"),
        (lambda: ops.elementwise(4, flops_per_element=float("nan")), ValueError,
         "`flops_per_element` must be a non-negative finite number \\(got nan\\)"),
        (lambda: ops.attention(1, 1, 8, 8, fused="no"), TypeError, "`fused` must be True or False"),
        (lambda: ops.matmul(4, 4, 4, accumulate="no"), TypeError, "`accumulate` must be True or"),
        (lambda: ops.fusion(4, []), ValueError, "at least one op"),
        (lambda: ops.flops_from_macs(-1), ValueError, "`macs` must be a non-negative finite"),
    ],
)  # fmt: skip
def test_bad_sizes_and_dtypes(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_numpy_numbers_are_numbers():
    import numpy as np

    assert ops.matmul(np.int64(4), 4, 4) == ops.matmul(4, 4, 4)
    assert ops.elementwise(np.int32(8), flops_per_element=np.float64(2.0)).flops == 16


@given(m=st.integers(1, 4096), k=st.integers(1, 4096), n=st.integers(1, 4096))
def test_matmul_intensity_never_exceeds_the_smallest_dimension_bound(m, k, n):
    # Each operand is read once, so intensity <= 2mkn / (4 * (mk + kn + mn)) <= min(m, k, n) / 2.
    cost = ops.matmul(m, k, n)
    assert cost.intensity <= min(m, k, n) / 2 + 1e-9


# ------------------------------------------------------------------- serving shapes


@given(
    q=st.integers(1, 40),
    extra=st.integers(0, 40),
    d=st.sampled_from([8, 64]),
    heads=st.sampled_from([1, 4, 8]),
    group=st.sampled_from([1, 2, 4]),
)
def test_causal_attention_counts_the_pairs_a_mask_keeps(q, extra, d, heads, group):
    k = q + extra
    kv_heads = max(1, heads // group)
    cost = ops.attention(2, heads, q, d, kv_len=k, kv_heads=kv_heads, causal=True, fused=True)
    # brute force: query i (the (k - q + i)-th position) sees keys 0..k-q+i
    pairs = sum(k - q + i + 1 for i in range(q))
    assert cost.flops == 2 * heads * pairs * (4 * d + 5)
    # K and V are read once per KV head, not once per query head
    assert cost.bytes_read == 2 * (2 * heads * q * d + 2 * 2 * kv_heads * k * d)
    full = ops.attention(2, heads, q, d, kv_len=k, kv_heads=kv_heads, fused=True)
    assert full.flops == 2 * heads * q * k * (4 * d + 5) >= cost.flops


def test_defaults_are_the_training_shapes_and_decode_is_bandwidth_bound():
    assert ops.attention(2, 8, 128, 64) == ops.attention(2, 8, 128, 64, kv_len=128, kv_heads=8)
    decode = ops.attention(1, 32, 1, 128, kv_len=8192, kv_heads=8, causal=True, fused=True)
    mha = ops.attention(1, 32, 1, 128, kv_len=8192, causal=True, fused=True)
    assert decode.intensity == pytest.approx(4 * mha.intensity, rel=0.01)  # GQA-8: 4x less KV
    with pytest.raises(ValueError, match="`kv_heads`"):
        ops.attention(1, 32, 1, 128, kv_heads=5)
    with pytest.raises(ValueError, match="`seq_len`"):
        ops.attention(1, 8, 16, 64, kv_len=8, causal=True)


def test_quantised_weights_are_counted_at_their_own_width():
    bf16 = ops.matmul(4, 4096, 4096, dtype="bf16")
    int8 = ops.matmul(4, 4096, 4096, dtype="bf16", weight_dtype="int8")
    assert bf16.bytes_read - int8.bytes_read == 4096 * 4096  # one byte saved per weight
    assert int8.flops == bf16.flops and int8.dtype == "bf16"
    assert int8.bytes_written == bf16.bytes_written
