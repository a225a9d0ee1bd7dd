"""What else the machine is doing while something is measured: other programs' share of the
CPUs (from ``/proc/stat``), and how long this process's threads waited for a core (from
``/proc/self/task/*/schedstat``). Linux says both; elsewhere they read as None.

Examples
--------
>>> ticks = cpu_ticks()
>>> ticks is None or ticks[0] <= ticks[1]   # busy ticks within the total
True
"""

from __future__ import annotations

import os

__all__ = ["OthersWatch", "contention", "cpu_ticks", "others_share", "scheduler_ns"]


def scheduler_ns() -> tuple[int, int] | None:
    """How long this process's threads have run, and waited ready for a core, so far.

    Returns
    -------
    tuple of (int, int) or None
        Nanoseconds run and nanoseconds waited (Linux's ``/proc/self/task/*/schedstat``);
        None where the system does not say.
    """
    running = waiting = 0
    try:
        tasks = os.listdir("/proc/self/task")
    except OSError:
        return None
    for task in tasks:
        try:
            with open(f"/proc/self/task/{task}/schedstat", encoding="ascii") as stats:
                ran, waited, *_ = stats.read().split()
        except (OSError, ValueError):
            continue  # the thread ended, or the kernel keeps no statistics
        running, waiting = running + int(ran), waiting + int(waited)
    return (running, waiting) if running else None


def cpu_ticks() -> tuple[int, int, int] | None:
    """Clock ticks so far, of the cores this process may run on and of the process itself.

    Returns
    -------
    tuple of (int, int, int) or None
        The busy and total CPU time of those cores (their ``cpuN`` lines in ``/proc/stat``;
        steal counts as busy) and this process's own (``/proc/self/stat``), count of ticks;
        None where the system does not say.
    """
    try:
        mine_cpus = {f"cpu{n}" for n in os.sched_getaffinity(0)}
        busy = total = 0
        with open("/proc/stat", encoding="ascii") as stat:
            for line in stat:
                name, *values = line.split()
                if name not in mine_cpus:
                    continue
                user, nice, system, idle, iowait, irq, softirq, steal = map(int, values[:8])
                used = user + nice + system + irq + softirq + steal
                busy, total = busy + used, total + used + idle + iowait
        with open("/proc/self/stat", encoding="ascii") as own:
            mine = own.read().rsplit(")", 1)[1].split()
    except (OSError, ValueError, IndexError, AttributeError):
        return None
    # utime + stime. A child's time is left out: the kernel adds its whole life's time to its
    # parent's only when it is reaped, which would wipe out a window's reading at once; so a
    # child working during a window counts as another program.
    return (busy, total, int(mine[11]) + int(mine[12])) if total else None


#: Ticks of other programs' time forgiven in every window: the kernel counts CPU time in
#: whole ticks (10 ms), so a short window can show one or two that were not there.
_TICK_SLACK = 2


def others_share(
    before: tuple[int, int, int] | None, after: tuple[int, int, int] | None
) -> float | None:
    """The share of the machine's CPU time other programs used between two readings.

    Parameters
    ----------
    before, after : tuple of (int, int, int) or None
        Two :func:`cpu_ticks` readings.

    Returns
    -------
    float or None
        Other programs' busy ticks, less a slack of two ticks for the kernel's rounding, over
        the total, fraction; None when either reading is missing.
    """
    if before is None or after is None or after[1] <= before[1]:
        return None
    others = (after[0] - before[0]) - (after[2] - before[2]) - _TICK_SLACK
    return min(max(others, 0) / (after[1] - before[1]), 1.0)


class OthersWatch:
    """The share of the CPUs other programs used while a ``with`` block ran.

    One reading around a whole calibration says more than the mean of many short ones: the
    kernel counts CPU time in 10 ms ticks, so a window of a few milliseconds sees a
    competitor only now and then.

    Examples
    --------
    >>> with OthersWatch() as watch:
    ...     _ = sum(range(100_000))
    >>> watch.others is None or 0.0 <= watch.others <= 1.0
    True
    """

    def __init__(self) -> None:
        self.others: float | None = None
        self._before: tuple[int, int, int] | None = None

    def __enter__(self) -> OthersWatch:
        """Take the first reading.

        Returns
        -------
        OthersWatch
            This watch, whose :attr:`others` is set when the block ends.
        """
        self._before = cpu_ticks()
        return self

    def __exit__(self, *exc: object) -> None:
        """Take the second reading: :attr:`others` is the share in between, fraction (None
        where the system does not say).

        Parameters
        ----------
        *exc : object
            The block's exception, if any (it propagates).
        """
        self.others = others_share(self._before, cpu_ticks())


def contention(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """The share of this process's ready time between two readings spent waiting for a core.

    Parameters
    ----------
    before, after : tuple of (int, int) or None
        Two :func:`scheduler_ns` readings.

    Returns
    -------
    float or None
        Waited over run plus waited, fraction; None when either reading is missing.
    """
    if before is None or after is None:
        return None
    ran, waited = after[0] - before[0], after[1] - before[1]
    if ran <= 0 or waited < 0:
        return None
    return waited / (ran + waited)
