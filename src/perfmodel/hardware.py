"""The hardware catalogue: devices (peak FLOP/s, memory) and links (bandwidth, latency).

The catalogue is a TOML file shipped in the package (``perfmodel/data/catalogue.toml``),
loaded into frozen dataclasses. Every entry names its source. Look devices up by name,
load your own from a TOML file of the same shape, or construct a :class:`Device` directly;
every model in the package accepts either a name or a :class:`Device`.

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
import math
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "DTYPES",
    "DTYPE_BYTES",
    "KINDS",
    "LINK_KINDS",
    "Catalogue",
    "Device",
    "Link",
    "catalogue",
    "dtype_bytes",
    "get",
    "get_link",
    "link_names",
    "load",
    "names",
    "op_unit",
]

#: Bytes per element of each dtype the course knows.
DTYPE_BYTES: Mapping[str, int] = MappingProxyType(
    {"fp64": 8, "fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8": 1, "int8": 1}
)
DTYPES = tuple(DTYPE_BYTES)
KINDS = ("gpu", "tpu", "cpu", "other")
LINK_KINDS = ("pcie", "nvlink", "infiniband", "ethernet", "other")


def dtype_bytes(dtype: str | int) -> int:
    """Bytes per element: a dtype name (``"bf16"``) or a width in bytes (``2``).

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

    >>> op_unit("int8"), op_unit("bf16")
    ('OP', 'FLOP')
    """
    return "OP" if dtype.strip().lower().startswith("int") else "FLOP"


def _check_rates(name: str, rates: Mapping[str, float], what: str) -> Mapping[str, float]:
    checked = {}
    for dtype, rate in rates.items():
        if dtype not in DTYPE_BYTES:
            raise ValueError(
                f"device {name!r}: `{what}` has an unknown dtype {dtype!r} "
                f"(known: {', '.join(DTYPES)})."
            )
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not rate > 0:
            raise ValueError(
                f"device {name!r}: `{what}[{dtype!r}]` must be positive (got {rate!r})."
            )
        checked[dtype] = float(rate)
    return MappingProxyType(checked)


def _positive(owner: str, field_name: str, value: object, *, optional: bool = False) -> None:
    if value is None and optional:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"{owner}: `{field_name}` must be a positive number (got {value!r}).")
    if not math.isfinite(value):
        raise ValueError(f"{owner}: `{field_name}` must be finite (got {value!r}).")


@dataclass(frozen=True, slots=True, kw_only=True)
class Device:
    """A compute node reduced to the numbers that bound its speed.

    Parameters
    ----------
    name : str
        Display name, also the lookup key.
    kind : {"gpu", "tpu", "cpu", "other"}
    peak_flops_by_dtype : mapping
        Dense peak FLOP/s (or int ops/s) per dtype, as the maker states it.
    memory_bandwidth : float
        Main-memory bandwidth, bytes/s.
    memory_capacity : float, optional
        Main-memory capacity, bytes.
    power_w : float, optional
        Board power (TDP), watts.
    year : int, optional
        Year of introduction.
    source : str
        Where the figures come from (a datasheet URL).
    sparse_flops_by_dtype : mapping, optional
        Peaks with 2:4 structured sparsity, kept apart from the dense ones.
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
    notes: str = ""

    def __post_init__(self) -> None:
        owner = f"device {self.name!r}"
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"`name` must be a non-empty string (got {self.name!r}).")
        if self.kind not in KINDS:
            raise ValueError(
                f"{owner}: `kind` must be one of {', '.join(KINDS)} (got {self.kind!r})."
            )
        if not self.peak_flops_by_dtype:
            raise ValueError(f"{owner}: `peak_flops_by_dtype` needs at least one dtype.")
        object.__setattr__(
            self,
            "peak_flops_by_dtype",
            _check_rates(self.name, self.peak_flops_by_dtype, "peak_flops"),
        )
        object.__setattr__(
            self,
            "sparse_flops_by_dtype",
            _check_rates(self.name, self.sparse_flops_by_dtype, "sparse_flops"),
        )
        _positive(owner, "memory_bandwidth", self.memory_bandwidth)
        _positive(owner, "memory_capacity", self.memory_capacity, optional=True)
        _positive(owner, "power_w", self.power_w, optional=True)
        if not isinstance(self.source, str) or not self.source.strip():
            raise ValueError(f"{owner}: `source` must say where the figures come from.")

    @property
    def dtypes(self) -> tuple[str, ...]:
        """The dtypes this device has a dense peak for, in :data:`DTYPES` order."""
        return tuple(d for d in DTYPES if d in self.peak_flops_by_dtype)

    def peak_flops(self, dtype: str = "fp32", *, sparse: bool = False) -> float:
        """Peak FLOP/s for ``dtype`` (dense, unless ``sparse=True``).

        Raises
        ------
        ValueError
            If the maker states no peak for that dtype; the message lists those it does.
        """
        key = dtype.strip().lower() if isinstance(dtype, str) else dtype
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
        """Intensity (FLOP/byte) above which an op is compute-bound: peak / bandwidth."""
        return self.peak_flops(dtype) / self.memory_bandwidth


@dataclass(frozen=True, slots=True, kw_only=True)
class Link:
    """A connection between devices or nodes.

    ``bandwidth`` is bytes/s in one direction; ``latency`` is seconds per message.
    """

    name: str
    kind: str
    bandwidth: float
    latency: float
    source: str
    notes: str = ""

    def __post_init__(self) -> None:
        owner = f"link {self.name!r}"
        if self.kind not in LINK_KINDS:
            raise ValueError(
                f"{owner}: `kind` must be one of {', '.join(LINK_KINDS)} (got {self.kind!r})."
            )
        _positive(owner, "bandwidth", self.bandwidth)
        if isinstance(self.latency, bool) or not isinstance(self.latency, (int, float)):
            raise ValueError(f"{owner}: `latency` must be a number of seconds.")
        if self.latency < 0:
            raise ValueError(f"{owner}: `latency` must be non-negative (got {self.latency!r}).")
        if not isinstance(self.source, str) or not self.source.strip():
            raise ValueError(f"{owner}: `source` must say where the figures come from.")


def _key(name: str) -> str:
    return " ".join(name.lower().replace("-", " ").replace("_", " ").split())


def _lookup(table: Mapping[str, Any], name: str, what: str) -> Any:
    if not isinstance(name, str):
        raise TypeError(f"`name` must be a string (got {type(name).__name__}).")
    by_key = {_key(entry): entry for entry in table}
    if _key(name) in by_key:
        return table[by_key[_key(name)]]
    close = difflib.get_close_matches(_key(name), list(by_key), n=3, cutoff=0.4)
    hint = ", ".join(repr(by_key[c]) for c in close) or "none close"
    raise ValueError(f"no {what} named {name!r}; closest: {hint}. See names() for all.")


def _device_from_toml(entry: dict[str, Any]) -> Device:
    entry = dict(entry)
    derived = entry.pop("derived", None)
    if derived is not None:
        cores, clock = derived["cores"], derived["clock_hz"]
        entry["peak_flops"] = {
            dtype: cores * clock * per_cycle
            for dtype, per_cycle in derived["flops_per_cycle"].items()
        }
        entry["notes"] = (
            entry.get("notes", "") + " Peaks derived: cores x clock x FLOP/cycle."
        ).strip()
    return Device(
        name=entry.pop("name"),
        kind=entry.pop("kind"),
        peak_flops_by_dtype=entry.pop("peak_flops", {}),
        sparse_flops_by_dtype=entry.pop("sparse_flops", {}),
        **entry,
    )


@dataclass(frozen=True, slots=True)
class Catalogue:
    """Devices and links by name."""

    devices: Mapping[str, Device]
    links: Mapping[str, Link]

    @classmethod
    def from_toml(cls, text: str, *, origin: str = "<string>") -> Catalogue:
        """Parse a catalogue from TOML text (``[[device]]`` and ``[[link]]`` tables)."""
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as error:
            raise ValueError(f"{origin} is not valid TOML: {error}") from None
        devices, links = {}, {}
        for entry in data.get("device", []):
            try:
                device = _device_from_toml(entry)
            except (KeyError, TypeError) as error:
                raise ValueError(f"{origin}: a [[device]] entry is incomplete: {error}") from None
            devices[device.name] = device
        for entry in data.get("link", []):
            try:
                link = Link(**entry)
            except TypeError as error:
                raise ValueError(f"{origin}: a [[link]] entry is incomplete: {error}") from None
            links[link.name] = link
        return cls(MappingProxyType(devices), MappingProxyType(links))

    def merged(self, other: Catalogue) -> Catalogue:
        """This catalogue with ``other``'s entries added (``other`` wins on a name clash)."""
        return Catalogue(
            MappingProxyType({**self.devices, **other.devices}),
            MappingProxyType({**self.links, **other.links}),
        )

    def get(self, name: str) -> Device:
        """The device called ``name`` (case, spaces and hyphens ignored)."""
        device: Device = _lookup(self.devices, name, "device")
        return device

    def get_link(self, name: str) -> Link:
        """The link called ``name``."""
        link: Link = _lookup(self.links, name, "link")
        return link


@functools.cache
def catalogue() -> Catalogue:
    """The catalogue shipped with perfmodel (loaded once)."""
    text = resources.files("perfmodel").joinpath("data/catalogue.toml").read_text("utf-8")
    return Catalogue.from_toml(text, origin="perfmodel/data/catalogue.toml")


def load(path: str | Path, *, include_builtin: bool = True) -> Catalogue:
    """Load your own devices and links from a TOML file shaped like the built-in one.

    Returns the built-in catalogue with yours added, unless ``include_builtin=False``.
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"`path` must be a TOML file (got {str(path)!r}, which does not exist).")
    own = Catalogue.from_toml(path.read_text(encoding="utf-8"), origin=str(path))
    return catalogue().merged(own) if include_builtin else own


def get(name: str | Device) -> Device:
    """A device from the built-in catalogue; a :class:`Device` passes through unchanged."""
    return name if isinstance(name, Device) else catalogue().get(name)


def get_link(name: str | Link) -> Link:
    """A link from the built-in catalogue; a :class:`Link` passes through unchanged."""
    return name if isinstance(name, Link) else catalogue().get_link(name)


def names(kind: str | None = None) -> list[str]:
    """Names of the built-in devices, optionally of one ``kind``, in catalogue order."""
    if kind is not None and kind not in KINDS:
        raise ValueError(f"`kind` must be one of {', '.join(KINDS)} (got {kind!r}).")
    return [n for n, d in catalogue().devices.items() if kind is None or d.kind == kind]


def link_names() -> list[str]:
    """Names of the built-in links, in catalogue order."""
    return list(catalogue().links)
