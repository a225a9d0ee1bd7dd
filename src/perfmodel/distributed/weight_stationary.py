"""Sharding an MLP for inference so its weights never move: 1D and 2D weight-stationary.

At inference the weights are the big arrays and the activations small, so the layouts that
keep each weight block on one chip and move only activations win (Pope et al., *Efficiently
Scaling Transformer Inference*, 2022; Austin et al., *How to Scale Your Model*, "All About
Transformer Inference", question 7). For an MLP of width ``D`` and hidden width ``F`` on
``N`` chips, with ``B`` tokens of 2-byte activations and ``W`` the bandwidth of one mesh
axis in both directions:

* **1D**: ``W_in[D, F_XYZ]``, ``W_out[F_XYZ, D]`` over a 3D torus: the input is gathered
  and the output reduce-scattered over all three axes at once,
  ``T = 2BD/(3W) + 2BD/(3W) = 4BD/(3W)``, whatever ``N`` is;
* **2D**: ``W_in[D_X, F_YZ]``, ``W_out[F_YZ, D_X]``: gather the input over YZ, all-reduce
  the partial hidden activations over X, reduce-scatter the output over YZ:
  ``T = 2BD/(X·W) + 4BF/(YZ·W)``, least at ``X = sqrt(N·D/(2F))``, where it is
  ``2B·sqrt(8DF/N)/W``: it keeps falling as chips are added, and beats 1D once
  ``N > 32 (F/D) (3/4)²`` (72 chips for ``F = 4D``).

Each collective is the scaling book's: ``bytes / (axes · W)`` for a gather or scatter over
that many axes, twice that for an all-reduce.

>>> plan = weight_stationary(batch=2048, width=8192, mlp_width=32768, chips=256,
...                          ici_bandwidth=9e10)
>>> round(plan.x, 2), round(plan.comms_s * 1e6), round(plan.one_d_comms_s * 1e6)
(5.66, 132, 249)
>>> plan.crossover_chips         # F = 4D: the book's 72
72.0
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perfmodel._validate import count, positive

__all__ = ["WeightStationary", "weight_stationary"]


@dataclass(frozen=True, slots=True)
class WeightStationary:
    """The 2D weight-stationary layout at its best split, beside 1D.

    Parameters
    ----------
    x : float
        Chips the reduction dimension ``D`` is split over, the best ``X`` between 1 and
        ``N`` (count; round it to a mesh shape you have).
    yz : float
        Chips ``F`` is split over, ``N / X``, count.
    comms_s : float
        The 2D layout's communication per MLP, s.
    one_d_comms_s : float
        The 1D layout's, s.
    crossover_chips : float
        The chip count above which 2D sends less, count.
    """

    x: float
    yz: float
    comms_s: float
    one_d_comms_s: float
    crossover_chips: float


def weight_stationary(
    *, batch: int, width: int, mlp_width: int, chips: int, ici_bandwidth: float
) -> WeightStationary:
    """The 2D weight-stationary split of one MLP and its communication, beside 1D's.

    Parameters
    ----------
    batch : int
        Tokens in the step, ``B``, count.
    width : int
        The model's width ``D``, count.
    mlp_width : int
        The MLP's hidden width ``F``, count.
    chips : int
        Chips, ``N``, count.
    ici_bandwidth : float
        One mesh axis's bandwidth into a chip, both directions (the book's ``W_ici``), B/s.

    Returns
    -------
    WeightStationary
        The best ``X`` and ``YZ``, both layouts' communication, and the crossover.
    """
    b, d, f = count("batch", batch), count("width", width), count("mlp_width", mlp_width)
    n = count("chips", chips)
    w = positive("ici_bandwidth", ici_bandwidth)
    x = min(max(math.sqrt(n * d / (2 * f)), 1.0), float(n))  # a split is 1 to N chips
    yz = n / x
    if n == 1:  # one chip sends nothing, whatever the layout
        return WeightStationary(1.0, 1.0, 0.0, 0.0, 32 * (f / d) * (3 / 4) ** 2)
    two_d = 2 * b * d / (x * w) + 4 * b * f / (yz * w)
    one_d = 4 * b * d / (3 * w)
    return WeightStationary(x, yz, two_d, one_d, 32 * (f / d) * (3 / 4) ** 2)
