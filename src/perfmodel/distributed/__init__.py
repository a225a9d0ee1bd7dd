"""Training across many devices: memory, FLOPs, and what each parallelism strategy costs.

This package's top level is its public face, what lecture 09 and a learner need:

* :func:`training_memory` and :func:`activation_bytes`: weights, gradients, optimizer
  states (2Ψ + 2Ψ + 12Ψ for mixed-precision Adam, or 12Ψ with bf16 weights and no master
  copy), ZeRO stages, activations with and without recomputation, and
  :meth:`TrainingMemory.fits` on a catalogue device; :func:`checkpoint_bytes` and
  :func:`remat_flops` for a checkpoint policy that names the tensors it keeps;
* :func:`training_flops` (6·N·D), :func:`mfu`, :func:`step_time_for_mfu`, and
  :data:`PUBLISHED_RUNS`, what large runs report;
* :func:`data_parallel_step`: one step's compute from the roofline, its gradient
  all-reduce with buckets and overlap, and the scaling efficiency;
* :func:`training_step`: a real run's whole step (tensor × pipeline × data parallel,
  recomputation, sequence parallelism, FSDP) at achieved ceilings, split into its parts;
* :func:`sharded_bytes`, :func:`tensor_parallel_bytes`, :func:`pipeline_bytes`: what
  each strategy sends; :func:`critical_tokens` and :func:`critical_width`: where it hides;
  :func:`sync_or_async`: cost against staleness;
* :class:`Mesh`, :meth:`Mesh.shard` and :func:`sharded_matmul`: shardings in the JAX
  scaling book's notation, every collective priced on the mesh's own axes (torus rings,
  lines or switches), one axis or several at once; :func:`fsdp_tensor_critical_tokens`;
* mixture-of-experts: :func:`moe_parameters`, :func:`moe_critical_batch`,
  :func:`moe_dispatch_time`, :func:`expert_parallel_bytes`; inference layouts:
  :func:`weight_stationary` (1D against 2D);
* the multi-node roofline: :func:`network_ridge`, :func:`attainable_flops`,
  :func:`split_minibatch` (Coates' two-node table), :func:`data_parallel_network_intensity`.

Transformer shapes and their counts live in :mod:`perfmodel.transformer`; the links and
collectives in :mod:`perfmodel.comms`.

>>> from perfmodel import distributed
>>> distributed.training_memory(7_000_000_000).model_states / 1e9   # 16 bytes per parameter
112.0
"""

from __future__ import annotations

from perfmodel.distributed.checkpoint import checkpoint_bytes, remat_flops
from perfmodel.distributed.data_parallel import DataParallelStep, compute_time, data_parallel_step
from perfmodel.distributed.memory import (
    PRECISIONS,
    RECOMPUTE,
    TrainingMemory,
    activation_bytes,
    training_memory,
)
from perfmodel.distributed.mesh import (
    Collective,
    Mesh,
    ShardedArray,
    ShardedMatmul,
    parse_sharding,
    sharded_matmul,
)
from perfmodel.distributed.moe import (
    MoeParameters,
    expert_parallel_bytes,
    moe_critical_batch,
    moe_dispatch_time,
    moe_parameters,
)
from perfmodel.distributed.network import (
    attainable_flops,
    data_parallel_network_intensity,
    network_ridge,
    split_minibatch,
)
from perfmodel.distributed.step import TrainingStep, training_step
from perfmodel.distributed.strategies import (
    STRATEGIES,
    SyncOrAsync,
    critical_tokens,
    critical_width,
    fsdp_tensor_critical_tokens,
    pipeline_bytes,
    sharded_bytes,
    sync_or_async,
    tensor_parallel_bytes,
)
from perfmodel.distributed.utilization import (
    PUBLISHED_RUNS,
    PublishedRun,
    mfu,
    step_time_for_mfu,
    training_flops,
)
from perfmodel.distributed.weight_stationary import WeightStationary, weight_stationary

__all__ = [
    "PRECISIONS",
    "PUBLISHED_RUNS",
    "RECOMPUTE",
    "STRATEGIES",
    "Collective",
    "DataParallelStep",
    "Mesh",
    "MoeParameters",
    "PublishedRun",
    "ShardedArray",
    "ShardedMatmul",
    "SyncOrAsync",
    "TrainingMemory",
    "TrainingStep",
    "WeightStationary",
    "activation_bytes",
    "attainable_flops",
    "checkpoint_bytes",
    "compute_time",
    "critical_tokens",
    "critical_width",
    "data_parallel_network_intensity",
    "data_parallel_step",
    "expert_parallel_bytes",
    "fsdp_tensor_critical_tokens",
    "mfu",
    "moe_critical_batch",
    "moe_dispatch_time",
    "moe_parameters",
    "network_ridge",
    "parse_sharding",
    "pipeline_bytes",
    "remat_flops",
    "sharded_bytes",
    "sharded_matmul",
    "split_minibatch",
    "step_time_for_mfu",
    "sync_or_async",
    "tensor_parallel_bytes",
    "training_flops",
    "training_memory",
    "training_step",
    "weight_stationary",
]
