"""LLM serving on the roofline: prefill, decode, the KV cache, and batching policies."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfmodel import hardware
from perfmodel.serving import llm
from perfmodel.transformer import preset

LLAMA7, LLAMA70 = preset("Llama 2 7B"), preset("Llama 2 70B")


def test_the_kv_cache_is_two_values_per_layer_and_kv_head():
    assert llm.kv_bytes_per_token(LLAMA7) == 2 * 32 * 32 * 128 * 2
    # grouped-query attention (8 KV heads for 64 query heads) keeps 8x less per layer
    assert llm.kv_bytes_per_token(LLAMA70) == 2 * 80 * 8 * 128 * 2
    assert llm.kv_bytes_per_token(LLAMA7, kv_dtype="fp8") == llm.kv_bytes_per_token(LLAMA7) / 2


@given(context=st.integers(1, 32768), usable=st.floats(0.5, 1.0))
def test_max_batch_is_the_largest_batch_that_fits(context, usable):
    capacity = hardware.get("H100 SXM").memory_capacity
    b = llm.max_batch(LLAMA7, "H100 SXM", context=context, usable=usable)

    def fits(n: int) -> bool:
        need = llm.weight_bytes(LLAMA7) + n * context * llm.kv_bytes_per_token(LLAMA7)
        return need <= usable * capacity

    assert fits(b) and not fits(b + 1)


def test_prefill_is_compute_bound_and_decode_is_bandwidth_bound():
    from perfmodel.roofline import estimate

    prefill = estimate(llm.prefill_cost(LLAMA7, batch=1, prompt=2048), "H100 SXM")
    decode = estimate(llm.decode_cost(LLAMA7, batch=1, context=2048), "H100 SXM")
    assert prefill.bound == "compute" and decode.bound == "memory"
    # one decode step reads every weight once: at least weights / bandwidth
    floor = llm.weight_bytes(LLAMA7) / hardware.get("H100 SXM").memory_bandwidth
    assert floor <= decode.time_s < 1.2 * floor
    # its FLOPs are 2 per weight for the token, plus attention over the cache
    cost = llm.decode_cost(LLAMA7, batch=1, context=2048)
    matrices = LLAMA7.layers * (LLAMA7.attention_parameters + LLAMA7.mlp_parameters)
    assert cost.flops == pytest.approx(2 * (matrices + LLAMA7.vocab * LLAMA7.width)
                                       + LLAMA7.layers * 32 * 2048 * (4 * 128 + 5))  # fmt: skip


def test_time_to_first_token_grows_with_the_prompt_and_tpot_with_the_context():
    short = llm.time_to_first_token(LLAMA7, "H100 SXM", batch=1, prompt=1024)
    long = llm.time_to_first_token(LLAMA7, "H100 SXM", batch=1, prompt=4096)
    assert 4 <= long / short < 5  # linear in the matmuls, quadratic in attention
    near = llm.time_per_output_token(LLAMA7, "H100 SXM", batch=8, context=512)
    far = llm.time_per_output_token(LLAMA7, "H100 SXM", batch=8, context=8192)
    assert far > near


def test_the_roofline_timings_take_the_activation_dtype_and_the_ceiling():
    from perfmodel import roofline

    kwargs = dict(batch=4, prompt=2048)
    bf16 = llm.time_to_first_token(LLAMA7, "H100 SXM", **kwargs)
    fp8 = llm.time_to_first_token(LLAMA7, "H100 SXM", activation_dtype="fp8", **kwargs)
    assert fp8 == pytest.approx(bf16 / 2, rel=0.02)  # compute-bound: twice the peak
    measured = llm.time_to_first_token(LLAMA7, "H100 SXM", ceiling="measured", **kwargs)
    cost = llm.prefill_cost(LLAMA7, **kwargs)
    assert measured == roofline.estimate(cost, "H100 SXM", ceiling="measured").time_s > bf16
    step = llm.time_per_output_token(LLAMA7, "H100 SXM", batch=8, context=512, ceiling=0.5)
    full = llm.time_per_output_token(LLAMA7, "H100 SXM", batch=8, context=512)
    assert step == pytest.approx(2 * full)  # memory-bound: half the roof, twice the time
    with pytest.raises(ValueError, match="`activation_dtype` must be one of"):
        llm.time_to_first_token(LLAMA7, "H100 SXM", activation_dtype="fp7", **kwargs)
    with pytest.raises(TypeError, match="`activation_dtype` must be a string"):
        llm.time_per_output_token(LLAMA7, "H100 SXM", batch=1, context=8, activation_dtype=8)


def test_the_frontier_trades_latency_for_throughput():
    points = llm.frontier(LLAMA70, "H100 SXM", context=512, batches=(1, 8, 64, 512, 4096))
    steps = [p.step_s for p in points]
    rates = [p.tokens_per_s for p in points]
    assert steps == sorted(steps) and rates == sorted(rates)
    assert points[0].bound == "memory" and points[-1].bound == "compute"
    crossover = llm.compute_bound_batch(LLAMA70, "H100 SXM", context=512)
    below, at = llm.frontier(LLAMA70, "H100 SXM", context=512, batches=(crossover - 1, crossover))
    assert (below.bound, at.bound) == ("memory", "compute")  # the crossover, not a power of two
    assert crossover == 503


def test_a_tensor_parallel_group_pools_its_memory():
    assert llm.max_batch(LLAMA70, "H100 SXM", context=512) == 0  # 138 GB of weights, 80 GB
    two = llm.max_batch(LLAMA70, "H100 SXM", context=512, devices=2)
    room = 0.9 * 2 * 80e9 - llm.weight_bytes(LLAMA70)
    assert two == int(room // (512 * llm.kv_bytes_per_token(LLAMA70)))


def test_quantised_weights_speed_up_a_bandwidth_bound_decode():
    bf16 = llm.time_per_output_token(LLAMA7, "H100 SXM", batch=1, context=256)
    int8 = llm.time_per_output_token(LLAMA7, "H100 SXM", batch=1, context=256,
                                     weight_dtype="int8")  # fmt: skip
    assert 1.8 < bf16 / int8 < 2.0  # the weights halve; activations and the cache do not


@given(lengths=st.lists(st.integers(1, 200), min_size=1, max_size=40), slots=st.integers(1, 8))
def test_continuous_batching_never_loses_to_static(lengths, slots):
    static, continuous = llm.static_vs_continuous(lengths, slots=slots, step_s=0.01)
    assert continuous >= static * (1 - 1e-12)
    if len(set(lengths)) == 1 and len(lengths) % slots == 0:
        assert continuous == pytest.approx(static)


def test_bad_input_is_a_clear_error():
    with pytest.raises(TypeError, match="`model`"):
        llm.kv_bytes_per_token(7e9)
    with pytest.raises(ValueError, match="`context`"):
        llm.max_batch(LLAMA7, "H100 SXM", context=0)
    with pytest.raises(ValueError, match="`output_lengths`"):
        llm.static_vs_continuous([], slots=2, step_s=0.01)
