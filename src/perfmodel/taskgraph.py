"""Find the parallelism in a model: a graph of operations, its work and span, and a schedule.

A model is a graph of operations: an edge ``u -> v`` says ``v`` must wait for ``u``. Sreepathi
Pai's compendium names three reasons to wait:

* a **data** dependence: ``v`` reads what ``u`` wrote (``E = A·G`` after ``A = C·D``);
* a **control** dependence: ``v`` runs only if a branch ``u`` decides so (``if (A) Y = E·F``);
* a **structural** hazard: ``u`` and ``v`` are independent but need the same unit (one
  multiplier for ``X = A·B`` and ``Y = C·D``). That is not an edge but a resource.

Two numbers bound how fast the graph can run on ``P`` workers (Brent, 1974):

* the **work** ``W``, the sum of every operation's time (the time on one worker), and
* the **span** ``S``, the longest path through the graph (the time on infinitely many),

so that ``max(W / P, S) <= T_P``, and a greedy schedule, which never leaves a worker idle
while an operation is ready, achieves ``T_P <= W / P + S``. Their ratio ``W / S`` is the
graph's parallelism: more workers than that cannot help. :meth:`TaskGraph.schedule` is
such a greedy list schedule (the ready operation with the longest path still ahead of it
goes first), with an optional limit per resource.

The graph reuses :class:`perfmodel.pipeline.Graph` for its checks and order; names and edge
kinds are what this module adds.

Examples
--------
>>> g = TaskGraph({"A = C·D": 1, "E = A·G": 1, "F = B·C": 1}, [("A = C·D", "E = A·G")])
>>> g.work, g.span, g.parallelism
(3.0, 2.0, 1.5)
>>> g.schedule(2).makespan
2.0
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from perfmodel._validate import count, describe, non_negative, positive, text
from perfmodel.pipeline import Graph

__all__ = [
    "EDGE_KINDS",
    "Schedule",
    "Slot",
    "TaskGraph",
    "brent_bounds",
    "examples",
    "transformer_block",
]

#: The dependences an edge can stand for.
EDGE_KINDS = ("data", "control")


def brent_bounds(work: float, span: float, p: float) -> tuple[float, float]:
    """``(max(W/P, S), W/P + S)``: no schedule beats the first; a greedy one meets the second.

    Parameters
    ----------
    work : float
        W, the total time of every operation, s (or any one time unit; non-negative).
    span : float
        S, the longest path's time, in the same unit as ``work``, s (at most ``work``).
    p : float
        P, the workers, count (positive).

    Returns
    -------
    (float, float)
        The lower and the greedy upper bound on the time on ``p`` workers, in the unit of
        ``work``, s.

    Raises
    ------
    TypeError
        If an argument is not a number.
    ValueError
        If ``work`` or ``span`` is negative, ``span`` exceeds ``work``, or ``p`` is not
        positive.

    Examples
    --------
    >>> brent_bounds(12, 3, 4)
    (3.0, 6.0)
    """
    work, span = non_negative("work", work), non_negative("span", span)
    if span > work:
        raise ValueError(f"`span` must be at most `work` (got span {span:g}, work {work:g}).")
    p = positive("p", p)
    return max(work / p, span), work / p + span


@dataclass(frozen=True, slots=True)
class Slot:
    """One operation placed on a worker: from ``start`` to ``end``.

    Parameters
    ----------
    task : str
        The operation's name.
    worker : int
        The worker it runs on, from 0, count.
    start : float
        When it starts, in the graph's ``time_unit`` (s by default).
    end : float
        When it ends, in the graph's ``time_unit`` (s by default).
    """

    task: str
    worker: int
    start: float
    end: float


@dataclass(frozen=True, slots=True)
class Schedule:
    """Where and when every operation runs, in start order.

    Parameters
    ----------
    slots : tuple of Slot
        Every operation's placement, sorted by start time, then worker.
    workers : int
        The workers the schedule had, count.
    """

    slots: tuple[Slot, ...]
    workers: int

    @property
    def makespan(self) -> float:
        """When the last operation ends, in the graph's time unit (s by default)."""
        return max((slot.end for slot in self.slots), default=0.0)

    @property
    def utilization(self) -> float:
        """Busy worker-time over ``workers × makespan``, fraction (0 for an empty makespan)."""
        busy = sum(slot.end - slot.start for slot in self.slots)
        return busy / (self.workers * self.makespan) if self.makespan > 0 else 0.0


class TaskGraph:
    """Named operations with their times, and the dependences between them.

    Parameters
    ----------
    tasks : mapping of str to float
        Each operation's name and time (non-negative), in ``time_unit`` (s by default).
    edges : iterable of (str, str) or (str, str, kind)
        ``(u, v)``: ``v`` waits for ``u``; ``kind`` is ``"data"`` (the default) or
        ``"control"``.
    resources : mapping of str to str, optional
        The unit an operation needs (``{"X = A·B": "multiplier"}``); a unit runs one
        operation at a time unless :meth:`schedule` is given more.
    time_unit : str, default "s"
        The unit of every time in ``tasks``, written on the axis of a schedule's plot (``"µs"``,
        or ``"steps"`` for a textbook graph whose operations take one step each).

    Raises
    ------
    TypeError
        If ``tasks`` is not a mapping, a name is not a string, a time not a number, or an
        edge not a tuple.
    ValueError
        If ``tasks`` is empty, a name is blank, a time negative or NaN, an edge names an
        unknown operation or kind, or the edges make a self-loop or a cycle.
    """

    def __init__(
        self,
        tasks: Mapping[str, float],
        edges: Iterable[tuple[str, ...]] = (),
        *,
        resources: Mapping[str, str] | None = None,
        time_unit: str = "s",
    ) -> None:
        if not isinstance(tasks, Mapping):
            raise TypeError(
                f"`tasks` must be a mapping of name -> time (got {type(tasks).__name__} "
                f"{describe(tasks)})."
            )
        if not tasks:
            raise ValueError(f"`tasks` must hold at least one task (got {describe(tasks)}).")
        self.time_unit = text("time_unit", time_unit)
        self.names: tuple[str, ...] = tuple(text("task name", name) for name in tasks)
        self.times: tuple[float, ...] = tuple(
            non_negative(f"tasks[{name!r}]", tasks[name]) for name in self.names
        )
        index = {name: i for i, name in enumerate(self.names)}
        pairs: list[tuple[int, int]] = []
        kinds: dict[tuple[str, str], str] = {}
        for edge in edges:
            if not isinstance(edge, tuple) or len(edge) not in (2, 3):
                raise TypeError(f"`edges` must hold (u, v) or (u, v, kind) tuples (got {edge!r}).")
            u, v, *rest = edge
            kind = rest[0] if rest else "data"
            if kind not in EDGE_KINDS:
                raise ValueError(f"edge kind must be one of {EDGE_KINDS} (got {kind!r}).")
            for end in (u, v):
                if end not in index:
                    raise ValueError(
                        f"edge {edge!r} names {end!r}, which is not a task; tasks: "
                        f"{', '.join(self.names[:8])}."
                    )
            pairs.append((index[u], index[v]))
            kinds[(u, v)] = kind
        self.edge_kinds: Mapping[tuple[str, str], str] = kinds
        self.graph = Graph(self.times, [0.0] * len(self.times), pairs)
        self.resources: Mapping[str, str] = dict(resources or {})
        for name, unit in self.resources.items():
            if name not in index:
                raise ValueError(f"`resources` names {name!r}, which is not a task.")
            text(f"resources[{name!r}]", unit)

    @property
    def edges(self) -> tuple[tuple[str, str], ...]:
        """Every ``(u, v)`` dependence, in the order given, without its kind."""
        return tuple(self.edge_kinds)

    @property
    def work(self) -> float:
        """Total time of every operation: the time on one worker."""
        return float(sum(self.times))

    def _finish_times(self) -> list[float]:
        """Earliest finish of each operation with unlimited workers."""
        finish = [0.0] * len(self.times)
        for v in self.graph.order:
            ready = max((finish[u] for u in self.graph.predecessors[v]), default=0.0)
            finish[v] = ready + self.times[v]
        return finish

    @property
    def span(self) -> float:
        """The longest path's time: the time on infinitely many workers."""
        return max(self._finish_times())

    @property
    def critical_path(self) -> tuple[str, ...]:
        """The operations on a longest path, in order."""
        finish = self._finish_times()
        v = max(range(len(finish)), key=finish.__getitem__)
        path = [v]
        while self.graph.predecessors[v]:
            start = finish[v] - self.times[v]
            v = next(
                u
                for u in self.graph.predecessors[v]
                if abs(finish[u] - start) <= 1e-12 * max(1.0, start)
            )
            path.append(v)
        return tuple(self.names[i] for i in reversed(path))

    @property
    def parallelism(self) -> float:
        """``work / span``: how many workers the graph can keep busy on average."""
        return self.work / self.span if self.span > 0 else float(len(self.times))

    def bounds(self, p: int) -> tuple[float, float]:
        """Brent's bounds on ``p`` workers (see :func:`brent_bounds`).

        Parameters
        ----------
        p : int
            Workers, count (at least 1).

        Returns
        -------
        (float, float)
            ``(max(W/P, S), W/P + S)``, in ``time_unit`` (s by default).

        Raises
        ------
        TypeError
            If ``p`` is not an integer.
        ValueError
            If ``p`` is below 1.
        """
        return brent_bounds(self.work, self.span, count("p", p))

    def schedule(self, p: int, *, units: Mapping[str, int] | None = None) -> Schedule:
        """A greedy list schedule on ``p`` workers.

        Whenever a worker is free, the ready operation with the longest path still ahead of
        it starts (ties: the order given). An operation that needs a resource also waits for
        one of that resource's ``units`` (default 1 each).

        Parameters
        ----------
        p : int
            Workers, count (at least 1).
        units : mapping of str to int, optional
            How many of each resource there are, count (at least 1); a resource left out
            has 1.

        Returns
        -------
        Schedule
            Every operation's worker, start and end, in ``time_unit``.

        Raises
        ------
        TypeError
            If ``p`` or a count in ``units`` is not an integer.
        ValueError
            If ``p`` or a count in ``units`` is below 1.

        Examples
        --------
        >>> g = TaskGraph({"X = A·B": 1, "Y = C·D": 1},
        ...               resources={"X = A·B": "multiplier", "Y = C·D": "multiplier"})
        >>> g.schedule(2).makespan   # one multiplier: a structural hazard
        2.0
        >>> g.schedule(2, units={"multiplier": 2}).makespan
        1.0
        """
        p = count("p", p)
        free_units = {unit: count(f"units[{unit!r}]", n) for unit, n in (units or {}).items()}
        for unit in set(self.resources.values()):
            free_units.setdefault(unit, 1)
        n = len(self.times)
        ahead = [0.0] * n  # longest path from the start of v to the end of the graph
        for v in reversed(self.graph.order):
            ahead[v] = self.times[v] + max(
                (ahead[w] for w in self.graph.successors[v]), default=0.0
            )
        waiting = [len(self.graph.predecessors[v]) for v in range(n)]
        ready = [(-ahead[v], v) for v in range(n) if waiting[v] == 0]
        heapq.heapify(ready)
        running: list[tuple[float, int, int]] = []  # (end, task, worker)
        idle = list(range(p))
        now, slots = 0.0, []
        blocked: list[tuple[float, int]] = []
        while ready or running or blocked:
            for item in blocked:
                heapq.heappush(ready, item)
            blocked = []
            while ready and idle:
                priority, v = heapq.heappop(ready)
                needed = self.resources.get(self.names[v])
                if needed is not None and free_units[needed] == 0:
                    blocked.append((priority, v))
                    continue
                if needed is not None:
                    free_units[needed] -= 1
                worker = idle.pop(0)
                slots.append(Slot(self.names[v], worker, now, now + self.times[v]))
                heapq.heappush(running, (now + self.times[v], v, worker))
            if not running:
                break  # nothing runs, so nothing blocks: every task has been placed
            now, v, worker = heapq.heappop(running)
            finished = [(v, worker)]
            while running and running[0][0] <= now:
                _, u, w = heapq.heappop(running)
                finished.append((u, w))
            for u, w in finished:
                idle.append(w)
                idle.sort()
                held = self.resources.get(self.names[u])
                if held is not None:
                    free_units[held] += 1
                for succ in self.graph.successors[u]:
                    waiting[succ] -= 1
                    if waiting[succ] == 0:
                        heapq.heappush(ready, (-ahead[succ], succ))
        return Schedule(tuple(sorted(slots, key=lambda s: (s.start, s.worker))), p)

    def describe(self) -> dict[str, Any]:
        """Work, span, parallelism and the critical path, for printing.

        Returns
        -------
        dict
            ``"work"``, ``"span"`` (floats, in ``time_unit``), ``"parallelism"`` (a float)
            and ``"critical path"`` (the names joined by ``" -> "``).
        """
        return {
            "work": self.work,
            "span": self.span,
            "parallelism": self.parallelism,
            "critical path": " -> ".join(self.critical_path),
        }


def transformer_block(
    device: str = "H100 SXM",
    *,
    tokens: int = 2048,
    width: int = 4096,
    heads: int = 32,
    dtype: str = "bf16",
) -> TaskGraph:
    """One transformer block as a task graph, each operation timed by the roofline on
    ``device``: the Q, K and V projections are independent (branch-level parallelism), the
    rest is a chain. Attention is one fused kernel (FlashAttention: no score matrix written
    to memory), the one price lectures 09 and 12 give it too.

    Parameters
    ----------
    device : str
        A catalogue device name.
    tokens : int, optional
        Tokens in the batch (one sequence), count.
    width : int, optional
        The model width, count.
    heads : int, optional
        Attention heads; ``width // heads`` is the head width, count.
    dtype : str, optional
        The dtype of every operation and of the device's peak (default ``"bf16"``).

    Returns
    -------
    TaskGraph
        Ten operations with roofline times in µs (rounded to 0.1 µs), ``time_unit="µs"``.

    Raises
    ------
    ValueError
        If the device is unknown or has no peak for ``dtype``.

    Examples
    --------
    >>> g = transformer_block()
    >>> g.parallelism > 1 and len(g.critical_path) == 8
    True
    """
    from perfmodel import ops
    from perfmodel.roofline import estimate

    def seconds(cost: ops.Cost) -> float:
        return estimate(cost, device, dtype=dtype).time_s * 1e6  # microseconds read well

    proj = seconds(ops.dense_forward(tokens, width, width, dtype=dtype))
    norm = seconds(ops.layer_norm(tokens, width, dtype=dtype))
    # One fused kernel (FlashAttention), as lectures 09 and 12 price attention too.
    attend = seconds(ops.attention(1, heads, tokens, width // heads, fused=True, dtype=dtype))
    up = seconds(ops.dense_forward(tokens, width, 4 * width, dtype=dtype))
    act = seconds(ops.elementwise(tokens * 4 * width, flops_per_element=8, dtype=dtype))
    down = seconds(ops.dense_forward(tokens, 4 * width, width, dtype=dtype))
    tasks = {
        "norm 1": norm, "Q": proj, "K": proj, "V": proj, "attention": attend,
        "out proj": proj, "norm 2": norm, "MLP up": up, "GELU": act, "MLP down": down,
    }  # fmt: skip
    edges = [
        ("norm 1", "Q"), ("norm 1", "K"), ("norm 1", "V"), ("Q", "attention"),
        ("K", "attention"), ("V", "attention"), ("attention", "out proj"),
        ("out proj", "norm 2"), ("norm 2", "MLP up"), ("MLP up", "GELU"), ("GELU", "MLP down"),
    ]  # fmt: skip
    return TaskGraph({k: round(v, 1) for k, v in tasks.items()}, edges, time_unit="µs")


def examples() -> dict[str, TaskGraph]:
    """The graphs lecture 07 and its explorer show, by name.

    Returns
    -------
    dict of str to TaskGraph
        A data dependence, a control dependence and a structural hazard (times in steps),
        and :func:`transformer_block` on an H100 SXM (in µs).
    """
    return {
        "data dependence": TaskGraph(
            {"A = C·D": 1, "E = A·G": 1, "F = B·C": 1}, [("A = C·D", "E = A·G")], time_unit="steps"
        ),
        "control dependence": TaskGraph(
            {"X = C·D": 1, "test A": 0.5, "Y = E·F": 1},
            [("test A", "Y = E·F", "control")],
            time_unit="steps",
        ),
        "structural hazard": TaskGraph(
            {"X = A·B": 1, "Y = C·D": 1},
            resources={"X = A·B": "multiplier", "Y = C·D": "multiplier"},
            time_unit="steps",
        ),
        "transformer block (µs on an H100)": transformer_block(),
    }
