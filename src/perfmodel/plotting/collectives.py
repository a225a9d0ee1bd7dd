"""Pictures of the collectives, step by step: a ring, a tree, NVLink SHARP, a 2D torus and
rails across nodes.

Each picture draws a :class:`perfmodel.comms.Schedule`: every rank's buffer as coloured
blocks, one colour per block, paler while a block holds few ranks' data and full once it
holds every rank's (a sum, in a reduction); letters name whose data a block holds (``a`` is
rank 0's), ``Σ`` all of them; an arrow is a message sent in that step. The byte counts in
the titles come from :func:`perfmodel.comms.terms`, the formulas that price the collectives.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import matplotlib.pyplot as plt
from matplotlib.colors import to_rgb
from matplotlib.patches import FancyArrowPatch, Rectangle

from perfmodel._validate import choice, count
from perfmodel.comms import (
    SWITCH,
    Schedule,
    Step,
    nvls_schedule,
    rails_schedule,
    ring_schedule,
    terms,
    torus_schedule,
    tree_schedule,
)
from perfmodel.comms.schedules import RING_COLLECTIVES, torus_shape
from perfmodel.plotting import COLOURS, style

__all__ = [
    "KEY",
    "block_colour",
    "contributors_label",
    "nvls_plot",
    "rails_plot",
    "ring_plot",
    "times_n",
    "torus_plot",
    "tree_plot",
]

#: How to read a block, under every picture.
KEY = (
    "letters: whose data a block holds, summed (a is rank 0's); Σ: every rank's\n"
    "dashed: none (handed on, or yet to come); arrows: what is sent"
)
#: The most ranks a picture draws legibly from the back row.
MOST_RANKS = 8
_WORDS = {"allreduce": "all-reduce", "reduce_scatter": "reduce-scatter", "allgather": "all-gather"}
#: One colour per block: the house cycle and a pink, for eight blocks.
_PALETTE = (*COLOURS, "#e377c2")
_ARROW = {"arrowstyle": "-|>", "mutation_scale": 20, "linewidth": 2.2, "color": "black"}


def ranks_to_draw(name: str, value: object, most: int = MOST_RANKS) -> int:
    """``value`` checked as a count of ranks a picture can draw: from 2 to ``most``."""
    return count(name, value, minimum=2, maximum=most)


def block_colour(index: int, held: int, ranks: int) -> tuple[float, float, float]:
    """The colour of a block: its own from the house cycle, pale to full as it sums more ranks.

    Parameters
    ----------
    index : int
        The block's index in the buffer, count.
    held : int
        How many ranks' data the block holds summed, count (0: nothing).
    ranks : int
        Ranks in the collective, count.

    Returns
    -------
    tuple of float
        RGB, each a fraction: the block's colour mixed with white so that one rank's data
        is pale and all of them full; white when it holds nothing.
    """
    if held == 0:
        return (1.0, 1.0, 1.0)
    strength = 0.25 + 0.75 * (held - 1) / max(ranks - 1, 1)
    return tuple(1 - strength * (1 - c) for c in to_rgb(_PALETTE[index % len(_PALETTE)]))  # type: ignore[return-value]


def contributors_label(ranks: frozenset[int], total: int) -> str:
    """Whose data a block holds, as the picture labels it.

    Parameters
    ----------
    ranks : frozenset of int
        The ranks whose data the block holds, summed.
    total : int
        Ranks in the collective, count.

    Returns
    -------
    str
        ``"ab"`` (a's and b's), ``"e–h"`` for a run of four or more, ``"Σ"`` for all
        ``total`` ranks, ``""`` for none.
    """
    if not ranks:
        return ""
    if len(ranks) == total:
        return "Σ"
    ordered = sorted(ranks)
    letters = [chr(ord("a") + r) for r in ordered]
    if len(ordered) >= 4 and ordered[-1] - ordered[0] == len(ordered) - 1:
        return f"{letters[0]}–{letters[-1]}"
    return "".join(letters)


def times_n(factor: float) -> str:
    """A byte factor written as a multiple of the buffer.

    Parameters
    ----------
    factor : float
        Bytes over the buffer's n, dimensionless.

    Returns
    -------
    str
        ``1.75n``, ``0.125n``...
    """
    return f"{factor:.4g}n"


def _block(
    ax: Any,
    corner: tuple[float, float],
    size: tuple[float, float],
    where: tuple[int, int],
    held: frozenset[int],
    ranks: int,
    *,
    text: bool = True,
) -> None:
    """Block ``where = (rank, index)`` of a buffer, tagged ``"rank:index:held"`` for the tests."""
    colour = block_colour(where[1], len(held), ranks)
    box = Rectangle(
        corner, *size, facecolor=colour, edgecolor="black" if held else "#999999",
        linewidth=2.4 if len(held) == ranks else 0.8, linestyle="-" if held else "--",
    )  # fmt: skip
    box.set_gid(f"{where[0]}:{where[1]}:{len(held)}")
    ax.add_patch(box)
    if text:
        dark = 0.299 * colour[0] + 0.587 * colour[1] + 0.114 * colour[2] < 0.5
        middle = (corner[0] + size[0] / 2, corner[1] + size[1] / 2)
        ax.text(*middle, contributors_label(held, ranks), ha="center", va="center", fontsize=15,
                color="white" if dark else "black")  # fmt: skip


def _arrow(ax: Any, start: tuple[float, float], end: tuple[float, float], **options: Any) -> None:
    ax.add_patch(FancyArrowPatch(start, end, **{**_ARROW, **options}))


def _blank(ax: Any, width: tuple[float, float], height: tuple[float, float]) -> None:
    ax.set_xlim(*width)
    ax.set_ylim(*height)
    ax.set_axis_off()


def ring_plot(p: int = 4, collective: str = "allreduce") -> Any:
    """A ring collective on ``p`` ranks, step by step: one panel per step.

    Each panel shows every rank's buffer, its ``p`` blocks stacked, after the step, and an
    arrow for each block sent in it: rank ``r`` to rank ``r+1``, the last rank's arrow
    leaving on the right and coming back in on the left. A reduce-scatter adds what arrives
    to the block there, so sums grow until rank ``r`` holds block ``r`` summed over every
    rank; an all-gather copies each finished block on round the ring.

    Parameters
    ----------
    p : int
        Ranks, count; from 2 to 6.
    collective : {"allreduce", "reduce_scatter", "allgather"}
        Which collective; an all-reduce is a reduce-scatter then an all-gather, one row each.

    Returns
    -------
    matplotlib.figure.Figure
        The start and each step, one panel each, four to a row (fewer for fewer ranks); the
        title gives the bytes
        each rank sends, from :func:`perfmodel.comms.terms`.
    """
    p = ranks_to_draw("p", p, most=6)
    collective = choice("collective", collective, RING_COLLECTIVES)
    schedule = ring_schedule(p, collective)
    sent = terms(collective, p).byte_factor
    formula = "2(p−1)/p · n" if collective == "allreduce" else "(p−1)/p · n"
    phases = 2 if collective == "allreduce" else 1
    title = (
        f"Ring {_WORDS[collective]} on p = {p} ranks: {phases * (p - 1)} "
        f"step{'' if phases * (p - 1) == 1 else 's'}, each rank "
        f"sending one block of n/p to the next\neach rank sends {formula} = {times_n(sent)}"
    )
    if collective == "allreduce":
        title += ": a reduce-scatter, then an all-gather"
    panels: list[tuple[str, Step | None]] = [("start", None)]
    numbered = {"reduce-scatter": 0, "all-gather": 0}
    for step in schedule.steps:
        numbered[step.phase] += 1
        panels.append((f"{step.phase} {numbered[step.phase]}", step))
    with style():
        across = min(p, 4)  # panels to a row; a wider ring gets wider panels
        rows = -(-len(panels) // across)
        figure, axes = plt.subplots(
            rows, across, figsize=(max(12.0, across * (0.875 * max(p, 4) + 0.3)),
                                   rows * (0.875 * max(p, 4) + 0.6) + 1.2),
            layout="constrained", squeeze=False,
        )  # fmt: skip
        for ax, (name, shown) in zip(axes.flat, panels, strict=False):
            _ring_panel(ax, schedule, shown)
            ax.set_title(name, fontsize=15)
        for ax in axes.flat[len(panels) :]:
            ax.set_axis_off()
        figure.suptitle(title)
        figure.supxlabel(KEY, fontsize=13)
    return figure


def _ring_panel(ax: Any, schedule: Schedule, step: Step | None) -> None:
    p = schedule.ranks
    holdings = schedule.start if step is None else step.holdings
    gap = 0.3  # between ranks' columns; arrows cross it
    _blank(ax, (-0.12, p + 0.12), (-0.6, p))
    for rank in range(p):
        for index in range(p):
            corner = (rank + gap / 2, p - 1 - index + 0.06)
            _block(ax, corner, (1 - gap, 0.88), (rank, index), holdings[rank][index], p)
        name = f"rank {rank}" if p <= 4 else str(rank)  # a narrow column takes only the number
        ax.text(rank + 0.5, -0.3, name, ha="center", va="center", fontsize=13)
    for transfer in step.transfers if step is not None else ():
        y = p - 1 - transfer.blocks[0] + 0.5
        if transfer.target == transfer.source + 1:
            _arrow(ax, (transfer.source + 1 - gap / 2, y), (transfer.target + gap / 2, y))
        else:  # the ring closes: out on the right, back in on the left
            ax.plot([p - gap / 2, p + 0.12], [y, y], color="black", linewidth=2.2)
            _arrow(ax, (-0.12, y), (gap / 2, y))


def tree_plot(p: int = 8) -> Any:
    """A binomial-tree all-reduce on ``p`` ranks: reduce up the tree to rank 0, broadcast
    back down, each edge numbered with the round that uses it.

    Parameters
    ----------
    p : int
        Ranks, count; from 2 to 16.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels, the reduce and the broadcast, each showing what every rank holds at its
        end; the title gives the buffers on the critical path, from
        :func:`perfmodel.comms.terms`, beside the ring's.
    """
    p = ranks_to_draw("p", p, most=16)
    schedule = tree_schedule(p)
    rounds = len(schedule.steps) // 2
    tree, ring = terms("allreduce", p, "tree"), terms("allreduce", p)
    title = (
        f"Binomial-tree all-reduce on p = {p} ranks: 2⌈log₂ p⌉ = {tree.latencies} rounds one "
        f"after another, each moving a whole buffer n:\n2⌈log₂ p⌉ · n = "
        f"{times_n(tree.byte_factor)} crosses the links in turn (the ring: 2(p−1)/p · n = "
        f"{times_n(ring.byte_factor)}, in {ring.latencies} steps)"
    )
    depth = {r: bin(r).count("1") for r in range(p)}  # a rank's parent clears its lowest bit
    with style():
        figure, axes = plt.subplots(
            1, 2, figsize=(max(16, 1.9 * p), 2.2 + 1.5 * max(depth.values())), layout="constrained"
        )
        for ax, phase, first in ((axes[0], "reduce", 0), (axes[1], "broadcast", rounds)):
            steps = schedule.steps[first : first + rounds]
            _tree_panel(ax, schedule, steps, depth, first)
            where = "to rank 0" if phase == "reduce" else "from rank 0"
            ax.set_title(f"{phase}: rounds {first + 1}–{first + rounds}, {where}", fontsize=15)
        figure.suptitle(title)
        figure.supxlabel(
            KEY.split("\n")[0] + "\narrows: a whole buffer sent; circled: in which round",
            fontsize=13,
        )
    return figure


def _tree_panel(
    ax: Any, schedule: Schedule, steps: Sequence[Step], depth: dict[int, int], first: int
) -> None:
    p = schedule.ranks
    deepest = max(depth.values())
    _blank(ax, (-0.5, p - 0.5), (-deepest - 0.4, 0.75))
    place = {r: (float(r), -float(depth[r])) for r in range(p)}
    half_w, half_h = 0.36, 0.2
    for number, step in enumerate(steps, start=first + 1):
        for transfer in step.transfers:
            (x0, y0), (x1, y1) = place[transfer.source], place[transfer.target]
            _arrow(ax, (x0, y0), (x1, y1), shrinkA=24, shrinkB=24)
            t = 0.4 if y0 < y1 else 0.6  # nearer the child: edges meet at the parent
            circle = {"boxstyle": "circle", "facecolor": "white"}
            ax.text(x0 + t * (x1 - x0), y0 + t * (y1 - y0), str(number), ha="center",
                    va="center", fontsize=13, bbox=circle)  # fmt: skip
    for rank, (x, y) in place.items():
        corner, size = (x - half_w, y - half_h), (2 * half_w, 2 * half_h)
        _block(ax, corner, size, (rank, 0), steps[-1].holdings[rank][0], p)
        ax.text(x, 0.55, f"rank {rank}", ha="center", va="center", fontsize=13)


def nvls_plot(p: int = 8) -> Any:
    """NVLink SHARP's all-reduce on ``p`` GPUs: the switch sums, then multicasts.

    Parameters
    ----------
    p : int
        GPUs, count; from 2 to 8.

    Returns
    -------
    matplotlib.figure.Figure
        Two panels, one per step, each GPU's buffer drawn as ``p`` slices with its arrows to
        and from the switch labelled in bytes; the title gives what each GPU sends and
        receives, from :func:`perfmodel.comms.terms`, beside the ring's.
    """
    p = ranks_to_draw("p", p)
    schedule = nvls_schedule(p)
    nvls, ring = terms("allreduce", p, "nvls"), terms("allreduce", p)
    title = (
        f"NVLink SHARP (NVLS) all-reduce on p = {p} GPUs: the switch adds, in {nvls.latencies} "
        f"steps\neach GPU sends (p+1)/p · n = {times_n(nvls.byte_factor)} and receives n "
        f"(the ring: 2(p−1)/p · n = {times_n(ring.byte_factor)} each way, in {ring.latencies})"
    )
    captions = (
        "1. each GPU sends its whole buffer; the switch sums each slice and returns slice i "
        "to GPU i",
        "2. each GPU sends its summed slice back in; the switch copies it to every other GPU",
    )
    with style():
        figure, axes = plt.subplots(2, 1, figsize=(16, 8), layout="constrained")
        for ax, step, caption in zip(axes, schedule.steps, captions, strict=True):
            _nvls_panel(ax, schedule, step)
            ax.set_title(caption, fontsize=15)
        figure.suptitle(title)
        figure.supxlabel(
            "a GPU's buffer as its p slices, coloured by slice: pale holds one GPU's data, "
            "full the sum of all; arrows: what is sent",
            fontsize=13,
        )
    return figure


def _nvls_panel(ax: Any, schedule: Schedule, step: Step) -> None:
    p = schedule.ranks
    _blank(ax, (0, p), (-0.35, 3.1))
    ax.add_patch(Rectangle((0.05, 2.35), p - 0.1, 0.6, facecolor="#dddddd", edgecolor="black"))
    ax.text(p / 2, 2.65, "NVSwitch", ha="center", va="center", fontsize=15)
    cell = 0.84 / p
    for rank in range(p):
        for index in range(p):
            corner = (rank + 0.08 + index * cell, 0.2)
            _block(ax, corner, (cell, 0.45), (rank, index), step.holdings[rank][index], p,
                   text=False)  # fmt: skip
        ax.text(rank + 0.5, -0.12, f"GPU {rank}", ha="center", va="center", fontsize=13)
    for transfer in step.transfers:
        upward = transfer.target == SWITCH
        rank = transfer.source if upward else transfer.target
        x = rank + (0.3 if upward else 0.7)
        start, end = ((x, 0.7), (x, 2.3)) if upward else ((x, 2.3), (x, 0.7))
        _arrow(ax, start, end)
        share = round(transfer.fraction * p)
        label = "n" if share == p else f"{'' if share == 1 else share}n/{p}"
        ax.text(x + (-0.06 if upward else 0.06), 1.5, label, ha="right" if upward else "left",
                va="center", fontsize=13)  # fmt: skip


def torus_plot(shape: tuple[int, int] = (4, 4)) -> Any:
    """A 2D torus all-reduce's reduce-scatter: round each row's ring, then each column's.

    Each chip's buffer is drawn as a grid of ``rows × columns`` blocks. Round the rows, chip
    ``(i, j)`` keeps column ``j`` of the grid, summed over its row; round the columns, block
    ``(i, j)`` alone, summed over every chip. The all-gathers that finish the all-reduce run
    the same rings backwards.

    Parameters
    ----------
    shape : (int, int)
        Chips along the rows and along the columns, counts; each from 2 to 6.

    Returns
    -------
    matplotlib.figure.Figure
        Three panels, the start and after each ring, arrows on the links each used; the
        titles give the bytes each chip sends, from :func:`perfmodel.comms.terms`.
    """
    rows, columns = torus_shape(shape)
    rows, columns = ranks_to_draw("shape[0]", rows, 6), ranks_to_draw("shape[1]", columns, 6)
    schedule = torus_schedule((rows, columns))
    chips = rows * columns
    along_row = terms("reduce_scatter", columns).byte_factor
    along_column = terms("reduce_scatter", rows).byte_factor / columns
    flat = terms("reduce_scatter", chips)
    title = (
        f"2D torus all-reduce on {rows} × {columns} chips (the JAX scaling book's picture): a "
        f"reduce-scatter round the rows, then the columns;\neach chip sends (1 − 1/P) · n = "
        f"{times_n(along_row + along_column)}, as on a flat ring of P = {chips}, in "
        f"{columns - 1 + rows - 1} steps, not {flat.latencies}; all-gathers undo it in reverse"
    )
    row_steps, column_steps = columns - 1, rows - 1
    after_rows = schedule.steps[row_steps - 1]
    after_columns = schedule.steps[row_steps + column_steps - 1]
    panels = (
        ("start: every chip holds all of n", schedule.start, None),
        (
            f"1. round each row: c − 1 = {row_steps} steps,\n(c−1)/c · n = "
            f"{times_n(along_row)} sent per chip",
            after_rows.holdings,
            "rows",
        ),
        (
            f"2. round each column: r − 1 = {column_steps} steps,\n(r−1)/r · n/c = "
            f"{times_n(along_column)} sent per chip",
            after_columns.holdings,
            "columns",
        ),
    )
    with style():
        figure, axes = plt.subplots(
            1, 3, figsize=(17, 2.4 + 5.0 * rows / columns), layout="constrained"
        )
        for ax, (caption, holdings, ring) in zip(axes, panels, strict=True):
            _torus_panel(ax, (rows, columns), holdings, ring)
            ax.set_title(caption, fontsize=15)
        figure.suptitle(title)
        figure.supxlabel(
            f"each chip's buffer as a {rows} × {columns} grid of blocks, pale to full: summed over "
            "one to every chip; dashed: handed on; arrows: the rings used (one way drawn)",
            fontsize=13,
        )
    return figure


def _torus_panel(
    ax: Any, shape: tuple[int, int], holdings: Sequence[Sequence[frozenset[int]]], ring: str | None
) -> None:
    rows, columns = shape
    pitch, size = 1.45, 1.0
    _blank(ax, (-0.4, columns * pitch - 0.05), (-0.4, rows * pitch - 0.05))
    ax.set_aspect("equal")
    chips = rows * columns
    for i in range(rows):
        for j in range(columns):
            x0, y0 = j * pitch, (rows - 1 - i) * pitch
            rank = i * columns + j
            for b in range(chips):
                bi, bj = divmod(b, columns)
                corner = (x0 + bj * size / columns, y0 + (rows - 1 - bi) * size / rows)
                cell = (size / columns, size / rows)
                held = holdings[rank][b]
                _block(ax, corner, cell, (rank, bj), held, chips, text=False)
            if ring == "rows":
                y = y0 + size / 2
                end = x0 + size + pitch - size if j < columns - 1 else x0 + size + 0.35
                _arrow(ax, (x0 + size, y), (end, y), shrinkA=0, shrinkB=0)
                if j == 0:
                    ax.plot([-0.4, x0], [y, y], color="black", linewidth=2.2)
            elif ring == "columns":
                x = x0 + size / 2
                end = y0 - (pitch - size) if i < rows - 1 else y0 - 0.35
                _arrow(ax, (x, y0), (x, end), shrinkA=0, shrinkB=0)
                if i == 0:
                    ax.plot([x, x], [y0 + size, rows * pitch - 0.05], color="black", linewidth=2.2)


def rails_plot(gpus_per_node: int = 8, nodes: int = 2) -> Any:
    """The hierarchical all-reduce over rails: GPU ``i`` of every node joined by rail switch
    ``i``; a reduce-scatter inside each node, an all-reduce on each rail, an all-gather inside
    each node.

    Parameters
    ----------
    gpus_per_node : int
        GPUs (and rails) per node, count; from 2 to 8.
    nodes : int
        Nodes, count; from 2 to 4.

    Returns
    -------
    matplotlib.figure.Figure
        Three panels, one per phase, each showing every GPU's buffer as ``gpus_per_node``
        shards after it, the links it used drawn heavy; the titles give the bytes each GPU
        sends, from :func:`perfmodel.comms.terms`.
    """
    g = ranks_to_draw("gpus_per_node", gpus_per_node)
    n = ranks_to_draw("nodes", nodes, most=4)
    schedule = rails_schedule(g, n)
    inside = terms("reduce_scatter", g).byte_factor
    rail = terms("allreduce", n).byte_factor / g
    title = (
        f"Hierarchical all-reduce over rails: {n} nodes of {g} GPUs, GPU i of every node on "
        f"rail switch i;\neach GPU sends 2 · (g−1)/g · n = {times_n(2 * inside)} over NVLink, "
        f"and only 2(N−1)/N · n/g = {times_n(rail)} over its rail"
    )
    ends = [0]
    for phase in ("reduce-scatter in the node", "all-gather on the rail", "all-gather in the node"):
        ends.append(max(k for k, step in enumerate(schedule.steps) if step.phase == phase))
    captions = (
        f"1. inside each node, over NVLink: a ring reduce-scatter, (g−1)/g · n = "
        f"{times_n(inside)}; GPU i keeps shard i, summed over its node",
        f"2. on each rail, across the nodes: a ring all-reduce of shard i, 2(N−1)/N · n/g = "
        f"{times_n(rail)}",
        f"3. inside each node, over NVLink: a ring all-gather, (g−1)/g · n = {times_n(inside)}",
    )
    with style():
        figure, axes = plt.subplots(3, 1, figsize=(16, 3 * (1.1 * n + 1.6)), layout="constrained")
        for number, (ax, caption) in enumerate(zip(axes, captions, strict=True)):
            holdings = schedule.steps[ends[number + 1]].holdings
            _rails_panel(ax, (g, n), holdings, heavy="rails" if number == 1 else "nodes")
            ax.set_title(caption, fontsize=15)
        figure.suptitle(title)
        figure.supxlabel(
            "each GPU's buffer as its g shards, pale to full: summed over one to every GPU; "
            "dashed: handed on; heavy lines: the links used",
            fontsize=13,
        )
    return figure


def _rails_panel(
    ax: Any, shape: tuple[int, int], holdings: Sequence[Sequence[frozenset[int]]], heavy: str
) -> None:
    g, n = shape
    pitch, width, height = 1.0, 0.72, 0.5
    _blank(ax, (-1.0, g * pitch + 0.3), (-0.95, n * 1.1 + 0.25))
    thick: dict[str, Any] = {"linewidth": 3.0, "color": "black"}
    thin: dict[str, Any] = {"linewidth": 1.0, "color": "#999999"}
    for m in range(n):
        y0 = (n - 1 - m) * 1.1 + 0.1
        edge = thick if heavy == "nodes" else thin
        ax.add_patch(
            Rectangle((-0.08, y0 - 0.12), g * pitch - 0.06, height + 0.24, facecolor="none",
                      edgecolor=edge["color"], linewidth=edge["linewidth"])
        )  # fmt: skip
        ax.text(-0.16, y0 + height / 2, f"node {m}", ha="right", va="center", fontsize=13)
        for i in range(g):
            rank = m * g + i
            x0 = i * pitch
            for shard in range(g):
                blocks = range(shard * n, shard * n + n)
                held = frozenset.intersection(*(holdings[rank][b] for b in blocks))
                corner = (x0 + shard * width / g, y0)
                _block(ax, corner, (width / g, height), (rank, shard), held, g * n, text=False)
            ax.add_patch(Rectangle((x0 - 0.03, y0 - 0.05), width + 0.06, height + 0.1,
                                   facecolor="none", edgecolor="black", linewidth=1.2))  # fmt: skip
            if m == 0:
                ax.text(x0 + width / 2, y0 + height + 0.3, f"GPU {i}", ha="center",
                        va="center", fontsize=13)  # fmt: skip
            line = thick if heavy == "rails" else thin
            ax.plot([x0 + width + 0.03, x0 + width + 0.12], [y0 + height / 2] * 2, **line)
    for i in range(g):
        x = i * pitch + width + 0.12
        line = thick if heavy == "rails" else thin
        ax.plot([x, x], [(n - 1) * 1.1 + 0.1 + height / 2, -0.45], **line)
        ax.add_patch(Rectangle((x - 0.4, -0.85), 0.8, 0.4, facecolor="#dddddd",
                               edgecolor="black"))  # fmt: skip
        ax.text(x, -0.65, f"rail {i}", ha="center", va="center", fontsize=13)
