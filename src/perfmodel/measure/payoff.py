"""Reading measured speedups: where running in parallel pays, and where it does not.

* :func:`compare_operations`: the :class:`Gap` between two operations' speedups, length by
  length, and what a run shows of it in sentences.
* :func:`where_it_pays`: the :class:`Payoff` of speedups by size, the sizes where they are
  above 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from perfmodel._validate import count, positive, sequence
from perfmodel.measure.speedups import ScalingPoint, speedup_share, untrusted

__all__ = [
    "Gap",
    "Payoff",
    "compare_operations",
    "where_it_pays",
]


@dataclass(frozen=True, slots=True)
class Gap:
    """``operation``'s speedup against ``reference``'s on ``threads`` threads, length by length,
    and what the run shows of it (see :func:`compare_operations`).

    Parameters
    ----------
    operation : str
        The operation compared (``"cumsum"``).
    reference : str
        The operation it is compared with (``"sin"``).
    threads : int
        The thread count of both speedups, count.
    lengths : tuple of int
        The lengths both were measured at, ascending, count.
    gains : tuple of float
        ``operation``'s speedup at each length, dimensionless.
    reference_gains : tuple of float
        ``reference``'s speedup at each length, dimensionless.
    untrusted : str
        How many of the speedups cannot be trusted, and why (see :func:`untrusted`); empty
        when all can.
    """

    operation: str
    reference: str
    threads: int
    lengths: tuple[int, ...]
    gains: tuple[float, ...]
    reference_gains: tuple[float, ...]
    untrusted: str

    @property
    def shares(self) -> tuple[float, ...]:
        """``operation``'s speedup as a share of ``reference``'s, at each length."""
        return tuple(g / r for g, r in zip(self.gains, self.reference_gains, strict=True))

    def findings(self) -> list[str]:
        """What this run shows, one sentence each, every one with the numbers behind it; a run
        that cannot be trusted gets one sentence saying so, and no findings.

        Returns
        -------
        list of str
            The sentences: how both fare at the shortest length, the reference's best
            speedup, whether ``operation`` ever gains as much, and (with two lengths or more)
            whether its share of the reference's speedup rises.

        Examples
        --------
        >>> gap = Gap("cumsum", "sin", 2, (10, 100, 1000), (0.2, 0.8, 1.5), (0.5, 1.6, 1.9), "")
        >>> for line in gap.findings():
        ...     print(line)
        short operands: at 10, sin 0.50x and cumsum 0.20x: both lose
        sin: best 1.90x (at 1,000); 2 threads allow at most 2x
        cumsum gains less than sin at every length
        cumsum's share of sin's speedup rises from 40% to 79%: the gap narrows but does not close
        >>> busy = "1 of 2 speedups not trusted (busy)"
        >>> Gap("cumsum", "sin", 2, (10,), (0.2,), (0.5,), busy).findings()
        ['not read: 1 of 2 speedups not trusted (busy); run the cell again']
        """
        if self.untrusted:
            return [f"not read: {self.untrusted}; run the cell again"]
        op, ref = self.operation, self.reference
        first = (self.reference_gains[0], self.gains[0])
        losers = [name for name, gain in zip((ref, op), first, strict=True) if gain < 1]
        verdict = {
            2: "both lose",
            1: f"only {losers[0]} loses" if losers else "",
            0: "neither loses",
        }
        best = max(range(len(self.lengths)), key=lambda i: self.reference_gains[i])
        lines = [
            f"short operands: at {self.lengths[0]:,}, {ref} {first[0]:.2f}x and {op} "
            f"{first[1]:.2f}x: {verdict[len(losers)]}",
            f"{ref}: best {self.reference_gains[best]:.2f}x (at {self.lengths[best]:,}); "
            f"{self.threads} threads allow at most {self.threads}x",
        ]
        shares = self.shares
        ahead = [f"{n:,}" for n, s in zip(self.lengths, shares, strict=True) if s >= 1]
        lines.append(
            f"{op} gains as much as {ref} or more at {', '.join(ahead)}"
            if ahead
            else f"{op} gains less than {ref} at every length"
        )
        share = f"{op}'s share of {ref}'s speedup"
        if len(shares) > 1 and shares[-1] > shares[0]:
            steady = all(b >= a for a, b in zip(shares, shares[1:], strict=False))
            close = "narrows but does not close" if shares[-1] < 1 else "closes"
            lines.append(
                f"{share} rises from {shares[0]:.0%} to {shares[-1]:.0%}"
                f"{'' if steady else ' (not at every step)'}: the gap {close}"
            )
        elif len(shares) > 1:
            lines.append(
                f"{share} does not rise ({shares[0]:.0%} to {shares[-1]:.0%}): the gap does not "
                "narrow on this run"
            )
        return lines


def compare_operations(
    points: Sequence[ScalingPoint], operation: str, reference: str, threads: int
) -> Gap:
    """The :class:`Gap` between ``operation``'s and ``reference``'s speedups on ``threads``
    threads, at every length both were measured.

    Parameters
    ----------
    points : sequence of ScalingPoint
        What :func:`operation_scaling` measured.
    operation : str
        The operation compared (``"cumsum"``).
    reference : str
        The operation it is compared with (``"sin"``).
    threads : int
        The thread count compared, count (at least 1).

    Returns
    -------
    Gap
        Both speedups at every common length, and whether they can be trusted.

    Raises
    ------
    ValueError
        If no length holds both operations on ``threads`` threads.

    Examples
    --------
    >>> from perfmodel.measure.timing import Measurement
    >>> m = Measurement(samples_s=[1.0], inner_loops=1, contention=0.0)
    >>> points = [ScalingPoint("sin", 10, 2, m, 1.6), ScalingPoint("cumsum", 10, 2, m, 0.4)]
    >>> compare_operations(points, "cumsum", "sin", 2).shares
    (0.25,)
    """
    threads = int(count("threads", threads))
    shares = speedup_share(points, operation, reference, threads)
    by = {(p.operation, p.n): p for p in points if p.threads == threads}
    lengths = tuple(n for n, _, _ in shares)
    used = [by[op, n] for n in lengths for op in (reference, operation)]
    return Gap(
        operation,
        reference,
        threads,
        lengths,
        tuple(by[operation, n].speedup for n in lengths),
        tuple(by[reference, n].speedup for n in lengths),
        untrusted(used, "speedups"),
    )


@dataclass(frozen=True, slots=True)
class Payoff:
    """Where running in parallel paid: the sizes whose speedup is above 1.

    Parameters
    ----------
    sizes : tuple of int
        Every size measured, ascending, count.
    speedups : tuple of float
        The speedup at each size, dimensionless.
    """

    sizes: tuple[int, ...]
    speedups: tuple[float, ...]

    @property
    def paying(self) -> tuple[int, ...]:
        """The sizes where it paid (speedup above 1), ascending."""
        return tuple(n for n, s in zip(self.sizes, self.speedups, strict=True) if s > 1)

    @property
    def contiguous(self) -> bool:
        """True when the paying sizes are one unbroken run of the sizes measured."""
        where = [i for i, s in enumerate(self.speedups) if s > 1]
        return not where or where == list(range(where[0], where[-1] + 1))

    def describe(self) -> str:
        """The range where it paid, in words, and whether it is one range.

        Returns
        -------
        str
            One sentence: the widths where the speedup is above 1, whether they run to the
            widest measured, and the speedups beyond them when it loses again.

        Examples
        --------
        >>> Payoff((16, 32, 64), (0.5, 1.5, 1.8)).describe()
        'pays from width 32 to 64, the widest measured'
        >>> Payoff((16, 32, 64), (0.5, 1.5, 0.8)).describe()
        'pays at width 32 only: wider, it loses again (64: 0.80x)'
        >>> Payoff((16, 32, 64), (1.2, 0.9, 1.1)).describe()
        'pays at widths 16 and 64, not in one range: the speedup goes up and down with the width'
        >>> Payoff((16, 32), (0.5, 0.9)).describe()
        'pays at no width measured (16 to 32)'
        """
        paying = self.paying
        if not paying:
            return f"pays at no width measured ({self.sizes[0]} to {self.sizes[-1]})"
        if not self.contiguous:
            listed = ", ".join(map(str, paying[:-1])) + f" and {paying[-1]}"
            return (
                f"pays at widths {listed}, not in one range: the speedup goes up and down "
                "with the width"
            )
        if len(paying) == 1:
            text = f"pays at width {paying[0]}"
        else:
            text = f"pays from width {paying[0]} to {paying[-1]}"
        if paying[-1] == self.sizes[-1]:
            return text + ", the widest measured"
        losing = ", ".join(
            f"{n}: {s:.2f}x"
            for n, s in zip(self.sizes, self.speedups, strict=True)
            if n > paying[-1]
        )
        return text + f" only: wider, it loses again ({losing})"


def where_it_pays(sizes: Sequence[int], speedups: Sequence[float]) -> Payoff:
    """The :class:`Payoff` of speedups measured at ``sizes`` (any order; each size once).

    Parameters
    ----------
    sizes : sequence of int
        The sizes measured, count (each at least 1, none twice, not empty).
    speedups : sequence of float
        The speedup at each size, dimensionless (positive; as many as ``sizes``).

    Returns
    -------
    Payoff
        The sizes and speedups, sorted by size.

    Raises
    ------
    TypeError
        If either is not a sequence of numbers, or a size is not an integer.
    ValueError
        If the lengths differ or are 0, a size repeats or is below 1, or a speedup is not
        positive.

    Examples
    --------
    >>> where_it_pays([64, 16, 32], [1.8, 0.5, 1.5]).paying
    (32, 64)
    """
    sizes, speedups = sequence("sizes", sizes), sequence("speedups", speedups)
    sizes = [count(f"sizes[{i}]", n) for i, n in enumerate(sizes)]
    speedups = [positive(f"speedups[{i}]", s) for i, s in enumerate(speedups)]
    if len(sizes) != len(speedups) or not sizes:
        raise ValueError(
            f"`sizes` and `speedups` must be as long as each other and not empty "
            f"(got {len(sizes)} and {len(speedups)})."
        )
    if len(set(sizes)) != len(sizes):
        raise ValueError(f"`sizes` must name each size once (got {sorted(sizes)}).")
    pairs = sorted(zip(sizes, speedups, strict=True))
    return Payoff(tuple(n for n, _ in pairs), tuple(s for _, s in pairs))
