"""Task graphs: the compendium's dependences, work and span, Brent's bounds, and a greedy
schedule checked for every invariant a schedule must keep, on random graphs."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel.taskgraph import TaskGraph, brent_bounds


def test_the_compendiums_data_dependence():
    # A = C*D; E = A*G; F = B*C: E waits for A; F is independent of both.
    g = TaskGraph({"A = C·D": 1, "E = A·G": 1, "F = B·C": 1}, [("A = C·D", "E = A·G")])
    assert (g.work, g.span, g.parallelism) == (3, 2, 1.5)
    assert g.critical_path == ("A = C·D", "E = A·G")
    assert g.schedule(1).makespan == 3 and g.schedule(2).makespan == 2
    assert g.schedule(8).makespan == 2  # more workers than the parallelism buy nothing


def test_the_compendiums_control_dependence():
    g = TaskGraph(
        {"X = C·D": 1, "test A": 0.5, "Y = E·F": 1},
        [("test A", "Y = E·F", "control")],
    )
    assert g.edge_kinds[("test A", "Y = E·F")] == "control"
    schedule = g.schedule(2)
    y = next(s for s in schedule.slots if s.task == "Y = E·F")
    assert y.start == 0.5  # Y waits until the branch is decided


def test_one_multiplier_is_a_structural_hazard():
    g = TaskGraph({"X = A·B": 1, "Y = C·D": 1}, resources={"X = A·B": "mul", "Y = C·D": "mul"})
    assert g.span == 1 and g.schedule(2).makespan == 2
    assert g.schedule(2, units={"mul": 2}).makespan == 1


@st.composite
def dags(draw):
    n = draw(st.integers(1, 12))
    times = draw(st.lists(st.integers(1, 9), min_size=n, max_size=n))
    edges = [
        (u, v) for v in range(n) for u in range(v) if draw(st.booleans()) and draw(st.booleans())
    ]
    return TaskGraph(
        {f"t{i}": t for i, t in enumerate(times)}, [(f"t{u}", f"t{v}") for u, v in edges]
    )


@settings(max_examples=150, deadline=None)
@given(dags(), st.integers(1, 6))
def test_a_greedy_schedule_is_valid_and_within_brents_bounds(g, p):
    schedule = g.schedule(p)
    assert sorted(s.task for s in schedule.slots) == sorted(g.names)
    end = {s.task: s.end for s in schedule.slots}
    for s in schedule.slots:
        assert s.end - s.start == pytest.approx(g.times[g.names.index(s.task)])
        for u, v in g.edges:
            if v == s.task:
                assert s.start >= end[u] - 1e-12  # never before what it waits for
    for worker in range(p):
        mine = sorted((s.start, s.end) for s in schedule.slots if s.worker == worker)
        assert all(
            a_end <= b_start + 1e-12
            for (_, a_end), (b_start, _) in zip(mine, mine[1:], strict=False)
        )
    low, high = g.bounds(p)
    assert low - 1e-9 <= schedule.makespan <= high + 1e-9
    assert 0 < schedule.utilization <= 1 + 1e-12


@given(dags())
def test_one_worker_takes_the_work_and_many_take_the_span(g):
    assert g.schedule(1).makespan == pytest.approx(g.work)
    assert g.schedule(len(g.names)).makespan == pytest.approx(g.span)


def test_brents_bounds():
    assert brent_bounds(12, 3, 4) == (3, 6)
    assert brent_bounds(12, 3, 1) == (12, 15)


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: TaskGraph({}), ValueError, "`tasks` must hold at least one task (got {})"),
        (lambda: TaskGraph([1.0]), TypeError, "`tasks` must be a mapping of name -> time"),
        (lambda: TaskGraph({"a": -1}), ValueError, "`tasks['a']` must be a non-negative"),
        (lambda: TaskGraph({"a": 1}, [("a", "b")]), ValueError, "names 'b', which is not a task"),
        (lambda: TaskGraph({"a": 1, "b": 1}, [("a", "b", "maybe")]), ValueError, "edge kind"),
        (lambda: TaskGraph({"a": 1, "b": 1}, [("a", "b"), ("b", "a")]), ValueError, "cycle"),
        (lambda: TaskGraph({"a": 1}, ["ab"]), TypeError, "`edges` must hold"),
        (lambda: TaskGraph({"a": 1}).schedule(0), ValueError, "`p` must be a positive integer"),
        (lambda: brent_bounds(1, 2, 1), ValueError, "`span` must be at most `work`"),
        (lambda: TaskGraph({"a": 1}, resources={"b": "mul"}), ValueError, "names 'b'"),
        (lambda: TaskGraph({"a": 1}, time_unit=3), TypeError, "`time_unit` must be"),
        (lambda: TaskGraph({"a": 1}, time_unit=""), ValueError, "`time_unit` must be"),
    ],
)
def test_bad_input_is_a_clear_error(call, error, message):
    with pytest.raises(error, match=__import__("re").escape(message)):
        call()
