"""Cost models: how many FLOPs an operation performs and how many bytes it moves.

Conventions
-----------
* A multiply-add counts as **2 FLOPs** (a multiply and an add). Papers that count
  multiply-accumulates (MACs) report half: use :func:`flops_from_macs` to convert.
* Bytes are those read from and written to main memory once each, assuming every operand
  streams through exactly once (no cache reuse beyond the operation itself).
* ``exp``, division and square root count as one FLOP each: a simplification, since the
  hardware spends more, but these ops are memory-bound on every device in the catalogue.

The package's modules each hold one part; this top level is their public face, and every
name is imported from here:

* :mod:`perfmodel.ops.costs`: :class:`Cost` and its arithmetic (costs add and scale), and
  :func:`flops_from_macs`;
* :mod:`perfmodel.ops.dense`: products of matrices and vectors (:func:`matvec`,
  :func:`matmul`), a dense layer forward and backward (:func:`dense_forward`,
  :func:`dense_backward`), convolution and pooling (:func:`conv2d`, :func:`pooling`);
* :mod:`perfmodel.ops.streaming`: :func:`elementwise`, :func:`reduction`, :func:`scan`,
  :func:`softmax`, :func:`layer_norm`, :func:`attention`, and a chain of elementwise ops
  fused (:class:`Fusion`, :func:`fusion`).

Examples
--------
Coates's matrix-vector product (*Deep Learning (hopefully faster)*), M=1024, N=512, fp32:

>>> mv = matvec(1024, 512, dtype="fp32")
>>> mv.flops, mv.bytes
(1048576, 2103296)
>>> round(mv.intensity, 2)
0.5

Coates's C = C + A·B with M=K=N=512 in fp32:

>>> matmul(512, 512, 512, dtype="fp32", accumulate=True).intensity
64.0
"""

from __future__ import annotations

from perfmodel.ops.costs import Cost, flops_from_macs
from perfmodel.ops.dense import conv2d, dense_backward, dense_forward, matmul, matvec, pooling
from perfmodel.ops.streaming import (
    Fusion,
    attention,
    elementwise,
    fusion,
    layer_norm,
    reduction,
    scan,
    softmax,
)

__all__ = [
    "Cost",
    "Fusion",
    "attention",
    "conv2d",
    "dense_backward",
    "dense_forward",
    "elementwise",
    "flops_from_macs",
    "fusion",
    "layer_norm",
    "matmul",
    "matvec",
    "pooling",
    "reduction",
    "scan",
    "softmax",
]
