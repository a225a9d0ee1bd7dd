"""Lecture 12's capstone: will it run faster on new hardware?

The public face of the package, in the order the lecture uses it:

* bring your own model: :func:`coverage` (which ONNX operators are priced, and how),
  :func:`from_onnx` (the contract: each node's
  :class:`~perfmodel.ops.Cost`, in execution order, labelled with its ONNX node name) and
  :func:`import_onnx` (the same, with op classes, shapes, weights and a pipeline graph; as
  exported, or the graph onnxruntime runs at an optimisation level, its :data:`FUSED_OPS`
  priced as the nodes they stand for);
  :mod:`~perfmodel.capstone.builders` writes real models (an MLP, a ResNet, GPT-2) in ONNX;
* the engine's own speed, kind by kind: :func:`measure_kernels` (or :func:`cached_kernels`,
  measured once per machine), :class:`KernelRates`, :func:`drift`; the zoo of nine
  families, predicted then timed: :data:`ZOO`, :func:`zoo_model`, :func:`run_zoo`,
  :func:`zoo_report` (the table lecture 12 prints); :func:`reference_run` (the zoo and the
  held-out families at both optimisation levels, recorded on a quiet machine);
* predict, then run on a real engine: :func:`calibrate_engine`, :func:`compare` (every
  node predicted and measured on onnxruntime, :func:`profile`, in the same
  :class:`~perfmodel.measure.comparison.Comparison` as lecture 06's ops);
* will it run faster: :func:`predict_on` a catalogue device, :func:`upgrade` (the
  speed-up by op class);
* then many devices: :func:`data_parallel`, :func:`pipeline_parallel`, :func:`design`
  (Coates' loop), :func:`memory_bytes`;
* beside published measurements: :data:`PUBLISHED`, :func:`predict_published`.

>>> from perfmodel.capstone import builders, from_onnx
>>> costs = from_onnx(builders.mlp(batch=8, widths=(16, 4)))
>>> [cost.label for cost in costs]
['fc0', 'fc0_bias']
"""

# ruff: noqa: E402 (the extra is checked before the modules that need it are imported)
from __future__ import annotations

from perfmodel._extras import require

require("capstone", "onnx", feature="perfmodel.capstone")

from perfmodel.capstone import builders
from perfmodel.capstone.calibrate import cached_kernels, drift, measure_kernels
from perfmodel.capstone.coverage import EXPORTED, Coverage, coverage
from perfmodel.capstone.devices import (
    ClassChange,
    DevicePrediction,
    Upgrade,
    predict_on,
    retyped,
    upgrade,
)
from perfmodel.capstone.engine import (
    OPTIMIZATIONS,
    EngineProfile,
    engine_overhead,
    profile,
    random_inputs,
)
from perfmodel.capstone.kernels import KernelRates
from perfmodel.capstone.onnx_import import (
    OP_CLASSES,
    SUPPORTED,
    ImportedModel,
    Node,
    UnsupportedOpWarning,
    from_onnx,
    import_onnx,
)
from perfmodel.capstone.onnx_optimized import FUSED_OPS
from perfmodel.capstone.predict import EngineModel, NodeComparison, calibrate_engine, compare
from perfmodel.capstone.published import (
    PUBLISHED,
    PUBLISHED_INFERENCE,
    Prediction,
    PublishedRun,
    predict_published,
)
from perfmodel.capstone.reference import ReferenceRun, reference_run, this_machine
from perfmodel.capstone.scale import (
    DataParallel,
    DesignStep,
    PipelinePlan,
    data_parallel,
    design,
    memory_bytes,
    pipeline_parallel,
)
from perfmodel.capstone.zoo import ZOO, Fusion, ZooRow, fusions, run_zoo, zoo_model, zoo_report
from perfmodel.measure.comparison import Comparison

__all__ = [
    "ZOO",
    "KernelRates",
    "ZooRow",
    "Fusion",
    "fusions",
    "ReferenceRun",
    "reference_run",
    "this_machine",
    "cached_kernels",
    "drift",
    "measure_kernels",
    "run_zoo",
    "zoo_model",
    "zoo_report",
    "EXPORTED",
    "Coverage",
    "coverage",
    "FUSED_OPS",
    "OPTIMIZATIONS",
    "OP_CLASSES",
    "PUBLISHED",
    "PUBLISHED_INFERENCE",
    "SUPPORTED",
    "ClassChange",
    "Comparison",
    "DataParallel",
    "DesignStep",
    "DevicePrediction",
    "EngineModel",
    "EngineProfile",
    "ImportedModel",
    "Node",
    "NodeComparison",
    "PipelinePlan",
    "Prediction",
    "PublishedRun",
    "UnsupportedOpWarning",
    "Upgrade",
    "builders",
    "calibrate_engine",
    "compare",
    "data_parallel",
    "design",
    "engine_overhead",
    "from_onnx",
    "import_onnx",
    "memory_bytes",
    "pipeline_parallel",
    "predict_on",
    "predict_published",
    "profile",
    "random_inputs",
    "retyped",
    "upgrade",
]
