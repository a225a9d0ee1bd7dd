"""Sharded matmuls on a device mesh, in the JAX scaling book's notation.

A mesh names its axes (``Mesh({"X": 4, "Y": 4})``: 16 devices, 4 × 4). A sharding says
which mesh axes split each dimension of an array: ``"B_X, D_Y"`` is a ``B × D`` array with
``B`` split over X and ``D`` over Y, so each device holds a ``B/4 × D/4`` block; a
dimension with no subscript is whole on every device; ``D_XY`` splits over both axes.
This is the notation of Austin et al., *How to Scale Your Model*, ``A[B_X, D_Y]``.

:func:`sharded_matmul` multiplies two sharded arrays that share one contracting dimension
and says what each device does and which collective the sharding needs, following the
book's cases:

1. the contracting dimension is whole on both sides: multiply locally, no communication
   (unless both outputs would be split over the same axis: then all-gather the right);
2. it is split on one side only: all-gather that side over those axes first;
3. it is split the same way on both sides: multiply locally into partial sums, then
   all-reduce them over those axes (or reduce-scatter, to leave the output sharded).

>>> mesh = Mesh({"X": 4, "Y": 4}, links={"X": "NVLink 4", "Y": "NVLink 4"})
>>> mm = sharded_matmul(mesh, "B_X, D_Y", "D_Y, F", {"B": 4096, "D": 8192, "F": 8192})
>>> mm.local_shapes
{'lhs': (1024, 2048), 'rhs': (2048, 8192), 'out': (1024, 8192)}
>>> [(c.kind, c.axes) for c in mm.collectives], mm.output
([('allreduce', 'Y')], 'B_X, F')
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING

from perfmodel._validate import choice, count, flag, text

if TYPE_CHECKING:
    from perfmodel.comms import Axis, LinkModel
    from perfmodel.hardware import LinkLike

__all__ = [
    "Collective",
    "Mesh",
    "ShardedArray",
    "ShardedMatmul",
    "parse_sharding",
    "sharded_matmul",
]

_DIM = re.compile(r"^([A-Za-z][A-Za-z0-9]*?)(?:_([A-Z]+))?$")


@dataclass(frozen=True, slots=True, init=False)
class Mesh:
    """Named mesh axes (single capital letters) with their sizes, and the link along each.

    Each axis with a link is a :class:`perfmodel.comms.Axis`, and every collective over
    the mesh is priced on those axes, hop by hop. A link of kind ``"ici"`` joins each
    device to its neighbours (a TPU torus axis: a ring with ``wraparound``, a line
    without); any other kind (NVLink, InfiniBand, Ethernet) plugs each device into a
    switch, where a ring runs one way round, as NCCL's does.

    Parameters
    ----------
    axes : mapping of str to int
        Each axis's name (one capital letter) and its devices, count.
    links : mapping of str to link-like, optional
        The link along some or all of the axes (a catalogue name, a
        :class:`~perfmodel.hardware.Link` or any :class:`~perfmodel.hardware.LinkSpec`),
        resolved once by :func:`perfmodel.comms.as_link`; collectives over an axis without
        one are left unpriced.
    wraparound : bool
        Whether the torus axes wrap around (True: a full slice, such as a 4x4x4 cube).
    ceiling : {"measured", "nameplate"}
        Price each link at the ring busbw published runs reached, where the catalogue has
        one, or at its line rate (see :class:`perfmodel.comms.Axis`).
    """

    axes: Mapping[str, int]
    links: Mapping[str, LinkModel]
    wraparound: bool
    ceiling: str

    def __init__(
        self,
        axes: Mapping[str, int],
        *,
        links: Mapping[str, LinkLike] | None = None,
        wraparound: bool = True,
        ceiling: str = "measured",
    ) -> None:
        from perfmodel.comms import CEILINGS, as_link

        if not isinstance(axes, Mapping):
            raise TypeError(f"`axes` must be a mapping of axis names to sizes (got {axes!r}).")
        if not axes:
            raise ValueError("`axes` must name at least one axis (got an empty mapping).")
        checked = {}
        for name, size in axes.items():
            if not isinstance(name, str):
                raise TypeError(
                    f"`axes` names must be strings (got {type(name).__name__} {name!r})."
                )
            if not re.fullmatch(r"[A-Z]", name):
                raise ValueError(f"`axes` names must be single capital letters (got {name!r}).")
            checked[name] = count(f"axes[{name!r}]", size)
        if links is not None and not isinstance(links, Mapping):
            raise TypeError(f"`links` must be a mapping of axis names to links (got {links!r}).")
        links = dict(links or {})
        unknown = sorted(set(links) - set(checked))
        if unknown:
            raise ValueError(f"`links` names axes the mesh does not have: {', '.join(unknown)}.")
        resolved = {a: as_link(v, argument=f"links[{a!r}]") for a, v in links.items()}
        object.__setattr__(self, "axes", MappingProxyType(checked))
        object.__setattr__(self, "links", MappingProxyType(resolved))
        object.__setattr__(self, "wraparound", flag("wraparound", wraparound))
        object.__setattr__(self, "ceiling", choice("ceiling", ceiling, CEILINGS))

    @property
    def devices(self) -> int:
        """Devices in the mesh: the product of the axis sizes."""
        return math.prod(self.axes.values())

    def size(self, axes: str) -> int:
        """Devices along a group of axes.

        Parameters
        ----------
        axes : str
            Axis names run together (``"XY"``) or with commas (``"X, Y"``); ``""`` for none.

        Returns
        -------
        int
            Devices, count.
        """
        return math.prod(self.axes[a] for a in self.names(axes))

    def names(self, axes: str) -> str:
        """A group of axes as their names run together, checked against the mesh.

        Parameters
        ----------
        axes : str
            Axis names run together (``"XY"``) or with commas (``"X, Y"``).

        Returns
        -------
        str
            The names, ``"XY"``.
        """
        if not isinstance(axes, str):
            raise TypeError(f"`axes` must be a string of axis names such as 'X, Y' (got {axes!r}).")
        names = axes.replace(",", "").replace(" ", "")
        bad = sorted(set(names) - set(self.axes))
        if bad or len(set(names)) != len(names):
            raise ValueError(
                f"`axes` must name each of the mesh's axes ({', '.join(self.axes)}) at most "
                f"once (got {axes!r})."
            )
        return names

    def axis(self, name: str) -> Axis | None:
        """One axis as a :class:`perfmodel.comms.Axis`, or None if it has no link.

        Parameters
        ----------
        name : str
            The axis's name.

        Returns
        -------
        perfmodel.comms.Axis or None
            Its size and link, a torus ring or line for an ICI link, a switch otherwise.
        """
        from perfmodel.comms import Axis

        names = self.names(name)
        if len(names) != 1:
            raise ValueError(f"`name` must be one axis of the mesh (got {name!r}).")
        if names not in self.links:
            return None
        link = self.links[names]
        return Axis(self.axes[names], link, wraparound=self.wraparound,
                    switched=link.kind != "ici", ceiling=self.ceiling)  # fmt: skip

    def bandwidth(self, axes: str | None = None) -> float:
        """What one device receives at once over ``axes``: the bytes an all-gather over them
        brings each device, over the time it takes (latency aside).

        Round torus rings of equal size that is each axis's link directions times its
        bandwidth, summed: the scaling book's ``M · W_ici``. Axes of unequal speed or size
        give less, as they cannot all stay busy to the end.

        Parameters
        ----------
        axes : str, optional
            The axes, ``"X, Y"``; every axis by default.

        Returns
        -------
        float
            B/s.

        Raises
        ------
        ValueError
            If one of the axes has no link, or together they span one device.

        Examples
        --------
        >>> from perfmodel.hardware import Link
        >>> ici = Link(name="v5p ICI", kind="ici", bandwidth=9e10, latency=1e-6, source="a toy")
        >>> pod = Mesh({"X": 16, "Y": 16, "Z": 16}, links=dict.fromkeys("XYZ", ici))
        >>> round(pod.bandwidth() / 9e10, 6)    # three axes, both ways: 6 links' worth
        6.0
        """
        from perfmodel.comms import Axis, LinkModel, over_axes

        names = self.names(",".join(self.axes) if axes is None else axes)
        devices = self.size(names)
        if devices == 1:
            raise ValueError(f"`axes` {axes!r} span one device: nothing moves between devices.")
        quiet = []
        for name in names:
            axis = self.axis(name)
            if axis is None:
                raise ValueError(f"mesh axis {name!r} has no link: give it one in `links`.")
            link = LinkModel(bandwidth=axis.bandwidth, latency=0.0, kind=axis.link.kind)
            quiet.append(Axis(axis.size, link, wraparound=axis.wraparound, switched=axis.switched,
                              ceiling="nameplate"))  # fmt: skip
        return (1 - 1 / devices) / over_axes("allgather", 1.0, quiet)

    def collective_time(
        self, collective: str, axes: str, nbytes: float, *, combine: str = "sum"
    ) -> float | None:
        """A collective over one or several axes at once, priced hop by hop.

        Parameters
        ----------
        collective : {"allgather", "reduce_scatter", "allreduce"}
            Which collective.
        axes : str
            The axes it spans, ``"X"`` or ``"X, Y"`` (``"XY"`` too).
        nbytes : float
            The whole array on each device after an all-gather (before a reduce-scatter;
            each device's buffer for an all-reduce), B.
        combine : {"sum", "max"}
            Add latency and transfer, or take the larger (the scaling book's convention).

        Returns
        -------
        float or None
            Seconds, s (:func:`perfmodel.comms.over_axes`); None if an axis has no link.

        Examples
        --------
        >>> from perfmodel.hardware import Link
        >>> ici = Link(name="v4p ICI", kind="ici", bandwidth=4.5e10, latency=1e-6, source="book")
        >>> cube = Mesh({"X": 4, "Y": 4, "Z": 4}, links={"X": ici, "Y": ici, "Z": ici})
        >>> seconds = cube.collective_time("allgather", "X", 2 * 1024 * 4096 / 4, combine="max")
        >>> round(seconds * 1e6, 1)   # the book's 23 µs, less the quarter each chip holds
        17.5
        """
        from perfmodel.comms import over_axes

        found = [self.axis(a) for a in self.names(axes)]
        if any(axis is None for axis in found):
            return None
        return over_axes(collective, nbytes, found, combine=combine)  # type: ignore[arg-type]

    def shard(self, spec: str, sizes: Mapping[str, int], *, dtype_bytes: int = 2) -> ShardedArray:
        """One array sharded by ``spec`` on this mesh: each device's block and the totals.

        Parameters
        ----------
        spec : str
            The sharding, ``"B_X, D_Y"`` (see :func:`parse_sharding`).
        sizes : mapping of str to int
            Every dimension's full length, elements.
        dtype_bytes : int
            Bytes per element, B.

        Returns
        -------
        ShardedArray
            The block each device holds, its bytes, and how many devices hold each block.

        Examples
        --------
        >>> mesh = Mesh({"X": 4, "Y": 8, "Z": 2})
        >>> a = mesh.shard("I_X, J", {"I": 128, "J": 2048}, dtype_bytes=1)
        >>> a.local_shape, a.replication, a.stored_bytes / a.total_bytes
        ((32, 2048), 16, 16.0)
        """
        dims = parse_sharding(spec, self)
        full = _sizes(sizes, dims, self)
        byte = count("dtype_bytes", dtype_bytes)
        local = tuple(full[d] // self.size(a) for d, a in dims)
        used = "".join(a for _, a in dims)
        per_device = float(math.prod(local) * byte)
        return ShardedArray(
            spec=_format(list(dims)),
            local_shape=local,
            bytes_per_device=per_device,
            replication=self.devices // self.size(used),
            total_bytes=float(math.prod(full[d] for d, _ in dims) * byte),
            stored_bytes=per_device * self.devices,
        )


@dataclass(frozen=True, slots=True)
class ShardedArray:
    """An array laid out on a mesh (:meth:`Mesh.shard`).

    Parameters
    ----------
    spec : str
        Its sharding.
    local_shape : tuple of int
        The block each device holds, elements.
    bytes_per_device : float
        That block's bytes, B.
    replication : int
        Devices holding each block, count: the product of the axes the spec leaves unused.
    total_bytes : float
        One copy of the whole array, B.
    stored_bytes : float
        What all the devices hold together, B: ``total_bytes · replication``.
    """

    spec: str
    local_shape: tuple[int, ...]
    bytes_per_device: float
    replication: int
    total_bytes: float
    stored_bytes: float


def _sizes(
    sizes: Mapping[str, int], dims: tuple[tuple[str, str], ...] | list[tuple[str, str]], mesh: Mesh
) -> dict[str, int]:
    """Every dimension's length, checked: given, positive, dividing evenly over its axes."""
    if not isinstance(sizes, Mapping):
        raise TypeError(f"`sizes` must be a mapping of dimension names to lengths (got {sizes!r}).")
    full = {d: count(f"sizes[{d!r}]", sizes.get(d, 0)) for d, _ in dims}
    for d, axes in dims:
        if axes and full[d] % mesh.size(axes):
            raise ValueError(
                f"`sizes[{d!r}]` = {full[d]} must divide evenly over mesh axes {axes} "
                f"({mesh.size(axes)} devices)."
            )
    return full


def parse_sharding(spec: str, mesh: Mesh | None = None) -> tuple[tuple[str, str], ...]:
    """``"B_X, D_Y"`` as ``(("B", "X"), ("D", "Y"))``; a whole dimension has axes ``""``.

    Parameters
    ----------
    spec : str
        A sharding, dimensions separated by commas.
    mesh : Mesh, optional
        When given, every axis the spec uses must be one of its axes.

    Returns
    -------
    tuple of (str, str)
        Each dimension's name and the axes it is split over.

    Examples
    --------
    >>> parse_sharding("B_XY, D")
    (('B', 'XY'), ('D', ''))
    """
    spec = text("spec", spec)
    dims = []
    for part in spec.split(","):
        match = _DIM.match(part.strip())
        if match is None:
            raise ValueError(
                f"`spec` must be dimensions like 'B_X, D' (got {spec!r}: {part.strip()!r})."
            )
        dims.append((match.group(1), match.group(2) or ""))
    names = [d for d, _ in dims]
    if len(set(names)) != len(names):
        raise ValueError(f"`spec` names a dimension twice (got {spec!r}).")
    used = "".join(axes for _, axes in dims)
    if len(set(used)) != len(used):
        raise ValueError(f"`spec` shards two dimensions over the same mesh axis (got {spec!r}).")
    if mesh is not None:
        missing = sorted(set(used) - set(mesh.axes))
        if missing:
            raise ValueError(f"`spec` {spec!r} uses axes the mesh lacks: {', '.join(missing)}.")
    return tuple(dims)


@dataclass(frozen=True, slots=True)
class Collective:
    """A collective a sharding needs.

    Parameters
    ----------
    kind : str
        ``"allgather"``, ``"allreduce"`` or ``"reduce_scatter"``.
    operand : str
        Which array it moves: ``"lhs"``, ``"rhs"`` or ``"out"``.
    axes : str
        The mesh axes it runs over.
    nbytes : float
        The per-device buffer it moves, B.
    time_s : float or None
        Its time, s; None when the mesh has no link for those axes.
    """

    kind: str
    operand: str
    axes: str
    nbytes: float
    time_s: float | None


@dataclass(frozen=True, slots=True)
class ShardedMatmul:
    """What each device does in one sharded matmul, and what the sharding costs.

    Parameters
    ----------
    output : str
        The output's sharding.
    local_shapes : dict of str to tuple of int
        Each device's block of ``"lhs"``, ``"rhs"`` and ``"out"``, elements.
    flops_per_device : float
        Each device's arithmetic, FLOP (two per multiply-add).
    bytes_per_device : float
        The bytes of its three blocks, B.
    replication : int
        Devices holding each block of the output, count.
    collectives : tuple of Collective
        What the sharding needs, in order.
    """

    output: str
    local_shapes: dict[str, tuple[int, ...]]
    flops_per_device: float
    bytes_per_device: float
    replication: int
    collectives: tuple[Collective, ...]

    @property
    def communication_s(self) -> float | None:
        """All the collectives' time, one after another (None if any is unpriced)."""
        times = [c.time_s for c in self.collectives]
        return None if None in times else sum(times)  # type: ignore[arg-type]


def _format(dims: list[tuple[str, str]]) -> str:
    return ", ".join(f"{d}_{a}" if a else d for d, a in dims)


def sharded_matmul(
    mesh: Mesh,
    lhs: str,
    rhs: str,
    sizes: Mapping[str, int],
    *,
    dtype_bytes: int = 2,
    combine: str = "sum",
) -> ShardedMatmul:
    """Multiply ``lhs`` by ``rhs``, two sharded arrays sharing one dimension, on ``mesh``.

    See the module's docstring for the cases.

    Parameters
    ----------
    mesh : Mesh
        The device mesh.
    lhs, rhs : str
        The two operands' shardings; they share exactly one (contracting) dimension.
    sizes : mapping of str to int
        Every dimension's full length, elements.
    dtype_bytes : int
        Bytes per element, B.
    combine : {"sum", "max"}
        How each collective's latency and transfer combine (see :meth:`Mesh.collective_time`).

    Returns
    -------
    ShardedMatmul
        The output's sharding, each device's shapes, FLOPs and bytes touched, the output's
        replication and the collectives the sharding needs.
    """
    if not isinstance(mesh, Mesh):
        raise TypeError(f"`mesh` must be a Mesh (got {type(mesh).__name__}).")
    left, right = list(parse_sharding(lhs, mesh)), list(parse_sharding(rhs, mesh))
    shared = sorted({d for d, _ in left} & {d for d, _ in right})
    if len(shared) != 1:
        raise ValueError(
            f"`lhs` and `rhs` must share exactly one (contracting) dimension (got {shared})."
        )
    full = _sizes(sizes, left + right, mesh)
    (c,) = shared
    byte = count("dtype_bytes", dtype_bytes)
    collectives: list[Collective] = []

    def local(dims: list[tuple[str, str]]) -> tuple[int, ...]:
        return tuple(full[d] // mesh.size(a) for d, a in dims)

    def gather(name: str, dims: list[tuple[str, str]], axes: str) -> list[tuple[str, str]]:
        gathered = [(d, "".join(x for x in a if x not in axes)) for d, a in dims]
        nbytes = math.prod(local(gathered)) * byte
        collectives.append(Collective("allgather", name, axes, nbytes, _time(axes, nbytes)))
        return gathered

    def _time(axes: str, nbytes: float, kind: str = "allgather") -> float | None:
        return mesh.collective_time(kind, axes, nbytes, combine=combine)

    left_c, right_c = dict(left)[c], dict(right)[c]
    if left_c and left_c != right_c:
        left = gather("lhs", left, left_c)
    if right_c and right_c != left_c:
        right = gather("rhs", right, right_c)
    partial = dict(left)[c]  # split the same way on both sides: partial sums
    out = [(d, a) for d, a in left if d != c] + [(d, a) for d, a in right if d != c]
    clash = set("".join(a for d, a in out if d in dict(left))) & set(
        "".join(a for d, a in out if d not in dict(left))
    )
    if clash:
        right = gather("rhs", right, "".join(sorted(clash)))
        out = [(d, a) for d, a in left if d != c] + [(d, a) for d, a in right if d != c]
    shapes = {"lhs": local(left), "rhs": local(right), "out": local(out)}
    contracted = full[c] // mesh.size(partial) if partial else full[c]
    flops = 2.0 * math.prod(shapes["out"]) * contracted
    if partial:
        nbytes = math.prod(shapes["out"]) * byte
        collectives.append(
            Collective("allreduce", "out", partial, nbytes, _time(partial, nbytes, "allreduce"))
        )
    touched = sum(math.prod(s) for s in shapes.values()) * byte
    used = "".join(a for _, a in out)
    return ShardedMatmul(_format(out), shapes, flops, float(touched),
                         mesh.devices // mesh.size(used), tuple(collectives))  # fmt: skip
