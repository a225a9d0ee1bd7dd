"""Collectives across many machines: a parameter server, the hierarchical all-reduce, and
NCCL's ring over rails.

The single-link collectives of :mod:`perfmodel.comms.collectives` priced on two levels: the
links inside a node (NVLink) and the network between nodes (one NIC per GPU), run in turn or
pipelined, as NCCL runs them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from perfmodel._validate import count, flag, non_negative, positive
from perfmodel.comms.collectives import collective_time, terms
from perfmodel.comms.links import NCCL_CHUNK_BYTES, as_link

if TYPE_CHECKING:
    from perfmodel.hardware import LinkLike

__all__ = ["hierarchical_allreduce_time", "parameter_server_time", "rail_ring_allreduce_time"]


def parameter_server_time(
    nbytes: float, workers: int, link: LinkLike, *, servers: int = 1
) -> float:
    """The time for ``workers`` to push gradients to ``servers`` and pull parameters back.

    Each server's link carries ``workers · n / servers`` bytes each way, each worker's
    ``n``; the slower side sets the time: ``2α + 2·max(workers/servers, 1)·n/B``. With one
    server this grows linearly with the workers, where a ring all-reduce does not (Li et
    al., *Scaling Distributed Machine Learning with the Parameter Server*, OSDI 2014,
    shard the parameters over many servers for this reason).

    Parameters
    ----------
    nbytes : float
        The gradients each worker pushes, and the parameters it pulls back, B.
    workers : int
        Workers, count.
    link : str, hardware.Link or hardware.LinkSpec
        The link between ranks (see :func:`as_link`).
        Every worker and every server has one.
    servers : int
        Servers the parameters are sharded evenly over, count.

    Returns
    -------
    float
        Seconds, s.

    Examples
    --------
    >>> from perfmodel.hardware import Link
    >>> link = Link(name="toy", kind="other", bandwidth=1e9, latency=0.0, source="a toy")
    >>> parameter_server_time(1e9, 8, link), parameter_server_time(1e9, 8, link, servers=8)
    (16.0, 2.0)
    """
    nbytes = non_negative("nbytes", nbytes)
    workers, servers = count("workers", workers), count("servers", servers)
    model = as_link(link)
    fan_in = max(workers / servers, 1.0)
    return 2 * model.latency + 2 * fan_in * nbytes / model.bandwidth


def hierarchical_allreduce_time(
    nbytes: float,
    gpus_per_node: int,
    nodes: int,
    intra: LinkLike,
    inter: LinkLike,
    *,
    pipelined: bool = True,
    chunk_bytes: float = NCCL_CHUNK_BYTES,
    ceiling: str = "measured",
) -> float:
    """The time to all-reduce ``nbytes`` over ``nodes`` nodes of ``gpus_per_node`` GPUs each.

    Three phases: a ring reduce-scatter inside each node (``intra``, NVLink), then each GPU
    all-reduces its ``n / gpus_per_node`` share with its peers on the other nodes over its
    own network port (``inter``: one NIC per GPU, as in NVIDIA's DGX and HGX nodes), then a
    ring all-gather inside the node. Each network port carries ``1/gpus_per_node`` of the
    buffer, where a flat ring that treated every hop as a network hop would push all of it.

    Run one after another, the phases add up. NCCL does not wait: it cuts the buffer into
    chunks and pipelines them, so the node's links (both NVLink phases) and its network
    ports work at once, and the busier of the two sets the pace; the other adds its share
    of one chunk, filling the pipeline at the start and draining it at the end:
    ``max(A, C) + min(A, C) / k`` for ``k = n / chunk_bytes`` chunks (at least one), with
    ``A`` the NVLink phases and ``C`` the network's. One chunk is the phases end to end.
    What each chunk costs besides its bytes is not priced, so smaller chunks always look
    better here; NCCL's are 4 MiB.

    Parameters
    ----------
    nbytes : float
        Each rank's buffer, B: the whole vector every GPU ends with.
    gpus_per_node : int
        GPUs in each node, count.
    nodes : int
        Nodes, count.
    intra : str, hardware.Link or hardware.LinkSpec
        The link between GPUs inside a node (see :func:`as_link`).
    inter : str, hardware.Link or hardware.LinkSpec
        Each GPU's own port to the network between nodes.
    pipelined : bool
        Overlap the phases chunk by chunk (True, as NCCL does) or run them end to end.
    chunk_bytes : float
        Each pipelined chunk, B (NCCL's default buffer, 4 MiB).
    ceiling : {"measured", "nameplate"}
        Each link's published ring busbw where it has one, or its line rate (see
        :func:`collective_time`).

    Returns
    -------
    float
        Seconds, s.

    Examples
    --------
    >>> from perfmodel.comms import allreduce_time, bus_bandwidth
    >>> flat = allreduce_time(1e9, 64, "InfiniBand NDR", ceiling="nameplate")
    >>> tiered = hierarchical_allreduce_time(1e9, 8, 8, "NVLink 4", "InfiniBand NDR",
    ...                                      pipelined=False, ceiling="nameplate")
    >>> round(flat / tiered, 1)
    4.8
    >>> piped = hierarchical_allreduce_time(2**30, 8, 16, "NVLink 4", "InfiniBand NDR")
    >>> round(bus_bandwidth(2**30 / piped, 128) / 1e9)   # published runs: about 380 GB/s
    395
    """
    nbytes = non_negative("nbytes", nbytes)
    gpus, nodes = count("gpus_per_node", gpus_per_node), count("nodes", nodes)
    pipelined = flag("pipelined", pipelined)
    chunk = positive("chunk_bytes", chunk_bytes)
    local, network = as_link(intra, argument="intra"), as_link(inter, argument="inter")
    inside = collective_time(
        "reduce_scatter", nbytes, gpus, local, ceiling=ceiling
    ) + collective_time("allgather", nbytes, gpus, local, ceiling=ceiling)
    across = collective_time("allreduce", nbytes / gpus, nodes, network, ceiling=ceiling)
    if not pipelined:
        return inside + across
    chunks = max(1.0, nbytes / chunk)  # whole and part chunks alike: no jump at a boundary
    return max(inside, across) + min(inside, across) / chunks


def rail_ring_allreduce_time(
    nbytes: float,
    gpus_per_node: int,
    nodes: int,
    intra: LinkLike,
    inter: LinkLike,
    *,
    ceiling: str = "measured",
) -> float:
    """A ring all-reduce across nodes as NCCL runs it: one ring per GPU and its NIC (*rail*).

    NCCL's ring algorithm across nodes is one flat ring of all ``p = gpus_per_node · nodes``
    GPUs, run as ``gpus_per_node`` rings side by side, each leaving every node through a
    different GPU's NIC. So each link of the ring runs at the slower of the node's own ring
    rate (``intra``) and all its NICs together (``gpus_per_node`` times ``inter``):
    ``2(p-1)/p · n / min(B_intra, g · B_NIC) + 2(p-1)·α``. Its busbw is that minimum, whatever
    the node count: about 8 × 47 GB/s on H100 nodes with 8 NDR NICs, as published.

    Parameters
    ----------
    nbytes : float
        Each rank's buffer, B.
    gpus_per_node : int
        GPUs (and NICs) in each node, count.
    nodes : int
        Nodes, count.
    intra : str, hardware.Link or hardware.LinkSpec
        The link between GPUs inside a node (see :func:`as_link`).
    inter : str, hardware.Link or hardware.LinkSpec
        Each GPU's own NIC to the network between nodes.
    ceiling : {"measured", "nameplate"}
        Each link's published ring busbw where it has one, or its line rate.

    Returns
    -------
    float
        Seconds, s.

    Examples
    --------
    >>> from perfmodel.comms import bus_bandwidth
    >>> t = rail_ring_allreduce_time(2**30, 8, 4, "NVLink 4", "InfiniBand NDR")
    >>> round(bus_bandwidth(2**30 / t, 32) / 1e9)   # min(370, 8 x 47), less 62 latencies
    366
    >>> t = rail_ring_allreduce_time(2**30, 8, 4, "NVLink 3", "InfiniBand HDR")
    >>> round(bus_bandwidth(2**30 / t, 32) / 1e9)   # 8 x 24 < 230: the NICs set it
    191
    """
    nbytes = non_negative("nbytes", nbytes)
    gpus, nodes = count("gpus_per_node", gpus_per_node), count("nodes", nodes)
    local, network = as_link(intra, argument="intra"), as_link(inter, argument="inter")
    rate = local.ring_rate(ceiling)
    if nodes > 1:
        rate = min(rate, gpus * network.ring_rate(ceiling))
    p = gpus * nodes
    latency = max(local.latency, network.latency if nodes > 1 else 0.0)
    cost = terms("allreduce", p)
    return cost.latencies * latency + cost.byte_factor * nbytes / rate
