"""Predictions set beside measurements: one table for lecture 06's ops and lecture 12's nodes.

* :class:`Compared`, the protocol every row follows (a name, a prediction and a measurement),
  and :class:`Classified`, a row that belongs to an op class;
* :class:`Row`, one numpy op: the plain roofline, the calibrated prediction
  (:class:`perfmodel.measure.calibration.Calibration`) and the measurement;
* :class:`Comparison`, the rows together: the totals, the median errors, the misses, and the
  rows by op class.

:func:`perfmodel.measure.held_out.predict_vs_measure` fills one with :class:`Row`;
:func:`perfmodel.capstone.compare` with the nodes of an ONNX model.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from perfmodel import ops
from perfmodel._validate import count, non_negative, text
from perfmodel.measure.calibration import Calibration
from perfmodel.measure.timing import Measurement

__all__ = [
    "Compared",
    "Comparison",
    "Row",
]


@dataclass(frozen=True, slots=True)
class Row:
    """One op: the plain roofline, the calibrated prediction, and the measurement.

    Parameters
    ----------
    name : str
        The case's name.
    cost : ops.Cost
        Its one-pass cost.
    roofline_s : float
        The plain roofline's time on the measured ceilings, s.
    predicted_s : float
        The calibrated prediction, s.
    bound : str
        What most of the prediction goes to (see :meth:`Calibration.bound`).
    measurement : Measurement
        The op timed.
    """

    name: str
    cost: ops.Cost
    roofline_s: float
    predicted_s: float
    bound: str
    measurement: Measurement

    @property
    def measured_s(self) -> float:
        """The fastest sample: the least disturbed run, as the ceilings were measured."""
        return self.measurement.minimum_s

    @property
    def ratio(self) -> float:
        """Measured over calibrated prediction: above 1, the machine was slower than the model."""
        return self.measured_s / self.predicted_s if self.predicted_s > 0 else math.inf

    @property
    def roofline_ratio(self) -> float:
        """Measured over the plain one-pass roofline."""
        return self.measured_s / self.roofline_s if self.roofline_s > 0 else math.inf

    @property
    def beats_roofline(self) -> bool:
        """True when the op ran faster than the plain roofline said it could."""
        return self.measured_s < self.roofline_s

    @property
    def counted_bytes_per_s(self) -> float:
        """The one-pass cost's bytes over the measured time: the bandwidth the op reached, as
        STREAM counts bytes (no write-allocate traffic)."""
        return self.cost.bytes / self.measured_s if self.measured_s > 0 else math.inf

    @property
    def doubt(self) -> str:
        """Why the measurement cannot be trusted (noisy, or a busy machine); empty if it can."""
        return self.measurement.doubt


class Compared(Protocol):
    """A row of a :class:`Comparison`: a name, a prediction and a measurement.

    Lecture 06's :class:`Row` (an op timed with numpy) is one; so is lecture 12's
    :class:`perfmodel.capstone.NodeComparison` (a node timed by onnxruntime).

    Parameters
    ----------
    *args, **kwargs
        None: a protocol is never built; any object with the four properties is a row.
    """

    @property
    def name(self) -> str:
        """The op's or node's name."""

    @property
    def predicted_s(self) -> float:
        """The predicted time, s."""

    @property
    def measured_s(self) -> float:
        """The measured time, s."""

    @property
    def ratio(self) -> float:
        """Measured over predicted, dimensionless: above 1, slower than predicted."""


class Classified(Compared, Protocol):
    """A row that belongs to an op class (``"matmul"``, ``"elementwise"``, ...)."""

    @property
    def op_class(self) -> str: ...


RowT = TypeVar("RowT", bound=Compared, covariant=True)


def _miss_s(row: Compared) -> float:
    return abs(row.measured_s - row.predicted_s)


@dataclass(frozen=True, slots=True)
class Comparison(Generic[RowT]):
    """Predictions next to measurements, one row per op or per node of a model.

    Lecture 06 compares numpy ops (rows of :class:`Row`) and lecture 12 the nodes of a model
    run on onnxruntime (rows of :class:`perfmodel.capstone.NodeComparison`); both read the
    same medians and misses from it.

    Parameters
    ----------
    rows : tuple
        One :class:`Compared` per op or node, in the order they ran.
    calibration : Calibration
        The calibration behind the predictions.
    model : str
        The model compared (its ONNX graph's name); empty for ops timed one by one.
    end_to_end_s : float, optional
        The whole model timed at once, s (onnxruntime's total); None when only the rows
        were timed, and :attr:`measured_s` is their sum.
    fused_s : float, optional
        The model timed with every graph optimisation on, s; None when not timed.
    threads : int, optional
        Threads the measurement ran on, count; None when not recorded.
    noisy : bool
        The measured runs disagreed by more than the house threshold (a busy machine,
        whose errors say nothing about the model).
    """

    rows: tuple[RowT, ...]
    calibration: Calibration
    model: str = ""
    end_to_end_s: float | None = None
    fused_s: float | None = None
    threads: int | None = None
    noisy: bool = False

    @property
    def predicted_s(self) -> float:
        """Every row's prediction added up, s."""
        return math.fsum(row.predicted_s for row in self.rows)

    @property
    def measured_s(self) -> float:
        """The whole measured end to end when it was, else every row's measurement added, s."""
        if self.end_to_end_s is not None:
            return self.end_to_end_s
        return math.fsum(row.measured_s for row in self.rows)

    @property
    def error(self) -> float:
        """End to end, predicted over measured, less one: +0.2 overestimates by 20%, fraction."""
        return self.predicted_s / self.measured_s - 1

    @property
    def median_abs_error(self) -> float:
        """Median over the rows of ``|measured / predicted - 1|``, fraction."""
        return statistics.median(abs(row.ratio - 1) for row in self.rows)

    @property
    def median_node_error(self) -> float:
        """Median over the rows of ``|predicted / measured - 1|``: each prediction's error as a
        share of what was measured, fraction."""
        return statistics.median(abs(row.predicted_s / row.measured_s - 1) for row in self.rows)

    def misses(self, tolerance: float = 0.25) -> tuple[RowT, ...]:
        """The rows the prediction is off by more than ``tolerance``.

        Parameters
        ----------
        tolerance : float
            The largest ``|measured / predicted - 1|`` that counts as a hit, fraction.

        Returns
        -------
        tuple
            Every row with ``abs(row.ratio - 1) > tolerance``, in table order.
        """
        tolerance = non_negative("tolerance", tolerance)
        return tuple(row for row in self.rows if abs(row.ratio - 1) > tolerance)

    def largest_misses(self, n: int = 5) -> list[RowT]:
        """The ``n`` rows whose predictions are furthest from their measurements in seconds.

        Parameters
        ----------
        n : int
            How many rows, count.

        Returns
        -------
        list
            The rows, the largest ``|measured - predicted|`` first.
        """
        n = count("n", n)
        return sorted(self.rows, key=_miss_s, reverse=True)[:n]

    def row(self, name: str) -> RowT:
        """The row whose name starts with ``name`` (``"matvec"``, ``"add of 8"``).

        Parameters
        ----------
        name : str
            The start of one row's name.

        Returns
        -------
        Compared
            That row.

        Raises
        ------
        ValueError
            If no row's name, or more than one, starts with ``name``.
        """
        name = text("name", name)
        found = [row for row in self.rows if row.name.startswith(name)]
        if len(found) != 1:
            names = ", ".join(row.name for row in self.rows)
            raise ValueError(
                f"`name` must start exactly one row's name (got {name!r}; the rows: {names})."
            )
        return found[0]

    @property
    def beat_roofline(self: Comparison[Row]) -> tuple[Row, ...]:
        """The ops measured faster than the plain roofline: where a measured ceiling was not
        the machine's limit (see :attr:`Row.beats_roofline`)."""
        return tuple(row for row in self.rows if row.beats_roofline)

    @property
    def roofline_median_abs_error(self: Comparison[Row]) -> float:
        """The same for the plain roofline: how far lecture 04's model alone is off, fraction."""
        return statistics.median(abs(row.roofline_ratio - 1) for row in self.rows)

    def class_ratios(self: Comparison[Classified]) -> dict[str, tuple[int, float, int]]:
        """Each op class's rows, their median measured/predicted ratio, and how many ran slower.

        Returns
        -------
        dict of str to tuple
            For each op class in the order first met: its rows (count), their median
            ``measured / predicted`` (a ratio, dimensionless), and how many exceed 1 (count).
        """
        found: dict[str, list[float]] = {}
        for row in self.rows:
            found.setdefault(row.op_class, []).append(row.ratio)
        return {name: (len(ratios), statistics.median(ratios), sum(r > 1 for r in ratios))
                for name, ratios in found.items()}  # fmt: skip

    def by_class(self: Comparison[Classified]) -> dict[str, tuple[float, float]]:
        """Predicted and measured seconds of each op class.

        Returns
        -------
        dict of str to tuple of float
            For each op class in the order first met: (predicted, measured), s.
        """
        totals: dict[str, tuple[float, float]] = {}
        for row in self.rows:
            predicted, measured = totals.get(row.op_class, (0.0, 0.0))
            totals[row.op_class] = (predicted + row.predicted_s, measured + row.measured_s)
        return totals
