"""Communication between devices: links, collectives, topologies, and measuring them.

This package's top level is its public face, what lecture 09 and a learner need:

* the alpha-beta model of a link, at its nameplate or at the bus bandwidth published runs
  reached (``ceiling="measured"``, the default where the catalogue has one):
  :func:`as_link` takes a catalogue name, a :class:`perfmodel.hardware.Link`, or anything
  with ``bandwidth`` and ``latency``;
* collectives priced on it: :func:`allreduce_time` (ring or tree),
  NVLS, :func:`reduce_scatter_time`, :func:`allgather_time`, :func:`broadcast_time`,
  :func:`alltoall_time`, :func:`parameter_server_time`,
  :func:`hierarchical_allreduce_time` (NVLink inside a node, a network between nodes,
  pipelined or end to end) and :func:`rail_ring_allreduce_time` (NCCL's ring across nodes,
  one ring per GPU and its NIC),
  and :func:`terms`, the latency count and byte factor behind each;
* nccl-tests' conventions: :func:`algorithm_bandwidth`, :func:`bus_bandwidth`,
  :func:`bus_factor`;
* what each algorithm moves, step by step, on labelled blocks: :func:`ring_schedule`,
  :func:`tree_schedule`, :func:`nvls_schedule`, :func:`torus_schedule` and
  :func:`rails_schedule`, each a :class:`Schedule` (what :mod:`perfmodel.plotting` draws);
* :class:`Axis`: a ring or line of a torus, or a switch, collectives counted hop by hop,
  and :func:`over_axes`, one collective over several axes at once;
* :func:`fit_alpha_beta`: a link's latency and bandwidth from measured times;
  :func:`read_nccl_tests` reads the table nccl-tests or rccl-tests prints into a
  :class:`Sweep`, which fits itself;
* NCCL's own cost model (:func:`nccl_choice` on a :class:`Fabric`): every algorithm and
  protocol priced as NCCL's tuner prices them, and the one it runs at each size;
  :func:`fabric_for` builds the fabric of a box from how its GPUs are joined (NVLink, PCIe
  peer to peer, or through host memory), at channel rates fitted on the calibration half of
  the published sweeps (:func:`published_sweeps`, :func:`compare_sweeps`).

:mod:`perfmodel.comms.bench` measures MPI collectives on this machine or a cluster
(``mpiexec -n 2 python -m perfmodel.comms.bench``); import it by name.

>>> from perfmodel import comms
>>> round(comms.allreduce_time(2e9, 8, "NVLink 4") * 1e3, 2)   # 2 GB of gradients, ms
9.47
"""

from __future__ import annotations

from perfmodel.comms.across import (
    hierarchical_allreduce_time,
    parameter_server_time,
    rail_ring_allreduce_time,
)
from perfmodel.comms.collectives import (
    Terms,
    allgather_time,
    allreduce_time,
    alltoall_time,
    broadcast_time,
    collective_time,
    point_to_point_time,
    reduce_scatter_time,
    terms,
)
from perfmodel.comms.fit import AlphaBetaFit, fit_alpha_beta
from perfmodel.comms.links import (
    ALGORITHMS,
    CEILINGS,
    COLLECTIVES,
    LinkModel,
    algorithm_bandwidth,
    as_link,
    bus_bandwidth,
    bus_factor,
)
from perfmodel.comms.nccl import Fabric, NcclChoice, nccl_choice
from perfmodel.comms.nccl_tests import NCCL_TESTS, Sweep, read_nccl_tests
from perfmodel.comms.published import (
    PUBLISHED_BUSBW,
    PublishedBusbw,
    across_nodes_busbw,
    predicted_busbw,
)
from perfmodel.comms.schedules import (
    SWITCH,
    Schedule,
    Step,
    Transfer,
    nvls_schedule,
    rails_schedule,
    ring_schedule,
    torus_schedule,
    tree_schedule,
)
from perfmodel.comms.sweeps import (
    PATH_RATES,
    PATHS,
    PublishedSweep,
    SweepComparison,
    compare_sweeps,
    fabric_for,
    fit_paths,
    published_sweeps,
)
from perfmodel.comms.topology import Axis, over_axes

__all__ = [
    "PUBLISHED_BUSBW",
    "PublishedBusbw",
    "across_nodes_busbw",
    "predicted_busbw",
    "ALGORITHMS",
    "CEILINGS",
    "COLLECTIVES",
    "NCCL_TESTS",
    "PATHS",
    "PATH_RATES",
    "AlphaBetaFit",
    "Axis",
    "Fabric",
    "LinkModel",
    "NcclChoice",
    "PublishedSweep",
    "SWITCH",
    "Schedule",
    "Step",
    "Transfer",
    "Sweep",
    "SweepComparison",
    "Terms",
    "algorithm_bandwidth",
    "allgather_time",
    "allreduce_time",
    "alltoall_time",
    "as_link",
    "broadcast_time",
    "bus_bandwidth",
    "bus_factor",
    "collective_time",
    "compare_sweeps",
    "fabric_for",
    "fit_alpha_beta",
    "fit_paths",
    "hierarchical_allreduce_time",
    "nccl_choice",
    "nvls_schedule",
    "over_axes",
    "parameter_server_time",
    "point_to_point_time",
    "published_sweeps",
    "rail_ring_allreduce_time",
    "rails_schedule",
    "read_nccl_tests",
    "reduce_scatter_time",
    "ring_schedule",
    "terms",
    "torus_schedule",
    "tree_schedule",
]
