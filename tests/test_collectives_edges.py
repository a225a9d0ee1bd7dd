"""Edges the review of issue 27 found: each test failed on the code it was written against."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel import comms, distributed
from perfmodel.transformer import Transformer


def test_a_measured_rate_never_beats_the_wire():
    for p in (2, 3, 4, 8):
        measured = comms.allreduce_time(2**30, p, "NVLink 4", algorithm="nvls")
        nameplate = comms.allreduce_time(
            2**30, p, "NVLink 4", algorithm="nvls", ceiling="nameplate"
        )
        assert measured >= nameplate * (1 - 1e-12)


def test_nvls_needs_an_nvswitch():
    with pytest.raises(ValueError, match="`algorithm` 'nvls'"):
        comms.allreduce_time(2**30, 8, "InfiniBand NDR", algorithm="nvls")


@given(n=st.floats(1, 1e10), extra=st.floats(0, 1e9))
@settings(max_examples=60, deadline=None)
def test_the_pipelined_hierarchy_never_gets_faster_with_more_bytes(n, extra):
    def time(nbytes):
        return comms.hierarchical_allreduce_time(nbytes, 8, 4, "NVLink 4", "InfiniBand NDR")

    assert time(n + extra) >= time(n) * (1 - 1e-12)


def test_many_axes_price_tiny_and_huge_buffers():
    link = comms.LinkModel(1e9, 0.0)
    axes = [comms.Axis(4, link), comms.Axis(4, link)]
    assert comms.over_axes("allgather", 200, axes) == pytest.approx(200 * 15 / 16 / 4e9)
    assert comms.over_axes("allgather", 1e36, axes) == pytest.approx(1e36 * 15 / 16 / 4e9)
    assert comms.over_axes("allgather", 0, axes) == 0


def test_a_link_model_is_checked_like_any_link():
    with pytest.raises(ValueError, match="`bandwidth`"):
        comms.LinkModel(0.0, 1e-6)
    with pytest.raises(ValueError, match="`latency`"):
        comms.LinkModel(1e9, math.nan)
    duck = SimpleNamespace(bandwidth=1e9, latency=0.0, measured_busbw={"ring": 2e9})
    with pytest.raises(ValueError, match="`link`.*line rate"):
        comms.allreduce_time(1e9, 8, duck)
    with pytest.raises(ValueError, match="`algorithm`"):
        comms.LinkModel(1e9, 0.0).ceiling("bogus")


def test_a_mesh_is_checked_and_frozen():
    with pytest.raises(ValueError, match="at least one axis"):
        distributed.Mesh({})
    with pytest.raises(TypeError, match="strings"):
        distributed.Mesh({1: 4})
    mesh = distributed.Mesh({"X": 4}, links={"X": "NVLink 4"})
    assert mesh.axis(" X") is not None and mesh.axis("X,") is not None
    with pytest.raises(TypeError):
        mesh.axes["X"] = 100  # type: ignore[index]


@pytest.mark.parametrize("size", [2, 3, 4, 5, 8, 16])
def test_at_the_critical_batch_the_meshs_own_allreduce_takes_the_compute(size):
    link = comms.LinkModel(1e11, 0.0, kind="ici")
    mesh = distributed.Mesh({"X": size, "Y": size}, links={"X": link, "Y": link})
    p = size * size
    tokens = distributed.critical_tokens("data", p, "H100 SXM", mesh)
    peak = 989.5e12
    compute = 4 * tokens / peak  # backward FLOPs per parameter, over the peak
    reduce = mesh.collective_time("allreduce", "X, Y", 2.0)  # bf16 gradient of one parameter
    assert reduce == pytest.approx(compute, rel=1e-6)


def test_a_group_of_one_device_has_no_critical_batch():
    lonely = distributed.Mesh({"X": 1}, links={"X": "NVLink 4"})
    with pytest.raises(ValueError, match="one device"):
        distributed.critical_tokens("data", 1, "H100 SXM", lonely)
    mesh = distributed.Mesh({"X": 4}, links={"X": "NVLink 4"})
    with pytest.raises(ValueError, match="`p`"):
        distributed.critical_tokens("data", 2, "H100 SXM", mesh)


def test_weight_stationary_splits_are_whole_chips_at_least():
    one = distributed.weight_stationary(batch=8, width=8192, mlp_width=32768, chips=1,
                                        ici_bandwidth=9e10)  # fmt: skip
    assert one.comms_s == 0 and one.x == 1
    narrow = distributed.weight_stationary(batch=8, width=8192, mlp_width=8, chips=4,
                                           ici_bandwidth=9e10)  # fmt: skip
    assert 1 <= narrow.x <= 4 and narrow.yz >= 1


def test_a_checkpoint_policy_names_each_tensor_once():
    model = Transformer(width=64, layers=2, heads=4, vocab=128)
    with pytest.raises(ValueError, match="twice"):
        distributed.checkpoint_bytes(model, tokens=16, seq_len=8, keep=["input", "input"])
