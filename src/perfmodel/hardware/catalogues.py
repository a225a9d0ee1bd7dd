"""Catalogues of devices and links: read from TOML, written back, and looked up.

:class:`Catalogue` (devices and links by name, parsed from ``[[device]]`` and ``[[link]]``
tables); the built-in one shipped in ``perfmodel/data/catalogue.toml`` (:func:`catalogue`)
and the lookups in it (:func:`get`, :func:`get_link`, :func:`names`, :func:`link_names`);
yours read from a file (:func:`load`) and a device or link written to one (:func:`to_toml`,
:func:`save`).
"""

from __future__ import annotations

import difflib
import functools
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from perfmodel._validate import choice
from perfmodel.hardware.dtypes import KINDS
from perfmodel.hardware.specs import Device, DeviceLike, Link, device_from_toml, link_from_toml

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "Catalogue",
    "catalogue",
    "get",
    "get_link",
    "link_names",
    "load",
    "names",
    "save",
    "to_toml",
]


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
            ("device", devices, device_from_toml),
            ("link", links, link_from_toml),
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
