"""One data-parallel training step: compute from the roofline, then the gradient all-reduce.

Every device holds the whole model and trains on its own slice of the batch; after the
backward pass the gradients are summed across devices with an all-reduce. The step is

* **compute**: every weight matmul of the forward pass at ``tokens`` rows, priced on the
  device's roofline (:func:`perfmodel.roofline.estimate`), and the backward pass's two
  matmuls per weight (input gradient and weight gradient);
* **communication**: the gradients (2 bytes per parameter in bf16) all-reduced in
  ``buckets`` equal pieces, as PyTorch's DistributedDataParallel does;
* **overlap**: a bucket's all-reduce may start once its gradients exist. The overlap
  condition, with every assumption named:

  1. gradients appear at an even rate through the backward pass;
  2. the network and the compute units run at once without slowing each other;
  3. buckets go out one at a time, in order, each paying the link's latency;
  4. the last bucket is ready only when the backward pass ends, so at least its
     all-reduce is exposed; the optimizer waits for every bucket.

  Under those, the all-reduce hides entirely when
  ``2(p-1)/p · 2Ψ / B + 2(p-1)·α·k  ≤  T_backward`` (k buckets), up to the last bucket.

>>> from perfmodel.transformer import Transformer
>>> gpt = Transformer(width=2048, layers=24, heads=16, vocab=50257)
>>> one = data_parallel_step(gpt, batch_per_device=8, seq_len=2048, devices=1,
...                          device="H100 SXM", link="InfiniBand NDR")
>>> many = data_parallel_step(gpt, batch_per_device=8, seq_len=2048, devices=64,
...                           device="H100 SXM", link="InfiniBand NDR", buckets=16)
>>> one.efficiency, round(many.efficiency, 3)
(1.0, 0.815)
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfmodel._show import gib, percent, seconds, shown
from perfmodel._validate import count, flag
from perfmodel.distributed.memory import TrainingMemory, training_memory
from perfmodel.transformer import Transformer

if TYPE_CHECKING:
    from perfmodel.hardware import DeviceLike, LinkLike

__all__ = ["DataParallelStep", "compute_time", "data_parallel_step"]

#: Bytes per gradient element all-reduced (bf16 or fp16 gradients).
GRADIENT_BYTES = 2


def compute_time(
    model: Transformer,
    tokens: int,
    device: DeviceLike,
    *,
    dtype: str = "bf16",
    ceiling: str | float = "nameplate",
) -> tuple[float, float]:
    """Forward and backward times for ``tokens`` tokens, every weight matmul on its roofline.

    Attention scores, norms and activations are left out, as 6·N·D leaves them out.

    Parameters
    ----------
    model : Transformer
        The model's shape.
    tokens : int
        Tokens in the batch, count.
    device : str or hardware.Device
        A catalogue name or a device you built.
    dtype : str
        The matmuls' dtype, which picks the peak FLOP/s.
    ceiling : {"nameplate", "measured"} or float
        Which roof: the datasheet's, the best published measurements, or a fraction of the
        datasheet's (see :func:`perfmodel.roofline.ceilings`).

    Returns
    -------
    (float, float)
        The forward and the backward pass, s.
    """
    from perfmodel import ops
    from perfmodel.hardware import get
    from perfmodel.roofline import estimate

    if not isinstance(model, Transformer):
        raise TypeError(f"`model` must be a Transformer (got {type(model).__name__}).")
    tokens = count("tokens", tokens)
    device = get(device, argument="device")

    def matmul_s(m: int, k: int, n: int) -> float:
        return estimate(ops.matmul(m, k, n, dtype=dtype), device, ceiling=ceiling).time_s

    forward = backward = 0.0
    # Every layer repeats the same few shapes: each is priced once and counted.
    for (k, n), repeats in Counter(model.weight_shapes()).items():
        forward += repeats * matmul_s(tokens, k, n)
        backward += repeats * (matmul_s(tokens, n, k) + matmul_s(k, tokens, n))
    return forward, backward


@dataclass(frozen=True, slots=True, repr=False)
class DataParallelStep:
    """The parts of one data-parallel step on one device.

    Parameters
    ----------
    devices : int
        Devices in the data-parallel group, count.
    forward_s, backward_s : float
        The forward and the backward pass, s.
    communication_s : float
        All the buckets' all-reduces one after another, s.
    step_s : float
        The whole step, with whatever overlap was allowed, s.
    buckets : int
        Equal pieces the gradients were all-reduced in, count.
    overlap : bool
        Whether a bucket's all-reduce could start as soon as its gradients existed.
    gradient_bytes : float
        What the all-reduce model moves, B: the bf16 gradients, or under ZeRO-3 1.5 times
        that (weights gathered twice, gradients reduce-scattered).
    memory : TrainingMemory
        What each device holds.
    """

    devices: int
    forward_s: float
    backward_s: float
    communication_s: float
    step_s: float
    buckets: int
    overlap: bool
    gradient_bytes: float
    memory: TrainingMemory

    @property
    def compute_s(self) -> float:
        """Forward plus backward: the step on one device with nothing to send."""
        return self.forward_s + self.backward_s

    @property
    def exposed_communication_s(self) -> float:
        """The communication not hidden under compute."""
        return self.step_s - self.compute_s

    @property
    def efficiency(self) -> float:
        """Scaling efficiency: one device's step over this one (the per-device batch fixed)."""
        return self.compute_s / self.step_s

    @property
    def hides_communication(self) -> bool:
        """The overlap condition: all the buckets' all-reduces fit inside the backward pass."""
        return self.communication_s <= self.backward_s

    def __repr__(self) -> str:
        return shown("DataParallelStep", devices=str(self.devices), step=seconds(self.step_s),
                     compute=seconds(self.compute_s),
                     communication=seconds(self.communication_s),
                     exposed=seconds(self.exposed_communication_s),
                     efficiency=percent(self.efficiency), buckets=str(self.buckets),
                     overlap=str(self.overlap), memory=gib(self.memory.total))  # fmt: skip


def data_parallel_step(
    model: Transformer,
    *,
    batch_per_device: int,
    seq_len: int,
    devices: int,
    device: DeviceLike,
    link: LinkLike,
    overlap: bool = True,
    buckets: int = 1,
    gpus_per_node: int = 1,
    intra_link: LinkLike | None = None,
    zero_stage: int = 0,
    recompute: str = "none",
    dtype: str = "bf16",
    ceiling: str | float = "nameplate",
) -> DataParallelStep:
    """Price one step of data-parallel training (the per-device batch fixed: weak scaling).

    Parameters
    ----------
    model : Transformer
        The model's shape.
    batch_per_device : int
        Sequences per device, count.
    seq_len : int
        Tokens per sequence, count.
    devices : int
        Devices in the data-parallel group, count.
    device : str or hardware.Device
        What each device is.
    link : str, hardware.Link or hardware.LinkSpec
        The network between nodes: bandwidth (B/s, one direction) and latency (s).
    overlap : bool
        Start each bucket's all-reduce as soon as its gradients exist.
    buckets : int
        Equal pieces the gradients are all-reduced in, count.
    gpus_per_node : int
        GPUs per node, count. With more than one, the all-reduce is hierarchical:
        ``intra_link`` inside the node, ``link`` between nodes, one port per GPU.
    intra_link : str, hardware.Link or hardware.LinkSpec, optional
        The link inside a node (NVLink, say); needed when ``gpus_per_node`` > 1.
    zero_stage : int
        ZeRO sharding (0 to 3) for the memory; stage 3 (FSDP) also sends 1.5 times the
        bytes (the weights gathered twice, the gradients reduce-scattered).
    recompute : {"none", "selective", "full"}
        Activation recomputation for the memory; ``"full"`` also runs the forward pass
        again inside the backward one.
    dtype : str
        The matmuls' dtype, which picks the peak FLOP/s.
    ceiling : {"nameplate", "measured"} or float
        Which roof: the datasheet's, the best published measurements, or a fraction of the
        datasheet's (see :func:`perfmodel.roofline.ceilings`).

    Returns
    -------
    DataParallelStep
        The step's parts in s, its memory in B, and its scaling efficiency.
    """
    from perfmodel import comms
    from perfmodel.hardware import get

    if not isinstance(model, Transformer):
        raise TypeError(f"`model` must be a Transformer (got {type(model).__name__}).")
    b, s = count("batch_per_device", batch_per_device), count("seq_len", seq_len)
    p, k = count("devices", devices), count("buckets", buckets)
    g = count("gpus_per_node", gpus_per_node)
    overlap = flag("overlap", overlap)
    if p % g:
        raise ValueError(f"`devices` must be a multiple of `gpus_per_node` = {g} (got {p}).")
    if g > 1 and intra_link is None:
        raise ValueError("`intra_link` must be given with `gpus_per_node` > 1 (got None).")
    node = get(device, argument="device")
    network = comms.as_link(link, argument="link")
    inside = None if intra_link is None else comms.as_link(intra_link, argument="intra_link")
    stage = count("zero_stage", zero_stage, minimum=0, maximum=3)
    memory = training_memory(model, data_parallel=p, zero_stage=stage, micro_batch=b,
                             seq_len=s, recompute=recompute)  # fmt: skip
    forward, backward = compute_time(model, b * s, node, dtype=dtype, ceiling=ceiling)
    if recompute == "full":
        backward += forward
    gradient_bytes = GRADIENT_BYTES * model.parameters * (1.5 if stage == 3 else 1.0)
    piece = gradient_bytes / k
    if inside is not None and g > 1:
        one = comms.hierarchical_allreduce_time(piece, g, p // g, inside, network)
    else:
        one = comms.allreduce_time(piece, p, network)
    if overlap:
        finished = 0.0
        for i in range(k):
            ready = forward + backward * (i + 1) / k
            finished = max(ready, finished) + one
        step = max(forward + backward, finished)
    else:
        step = forward + backward + k * one
    return DataParallelStep(p, forward, backward, k * one, step, k, overlap, gradient_bytes, memory)
