"""The dtypes the course knows, and the kinds a catalogue entry may be.

Bytes per element of each dtype (:data:`DTYPE_BYTES`, :func:`dtype_bytes`), what one
operation of a dtype is called (:func:`op_unit`), and the kinds of device
(:data:`KINDS`), link (:data:`LINK_KINDS`) and collective algorithm
(:data:`BUS_ALGORITHMS`) a :class:`~perfmodel.hardware.Device` or
:class:`~perfmodel.hardware.Link` may name.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from perfmodel._validate import text

__all__ = [
    "BUS_ALGORITHMS",
    "DTYPES",
    "DTYPE_BYTES",
    "KINDS",
    "LINK_KINDS",
    "dtype_bytes",
    "op_unit",
]

#: Bytes per element of each dtype the course knows.
DTYPE_BYTES: Mapping[str, int] = MappingProxyType(
    {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}
)
DTYPES = tuple(DTYPE_BYTES)
KINDS = ("gpu", "tpu", "cpu", "other")
#: ``ici``: a TPU's inter-chip interconnect; ``dcn``: the data-centre network between pods.
LINK_KINDS = ("pcie", "nvlink", "infiniband", "ethernet", "ici", "dcn", "other")
#: Collective algorithms a link's measured bus bandwidth may be given for (NCCL's names:
#: ``NCCL_ALGO=Ring``, ``Tree``, ``NVLS``, ``NVLSTree``).
BUS_ALGORITHMS = ("ring", "tree", "nvls", "nvls_tree")


def dtype_bytes(dtype: str | int) -> int:
    """Bytes per element: a dtype name (``"bf16"``) or a width in bytes (``2``).

    Parameters
    ----------
    dtype : str or int
        One of :data:`DTYPES` (case and surrounding spaces ignored), or a width in bytes:
        1, 2, 4 or 8.

    Returns
    -------
    int
        Bytes per element, B.

    Raises
    ------
    TypeError
        If ``dtype`` is neither a string nor an int (a bool included).
    ValueError
        If the name is unknown or the width is not 1, 2, 4 or 8.

    Examples
    --------
    >>> dtype_bytes("fp32"), dtype_bytes("int8"), dtype_bytes(2)
    (4, 1, 2)
    """
    if isinstance(dtype, bool):
        raise TypeError(f"`dtype` must be a dtype name or a width in bytes (got {dtype!r}).")
    if isinstance(dtype, int):
        if dtype not in (1, 2, 4, 8):
            raise ValueError(f"`dtype` as a width must be 1, 2, 4 or 8 bytes (got {dtype}).")
        return dtype
    if not isinstance(dtype, str):
        raise TypeError(
            f"`dtype` must be a dtype name or a width in bytes (got {type(dtype).__name__})."
        )
    key = dtype.strip().lower()
    if key not in DTYPE_BYTES:
        raise ValueError(f"`dtype` must be one of {', '.join(DTYPES)} (got {dtype!r}).")
    return DTYPE_BYTES[key]


def op_unit(dtype: str) -> str:
    """What one operation of ``dtype`` is called: ``"OP"`` for integers, else ``"FLOP"``.

    An int8 multiply-add is not a floating-point operation, so int8 peaks read OP/s.

    Parameters
    ----------
    dtype : str
        A dtype name, such as ``"int8"`` or ``"bf16"`` (not checked against :data:`DTYPES`).

    Returns
    -------
    str
        ``"OP"`` if the name starts with ``"int"``, else ``"FLOP"``.

    Raises
    ------
    TypeError
        If ``dtype`` is not a string.
    ValueError
        If ``dtype`` is empty.

    Examples
    --------
    >>> op_unit("int8"), op_unit("bf16")
    ('OP', 'FLOP')
    """
    return "OP" if text("dtype", dtype).lower().startswith("int") else "FLOP"
