"""Fit a link's latency and bandwidth to measured collective times.

A collective's time is linear in the link's two numbers (see
:func:`perfmodel.comms.collectives.terms`)::

    t(n) = latencies · α + byte_factor · n · (1/B)

so measured times over a range of sizes give α and 1/B by least squares. The sizes span
orders of magnitude, so the fit minimises *relative* error (a microsecond miss on an
8-byte message counts as much as a millisecond miss on 64 MiB), with both numbers kept
non-negative (scipy's ``nnls``).

>>> from perfmodel.comms.collectives import allreduce_time
>>> from perfmodel.comms.links import LinkModel
>>> truth = LinkModel(bandwidth=5e9, latency=2e-6)
>>> sizes = [2.0**k for k in range(3, 27, 2)]
>>> fit = fit_alpha_beta(sizes, [allreduce_time(n, 2, truth) for n in sizes], ranks=2)
>>> round(fit.latency * 1e6, 6), round(fit.bandwidth / 1e9, 6)
(2.0, 5.0)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfmodel._show import seconds, shown
from perfmodel._validate import choice, count, non_negative, positive, sequence, text
from perfmodel.comms.collectives import terms
from perfmodel.comms.links import ALGORITHMS, COLLECTIVES, LinkModel
from perfmodel.units import format_quantity

if TYPE_CHECKING:
    from perfmodel.hardware import Link

__all__ = ["AlphaBetaFit", "fit_alpha_beta"]


@dataclass(frozen=True, slots=True, repr=False)
class AlphaBetaFit:
    """A link's latency and bandwidth as one collective's measurements imply them.

    It has a link's ``bandwidth`` and ``latency``, so it is itself a
    :class:`perfmodel.hardware.LinkSpec`: any model that takes a link takes a fit.

    Parameters
    ----------
    collective : str
        The collective the times were measured for.
    algorithm : str
        Its algorithm (see :data:`perfmodel.comms.ALGORITHMS`).
    ranks : int
        Ranks that took part, count.
    latency : float
        The fitted latency per message, s.
    bandwidth : float
        The fitted bandwidth in one direction, B/s.
    sizes : tuple of float
        The buffer sizes fitted, B.
    times : tuple of float
        The time measured at each size, s.
    """

    collective: str
    algorithm: str
    ranks: int
    latency: float
    bandwidth: float
    sizes: tuple[float, ...]
    times: tuple[float, ...]

    def __repr__(self) -> str:
        return shown("AlphaBetaFit", collective=repr(self.collective),
                     algorithm=repr(self.algorithm), ranks=str(self.ranks),
                     latency=seconds(self.latency),
                     bandwidth=format_quantity(self.bandwidth, "B/s"),
                     points=str(len(self.sizes)))  # fmt: skip

    @property
    def model(self) -> LinkModel:
        """The fitted link, to price any other collective with."""
        return LinkModel(self.bandwidth, self.latency, name=f"fitted from {self.collective}")

    def predict(self, nbytes: float) -> float:
        """The fitted time of this collective for one buffer.

        Parameters
        ----------
        nbytes : float
            Each rank's buffer, B.

        Returns
        -------
        float
            Seconds, s.
        """
        cost = terms(self.collective, self.ranks, self.algorithm)
        return cost.time(non_negative("nbytes", nbytes), self.model)

    @property
    def relative_errors(self) -> tuple[float, ...]:
        """``predicted / measured - 1`` at every measured size."""
        return tuple(self.predict(n) / t - 1 for n, t in zip(self.sizes, self.times, strict=True))

    @property
    def rms_relative_error(self) -> float:
        """The root-mean-square of :attr:`relative_errors`: the fit's typical miss."""
        errors = self.relative_errors
        return math.sqrt(sum(e * e for e in errors) / len(errors))

    def link(self, name: str, *, kind: str = "other", source: str, notes: str = "") -> Link:
        """The fit as a catalogue link, which ``hardware.to_toml`` writes.

        Parameters
        ----------
        name : str
            The link's name.
        kind : str
            One of :data:`perfmodel.hardware.LINK_KINDS`.
        source : str
            Where the measurements come from.
        notes : str
            Anything a reader needs to interpret them.

        Returns
        -------
        hardware.Link
            The fitted bandwidth (B/s) and latency (s) under that name.
        """
        from perfmodel.hardware import Link

        return Link(name=text("name", name), kind=kind, bandwidth=self.bandwidth,
                    latency=self.latency, source=source, notes=notes)  # fmt: skip


def fit_alpha_beta(
    sizes: Sequence[float],
    times: Sequence[float],
    *,
    collective: str = "allreduce",
    ranks: int,
    algorithm: str | None = None,
) -> AlphaBetaFit:
    """Least-squares α and B for ``collective`` on ``ranks`` ranks from measured ``times``.

    Parameters
    ----------
    sizes : sequence of float
        Buffer sizes, B (as :mod:`perfmodel.comms.collectives` counts them).
    times : sequence of float
        The time measured at each size, s (positive).
    collective : str
        Which collective's formula the times follow.
    ranks : int
        Ranks that took part, count (at least 2).
    algorithm : str, optional
        Its algorithm; the collective's first by default.

    Returns
    -------
    AlphaBetaFit
        The fitted latency (s) and bandwidth (B/s), with the data they came from.

    Raises
    ------
    ValueError
        With fewer than two distinct sizes, or when the times do not grow with size (no
        bandwidth can be fitted).
    """
    collective = choice("collective", collective, COLLECTIVES)
    algorithm = ALGORITHMS[collective][0] if algorithm is None else algorithm
    ranks = count("ranks", ranks, minimum=2)
    cost = terms(collective, ranks, algorithm)
    sizes, times = sequence("sizes", sizes), sequence("times", times)
    if len(sizes) != len(times):
        raise ValueError(
            f"`sizes` and `times` must have the same length (got {len(sizes)} and {len(times)})."
        )
    ns = tuple(non_negative(f"sizes[{i}]", n) for i, n in enumerate(sizes))
    ts = tuple(positive(f"times[{i}]", t) for i, t in enumerate(times))
    if len(set(ns)) < 2:
        raise ValueError(f"`sizes` must hold at least two different sizes (got {sorted(set(ns))}).")
    import numpy as np
    from scipy.optimize import nnls

    t = np.asarray(ts)
    design = np.column_stack([np.full(len(ns), cost.latencies), cost.byte_factor * np.asarray(ns)])
    (alpha, beta), _ = nnls(design / t[:, None], np.ones(len(ts)))
    if beta <= 0:
        raise ValueError(
            "`times` do not grow with `sizes`, so no bandwidth can be fitted; measure larger "
            "messages (a few MiB and up)."
        )
    return AlphaBetaFit(collective, algorithm, ranks, float(alpha), float(1 / beta), ns, ts)
