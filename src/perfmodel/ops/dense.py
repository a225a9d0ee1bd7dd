"""The dense operations: products of matrices and vectors (:func:`matvec`,
:func:`matmul`), a dense layer's forward and backward passes (:func:`dense_forward`,
:func:`dense_backward`), and convolution and pooling over images (:func:`conv2d`,
:func:`pooling`).
"""

from __future__ import annotations

import dataclasses

from perfmodel._validate import count, flag
from perfmodel.hardware import dtype_bytes
from perfmodel.ops.costs import Cost, element_type

__all__ = ["conv2d", "dense_backward", "dense_forward", "matmul", "matvec", "pooling"]


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
    width, name = element_type(dtype)
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
    width, name = element_type(dtype)
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
    size, name = element_type(dtype)
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
    size, name = element_type(dtype)
    outputs = batch * channels * out_h * out_w
    return Cost(
        flops=outputs * k_h * k_w,
        bytes_read=size * batch * channels * h * w,
        bytes_written=size * outputs,
        dtype=name,
        label=f"pool{k_h}x{k_w}",
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
