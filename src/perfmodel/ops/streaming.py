"""The operations that stream their operands through memory, a few FLOPs per element:
:func:`elementwise`, :func:`reduction`, :func:`scan`, :func:`softmax`, :func:`layer_norm`,
a chain of elementwise ops unfused and fused (:class:`Fusion`, :func:`fusion`), and
:func:`attention`, whose scores go through memory too unless the kernel is fused.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perfmodel._validate import count, flag, non_negative, sequence
from perfmodel.ops.costs import Cost, element_type

__all__ = [
    "Fusion",
    "attention",
    "elementwise",
    "fusion",
    "layer_norm",
    "reduction",
    "scan",
    "softmax",
]


def elementwise(
    n: int,
    *,
    flops_per_element: float = 1,
    inputs: int = 1,
    outputs: int = 1,
    dtype: str | int = "fp32",
    label: str = "elementwise",
) -> Cost:
    """An operation applied to each of ``n`` elements (``sin(x)``, ``x + y``, ``relu(x)``).

    Parameters
    ----------
    n : int
        Elements, count.
    flops_per_element : float, optional
        Arithmetic per element, FLOP (default 1; non-negative).
    inputs : int, optional
        Arrays of ``n`` elements read, count (default 1; may be 0).
    outputs : int, optional
        Arrays of ``n`` elements written, count (default 1; at least 1).
    dtype : str or int, optional
        Element type: a dtype name or a width in bytes (default ``"fp32"``).
    label : str, optional
        What the operation is (default ``"elementwise"``).

    Returns
    -------
    Cost
        ``flops_per_element · n`` FLOPs, ``inputs · n`` elements read and
        ``outputs · n`` written.

    Examples
    --------
    >>> add = elementwise(1000, inputs=2)  # z = x + y
    >>> add.bytes, add.flops
    (12000, 1000)
    """
    n = count("n", n)
    inputs, outputs = count("inputs", inputs, minimum=0), count("outputs", outputs)
    non_negative("flops_per_element", flops_per_element)
    if not isinstance(label, str):
        raise TypeError(f"`label` must be a string (got {type(label).__name__}).")
    width, name = element_type(dtype)
    return Cost(
        flops=flops_per_element * n,
        bytes_read=width * n * inputs,
        bytes_written=width * n * outputs,
        dtype=name,
        label=label,
    )


def reduction(n: int, *, outputs: int = 1, dtype: str | int = "fp32") -> Cost:
    """Sum of ``n`` elements into ``outputs`` sums (a row sum of a matrix has one per row):
    ``n - outputs`` adds, read ``n``, write ``outputs``.

    Parameters
    ----------
    n : int
        Elements summed, count.
    outputs : int, optional
        Sums produced, count (default 1; at most ``n``).
    dtype : str or int, optional
        Element type: a dtype name or a width in bytes (default ``"fp32"``).

    Returns
    -------
    Cost
        FLOPs and bytes of the sums.

    Examples
    --------
    >>> reduction(1000).flops, reduction(1000, outputs=10).bytes_written
    (999, 40)
    """
    n = count("n", n)
    outputs = count("outputs", outputs)
    if outputs > n:
        raise ValueError(f"`outputs` must be at most `n` ({n}) (got {outputs}).")
    width, name = element_type(dtype)
    return Cost(
        flops=n - outputs,
        bytes_read=width * n,
        bytes_written=width * outputs,
        dtype=name,
        label="sum",
    )


def scan(n: int, *, dtype: str | int = "fp32") -> Cost:
    """Inclusive prefix sum (``cumsum``) of ``n`` elements: ``n - 1`` adds, read and write ``n``.

    The FLOPs equal a reduction's, but each output depends on the one before it, which is
    why lecture 07 finds far less parallelism in ``cumsum`` than in ``sin``.

    Parameters
    ----------
    n : int
        Elements, count.
    dtype : str or int, optional
        Element type: a dtype name or a width in bytes (default ``"fp32"``).

    Returns
    -------
    Cost
        FLOPs and bytes of the scan.
    """
    n = count("n", n)
    width, name = element_type(dtype)
    return Cost(
        flops=n - 1, bytes_read=width * n, bytes_written=width * n, dtype=name, label="cumsum"
    )


def softmax(rows: int, cols: int, *, dtype: str | int = "fp32") -> Cost:
    """Row-wise softmax: max, subtract, exp, sum, divide: about 5 FLOPs per element.

    Parameters
    ----------
    rows : int
        Rows, each normalised on its own, count.
    cols : int
        Elements per row, count.
    dtype : str or int, optional
        Element type: a dtype name or a width in bytes (default ``"fp32"``).

    Returns
    -------
    Cost
        ``5 · rows · cols`` FLOPs; the matrix read once and written once.
    """
    rows, cols = count("rows", rows), count("cols", cols)
    width, name = element_type(dtype)
    n = rows * cols
    return Cost(
        flops=5 * n, bytes_read=width * n, bytes_written=width * n, dtype=name, label="softmax"
    )


def layer_norm(rows: int, cols: int, *, dtype: str | int = "fp32") -> Cost:
    """Layer norm over the last axis with learned scale and shift: about 8 FLOPs per element.

    Mean (1), subtract and square for the variance (2), sum (1), normalise (2), scale and
    shift (2). Reads x, gamma and beta; writes y.

    Parameters
    ----------
    rows : int
        Rows, each normalised on its own, count.
    cols : int
        Elements per row (the normalised axis), count.
    dtype : str or int, optional
        Element type: a dtype name or a width in bytes (default ``"fp32"``).

    Returns
    -------
    Cost
        ``8 · rows · cols`` FLOPs; x, gamma and beta read, y written.
    """
    rows, cols = count("rows", rows), count("cols", cols)
    width, name = element_type(dtype)
    n = rows * cols
    return Cost(
        flops=8 * n,
        bytes_read=width * (n + 2 * cols),
        bytes_written=width * n,
        dtype=name,
        label="layer norm",
    )


def attention(
    batch: int,
    heads: int,
    seq_len: int,
    head_dim: int,
    *,
    fused: bool = False,
    dtype: str | int = "bf16",
    kv_len: int | None = None,
    kv_heads: int | None = None,
    causal: bool = False,
) -> Cost:
    """Scaled dot-product attention, softmax(Q·Kᵀ)·V, in its training and serving shapes.

    Parameters
    ----------
    batch, heads, head_dim : int
        Sequences, query heads, and the width of one head.
    seq_len : int
        Query positions (1 for one decode step).
    kv_len : int, optional
        Key/value positions; ``seq_len`` by default (self-attention over the same tokens).
        Decoding with a KV cache is ``seq_len=1, kv_len=context``.
    kv_heads : int, optional
        Key/value heads; ``heads`` by default. Fewer is grouped-query attention, 1 is
        multi-query: the same FLOPs, fewer K and V bytes.
    causal : bool
        Each query sees only the keys up to its own position (the queries are the last
        ``seq_len`` of the ``kv_len`` positions): ``q·k - q(q-1)/2`` query-key pairs, not ``q·k``.
    fused : bool
        A fused kernel (FlashAttention) that keeps the score matrix on chip; unfused, the
        scores go through main memory (default False).
    dtype : str or int
        Element type: a dtype name or a width in bytes (default ``"bf16"``).

    Returns
    -------
    Cost
        FLOPs and bytes of the attention.

    Raises
    ------
    ValueError
        If ``kv_heads`` does not divide ``heads``, or ``seq_len > kv_len`` when causal.

    Notes
    -----
    With ``P`` query-key pairs per head: FLOPs ``4·b·h·P·d`` for the two matmuls plus
    ``5·b·h·P`` for the softmax. Bytes: read Q (``b·h·q·d``), K and V (``b·h_kv·k·d`` each),
    write the output (``b·h·q·d``); unfused, the scores are also written, read by the
    softmax, written again and read by the second matmul (``4·b·h·P``).

    Examples
    --------
    >>> full = attention(1, 32, 4096, 128)
    >>> step = attention(1, 32, 1, 128, kv_len=4096, kv_heads=8, causal=True, fused=True)
    >>> round(full.intensity), round(step.intensity, 2)   # decode is bandwidth-bound
    (63, 4.04)

    References
    ----------
    Dao et al., "FlashAttention", NeurIPS 2022; Ainslie et al., "GQA", 2023.
    """
    b, h = count("batch", batch), count("heads", heads)
    q, d = count("seq_len", seq_len), count("head_dim", head_dim)
    k = q if kv_len is None else count("kv_len", kv_len)
    h_kv = h if kv_heads is None else count("kv_heads", kv_heads)
    if h % h_kv:
        raise ValueError(f"`kv_heads` must divide `heads` = {h} (got {h_kv}).")
    fused, causal = flag("fused", fused), flag("causal", causal)
    if causal and q > k:
        raise ValueError(f"`seq_len` must be at most `kv_len` = {k} when causal (got {q}).")
    width, name = element_type(dtype)
    pairs = q * k - q * (q - 1) // 2 if causal else q * k
    queries, keys = b * h * q * d, b * h_kv * k * d
    scores = b * h * pairs
    flops = 4 * scores * d + 5 * scores
    read, written = queries + 2 * keys, queries
    if not fused:
        read, written = read + 2 * scores, written + 2 * scores
    shape = (
        ""
        if (k == q and h_kv == h)
        else f", q {q} kv {k}" + (f" ({h_kv} kv heads)" if h_kv != h else "")
    )
    return Cost(
        flops=flops,
        bytes_read=width * read,
        bytes_written=width * written,
        dtype=name,
        label=("attention (fused)" if fused else "attention")
        + shape
        + (", causal" if causal else ""),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class Fusion:
    """A chain of elementwise ops run one by one (``unfused``) or as one kernel (``fused``).

    Parameters
    ----------
    unfused : Cost
        The ops one after another, each reading and writing main memory.
    fused : Cost
        The ops as one kernel: the input read once, the result written once.
    """

    unfused: Cost
    fused: Cost

    @property
    def bytes_saved(self) -> float:
        """The main-memory traffic fusion removes, B."""
        return self.unfused.bytes - self.fused.bytes


def fusion(n: int, flops_per_element: Sequence[float], *, dtype: str | int = "fp32") -> Fusion:
    """Fuse a chain of unary elementwise ops over ``n`` elements.

    Unfused, each op reads its input from memory and writes its result back; fused, the
    chain reads the input once and writes the final result once, keeping temporaries in
    registers. The FLOPs are the same.

    Parameters
    ----------
    n : int
        Elements, count.
    flops_per_element : sequence of float
        One entry per op in the chain: its arithmetic per element, FLOP.
    dtype : str or int, optional
        Element type: a dtype name or a width in bytes (default ``"fp32"``).

    Returns
    -------
    Fusion
        The chain's cost unfused and fused.

    Raises
    ------
    TypeError
        If ``flops_per_element`` is not a sequence (a string is not one).
    ValueError
        If ``flops_per_element`` is empty or holds a negative number.

    Examples
    --------
    >>> gelu_like = fusion(1_000_000, [1, 1, 1, 1])  # four ops in a row
    >>> gelu_like.unfused.bytes // gelu_like.fused.bytes, gelu_like.bytes_saved
    (4, 24000000)
    """
    n = count("n", n)
    flops_per_element = sequence(
        "flops_per_element", flops_per_element, "numbers, one per op in the chain"
    )
    if not flops_per_element:
        raise ValueError("`flops_per_element` must list at least one op (got an empty sequence).")
    steps = [
        elementwise(n, flops_per_element=f, dtype=dtype, label=f"op {i + 1}")
        for i, f in enumerate(flops_per_element)
    ]
    unfused = steps[0]
    for step in steps[1:]:
        unfused = unfused + step
    width, name = element_type(dtype)
    fused = Cost(
        flops=unfused.flops,
        bytes_read=width * n,
        bytes_written=width * n,
        dtype=name,
        label=f"{len(steps)} ops fused",
    )
    return Fusion(unfused=unfused, fused=fused)
