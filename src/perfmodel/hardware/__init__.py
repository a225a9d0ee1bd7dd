"""The hardware catalogue: devices (peak FLOP/s, memory) and links (bandwidth, latency).

The catalogue is a TOML file shipped in the package (``perfmodel/data/catalogue.toml``),
loaded into frozen dataclasses. Every entry names its source. Look devices up by name,
load your own from a TOML file of the same shape, or construct a :class:`Device` directly.

Every model in the package takes a device as a :data:`DeviceLike` (a catalogue name or a
:class:`Device`) and a link as a :data:`LinkLike` (a catalogue name, a :class:`Link`, or
any :class:`LinkSpec`: an object with ``bandwidth`` and ``latency``, such as a link you
fitted yourself). Each public function resolves its argument once, with :func:`get` for a
device and :func:`perfmodel.comms.as_link` for a link, and passes the resolved object on.

The package's modules each hold one part; this top level is their public face, and every
name is imported from here:

* :mod:`perfmodel.hardware.dtypes`: the dtypes the course knows (:func:`dtype_bytes`,
  :func:`op_unit`) and the kinds a device, a link or a collective algorithm may be;
* :mod:`perfmodel.hardware.specs`: what a device and a link are (:class:`Device`,
  :class:`Link`, :class:`LinkSpec`, :data:`DeviceLike`, :data:`LinkLike`), and how one
  ``[[device]]`` or ``[[link]]`` table of a catalogue file becomes one;
* :mod:`perfmodel.hardware.catalogues`: :class:`Catalogue`, read from and written to TOML,
  the built-in one and the lookups in it (:func:`get`, :func:`get_link`, :func:`names`,
  :func:`link_names`, :func:`load`, :func:`to_toml`, :func:`save`).

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

from perfmodel.hardware.catalogues import (
    Catalogue,
    catalogue,
    get,
    get_link,
    link_names,
    load,
    names,
    save,
    to_toml,
)
from perfmodel.hardware.dtypes import (
    BUS_ALGORITHMS,
    DTYPE_BYTES,
    DTYPES,
    KINDS,
    LINK_KINDS,
    dtype_bytes,
    op_unit,
)
from perfmodel.hardware.specs import Device, DeviceLike, Link, LinkLike, LinkSpec

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
