"""The collectives' schedules: what each algorithm moves, step by step, checked against the
formulas that price it (:func:`perfmodel.comms.terms`) and against the algorithm's promise
(each block summed once, every rank ending with every rank's data)."""

from __future__ import annotations

import pytest

from perfmodel import comms
from perfmodel.comms import SWITCH, terms
from perfmodel.hardware import Link

RANKS = [2, 3, 4, 5, 8]


def everyone(schedule):
    return frozenset(range(schedule.ranks))


@pytest.mark.parametrize("p", RANKS)
def test_after_the_ring_reduce_scatter_each_rank_holds_one_block_summed_over_every_rank(p):
    rs = comms.ring_schedule(p, "reduce_scatter")
    assert len(rs.steps) == p - 1
    for rank, blocks in enumerate(rs.holdings):
        held = [b for b, ranks in enumerate(blocks) if ranks]
        assert held == [rank] and blocks[rank] == everyone(rs)  # its own block, fully summed
    # every block is summed once: no two ranks finish the same one
    owners = [b for blocks in rs.holdings for b, ranks in enumerate(blocks) if ranks]
    assert sorted(owners) == list(range(p))


@pytest.mark.parametrize("p", RANKS)
def test_each_ring_step_sends_one_block_from_every_rank_to_the_next(p):
    for step in comms.ring_schedule(p).steps:
        assert sorted(t.source for t in step.transfers) == list(range(p))
        assert all(t.target == (t.source + 1) % p for t in step.transfers)
        assert all(
            len(t.blocks) == 1 and t.fraction == pytest.approx(1 / p) for t in step.transfers
        )


@pytest.mark.parametrize("p", RANKS)
@pytest.mark.parametrize("collective", ["allreduce", "reduce_scatter", "allgather"])
def test_each_rank_sends_and_receives_what_the_ring_formula_prices(p, collective):
    schedule = comms.ring_schedule(p, collective)
    factor = terms(collective, p).byte_factor  # (p-1)/p, twice for an all-reduce
    for rank in range(p):
        assert schedule.sent(rank) == pytest.approx(factor)
        assert schedule.received(rank) == pytest.approx(factor)
    assert len(schedule.steps) == terms(collective, p).latencies


def test_an_all_gather_starts_with_each_rank_s_own_block_and_ends_with_all_of_them():
    ag = comms.ring_schedule(4, "allgather")
    assert [[len(b) for b in blocks] for blocks in ag.start] == [
        [1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 1, 0], [0, 0, 0, 1],
    ]  # fmt: skip
    assert all(blocks == tuple(frozenset({b}) for b in range(4)) for blocks in ag.holdings)


@pytest.mark.parametrize("p", [2, 3, 4, 5, 6, 7, 8, 16])
def test_the_tree_takes_the_rounds_and_the_buffers_in_turn_the_formula_counts(p):
    tree = comms.tree_schedule(p)
    cost = terms("allreduce", p, "tree")
    assert len(tree.steps) == cost.latencies  # 2⌈log2 p⌉
    assert tree.critical_path() == pytest.approx(cost.byte_factor)
    reduced = tree.steps[len(tree.steps) // 2 - 1].holdings
    assert reduced[0][0] == everyone(tree)  # rank 0 holds the sum after the reduce
    assert all(blocks[0] == everyone(tree) for blocks in tree.holdings)
    # a binomial reduce: every rank but the root sends its buffer up exactly once
    ups = [t.source for step in tree.steps if step.phase == "reduce" for t in step.transfers]
    assert sorted(ups) == list(range(1, p))


@pytest.mark.parametrize("p", [2, 4, 8])
def test_nvls_sends_p_plus_one_over_p_of_the_buffer_and_receives_it_once(p):
    nvls = comms.nvls_schedule(p)
    for rank in range(p):
        assert nvls.sent(rank) == pytest.approx(terms("allreduce", p, "nvls").byte_factor)
        assert nvls.received(rank) == pytest.approx(1.0)
    first = nvls.steps[0].holdings
    assert all(first[r][r] == everyone(nvls) for r in range(p))  # its own slice summed
    assert all(t.target == SWITCH for t in nvls.steps[0].transfers if t.fraction == 1.0)
    assert all(b == everyone(nvls) for blocks in nvls.holdings for b in blocks)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3), (3, 2)])
def test_the_torus_sums_each_block_over_its_row_then_over_every_chip(shape):
    rows, columns = shape
    torus = comms.torus_schedule(shape)
    chips = rows * columns
    after_rows = torus.steps[columns - 2].holdings
    after_columns = torus.steps[columns - 1 + rows - 2].holdings
    for i in range(rows):
        for j in range(columns):
            chip = i * columns + j
            row = frozenset(range(i * columns, (i + 1) * columns))
            kept = {b for b, ranks in enumerate(after_rows[chip]) if ranks}
            assert kept == {k * columns + j for k in range(rows)}  # column j of the grid
            assert all(after_rows[chip][b] == row for b in kept)
            assert [b for b, r in enumerate(after_columns[chip]) if r] == [chip]
            assert after_columns[chip][chip] == frozenset(range(chips))
    # the same bytes as a flat ring of every chip, in fewer steps
    flat = terms("allreduce", chips)
    assert all(torus.sent(c) == pytest.approx(flat.byte_factor) for c in range(chips))
    assert len(torus.steps) == 2 * (rows - 1 + columns - 1) < flat.latencies
    assert all(b == everyone(torus) for blocks in torus.holdings for b in blocks)


@pytest.mark.parametrize(("gpus", "nodes"), [(8, 2), (4, 3), (2, 4)])
def test_the_rails_move_what_the_hierarchical_all_reduce_prices(gpus, nodes):
    rails = comms.rails_schedule(gpus, nodes)
    on_rail = sum(
        t.fraction for s in rails.steps if "rail" in s.phase for t in s.transfers if t.source == 0
    )
    in_node = rails.sent(0) - on_rail
    assert in_node == pytest.approx(2 * terms("reduce_scatter", gpus).byte_factor)
    assert on_rail == pytest.approx(terms("allreduce", nodes).byte_factor / gpus)
    # the price of those bytes: zero-latency toy links, phases end to end, at the line rate
    nvlink = Link(name="toy NVLink", kind="other", bandwidth=4e9, latency=0.0, source="a toy")
    nic = Link(name="toy NIC", kind="other", bandwidth=1e9, latency=0.0, source="a toy")
    priced = comms.hierarchical_allreduce_time(
        1e9, gpus, nodes, nvlink, nic, pipelined=False, ceiling="nameplate"
    )
    assert priced == pytest.approx(in_node * 1e9 / 4e9 + on_rail * 1e9 / 1e9)
    assert all(b == everyone(rails) for blocks in rails.holdings for b in blocks)
    for step in rails.steps:  # a rail joins GPU i of every node, nothing else
        if "rail" in step.phase:
            assert all(t.source % gpus == t.target % gpus for t in step.transfers)
        else:
            assert all(t.source // gpus == t.target // gpus for t in step.transfers)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: comms.ring_schedule(1), ValueError, r"`p` must be an integer >= 2 \(got 1\)"),
        (lambda: comms.ring_schedule(2.5), ValueError, r"`p` must be an integer \(got 2.5\)"),
        (lambda: comms.ring_schedule("4"), TypeError, r"`p` must be an integer \(got str '4'\)"),
        (lambda: comms.ring_schedule(4, "bcast"), ValueError, r"`collective` must be one of"),
        (lambda: comms.tree_schedule(0), ValueError, r"`p` must be an integer >= 2"),
        (lambda: comms.nvls_schedule(True), TypeError, r"`p` must be an integer"),
        (lambda: comms.torus_schedule((4,)), TypeError, r"`shape` must be a pair of counts"),
        (lambda: comms.torus_schedule(16), TypeError, r"`shape` must be a pair"),
        (lambda: comms.torus_schedule((1, 4)), ValueError, r"`shape\[0\]` must be an integer >= 2"),
        (lambda: comms.rails_schedule(8, 1), ValueError, r"`nodes` must be an integer >= 2"),
        (lambda: comms.rails_schedule(0, 2), ValueError, r"`gpus_per_node` must be an integer"),
    ],
)
def test_bad_input_names_the_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()
