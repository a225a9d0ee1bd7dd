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
cannot render: a PDF, GitHub's viewer, a projector with a dead kernel.
"""

from __future__ import annotations

from perfmodel._extras import require

require("lab", "ipywidgets", "matplotlib", feature="perfmodel.widgets")
