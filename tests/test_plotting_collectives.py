"""The pictures of the collectives draw their schedules, title them with the formulas that
price them, and can be read from the back row: no figure-audit problem, no text smaller than
12 points, cut by the edge, overlapping another or spilling out of its box."""

from __future__ import annotations

import re

import matplotlib

matplotlib.use("agg")

import pytest  # noqa: E402
from figure_audit import crowded, problems  # noqa: E402
from matplotlib.patches import FancyArrowPatch  # noqa: E402

from perfmodel import comms  # noqa: E402
from perfmodel.comms import terms  # noqa: E402
from perfmodel.plotting import nvls_plot, rails_plot, ring_plot, torus_plot, tree_plot  # noqa: E402
from perfmodel.plotting.collectives import block_colour, contributors_label  # noqa: E402

DRAWINGS = {
    "ring 4": lambda: ring_plot(4),
    "ring 6": lambda: ring_plot(6),
    "reduce-scatter 3": lambda: ring_plot(3, "reduce_scatter"),
    "all-gather 2": lambda: ring_plot(2, "allgather"),
    "tree 8": lambda: tree_plot(8),
    "tree 16": lambda: tree_plot(16),
    "nvls 8": lambda: nvls_plot(8),
    "nvls 2": lambda: nvls_plot(2),
    "torus 4x4": lambda: torus_plot((4, 4)),
    "torus 2x3": lambda: torus_plot((2, 3)),
    "torus 6x6": lambda: torus_plot((6, 6)),
    "rails 8x2": lambda: rails_plot(8, 2),
    "rails 8x4": lambda: rails_plot(8, 4),
}


@pytest.mark.parametrize("name", DRAWINGS)
def test_every_picture_reads_from_the_back_row(name):
    figure = DRAWINGS[name]()
    assert problems(figure) == []
    assert crowded(figure, smallest=12) == []


def title(figure):
    return figure.get_suptitle()


def multiples(text):
    """The byte counts a title gives after an equals sign, as multiples of n."""
    return [float(x) for x in re.findall(r"= (\d+(?:\.\d+)?)n\b", text)]


def blocks(ax):
    """What each drawn block holds, by (rank, index): the count of ranks summed in it."""
    found = {}
    for patch in ax.patches:
        if patch.get_gid():
            rank, index, held = map(int, patch.get_gid().split(":"))
            found[rank, index] = held
    return found


def arrows(ax):
    return [p for p in ax.patches if isinstance(p, FancyArrowPatch)]


@pytest.mark.parametrize("p", [3, 4, 5])
def test_the_ring_draws_each_step_of_its_schedule_and_titles_it_with_the_formula(p):
    figure = ring_plot(p)
    schedule = comms.ring_schedule(p)
    panels = [ax for ax in figure.axes if ax.get_title()]
    assert [ax.get_title() for ax in panels][:2] == ["start", "reduce-scatter 1"]
    assert len(panels) == 1 + len(schedule.steps)
    states = [schedule.start, *(step.holdings for step in schedule.steps)]
    for ax, state in zip(panels, states, strict=True):
        drawn = blocks(ax)
        assert drawn == {(r, b): len(state[r][b]) for r in range(p) for b in range(p)}
    assert arrows(panels[0]) == []
    for ax, step in zip(panels[1:], schedule.steps, strict=True):
        assert len(arrows(ax)) == len(step.transfers) == p  # one block from every rank
    # after the reduce-scatter each rank's own block, and only that, is every rank's sum
    after = blocks(panels[p - 1])
    assert {key for key, held in after.items() if held} == {(r, r) for r in range(p)}
    assert all(after[r, r] == p for r in range(p))
    assert multiples(title(figure)) == [pytest.approx(terms("allreduce", p).byte_factor, 1e-3)]
    assert "2(p−1)/p · n" in title(figure)


@pytest.mark.parametrize("collective", ["reduce_scatter", "allgather"])
def test_one_ring_phase_titles_its_bytes_from_the_formula(collective):
    figure = ring_plot(4, collective)
    assert multiples(title(figure)) == [pytest.approx(terms(collective, 4).byte_factor)]
    assert "(p−1)/p · n" in title(figure) and "3 steps" in title(figure)


def test_the_tree_draws_each_round_and_titles_the_buffers_in_turn():
    figure = tree_plot(8)
    schedule = comms.tree_schedule(8)
    reduce, broadcast = figure.axes
    assert len(arrows(reduce)) == len(arrows(broadcast)) == 7  # every rank but the root, once
    circled = sorted(int(t.get_text()) for t in reduce.texts if t.get_text().isdigit())
    assert circled == [1, 1, 1, 1, 2, 2, 3]  # four sends, then two, then one
    assert blocks(reduce) == {(r, 0): len(schedule.steps[2].holdings[r][0]) for r in range(8)}
    assert blocks(reduce)[0, 0] == 8 and blocks(reduce)[4, 0] == 4
    assert set(blocks(broadcast).values()) == {8}
    tree, ring = terms("allreduce", 8, "tree"), terms("allreduce", 8)
    assert multiples(title(figure)) == [tree.byte_factor, ring.byte_factor]
    assert f"= {tree.latencies} rounds" in title(figure)


def test_nvls_draws_an_arrow_each_way_per_gpu_labelled_with_its_bytes():
    figure = nvls_plot(8)
    for ax in figure.axes:
        assert len(arrows(ax)) == 16
    labels = [sorted(t.get_text() for t in ax.texts if "n" in t.get_text()) for ax in figure.axes]
    assert labels == [["n"] * 8 + ["n/8"] * 8, ["7n/8"] * 8 + ["n/8"] * 8]
    assert set(blocks(figure.axes[1]).values()) == {8}
    sent = multiples(title(figure))
    assert sent == [terms("allreduce", 8, "nvls").byte_factor, terms("allreduce", 8).byte_factor]


def test_the_torus_draws_each_chip_keeping_its_column_then_its_own_block():
    figure = torus_plot((4, 4))
    start, rows, columns = figure.axes
    assert set(blocks(start).values()) == {1}
    assert len(arrows(start)) == 0 and len(arrows(rows)) == len(arrows(columns)) == 16
    row_kept = {key: held for key, held in _chip_blocks(rows).items() if held}
    assert row_kept == {
        (i * 4 + j, k * 4 + j): 4 for i in range(4) for j in range(4) for k in range(4)
    }
    column_kept = {key: held for key, held in _chip_blocks(columns).items() if held}
    assert column_kept == {(chip, chip): 16 for chip in range(16)}
    parts = multiples(" ".join(ax.get_title() for ax in figure.axes) + " " + title(figure))
    along_rows = terms("reduce_scatter", 4).byte_factor
    assert parts == [along_rows, along_rows / 4, terms("reduce_scatter", 16).byte_factor]


def _chip_blocks(ax):
    """A torus panel's blocks by (chip, block index): the gid's index is the grid column, so
    each chip's blocks are read in the order they were drawn."""
    found, seen = {}, {}
    for patch in ax.patches:
        if patch.get_gid():
            chip, _, held = map(int, patch.get_gid().split(":"))
            index = seen.get(chip, 0)
            seen[chip] = index + 1
            found[chip, index] = held
    return found


def test_the_rails_title_each_phase_with_the_hierarchical_formula():
    figure = rails_plot(8, 2)
    inside, rail = terms("reduce_scatter", 8).byte_factor, terms("allreduce", 2).byte_factor / 8
    captions = [multiples(ax.get_title()) for ax in figure.axes]
    assert captions == [[inside], [rail], [inside]]
    assert multiples(title(figure)) == [2 * inside, rail]
    first, second, third = (blocks(ax) for ax in figure.axes)
    assert {k for k, held in first.items() if held} == {
        (m * 8 + i, i) for m in range(2) for i in range(8)
    }
    assert set(v for v in first.values() if v) == {8}  # summed over its node
    assert set(v for v in second.values() if v) == {16}  # summed over every GPU
    assert set(third.values()) == {16}


def test_a_block_is_labelled_with_whose_data_it_holds_and_coloured_by_how_many():
    assert contributors_label(frozenset(), 4) == ""
    assert contributors_label(frozenset({1, 2}), 4) == "bc"
    assert contributors_label(frozenset({4, 5, 6, 7}), 8) == "e–h"
    assert contributors_label(frozenset(range(4)), 4) == "Σ"
    pale, full = block_colour(0, 1, 4), block_colour(0, 4, 4)
    assert block_colour(0, 0, 4) == (1.0, 1.0, 1.0) and sum(full) < sum(pale) < 3.0


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: ring_plot(1), ValueError, r"`p` must be an integer from 2 to 6 \(got 1\)"),
        (lambda: ring_plot(7), ValueError, r"`p` must be an integer from 2 to 6 \(got 7\)"),
        (lambda: ring_plot(4.5), ValueError, r"`p` must be an integer \(got 4.5\)"),
        (lambda: ring_plot("4"), TypeError, r"`p` must be an integer"),
        (lambda: ring_plot(4, "all_reduce"), ValueError, r"`collective` must be one of"),
        (lambda: tree_plot(17), ValueError, r"`p` must be an integer from 2 to 16"),
        (lambda: nvls_plot(9), ValueError, r"`p` must be an integer from 2 to 8"),
        (lambda: torus_plot((4, 4, 4)), TypeError, r"`shape` must be a pair of counts"),
        (lambda: torus_plot((4, 7)), ValueError, r"`shape\[1\]` must be an integer from 2 to 6"),
        (lambda: rails_plot(8, 5), ValueError, r"`nodes` must be an integer from 2 to 4"),
        (lambda: rails_plot(1, 2), ValueError, r"`gpus_per_node` must be an integer"),
    ],
)
def test_bad_input_names_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()
