"""The JAX scaling book's worked problems, answered through the public API in a few calls each.

Austin et al., *How to Scale Your Model* (https://jax-ml.github.io/scaling-book), chapters
"Sharded Matrices and How to Multiply Them" and "How to Parallelize a Transformer for
Training". Each problem states its own hardware (TPU v4p/v5p ICI: 4.5e10 or 9e10 B/s one
way per link, about 1 µs a hop; v5p: 4.59e14 bf16 FLOP/s); the links below are built from
those numbers, not from the catalogue, so each test answers the question as asked. Where
the book rounds differently the comment says so, and the test asserts the package's figure.
"""

from __future__ import annotations

import pytest

from perfmodel import comms, distributed
from perfmodel.hardware import Link

V4P_ICI = Link(name="TPU v4p ICI (the book's)", kind="ici", bandwidth=4.5e10, latency=1e-6,
               source="Austin et al., How to Scale Your Model")  # fmt: skip
V5P_ICI = Link(name="TPU v5p ICI (the book's)", kind="ici", bandwidth=9e10, latency=1e-6,
               source="Austin et al., How to Scale Your Model")  # fmt: skip
CUBE = distributed.Mesh({"X": 4, "Y": 4, "Z": 4}, links=dict.fromkeys("XYZ", V4P_ICI))
B, D = 1024, 4096


def test_sharding_pop_quiz_int8_array_per_device_and_in_total():
    mesh = distributed.Mesh({"X": 2, "Y": 8, "Z": 2})
    a = mesh.shard("I_XY, J", {"I": 128, "J": 2048}, dtype_bytes=1)
    assert a.local_shape == (8, 2048)
    assert a.bytes_per_device == 16_384
    assert a.stored_bytes == 512 * 1024  # 512 KiB: two replicas along Z


def test_sharding_pop_quiz_fp32_array_on_h100s():
    a = distributed.Mesh({"X": 8, "Y": 2}).shard("I_XY, J", {"I": 1024, "J": 4096},
                                                dtype_bytes=4)  # fmt: skip
    assert a.local_shape == (64, 4096) and a.bytes_per_device == 2**20
    # "about 1e6 / 3.4e12 = 294ns" to read it from HBM; the book rounds 1 MiB to 1e6 B
    assert a.bytes_per_device / 3.4e12 == pytest.approx(308e-9, rel=0.01)


def test_sharding_question_1_replicated_bytes_over_one_copy():
    mesh = distributed.Mesh({"X": 4, "Y": 8, "Z": 2})
    a = mesh.shard("I_X, J, K", {"I": 64, "J": 32, "K": 16})
    assert a.stored_bytes / a.total_bytes == 16 == a.replication


def test_sharding_question_2_allgather_and_allreduce_on_a_4x4x4_cube():
    array = CUBE.shard("B_X, D_Y", {"B": B, "D": D})
    # (1) AllGather_X: each Y-shard gathers its 2BD/Y bytes over X: "23 µs"
    gathered_x = array.bytes_per_device * CUBE.size("X")
    one = CUBE.collective_time("allgather", "X", gathered_x, combine="max")
    assert one == pytest.approx(23.3e-6, rel=0.01)
    # (2) AllGather_XY: the book says 2BD / (2 W_ici) = 46 µs, treating the two axes as
    # twice the bandwidth for the whole array; counting the hops, the first axis gathers
    # n/16 -> n/4 before the second gathers n/4 -> n, (1 + 1/p) times the book's figure
    # at p = 4: 58 µs (still far above the 4 µs latency floor, as the book says)
    both = CUBE.collective_time("allgather", "X, Y", 2 * B * D, combine="max")
    assert both == pytest.approx(2 * B * D / (2 * 9e10) * (1 + 1 / 4), rel=0.01)
    # (3) AllReduce_Z of the [B_X, D_Y] shards, each 2BD/(XY): "11.6 µs"
    three = CUBE.collective_time("allreduce", "Z", array.bytes_per_device, combine="max")
    assert three == pytest.approx(11.6e-6, rel=0.01)


def test_sharding_question_3_a_tiny_allgather_is_latency_bound():
    tiny = CUBE.shard("B_X", {"B": 128})
    seconds = CUBE.collective_time("allgather", "X", tiny.bytes_per_device * 4)
    assert seconds == pytest.approx(2e-6, rel=0.01)  # "2 hops ... roughly 2us"
    assert CUBE.axis("X").hops("allgather") == 2


def _strategy_times(d: int, batch: int, peak: float = 4.59e14) -> tuple[float, float]:
    """The book's two ways to multiply X[B, D] by Y[D_X, F] on a 16-chip ring, in seconds."""
    link = Link(name="book ICI", kind="ici", bandwidth=9e10, latency=0.0, source="the book")
    ring = distributed.Mesh({"X": 16}, links={"X": link})
    sizes = {"B": batch, "D": d, "F": 8192}
    gather = distributed.sharded_matmul(ring, "B, D", "D_X, F", sizes, combine="max")
    reduce = distributed.sharded_matmul(ring, "B, D_X", "D_X, F", sizes, combine="max")
    return (
        max(gather.flops_per_device / peak, gather.communication_s),
        max(reduce.flops_per_device / peak, reduce.communication_s),
    )


def test_sharding_question_4_reducing_partial_sums_wins_above_d_5100_at_large_batch():
    # "When our batch is large (B > 2550) ... this alternative strategy is typically better
    # ... when D > 2 * 2550 = 5100" (C / W_ici = 4.59e14 / 1.8e11 = 2550)
    def reduce_wins(d: int) -> bool:
        gather_s, reduce_s = _strategy_times(d, batch=8192)
        return reduce_s < gather_s

    assert not reduce_wins(4096) and reduce_wins(6144)
    threshold = next(d for d in range(4096, 8192, 16) if reduce_wins(d))
    assert threshold == pytest.approx(5100, rel=0.02)


def test_training_critical_batch_for_data_parallelism_on_v5p():
    one_axis = distributed.Mesh({"X": 16}, links={"X": V5P_ICI})
    pod = distributed.Mesh({"X": 16, "Y": 16, "Z": 16}, links=dict.fromkeys("XYZ", V5P_ICI))
    # "our batch size per chip must be at least 2,550" over one axis, "850" over three
    assert distributed.critical_tokens("data", 4096, "TPU v5p", one_axis) == pytest.approx(
        2550, rel=0.01
    )
    per_chip = distributed.critical_tokens("fsdp", 4096, "TPU v5p", pod)
    assert per_chip == pytest.approx(850, rel=0.01)
    # question 3.2: "850 * 4096 = 3.48M tokens", above the 3M batch: comms-bound
    assert per_chip * 4096 == pytest.approx(3.48e6, rel=0.01) and per_chip * 4096 > 3e6


def test_training_critical_batch_across_the_data_centre_network():
    # "4.59e14 / 6.25e9 = 73,440" tokens per chip over DCN (one NIC direction, a switch)
    tokens = distributed.critical_tokens("data", 4096, "TPU v5p", "TPU v5p DCN")
    assert tokens == pytest.approx(73_440, rel=0.01)


def test_training_critical_batch_for_fsdp_with_tensor_parallelism():
    pod = distributed.Mesh({"X": 16, "Y": 16, "Z": 16}, links=dict.fromkeys("XYZ", V5P_ICI))
    # "B/N > 2550² / (2F)": about 99 tokens per chip at F = 32768 ...
    big = distributed.fsdp_tensor_critical_tokens(pod, "X, Y", "Z", "TPU v5p", 32768)
    assert big == pytest.approx(99, rel=0.02)
    # ... and 235 for LLaMA-2 13B's F = 13824 (question 3.3)
    small = distributed.fsdp_tensor_critical_tokens(pod, "X, Y", "Z", "TPU v5p", 13824)
    assert small == pytest.approx(235, rel=0.01)


def test_one_torus_model_everywhere_agrees_with_the_axis():
    """A mesh's collective is its Axis's: the same hops, wraparound and both directions."""
    ring = comms.Axis(4, V4P_ICI)
    assert CUBE.collective_time("allreduce", "Z", 1e6) == ring.time("allreduce", 1e6)
    mm = distributed.sharded_matmul(CUBE, "B_X, D_Y", "D_Y, F", {"B": B, "D": D, "F": 8192})
    (reduce,) = mm.collectives
    assert reduce.time_s == ring.time("allreduce", reduce.nbytes)
