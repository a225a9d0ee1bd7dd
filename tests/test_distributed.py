"""Training memory, the data-parallel step, the strategies, the mesh and the network roofline,
each against a published table or a closed form."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel import comms, distributed
from perfmodel.transformer import PRESETS, Transformer

SMALL = Transformer(width=1024, layers=8, heads=16, vocab=32000)
LLAMA2_7B = Transformer(width=4096, layers=32, heads=32, vocab=32000, mlp_width=11008,
                        gated=True, tied_embeddings=False)  # fmt: skip


# ------------------------------------------------------------------------------- memory


def test_zeros_figure_1_is_reproduced():
    # Rajbhandari et al. (2020), Figure 1: 7.5B parameters, 64-way data parallelism, mixed
    # precision Adam: 120 GB per device, then 31.4, 16.6 and 1.9 GB with ZeRO stages 1-3
    per_stage = [distributed.training_memory(7_500_000_000, data_parallel=64, zero_stage=s)
                 for s in range(4)]  # fmt: skip
    assert [round(m.model_states / 1e9, 1) for m in per_stage] == [120.0, 31.4, 16.6, 1.9]


def test_activations_follow_korthikanti_et_al():
    s, b, h, a = 2048, 4, 4096, 32
    full = distributed.activation_bytes(LLAMA2_7B, micro_batch=b, seq_len=s, layers=1)
    assert full == s * b * h * (34 + 5 * a * s / h)
    selective = distributed.activation_bytes(LLAMA2_7B, micro_batch=b, seq_len=s, layers=1,
                                             recompute="selective")  # fmt: skip
    assert selective == 34 * s * b * h
    assert distributed.activation_bytes(LLAMA2_7B, micro_batch=b, seq_len=s, layers=1,
                                        recompute="full") == 2 * s * b * h  # fmt: skip
    split = distributed.activation_bytes(LLAMA2_7B, micro_batch=b, seq_len=s, tensor_parallel=8)
    assert split == pytest.approx(32 * full / 8)


def test_a_7b_model_needs_sharding_to_fit_an_h100():
    alone = distributed.training_memory(LLAMA2_7B)
    assert alone.model_states == 16 * LLAMA2_7B.parameters
    assert not alone.fits("H100 SXM")
    assert distributed.training_memory(LLAMA2_7B, data_parallel=8, zero_stage=3).fits("H100 SXM")
    with_activations = distributed.training_memory(
        LLAMA2_7B, data_parallel=8, zero_stage=3, micro_batch=8, seq_len=4096
    )
    assert not with_activations.fits("H100 SXM")
    recomputed = distributed.training_memory(
        LLAMA2_7B, data_parallel=8, zero_stage=3, micro_batch=8, seq_len=4096, recompute="full"
    )
    assert recomputed.fits("H100 SXM")


@given(
    dp=st.integers(1, 512),
    tp=st.sampled_from([1, 2, 4, 8]),
    pp=st.sampled_from([1, 2, 4]),
)
def test_each_zero_stage_never_needs_more_than_the_last(dp, tp, pp):
    states = [distributed.training_memory(LLAMA2_7B, data_parallel=dp, zero_stage=s,
                                          tensor_parallel=tp, pipeline_parallel=pp).model_states
              for s in range(4)]  # fmt: skip
    assert states == sorted(states, reverse=True)
    assert states[3] == pytest.approx(16 * LLAMA2_7B.parameters / (dp * tp * pp))


# ----------------------------------------------------------------------- data parallelism


def link(bandwidth: float, latency: float = 0.0) -> SimpleNamespace:
    return SimpleNamespace(bandwidth=bandwidth, latency=latency, name="toy")


def step(**kwargs: object) -> distributed.DataParallelStep:
    base = {"batch_per_device": 4, "seq_len": 1024, "devices": 16, "device": "H100 SXM",
            "link": "InfiniBand NDR"}  # fmt: skip
    return distributed.data_parallel_step(SMALL, **{**base, **kwargs})


def test_one_device_sends_nothing_and_loses_nothing():
    alone = step(devices=1)
    assert alone.communication_s == 0 and alone.efficiency == 1


def test_one_bucket_cannot_overlap_and_its_allreduce_is_the_ring_formula():
    one = step(buckets=1)
    expected = comms.allreduce_time(2 * SMALL.parameters, 16, "InfiniBand NDR")
    assert one.communication_s == pytest.approx(expected)
    assert one.step_s == pytest.approx(one.compute_s + expected)  # ready only at the end


def test_when_each_bucket_fits_its_slice_of_backward_only_the_last_is_exposed():
    fast = link(1e13)
    s = step(link=fast, buckets=8)
    per_bucket = s.communication_s / 8
    assert per_bucket <= s.backward_s / 8
    assert s.step_s == pytest.approx(s.compute_s + per_bucket)
    assert s.hides_communication


@settings(max_examples=30, deadline=None)
@given(
    buckets=st.integers(1, 64),
    devices=st.sampled_from([2, 4, 16, 64, 256]),
    bandwidth=st.floats(1e9, 1e12),
    latency=st.floats(0, 1e-4),
)
def test_overlap_never_hurts_and_the_exposed_time_is_at_least_the_last_bucket(
    buckets, devices, bandwidth, latency
):
    net = link(bandwidth, latency)
    overlapped = step(link=net, buckets=buckets, devices=devices)
    serial = step(link=net, buckets=buckets, devices=devices, overlap=False)
    assert overlapped.step_s <= serial.step_s * (1 + 1e-12)
    assert serial.step_s == pytest.approx(serial.compute_s + serial.communication_s)
    assert overlapped.exposed_communication_s >= overlapped.communication_s / buckets * (1 - 1e-9)
    assert 0 < overlapped.efficiency <= 1


def test_hierarchical_data_parallelism_uses_nvlink_inside_the_node():
    flat = step(devices=64)
    tiered = step(devices=64, gpus_per_node=8, intra_link="NVLink 4")
    assert tiered.communication_s == pytest.approx(comms.hierarchical_allreduce_time(
        2 * SMALL.parameters, 8, 8, "NVLink 4", "InfiniBand NDR"))  # fmt: skip
    assert tiered.step_s < flat.step_s


# ---------------------------------------------------------------------------- strategies


def test_critical_batches_are_their_closed_forms():
    f, b = 989.5e12, 47e9  # InfiniBand NDR at the ring busbw NCCL reaches
    for p in (2, 8, 1024):
        data = distributed.critical_tokens("data", p, "H100 SXM", "InfiniBand NDR")
        assert data == pytest.approx(2 * (p - 1) / p * 2 * f / (4 * b))
        fsdp = distributed.critical_tokens("fsdp", p, "H100 SXM", "InfiniBand NDR")
        assert fsdp == pytest.approx(data)  # 1.5x the bytes, 1.5x the compute to hide under
        width = distributed.critical_width(p, "H100 SXM", "InfiniBand NDR")
        assert width == pytest.approx(16 * (p - 1) / (6 * 12) * f / b)
        at_nameplate = distributed.critical_tokens("data", p, "H100 SXM", "InfiniBand NDR",
                                                   ceiling="nameplate")  # fmt: skip
        assert at_nameplate == pytest.approx(data * 47 / 50)
    # tensor parallelism across nodes needs a model about 8x wider than inside one
    inside = distributed.critical_width(8, "H100 SXM", "NVLink 4")
    across = distributed.critical_width(8, "H100 SXM", "InfiniBand NDR")
    assert across / inside == pytest.approx(370 / 47)
    # a Mesh of one switched axis on the same link agrees with the link itself
    node = distributed.Mesh({"X": 8}, links={"X": "NVLink 4"})
    assert distributed.critical_width(8, "H100 SXM", node) == pytest.approx(inside)
    assert distributed.critical_tokens("data", 8, "H100 SXM", node) == pytest.approx(
        distributed.critical_tokens("data", 8, "H100 SXM", "NVLink 4")
    )


def test_the_strategies_send_what_their_papers_say():
    psi = 1e9
    assert distributed.sharded_bytes(psi, 64, "zero2") == distributed.sharded_bytes(psi, 64)
    assert distributed.sharded_bytes(psi, 64, "fsdp") == pytest.approx(1.5 * 2 * 63 / 64 * 2 * psi)
    assert distributed.tensor_parallel_bytes(SMALL, 2048, 4) == pytest.approx(
        8 * 4 * 2 * 3 / 4 * 2048 * 1024 * 2
    )
    assert distributed.pipeline_bytes(SMALL, 2048, 8) == 2 * 8 * 2048 * 1024 * 2


def test_asynchrony_trades_waiting_for_staleness():
    choice = distributed.sync_or_async(mean_compute_s=1.0, slowest_compute_s=1.5,
                                       communication_s=0.5, workers=8)  # fmt: skip
    assert choice.sync_step_s == 2.0 and choice.async_step_s == 1.5 and choice.staleness == 7
    with pytest.raises(ValueError, match="`slowest_compute_s`"):
        distributed.sync_or_async(mean_compute_s=1.0, slowest_compute_s=0.5,
                                  communication_s=0.0, workers=2)  # fmt: skip


# ---------------------------------------------------------------------------------- mesh

MESH = distributed.Mesh({"X": 4, "Y": 2}, links={"X": "NVLink 4", "Y": "InfiniBand NDR"})
SIZES = {"B": 64, "D": 128, "F": 256}


def test_an_unsharded_contraction_needs_no_communication():
    mm = distributed.sharded_matmul(MESH, "B_X, D", "D, F_Y", SIZES)
    assert mm.collectives == () and mm.output == "B_X, F_Y"
    assert mm.local_shapes == {"lhs": (16, 128), "rhs": (128, 128), "out": (16, 128)}
    assert mm.flops_per_device * MESH.devices == 2 * 64 * 128 * 256  # no work repeated
    assert mm.replication == 1 and mm.communication_s == 0


def test_a_contraction_split_on_both_sides_is_all_reduced():
    mm = distributed.sharded_matmul(MESH, "B, D_X", "D_X, F", SIZES)
    (allreduce,) = mm.collectives
    assert (allreduce.kind, allreduce.axes, allreduce.nbytes) == ("allreduce", "X", 64 * 256 * 2)
    assert allreduce.time_s == pytest.approx(comms.allreduce_time(64 * 256 * 2, 4, "NVLink 4"))
    assert mm.output == "B, F" and mm.replication == MESH.devices


def test_a_contraction_split_on_one_side_is_all_gathered_first():
    mm = distributed.sharded_matmul(MESH, "B, D_Y", "D, F", SIZES)
    (gather,) = mm.collectives
    assert (gather.kind, gather.operand, gather.axes) == ("allgather", "lhs", "Y")
    assert gather.time_s == pytest.approx(comms.allgather_time(64 * 128 * 2, 2, "InfiniBand NDR"))
    assert mm.local_shapes["lhs"] == (64, 128)


def test_two_outputs_on_one_axis_gather_the_right_operand():
    mm = distributed.sharded_matmul(MESH, "B_X, D", "D, F_X", SIZES)
    assert [(c.kind, c.operand, c.axes) for c in mm.collectives] == [("allgather", "rhs", "X")]
    assert mm.output == "B_X, F"


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: distributed.Mesh({"x": 4}), ValueError, "capital"),
        (lambda: distributed.Mesh({"X": 0}), ValueError, "axes"),
        (lambda: distributed.Mesh({"X": 2}, links={"Y": "NVLink 4"}), ValueError, "`links`"),
        (lambda: distributed.sharded_matmul(MESH, "B_Z, D", "D, F", SIZES), ValueError, "lacks"),
        (lambda: distributed.sharded_matmul(MESH, "B_X, D_X", "D, F", SIZES), ValueError, "same"),
        (
            lambda: distributed.sharded_matmul(MESH, "B, D", "E, F", {**SIZES, "E": 8}),
            ValueError,
            "exactly one",
        ),
        (
            lambda: distributed.sharded_matmul(MESH, "B_X, D", "D, F", {"B": 6, "D": 8, "F": 8}),
            ValueError,
            "divide",
        ),
        (lambda: distributed.sharded_matmul(MESH, "B; D", "D, F", SIZES), ValueError, "`spec`"),
    ],
)
def test_bad_meshes_and_specs_are_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


# ----------------------------------------------------------------------- network roofline


def test_coates_two_node_table_and_his_1000_flops_per_network_byte():
    m, k, n = 2048, 1024, 512
    table = distributed.split_minibatch(m, k, n)
    assert table["before"]["flops"] == 2 * m * k * n and table["after"]["flops"] == m * k * n
    assert table["before"]["bytes"] == 4 * (m * k + k * n + m * n)
    assert table["after"]["bytes"] == 4 * m * k + 2 * k * n + 2 * m * n
    assert table["before"]["intensity"] == pytest.approx(m * k * n / (2 * (m * k + k * n + m * n)))
    assert table["after"]["intensity"] == pytest.approx(
        m * k * n / (2 * (2 * m * k + k * n + m * n))
    )
    assert table["after"]["intensity"] < table["before"]["intensity"]
    # 6 TFLOP/s over about 6 GB/s: about 1000 FLOPs per network byte
    assert distributed.network_ridge("GPU circa 2015", 6e9, dtype="fp32") == pytest.approx(1000)
    fdr = distributed.network_ridge("GPU circa 2015", "InfiniBand FDR", dtype="fp32")
    assert 850 < fdr < 1000
    # the weight update does N/4 FLOPs per network byte on two nodes
    assert distributed.data_parallel_network_intensity(4000) == 1000
    assert distributed.attainable_flops(500, "GPU circa 2015", 6e9, dtype="fp32") == 3e12
    assert distributed.attainable_flops(5000, "GPU circa 2015", 6e9, dtype="fp32") == 6e12


def test_mfu_and_the_published_runs():
    assert distributed.mfu(tokens_per_s=1e5, flops_per_token=6e9, devices=4,
                           peak_flops=1e15) == pytest.approx(0.15)  # fmt: skip
    t = distributed.step_time_for_mfu(tokens_per_step=1e6, flops_per_token=6e9, devices=8,
                                      peak_flops=1e15, mfu=0.5)  # fmt: skip
    assert t == pytest.approx(1.5)
    assert all(0 < run.utilization < 1 and run.source for run in distributed.PUBLISHED_RUNS)
    assert math.isclose(
        {run.name: run.utilization for run in distributed.PUBLISHED_RUNS}["PaLM 540B"], 0.462
    )


@given(
    st.sampled_from(sorted(PRESETS)), st.integers(1, 1 << 16), st.sampled_from(["H100 SXM", "B200"])
)
@settings(max_examples=25, deadline=None)
def test_compute_time_prices_each_repeated_shape_once_and_counts_it(name, tokens, device):
    from perfmodel import ops
    from perfmodel.roofline import estimate

    model = PRESETS[name]
    forward = backward = 0.0
    for k, n in model.weight_shapes():  # the oracle: every matmul priced on its own
        forward += estimate(ops.matmul(tokens, k, n, dtype="bf16"), device).time_s
        backward += estimate(ops.matmul(tokens, n, k, dtype="bf16"), device).time_s
        backward += estimate(ops.matmul(k, tokens, n, dtype="bf16"), device).time_s
    fast = distributed.compute_time(model, tokens, device)
    assert fast == pytest.approx((forward, backward), rel=1e-12)
