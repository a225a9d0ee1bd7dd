"""Serving a language model as an engine runs it: achieved ceilings, tensor parallelism,
quantized weights and the engine's own cost per step.

:mod:`perfmodel.serving.llm` prices prefill and decode on the datasheet's roofline, which
teaches the shapes; :func:`inference_run` predicts what a deployed engine reaches:

* **prefill** (time to first token): each layer's GEMMs over ``batch · prompt`` rows at the
  achieved matmul ceiling, causal attention at the attention ceiling, the memory-bound kernels
  between them, two all-reduces of the activations a layer over the tensor-parallel group,
  the output layer for the last token, and the engine's fixed cost;
* **decode** (time per output token): each step reads every weight (at its stored width;
  quantized weights are dequantized in the GEMM's tile, paid as their FP16 FLOPs) and every
  sequence's KV cache at the achieved bandwidth, runs its GEMMs on the roofline, two
  all-reduces a layer, and pays the engine's fixed cost per step;
* **throughput** of a static batch: ``batch · output / (TTFT + (output - 1) · TPOT)``, at the
  mean context of the answer;
* **continuous batching** (:func:`continuous_run`): ``concurrency`` slots kept full, the KV
  cache in pages of ``block_tokens``; each slot's next request is prefilled alone between
  decode steps, as vLLM schedules without chunked prefill, so the decode steps stall for
  every prefill, and the pages bound how many requests run at once.

>>> from perfmodel.transformer import preset
>>> run = inference_run(preset("Llama 2 7B"), "A100 SXM4 80GB", batch=1, prompt=512, output=128)
>>> 5e-3 < run.tpot_s < 20e-3, run.ttft_s < 0.2
(True, True)
"""

from __future__ import annotations

from dataclasses import dataclass

from perfmodel._show import seconds, shown
from perfmodel._validate import choice, count, fraction, non_negative
from perfmodel.achieved import Achieved, achieved, default_links
from perfmodel.hardware import DTYPES, dtype_bytes, get
from perfmodel.transformer import Transformer

__all__ = [
    "ENGINE_STEP_S",
    "ContinuousRun",
    "InferenceRun",
    "continuous_run",
    "gemm_dtype",
    "inference_run",
]

#: An engine's fixed cost per forward pass (scheduling, sampling), beyond its kernels' own,
#: s; fitted on the calibration half of ``data/published_runs.toml`` (see
#: :mod:`perfmodel.achieved`): about a microsecond, the kernels' fixed costs carry the rest.
ENGINE_STEP_S = 1.255e-6
#: Memory-bound kernels per layer and their traffic, in activation widths per token.
LAYER_KERNELS = 10
LAYER_TRAFFIC = 20


@dataclass(frozen=True, slots=True, repr=False)
class InferenceRun:
    """A static batch served end to end, as predicted.

    Parameters
    ----------
    batch, prompt, output, gpus : int
        Sequences, prompt tokens, answer tokens and devices, count.
    ttft_s : float
        Time to first token: the prefill, s.
    tpot_s : float
        Time per output token: one decode step at the answer's mean context, s.
    decode_parts : dict of str to float
        The decode step's parts (weights, KV cache, compute, all-reduce, engine), s.
    ceilings : str
        The achieved ceilings used, with their sources.
    """

    batch: int
    prompt: int
    output: int
    gpus: int
    ttft_s: float
    tpot_s: float
    decode_parts: dict[str, float]
    ceilings: str

    @property
    def e2e_latency_s(self) -> float:
        """One request from arrival to its last token, s."""
        return self.ttft_s + (self.output - 1) * self.tpot_s

    @property
    def output_tokens_per_s(self) -> float:
        """Answer tokens per second over the whole batch, tokens/s."""
        return self.batch * self.output / self.e2e_latency_s

    def __repr__(self) -> str:
        return shown(
            "InferenceRun",
            batch=str(self.batch),
            gpus=str(self.gpus),
            ttft=seconds(self.ttft_s),
            tpot=seconds(self.tpot_s),
            output_tokens_per_s=f"{self.output_tokens_per_s:,.0f}",
        )


def gemm_dtype(activation_dtype: str) -> str:
    """The dtype whose ceiling an engine's GEMMs run at for activations of ``activation_dtype``:
    fp8 and fp16 their own (fp16 is an fp16-only GPU's), any other bf16.

    Parameters
    ----------
    activation_dtype : str
        The activations' dtype (``"fp16"``, ``"fp8"``...).

    Returns
    -------
    str
        ``"fp8"``, ``"fp16"`` or ``"bf16"``.
    """
    chosen = choice("activation_dtype", activation_dtype, DTYPES)
    return chosen if chosen in ("fp8", "fp16") else "bf16"


def inference_run(
    model: Transformer,
    device: str,
    *,
    batch: int,
    prompt: int,
    output: int,
    tensor: int = 1,
    weight_dtype: str = "fp16",
    kv_dtype: str = "fp16",
    activation_dtype: str = "fp16",
    engine_step_s: float | None = None,
    intra_link: str | None = None,
    ceilings: Achieved | None = None,
) -> InferenceRun:
    """Predict prefill, decode and throughput of a static batch on ``tensor`` devices.

    Parameters
    ----------
    model : Transformer
        The model's shape.
    device : str
        The devices' catalogue name.
    batch, prompt, output : int
        Sequences served at once, prompt tokens (0: decode alone) and answer tokens each,
        count.
    tensor : int
        Tensor-parallel devices, count.
    weight_dtype, kv_dtype, activation_dtype : str
        How weights and the KV cache are stored, and the activations' dtype (``"fp8"``
        activations run the GEMMs at the fp8 ceiling).
    engine_step_s : float, optional
        The engine's fixed cost per forward pass, s; :data:`ENGINE_STEP_S` by default.
    intra_link : str, optional
        The link between the devices; the device's usual NVLink by default.
    ceilings : Achieved, optional
        The achieved ceilings; by default those of ``device`` for ``activation_dtype``.

    Returns
    -------
    InferenceRun
        TTFT and TPOT, s; throughput; the decode step's parts.

    Raises
    ------
    TypeError
        If ``model`` is not a Transformer.
    ValueError
        If ``tensor`` does not divide the heads, or the weights and cache do not fit (by how
        much is said).
    """
    from perfmodel import comms
    from perfmodel.serving import llm

    if not isinstance(model, Transformer):
        raise TypeError(f"`model` must be a Transformer (got {type(model).__name__}).")
    b, n_out = count("batch", batch), count("output", output)
    n_in = count("prompt", prompt, minimum=0)
    t = count("tensor", tensor)
    if model.heads % t:
        raise ValueError(f"`tensor` must divide the model's {model.heads} heads (got {t}).")
    engine = (
        ENGINE_STEP_S if engine_step_s is None else non_negative("engine_step_s", engine_step_s)
    )
    activation_dtype = choice("activation_dtype", activation_dtype, DTYPES)
    w_bytes = dtype_bytes(weight_dtype)
    a_bytes = dtype_bytes(activation_dtype)
    compute_dtype = gemm_dtype(activation_dtype)
    spec = get(device, argument="device")
    if ceilings is None:
        ceil = achieved(spec, compute_dtype, use="serving")
    elif not isinstance(ceilings, Achieved):
        raise TypeError(f"`ceilings` must be an achieved.Achieved (got {ceilings!r}).")
    elif ceilings.device.name != spec.name:
        raise ValueError(
            f"`ceilings` are {ceilings.device.name}'s and `device` is {spec.name!r}: give the "
            f"same device both times."
        )
    else:
        ceil = ceilings
    usual = default_links(ceil.device.name)[0]
    link = comms.as_link(usual if intra_link is None else intra_link, argument="intra_link")
    h, layers = model.width, model.layers
    kv_per_token = llm.kv_bytes_per_token(model, kv_dtype=kv_dtype)  # B
    capacity = ceil.device.memory_capacity
    need = (
        llm.weight_bytes(model, weight_dtype=weight_dtype) + b * (n_in + n_out) * kv_per_token
    ) / t
    if capacity and need > capacity:
        raise ValueError(
            f"the weights and the KV cache need {need / 2**30:.1f} GiB per device, "
            f"{(need - capacity) / 2**30:.1f} GiB more than {ceil.device.name}'s "
            f"{capacity / 2**30:.1f} GiB; raise `tensor` or shrink the batch."
        )

    def forward(rows: int, context: float, causal_rows: bool) -> tuple[float, dict[str, float]]:
        gemms = sum(
            ceil.gemm_time(
                2.0 * rows * k * n, w_bytes * k * n + a_bytes * rows * (k + n), rows=rows, cols=n
            )
            for k, n in model.layer_gemms(t)
        )
        heads_dim = model.heads * int(model.head_dim or 0) / t
        attention_flops = 4.0 * rows * context * heads_dim / (2 if causal_rows else 1)
        kv_read = b * context * kv_per_token / layers / t
        fused = ceil.attention_time(  # a prefill's kernel sees its prompt; decode, the plateau
            attention_flops, seq_len=int(context) if causal_rows else None,
            head_dim=int(model.head_dim or 0) or None,
        )  # fmt: skip
        attention = max(fused, kv_read / ceil.bandwidth)
        elementwise = ceil.memory_time(LAYER_TRAFFIC * a_bytes * rows * h / t, LAYER_KERNELS)
        allreduce = 2 * comms.allreduce_time(a_bytes * rows * h, t, link) if t > 1 else 0.0
        head = ceil.gemm_time(
            2.0 * b * h * model.vocab / t, w_bytes * h * model.vocab / t, rows=b,
            cols=-(-model.vocab // t),
        )  # fmt: skip
        parts = {
            "weights and compute": layers * gemms + head,
            "attention and KV cache": layers * attention,
            "memory-bound": layers * elementwise,
            "all-reduce": layers * allreduce,
            "engine": engine,
        }
        return sum(parts.values()), parts

    ttft = forward(b * n_in, n_in, True)[0] if n_in else 0.0
    tpot, parts = forward(b, n_in + n_out / 2, False)
    return InferenceRun(b, n_in, n_out, t, ttft, tpot, parts, ceil.describe())


@dataclass(frozen=True, slots=True, repr=False)
class ContinuousRun:
    """Requests served with continuous batching, in the steady state, as predicted.

    Parameters
    ----------
    concurrency : int
        Requests in flight at once, count.
    max_concurrency : int
        The most whose KV pages fit beside the weights, count.
    prompt, output : int
        Prompt and answer tokens of each request, count.
    prefill_s : float
        One request's prefill, alone, s.
    step_s : float
        One decode step of ``concurrency`` sequences at the answer's mean context, s.
    """

    concurrency: int
    max_concurrency: int
    prompt: int
    output: int
    prefill_s: float
    step_s: float

    @property
    def cycle_s(self) -> float:
        """Time in which every slot finishes one request: its decode steps and every slot's
        next prefill, s."""
        return self.output * self.step_s + self.concurrency * self.prefill_s

    @property
    def ttft_s(self) -> float:
        """Time to first token of a request that finds a slot free: half a decode step, on
        average, then its prefill, s."""
        return self.step_s / 2 + self.prefill_s

    @property
    def tpot_s(self) -> float:
        """Time per output token a request sees, the other slots' prefills included, s."""
        return self.cycle_s / self.output

    @property
    def output_tokens_per_s(self) -> float:
        """Answer tokens per second over all slots, tokens/s."""
        return self.concurrency * self.output / self.cycle_s

    @property
    def requests_per_s(self) -> float:
        """Requests finished per second, 1/s."""
        return self.concurrency / self.cycle_s

    def __repr__(self) -> str:
        return shown(
            "ContinuousRun",
            concurrency=f"{self.concurrency} of {self.max_concurrency}",
            ttft=seconds(self.ttft_s),
            tpot=seconds(self.tpot_s),
            output_tokens_per_s=f"{self.output_tokens_per_s:,.0f}",
        )


def continuous_run(
    model: Transformer,
    device: str,
    *,
    concurrency: int,
    prompt: int,
    output: int,
    tensor: int = 1,
    block_tokens: int = 16,
    usable: float = 0.9,
    weight_dtype: str = "fp16",
    kv_dtype: str = "fp16",
    activation_dtype: str = "fp16",
    engine_step_s: float | None = None,
    ceilings: Achieved | None = None,
) -> ContinuousRun:
    """Predict a server that keeps ``concurrency`` requests in flight (continuous batching).

    Each request holds ``⌈(prompt + output) / block_tokens⌉`` pages of KV cache; the pages
    of every request in flight and the weights must fit in ``usable`` of the devices' memory
    (vLLM's ``gpu_memory_utilization`` is 0.9 by default). Each decode step serves every
    slot (:func:`inference_run`'s step, at the answer's mean context), and a finished
    request's slot is refilled by a prefill run alone between steps.

    Parameters
    ----------
    model : Transformer
        The model's shape.
    device : str
        The devices' catalogue name.
    concurrency : int
        Requests in flight, count.
    prompt, output : int
        Prompt and answer tokens of each request, count.
    tensor : int
        Tensor-parallel devices, count.
    block_tokens : int
        Tokens a KV page holds, count (vLLM's default: 16).
    usable : float
        The share of each device's memory the weights and pages may use, fraction.
    weight_dtype, kv_dtype, activation_dtype : str
        As for :func:`inference_run`.
    engine_step_s : float, optional
        The engine's fixed cost per forward pass, s.
    ceilings : Achieved, optional
        The achieved ceilings.

    Returns
    -------
    ContinuousRun
        Prefill and step times, s; TTFT, TPOT and throughput; how many requests fit.

    Raises
    ------
    ValueError
        If ``concurrency`` requests' pages do not fit (the most that do is said).

    Examples
    --------
    >>> from perfmodel.transformer import preset
    >>> run = continuous_run(preset("Llama 2 7B"), "A100 SXM4 80GB", concurrency=64,
    ...                      prompt=512, output=256)
    >>> run.max_concurrency, run.tpot_s > run.step_s
    (145, True)
    """
    from perfmodel.serving import llm

    c, n_in, n_out = (
        count("concurrency", concurrency),
        count("prompt", prompt),
        count("output", output),
    )
    t, block = count("tensor", tensor), count("block_tokens", block_tokens)
    share = fraction("usable", usable)
    spec = get(device, argument="device")
    if ceilings is not None and getattr(ceilings, "device", spec) != spec:
        raise ValueError(
            f"`ceilings` are {ceilings.device.name}'s and `device` is {spec.name!r}: give the "
            f"same device both times."
        )
    if spec.memory_capacity is None:
        raise ValueError(f"`device` {spec.name!r} has no memory capacity in the catalogue.")
    room = share * spec.memory_capacity * t - llm.weight_bytes(model, weight_dtype=weight_dtype)
    if room <= 0:
        raise ValueError(
            f"the weights alone need {-room / 2**30:.1f} GiB more than {share:.0%} of "
            f"{t} × {spec.name}; raise `tensor`."
        )
    paged = -(-(n_in + n_out) // block) * block  # the tokens a request's whole pages hold
    pages = paged * llm.kv_bytes_per_token(model, kv_dtype=kv_dtype)
    most = llm.max_batch(model, spec, context=paged, weight_dtype=weight_dtype,
                         kv_dtype=kv_dtype, usable=share, devices=t)  # fmt: skip
    if c > most:
        raise ValueError(
            f"`concurrency` must be at most {most}: that many requests' KV pages "
            f"({pages / 2**20:.0f} MiB each) fit beside the weights in {share:.0%} of "
            f"{t} × {spec.name} (got {c})."
        )

    def served(batch: int, answer: int) -> InferenceRun:
        return inference_run(
            model, device, batch=batch, prompt=n_in, output=answer, tensor=t,
            weight_dtype=weight_dtype, kv_dtype=kv_dtype, activation_dtype=activation_dtype,
            engine_step_s=engine_step_s, ceilings=ceilings,
        )  # fmt: skip

    prefill, step = served(1, 1).ttft_s, served(c, n_out).tpot_s
    return ContinuousRun(c, most, n_in, n_out, prefill, step)
