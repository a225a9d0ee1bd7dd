"""Cost models: how many FLOPs an operation performs and how many bytes it moves.

Conventions
-----------
* A multiply-add counts as **2 FLOPs** (a multiply and an add). Papers that count
  multiply-accumulates (MACs) report half: use :func:`flops_from_macs` to convert.
* Bytes are those read from and written to main memory once each, assuming every operand
  streams through exactly once (no cache reuse beyond the operation itself).
* ``exp``, division and square root count as one FLOP each: a simplification, since the
  hardware spends more, but these ops are memory-bound on every device in the catalogue.

Examples
--------
Coates's matrix-vector product (*Deep Learning (hopefully faster)*), M=1024, N=512, fp32:

>>> mv = matvec(1024, 512, dtype="fp32")
>>> mv.flops, mv.bytes
(1048576, 2103296)
>>> round(mv.intensity, 2)
0.5

Coates's C = C + A·B with M=K=N=512 in fp32:

>>> matmul(512, 512, 512, dtype="fp32", accumulate=True).intensity
64.0
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

from perfmodel._validate import count, flag, is_number, non_negative, sequence, text
from perfmodel.hardware import dtype_bytes

__all__ = [
    "Cost",
    "Fusion",
    "attention",
    "conv2d",
    "dense_backward",
    "dense_forward",
    "elementwise",
    "flops_from_macs",
    "fusion",
    "layer_norm",
    "matmul",
    "matvec",
    "pooling",
    "reduction",
    "scan",
    "softmax",
]


@dataclass(frozen=True, slots=True, kw_only=True)
class Cost:
    """The work of an operation: FLOPs, bytes read and bytes written.

    Costs add (``a + b`` is doing both) and scale (``3 * a`` is doing ``a`` three times).

    Parameters
    ----------
    flops : float
        Arithmetic done, FLOP (non-negative).
    bytes_read : float
        Bytes read from main memory, B (non-negative).
    bytes_written : float
        Bytes written to main memory, B (non-negative).
    dtype : str or None, optional
        The dtype the arithmetic runs in; None when unknown (a sum of costs in different
        dtypes, or an op given a width in bytes instead of a name).
    label : str, optional
        What the operation is, for tables and plots.
    """

    flops: float
    bytes_read: float
    bytes_written: float
    dtype: str | None = None
    label: str = ""

    def __post_init__(self) -> None:
        for name in ("flops", "bytes_read", "bytes_written"):
            non_negative(name, getattr(self, name))
        if self.dtype is not None:
            dtype_bytes(text("dtype", self.dtype))
        if not isinstance(self.label, str):
            raise TypeError(f"`label` must be a string (got {type(self.label).__name__}).")

    @property
    def bytes(self) -> float:
        """Bytes moved: read plus written, B."""
        return self.bytes_read + self.bytes_written

    @property
    def intensity(self) -> float:
        """Arithmetic intensity, FLOP/B (infinite for an op that moves nothing)."""
        return self.flops / self.bytes if self.bytes else math.inf

    def __add__(self, other: Cost) -> Cost:
        if not isinstance(other, Cost):
            return NotImplemented
        return Cost(
            flops=self.flops + other.flops,
            bytes_read=self.bytes_read + other.bytes_read,
            bytes_written=self.bytes_written + other.bytes_written,
            dtype=self.dtype if self.dtype == other.dtype else None,
            label=" + ".join(label for label in (self.label, other.label) if label),
        )

    def __mul__(self, times: float) -> Cost:
        if not is_number(times) or not 0 <= times < math.inf:
            return NotImplemented
        return Cost(
            flops=self.flops * times,
            bytes_read=self.bytes_read * times,
            bytes_written=self.bytes_written * times,
            dtype=self.dtype,
            label=f"{times:g} x {self.label}" if self.label else "",
        )

    __rmul__ = __mul__


def _dtype(dtype: str | int) -> tuple[int, str | None]:
    width = dtype_bytes(dtype)
    return width, dtype.strip().lower() if isinstance(dtype, str) else None


def flops_from_macs(macs: float) -> float:
    """FLOPs for a count of multiply-accumulates: each MAC is 2 FLOPs.

    Parameters
    ----------
    macs : float
        Multiply-accumulates, count (non-negative).

    Returns
    -------
    float
        ``2 · macs``, FLOP.

    Raises
    ------
    TypeError
        If ``macs`` is not a number.
    ValueError
        If ``macs`` is negative or not finite.

    Examples
    --------
    >>> flops_from_macs(4.1e9)  # ResNet-50's often-quoted "4.1 GFLOPs" are MACs
    8200000000.0
    """
    return 2.0 * non_negative("macs", macs)


def matvec(m: int, n: int, *, dtype: str | int = "fp32") -> Cost:
    """y = A·x with A of shape (m, n).

    Parameters
    ----------
    m : int
        Rows of A (and length of y), count.
    n : int
        Columns of A (and length of x), count.
    dtype : str or int, optional
        Element type: a dtype name or a width in bytes (default ``"fp32"``).

    Returns
    -------
    Cost
        FLOPs and bytes of the product.

    Notes
    -----
    FLOPs ``2·m·n`` (exactly ``m·(2n-1)``; the difference vanishes for large n).
    Bytes ``w·(m·n + n + m)``: read A and x, write y.
    """
    m, n = count("m", m), count("n", n)
    width, name = _dtype(dtype)
    return Cost(
        flops=2 * m * n,
        bytes_read=width * (m * n + n),
        bytes_written=width * m,
        dtype=name,
        label=f"matvec {m}x{n}",
    )


def matmul(
    m: int,
    k: int,
    n: int,
    *,
    dtype: str | int = "fp32",
    accumulate: bool = False,
    weight_dtype: str | int | None = None,
) -> Cost:
    """C = A·B (or C = C + A·B when ``accumulate``), A of shape (m, k), B of shape (k, n).

    ``weight_dtype`` stores B (the weights) at its own width, as quantised serving does
    (int8 or fp8 weights, bf16 activations); the arithmetic, and so the roofline's peak,
    stays in ``dtype``.

    Parameters
    ----------
    m : int
        Rows of A and C, count.
    k : int
        Columns of A, rows of B: the reduced dimension, count.
    n : int
        Columns of B and C, count.
    dtype : str or int, optional
        Type of A, C and the arithmetic: a dtype name or a width in bytes (default
        ``"fp32"``).
    accumulate : bool, optional
        C = C + A·B, which reads C as well (default False).
    weight_dtype : str or int or None, optional
        Type B is stored in; None (the default) for ``dtype``.

    Returns
    -------
    Cost
        FLOPs and bytes of the product, in ``dtype``.

    Notes
    -----
    FLOPs ``2·m·k·n``. Bytes ``w·(m·k + m·n) + w_B·k·n``, plus another ``w·m·n`` to read C
    when accumulating, which is Coates's ``4·(MK + KN + 2MN)`` for fp32.

    Examples
    --------
    >>> matmul(2, 3, 4).flops
    48
    >>> matmul(1, 4096, 4096, dtype="bf16", weight_dtype="int8").bytes_read  # half the weights
    16785408
    """
    m, k, n = count("m", m), count("k", k), count("n", n)
    accumulate = flag("accumulate", accumulate)
    width, name = _dtype(dtype)
    weight_width = width if weight_dtype is None else dtype_bytes(weight_dtype)
    read = width * (m * k + (m * n if accumulate else 0)) + weight_width * k * n
    quantised = "" if weight_dtype is None else f", {weight_dtype} weights"
    return Cost(
        flops=2 * m * k * n,
        bytes_read=read,
        bytes_written=width * m * n,
        dtype=name,
        label=f"matmul {m}x{k}x{n}" + (", C += A·B" if accumulate else "") + quantised,
    )


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
    width, name = _dtype(dtype)
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
    width, name = _dtype(dtype)
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
    width, name = _dtype(dtype)
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
    width, name = _dtype(dtype)
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
    width, name = _dtype(dtype)
    n = rows * cols
    return Cost(
        flops=8 * n,
        bytes_read=width * (n + 2 * cols),
        bytes_written=width * n,
        dtype=name,
        label="layer norm",
    )


def _pair(name: str, value: int | tuple[int, int], *, minimum: int = 1) -> tuple[int, int]:
    """An int, or a (height, width) pair of ints, as a pair."""
    if isinstance(value, tuple):
        if len(value) != 2:
            raise ValueError(f"`{name}` must be an int or a (height, width) pair (got {value!r}).")
        return count(name, value[0], minimum=minimum), count(name, value[1], minimum=minimum)
    side = count(name, value, minimum=minimum)
    return side, side


def conv2d(
    batch: int,
    in_channels: int,
    out_channels: int,
    height: int,
    width: int,
    kernel: int | tuple[int, int],
    *,
    stride: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    dilation: int | tuple[int, int] = 1,
    groups: int = 1,
    dtype: str | int = "fp32",
) -> Cost:
    """A 2-D convolution, no bias.

    ``kernel``, ``stride``, ``padding`` (on each side) and ``dilation`` are each an int or a
    ``(height, width)`` pair. ``groups`` splits the channels into that many independent
    convolutions (``groups == in_channels`` is a depthwise convolution).

    Parameters
    ----------
    batch : int
        Images, count.
    in_channels : int
        Input channels, count.
    out_channels : int
        Output channels, count.
    height : int
        Input height, count of pixels.
    width : int
        Input width, count of pixels.
    kernel : int or (int, int)
        Kernel size, square or ``(height, width)``.
    stride : int or (int, int), optional
        Step between windows (default 1).
    padding : int or (int, int), optional
        Zero padding on each side (default 0).
    dilation : int or (int, int), optional
        Spacing between kernel taps (default 1).
    groups : int, optional
        Independent channel groups; must divide both channel counts (default 1).
    dtype : str or int, optional
        Element type: a dtype name or a width in bytes (default ``"fp32"``).

    Returns
    -------
    Cost
        FLOPs and bytes of the convolution.

    Raises
    ------
    TypeError
        If a size is not an integer (or a pair of them).
    ValueError
        If a size is below 1 (padding below 0), ``groups`` does not divide the channels,
        or the dilated kernel is larger than the padded input.

    Notes
    -----
    Output size ``(H + 2p - d(k - 1) - 1) // s + 1`` per side. FLOPs
    ``2 · batch · C_out · H_out · W_out · (C_in / groups) · k_h · k_w``. Bytes: read the
    input and the weights once, write the output once.

    Examples
    --------
    >>> c = conv2d(1, 3, 64, 224, 224, 7, stride=2, padding=3)  # ResNet-50's first layer
    >>> round(c.flops / 1e6)
    236
    >>> depthwise = conv2d(1, 32, 32, 112, 112, 3, padding=1, groups=32)  # MobileNet's
    >>> depthwise.flops == conv2d(1, 1, 1, 112, 112, 3, padding=1).flops * 32
    True
    """
    batch = count("batch", batch)
    c_in, c_out = count("in_channels", in_channels), count("out_channels", out_channels)
    h, w = count("height", height), count("width", width)
    (k_h, k_w), (s_h, s_w) = _pair("kernel", kernel), _pair("stride", stride)
    (p_h, p_w), (d_h, d_w) = _pair("padding", padding, minimum=0), _pair("dilation", dilation)
    groups = count("groups", groups)
    if c_in % groups or c_out % groups:
        raise ValueError(
            f"`groups` ({groups}) must divide both `in_channels` ({c_in}) and "
            f"`out_channels` ({c_out})."
        )
    span_h, span_w = d_h * (k_h - 1) + 1, d_w * (k_w - 1) + 1
    out_h, out_w = (h + 2 * p_h - span_h) // s_h + 1, (w + 2 * p_w - span_w) // s_w + 1
    if out_h < 1 or out_w < 1:
        raise ValueError(
            f"`kernel` ({k_h}x{k_w}, dilated to {span_h}x{span_w}) is larger than the padded "
            f"input ({h + 2 * p_h}x{w + 2 * p_w}); use a smaller kernel or more padding."
        )
    size, name = _dtype(dtype)
    weights = c_out * (c_in // groups) * k_h * k_w
    return Cost(
        flops=2 * batch * out_h * out_w * weights,
        bytes_read=size * (batch * c_in * h * w + weights),
        bytes_written=size * batch * c_out * out_h * out_w,
        dtype=name,
        label=f"conv{k_h}x{k_w} {c_in}->{c_out}" + (f" /{groups}" if groups > 1 else ""),
    )


def pooling(
    batch: int,
    channels: int,
    height: int,
    width: int,
    window: int | tuple[int, int],
    *,
    stride: int | tuple[int, int] = 1,
    padding: int | tuple[int, int] = 0,
    dtype: str | int = "fp32",
) -> Cost:
    """Max or average pooling: one compare or add per window element of each output.

    Parameters
    ----------
    batch : int
        Images, count.
    channels : int
        Channels, each pooled on its own, count.
    height : int
        Input height, count of pixels.
    width : int
        Input width, count of pixels.
    window : int or (int, int)
        Window size, square or ``(height, width)``.
    stride : int or (int, int), optional
        Step between windows (default 1).
    padding : int or (int, int), optional
        Padding on each side (default 0).
    dtype : str or int, optional
        Element type: a dtype name or a width in bytes (default ``"fp32"``).

    Returns
    -------
    Cost
        ``window`` elements' FLOPs per output; the input read once, the output
        written once.

    Raises
    ------
    ValueError
        If the window is larger than the padded input.

    Examples
    --------
    >>> pooling(1, 64, 112, 112, 3, stride=2, padding=1).bytes_written  # ResNet's max pool
    802816
    """
    batch, channels = count("batch", batch), count("channels", channels)
    h, w = count("height", height), count("width", width)
    (k_h, k_w), (s_h, s_w) = _pair("window", window), _pair("stride", stride)
    p_h, p_w = _pair("padding", padding, minimum=0)
    out_h, out_w = (h + 2 * p_h - k_h) // s_h + 1, (w + 2 * p_w - k_w) // s_w + 1
    if out_h < 1 or out_w < 1:
        raise ValueError(
            f"`window` ({k_h}x{k_w}) is larger than the padded input ({h + 2 * p_h}x{w + 2 * p_w})."
        )
    size, name = _dtype(dtype)
    outputs = batch * channels * out_h * out_w
    return Cost(
        flops=outputs * k_h * k_w,
        bytes_read=size * batch * channels * h * w,
        bytes_written=size * outputs,
        dtype=name,
        label=f"pool{k_h}x{k_w}",
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
    width, name = _dtype(dtype)
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


def dense_forward(
    batch: int, in_features: int, out_features: int, *, dtype: str | int = "fp32"
) -> Cost:
    """Y = X·W for a layer with weights (in_features, out_features) and a minibatch.

    For Coates's N×N layer with minibatch M this is FLOPs ``2·N²·M`` and bytes
    ``4·(N² + 2·N·M)`` in fp32.

    Parameters
    ----------
    batch : int
        Rows of X: the minibatch, count.
    in_features : int
        Inputs of the layer, count.
    out_features : int
        Outputs of the layer, count.
    dtype : str or int, optional
        Element type: a dtype name or a width in bytes (default ``"fp32"``).

    Returns
    -------
    Cost
        FLOPs and bytes of the product.

    Examples
    --------
    >>> layer = dense_forward(64, 1024, 1024)
    >>> layer.flops == 2 * 1024**2 * 64, layer.bytes == 4 * (1024**2 + 2 * 1024 * 64)
    (True, True)
    """
    batch, in_features = count("batch", batch), count("in_features", in_features)
    out_features = count("out_features", out_features)
    cost = matmul(batch, in_features, out_features, dtype=dtype)
    return dataclasses.replace(cost, label=f"dense {in_features}->{out_features} fwd")


def dense_backward(
    batch: int, in_features: int, out_features: int, *, dtype: str | int = "fp32"
) -> Cost:
    """Both gradients of a dense layer: dX = dY·Wᵀ and dW = Xᵀ·dY (twice the forward FLOPs).

    Parameters
    ----------
    batch : int
        Rows of X and dY: the minibatch, count.
    in_features : int
        Inputs of the layer, count.
    out_features : int
        Outputs of the layer, count.
    dtype : str or int, optional
        Element type: a dtype name or a width in bytes (default ``"fp32"``).

    Returns
    -------
    Cost
        The two products' FLOPs and bytes, added.
    """
    batch, in_features = count("batch", batch), count("in_features", in_features)
    out_features = count("out_features", out_features)
    grad_input = matmul(batch, out_features, in_features, dtype=dtype)
    grad_weight = matmul(in_features, batch, out_features, dtype=dtype)
    total = grad_input + grad_weight
    return dataclasses.replace(total, label=f"dense {in_features}->{out_features} bwd")


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
    width, name = _dtype(dtype)
    fused = Cost(
        flops=unfused.flops,
        bytes_read=width * n,
        bytes_written=width * n,
        dtype=name,
        label=f"{len(steps)} ops fused",
    )
    return Fusion(unfused=unfused, fused=fused)
