"""The timing harness: what it records, how it counts, and that it never loses a sweep.

These tests assert results (sample counts, loop counts, statistics, thread limits), never how
fast anything ran: speed belongs in benchmarks/.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel.measure import timing
from perfmodel.measure.timing import Measurement, measure, next_loop_count, sweep


@settings(max_examples=50, deadline=None)
@given(st.lists(st.floats(1e-9, 1.0), min_size=1, max_size=30))
def test_statistics_agree_with_the_standard_library(samples):
    m = Measurement(samples_s=samples, inner_loops=3)
    assert m.median_s == statistics.median(samples) and m.minimum_s == min(samples)
    assert m.iqr_s >= 0 and m.minimum_s <= m.median_s
    if len(samples) >= 2:
        q1, _, q3 = np.percentile(samples, [25, 50, 75])
        assert m.iqr_s == pytest.approx(q3 - q1, rel=1e-9, abs=1e-15)
    assert m.noisy == (m.iqr_s / m.median_s > timing.NOISY_SPREAD)


def test_loop_counts_follow_timeit():
    counts = [1]
    while counts[-1] < 1000:
        counts.append(next_loop_count(counts[-1]))
    assert counts == [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000]


def test_measure_repeats_warms_up_and_syncs():
    calls = {"fn": 0, "setup": 0, "sync": 0}

    def fn():
        calls["fn"] += 1

    m = measure(
        fn,
        setup=lambda: calls.__setitem__("setup", calls["setup"] + 1),
        sync=lambda: calls.__setitem__("sync", calls["sync"] + 1),
        warmup=3,
        repeats=4,
        max_repeats=4,
        min_time_s=0.0,
        min_sample_s=10.0,  # unreachable: the loop count stops at max_inner
        max_inner=50,
        label="noop",
        sizes={"n": np.int64(1)},
    )
    assert m.inner_loops == 50 and len(m.samples_s) == 4
    # 3 warm-up calls; autoranging at 1, 2, 5, 10, 20, 50; then 3 more samples of 50.
    assert calls["fn"] == 3 + (1 + 2 + 5 + 10 + 20 + 50) + 3 * 50
    assert calls["setup"] == 6 + 3  # once per sample, never inside the timed calls
    # after the warm-up, then before and after every sample: the clock starts on an idle device
    assert calls["sync"] == 1 + 2 * (6 + 3)
    assert m.label == "noop" and dict(m.sizes) == {"n": 1}


def test_measure_stops_at_max_repeats():
    m = measure(lambda: None, repeats=2, max_repeats=3, min_time_s=1e9, min_sample_s=1e-9)
    assert len(m.samples_s) == 3


def test_threads_are_limited_and_recorded():
    from threadpoolctl import threadpool_info

    seen = []
    m = measure(
        lambda: seen.append([pool["num_threads"] for pool in threadpool_info()]),
        threads=1,
        repeats=1,
        min_time_s=0.0,
        min_sample_s=1e-9,
    )
    assert m.threads == 1
    assert all(n == 1 for counts in seen for n in counts)


def test_a_sweep_keeps_what_it_measured_when_interrupted():
    def measure_one(n):
        if n == 3:
            raise KeyboardInterrupt
        return measure(lambda: None, repeats=1, min_time_s=0.0, min_sample_s=1e-9, sizes={"n": n})

    result = sweep(measure_one, [1, 2, 3, 4], progress=False)
    assert result.interrupted and result.parameters == (1, 2)
    assert [dict(m.sizes) for m in result.measurements] == [{"n": 1}, {"n": 2}]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: measure(3), TypeError, "`fn` must be callable"),
        (lambda: measure(lambda: None, sync="yes"), TypeError, "`sync` must be callable"),
        (lambda: measure(lambda: None, repeats=0), ValueError, "`repeats` must be a positive"),
        (lambda: measure(lambda: None, min_time_s=float("nan")), ValueError, "`min_time_s`"),
        (lambda: measure(lambda: None, threads=0), ValueError, "`threads` must be a positive"),
        (lambda: measure(lambda: None, repeats=5, max_repeats=2), ValueError, "`max_repeats`"),
        (lambda: Measurement(samples_s=[], inner_loops=1), ValueError, "at least one sample"),
        (lambda: Measurement(samples_s=[-1.0], inner_loops=1), ValueError, "`samples_s\\[0\\]`"),
        (lambda: sweep(lambda p: 3, [1], progress=False), TypeError, "must return a Measurement"),
        (lambda: sweep(lambda p: p, 5, progress=False), TypeError, "`parameters` must be"),
    ],
)  # fmt: skip
def test_bad_arguments_are_clear_errors(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_rate_divides_by_the_median():
    m = Measurement(samples_s=[2.0, 1.0, 3.0], inner_loops=1)
    assert m.rate(10.0) == 5.0


def test_a_measurement_beside_a_cpu_hog_says_the_machine_was_busy():
    """A spinning process on every core makes the measured thread wait for one: the
    measurement must say so (a busy machine can slow every sample alike, unseen by the
    spread)."""
    from conftest import cpu_hog

    x = np.linspace(0.0, 1.0, 200_000)
    with cpu_hog():
        m = measure(lambda: np.sin(x), repeats=5, min_time_s=0.3)
    if m.contention is None:
        pytest.skip("this system keeps no scheduler statistics")
    assert m.busy and "busy" in m.doubt


@settings(max_examples=50, deadline=None)
@given(st.floats(0.0, 1.0), st.lists(st.floats(1e-6, 1.0), min_size=1, max_size=10))
def test_doubt_names_each_reason_and_only_those(contention, samples):
    m = Measurement(samples_s=samples, inner_loops=1, contention=contention)
    assert m.busy == (contention > timing.BUSY_SHARE)
    assert ("busy" in m.doubt) == m.busy and ("noisy" in m.doubt) == m.noisy
    assert (m.doubt == "") == (not m.busy and not m.noisy)


def test_contention_must_be_a_share():
    with pytest.raises(ValueError, match="`contention`"):
        Measurement(samples_s=[1.0], inner_loops=1, contention=1.5)


def test_a_busy_machine_is_one_where_other_programs_held_the_cores():
    # two workers on two cores wait for each other on a quiet machine: no sign of business;
    # a neighbour on another core shares the caches and memory even when nobody waits
    from perfmodel.measure.timing import Measurement

    own = Measurement(samples_s=[1.0], inner_loops=1, contention=0.3, others=0.02)
    neighbour = Measurement(samples_s=[1.0], inner_loops=1, contention=0.0, others=0.5)
    unknown = Measurement(samples_s=[1.0], inner_loops=1, contention=0.3)
    assert (own.busy, neighbour.busy, unknown.busy) == (False, True, True)
    assert neighbour.doubt == "busy (other programs used 50% of the CPUs)"
    assert unknown.doubt == "busy (waited for a core 30% of the time)"


def test_other_programs_are_counted_on_this_process_cores_only():
    import os

    from perfmodel.measure.load import cpu_ticks

    ticks = cpu_ticks()
    if ticks is None:
        pytest.skip("no /proc/stat here")
    with open("/proc/stat", encoding="ascii") as stat:
        lines = [line.split() for line in stat if line.startswith("cpu") and line[3] != " "]
    mine = [line for line in lines if int(line[0][3:]) in os.sched_getaffinity(0)]
    total = sum(sum(map(int, line[1:6])) + sum(map(int, line[6:9])) for line in mine)
    assert 0 < ticks[1] <= total * 1.01 + 100  # the cores this process may use, not all


def test_other_programs_share_forgives_a_tick_or_two():
    from perfmodel.measure.load import others_share

    # (machine busy ticks, machine total ticks, own ticks) before and after
    assert others_share((100, 1000, 50), (112, 1020, 60)) == 0.0  # 2 ticks of others: the slack
    assert others_share((100, 1000, 50), (120, 1020, 60)) == 8 / 20  # 10 ticks of others, less 2
    assert others_share((100, 1000, 50), (120, 1000, 60)) is None  # no time passed
    assert others_share(None, (1, 2, 3)) is None


def test_a_watch_around_a_block_reads_what_other_programs_used():
    from conftest import cpu_hog
    from perfmodel.measure.load import OthersWatch
    from perfmodel.measure.timing import BUSY_OTHERS

    with cpu_hog(), OthersWatch() as busy:
        time.sleep(0.3)  # idle here: every tick the CPUs spend is the hog's
    assert busy.others is not None and busy.others > BUSY_OTHERS
    with OthersWatch() as mine:
        sum(range(2_000_000))  # this process's own work is not "other programs"
    assert mine.others is not None and mine.others < busy.others
