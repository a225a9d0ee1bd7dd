"""Serving a language model: prefill and decode on the roofline, the KV cache, batching.

A request is a prompt of ``prompt`` tokens and an answer of ``output`` tokens. Serving it
has two phases with opposite shapes:

* **prefill** runs the whole prompt at once: every weight matmul has ``batch · prompt``
  rows, so it is compute-bound; its time is the **time to first token** (TTFT);
* **decode** makes one token per sequence per step: every weight matmul has ``batch``
  rows, so each step reads all the weights (and every sequence's KV cache) to do a little
  arithmetic; it is bandwidth-bound, and its time is the **time per output token** (TPOT).

Batching more sequences into a decode step shares the weight reads, so throughput grows
almost linearly with the batch until the step turns compute-bound, while each sequence's
TPOT grows slowly: the throughput/latency frontier. The KV cache, ``2 · layers · kv_heads ·
head_dim`` values per token, is what limits the batch: it must fit beside the weights.

Costs come from :mod:`perfmodel.ops` and times from :func:`perfmodel.roofline.estimate`;
weights may be stored narrower than the activations (``weight_dtype="int8"`` or ``"fp8"``).

>>> from perfmodel.transformer import preset
>>> llama = preset("Llama 2 7B")
>>> kv_bytes_per_token(llama) / 2**20          # 2 x 32 layers x 4096 x 2 bytes
0.5
>>> max_batch(llama, "H100 SXM", context=4096)
27
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

from perfmodel import ops
from perfmodel._validate import choice, count, positive
from perfmodel.hardware import DTYPES, Device, DeviceLike, dtype_bytes, get
from perfmodel.roofline import estimate
from perfmodel.transformer import Transformer

__all__ = [
    "DecodePoint",
    "compute_bound_batch",
    "decode_cost",
    "frontier",
    "kv_bytes_per_token",
    "max_batch",
    "prefill_cost",
    "static_vs_continuous",
    "time_per_output_token",
    "time_to_first_token",
    "weight_bytes",
]


def _model(model: Any) -> Transformer:
    if not isinstance(model, Transformer):
        raise TypeError(f"`model` must be a Transformer (got {type(model).__name__}).")
    return model


def kv_bytes_per_token(model: Transformer, *, kv_dtype: str = "bf16") -> int:
    """Bytes of KV cache one token keeps: a key and a value per layer and KV head.

    Parameters
    ----------
    model : transformer.Transformer
        The model, for its layers, KV heads and head width.
    kv_dtype : str
        The dtype the cache is stored in.

    Returns
    -------
    int
        Bytes per token of context, B.
    """
    m = _model(model)
    return 2 * m.layers * cast(int, m.kv_heads) * cast(int, m.head_dim) * dtype_bytes(kv_dtype)


def weight_bytes(model: Transformer, *, weight_dtype: str = "bf16") -> float:
    """Bytes of weights at ``weight_dtype``.

    Parameters
    ----------
    model : transformer.Transformer
        The model, for its parameter count.
    weight_dtype : str
        The dtype the weights are stored in.

    Returns
    -------
    float
        The weights' bytes, B.
    """
    return _model(model).parameters * dtype_bytes(weight_dtype)


def max_batch(
    model: Transformer,
    device: DeviceLike,
    *,
    context: int,
    weight_dtype: str = "bf16",
    kv_dtype: str = "bf16",
    usable: float = 0.9,
    devices: int = 1,
) -> int:
    """How many sequences of ``context`` tokens fit their KV cache beside the weights.

    ``devices`` GPUs of a tensor-parallel group share the weights and the cache evenly, so
    together they offer ``devices`` times the memory.

    Parameters
    ----------
    model : transformer.Transformer
        The model served.
    device : str or hardware.Device
        A catalogue name or a device you built; it needs a memory capacity.
    context : int
        Tokens each sequence keeps in its cache (prompt and answer), count.
    weight_dtype : str
        The dtype the weights are stored in.
    kv_dtype : str
        The dtype the KV cache is stored in.
    usable : float
        The share of each device's memory the weights and the cache may use, fraction.
    devices : int
        GPUs of the tensor-parallel group, count.

    Returns
    -------
    int
        Sequences that fit, count; 0 when the weights alone do not fit.

    Examples
    --------
    >>> from perfmodel.transformer import preset
    >>> [max_batch(preset("Llama 2 70B"), "H100 SXM", context=512, devices=t) for t in (1, 2)]
    [0, 36]
    """
    spec = get(device, argument="device")
    if spec.memory_capacity is None:
        raise ValueError(f"`device` {spec.name!r} has no memory capacity in the catalogue.")
    room = positive("usable", usable) * spec.memory_capacity * count(
        "devices", devices
    ) - weight_bytes(model, weight_dtype=weight_dtype)
    per_sequence = count("context", context) * kv_bytes_per_token(model, kv_dtype=kv_dtype)
    return max(0, int(room // per_sequence))


def _layer_costs(model: Transformer, rows: int, dtype: str, weight_dtype: str | None) -> ops.Cost:
    shapes = model.weight_shapes()[:-1]  # the blocks' matrices; the output projection apart
    costs = [ops.matmul(rows, k, n, dtype=dtype, weight_dtype=weight_dtype) for k, n in shapes]
    total = costs[0]
    for cost in costs[1:]:
        total = total + cost
    return total


def prefill_cost(
    model: Transformer,
    *,
    batch: int,
    prompt: int,
    dtype: str = "bf16",
    weight_dtype: str | None = None,
) -> ops.Cost:
    """The cost of prefilling ``batch`` prompts of ``prompt`` tokens.

    Every block's matmuls over all the tokens, causal attention over the prompt, and the
    output projection for the last token of each (the first generated token).

    Parameters
    ----------
    model : transformer.Transformer
        The model served.
    batch : int
        Prompts prefilled together, count.
    prompt : int
        Tokens in each prompt, count.
    dtype : str
        The dtype of the activations (and of the weights unless ``weight_dtype`` is given).
    weight_dtype : str, optional
        A narrower dtype for the weights (``"int8"``, ``"fp8"``).

    Returns
    -------
    ops.Cost
        FLOPs and bytes of the whole prefill.
    """
    m = _model(model)
    b, p = count("batch", batch), count("prompt", prompt)
    cost = _layer_costs(m, b * p, dtype, weight_dtype)
    head_dim = cast(int, m.head_dim)
    attention = ops.attention(b, m.heads, p, head_dim, kv_heads=m.kv_heads, causal=True,
                              fused=True, dtype=dtype)  # fmt: skip
    cost = cost + m.layers * attention
    return cost + ops.matmul(b, m.width, m.vocab, dtype=dtype, weight_dtype=weight_dtype)


def decode_cost(
    model: Transformer,
    *,
    batch: int,
    context: int,
    dtype: str = "bf16",
    weight_dtype: str | None = None,
) -> ops.Cost:
    """The cost of one decode step for ``batch`` sequences with ``context`` cached tokens.

    One token's matmuls per sequence, and attention of one query over the cache.

    Parameters
    ----------
    model : transformer.Transformer
        The model served.
    batch : int
        Sequences decoded together, count.
    context : int
        Tokens in each sequence's KV cache, count.
    dtype : str
        The dtype of the activations and the cache (and of the weights unless
        ``weight_dtype`` is given).
    weight_dtype : str, optional
        A narrower dtype for the weights (``"int8"``, ``"fp8"``).

    Returns
    -------
    ops.Cost
        FLOPs and bytes of one step.
    """
    m = _model(model)
    b, k = count("batch", batch), count("context", context)
    cost = _layer_costs(m, b, dtype, weight_dtype)
    head_dim = cast(int, m.head_dim)
    attention = ops.attention(b, m.heads, 1, head_dim, kv_len=k, kv_heads=m.kv_heads,
                              causal=True, fused=True, dtype=dtype)  # fmt: skip
    cost = cost + m.layers * attention
    return cost + ops.matmul(b, m.width, m.vocab, dtype=dtype, weight_dtype=weight_dtype)


def time_to_first_token(model: Transformer, device: DeviceLike, *, batch: int, prompt: int,
                        weight_dtype: str | None = None, activation_dtype: str = "bf16",
                        ceiling: str | float = "nameplate") -> float:  # fmt: skip
    """Seconds to prefill the batch: the roofline time of :func:`prefill_cost`.

    A bound, not a forecast: at the nameplate no engine reaches it. For what a real engine
    takes, see :func:`perfmodel.serving.inference_run`, which prices every kernel at its
    achieved ceiling.

    Parameters
    ----------
    model : transformer.Transformer
        The model served.
    device : str or hardware.Device
        A catalogue name or a device you built.
    batch : int
        Prompts prefilled together, count.
    prompt : int
        Tokens in each prompt, count.
    weight_dtype : str, optional
        A narrower dtype for the weights (``"int8"``, ``"fp8"``); ``activation_dtype`` by
        default.
    activation_dtype : str, optional
        The activations' dtype, whose peak the matmuls run at (``"fp8"`` for an fp8 engine);
        bf16 by default.
    ceiling : {"nameplate", "measured"} or float, optional
        Which roof (:func:`perfmodel.roofline.estimate`): the datasheet's, the best published
        measurement, or a fraction of the datasheet's (fraction).

    Returns
    -------
    float
        The time to first token, s.

    Examples
    --------
    >>> from perfmodel.transformer import preset
    >>> round(1e3 * time_to_first_token(preset("Llama 2 7B"), "H100 SXM", batch=1, prompt=512), 2)
    6.77
    """
    spec = get(device, argument="device")
    activation_dtype = choice("activation_dtype", activation_dtype, DTYPES)
    cost = prefill_cost(model, batch=batch, prompt=prompt, dtype=activation_dtype,
                        weight_dtype=weight_dtype)  # fmt: skip
    return estimate(cost, spec, ceiling=ceiling).time_s


def time_per_output_token(model: Transformer, device: DeviceLike, *, batch: int, context: int,
                          weight_dtype: str | None = None, activation_dtype: str = "bf16",
                          ceiling: str | float = "nameplate") -> float:  # fmt: skip
    """Seconds per decode step: each sequence's time per output token, at the roofline.

    A bound, not a forecast (see :func:`time_to_first_token`).

    Parameters
    ----------
    model : transformer.Transformer
        The model served.
    device : str or hardware.Device
        A catalogue name or a device you built.
    batch : int
        Sequences decoded together, count.
    context : int
        Tokens in each sequence's KV cache, count.
    weight_dtype : str, optional
        A narrower dtype for the weights (``"int8"``, ``"fp8"``); ``activation_dtype`` by
        default.
    activation_dtype : str, optional
        The activations' and the cache's dtype, whose peak the matmuls run at; bf16 by default.
    ceiling : {"nameplate", "measured"} or float, optional
        Which roof (:func:`perfmodel.roofline.estimate`), or a fraction of the datasheet's
        (fraction).

    Returns
    -------
    float
        The time per output token, s.
    """
    spec = get(device, argument="device")
    activation_dtype = choice("activation_dtype", activation_dtype, DTYPES)
    cost = decode_cost(model, batch=batch, context=context, dtype=activation_dtype,
                       weight_dtype=weight_dtype)  # fmt: skip
    return estimate(cost, spec, ceiling=ceiling).time_s


@dataclass(frozen=True, slots=True)
class DecodePoint:
    """One batch size on the decode frontier.

    Parameters
    ----------
    batch : int
        Sequences decoded together, count.
    step_s : float
        Seconds per decode step, s.
    bound : str
        The roof that bounds the step: ``"compute"`` or ``"memory"``.
    """

    batch: int
    step_s: float
    bound: str

    @property
    def tokens_per_s(self) -> float:
        """Tokens generated per second across the batch, tokens/s."""
        return self.batch / self.step_s


def frontier(
    model: Transformer, device: DeviceLike, *, context: int, batches: tuple[int, ...] = (),
    weight_dtype: str | None = None,
) -> list[DecodePoint]:  # fmt: skip
    """The throughput/latency frontier of decoding.

    For each batch, the step time and which roof bounds it.

    Parameters
    ----------
    model : transformer.Transformer
        The model served.
    device : str or hardware.Device
        A catalogue name or a device you built.
    context : int
        Tokens in each sequence's KV cache, count.
    batches : tuple of int
        The batch sizes, counts; by default the powers of two up to :func:`max_batch`.
    weight_dtype : str, optional
        A narrower dtype for the weights (``"int8"``, ``"fp8"``); bf16 by default.

    Returns
    -------
    list of DecodePoint
        One point per batch, in the order given.
    """
    spec = get(device, argument="device")
    if not batches:
        limit = max_batch(model, spec, context=context,
                          weight_dtype=weight_dtype or "bf16")  # fmt: skip
        batches = tuple(2**i for i in range(20) if 2**i <= max(limit, 1))
    points = []
    for b in batches:
        result = estimate(decode_cost(model, batch=b, context=context,
                                      weight_dtype=weight_dtype), spec)  # fmt: skip
        points.append(DecodePoint(b, result.time_s, result.bound))
    return points


def compute_bound_batch(
    model: Transformer, device: DeviceLike, *, context: int, weight_dtype: str | None = None
) -> int | None:
    """The crossover: the smallest batch at which a decode step is compute-bound.

    Batches up to 65536 are tried, whether or not they fit in memory. Each sequence reads
    its own KV cache, so a long context can keep decode bandwidth-bound at any batch.

    The answer is the same on a tensor-parallel group of GPUs as on one: each GPU does
    ``1/t`` of the FLOPs and reads ``1/t`` of the weights and of the cache, so its intensity,
    and the batch at which it crosses the ridge, do not change (communication aside).

    Parameters
    ----------
    model : transformer.Transformer
        The model served.
    device : str or hardware.Device
        A catalogue name or a device you built.
    context : int
        Tokens in each sequence's KV cache, count.
    weight_dtype : str, optional
        A narrower dtype for the weights (``"int8"``, ``"fp8"``); bf16 by default.

    Returns
    -------
    int or None
        The batch, count; None when no batch up to 65536 is compute-bound.

    Examples
    --------
    >>> from perfmodel.transformer import preset
    >>> compute_bound_batch(preset("Llama 2 70B"), "H100 SXM", context=512)
    503
    >>> compute_bound_batch(preset("Llama 2 7B"), "H100 SXM", context=4096) is None
    True
    """
    spec: Device = get(device, argument="device")

    def compute_bound(batch: int) -> bool:
        cost = decode_cost(model, batch=batch, context=context, weight_dtype=weight_dtype)
        return bool(estimate(cost, spec).bound == "compute")

    # intensity grows with the batch (the weights are shared, each cache is not), so the
    # first power of two that is compute-bound brackets the crossover; bisect below it
    high: int | None = next((2**p for p in range(17) if compute_bound(2**p)), None)
    if high is None:
        return None
    low = high // 2  # memory-bound (or 0)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if compute_bound(middle) else (middle, high)
    return high


def static_vs_continuous(output_lengths: Any, *, slots: int, step_s: float) -> tuple[float, float]:
    """Tokens per second of static and continuous batching over the same requests.

    Static batching serves ``slots`` requests together until the longest finishes; the
    finished ones' slots sit idle. Continuous batching refills a slot the step after its
    request finishes (Yu et al., *Orca*, OSDI 2022). Every decode step takes ``step_s``.

    Parameters
    ----------
    output_lengths : sequence of int
        Tokens each request generates, in arrival order, counts.
    slots : int
        Sequences a decode step serves at once, count.
    step_s : float
        Seconds per decode step, s.

    Returns
    -------
    tuple of float
        Tokens per second of static batching, then of continuous batching, tokens/s.

    Examples
    --------
    >>> static, continuous = static_vs_continuous([10, 100, 10, 100], slots=2, step_s=0.01)
    >>> round(static), round(continuous)     # 220 tokens in 200 steps, or in 120
    (110, 183)
    """
    import heapq

    lengths = [count(f"output_lengths[{i}]", n) for i, n in enumerate(output_lengths)]
    slots, step = count("slots", slots), positive("step_s", step_s)
    if not lengths:
        raise ValueError("`output_lengths` must hold at least one request (got none).")
    static_steps = sum(max(lengths[i : i + slots]) for i in range(0, len(lengths), slots))
    busy = [0] * min(slots, len(lengths))  # steps at which each slot frees up
    heapq.heapify(busy)
    for n in lengths:
        heapq.heappush(busy, heapq.heappop(busy) + n)
    continuous_steps = max(busy)
    tokens = sum(lengths)
    return tokens / (static_steps * step), tokens / (continuous_steps * step)
