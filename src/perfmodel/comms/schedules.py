"""What each collective moves, step by step: the schedules its pictures draw.

:mod:`perfmodel.comms.collectives` prices a collective by two counts, its latencies and the
bytes per rank. The schedules here run the algorithm itself on labelled data: each rank's
buffer cut into blocks, each block a set of the ranks whose contribution it holds (a sum, in
a reduction), and each step the messages sent at once. So the counts can be checked against
the algorithm, and :mod:`perfmodel.plotting` draws the steps.

* :func:`ring_schedule`: a ring reduce-scatter (``p-1`` steps, a block of ``n/p`` each), an
  all-gather, or both (an all-reduce).
* :func:`tree_schedule`: a binomial-tree reduce to rank 0, then a broadcast back down;
  ``2⌈log2 p⌉`` rounds, each moving whole buffers.
* :func:`nvls_schedule`: NVLink SHARP: every GPU sends its buffer into the switch, which
  sums it and hands each GPU its summed slice, then multicasts every slice to every GPU.
* :func:`torus_schedule`: a 2D torus all-reduce as the JAX scaling book draws it (Austin
  et al., *How to Scale Your Model*): a ring reduce-scatter along the rows, then along the
  columns, then all-gathers back.
* :func:`rails_schedule`: the hierarchical all-reduce over rails: reduce-scatter inside each
  node, all-reduce each GPU's shard with its peers on its rail, all-gather inside the node.

>>> ring = ring_schedule(4)
>>> len(ring.steps), ring.sent(0)              # 2(p-1) steps of n/p: 2(p-1)/p of the buffer
(6, 1.5)
>>> ring.holdings[0][0] == frozenset(range(4))  # every block holds every rank's data
True
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from perfmodel._validate import choice, count

__all__ = [
    "RING_COLLECTIVES",
    "SWITCH",
    "Schedule",
    "Step",
    "Transfer",
    "nvls_schedule",
    "rails_schedule",
    "torus_shape",
    "ring_schedule",
    "torus_schedule",
    "tree_schedule",
]

#: The collectives a ring schedule runs.
RING_COLLECTIVES = ("allreduce", "reduce_scatter", "allgather")
#: The rank number of the switch in an NVLS schedule: it sends and receives, and holds nothing.
SWITCH = -1
_WORDS = {"allreduce": "all-reduce", "reduce_scatter": "reduce-scatter", "allgather": "all-gather"}

Holdings = tuple[tuple[frozenset[int], ...], ...]


@dataclass(frozen=True, slots=True)
class Transfer:
    """One message: ``blocks`` of ``source`` 's buffer sent to ``target``.

    Parameters
    ----------
    source, target : int
        Ranks; :data:`SWITCH` for the switch of an NVLS schedule.
    blocks : tuple of int
        The blocks sent, by index in the buffer.
    fraction : float
        The message's share of one rank's buffer ``n``: ``len(blocks)`` over the blocks in a
        buffer, fraction.
    """

    source: int
    target: int
    blocks: tuple[int, ...]
    fraction: float


@dataclass(frozen=True, slots=True)
class Step:
    """The messages sent at once, and what every rank holds when they have arrived.

    Parameters
    ----------
    phase : str
        The part of the collective the step belongs to (``"reduce-scatter"``, ``"broadcast"``...).
    transfers : tuple of Transfer
        The messages, all sent at the same time.
    holdings : tuple of tuple of frozenset
        ``holdings[rank][block]``: the ranks whose data that block holds after the step (summed,
        in a reduction); empty where the rank holds nothing of the block, or has handed it on
        in a ring reduce-scatter (the next rank adds to it; the sender needs it no more).
    """

    phase: str
    transfers: tuple[Transfer, ...]
    holdings: Holdings


@dataclass(frozen=True, slots=True)
class Schedule:
    """A collective run step by step on ``ranks`` ranks, each buffer cut into ``blocks``.

    Parameters
    ----------
    name : str
        The algorithm, in words.
    ranks : int
        Ranks, count.
    blocks : int
        Blocks each buffer is cut into, count.
    start : tuple of tuple of frozenset
        What each rank holds before the first step (see :attr:`Step.holdings`).
    steps : tuple of Step
        The steps, in order.
    """

    name: str
    ranks: int
    blocks: int
    start: Holdings
    steps: tuple[Step, ...]

    @property
    def holdings(self) -> Holdings:
        """What each rank holds at the end."""
        return self.steps[-1].holdings if self.steps else self.start

    def sent(self, rank: int) -> float:
        """What ``rank`` sends over the whole collective.

        Parameters
        ----------
        rank : int
            A rank of the schedule (or :data:`SWITCH`), count.

        Returns
        -------
        float
            The bytes it sends, as a fraction of one rank's buffer n, fraction.
        """
        return sum(t.fraction for step in self.steps for t in step.transfers if t.source == rank)

    def received(self, rank: int) -> float:
        """What ``rank`` receives over the whole collective.

        Parameters
        ----------
        rank : int
            A rank of the schedule (or :data:`SWITCH`), count.

        Returns
        -------
        float
            The bytes it receives, as a fraction of one rank's buffer n, fraction.
        """
        return sum(t.fraction for step in self.steps for t in step.transfers if t.target == rank)

    def critical_path(self) -> float:
        """The largest message of each step, added over the steps.

        Returns
        -------
        float
            The buffers that cross a link one after another, as a fraction of n
            (``2⌈log2 p⌉`` for a tree all-reduce), fraction.
        """
        return sum(max(t.fraction for t in step.transfers) for step in self.steps)


def _start(
    ranks: int, blocks: int, owned: Sequence[Sequence[int]] | None = None
) -> list[list[frozenset[int]]]:
    """Each rank holding its own data in every block, or only in the blocks ``owned[rank]``."""
    return [
        [frozenset({r}) if owned is None or b in owned[r] else frozenset() for b in range(blocks)]
        for r in range(ranks)
    ]


def _frozen(state: list[list[frozenset[int]]]) -> Holdings:
    return tuple(tuple(row) for row in state)


def _ring_steps(
    state: list[list[frozenset[int]]],
    rings: Sequence[Sequence[int]],
    chunks: Sequence[Sequence[Sequence[int]]],
    *,
    reduce: bool,
    phase: str,
) -> list[Step]:
    """Run a ring reduce-scatter (``reduce``) or all-gather on every ring at once.

    ``chunks[i][k]`` are the blocks of ring ``i`` 's ``k``-th chunk. In a reduce-scatter the
    member at position ``m`` ends with chunk ``m`` summed over the ring; in an all-gather it
    starts with chunk ``m`` and ends with all of them (NCCL's ring: step ``s`` sends chunk
    ``m - s - 1``, or ``m - s``, to the next member).
    """
    total = len(state[0])
    length = len(rings[0])
    steps = []
    for s in range(length - 1):
        transfers, updates = [], []
        for ring, parts in zip(rings, chunks, strict=True):
            for m, rank in enumerate(ring):
                blocks = tuple(parts[(m - s - 1 if reduce else m - s) % length])
                target = ring[(m + 1) % length]
                transfers.append(Transfer(rank, target, blocks, len(blocks) / total))
                updates += [(target, b, state[rank][b]) for b in blocks]
        for target, b, data in updates:  # every message is sent before any arrives
            state[target][b] = state[target][b] | data if reduce else data
        if reduce:  # a block sent on is the next rank's to finish: the sender is done with it
            for transfer in transfers:
                for b in transfer.blocks:
                    state[transfer.source][b] = frozenset()
        steps.append(Step(phase, tuple(transfers), _frozen(state)))
    return steps


def ring_schedule(p: int, collective: str = "allreduce") -> Schedule:
    """A ring collective on ``p`` ranks, each buffer cut into ``p`` blocks of ``n/p``.

    Parameters
    ----------
    p : int
        Ranks, count; at least 2.
    collective : {"allreduce", "reduce_scatter", "allgather"}
        A reduce-scatter (rank ``r`` ends with block ``r`` summed over every rank), an
        all-gather (rank ``r`` starts with block ``r`` and ends with all), or both in turn.

    Returns
    -------
    Schedule
        ``p-1`` steps per phase; in each, every rank sends one block to the next rank round
        the ring, so each sends ``(p-1)/p · n`` per phase.

    Examples
    --------
    >>> rs = ring_schedule(4, "reduce_scatter")
    >>> [sorted(rs.holdings[r][r]) for r in range(2)], rs.sent(3)
    ([[0, 1, 2, 3], [0, 1, 2, 3]], 0.75)
    >>> [len(block) for block in rs.holdings[0]]   # the rest handed on, summed elsewhere
    [4, 0, 0, 0]
    """
    p = count("p", p, minimum=2)
    collective = choice("collective", collective, RING_COLLECTIVES)
    gather_only = collective == "allgather"
    state = _start(p, p, [[r] for r in range(p)] if gather_only else None)
    start = _frozen(state)
    ring, chunks = [list(range(p))], [[[b] for b in range(p)]]
    steps = []
    if collective != "allgather":
        steps += _ring_steps(state, ring, chunks, reduce=True, phase="reduce-scatter")
    if collective != "reduce_scatter":
        steps += _ring_steps(state, ring, chunks, reduce=False, phase="all-gather")
    return Schedule(f"ring {_WORDS[collective]}", p, p, start, tuple(steps))


def tree_schedule(p: int) -> Schedule:
    """A binomial-tree all-reduce on ``p`` ranks: reduce to rank 0, then broadcast.

    In reduce round ``k`` (from 0), each rank ``r`` with ``r mod 2^(k+1) = 2^k`` sends its
    whole buffer to ``r - 2^k``, which adds it in; the broadcast runs the rounds backwards.

    Parameters
    ----------
    p : int
        Ranks, count; at least 2.

    Returns
    -------
    Schedule
        ``2⌈log2 p⌉`` rounds of whole buffers (one block each).

    Examples
    --------
    >>> tree = tree_schedule(8)
    >>> len(tree.steps), tree.critical_path(), tree.sent(0), tree.sent(7)
    (6, 6.0, 3.0, 1.0)
    """
    p = count("p", p, minimum=2)
    state = _start(p, 1)
    start = _frozen(state)
    rounds = math.ceil(math.log2(p))
    steps: list[Step] = []
    for k in [*range(rounds), *reversed(range(rounds))]:
        reduce = len(steps) < rounds
        stride = 2**k
        senders = [r for r in range(p) if r % (2 * stride) == (stride if reduce else 0)]
        pairs = [(r, r - stride) if reduce else (r, r + stride) for r in senders]
        pairs = [(a, b) for a, b in pairs if 0 <= b < p]
        for a, b in pairs:
            state[b][0] = state[b][0] | state[a][0] if reduce else state[a][0]
        transfers = tuple(Transfer(a, b, (0,), 1.0) for a, b in pairs)
        steps.append(Step("reduce" if reduce else "broadcast", transfers, _frozen(state)))
    return Schedule("binomial tree all-reduce", p, 1, start, tuple(steps))


def nvls_schedule(p: int) -> Schedule:
    """NVLink SHARP's all-reduce on ``p`` GPUs joined by one switch that adds.

    Step 1: every GPU sends its whole buffer into the switch, which sums each of the ``p``
    slices and returns slice ``i`` to GPU ``i``. Step 2: every GPU sends its summed slice in
    again, and the switch copies it to every other GPU (multicast).

    Parameters
    ----------
    p : int
        GPUs, count; at least 2.

    Returns
    -------
    Schedule
        Two steps; each GPU sends ``(p+1)/p · n`` and receives ``n``. The switch is rank
        :data:`SWITCH` in the transfers and holds nothing in the holdings.

    Examples
    --------
    >>> nvls = nvls_schedule(8)
    >>> nvls.sent(0), nvls.received(0)
    (1.125, 1.0)
    """
    p = count("p", p, minimum=2)
    state = _start(p, p)
    start = _frozen(state)
    every = frozenset(range(p))
    inward = [Transfer(r, SWITCH, tuple(range(p)), 1.0) for r in range(p)]
    back = [Transfer(SWITCH, r, (r,), 1 / p) for r in range(p)]
    for r in range(p):
        state[r][r] = every
    reduced = Step("reduce in the switch", (*inward, *back), _frozen(state))
    others = [tuple(b for b in range(p) if b != r) for r in range(p)]
    inward = [Transfer(r, SWITCH, (r,), 1 / p) for r in range(p)]
    out = [Transfer(SWITCH, r, others[r], (p - 1) / p) for r in range(p)]
    state = [[every] * p for _ in range(p)]
    multicast = Step("multicast", (*inward, *out), _frozen(state))
    return Schedule("NVLS all-reduce", p, p, start, (reduced, multicast))


def torus_schedule(shape: tuple[int, int] = (4, 4)) -> Schedule:
    """A 2D torus all-reduce: ring reduce-scatters along the rows, then the columns, then
    ring all-gathers back along the columns and the rows.

    Chip ``(i, j)`` is rank ``i · columns + j``. The buffer is a grid of ``rows × columns``
    blocks, block ``(i, j)`` at index ``i · columns + j``. Along the rows chip ``(i, j)``
    keeps the blocks of column ``j``, summed over its row; along the columns, block ``(i, j)``
    alone, summed over every chip.

    Parameters
    ----------
    shape : (int, int)
        Chips along the rows and along the columns, counts; each at least 2.

    Returns
    -------
    Schedule
        ``2(columns-1) + 2(rows-1)`` steps; a chip sends ``(columns-1)/columns · n`` along its
        row and ``(rows-1)/rows · n/columns`` along its column each way: ``(1 - 1/P) · n``
        for the reduce-scatter, ``P`` the chips, as on a flat ring of ``P``.

    Examples
    --------
    >>> torus = torus_schedule((4, 4))
    >>> len(torus.steps), torus.sent(0)      # 2 · 15/16 of the buffer, in 12 steps, not 30
    (12, 1.875)
    """
    rows, columns = torus_shape(shape)
    chips = rows * columns
    state = _start(chips, chips)
    start = _frozen(state)
    along_rows = [[i * columns + j for j in range(columns)] for i in range(rows)]
    along_columns = [[i * columns + j for i in range(rows)] for j in range(columns)]
    by_column = [[[i * columns + j for i in range(rows)] for j in range(columns)]] * rows
    single = [[[i * columns + j] for i in range(rows)] for j in range(columns)]
    steps = _ring_steps(state, along_rows, by_column, reduce=True, phase="reduce-scatter, rows")
    steps += _ring_steps(state, along_columns, single, reduce=True, phase="reduce-scatter, columns")
    steps += _ring_steps(state, along_columns, single, reduce=False, phase="all-gather, columns")
    steps += _ring_steps(state, along_rows, by_column, reduce=False, phase="all-gather, rows")
    return Schedule(f"{rows} x {columns} torus all-reduce", chips, chips, start, tuple(steps))


def torus_shape(shape: object) -> tuple[int, int]:
    """``shape`` checked as a torus's ``(rows, columns)``.

    Parameters
    ----------
    shape : tuple of int
        Rows and columns of chips, counts of at least 2 each.

    Returns
    -------
    tuple of (int, int)
        The rows and the columns, as ints.
    """
    if not isinstance(shape, tuple | list) or len(shape) != 2:
        raise TypeError(
            f"`shape` must be a pair of counts (rows, columns), such as (4, 4) (got {shape!r})."
        )
    return count("shape[0]", shape[0], minimum=2), count("shape[1]", shape[1], minimum=2)


def rails_schedule(gpus_per_node: int = 8, nodes: int = 2) -> Schedule:
    """The hierarchical all-reduce over rails: GPU ``i`` of every node on rail ``i``.

    A ring reduce-scatter inside each node leaves GPU ``i`` with shard ``i`` summed over its
    node; each rail then all-reduces shard ``i`` round its nodes (a ring reduce-scatter and
    all-gather of the shard's ``nodes`` blocks); a ring all-gather inside each node finishes.
    GPU ``i`` of node ``m`` is rank ``m · gpus_per_node + i``; shard ``i`` is the blocks
    ``i · nodes`` to ``i · nodes + nodes - 1``.

    Parameters
    ----------
    gpus_per_node : int
        GPUs (and rails) per node, count; at least 2.
    nodes : int
        Nodes, count; at least 2.

    Returns
    -------
    Schedule
        Each GPU sends ``(g-1)/g · n`` over NVLink, ``2(N-1)/N · n/g`` over its rail, then
        ``(g-1)/g · n`` over NVLink again, for ``g`` GPUs per node and ``N`` nodes.

    Examples
    --------
    >>> rails = rails_schedule(8, 2)
    >>> [step.phase for step in rails.steps][6:9]
    ['reduce-scatter in the node', 'reduce-scatter on the rail', 'all-gather on the rail']
    """
    g = count("gpus_per_node", gpus_per_node, minimum=2)
    n = count("nodes", nodes, minimum=2)
    state = _start(g * n, g * n)
    start = _frozen(state)
    in_node = [[m * g + i for i in range(g)] for m in range(n)]
    shards = [[[i * n + k for k in range(n)] for i in range(g)]] * n
    rails = [[m * g + i for m in range(n)] for i in range(g)]
    parts = [[[i * n + k] for k in range(n)] for i in range(g)]
    steps = _ring_steps(state, in_node, shards, reduce=True, phase="reduce-scatter in the node")
    steps += _ring_steps(state, rails, parts, reduce=True, phase="reduce-scatter on the rail")
    steps += _ring_steps(state, rails, parts, reduce=False, phase="all-gather on the rail")
    steps += _ring_steps(state, in_node, shards, reduce=False, phase="all-gather in the node")
    name = f"hierarchical all-reduce, {n} nodes of {g} GPUs on {g} rails"
    return Schedule(name, g * n, g * n, start, tuple(steps))
