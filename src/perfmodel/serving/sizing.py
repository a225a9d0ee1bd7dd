"""Serving a language model from bare numbers: parameter bytes, KV bytes a token, a slice.

Before any architecture is fixed, three numbers size a deployment: the bytes of the
weights, the bytes of KV cache each token keeps, and the slice of ``N`` chips it runs on
(Austin et al., *How to Scale Your Model*, "All About Transformer Inference"). With the
weights and the caches sharded evenly over the slice:

* the largest batch is what fits beside the weights, ``(N·HBM - weights) / (context·KV)``;
* a decode step reads every weight (``weights / (N·W)``) unless its matmuls take longer
  (``2·active·batch / (N·C)``), and reads every sequence's cache besides, which no batch
  shares: ``max(weights / (N·W), 2·active·B / (N·C)) + B·context·KV / (N·W)``.

No :class:`perfmodel.transformer.Transformer` is needed; :mod:`perfmodel.serving.llm`
prices a built one node by node.

>>> step = decode_step(30e9, 819e6 / 8192, "TPU v5e", chips=16, batch=4, context=8192)
>>> round(step.step_s * 1e3, 1)                                 # the book: 2.5 ms
2.5
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfmodel._validate import count, fraction, non_negative, positive

if TYPE_CHECKING:
    from perfmodel.hardware import Device, DeviceLike

__all__ = ["DecodeStep", "decode_step", "slice_max_batch"]


def _slice(device: DeviceLike, chips: int) -> tuple[Device, int]:
    from perfmodel.hardware import get

    return get(device, argument="device"), count("chips", chips)


def slice_max_batch(
    weight_bytes: float,
    kv_bytes_per_token: float,
    device: DeviceLike,
    *,
    chips: int,
    context: int,
    usable: float = 1.0,
) -> int:
    """Sequences of ``context`` tokens whose caches fit on the slice beside the weights.

    Parameters
    ----------
    weight_bytes : float
        The weights as stored, B.
    kv_bytes_per_token : float
        KV cache per token, every layer together, B.
    device : str or hardware.Device
        Each chip; it needs a memory capacity.
    chips : int
        Chips in the slice, count.
    context : int
        Tokens each sequence keeps, count.
    usable : float
        Share of each chip's memory the weights and caches may use, fraction.

    Returns
    -------
    int
        Sequences, count; 0 when the weights alone do not fit.

    Examples
    --------
    >>> slice_max_batch(18.4e9, 262e3, "TPU v5e", chips=16, context=128_000)   # the book: 7
    7
    """
    spec, n = _slice(device, chips)
    capacity = spec.memory_capacity
    if capacity is None:
        raise ValueError(f"`device` {spec.name!r} has no memory capacity in the catalogue.")
    room = fraction("usable", usable) * capacity * n - non_negative("weight_bytes", weight_bytes)
    per_sequence = positive("kv_bytes_per_token", kv_bytes_per_token) * count("context", context)
    return max(0, int(room // per_sequence))


@dataclass(frozen=True, slots=True)
class DecodeStep:
    """One decode step on a slice, by what bounds it.

    Parameters
    ----------
    weights_s : float
        Reading every weight once from memory, s.
    compute_s : float
        The matmuls at peak, ``2 · active parameters · batch`` FLOPs, s.
    cache_s : float
        Reading every sequence's KV cache, s.
    """

    weights_s: float
    compute_s: float
    cache_s: float

    @property
    def step_s(self) -> float:
        """The step: the larger of the weight reads and the matmuls, then the caches, s."""
        return max(self.weights_s, self.compute_s) + self.cache_s


def decode_step(
    weight_bytes: float,
    kv_bytes_per_token: float,
    device: DeviceLike,
    *,
    chips: int,
    batch: int,
    context: int,
    active_parameters: float | None = None,
    dtype: str = "bf16",
) -> DecodeStep:
    """One decode step of ``batch`` sequences with ``context`` tokens cached, on a slice.

    Parameters
    ----------
    weight_bytes : float
        The weights as stored, B.
    kv_bytes_per_token : float
        KV cache per token, every layer together, B.
    device : str or hardware.Device
        Each chip: its memory bandwidth and its peak FLOP/s in ``dtype``.
    chips : int
        Chips in the slice, count.
    batch : int
        Sequences decoded together, count.
    context : int
        Tokens each sequence has cached, count.
    active_parameters : float, optional
        Parameters one token uses, count (an MoE's active ones); by default one per byte
        of ``weight_bytes``, as int8 weights are.
    dtype : str
        The matmuls' dtype, for the peak FLOP/s.

    Returns
    -------
    DecodeStep
        The step's three terms; :attr:`DecodeStep.step_s` is its time.

    Examples
    --------
    >>> step = decode_step(30e9, 819e6 / 8192, "TPU v5e", chips=16, batch=256, context=8192)
    >>> round(step.step_s * 1e3)                                    # the book: 21 ms
    21
    """
    spec, n = _slice(device, chips)
    weights = non_negative("weight_bytes", weight_bytes)
    kv = non_negative("kv_bytes_per_token", kv_bytes_per_token)
    b, ctx = count("batch", batch), count("context", context)
    active = (
        weights if active_parameters is None else positive("active_parameters", active_parameters)
    )
    bandwidth = n * spec.memory_bandwidth
    peak = n * spec.peak_flops(dtype)
    return DecodeStep(weights / bandwidth, 2 * active * b / peak, b * ctx * kv / bandwidth)
