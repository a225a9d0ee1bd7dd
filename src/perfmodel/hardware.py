"""The hardware catalogue: devices (peak FLOP/s, memory) and links (bandwidth, latency).

The catalogue is a TOML file shipped in the package (``perfmodel/data/catalogue.toml``),
loaded into frozen dataclasses. Every entry names its source. Look devices up by name,
load your own from a TOML file of the same shape, or construct a :class:`Device` directly.

Every model in the package takes a device as a :data:`DeviceLike` (a catalogue name or a
:class:`Device`) and a link as a :data:`LinkLike` (a catalogue name, a :class:`Link`, or
any :class:`LinkSpec`: an object with ``bandwidth`` and ``latency``, such as a link you
fitted yourself). Each public function resolves its argument once, with :func:`get` for a
device and :func:`perfmodel.comms.as_link` for a link, and passes the resolved object on.

Examples
--------
>>> h100 = get("H100 SXM")
>>> h100.peak_flops("bf16") / 1e12
989.5
>>> round(h100.ridge_point("bf16"))
295
>>> get_link("NVLink 4").bandwidth / 1e9
450.0
"""

from __future__ import annotations

import difflib
import functools
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol, TypeAlias, runtime_checkable

from perfmodel import _show
from perfmodel._validate import choice, count, describe, is_number, non_negative, positive, text

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "BUS_ALGORITHMS",
    "DTYPES",
    "DTYPE_BYTES",
    "KINDS",
    "LINK_KINDS",
    "Catalogue",
    "Device",
    "DeviceLike",
    "Link",
    "LinkLike",
    "LinkSpec",
    "catalogue",
    "dtype_bytes",
    "get",
    "get_link",
    "link_names",
    "load",
    "names",
    "op_unit",
    "save",
    "to_toml",
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


#: Short names people type for a word that starts a catalogue name ("IB NDR").
_ABBREVIATIONS = {"ib": "infiniband"}


def _key(name: str) -> str:
    words = name.lower().replace("-", " ").replace("_", " ").split()
    return " ".join(_ABBREVIATIONS.get(word, word) for word in words)


def _lookup(table: Mapping[str, Any], name: object, what: str, argument: str = "name") -> Any:
    if not isinstance(name, str):
        kind = "Device" if what == "device" else "Link"
        raise TypeError(
            f"`{argument}` must be a {what} name or a hardware.{kind} "
            f"(got {type(name).__name__} {name!r})."
        )
    by_key = {_key(entry): entry for entry in table}
    key = _key(name)
    if key in by_key:
        return table[by_key[key]]
    starting = [entry for k, entry in by_key.items() if key and k.startswith(key)]
    if len(starting) == 1:  # a unique prefix: "MI300" is the MI300X
        return table[starting[0]]
    listing = "names()" if what == "device" else "link_names()"
    if starting:
        raise ValueError(
            f"`{argument}` must name one catalogue {what}: {name!r} starts the names of "
            f"{len(starting)}: {', '.join(map(repr, starting))}; say which."
        )
    close = difflib.get_close_matches(key, list(by_key), n=3, cutoff=0.4)
    hint = ", ".join(repr(by_key[c]) for c in close) or "none close"
    raise ValueError(
        f"`{argument}` must name a catalogue {what}: there is no {what} named {name!r}; "
        f"closest: {hint}. See hardware.{listing} for all."
    )


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


def _device_from_toml(raw: object) -> Device:
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


def _link_from_toml(raw: object) -> Link:
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


@dataclass(frozen=True, slots=True)
class Catalogue:
    """Devices and links by name.

    Parameters
    ----------
    devices : mapping of str to Device
        The devices, keyed by their names.
    links : mapping of str to Link
        The links, keyed by their names.
    """

    devices: Mapping[str, Device]
    links: Mapping[str, Link]

    @classmethod
    def from_toml(cls, text: str, *, origin: str = "<string>") -> Catalogue:
        """Parse a catalogue from TOML text (``[[device]]`` and ``[[link]]`` tables).

        Parameters
        ----------
        text : str
            TOML holding only ``[[device]]`` and ``[[link]]`` tables.
        origin : str, optional
            Where the text came from, named in error messages (default ``"<string>"``).

        Returns
        -------
        Catalogue
            The devices and links, by name, in the text's order.

        Raises
        ------
        ValueError
            If the text is not valid TOML, has other top-level keys, or an entry is
            incomplete, invalid or named twice.
        """
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"{origin} is not valid TOML: {error}") from None
        unknown = sorted(set(data) - {"device", "link"})
        if unknown:
            raise ValueError(
                f"{origin}: unknown top-level keys {', '.join(unknown)}; "
                f"a catalogue holds only [[device]] and [[link]] tables."
            )
        devices: dict[str, Any] = {}
        links: dict[str, Any] = {}
        for what, table, build in (
            ("device", devices, _device_from_toml),
            ("link", links, _link_from_toml),
        ):
            entries = data.get(what, [])
            if not isinstance(entries, list):
                raise ValueError(
                    f"{origin}: `{what}` must be written [[{what}]] (an array of tables)."
                )
            for entry in entries:
                try:
                    item = build(entry)
                except (TypeError, ValueError) as error:
                    raise ValueError(f"{origin}: {error}") from None
                if item.name in table:
                    raise ValueError(f"{origin}: two [[{what}]] entries are named {item.name!r}.")
                table[item.name] = item
        return cls(MappingProxyType(devices), MappingProxyType(links))

    def merged(self, other: Catalogue) -> Catalogue:
        """This catalogue with ``other``'s entries added; a name in both is an error.

        Parameters
        ----------
        other : Catalogue
            The entries to add.

        Returns
        -------
        Catalogue
            A new catalogue: this one's entries, then ``other``'s.

        Raises
        ------
        ValueError
            If a device or link name is in both.
        """
        for mine, theirs, what in ((self.devices, other.devices, "device"),
                                   (self.links, other.links, "link")):  # fmt: skip
            clash = sorted(set(mine) & set(theirs))
            if clash:
                raise ValueError(
                    f"{what} names {', '.join(map(repr, clash))} are taken; "
                    f"name yours differently (for example {clash[0] + ' (mine)'!r})."
                )
        return Catalogue(
            MappingProxyType({**self.devices, **other.devices}),
            MappingProxyType({**self.links, **other.links}),
        )

    def get(self, name: str, *, argument: str = "name") -> Device:
        """The device called ``name`` (case, spaces and hyphens ignored; a unique start of a
        name will do); errors name the caller's ``argument``.

        Parameters
        ----------
        name : str
            The device's name.
        argument : str, optional
            What the caller called it, for error messages (default ``"name"``).

        Returns
        -------
        Device
            The device of that name.

        Raises
        ------
        TypeError
            If ``name`` is not a string.
        ValueError
            If no device has that name; the message suggests the closest.
        """
        device: Device = _lookup(self.devices, name, "device", argument)
        return device

    def get_link(self, name: str, *, argument: str = "name") -> Link:
        """The link called ``name``; errors name the caller's ``argument``.

        Parameters
        ----------
        name : str
            The link's name (case, spaces and hyphens ignored).
        argument : str, optional
            What the caller called it, for error messages (default ``"name"``).

        Returns
        -------
        Link
            The link of that name.

        Raises
        ------
        TypeError
            If ``name`` is not a string.
        ValueError
            If no link has that name; the message suggests the closest.
        """
        link: Link = _lookup(self.links, name, "link", argument)
        return link


@functools.cache
def catalogue() -> Catalogue:
    """The catalogue shipped with perfmodel (loaded once)."""
    text = resources.files("perfmodel").joinpath("data/catalogue.toml").read_text("utf-8")
    return Catalogue.from_toml(text, origin="perfmodel/data/catalogue.toml")


def load(path: str | Path, *, include_builtin: bool = True) -> Catalogue:
    """Load your own devices and links from a TOML file shaped like the built-in one.

    Parameters
    ----------
    path : str or pathlib.Path
        A TOML file of ``[[device]]`` and ``[[link]]`` tables.
    include_builtin : bool, optional
        Add yours to the built-in catalogue (the default) rather than return yours alone.

    Returns
    -------
    Catalogue
        The built-in catalogue with yours added, or yours alone.

    Raises
    ------
    ValueError
        If ``path`` is not a file, its TOML is invalid, or a name of yours is already in
        the built-in catalogue.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"`path` must be a TOML file (got {str(path)!r}, which does not exist).")
    own = Catalogue.from_toml(path.read_text(encoding="utf-8"), origin=str(path))
    return catalogue().merged(own) if include_builtin else own


def _link_fields(link: Link) -> dict[str, object]:
    return {
        "name": link.name,
        "kind": link.kind,
        "bandwidth": link.bandwidth,
        "latency": link.latency,
        "source": link.source,
        "notes": link.notes or None,
        "measured": (
            {"busbw": dict(link.measured_busbw), "source": link.measured_source}
            if link.measured_busbw
            else None
        ),
    }


def to_toml(device: Device | Link) -> str:
    """``device`` as a ``[[device]]`` table (a :class:`Link` as a ``[[link]]`` table) that
    :func:`load` reads back unchanged.

    Parameters
    ----------
    device : Device or Link
        What to write.

    Returns
    -------
    str
        TOML text holding one ``[[device]]`` (or ``[[link]]``) table; unset fields are left
        out.

    Raises
    ------
    TypeError
        If ``device`` is neither a :class:`Device` nor a :class:`Link`.

    Examples
    --------
    >>> mine = Device(name="Mine", kind="cpu", peak_flops_by_dtype={"fp64": 1e11},
    ...               memory_bandwidth=2e10, source="me", memory_levels={"L1": 2e11})
    >>> Catalogue.from_toml(to_toml(mine)).get("Mine") == mine
    True
    >>> wire = Link(name="My wire", kind="ethernet", bandwidth=1.2e9, latency=3e-5, source="me")
    >>> Catalogue.from_toml(to_toml(wire)).get_link("My wire") == wire
    True

    Any text survives, control characters included (``tomli_w`` escapes them):

    >>> odd = Link(name="odd", kind="ethernet", bandwidth=1e9, latency=1e-5, source="a\\rb\\x07")
    >>> Catalogue.from_toml(to_toml(odd)).get_link("odd").source == "a\\rb\\x07"
    True
    """
    import tomli_w

    if isinstance(device, Link):
        return tomli_w.dumps({"link": [_without_none(_link_fields(device))]})
    if not isinstance(device, Device):
        raise TypeError(
            f"`device` must be a hardware.Device or hardware.Link (got {type(device).__name__})."
        )
    fields: dict[str, object] = {
        "name": device.name,
        "kind": device.kind,
        "year": device.year,
        "memory_bandwidth": device.memory_bandwidth,
        "memory_capacity": device.memory_capacity,
        "power_w": device.power_w,
        "source": device.source,
        "notes": device.notes or None,
        "peak_flops": dict(device.peak_flops_by_dtype),
        "sparse_flops": dict(device.sparse_flops_by_dtype) or None,
        "memory_levels": dict(device.memory_levels) or None,
        "compute_units": device.compute_units,
    }
    measured: dict[str, object] = {}
    if device.measured_flops_by_dtype:
        measured["flops"] = dict(device.measured_flops_by_dtype)
    if device.measured_memory_bandwidth is not None:
        measured["memory_bandwidth"] = device.measured_memory_bandwidth
    if measured:
        measured["source"] = device.measured_source
        fields["measured"] = measured
    return tomli_w.dumps({"device": [_without_none(fields)]})


def _without_none(fields: Mapping[str, object]) -> dict[str, object]:
    """TOML has no null: a field that is not set is left out."""
    return {key: value for key, value in fields.items() if value is not None}


def save(device: Device | Link, path: str | Path) -> Path:
    """Write ``device`` (or a link) to a TOML file that :func:`load` reads back (the file is
    replaced).

    Parameters
    ----------
    device : Device or Link
        What to write.
    path : str or pathlib.Path
        The file to write (replaced if it exists).

    Returns
    -------
    pathlib.Path
        ``path``, as a :class:`~pathlib.Path`.

    Raises
    ------
    TypeError
        If ``device`` is neither a :class:`Device` nor a :class:`Link`.
    """
    path = Path(path)
    path.write_text(to_toml(device), encoding="utf-8")
    return path


def get(name: DeviceLike, *, argument: str = "name") -> Device:
    """A device from the built-in catalogue; a :class:`Device` passes through unchanged.

    This is how every model resolves a :data:`DeviceLike`, once, where it enters.

    Parameters
    ----------
    name : str or Device
        A catalogue name (case, spaces and hyphens ignored) or a device you built.
    argument : str
        What the caller called it, for error messages (``"device"``).

    Returns
    -------
    Device
        The catalogue's device, or ``name`` itself.

    Raises
    ------
    TypeError
        If ``name`` is neither a string nor a :class:`Device`.
    ValueError
        If no catalogue device has that name; the message suggests the closest.
    """
    return name if isinstance(name, Device) else catalogue().get(name, argument=argument)


def get_link(name: str | Link, *, argument: str = "name") -> Link:
    """A link from the built-in catalogue; a :class:`Link` passes through unchanged.

    Parameters
    ----------
    name : str or Link
        A catalogue name (case, spaces and hyphens ignored) or a link you built.
    argument : str, optional
        What the caller called it, for error messages (default ``"name"``).

    Returns
    -------
    Link
        The catalogue's link, or ``name`` itself.

    Raises
    ------
    TypeError
        If ``name`` is neither a string nor a :class:`Link`.
    ValueError
        If no catalogue link has that name; the message suggests the closest.
    """
    return name if isinstance(name, Link) else catalogue().get_link(name, argument=argument)


def names(kind: str | None = None) -> list[str]:
    """Names of the built-in devices, optionally of one ``kind``, in catalogue order.

    Parameters
    ----------
    kind : {"gpu", "tpu", "cpu", "other"} or None, optional
        Only devices of this kind; None (the default) for all.

    Returns
    -------
    list of str
        The device names.

    Raises
    ------
    TypeError
        If ``kind`` is neither a string nor None.
    ValueError
        If ``kind`` is not one of :data:`KINDS`.
    """
    if kind is not None:
        kind = choice("kind", kind, KINDS)
    return [n for n, d in catalogue().devices.items() if kind is None or d.kind == kind]


def link_names() -> list[str]:
    """Names of the built-in links, in catalogue order.

    Returns
    -------
    list of str
        The link names.
    """
    return list(catalogue().links)
