"""The work of an operation, :class:`Cost` (FLOPs, bytes read and bytes written), with
its arithmetic (costs add and scale); :func:`element_type`, the width and name every
operation's cost records for its dtype; and :func:`flops_from_macs`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perfmodel._validate import is_number, non_negative, text
from perfmodel.hardware import dtype_bytes

__all__ = ["Cost", "element_type", "flops_from_macs"]


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


def element_type(dtype: str | int) -> tuple[int, str | None]:
    """A dtype's width and the name a :class:`Cost` records for it.

    Parameters
    ----------
    dtype : str or int
        Element type: a dtype name or a width in bytes.

    Returns
    -------
    tuple of (int, str or None)
        The width, B, and the name lower-cased (None when ``dtype`` is a width).
    """
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
