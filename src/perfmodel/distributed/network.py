"""The multi-node roofline: local FLOPs per byte of *network* traffic.

Adam Coates' talk *Deep Learning (hopefully faster)* analyses a node the way lecture 03
analysed a chip, with the network as a second, much narrower memory: a node reaches its
local peak only when it does enough FLOPs per byte it sends. At 6 TFLOP/s over a network
of about 6 GB/s, that is about **1000 FLOPs per network byte**.

Its worked example is data parallelism on two nodes for one layer, ``W`` (M × K) applied
to a minibatch ``X`` (K × N), fp32:

* splitting the minibatch halves each node's FLOPs but not its weight traffic, so each
  node's *memory* intensity falls: ``MKN / (2(MK + KN + MN))`` before,
  ``MKN / (2(2MK + KN + MN))`` after;
* the weight update ``W += ε·D·Xᵀ`` costs ``2·M·K·(N/2)`` FLOPs per node and sends ``W``
  (``4·M·K`` bytes): **N/4** FLOPs per network byte, so the minibatch must reach about
  4000 before the network stops being the limit.

>>> round(network_ridge("GPU circa 2015", 6e9, dtype="fp32"))
1000
>>> data_parallel_network_intensity(4000)
1000.0
"""

from __future__ import annotations

from typing import TYPE_CHECKING, cast

from perfmodel._validate import count, non_negative

if TYPE_CHECKING:
    from perfmodel.hardware import DeviceLike, LinkLike

__all__ = [
    "attainable_flops",
    "data_parallel_network_intensity",
    "network_ridge",
    "split_minibatch",
]


def _bandwidth(link: LinkLike | float) -> float:
    from perfmodel import comms
    from perfmodel._validate import is_number, positive

    if is_number(link):
        return positive("link", link)
    return comms.as_link(cast("LinkLike", link)).bandwidth


def network_ridge(device: DeviceLike, link: LinkLike | float, *, dtype: str = "bf16") -> float:
    """FLOPs a node must do per byte it sends to reach its peak: peak FLOP/s over network B/s.

    Parameters
    ----------
    device : str or hardware.Device
        A catalogue name or a device you built.
    link : str, hardware.Link, hardware.LinkSpec or float
        The network: a link-like, or its bandwidth in B/s.
    dtype : str
        Which peak FLOP/s.

    Returns
    -------
    float
        The ridge, FLOP per network byte (FLOP/B).
    """
    from perfmodel.hardware import get

    return get(device, argument="device").peak_flops(dtype) / _bandwidth(link)


def attainable_flops(
    intensity: float, device: DeviceLike, link: LinkLike | float, *, dtype: str = "bf16"
) -> float:
    """The multi-node roofline: ``min(peak, intensity · network bandwidth)``.

    Parameters
    ----------
    intensity : float
        The work's FLOPs per byte it sends over the network, FLOP/B.
    device : str or hardware.Device
        A catalogue name or a device you built.
    link : str, hardware.Link, hardware.LinkSpec or float
        The network: a link-like, or its bandwidth in B/s.
    dtype : str
        Which peak FLOP/s.

    Returns
    -------
    float
        The attainable rate, FLOP/s.
    """
    from perfmodel.hardware import get

    intensity = non_negative("intensity", intensity)
    peak = get(device, argument="device").peak_flops(dtype)
    return min(peak, intensity * _bandwidth(link))


def split_minibatch(
    m: int, k: int, n: int, *, nodes: int = 2, value_bytes: int = 4
) -> dict[str, dict[str, float]]:
    """Coates' table: one node's FLOPs, bytes and intensity before and after the split.

    The layer is ``W`` (m × k) times ``X`` (k × n), on one node and after splitting the
    minibatch over ``nodes``.

    Parameters
    ----------
    m, k : int
        The weight matrix's rows and columns, count.
    n : int
        The minibatch, count; it must divide evenly over the nodes.
    nodes : int
        Nodes the minibatch is split over, count.
    value_bytes : int
        Bytes per value, B.

    Returns
    -------
    dict of str to dict of str to float
        ``"before"`` and ``"after"``, each with ``"flops"`` (FLOP), ``"bytes"`` (B) and
        ``"intensity"`` (FLOP/B).

    Examples
    --------
    >>> table = split_minibatch(1024, 1024, 1024)
    >>> table["before"]["flops"], table["after"]["flops"]
    (2147483648, 1073741824)
    >>> round(table["before"]["intensity"], 1), round(table["after"]["intensity"], 1)
    (170.7, 128.0)
    """
    m, k, n = count("m", m), count("k", k), count("n", n)
    nodes, value_bytes = count("nodes", nodes), count("value_bytes", value_bytes)
    if n % nodes:
        raise ValueError(f"`n` must divide evenly over `nodes` = {nodes} (got {n}).")
    rows: dict[str, dict[str, float]] = {}
    for name, share in (("before", n), ("after", n // nodes)):
        flops = 2 * m * k * share
        memory = value_bytes * (m * k + k * share + m * share)
        rows[name] = {"flops": flops, "bytes": memory, "intensity": flops / memory}
    return rows


def data_parallel_network_intensity(minibatch: int, *, nodes: int = 2) -> float:
    """FLOPs per network byte of the data-parallel weight update: ``N / (2·nodes)``.

    Each node computes ``2·M·K·(N/nodes)`` FLOPs and sends ``W``, ``4·M·K`` bytes (fp32):
    Coates' ``N/4`` for two nodes.

    Parameters
    ----------
    minibatch : int
        The whole minibatch N, count.
    nodes : int
        Nodes it is split over, count.

    Returns
    -------
    float
        FLOP per network byte, FLOP/B.
    """
    minibatch, nodes = count("minibatch", minibatch), count("nodes", nodes)
    return 2 * minibatch / nodes / 4
