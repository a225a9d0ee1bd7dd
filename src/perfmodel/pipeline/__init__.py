"""Pipeline parallelism: split a model graph into stages and prove how good the split is.

This package's top level is its public face, everything lecture 10 and a learner need:

* the problem: :class:`Graph` (a DAG of compute and send times), :class:`Partition`
  (a split with its bottleneck and lower bound), :func:`stage_cost`, :func:`is_feasible`;
* the solvers: :func:`partition` (picks the strongest method the graph allows),
  :func:`brute_force` (the oracle for tiny graphs), :func:`split_chain`,
  :func:`split_order`, :func:`split_downsets`, :func:`split_lattice` (the downset program
  block by block), :func:`search_orders`, :func:`solve_mip`;
* the proofs: :func:`combinatorial_lower_bound`, :func:`cut_lower_bound`,
  :func:`threshold_search`, :func:`mip_lower_bound`,
  :func:`downsets` (the sets a stage prefix can be, counted to see whether the exact
  dynamic program fits), :func:`series_points` and :func:`lattice_size` (how the block
  program sees a graph);
* the drawing: :func:`reduce_graph` (merge what no optimal split needs to cut; every
  solver of :func:`partition` runs on its result) and :func:`redraw_finer` (the same
  network drawn finer, to check that a certificate does not depend on the drawing);
* the schedule: :func:`bubble_fraction`, :func:`simulate`, :func:`simulate_batch`;
* the baselines: :func:`equal_layers`, :func:`balance_by_params`, :func:`balance_by_time`,
  :func:`greedy_cuts`;
* :mod:`perfmodel.pipeline.zoo`: model graphs priced on catalogue hardware, and
  :mod:`perfmodel.pipeline.networks`: Inception-v3, NASNet-A Mobile and GNMT as published;
  :meth:`perfmodel.pipeline.model.Model.with_memory` gives their stages a device capacity.

The submodules (``graph``, ``split``, ``lattice``, ``search``, ``mip``, ``bounds``,
``cuts``, ``threshold``, ``cover``, ``reduce``, ``baselines``, ``schedule``, ``model``, ``zoo``,
``networks``) each hold one part;
pictures live in :mod:`perfmodel.plotting.pipeline`.

>>> from perfmodel.pipeline import Graph, partition
>>> partition(Graph.chain([4.0, 1.0, 1.0, 4.0], [0.5] * 4), 2).bottleneck
5.5
"""

from __future__ import annotations

from perfmodel.pipeline import networks, zoo
from perfmodel.pipeline.baselines import (
    balance_by_params,
    balance_by_time,
    equal_layers,
    greedy_cuts,
)
from perfmodel.pipeline.blocks import lattice_size, series_points
from perfmodel.pipeline.bounds import MipBound, mip_lower_bound
from perfmodel.pipeline.cuts import cut_lower_bound
from perfmodel.pipeline.graph import (
    MIP_REL_GAP,
    Graph,
    Partition,
    combinatorial_lower_bound,
    is_feasible,
    stage_cost,
)
from perfmodel.pipeline.lattice import split_lattice
from perfmodel.pipeline.mip import solve_mip
from perfmodel.pipeline.partition import EXACT_NODE_LIMIT, brute_force, partition
from perfmodel.pipeline.reduce import Reduction, redraw_finer, reduce_graph
from perfmodel.pipeline.schedule import Schedule, bubble_fraction, simulate, simulate_batch
from perfmodel.pipeline.search import search_orders
from perfmodel.pipeline.split import downsets, split_chain, split_downsets, split_order
from perfmodel.pipeline.threshold import threshold_search

__all__ = [
    "EXACT_NODE_LIMIT",
    "MIP_REL_GAP",
    "Graph",
    "MipBound",
    "Partition",
    "Reduction",
    "Schedule",
    "balance_by_params",
    "balance_by_time",
    "greedy_cuts",
    "brute_force",
    "bubble_fraction",
    "combinatorial_lower_bound",
    "cut_lower_bound",
    "downsets",
    "equal_layers",
    "is_feasible",
    "lattice_size",
    "mip_lower_bound",
    "networks",
    "partition",
    "redraw_finer",
    "reduce_graph",
    "search_orders",
    "series_points",
    "simulate",
    "simulate_batch",
    "solve_mip",
    "split_chain",
    "split_downsets",
    "split_lattice",
    "split_order",
    "stage_cost",
    "threshold_search",
    "zoo",
]
