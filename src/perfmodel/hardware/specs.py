"""What a device and a link are: the frozen dataclasses the catalogue holds.

:class:`Device` (peak FLOP/s per dtype, memory) and :class:`Link` (bandwidth, latency),
each checked as it is built; :class:`LinkSpec`, anything with a link's two numbers; the
:data:`DeviceLike` and :data:`LinkLike` every model takes; and how one ``[[device]]`` or
``[[link]]`` table of a catalogue file becomes a :class:`Device` or a :class:`Link`
(:func:`device_from_toml`, :func:`link_from_toml`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, TypeAlias, runtime_checkable

from perfmodel import _show
from perfmodel._validate import choice, count, describe, is_number, non_negative, positive, text
from perfmodel.hardware.dtypes import (
    BUS_ALGORITHMS,
    DTYPE_BYTES,
    DTYPES,
    KINDS,
    LINK_KINDS,
    dtype_bytes,
)

__all__ = ["Device", "DeviceLike", "Link", "LinkLike", "LinkSpec"]


def _check_rates(owner: str, rates: object, what: str) -> Mapping[str, float]:
    """A table of positive, finite rates keyed by known dtype names."""
    if not isinstance(rates, Mapping):
        raise TypeError(
            f"{owner}: `{what}` must be a table of dtype -> rate (got {type(rates).__name__})."
        )
    checked = {}
    for dtype, rate in rates.items():
        if dtype not in DTYPE_BYTES:
            raise ValueError(
                f"{owner}: `{what}` has an unknown dtype {dtype!r} (known: {', '.join(DTYPES)})."
            )
        checked[dtype] = _positive(owner, f"{what}[{dtype!r}]", rate)
    return MappingProxyType(checked)


def _positive(owner: str, field_name: str, value: object) -> float:
    """A positive finite number, with the owner named in the message."""
    try:
        return positive(field_name, value)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{owner}: {error}") from None


def _optional_positive(owner: str, field_name: str, value: object) -> float | None:
    return None if value is None else _positive(owner, field_name, value)


def _field(owner: str, check: Any, name: str, value: object, *args: Any, **kwargs: Any) -> Any:
    """``check(name, value, ...)`` from :mod:`perfmodel._validate`, the owner named."""
    try:
        return check(name, value, *args, **kwargs)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{owner}: {error}") from None


def _source(owner: str, value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{owner}: `source` must be a string (got {type(value).__name__}).")
    if not value.strip():
        raise ValueError(f"{owner}: `source` must say where the figures come from (got {value!r}).")
    return value


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Device:
    """A compute node reduced to the numbers that bound its speed.

    Parameters
    ----------
    name : str
        Display name, also the lookup key.
    kind : {"gpu", "tpu", "cpu", "other"}
        What sort of device it is.
    peak_flops_by_dtype : mapping
        Dense peak FLOP/s (or int ops/s) per dtype, as the maker states it.
    memory_bandwidth : float
        Main-memory bandwidth, B/s.
    memory_capacity : float, optional
        Main-memory capacity, B.
    power_w : float, optional
        Board power (TDP), W: joules per s.
    year : int, optional
        Year of introduction.
    source : str
        Where the figures come from (a datasheet URL).
    sparse_flops_by_dtype : mapping, optional
        Peaks with 2:4 structured sparsity, kept apart from the dense ones (never below
        them).
    measured_flops_by_dtype : mapping, optional
        The best rate anyone has *measured* per dtype (a large matmul, say): what
        "achievable" means, beside the nameplate. Needs ``measured_source``.
    measured_memory_bandwidth : float, optional
        The best measured main-memory bandwidth (a STREAM-style copy), B/s; at most
        ``memory_bandwidth``.
    measured_source : str, optional
        Where the measured figures come from.
    memory_levels : mapping, optional
        Measured bandwidth of each memory level, B/s, fastest first
        (``{"L1": ..., "L2": ..., "L3": ..., "DRAM": ...}``): what lecture 06 measures.
    compute_units : int, optional
        Streaming multiprocessors (NVIDIA) or compute units (AMD), count: how many tiles of
        a GEMM run at once (:mod:`perfmodel.achieved` prices a GEMM in waves of them).
    notes : str, optional
        Anything a reader needs to interpret the figures.
    """

    name: str
    kind: str
    peak_flops_by_dtype: Mapping[str, float]
    memory_bandwidth: float
    source: str
    memory_capacity: float | None = None
    power_w: float | None = None
    year: int | None = None
    sparse_flops_by_dtype: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    measured_flops_by_dtype: Mapping[str, float] = field(
        default_factory=lambda: MappingProxyType({})
    )
    measured_memory_bandwidth: float | None = None
    measured_source: str = ""
    memory_levels: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    compute_units: int | None = None
    notes: str = ""

    def __post_init__(self) -> None:
        set_ = functools.partial(object.__setattr__, self)
        set_("name", text("name", self.name))
        owner = f"device {self.name!r}"
        set_("kind", _field(owner, choice, "kind", self.kind, KINDS))
        if isinstance(self.peak_flops_by_dtype, Mapping) and not self.peak_flops_by_dtype:
            raise ValueError(f"{owner}: `peak_flops_by_dtype` needs at least one dtype (got none).")
        set_("peak_flops_by_dtype", _check_rates(owner, self.peak_flops_by_dtype, "peak_flops"))
        sparse = _check_rates(owner, self.sparse_flops_by_dtype, "sparse_flops")
        for dtype, rate in sparse.items():
            dense = self.peak_flops_by_dtype.get(dtype)
            if dense is not None and rate < dense:
                raise ValueError(
                    f"{owner}: `sparse_flops[{dtype!r}]` must be at least the dense peak "
                    f"{dense:g} (got {rate:g}): sparsity never makes a device slower."
                )
        set_("sparse_flops_by_dtype", sparse)
        measured = _check_rates(owner, self.measured_flops_by_dtype, "measured_flops")
        for dtype, rate in measured.items():
            nameplate = self.peak_flops_by_dtype.get(dtype)
            if nameplate is None or rate > nameplate:
                raise ValueError(
                    f"{owner}: `measured_flops[{dtype!r}]` must be at most the dense peak "
                    f"of that dtype (got {rate:g}, peak {nameplate})."
                )
        set_("measured_flops_by_dtype", measured)
        set_("memory_bandwidth", _positive(owner, "memory_bandwidth", self.memory_bandwidth))
        measured_bandwidth = _optional_positive(
            owner, "measured_memory_bandwidth", self.measured_memory_bandwidth
        )
        if measured_bandwidth is not None and measured_bandwidth > self.memory_bandwidth:
            raise ValueError(
                f"{owner}: `measured_memory_bandwidth` must be at most `memory_bandwidth` "
                f"{self.memory_bandwidth:g} (got {measured_bandwidth:g})."
            )
        set_("measured_memory_bandwidth", measured_bandwidth)
        if (measured or measured_bandwidth is not None) and not str(self.measured_source).strip():
            raise ValueError(f"{owner}: measured ceilings need a `measured_source`.")
        set_("memory_capacity", _optional_positive(owner, "memory_capacity", self.memory_capacity))
        set_("power_w", _optional_positive(owner, "power_w", self.power_w))
        if self.year is not None:
            set_("year", _field(owner, count, "year", self.year, minimum=1940, maximum=2100))
        if self.compute_units is not None:
            set_("compute_units", _field(owner, count, "compute_units", self.compute_units))
        set_("source", _source(owner, self.source))
        if not isinstance(self.memory_levels, Mapping):
            raise TypeError(
                f"{owner}: `memory_levels` must be a table of level -> bytes/s "
                f"(got {type(self.memory_levels).__name__})."
            )
        set_(
            "memory_levels",
            MappingProxyType(
                {
                    _field(owner, text, "memory_levels key", level): _positive(
                        owner, f"memory_levels[{level!r}]", rate
                    )
                    for level, rate in self.memory_levels.items()
                }
            ),
        )

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes this device has a dense peak for, in :data:`DTYPES` order."""
        return tuple(d for d in DTYPES if d in self.peak_flops_by_dtype)

    def peak_flops(self, dtype: str = "fp32", *, sparse: bool = False) -> float:
        """Peak FLOP/s for ``dtype`` (dense, unless ``sparse=True``).

        Parameters
        ----------
        dtype : str, optional
            One of :data:`DTYPES` (default ``"fp32"``); a name, never a width in bytes,
            which would not say which peak (4 bytes is fp32 or tf32).
        sparse : bool, optional
            The peak with 2:4 structured sparsity instead of the dense one (default False).

        Returns
        -------
        float
            The maker's peak, FLOP/s (operations per second for an integer dtype).

        Raises
        ------
        TypeError
            If ``dtype`` is not a string (a width in bytes included).
        ValueError
            If the name is unknown, or the maker states no peak for that dtype; the
            message lists those it does.
        """
        if is_number(dtype):
            raise TypeError(
                f"`dtype` must be a dtype name, not a width in bytes "
                f"(got {type(dtype).__name__} {describe(dtype)}): a width does not say which "
                f"peak. Names: {', '.join(DTYPES)}."
            )
        key = text("dtype", dtype).lower()
        dtype_bytes(key)  # validates the name
        table = self.sparse_flops_by_dtype if sparse else self.peak_flops_by_dtype
        if key not in table:
            kind = "sparse" if sparse else "dense"
            have = ", ".join(d for d in DTYPES if d in table) or "none"
            raise ValueError(
                f"{self.name} has no {kind} peak for {key!r}; it has: {have}. "
                f"Pick one of those dtypes."
            )
        return table[key]

    def ridge_point(self, dtype: str = "fp32") -> float:
        """Intensity (FLOP/byte) above which an op is compute-bound: peak / bandwidth.

        Parameters
        ----------
        dtype : str, optional
            Whose dense peak to use (default ``"fp32"``).

        Returns
        -------
        float
            The dense peak over the nameplate memory bandwidth, FLOP/B.

        Raises
        ------
        ValueError
            If the device has no dense peak for ``dtype``.
        """
        return self.peak_flops(dtype) / self.memory_bandwidth

    def measured_flops(self, dtype: str = "fp32") -> float:
        """The best measured rate for ``dtype`` (see ``measured_source``).

        Parameters
        ----------
        dtype : str, optional
            One of :data:`DTYPES` (default ``"fp32"``).

        Returns
        -------
        float
            The best published measured rate, FLOP/s.

        Raises
        ------
        TypeError
            If ``dtype`` is not a string.
        ValueError
            If nobody has published a measurement for that dtype; the message lists those
            that have one.
        """
        key = text("dtype", dtype).lower()
        dtype_bytes(key)
        if key not in self.measured_flops_by_dtype:
            have = ", ".join(d for d in DTYPES if d in self.measured_flops_by_dtype) or "none"
            raise ValueError(
                f"{self.name} has no measured ceiling for {key!r}; measured: {have}. "
                f"Use the nameplate, or give an efficiency such as 0.8."
            )
        return self.measured_flops_by_dtype[key]

    def __repr__(self) -> str:
        return _show.device(self)


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class Link:
    """A connection between devices or nodes.

    Parameters
    ----------
    name : str
        Display name, also the lookup key.
    kind : {"pcie", "nvlink", "infiniband", "ethernet", "ici", "dcn", "other"}
        What sort of link it is (see :data:`LINK_KINDS`).
    bandwidth : float
        Bytes per second in one direction, B/s (positive).
    latency : float
        Seconds per message, s (non-negative).
    source : str
        Where the figures come from (a datasheet URL).
    notes : str, optional
        Anything a reader needs to interpret the figures.
    measured_busbw : mapping of str to float, optional
        The bus bandwidth (nccl-tests' *busbw*) published runs reached per collective
        algorithm (:data:`BUS_ALGORITHMS`) at large messages, B/s: what "achievable" means
        for a link, beside the nameplate, as ``measured_flops`` is for a device. Needs
        ``measured_source``; a ring's is at most the line rate.
    measured_source : str, optional
        Where the measured figures come from: title, author, date and address of each.
    """

    name: str
    kind: str
    bandwidth: float
    latency: float
    source: str
    notes: str = ""
    measured_busbw: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    measured_source: str = ""

    def __post_init__(self) -> None:
        set_ = functools.partial(object.__setattr__, self)
        set_("name", text("name", self.name))
        owner = f"link {self.name!r}"
        set_("kind", _field(owner, choice, "kind", self.kind, LINK_KINDS))
        set_("bandwidth", _positive(owner, "bandwidth", self.bandwidth))
        set_("latency", _field(owner, non_negative, "latency", self.latency))
        set_("source", _source(owner, self.source))
        if not isinstance(self.measured_busbw, Mapping):
            raise TypeError(
                f"{owner}: `measured_busbw` must be a table of algorithm -> B/s "
                f"(got {type(self.measured_busbw).__name__})."
            )
        measured = {}
        for algorithm, rate in self.measured_busbw.items():
            key = _field(owner, choice, "measured_busbw", algorithm, BUS_ALGORITHMS)
            measured[key] = _positive(owner, f"measured_busbw[{algorithm!r}]", rate)
        if measured.get("ring", 0.0) > self.bandwidth:
            raise ValueError(
                f"{owner}: `measured_busbw['ring']` must be at most the line rate "
                f"{self.bandwidth:g} B/s (got {measured['ring']:g}): a ring's busbw is the "
                f"speed each link ran at."
            )
        set_("measured_busbw", MappingProxyType(measured))
        if measured and not str(self.measured_source).strip():
            raise ValueError(f"{owner}: measured bus bandwidths need a `measured_source`.")

    def __repr__(self) -> str:
        return _show.link(self)


@runtime_checkable
class LinkSpec(Protocol):
    """Anything with a link's two numbers, which is all the alpha-beta model needs.

    A :class:`Link` is one; so are :class:`perfmodel.comms.LinkModel` and the fit
    :func:`perfmodel.comms.fit_alpha_beta` returns, so a link you measured plugs straight in.
    A protocol is never instantiated: it only describes the objects that satisfy it
    (``isinstance(x, LinkSpec)`` checks for the two attributes).

    Parameters
    ----------
    *args : object
        None taken: calling ``LinkSpec(...)`` raises :class:`TypeError`.
    **kwargs : object
        None taken, as for ``*args``.
    """

    @property
    def bandwidth(self) -> float:
        """Bytes per second in one direction, B/s."""

    @property
    def latency(self) -> float:
        """Seconds per message, s."""


#: A device as the models take it: a catalogue name (see :func:`names`) or a :class:`Device`.
DeviceLike: TypeAlias = str | Device
#: A link as the models take it: a catalogue name (see :func:`link_names`), a :class:`Link`,
#: or any :class:`LinkSpec`.
LinkLike: TypeAlias = str | Link | LinkSpec


_DEVICE_KEYS = {
    "name", "kind", "peak_flops", "sparse_flops", "derived", "measured", "memory_bandwidth",
    "memory_capacity", "power_w", "year", "source", "notes", "memory_levels", "compute_units",
}  # fmt: skip
_DEVICE_REQUIRED = ("name", "kind", "memory_bandwidth", "source")
_LINK_KEYS = {"name", "kind", "bandwidth", "latency", "source", "notes", "measured"}
_LINK_REQUIRED = ("name", "kind", "bandwidth", "latency", "source")


def _entry(entry: object, what: str, keys: set[str], required: tuple[str, ...]) -> dict[str, Any]:
    """One ``[[device]]`` or ``[[link]]`` table, checked for unknown and missing keys."""
    if not isinstance(entry, dict):
        raise ValueError(f"each [[{what}]] must be a table (got {type(entry).__name__}).")
    unknown = sorted(set(entry) - keys)
    if unknown:
        raise ValueError(
            f"a [[{what}]] has unknown keys {', '.join(unknown)}; "
            f"allowed: {', '.join(sorted(keys))}."
        )
    missing = [key for key in required if key not in entry]
    if missing:
        raise ValueError(f"a [[{what}]] entry is incomplete: it lacks {', '.join(missing)}.")
    return dict(entry)


def device_from_toml(raw: object) -> Device:
    """One ``[[device]]`` table of a catalogue file as a :class:`Device`."""
    entry = _entry(raw, "device", _DEVICE_KEYS, _DEVICE_REQUIRED)
    owner = f"device {entry['name']!r}"
    derived = entry.pop("derived", None)
    if derived is not None:
        if not isinstance(derived, dict) or set(derived) != {
            "cores",
            "clock_hz",
            "flops_per_cycle",
        }:
            raise ValueError(
                f"{owner}: `derived` must be a table of cores, clock_hz and flops_per_cycle."
            )
        cores = _field(owner, count, "derived.cores", derived["cores"])
        clock = _positive(owner, "derived.clock_hz", derived["clock_hz"])
        per_cycle = _check_rates(owner, derived["flops_per_cycle"], "derived.flops_per_cycle")
        entry["peak_flops"] = {dtype: cores * clock * rate for dtype, rate in per_cycle.items()}
        entry["notes"] = (
            str(entry.get("notes", "")) + " Peaks derived: cores x clock x FLOP/cycle."
        ).strip()
    elif "peak_flops" not in entry:
        raise ValueError(f"{owner}: give `peak_flops` (a table of dtype -> FLOP/s) or `derived`.")
    measured = entry.pop("measured", None)
    if measured is not None:
        if not isinstance(measured, dict) or not set(measured) <= {
            "flops", "memory_bandwidth", "source",
        }:  # fmt: skip
            raise ValueError(
                f"{owner}: `measured` must be a table of flops, memory_bandwidth and source."
            )
        entry["measured_flops_by_dtype"] = measured.get("flops", {})
        entry["measured_memory_bandwidth"] = measured.get("memory_bandwidth")
        entry["measured_source"] = measured.get("source", "")
    return Device(
        peak_flops_by_dtype=entry.pop("peak_flops"),
        sparse_flops_by_dtype=entry.pop("sparse_flops", {}),
        **entry,
    )


def link_from_toml(raw: object) -> Link:
    """One ``[[link]]`` table of a catalogue file as a :class:`Link`."""
    entry = _entry(raw, "link", _LINK_KEYS, _LINK_REQUIRED)
    measured = entry.pop("measured", None)
    if measured is not None:
        if not isinstance(measured, dict) or not set(measured) <= {"busbw", "source"}:
            raise ValueError(
                f"link {entry['name']!r}: `measured` must be a table of busbw and source."
            )
        entry["measured_busbw"] = measured.get("busbw", {})
        entry["measured_source"] = measured.get("source", "")
    return Link(**entry)
