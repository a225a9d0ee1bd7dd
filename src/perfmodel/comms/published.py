"""What nccl-tests reached on real H100 and A100 systems, and what the models predict for each.

Every row is a published all-reduce (or all-gather, reduce-scatter) bus bandwidth at a
large message, with its source. None of them set the catalogue's measured rates except
where a row says so (``sets_rate``): those are shown for completeness, the others test the
model on figures it was not built from. :func:`predicted_busbw` prices a row's collective
on the catalogue's links, one node through NVLink, several as NCCL's ring across nodes
(:func:`perfmodel.comms.rail_ring_allreduce_time`) or, to compare, as the hierarchical
all-reduce pipelined or end to end (:func:`perfmodel.comms.hierarchical_allreduce_time`).

>>> row = next(r for r in PUBLISHED_BUSBW if r.system.startswith("Azure ND H100"))
>>> round(predicted_busbw(row) / 1e9), round(row.busbw / 1e9)
(480, 466)
"""

from __future__ import annotations

from dataclasses import dataclass

from perfmodel._validate import choice, count, positive
from perfmodel.comms.across import hierarchical_allreduce_time, rail_ring_allreduce_time
from perfmodel.comms.collectives import collective_time
from perfmodel.comms.links import CEILINGS, algorithm_bandwidth, bus_bandwidth

__all__ = ["ACROSS", "PUBLISHED_BUSBW", "PublishedBusbw", "across_nodes_busbw", "predicted_busbw"]

#: How an all-reduce crosses nodes: NCCL's ring over rails, or the hierarchical all-reduce
#: (reduce in the node, all-reduce an eighth over each NIC, gather) pipelined or end to end.
ACROSS = ("ring", "pipelined", "end_to_end")


@dataclass(frozen=True, slots=True)
class PublishedBusbw:
    """One published nccl-tests bus bandwidth.

    Parameters
    ----------
    system : str
        What ran it.
    gpus_per_node : int
        GPUs per node, count.
    nodes : int
        Nodes, count.
    collective : str
        ``"allreduce"``, ``"allgather"`` or ``"reduce_scatter"``.
    algorithm : str
        NCCL's algorithm (``"ring"``, ``"nvls"``).
    nbytes : float
        The message size the figure was read at, B (the plateau where the source gives no
        size).
    busbw : float
        The published busbw, B/s.
    intra : str
        The catalogue link between GPUs in a node.
    inter : str
        The catalogue link each GPU's NIC gives between nodes ("" in one node).
    source : str
        Title, author, date and address.
    sets_rate : bool
        True when this figure is the one the catalogue's measured rate was taken from.
    note : str
        What to know in reading it.
    """

    system: str
    gpus_per_node: int
    nodes: int
    collective: str
    algorithm: str
    nbytes: float
    busbw: float
    intra: str
    inter: str
    source: str
    sets_rate: bool = False
    note: str = ""


GiB = 2**30
_H100 = "8x H100 SXM"
PUBLISHED_BUSBW: tuple[PublishedBusbw, ...] = (
    PublishedBusbw(f"{_H100}, NVSwitch", 8, 1, "allreduce", "ring", 4 * GiB, 370e9,
                   "NVLink 4", "", "Sylvain Jeaugey (NVIDIA), 'H100 all reduce performance is "
                   "poor', NVIDIA/nccl-tests issue 212, 2024-05-06", sets_rate=True,
                   note="the maintainer's figure for large sizes"),
    PublishedBusbw(f"{_H100}, NCCL_ALGO=RING", 8, 1, "allreduce", "ring", 2 * GiB, 367.5e9,
                   "NVLink 4", "", "shh2000, '[SHArP] about the intranode allreduce performance "
                   "with SHArP', NVIDIA/nccl issue 1455, 2024-09-19",
                   note="365-370 GB/s at 2-4 GiB"),
    PublishedBusbw(f"{_H100}, NVLS off", 8, 1, "allreduce", "ring", 4 * GiB, 370e9, "NVLink 4",
                   "", "shenyt-sanshui, 'NVLS: Bandwidth utilization appears to drop', "
                   "NVIDIA/nccl issue 2140, 2026-04-28", note="size not stated"),
    PublishedBusbw(f"{_H100}", 8, 1, "allgather", "ring", 16 * GiB, 360e9, "NVLink 4", "",
                   "asdfvg123 and Sylvain Jeaugey, NVIDIA/nccl-tests issue 326, 2025-06-24",
                   note="'360 GB/s is exactly what we'd expect on H100'"),
    PublishedBusbw(f"{_H100}", 8, 1, "reduce_scatter", "ring", 4 * GiB, 360e9, "NVLink 4", "",
                   "pkuleo, NVIDIA/nccl issue 1281, 2024-05-10", note="size not stated"),
    PublishedBusbw(f"{_H100}, NVLS", 8, 1, "allreduce", "nvls", 4 * GiB, 480e9, "NVLink 4", "",
                   "Sylvain Jeaugey (NVIDIA), NVIDIA/nccl-tests issue 212, 2024-05-06",
                   sets_rate=True, note="peak at large sizes"),
    PublishedBusbw("Azure ND H100 v5 (8x H100 SXM), NVLS", 8, 1, "allreduce", "nvls", GiB,
                   466.35e9, "NVLink 4", "", "Microsoft Azure, 'Azure ND H100 v5 Benchmark "
                   "Results', Azure/AI-benchmarking-guide (NCCL 2.18.5, about 2024)",
                   note="in-place; 478.87 GB/s at 8 GiB"),
    PublishedBusbw(f"{_H100}, NVLS", 8, 1, "allreduce", "nvls", 4 * GiB, 476e9, "NVLink 4", "",
                   "AddyLaddy (NVIDIA), NVIDIA/nccl-tests issue 290, 2025-03-03",
                   note="'476GB/s looks to be in the expected range for H100'"),
    PublishedBusbw("Azure ND A100 v4 (8x A100 SXM)", 8, 1, "allreduce", "ring", GiB, 228.10e9,
                   "NVLink 3", "", "Microsoft Azure, 'Azure ND A100 v4 Benchmark Results', "
                   "Azure/AI-benchmarking-guide (NCCL 2.18.5, about 2024)"),
    PublishedBusbw(f"{_H100}, 8x 400G InfiniBand per node", 8, 2, "allreduce", "ring", 4 * GiB,
                   380e9, "NVLink 4", "InfiniBand NDR", "kiskra-nvidia (NVIDIA), 'Acceptable "
                   "performance of nccl-test on 2 HGX hosts?', NVIDIA/nccl-tests issue 309, "
                   "2025-06-18", note="'your peak would be at 400 GB/s ... above 380' (tuned)"),
    PublishedBusbw(f"{_H100}, multi-node, no SHARP", 8, 16, "allreduce", "ring", 4 * GiB, 380e9,
                   "NVLink 4", "InfiniBand NDR", "NVIDIA GTC 2024 slides, quoted in NVIDIA/nccl "
                   "issue 1649, 2025-03-20",
                   note="node count not stated: a plateau, compared at 16 nodes"),
    PublishedBusbw("DGX-A100, 8x 200G InfiniBand per node", 8, 16, "allreduce", "ring",
                   4 * GiB, 192e9, "NVLink 3", "InfiniBand HDR", "AddyLaddy (NVIDIA), "
                   "NVIDIA/nccl issue 812, 2023-03-31",
                   note="node count not stated: a plateau, compared at 16 nodes"),
    PublishedBusbw(f"{_H100}, 8x 400G RoCE per node", 8, 2, "allreduce", "ring", 4 * GiB, 330e9,
                   "NVLink 4", "400 GbE", "qdbkppkbdq, NVIDIA/nccl issue 1221, 2024-03-13",
                   note="RoCE, not InfiniBand: no measured NIC rate here"),
    PublishedBusbw(f"{_H100}, 8x 400G RoCE per node", 8, 4, "allreduce", "ring", 4 * GiB, 320e9,
                   "NVLink 4", "400 GbE", "qdbkppkbdq, NVIDIA/nccl issue 1221, 2024-03-13",
                   note="RoCE, not InfiniBand: no measured NIC rate here"),
)  # fmt: skip


def predicted_busbw(
    row: PublishedBusbw, *, ceiling: str = "measured", across: str = "ring"
) -> float:
    """The busbw the models predict for a published row's system, collective and size.

    Parameters
    ----------
    row : PublishedBusbw
        The published run.
    ceiling : {"measured", "nameplate"}
        Price each link at its measured busbw where the catalogue has one, or its line rate.
    across : {"ring", "pipelined", "end_to_end"}
        Across nodes: NCCL's ring over rails (what the published multi-node rows ran), or
        the hierarchical all-reduce, pipelined or its phases end to end. Ignored in a node.

    Returns
    -------
    float
        The predicted busbw, B/s (nccl-tests' definition, so it compares with ``row.busbw``).
    """
    if not isinstance(row, PublishedBusbw):
        raise TypeError(f"`row` must be a PublishedBusbw (got {type(row).__name__}).")
    ceiling = choice("ceiling", ceiling, CEILINGS)
    across = choice("across", across, ACROSS)
    ranks = row.gpus_per_node * row.nodes
    if row.nodes == 1:
        seconds = collective_time(row.collective, row.nbytes, ranks, row.intra,
                                  algorithm=row.algorithm, ceiling=ceiling)  # fmt: skip
    else:
        seconds = _across_seconds(across, row.nbytes, row.gpus_per_node, row.nodes, row.intra,
                                  row.inter, ceiling)  # fmt: skip
    return bus_bandwidth(algorithm_bandwidth(row.nbytes, seconds), ranks, row.collective)


def _across_seconds(
    across: str, nbytes: float, gpus: int, nodes: int, intra: str, inter: str, ceiling: str
) -> float:
    """An all-reduce across nodes by one of :data:`ACROSS`, s."""
    if across == "ring":
        return rail_ring_allreduce_time(nbytes, gpus, nodes, intra, inter, ceiling=ceiling)
    return hierarchical_allreduce_time(nbytes, gpus, nodes, intra, inter, ceiling=ceiling,
                                       pipelined=across == "pipelined")  # fmt: skip


def across_nodes_busbw(
    nodes: int,
    *,
    gpus_per_node: int = 8,
    intra: str = "NVLink 4",
    inter: str = "InfiniBand NDR",
    nbytes: float = 2**30,
    ceiling: str = "measured",
) -> dict[str, float]:
    """An all-reduce's busbw across ``nodes`` nodes by each model of :data:`ACROSS`.

    Parameters
    ----------
    nodes : int
        Nodes, count.
    gpus_per_node : int
        GPUs (and NICs) in each node, count.
    intra : str
        The catalogue link between GPUs in a node.
    inter : str
        The catalogue link each GPU's NIC gives between nodes.
    nbytes : float
        Each rank's buffer, B.
    ceiling : {"measured", "nameplate"}
        Each link's published ring busbw where it has one, or its line rate.

    Returns
    -------
    dict of str to float
        busbw by model (``"ring"``, ``"pipelined"``, ``"end_to_end"``), B/s.

    Examples
    --------
    >>> {k: round(v / 1e9) for k, v in across_nodes_busbw(16).items()}
    {'ring': 354, 'pipelined': 395, 'end_to_end': 204}
    """
    ceiling = choice("ceiling", ceiling, CEILINGS)
    gpus, nodes = count("gpus_per_node", gpus_per_node), count("nodes", nodes)
    nbytes = positive("nbytes", nbytes)
    return {
        across: bus_bandwidth(
            algorithm_bandwidth(
                nbytes, _across_seconds(across, nbytes, gpus, nodes, intra, inter, ceiling)
            ),
            gpus * nodes,
        )
        for across in ACROSS
    }
