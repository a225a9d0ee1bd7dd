"""What each parallelism strategy sends, and the batch (or width) at which it hides.

Per device and per training step, with Ψ parameters, 2-byte (bf16) weights and gradients,
``p`` devices in the group and ``t`` tokens per device:

* **data parallelism** and **ZeRO stages 1-2**: a reduce-scatter and an all-gather of the
  gradients, ``2(p-1)/p · 2Ψ`` bytes (Rajbhandari et al., *ZeRO*, 2020, section 7);
* **ZeRO-3 / FSDP**: the weights all-gathered for the forward pass and again for the
  backward, and the gradients reduce-scattered: ``3(p-1)/p · 2Ψ``, 1.5 times as much;
* **tensor parallelism** (Shoeybi et al., *Megatron-LM*, 2019): two all-reduces of the
  activations per layer in the forward pass and two in the backward, ``t · width · 2``
  bytes each, over the ``p`` ways a layer is split;
* **pipeline parallelism**: each stage boundary passes activations forward and their
  gradients back, ``2 · t · width · 2`` bytes per micro-batch of ``t`` tokens (lecture 10
  schedules the stages and counts the bubble).

A strategy's *critical batch* is where its communication takes as long as the compute it
can hide under: below it, the network sets the pace (the JAX scaling book derives the same
thresholds for TPUs). For data parallelism and FSDP it is a number of tokens per device,
about ``F / B`` (peak FLOP/s over network bytes/s); for tensor parallelism the batch
cancels, and what must be large enough is the model's width.

>>> round(critical_tokens("data", 1024, "H100 SXM", "InfiniBand NDR"))
19771
>>> [round(critical_width(8, "H100 SXM", link)) for link in ("NVLink 4", "InfiniBand NDR")]
[3420, 30784]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfmodel._validate import choice, count, non_negative, positive
from perfmodel.transformer import Transformer

if TYPE_CHECKING:
    from perfmodel.hardware import DeviceLike, LinkLike

__all__ = [
    "STRATEGIES",
    "SyncOrAsync",
    "critical_tokens",
    "critical_width",
    "pipeline_bytes",
    "sharded_bytes",
    "sync_or_async",
    "tensor_parallel_bytes",
]

#: Strategies whose traffic scales with the parameters.
STRATEGIES = ("data", "zero1", "zero2", "zero3", "fsdp")
BYTES = 2  # bf16 weights, gradients and activations


def sharded_bytes(parameters: float, p: int, strategy: str = "data") -> float:
    """Bytes each device sends per step under a parameter-sharded ``strategy`` (see above).

    Parameters
    ----------
    parameters : float
        The model's parameters, count.
    p : int
        Devices in the group, count.
    strategy : {"data", "zero1", "zero2", "zero3", "fsdp"}
        Which strategy.

    Returns
    -------
    float
        Bytes per device per step, B.

    Examples
    --------
    >>> sharded_bytes(1e9, 8, "zero3") / sharded_bytes(1e9, 8, "data")
    1.5
    """
    parameters = non_negative("parameters", parameters)
    p = count("p", p)
    strategy = choice("strategy", strategy, STRATEGIES)
    passes = 3 if strategy in ("zero3", "fsdp") else 2
    return passes * (p - 1) / p * BYTES * parameters


def tensor_parallel_bytes(model: Transformer, tokens: int, p: int) -> float:
    """Bytes each device sends per step for ``p``-way tensor parallelism.

    That is four ring all-reduces per layer of ``tokens · width · 2`` bytes, each
    ``2(p-1)/p`` of that on the wire.

    Parameters
    ----------
    model : Transformer
        The model's shape.
    tokens : int
        Tokens per device per step, count.
    p : int
        Ways each layer is split, count.

    Returns
    -------
    float
        Bytes per device per step, B.
    """
    if not isinstance(model, Transformer):
        raise TypeError(f"`model` must be a Transformer (got {type(model).__name__}).")
    tokens, p = count("tokens", tokens), count("p", p)
    return model.layers * 4 * 2 * (p - 1) / p * tokens * model.width * BYTES


def pipeline_bytes(model: Transformer, tokens_per_micro_batch: int, micro_batches: int) -> float:
    """Bytes crossing one stage boundary per step: activations forward, gradients back.

    Parameters
    ----------
    model : Transformer
        The model's shape.
    tokens_per_micro_batch : int
        Tokens in each micro-batch, count.
    micro_batches : int
        Micro-batches per step, count.

    Returns
    -------
    float
        Bytes per step, B.
    """
    if not isinstance(model, Transformer):
        raise TypeError(f"`model` must be a Transformer (got {type(model).__name__}).")
    t = count("tokens_per_micro_batch", tokens_per_micro_batch)
    return 2 * count("micro_batches", micro_batches) * t * model.width * BYTES


def _ratio(device: DeviceLike, link: LinkLike, dtype: str) -> float:
    from perfmodel import comms
    from perfmodel.hardware import get

    return get(device, argument="device").peak_flops(dtype) / comms.as_link(link).bandwidth


def critical_tokens(
    strategy: str, p: int, device: DeviceLike, link: LinkLike, *, dtype: str = "bf16"
) -> float:
    """Tokens per device at which a sharded strategy's traffic takes as long as its compute.

    Bandwidth only; latency ignored. Data parallelism and ZeRO 1-2 hide under the backward
    pass, ``4Ψt/F`` seconds, so ``t* = 2(p-1)/p · 2 · F / (4B)``; FSDP sends 1.5 times as
    much but can hide under the whole step, ``6Ψt/F``, so ``t* = 3(p-1)/p · 2 · F / (6B)``:
    the same, about ``F/B``.

    Parameters
    ----------
    strategy : {"data", "zero1", "zero2", "zero3", "fsdp"}
        Which strategy.
    p : int
        Devices in the group, count.
    device : str or hardware.Device
        Each device; its peak FLOP/s is ``F``.
    link : str, hardware.Link or hardware.LinkSpec
        The network between devices; only its bandwidth (B/s) counts.
    dtype : str
        Which peak FLOP/s.

    Returns
    -------
    float
        The critical batch, tokens per device (count).
    """
    strategy = choice("strategy", strategy, STRATEGIES)
    hidden_under = 6 if strategy in ("zero3", "fsdp") else 4
    return sharded_bytes(1.0, p, strategy) * _ratio(device, link, dtype) / hidden_under


def critical_width(
    p: int, device: DeviceLike, link: LinkLike, *, mlp_ratio: float = 4.0, dtype: str = "bf16"
) -> float:
    """The width at which ``p``-way tensor parallelism's all-reduces take as long as its matmuls.

    The matmuls are what the all-reduces could at best hide under. A layer of width ``h``
    has ``(4 + 2·mlp_ratio)·h²`` weights; per token each device does ``6 · that / p`` FLOPs
    and sends ``16(p-1)/p · h`` bytes, so the batch cancels and
    ``h* = 16(p-1) / (6(4 + 2·mlp_ratio)) · F / B``.

    Parameters
    ----------
    p : int
        Ways each layer is split, count.
    device : str or hardware.Device
        Each device; its peak FLOP/s is ``F``.
    link : str, hardware.Link or hardware.LinkSpec
        The network between devices; only its bandwidth (B/s) counts.
    mlp_ratio : float
        The MLP's width over the model's, dimensionless.
    dtype : str
        Which peak FLOP/s.

    Returns
    -------
    float
        The critical width, count (elements per token).
    """
    p = count("p", p)
    mlp_ratio = positive("mlp_ratio", mlp_ratio)
    return 16 * (p - 1) / (6 * (4 + 2 * mlp_ratio)) * _ratio(device, link, dtype)


@dataclass(frozen=True, slots=True)
class SyncOrAsync:
    """Synchronous vs asynchronous data parallelism for one group of workers.

    Parameters
    ----------
    sync_step_s : float
        A synchronous step, s: every step waits for the slowest worker, then all-reduces.
    async_step_s : float
        An asynchronous step, s: each worker pushes and pulls on its own, at its own
        average pace.
    staleness : float
        How many other workers' updates land between a worker reading the weights and its
        gradient being applied, on average, count (``workers - 1``).
    """

    sync_step_s: float
    async_step_s: float
    staleness: float

    @property
    def async_speedup(self) -> float:
        """How many more updates per second asynchrony buys, at the price of staleness."""
        return self.sync_step_s / self.async_step_s


def sync_or_async(
    *, mean_compute_s: float, slowest_compute_s: float, communication_s: float, workers: int
) -> SyncOrAsync:
    """Cost vs staleness: what waiting for stragglers costs, and how stale asynchrony is.

    Parameters
    ----------
    mean_compute_s : float
        A worker's average compute per step, s.
    slowest_compute_s : float
        The slowest worker's compute per step, s (at least the mean).
    communication_s : float
        The communication per step, s.
    workers : int
        Workers, count.

    Returns
    -------
    SyncOrAsync
        Both step times and the asynchronous updates' staleness.

    Examples
    --------
    >>> choice = sync_or_async(mean_compute_s=1.0, slowest_compute_s=1.3,
    ...                        communication_s=0.2, workers=64)
    >>> round(choice.async_speedup, 2), choice.staleness
    (1.25, 63)
    """
    mean = positive("mean_compute_s", mean_compute_s)
    slowest = positive("slowest_compute_s", slowest_compute_s)
    if slowest < mean:
        raise ValueError(
            f"`slowest_compute_s` must be at least `mean_compute_s` = {mean:g} (got {slowest:g})."
        )
    comm = non_negative("communication_s", communication_s)
    workers = count("workers", workers)
    return SyncOrAsync(slowest + comm, mean + comm, workers - 1)
