"""One training step of a transformer, whole: tensor, pipeline and data parallel at once.

:func:`training_step` prices what one step of a real run does, on one device of each kind of
group, each kernel at what kernels of its kind achieve (:mod:`perfmodel.achieved`):

* **compute**, per micro-batch and pipeline stage: every weight GEMM of the forward pass and
  its two backward GEMMs (split ``tensor`` ways), attention's score and value products
  (forward, and twice that backward: one fused kernel with FlashAttention, else two batched
  GEMMs a head at the matmul ceiling), the memory-bound kernels between them (norms,
  activations, residual adds, dropout: bytes after Korthikanti et al.'s activation count), the
  output layer and its loss on the last stage; recomputation adds the forward again
  (``"full"``) or attention's forward (``"selective"``);
* **tensor-parallel collectives**: two all-reduces of the layer's activations forward and two
  backward (with sequence parallelism, reduce-scatters and all-gathers of the same bytes),
  exposed, as Megatron-LM runs them;
* **the pipeline**: ``m`` micro-batches through ``p`` stages in 1F1B order take
  ``m + (p - 1) / v`` stage times (``v`` interleaved chunks per device), plus the activations
  sent between stages;
* **context parallel** (``context`` ranks split each sequence, as Megatron-Core's ring
  attention does): every GEMM over ``s / context`` of the tokens, attention's FLOPs split
  evenly (causal work balanced by pairing chunks), and each layer's keys and values passed
  ``context - 1`` times round the ring forward (their gradients too, backward), exposed only
  where they outlast the attention they overlap;
* **mixture of experts** (``experts`` MLPs a layer, ``top_k`` a token, spread over
  ``expert_parallel`` of the data-parallel ranks, as Megatron-Core runs them): each device
  runs its local experts as one grouped GEMM over the tokens routed to them (balanced routing:
  ``tokens · top_k · expert_parallel / experts`` rows an expert), after a small router GEMM;
  two all-to-alls a layer forward (dispatch and combine, :func:`perfmodel.comms.alltoall_time`)
  and two backward, exposed; the experts' gradients reduced over the expert-data-parallel
  ranks only;
* **data parallel**: the gradients all-reduced (reduce-scattered and gathered, with a
  distributed optimizer) over the data- and context-parallel ranks after the last
  micro-batch, exposed; then the optimizer step.

The result splits the step into those parts and gives MFU (model FLOPs: three causal forward
passes, attention included, over the dtype's peak) and the memory each device holds, with
the first pipeline stage keeping ``min(m, p)`` micro-batches in flight.

>>> from perfmodel.transformer import Transformer
>>> gpt = Transformer(width=12288, layers=96, heads=96, vocab=51200)
>>> step = training_step(gpt, seq_len=2048, global_batch=1536, device="A100 SXM4 80GB",
...                      tensor=8, pipeline=8, data=16, recompute="full")
>>> step.gpus, round(step.mfu, 2) > 0.3, step.parts()[0][0]
(1024, True, 'matmul')
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfmodel._show import gib, percent, seconds, shown
from perfmodel._validate import choice, count, flag
from perfmodel.achieved import Achieved, achieved, default_links
from perfmodel.distributed.memory import activation_bytes, training_memory
from perfmodel.distributed.moe import moe_parameters
from perfmodel.hardware import get
from perfmodel.transformer import Transformer

if TYPE_CHECKING:
    from perfmodel.hardware import LinkLike

__all__ = ["TrainingStep", "training_step"]

RECOMPUTE = ("none", "selective", "full")
#: Bytes per element of activations, weights and gradients sent (bf16 or fp16).
ELEMENT = 2
#: Bytes the optimizer step moves per parameter it updates: fp32 master weight, two Adam
#: moments and the gradient read, the master weight and moments written, the bf16 copy written.
OPTIMIZER_BYTES = 4 * 4 + 4 * 3 + 2
#: Memory-bound traffic per stored activation byte of a layer (written once, read once forward;
#: the backward pass reads and writes each twice).
TRAFFIC_PER_ACTIVATION = 2.0
#: Memory-bound kernels per layer, forward (norms, bias and activation, dropout, residuals).
ELEMENTWISE_KERNELS = 8


@dataclass(frozen=True, slots=True, repr=False)
class TrainingStep:
    """One training step on one device, split into its parts.

    Parameters
    ----------
    gpus : int
        Devices in the run, count.
    tokens : int
        Tokens the step trains on, count.
    matmul_s, attention_s, memory_bound_s : float
        The step's weight GEMMs, attention products and memory-bound kernels on one device
        (every micro-batch, recomputation included), s.
    tensor_comm_s : float
        Tensor-parallel collectives, exposed, s.
    context_comm_s : float
        Keys and values passed round the context-parallel ring, exposed, s.
    expert_comm_s : float
        Tokens sent to their experts and back (all-to-alls), exposed, s.
    pipeline_bubble_s : float
        Stages idle while the pipeline fills and drains, s.
    pipeline_p2p_s : float
        Activations sent between stages, s.
    data_comm_s : float
        The gradients' reduction across data-parallel replicas, exposed, s.
    optimizer_s : float
        The optimizer step, s.
    model_flops : float
        The step's model FLOPs: three causal forward passes a token, attention included, FLOP.
    peak_flops : float
        Each device's peak for the dtype, FLOP/s.
    memory_bytes : float
        What the busiest device holds, B.
    ceilings : str
        The achieved ceilings used, with their sources.
    """

    gpus: int
    tokens: int
    matmul_s: float
    attention_s: float
    memory_bound_s: float
    tensor_comm_s: float
    context_comm_s: float
    expert_comm_s: float
    pipeline_bubble_s: float
    pipeline_p2p_s: float
    data_comm_s: float
    optimizer_s: float
    model_flops: float
    peak_flops: float
    memory_bytes: float
    ceilings: str

    def parts(self) -> list[tuple[str, float]]:
        """The step's parts in order, each ``(name, seconds)``; they add up to the step.

        Returns
        -------
        list of (str, float)
            Part name and its time, s.
        """
        return [
            ("matmul", self.matmul_s),
            ("attention", self.attention_s),
            ("memory-bound", self.memory_bound_s),
            ("tensor-parallel comm", self.tensor_comm_s),
            ("context-parallel comm", self.context_comm_s),
            ("expert-parallel comm", self.expert_comm_s),
            ("pipeline bubble", self.pipeline_bubble_s),
            ("pipeline sends", self.pipeline_p2p_s),
            ("data-parallel comm", self.data_comm_s),
            ("optimizer", self.optimizer_s),
        ]

    @property
    def step_s(self) -> float:
        """The whole step, s."""
        return sum(seconds for _, seconds in self.parts())

    @property
    def tokens_per_s(self) -> float:
        """Tokens trained per second, the whole run, tokens/s."""
        return self.tokens / self.step_s

    @property
    def mfu(self) -> float:
        """Model FLOPs utilization: model FLOPs per second over every device's peak, fraction."""
        return self.model_flops / self.step_s / (self.gpus * self.peak_flops)

    def __repr__(self) -> str:
        return shown(
            "TrainingStep",
            gpus=str(self.gpus),
            step=seconds(self.step_s),
            mfu=percent(self.mfu),
            tokens_per_s=f"{self.tokens_per_s:,.0f}",
            largest=max(self.parts(), key=lambda part: part[1])[0],
            memory=gib(self.memory_bytes),
        )


def training_step(
    model: Transformer,
    *,
    seq_len: int,
    global_batch: int,
    device: str,
    tensor: int = 1,
    pipeline: int = 1,
    data: int = 1,
    context: int = 1,
    experts: int = 1,
    top_k: int = 1,
    expert_parallel: int = 1,
    micro_batch: int = 1,
    virtual_stages: int = 1,
    sequence_parallel: bool = False,
    recompute: str = "none",
    flash_attention: bool = True,
    distributed_optimizer: bool = False,
    fsdp: bool = False,
    overlap: bool = False,
    gpus_per_node: int = 8,
    intra_link: LinkLike | None = None,
    inter_link: LinkLike | None = None,
    dtype: str = "bf16",
    ceilings: Achieved | None = None,
    check_memory: bool = True,
) -> TrainingStep:
    """Price one step of ``model`` trained with ``tensor × pipeline × data`` devices.

    Parameters
    ----------
    model : Transformer
        The model's shape.
    seq_len : int
        Tokens per sequence, count.
    global_batch : int
        Sequences per step, count; must split into ``data × micro_batch`` pieces.
    device : str
        The devices' catalogue name.
    tensor, pipeline, data : int
        The parallel degrees, count; the run has their product of devices (times
        ``context``).
    context : int
        Context-parallel ranks each sequence is split over, count (needs FlashAttention).
    experts, top_k : int
        A mixture of experts: MLPs a layer, and how many each token is routed to, count (1
        and 1: a dense model).
    expert_parallel : int
        Data- and context-parallel ranks the experts are spread over, count; it must divide
        both ``experts`` and ``data × context``.
    micro_batch : int
        Sequences per micro-batch, count.
    virtual_stages : int
        Interleaved model chunks per device, count (1: plain 1F1B).
    sequence_parallel : bool
        Split the norms and dropout over the tensor-parallel ranks too.
    recompute : {"none", "selective", "full"}
        Activation recomputation.
    flash_attention : bool
        A fused attention kernel (no score matrix in memory); False prices the scores' softmax
        and dropout as memory-bound traffic, as before FlashAttention.
    distributed_optimizer : bool
        Optimizer states sharded over the data-parallel group (ZeRO stage 1).
    fsdp : bool
        Fully sharded data parallel (ZeRO stage 3): weights, gradients and optimizer states
        sharded over the data-parallel group; the weights are gathered forward and backward
        and the gradients reduce-scattered, 1.5 times an all-reduce's bytes, exposed.
    overlap : bool
        Communication overlapped with compute, as Megatron-Core's ``--tp-comm-overlap``,
        ``--overlap-grad-reduce`` and ``--overlap-param-gather`` do: a layer's tensor-parallel
        collectives run under its GEMMs (only what they exceed is exposed), the gradients'
        reduction under the last micro-batch's backward pass, the pipeline's sends under the
        next micro-batch (the experts' all-to-alls stay exposed).
    gpus_per_node : int
        Devices per node, count. Ranks are laid out in Megatron-Core's default order (tensor,
        then context, expert, data, and pipeline outermost), so a group stays inside a node
        where its span fits: tensor ``t``, context ``t·c``, experts ``t·c·ep``; the pipeline's
        sends cross nodes unless the whole layout fits in one.
    intra_link, inter_link : str, hardware.Link or hardware.LinkSpec, optional
        The links inside and between nodes; by default the device's usual
        (:func:`perfmodel.achieved.default_links`).
    dtype : str
        The matmuls' dtype.
    ceilings : Achieved, optional
        The achieved ceilings; by default :func:`perfmodel.achieved.achieved` for ``device``.
    check_memory : bool
        Refuse a layout whose busiest device would not hold its states and activations.

    Returns
    -------
    TrainingStep
        The step's parts, s; its MFU; the busiest device's memory, B.

    Raises
    ------
    TypeError
        If ``model`` is not a Transformer.
    ValueError
        If the batch does not split into micro-batches, the heads over the tensor-parallel
        ranks, or a sequence over the context-parallel ones, or the model does not fit (by
        how much is said). Layers that do not split evenly over the stages leave the busiest
        stage with the most, ``⌈layers / (pipeline · virtual_stages)⌉`` a chunk (at most
        ``⌈layers / pipeline⌉`` in all: chunks may be empty).
    """
    from perfmodel import comms

    if not isinstance(model, Transformer):
        raise TypeError(f"`model` must be a Transformer (got {type(model).__name__}).")
    s, batch = count("seq_len", seq_len), count("global_batch", global_batch)
    if not isinstance(dtype, str):
        raise TypeError(f"`dtype` must be a string such as 'bf16' (got {dtype!r}).")
    dtype = dtype.strip().casefold()
    t, p, d = count("tensor", tensor), count("pipeline", pipeline), count("data", data)
    c = count("context", context)
    b, v = count("micro_batch", micro_batch), count("virtual_stages", virtual_stages)
    node = count("gpus_per_node", gpus_per_node)
    sp, flash = (
        flag("sequence_parallel", sequence_parallel),
        flag("flash_attention", flash_attention),
    )
    zero = flag("distributed_optimizer", distributed_optimizer)
    sharded = flag("fsdp", fsdp)
    recompute = choice("recompute", recompute, RECOMPUTE)
    if batch % (d * b):
        raise ValueError(
            f"`global_batch` must split into `data` × `micro_batch` = {d * b} equal parts "
            f"(got {batch}, which leaves {batch % (d * b)} over)."
        )
    if p > model.layers:
        raise ValueError(f"`pipeline` must be at most the model's {model.layers} layers (got {p}).")
    if s % c:
        raise ValueError(f"`context` must divide `seq_len` {s} (got {c}).")
    e, k = count("experts", experts), count("top_k", top_k)
    if k > e:
        raise ValueError(f"`top_k` must be at most `experts` = {e} (got {k}).")
    ep = count("expert_parallel", expert_parallel)
    if e % ep or (d * c) % ep:
        raise ValueError(
            f"`expert_parallel` must divide `experts` = {e} and `data` × `context` = {d * c} "
            f"(got {ep})."
        )
    if c > 1 and not flash:
        raise ValueError("`context` parallelism needs `flash_attention=True` (ring attention).")
    kv = int(model.kv_heads or model.heads)
    if model.heads % t or kv % t and t % kv:
        raise ValueError(
            f"`tensor` must divide the model's {model.heads} heads, and divide or be a multiple "
            f"of its {kv} KV heads (got {t})."
        )
    if ceilings is None:
        ceil = achieved(device, dtype)
    elif not isinstance(ceilings, Achieved):
        raise TypeError(f"`ceilings` must be an achieved.Achieved (got {ceilings!r}).")
    elif ceilings.dtype != dtype:
        raise ValueError(
            f"`ceilings` are for {ceilings.dtype} and `dtype` is {dtype!r}: give the matmuls' "
            f"dtype both times."
        )
    elif ceilings.device.name != get(device, argument="device").name:
        raise ValueError(
            f"`ceilings` are {ceilings.device.name}'s and `device` is {device!r}: give the same "
            f"device both times."
        )
    else:
        ceil = ceilings
    check = flag("check_memory", check_memory)
    inside, between = default_links(ceil.device.name)
    intra = comms.as_link(inside if intra_link is None else intra_link, argument="intra_link")
    inter = comms.as_link(between if inter_link is None else inter_link, argument="inter_link")
    # the busiest stage's layers: whole chunks of them, never more than its share (a chunk may
    # hold none, as where the embedding or the loss has one to itself)
    m = batch // (d * b)
    v = min(v, -(-model.layers // p))  # chunks that hold a layer; empty ones interleave nothing
    layers = -(-model.layers // (p * v)) * v
    s_local = s // c
    tokens = b * s_local
    h, heads, hd = model.width, model.heads, int(model.head_dim or 0)

    # --- one layer, one micro-batch, one tensor-parallel rank -------------------------------
    def weight_gemm(rows: int, k_in: int, n: int) -> float:
        return ceil.gemm_time(2.0 * rows * k_in * n, ELEMENT * (rows * k_in + k_in * n + rows * n),
                              rows=rows, cols=n)  # fmt: skip

    attention_gemms, mlp_gemms = model.layer_gemms(t)[:2], model.layer_gemms(t)[2:]
    gemm_f = sum(weight_gemm(tokens, k_in, n) for k_in, n in attention_gemms)
    if e == 1:
        gemm_f += sum(weight_gemm(tokens, k_in, n) for k_in, n in mlp_gemms)
    else:  # the router, then the local experts as one grouped GEMM (one launch)
        local, routed = e // ep, -(-tokens * k * ep // e)
        grouped = sum(weight_gemm(routed, k_in, n) - ceil.kernel_s for k_in, n in mlp_gemms)
        gemm_f += weight_gemm(tokens, h, e) + local * grouped + ceil.kernel_s
    gemm_b = 2 * gemm_f  # the input's gradient and the weight's gradient, same shapes
    if flash:  # one fused kernel, causal: half the square computed, split over the ring
        attn_f = ceil.attention_time(2.0 * b * s * s * heads * hd / t / c, seq_len=s_local,
                                     head_dim=hd)  # fmt: skip
    else:  # two batched GEMMs a head, scores (s × hd · hd × s) and values (s × s · s × hd)
        scores = ELEMENT * b * heads / t * (2 * s * hd + s * s)
        attn_f = 2 * ceil.gemm_time(2.0 * b * s * s * heads * hd / t, scores)
    attn_b = 2 * attn_f
    # What a layer stores for its backward pass (Korthikanti et al.), written and read again.
    sbh = s_local * b * h

    def kept(policy: str) -> float:
        dense = activation_bytes(model, micro_batch=b, seq_len=s_local, recompute=policy,
                                 tensor_parallel=t, layers=1, sequence_parallel=sp,
                                 flash_attention=flash)  # fmt: skip
        if e == 1 or policy == "full":
            return dense
        # k routed copies of the MLP's input (2sbh each) and of its two 8sbh intermediates,
        # where a dense layer keeps one of the intermediates (Korthikanti et al.'s count)
        return dense + ELEMENT * sbh * (8 * (k - 1) + k) / t

    stored = kept("none")
    mem_f = ceil.memory_time(TRAFFIC_PER_ACTIVATION * stored, ELEMENTWISE_KERNELS)
    if e > 1:  # tokens permuted into their experts' order and back: k copies read and written
        mem_f += ceil.memory_time(4 * ELEMENT * tokens * k * h / t, 2)
    mem_b = 2 * mem_f
    gemm, attn, mem = gemm_f + gemm_b, attn_f + attn_b, mem_f + mem_b
    if recompute == "full":
        gemm, attn, mem = gemm + gemm_f, attn + attn_f, mem + mem_f
    elif recompute == "selective":
        attn += attn_f
    tp_link = intra if t <= node else inter
    collectives = 4 + (2 if recompute == "full" else 0)
    tp = collectives * comms.allreduce_time(ELEMENT * sbh, t, tp_link) if t > 1 else 0.0
    hidden = flag("overlap", overlap)
    if hidden:
        tp = max(0.0, tp - gemm)
    # ring attention: keys and values round the ring, under the attention they feed
    kv_heads_here = -(-int(model.kv_heads or heads) // t)  # a head on every rank, at least
    kv_bytes = 2 * ELEMENT * tokens * kv_heads_here * hd
    cp_link = inter if t * c > node else intra
    ring = (c - 1) * comms.point_to_point_time(kv_bytes, cp_link) if c > 1 else 0.0
    cp = 3 * max(0.0, ring - attn_f)  # forward, and backward's keys, values and gradients
    # experts: dispatch and combine forward, their gradients backward (and forward again
    # under full recomputation); each device sends its tokens' k copies, exposed even with
    # `overlap` (Megatron-Core's overlap flags cover gradients, parameters and tensor
    # parallelism, not the experts' all-to-alls)
    ep_link = intra if t * c * ep <= node else inter
    a2a = 0.0
    if ep > 1:
        sent = (tokens // t if sp else tokens) * k * h * ELEMENT
        a2a = (2 + (1 if recompute == "full" else 0)) * 2 * comms.alltoall_time(sent, ep, ep_link)

    # --- the last stage's output layer and loss (the busiest stage) -------------------------
    vocab = model.vocab // t
    logits = 3 * ceil.gemm_time(
        2.0 * tokens * h * vocab, ELEMENT * tokens * (h + vocab), rows=tokens, cols=vocab
    )
    loss = ceil.memory_time(3 * 4.0 * tokens * vocab, 3)  # fp32 softmax and its gradient

    stage = layers * (gemm + attn + mem + tp + cp + a2a) + logits + loss
    p2p_link = inter if t * c * d * p > node else intra  # the pipeline outermost
    sends = (
        2 * comms.point_to_point_time(ELEMENT * sbh / (t if sp else 1), p2p_link) if p > 1 else 0.0
    )
    bubble = (p - 1) / v * stage
    # interleaved schedules overlap their sends with compute (Megatron-LM's default,
    # --overlap-p2p-communication), as `overlap` does for plain 1F1B: only the fill's show
    p2p = (m + p - 1) * v * sends if not hidden and v == 1 else (p - 1) * sends

    # --- gradients across replicas, then the optimizer --------------------------------------
    share = layers / model.layers  # the busiest stage's part of the layers (and weights)
    expert_params = model.layers * (e // ep) * model.mlp_parameters if e > 1 else 0
    # the weights a token uses beyond the dense model's: its further top_k - 1 experts
    routed = moe_parameters(model, experts=e, top_k=k).active - model.parameters
    dense_params = model.parameters - (model.layers * model.mlp_parameters if e > 1 else 0)
    d_grad = d * c  # context-parallel ranks hold the same weights

    def reduce(nbytes: float, ranks: int, stride: int) -> float:
        """An all-reduce over ``ranks`` devices ``stride`` apart in Megatron-Core's rank order."""
        if ranks == 1 or nbytes == 0:
            return 0.0
        in_node = min(ranks, max(1, node // stride))
        if 1 < in_node < ranks and ranks % in_node == 0:
            return comms.hierarchical_allreduce_time(nbytes, in_node, ranks // in_node, intra,
                                                     inter)  # fmt: skip
        return comms.allreduce_time(nbytes, ranks, intra if stride * ranks <= node else inter)

    scale = ELEMENT * share / t * (1.5 if sharded else 1.0)
    data_comm = reduce(scale * dense_params, d_grad, t)
    data_comm += reduce(scale * expert_params, d_grad // ep, t * ep)
    if hidden:  # under the last micro-batch's backward pass
        data_comm = max(0.0, data_comm - layers * (gemm_b + attn_b + mem_b))
    sharding = d_grad if zero or sharded else 1
    updated = share / t * (dense_params / sharding + expert_params / max(1, sharding // ep))
    optimizer = ceil.memory_time(OPTIMIZER_BYTES * updated, 4)

    # --- memory of the busiest (first) stage ------------------------------------------------
    stage_of_zero = 3 if sharded else 1 if zero else 0
    states = share * training_memory(dense_params, data_parallel=d_grad, zero_stage=stage_of_zero,
                                     tensor_parallel=t).total  # fmt: skip
    if expert_params:  # the experts' states shard over the expert-data-parallel ranks only
        experts_memory = training_memory(expert_params, data_parallel=d_grad // ep,
                                         zero_stage=stage_of_zero, tensor_parallel=t)  # fmt: skip
        states += share * experts_memory.total
    # 1F1B keeps min(m, p) micro-batches in flight on the first stage; interleaving adds
    # (p - 1) / (p v) of that (Korthikanti et al.)
    in_flight = min(m, p) * (1 + (p - 1) / (p * v) if v > 1 else 1) if p > 1 else 1
    activations = layers * in_flight * kept(recompute)
    memory = states + activations
    capacity = ceil.device.memory_capacity
    if check and capacity and memory > capacity:
        raise ValueError(
            f"the layout does not fit: the first stage needs {memory / 2**30:.1f} GiB per "
            f"device ({states / 2**30:.1f} GiB of states, {activations / 2**30:.1f} GiB of "
            f"activations), {(memory - capacity) / 2**30:.1f} GiB more than {ceil.device.name}'s "
            f"{capacity / 2**30:.1f} GiB; raise tensor or pipeline, or recompute."
        )

    return TrainingStep(
        gpus=t * c * p * d,
        tokens=batch * s,
        matmul_s=m * (layers * gemm + logits),
        attention_s=m * layers * attn,
        memory_bound_s=m * (layers * mem + loss),
        tensor_comm_s=m * layers * tp,
        context_comm_s=m * layers * cp,
        expert_comm_s=m * layers * a2a,
        pipeline_bubble_s=bubble,
        pipeline_p2p_s=p2p,
        data_comm_s=data_comm,
        optimizer_s=optimizer,
        model_flops=3.0
        * (model.forward_flops_per_token(s, causal=True) + 2.0 * routed)
        * batch
        * s,
        peak_flops=ceil.device.peak_flops_by_dtype[dtype],
        memory_bytes=memory,
        ceilings=ceil.describe(),
    )
