"""Transformer counts against published parameter counts and the 6·N·D rule."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfmodel.distributed import training_flops
from perfmodel.transformer import Transformer

LLAMA2_7B = Transformer(width=4096, layers=32, heads=32, vocab=32000, mlp_width=11008,
                        gated=True, tied_embeddings=False)  # fmt: skip


def test_published_parameter_counts_are_reproduced():
    # Meta's Llama 2 7B and Llama 3 8B (GQA, 8 KV heads), as their checkpoints count them
    assert LLAMA2_7B.parameters == 6_738_415_616
    llama3_8b = Transformer(width=4096, layers=32, heads=32, kv_heads=8, vocab=128256,
                            mlp_width=14336, gated=True, tied_embeddings=False)  # fmt: skip
    assert llama3_8b.parameters == 8_030_261_248
    # GPT-3 175B (Brown et al. 2020): 96 layers of width 12288; biases and learned positions,
    # which this count leaves out, are the last 0.3%
    gpt3 = Transformer(width=12288, layers=96, heads=96, vocab=50257)
    assert gpt3.parameters == pytest.approx(175e9, rel=0.005)


@given(
    width=st.sampled_from([256, 512, 1024]),
    heads=st.sampled_from([1, 2, 4, 8, 16]),
    layers=st.integers(1, 8),
    gated=st.booleans(),
    tied=st.booleans(),
)
def test_the_parts_add_up_and_fewer_kv_heads_mean_fewer_weights(width, heads, layers, gated, tied):
    mha = Transformer(width=width, layers=layers, heads=heads, vocab=1000, gated=gated,
                      tied_embeddings=tied)  # fmt: skip
    assert mha.attention_parameters == 4 * width * width
    assert mha.mlp_parameters == (3 if gated else 2) * width * 4 * width
    assert mha.parameters == (layers * (mha.attention_parameters + mha.mlp_parameters + 2 * width)
                              + width + (1 if tied else 2) * 1000 * width)  # fmt: skip
    mqa = Transformer(width=width, layers=layers, heads=heads, kv_heads=1, vocab=1000)
    assert mqa.attention_parameters == 2 * width * width + 2 * width * (width // heads)
    assert mqa.attention_parameters <= mha.attention_parameters


def test_training_flops_are_six_n_d_and_three_forward_passes():
    assert LLAMA2_7B.training_flops(1e9) == 6 * LLAMA2_7B.parameters * 1e9
    matrices = LLAMA2_7B.layers * (LLAMA2_7B.attention_parameters + LLAMA2_7B.mlp_parameters)
    matrices += LLAMA2_7B.vocab * LLAMA2_7B.width
    assert LLAMA2_7B.training_flops(1e9, seq_len=0) == pytest.approx(6 * matrices * 1e9)
    # attention adds 4·layers·seq·width per token forward, half of it under a causal mask
    extra = LLAMA2_7B.forward_flops_per_token(4096) - LLAMA2_7B.forward_flops_per_token(0)
    assert extra == 4 * 32 * 4096 * 4096
    assert LLAMA2_7B.forward_flops_per_token(4096, causal=True) == pytest.approx(
        LLAMA2_7B.forward_flops_per_token(0) + extra / 2
    )


def test_palms_reported_training_compute_is_six_n_d():
    # Chowdhery et al. (2022), its training-compute table: PaLM 540B, 780B tokens, 2527.2 ZFLOPs
    assert training_flops(540.35e9, 780e9) == pytest.approx(2527.2e21, rel=1e-3)


@pytest.mark.parametrize(
    ("kwargs", "error", "message"),
    [
        ({"width": 4096.5}, ValueError, "`width`"),
        ({"heads": 0}, ValueError, "`heads`"),
        ({"kv_heads": 5}, ValueError, "`kv_heads`"),
        ({"heads": 3}, ValueError, "`heads`"),
        ({"gated": "yes"}, TypeError, "`gated`"),
        ({"mlp_width": -1}, ValueError, "`mlp_width`"),
    ],
)
def test_bad_shapes_are_clear_errors(kwargs, error, message):
    shape = {"width": 4096, "layers": 2, "heads": 32, "vocab": 1000, **kwargs}
    with pytest.raises(error, match=message):
        Transformer(**shape)
