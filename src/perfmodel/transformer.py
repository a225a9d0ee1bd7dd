"""A decoder-only transformer's parameters and FLOPs, as functions of its shape.

:class:`Transformer` covers the shapes in use today: multi-head, grouped-query and
multi-query attention (``kv_heads``), plain or gated (SwiGLU) MLPs of any width, tied or
untied embeddings, any vocabulary. Counts are of weight matrices and norm weights (no
biases, no learned positions: the Llama family's choices); each part is a function, so a
lecture can show where the parameters live.

FLOPs follow Kaplan et al., *Scaling Laws for Neural Language Models* (2020): a forward
pass costs 2 FLOPs per weight per token (every weight is one multiply-add), plus the
attention scores, ``2 · 2 · layers · seq_len · heads · head_dim`` per token; training
costs three forward passes (the backward pass is twice the forward). Dropping the
attention term gives the rule of thumb, **6 · N · D** FLOPs to train N parameters on D
tokens.

>>> llama2_7b = Transformer(width=4096, layers=32, heads=32, vocab=32000, mlp_width=11008,
...                         gated=True, tied_embeddings=False)
>>> llama2_7b.parameters                  # Meta's Llama 2 7B, as published
6738415616
>>> round(llama2_7b.training_flops(2e12) / 1e22, 1)   # 6·N·D for its 2T tokens
8.1
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from perfmodel._validate import count, flag, non_negative

__all__ = ["PRESETS", "Transformer", "preset"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Transformer:
    """The shape of a decoder-only transformer.

    Parameters
    ----------
    width : int
        The model (residual) width, d_model.
    layers : int
        Transformer blocks.
    heads : int
        Query heads.
    vocab : int
        Vocabulary size.
    kv_heads : int, optional
        Key/value heads: ``heads`` (the default) for multi-head attention, fewer for
        grouped-query attention, 1 for multi-query. Must divide ``heads``.
    head_dim : int, optional
        Width of one head; ``width // heads`` by default.
    mlp_width : int, optional
        The MLP's hidden width; ``4 · width`` by default.
    gated : bool
        A gated MLP (SwiGLU: gate, up and down matrices) instead of two matrices.
    tied_embeddings : bool
        The output projection reuses the input embedding's matrix.
    """

    width: int
    layers: int
    heads: int
    vocab: int
    kv_heads: int | None = None
    head_dim: int | None = None
    mlp_width: int | None = None
    gated: bool = False
    tied_embeddings: bool = True

    def __post_init__(self) -> None:
        set_ = object.__setattr__
        for name in ("width", "layers", "heads", "vocab"):
            set_(self, name, count(name, getattr(self, name)))
        kv = self.heads if self.kv_heads is None else count("kv_heads", self.kv_heads)
        if self.heads % kv:
            raise ValueError(f"`kv_heads` must divide `heads` = {self.heads} (got {kv}).")
        set_(self, "kv_heads", kv)
        if self.head_dim is None and self.width % self.heads:
            raise ValueError(
                f"`heads` must divide `width` = {self.width} unless `head_dim` is given "
                f"(got {self.heads})."
            )
        head_dim = self.width // self.heads if self.head_dim is None else self.head_dim
        set_(self, "head_dim", count("head_dim", head_dim))
        mlp = 4 * self.width if self.mlp_width is None else self.mlp_width
        set_(self, "mlp_width", count("mlp_width", mlp))
        set_(self, "gated", flag("gated", self.gated))
        set_(self, "tied_embeddings", flag("tied_embeddings", self.tied_embeddings))

    # ------------------------------------------------------------------- parameters

    @property
    def attention_parameters(self) -> int:
        """One block's attention weights: Q and output ``width × heads·head_dim``; K and V
        ``width × kv_heads·head_dim`` each."""
        q_width = self.heads * self.head_dim  # type: ignore[operator]
        kv_width = self.kv_heads * self.head_dim  # type: ignore[operator]
        return 2 * self.width * q_width + 2 * self.width * kv_width

    @property
    def mlp_parameters(self) -> int:
        """One block's MLP weights: 2 (or 3, gated) matrices of ``width × mlp_width``."""
        return (3 if self.gated else 2) * self.width * self.mlp_width  # type: ignore[operator]

    @property
    def block_parameters(self) -> int:
        """One block: attention, MLP, and its two norms' weights."""
        return self.attention_parameters + self.mlp_parameters + 2 * self.width

    @property
    def embedding_parameters(self) -> int:
        """The input embedding, and the output projection unless tied."""
        return (1 if self.tied_embeddings else 2) * self.vocab * self.width

    @property
    def parameters(self) -> int:
        """Every weight: the blocks, the final norm and the embeddings."""
        return self.layers * self.block_parameters + self.width + self.embedding_parameters

    @property
    def non_embedding_parameters(self) -> int:
        """Kaplan's N: the blocks' weights (what scaling laws count)."""
        return self.layers * self.block_parameters

    def weight_shapes(self) -> list[tuple[int, int]]:
        """``(in, out)`` of every weight matrix a token passes through, block by block (Q, K, V,
        output, the MLP's matrices), the output projection last.

        Returns
        -------
        list of tuple of int
            ``(in, out)`` pairs, counts: ``4 + (3 if gated else 2)`` per block, then
            ``(width, vocab)``.

        Examples
        --------
        >>> shapes = Transformer(width=8, layers=2, heads=2, vocab=10).weight_shapes()
        >>> len(shapes), shapes[-1], sum(k * n for k, n in shapes[:-1]) == 2 * 12 * 64
        (13, (8, 10), True)
        """
        h, m, d = self.width, cast(int, self.mlp_width), cast(int, self.head_dim)
        q, kv = self.heads * d, cast(int, self.kv_heads) * d
        mlp = [*([(h, m)] * (2 if self.gated else 1)), (m, h)]
        return [(h, q), (h, kv), (h, kv), (q, h), *mlp] * self.layers + [(h, self.vocab)]

    def layer_gemms(self, tensor: int = 1) -> list[tuple[int, int]]:
        """One block's weight GEMMs as frameworks run them, on one of ``tensor`` ranks:
        Q, K and V fused into one, the output projection, the MLP's input (gate and up fused
        when gated) and output.

        Parameters
        ----------
        tensor : int, optional
            Tensor-parallel ranks each matrix is split over, count (default 1).

        Returns
        -------
        list of tuple of int
            ``(in, out)`` of each GEMM on one rank, counts.

        Examples
        --------
        >>> Transformer(width=8, layers=2, heads=2, vocab=10).layer_gemms(2)
        [(8, 12), (4, 8), (8, 16), (16, 8)]
        """
        t = count("tensor", tensor)
        h, d, mlp = self.width, cast(int, self.head_dim), cast(int, self.mlp_width)
        qkv = (self.heads + 2 * cast(int, self.kv_heads)) * d
        up = mlp * (2 if self.gated else 1)
        return [(h, qkv // t), (self.heads * d // t, h), (h, up // t), (mlp // t, h)]

    # ------------------------------------------------------------------------ FLOPs

    def forward_flops_per_token(self, seq_len: int = 0, *, causal: bool = False) -> float:
        """FLOPs of one token's forward pass at context ``seq_len``.

        ``2 ·`` (the blocks' matrix weights ``+`` the output projection) ``+`` the attention
        scores and their weighted sum, ``4 · layers · seq_len · heads · head_dim`` (half of it
        with a ``causal`` mask, where a token attends to those before it on average).

        Parameters
        ----------
        seq_len : int, optional
            Tokens of context the token attends to, count; 0 (the default) leaves the
            attention scores out.
        causal : bool, optional
            Halve the attention term, as under a causal mask (default False).

        Returns
        -------
        float
            FLOPs of one token's forward pass, FLOP.

        Raises
        ------
        TypeError
            If ``seq_len`` is not an integer or ``causal`` not a bool.
        ValueError
            If ``seq_len`` is negative.
        """
        seq_len = count("seq_len", seq_len, minimum=0)
        causal = flag("causal", causal)
        matrices = self.layers * (self.attention_parameters + self.mlp_parameters)
        matrices += self.vocab * self.width
        attention = 4 * self.layers * seq_len * self.heads * self.head_dim  # type: ignore[operator]
        return 2.0 * matrices + (attention / 2 if causal else attention)

    def training_flops(self, tokens: float, seq_len: int | None = None) -> float:
        """FLOPs to train on ``tokens`` tokens: ``6 · parameters · tokens`` (the rule of
        thumb), or with ``seq_len`` three forward passes counted exactly, attention included.

        Parameters
        ----------
        tokens : float
            Training tokens, count.
        seq_len : int or None, optional
            The training context, count. None (the default) gives the rule of thumb; a
            number counts three causal forward passes at that context per token.

        Returns
        -------
        float
            Training FLOPs, FLOP.

        Raises
        ------
        TypeError
            If ``tokens`` is not a number or ``seq_len`` not an integer.
        ValueError
            If ``tokens`` or ``seq_len`` is negative.

        Examples
        --------
        >>> gpt = Transformer(width=768, layers=12, heads=12, vocab=50257)
        >>> round(gpt.training_flops(1e9, 1024) / gpt.training_flops(1e9), 2)
        1.08
        """
        tokens = non_negative("tokens", tokens)
        if seq_len is None:
            return 6.0 * self.parameters * tokens
        return 3.0 * self.forward_flops_per_token(seq_len, causal=True) * tokens


#: Published shapes, by the name the course uses. Counts leave out biases and learned
#: positions, so GPT-2 and GPT-3 come out a little under their published sizes.
PRESETS: dict[str, Transformer] = {
    # Radford et al., Language Models are Unsupervised Multitask Learners (2019)
    "GPT-2 XL (1.5B)": Transformer(width=1600, layers=48, heads=25, vocab=50257),
    # Touvron et al., Llama 2: Open Foundation and Fine-Tuned Chat Models (2023)
    "Llama 2 7B": Transformer(width=4096, layers=32, heads=32, vocab=32000, mlp_width=11008,
                              gated=True, tied_embeddings=False),
    "Llama 2 70B": Transformer(width=8192, layers=80, heads=64, kv_heads=8, vocab=32000,
                               mlp_width=28672, gated=True, tied_embeddings=False),
    # Brown et al., Language Models are Few-Shot Learners (2020)
    "GPT-3 175B": Transformer(width=12288, layers=96, heads=96, vocab=50257),
}  # fmt: skip


def preset(name: str) -> Transformer:
    """One of :data:`PRESETS` by name.

    Parameters
    ----------
    name : str
        A key of :data:`PRESETS`, such as ``"Llama 2 7B"``.

    Returns
    -------
    Transformer
        That model's shape.

    Raises
    ------
    TypeError
        If ``name`` is not a string.
    ValueError
        If no preset has that name.

    Examples
    --------
    >>> round(preset("Llama 2 70B").parameters / 1e9, 2)
    68.98
    """
    from perfmodel._validate import choice

    return PRESETS[choice("name", name, tuple(PRESETS))]
