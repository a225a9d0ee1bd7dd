"""Activation checkpointing as a policy that names the tensors each layer keeps.

A transformer layer's forward pass makes a dozen tensors per token; the backward pass needs
them all. Keeping every one costs memory, keeping fewer costs recomputation: whatever was
not kept is rebuilt from the last tensor that was, by running its matmul again. Austin et
al. (*How to Scale Your Model*, "All the Transformer Math You Need to Know") name the common
policies, which :data:`POLICIES` spells out:

* ``"block"``: keep only each layer's input; the backward pass reruns the whole forward
  pass, ``6ND`` FLOPs becoming about ``8ND``;
* ``"big_matmuls"``: keep the outputs of the seven weight matmuls (Q, K, V, O and the MLP's
  three), so only the two attention matmuls are redone, ``4BT²NH`` more FLOPs a layer;
* ``"everything"``: keep every tensor, recompute nothing.

Each tensor's width per token (elements) and the forward FLOPs of the matmul that makes it
come from the model's shape (:class:`perfmodel.transformer.Transformer`, with ``N`` heads
of width ``H``, ``K`` key/value heads, MLP width ``F``, ``T`` tokens a sequence):

=================  ===================  =========================
tensor             elements per token   forward FLOPs per token
=================  ===================  =========================
``input``          D                    (the layer norm: none)
``q``              N·H                  2·D·N·H
``k``, ``v``       K·H each             2·D·K·H each
``scores``         N·T                  2·T·N·H
``attention``      N·H                  2·T·N·H
``o``              D                    2·N·H·D
``mlp_in``         F                    2·D·F
``mlp_gate``       F (gated MLPs)       2·D·F
``mlp_out``        D                    2·F·D
=================  ===================  =========================

>>> from perfmodel.transformer import Transformer
>>> model = Transformer(width=8192, layers=64, heads=64, vocab=32000)
>>> kept = checkpoint_bytes(model, tokens=4_000_000, seq_len=4096, keep="block")
>>> round(kept / 1e12, 1)                                              # the book: 4.2TB
4.2
"""

from __future__ import annotations

from collections.abc import Sequence

from perfmodel._validate import count
from perfmodel.transformer import Transformer

__all__ = ["POLICIES", "TENSORS", "checkpoint_bytes", "remat_flops"]

#: Every tensor a layer makes, in the order it makes them.
TENSORS = ("input", "q", "k", "v", "scores", "attention", "o", "mlp_in", "mlp_gate", "mlp_out")
#: The named policies: the tensors each keeps.
POLICIES: dict[str, tuple[str, ...]] = {
    "block": ("input",),
    "big_matmuls": ("input", "q", "k", "v", "o", "mlp_in", "mlp_gate", "mlp_out"),
    "everything": TENSORS,
}


def _kept(keep: str | Sequence[str]) -> tuple[str, ...]:
    if isinstance(keep, str):
        if keep not in POLICIES:
            raise ValueError(
                f"`keep` must be one of {', '.join(map(repr, POLICIES))} or a list of tensors "
                f"from {', '.join(TENSORS)} (got {keep!r})."
            )
        return POLICIES[keep]
    if not isinstance(keep, Sequence) or not all(isinstance(t, str) for t in keep):
        raise TypeError(f"`keep` must be a policy name or a list of tensor names (got {keep!r}).")
    unknown = sorted(set(keep) - set(TENSORS))
    if unknown:
        raise ValueError(f"`keep` names tensors a layer does not make: {', '.join(unknown)}.")
    if len(set(keep)) != len(keep):
        raise ValueError(f"`keep` names a tensor twice (got {list(keep)!r}).")
    return tuple(keep)


def _table(model: Transformer, seq_len: int) -> dict[str, tuple[float, float]]:
    """Each tensor's (elements per token, forward FLOPs per token) in one layer."""
    assert model.mlp_width is not None and model.head_dim is not None  # set by the model
    assert model.kv_heads is not None
    d, f, t = float(model.width), float(model.mlp_width), float(seq_len)
    nh, kh = float(model.heads * model.head_dim), float(model.kv_heads * model.head_dim)
    gate = (f, 2.0 * d * f) if model.gated else (0.0, 0.0)
    return {
        "input": (d, 0.0),
        "q": (nh, 2.0 * d * nh),
        "k": (kh, 2.0 * d * kh),
        "v": (kh, 2.0 * d * kh),
        "scores": (model.heads * t, 2.0 * t * nh),
        "attention": (nh, 2.0 * t * nh),
        "o": (d, 2.0 * nh * d),
        "mlp_in": (f, 2.0 * d * f),
        "mlp_gate": gate,
        "mlp_out": (d, 2.0 * f * d),
    }


def checkpoint_bytes(
    model: Transformer,
    *,
    tokens: int,
    seq_len: int,
    keep: str | Sequence[str] = "big_matmuls",
    dtype_bytes: int = 2,
) -> float:
    """Bytes the kept activations take, over every layer, for ``tokens`` tokens in a step.

    Parameters
    ----------
    model : Transformer
        The model's shape.
    tokens : int
        Tokens in the step (all sequences together), count.
    seq_len : int
        Tokens a sequence, count (the attention scores grow with it).
    keep : str or sequence of str
        A policy of :data:`POLICIES`, or the names of the tensors kept (:data:`TENSORS`).
    dtype_bytes : int
        Bytes per element, B (2 for bf16).

    Returns
    -------
    float
        Bytes, B.

    Examples
    --------
    >>> from perfmodel.transformer import Transformer
    >>> llama13 = Transformer(width=5120, layers=40, heads=40, vocab=32000, mlp_width=13824,
    ...                       gated=True, tied_embeddings=False)
    >>> three = ("mlp_in", "mlp_gate", "mlp_out")   # "after the three big FFW matmuls"
    >>> kept = checkpoint_bytes(llama13, tokens=16_000_000, seq_len=4096, keep=three)
    >>> round(kept / 1e12)   # book: 42TB
    42
    """
    if not isinstance(model, Transformer):
        raise TypeError(f"`model` must be a Transformer (got {type(model).__name__}).")
    n, t = count("tokens", tokens), count("seq_len", seq_len)
    table = _table(model, t)
    per_token = sum(table[name][0] for name in _kept(keep))
    return float(model.layers * n * per_token * count("dtype_bytes", dtype_bytes))


def remat_flops(
    model: Transformer,
    *,
    tokens: int,
    seq_len: int,
    keep: str | Sequence[str] = "big_matmuls",
) -> float:
    """FLOPs the backward pass spends rebuilding what ``keep`` did not keep.

    Every matmul whose output was not kept runs again (its forward FLOPs); the layer's input
    is always at hand (kept, or the previous layer's output).

    Parameters
    ----------
    model : Transformer
        The model's shape.
    tokens : int
        Tokens in the step, count.
    seq_len : int
        Tokens a sequence, count.
    keep : str or sequence of str
        A policy of :data:`POLICIES`, or the names of the tensors kept.

    Returns
    -------
    float
        FLOP, over every layer.

    Examples
    --------
    >>> from perfmodel.transformer import Transformer
    >>> model = Transformer(width=4096, layers=32, heads=32, vocab=32000)
    >>> extra = remat_flops(model, tokens=8 * 2048, seq_len=2048)   # big matmuls kept
    >>> extra == 32 * 4 * 8 * 2048**2 * 32 * 128                     # the book's 4BT²NH a layer
    True
    """
    if not isinstance(model, Transformer):
        raise TypeError(f"`model` must be a Transformer (got {type(model).__name__}).")
    n, t = count("tokens", tokens), count("seq_len", seq_len)
    table = _table(model, t)
    kept = set(_kept(keep)) | {"input"}
    per_token = sum(flops for name, (_, flops) in table.items() if name not in kept)
    return float(model.layers * n * per_token)
