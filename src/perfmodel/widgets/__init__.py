"""Interactive explorers for the lectures: thin wires from controls to a model function.

One module per lecture, each with its explorers and their static twins; the controls they
share (log sliders with readable readouts, live text, a redrawn figure) live in
:mod:`perfmodel.widgets.controls`, which lays figures out with
:mod:`perfmodel.widgets.layout` and keeps the garbage collector out of a move with
:mod:`perfmodel.widgets.collection`; :mod:`perfmodel.widgets.worker` lends an explorer a
second core.

======================================  =======  ============================================
module                                  lecture  explorer
======================================  =======  ============================================
:mod:`~perfmodel.widgets.transfer`      00       time to move bytes over a link
:mod:`~perfmodel.widgets.run_time`      01       T = W·t/P
:mod:`~perfmodel.widgets.devices`       02       the catalogue, one metric at a time
:mod:`~perfmodel.widgets.op_cost`       03       FLOPs, bytes and intensity of an op
:mod:`~perfmodel.widgets.roofline`      04       ops on a device's roofline
:mod:`~perfmodel.widgets.minibatch`     05       a layer's intensity against its batch
:mod:`~perfmodel.widgets.measure`       06       a working-set sweep of this machine's caches
:mod:`~perfmodel.widgets.taskgraph`     07       a task graph's greedy schedule on P workers
:mod:`~perfmodel.widgets.scaling`       08       Amdahl's and Gustafson's laws, fitted
:mod:`~perfmodel.widgets.distributed`   09       a data-parallel step on a cluster
:mod:`~perfmodel.widgets.partition`     10       the best pipeline split of a model
:mod:`~perfmodel.widgets.serving`       11       an inference service under load
:mod:`~perfmodel.widgets.capstone`      12       a model on new hardware, scaled out
======================================  =======  ============================================

Every explorer has a static twin (a plain function of the same arguments) that the
notebooks call once with the default values, so the page still reads well where widgets
cannot render: a PDF, GitHub's viewer, a projector with a dead kernel. Every explorer and twin
is imported from this package: ``from perfmodel.widgets import roofline_explorer``.
"""

from __future__ import annotations

from perfmodel._extras import require
from perfmodel._lazy import lazy_face

require("lab", "ipywidgets", "matplotlib", feature="perfmodel.widgets")

#: Each public name, by the module that holds it: the door a notebook imports from
#: (``from perfmodel.widgets import roofline_explorer``); each module loads on first use.
_HOMES = {
    "transfer_time_explorer": "transfer:transfer_time_explorer",
    "transfer_time_text": "transfer:transfer_time_text",
    "run_time_explorer": "run_time:run_time_explorer",
    "run_time_text": "run_time:run_time_text",
    "METRICS": "devices:METRICS",
    "device_bars": "devices:device_bars",
    "device_explorer": "devices:device_explorer",
    "OP_KINDS": "op_cost:OP_KINDS",
    "named_op": "op_cost:named_op",
    "op_explorer": "op_cost:op_explorer",
    "op_summary": "op_cost:op_summary",
    "roofline_explorer": "roofline:roofline_explorer",
    "roofline_view": "roofline:roofline_view",
    "batch_size_explorer": "minibatch:batch_size_explorer",
    "batch_size_view": "minibatch:batch_size_view",
    "cache_sweep_explorer": "measure:cache_sweep_explorer",
    "cache_sweep_view": "measure:cache_sweep_view",
    "schedule_explorer": "taskgraph:schedule_explorer",
    "schedule_view": "taskgraph:schedule_view",
    "scaling_explorer": "scaling:scaling_explorer",
    "scaling_view": "scaling:scaling_view",
    "data_parallel_explorer": "distributed:data_parallel_explorer",
    "data_parallel_view": "distributed:data_parallel_view",
    "ZOO_MODELS": "partition:ZOO_MODELS",
    "partition_explorer": "partition:partition_explorer",
    "partition_view": "partition:partition_view",
    "serving_explorer": "serving:serving_explorer",
    "serving_view": "serving:serving_view",
    "DEVICE_COUNTS": "capstone:DEVICE_COUNTS",
    "MODELS": "capstone:MODELS",
    "capstone_explorer": "capstone:capstone_explorer",
    "capstone_view": "capstone:capstone_view",
}
__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_face(__name__, _HOMES)
