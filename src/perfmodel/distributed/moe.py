"""Mixture-of-experts: parameters stored and used, the batch that hides the weight reads,
and the all-to-alls that route tokens to their experts.

An MoE layer is a dense layer with ``E`` copies of its MLP, the *experts*; a router sends
each token to ``k`` of them (Shazeer et al., *Outrageously Large Neural Networks*, 2017;
Austin et al., *How to Scale Your Model*, "All the Transformer Math You Need to Know").
So the model stores ``E`` MLPs a layer but each token uses ``k``: compute follows the
*active* parameters, memory and weight reads the *total*. Each step reads every expert's
weights once but does only ``k`` tokens' worth of work with each, so decoding stays
bandwidth-bound until the batch is ``E/k`` times the dense model's ridge. Spreading the
experts over devices (*expert parallelism*) sends every token to the devices holding its
experts and back: two all-to-alls a layer.

>>> from perfmodel.transformer import Transformer
>>> dense = Transformer(width=4096, layers=64, heads=32, kv_heads=8, head_dim=256,
...                     mlp_width=16384, gated=True, vocab=32128)
>>> moe = moe_parameters(dense, experts=16, top_k=2)
>>> round(moe.total / 1e9), round(moe.active / 1e9, 2)       # the book: 212e9 and 31.2e9
(212, 31.27)
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfmodel._validate import count
from perfmodel.transformer import Transformer

if TYPE_CHECKING:
    from perfmodel.hardware import DeviceLike, LinkLike

__all__ = [
    "MoeParameters",
    "expert_parallel_bytes",
    "moe_critical_batch",
    "moe_dispatch_time",
    "moe_parameters",
]


@dataclass(frozen=True, slots=True)
class MoeParameters:
    """An MoE's parameters.

    Parameters
    ----------
    total : int
        Every weight stored: the dense model's, with ``experts`` MLPs a layer, count.
    active : int
        The weights one token uses: ``top_k`` MLPs a layer, count.
    expert : int
        One expert (one MLP of one layer), count.
    """

    total: int
    active: int
    expert: int


def _checked(model: Transformer, experts: int, top_k: int) -> tuple[int, int]:
    if not isinstance(model, Transformer):
        raise TypeError(f"`model` must be a Transformer (got {type(model).__name__}).")
    e = count("experts", experts)
    k = count("top_k", top_k, maximum=e)
    return e, k


def moe_parameters(model: Transformer, *, experts: int, top_k: int) -> MoeParameters:
    """The parameters of ``model`` with each MLP made ``experts`` experts, ``top_k`` per token.

    Parameters
    ----------
    model : Transformer
        The dense model whose MLP each expert copies.
    experts : int
        Experts a layer, ``E``, count.
    top_k : int
        Experts each token is routed to, ``k``, count (at most ``E``).

    Returns
    -------
    MoeParameters
        Total, active and one expert's parameters.
    """
    e, k = _checked(model, experts, top_k)
    mlp = model.mlp_parameters
    return MoeParameters(
        total=model.parameters + model.layers * (e - 1) * mlp,
        active=model.parameters + model.layers * (k - 1) * mlp,
        expert=mlp,
    )


def moe_critical_batch(
    device: DeviceLike,
    *,
    experts: int,
    top_k: int,
    weight_dtype: str = "bf16",
    dtype: str = "bf16",
) -> float:
    """Tokens a step needs before the experts' matmuls stop waiting for their weights.

    Each expert's weights (``E·D·F`` elements a matrix, ``weight_dtype``) are read once a
    step and do ``2·k·B·D·F`` FLOPs, so the step is compute-bound once
    ``2kB / (E · bytes) > C / W``: ``B > (C/W) · E · bytes / (2k)``, the book's
    ``240 · E/k`` for bf16 weights on a TPU v5e and ``120 · E/k`` for int8.

    Parameters
    ----------
    device : str or hardware.Device
        The device: its peak FLOP/s ``C`` in ``dtype`` and memory bandwidth ``W``.
    experts : int
        Experts a layer, ``E``, count.
    top_k : int
        Experts a token uses, ``k``, count.
    weight_dtype : str
        How the weights are stored.
    dtype : str
        Which peak FLOP/s the matmuls run at.

    Returns
    -------
    float
        Tokens a step, count.

    Examples
    --------
    >>> round(moe_critical_batch("TPU v5e", experts=256, top_k=8, weight_dtype="int8"))
    3849
    """
    from perfmodel.hardware import dtype_bytes, get

    e = count("experts", experts)
    k = count("top_k", top_k, maximum=e)
    spec = get(device, argument="device")
    ridge = spec.peak_flops(dtype) / spec.memory_bandwidth
    return ridge * e * dtype_bytes(weight_dtype) / (2 * k)


def moe_dispatch_time(
    tokens: int,
    width: int,
    *,
    top_k: int,
    p: int,
    link: LinkLike,
    dtype_bytes: int = 2,
    ceiling: str = "measured",
) -> float:
    """One MoE layer's routing: an all-to-all to the experts and one back.

    Each device sends each of its ``tokens`` to ``top_k`` experts spread over ``p``
    devices, ``tokens · k · width · bytes`` in all, and gets the results back the same way
    (:func:`perfmodel.comms.alltoall_time`, twice).

    Parameters
    ----------
    tokens : int
        Tokens on each device, count.
    width : int
        The model's width ``D``, count.
    top_k : int
        Experts a token is routed to, count.
    p : int
        Devices the experts are spread over (the expert-parallel group), count.
    link : str, hardware.Link or hardware.LinkSpec
        The link between them.
    dtype_bytes : int
        Bytes per activation element, B.
    ceiling : {"measured", "nameplate"}
        The link's measured busbw where it has one, or its line rate.

    Returns
    -------
    float
        Seconds, s.
    """
    from perfmodel.comms import alltoall_time

    nbytes = count("tokens", tokens) * count("top_k", top_k) * count("width", width)
    nbytes *= count("dtype_bytes", dtype_bytes)
    return 2 * alltoall_time(nbytes, p, link, ceiling=ceiling)


def expert_parallel_bytes(
    model: Transformer,
    *,
    experts: int,
    expert_parallel: int,
    dtype_bytes: int = 2,
) -> float:
    """Weight bytes on each device when the experts are spread over ``expert_parallel``.

    Every device keeps the shared weights (attention, embeddings, norms) and its share of
    each layer's experts.

    Parameters
    ----------
    model : Transformer
        The dense model whose MLP each expert copies.
    experts : int
        Experts a layer, count; ``expert_parallel`` must divide it.
    expert_parallel : int
        Devices the experts are spread over, count.
    dtype_bytes : int
        Bytes per weight, B.

    Returns
    -------
    float
        Bytes per device, B.

    Examples
    --------
    >>> from perfmodel.transformer import Transformer
    >>> dense = Transformer(width=4096, layers=64, heads=32, kv_heads=8, head_dim=256,
    ...                     mlp_width=16384, gated=True, vocab=32128)
    >>> round(expert_parallel_bytes(dense, experts=16, expert_parallel=16, dtype_bytes=1) / 1e9, 1)
    18.4
    """
    e, _ = _checked(model, experts, 1)
    ep = count("expert_parallel", expert_parallel)
    if e % ep:
        raise ValueError(f"`expert_parallel` must divide `experts` = {e} (got {ep}).")
    shared = model.parameters - model.layers * model.mlp_parameters
    local = shared + model.layers * (e // ep) * model.mlp_parameters
    return float(local * count("dtype_bytes", dtype_bytes))
