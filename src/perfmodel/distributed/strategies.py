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
cancels, and what must be large enough is the model's width. Each link runs at the ring
busbw published runs reached (``ceiling="measured"``) unless the nameplate is asked for.

>>> round(critical_tokens("data", 1024, "H100 SXM", "InfiniBand NDR"))
21033
>>> [round(critical_width(8, "H100 SXM", link)) for link in ("NVLink 4", "InfiniBand NDR")]
[4160, 32749]
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfmodel._validate import choice, count, non_negative, positive
from perfmodel.distributed.mesh import Mesh
from perfmodel.transformer import Transformer

if TYPE_CHECKING:
    from perfmodel.hardware import DeviceLike, LinkLike

__all__ = [
    "STRATEGIES",
    "SyncOrAsync",
    "critical_tokens",
    "critical_width",
    "fsdp_tensor_critical_tokens",
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


def _peak(device: DeviceLike, dtype: str) -> float:
    from perfmodel.hardware import get

    return get(device, argument="device").peak_flops(dtype)


def _ratio(device: DeviceLike, link: LinkLike | Mesh, dtype: str, ceiling: str, p: int) -> float:
    """Peak FLOP/s over the bandwidth the group's collectives run at."""
    from perfmodel import comms

    if isinstance(link, Mesh):
        if p != link.devices:
            raise ValueError(
                f"`p` must be the mesh's {link.devices} devices when `link` is a Mesh (got {p})."
            )
        bandwidth = link.bandwidth()
    else:
        bandwidth = comms.as_link(link).ring_rate(ceiling)
    return _peak(device, dtype) / bandwidth


def critical_tokens(
    strategy: str,
    p: int,
    device: DeviceLike,
    link: LinkLike | Mesh,
    *,
    dtype: str = "bf16",
    ceiling: str = "measured",
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
    link : str, hardware.Link, hardware.LinkSpec or Mesh
        The network between devices; only its bandwidth (B/s) counts. A :class:`Mesh`
        counts every link a device receives on at once (:meth:`Mesh.bandwidth`): both
        directions of each torus axis, as the scaling book's ``M · W_ici``; ``p`` must then
        be its device count.
    dtype : str
        Which peak FLOP/s.
    ceiling : {"measured", "nameplate"}
        A link's published ring busbw where the catalogue has one, or its line rate (a
        Mesh's links were resolved with its own ceiling).

    Returns
    -------
    float
        The critical batch, tokens per device (count).

    Examples
    --------
    >>> from perfmodel.hardware import Link
    >>> ici = Link(name="v5p ICI", kind="ici", bandwidth=9e10, latency=1e-6, source="book")
    >>> pod = Mesh({"X": 16, "Y": 16, "Z": 16}, links=dict.fromkeys("XYZ", ici))
    >>> round(critical_tokens("fsdp", 4096, "TPU v5p", pod))   # the book's 850 per chip
    850
    """
    strategy = choice("strategy", strategy, STRATEGIES)
    p = count("p", p)
    hidden_under = 6 if strategy in ("zero3", "fsdp") else 4
    ratio = _ratio(device, link, dtype, ceiling, p)
    return sharded_bytes(1.0, p, strategy) * ratio / hidden_under


def fsdp_tensor_critical_tokens(
    mesh: Mesh,
    fsdp: str,
    tensor: str,
    device: DeviceLike,
    mlp_width: int,
    *,
    dtype: str = "bf16",
) -> float:
    """Tokens per device above which FSDP over some axes and tensor parallelism over others
    both hide under the matmuls.

    Austin et al. (*How to Scale Your Model*, "How to Parallelize a Transformer for
    Training") balance the two: FSDP's weight traffic shrinks as the batch grows, tensor
    parallelism's activation traffic grows with it, and the pair stays under the compute
    only while ``B/N > C² / (W_F · W_T · F)``, with ``C`` the peak FLOP/s, ``F`` the MLP
    width and ``W_F``, ``W_T`` what a device receives at once over the FSDP and the tensor
    axes (:meth:`Mesh.bandwidth`). With one link rate per axis that is the book's
    ``α² / (M_X · M_Y · F)``, ``α = C / W_ici``.

    Parameters
    ----------
    mesh : Mesh
        The mesh, with a link on every axis named.
    fsdp : str
        The axes the batch and weights are sharded over, ``"X, Y"``.
    tensor : str
        The axes each matmul is split over.
    device : str or hardware.Device
        Each device; its peak FLOP/s is ``C``.
    mlp_width : int
        The MLP's hidden width ``F``, count.
    dtype : str
        Which peak FLOP/s.

    Returns
    -------
    float
        The critical batch, tokens per device (count).

    Examples
    --------
    >>> from perfmodel.hardware import Link
    >>> ici = Link(name="v5p ICI", kind="ici", bandwidth=9e10, latency=1e-6, source="book")
    >>> pod = Mesh({"X": 16, "Y": 16, "Z": 16}, links=dict.fromkeys("XYZ", ici))
    >>> round(fsdp_tensor_critical_tokens(pod, "X, Y", "Z", "TPU v5p", 32768))   # book: 99
    99
    """
    if not isinstance(mesh, Mesh):
        raise TypeError(f"`mesh` must be a Mesh (got {type(mesh).__name__}).")
    width = count("mlp_width", mlp_width)
    if set(mesh.names(fsdp)) & set(mesh.names(tensor)):
        raise ValueError(f"`fsdp` {fsdp!r} and `tensor` {tensor!r} must not share an axis.")
    peak = _peak(device, dtype)
    return peak**2 / (mesh.bandwidth(fsdp) * mesh.bandwidth(tensor) * width)


def critical_width(
    p: int,
    device: DeviceLike,
    link: LinkLike | Mesh,
    *,
    mlp_ratio: float = 4.0,
    dtype: str = "bf16",
    ceiling: str = "measured",
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
    link : str, hardware.Link, hardware.LinkSpec or Mesh
        The network between devices; only its bandwidth (B/s) counts (a :class:`Mesh`:
        every link a device receives on at once, :meth:`Mesh.bandwidth`).
    mlp_ratio : float
        The MLP's width over the model's, dimensionless.
    dtype : str
        Which peak FLOP/s.
    ceiling : {"measured", "nameplate"}
        A link's published ring busbw where the catalogue has one, or its line rate.

    Returns
    -------
    float
        The critical width, count (elements per token).
    """
    p = count("p", p)
    mlp_ratio = positive("mlp_ratio", mlp_ratio)
    ratio = _ratio(device, link, dtype, ceiling, p)
    return 16 * (p - 1) / (6 * (4 + 2 * mlp_ratio)) * ratio


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
