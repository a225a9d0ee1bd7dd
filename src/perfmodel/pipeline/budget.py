"""How much a search may do: bounded by work, with a wall-clock cap as a safety net.

Every search in this package stops on *work* (generations, evaluations, probes, simplex
rounds, branch-and-bound nodes), so the same inputs give the same answer on an idle laptop
and on a loaded server. A :class:`Deadline` is the safety net above that: one clock for a
whole call, checked between steps, so that ``partition(..., time_limit_s=20)`` returns
within about 20 s even on a graph whose work bounds would take longer. A result cut short
by it says so (:attr:`Partition.complete <perfmodel.pipeline.graph.Partition>` is False),
because its numbers then depend on the machine.

>>> deadline = Deadline(60.0)
>>> deadline.expired(), deadline.reached
(False, False)
>>> Deadline.none().left() == float("inf")
True
"""

from __future__ import annotations

import math

from perfmodel._validate import positive
from perfmodel.measure.timing import clock

__all__ = ["Deadline", "check_deadline"]


class Deadline:
    """A point in (monotonic) time after which a call stops starting new work.

    Parameters
    ----------
    seconds : float
        How long from now, positive, s; ``inf`` for no cap.

    Attributes
    ----------
    reached : bool
        True once a check found the time up: some work was skipped, so the result may
        differ from one machine to another.
    """

    __slots__ = ("_end", "reached")

    def __init__(self, seconds: float) -> None:
        seconds = positive("seconds", seconds, allow_infinity=True)
        self._end = clock() + seconds
        self.reached = False

    @classmethod
    def none(cls) -> Deadline:
        """A deadline that never comes.

        Returns
        -------
        Deadline
            One at ``inf`` seconds from now: :meth:`expired` is always False.
        """
        return cls(math.inf)

    def left(self) -> float:
        """Seconds until the deadline (never negative).

        Returns
        -------
        float
            The time left, s; ``inf`` for no cap.
        """
        return max(0.0, self._end - clock())

    def expired(self) -> bool:
        """Whether the time is up (and, if so, remember that work was cut short).

        Returns
        -------
        bool
            True once the deadline has passed, and on every later call (:attr:`reached`).
        """
        if clock() >= self._end:
            self.reached = True
        return self.reached


def check_deadline(deadline: object) -> Deadline:
    """``deadline`` itself, or a deadline that never comes for None.

    Parameters
    ----------
    deadline : Deadline or None
        A deadline shared with the caller, or None for none (a TypeError otherwise).

    Returns
    -------
    Deadline
        The deadline to keep.

    Examples
    --------
    >>> check_deadline(None).left() == float("inf")
    True
    """
    if deadline is None:
        return Deadline.none()
    if not isinstance(deadline, Deadline):
        raise TypeError(f"`deadline` must be a Deadline or None (got {type(deadline).__name__}).")
    return deadline
