"""What lectures 06 and 07 say about their own measurements, checked against what they print.

A sentence such as "the roofline is an upper bound", "catches up" or "pays from width 256" is a
claim about a table a few lines above it. These tests read the committed notebooks' stored
outputs and assert each claim on the numbers printed there; the synthetic tests pin the
functions that draw the conclusions; and the tests beside a CPU hog show that a busy machine
makes the lectures say "too disturbed", never a confident wrong conclusion.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import ROOT, cpu_hog
from perfmodel import ops
from perfmodel.hardware import Device
from perfmodel.measure import calibration, held_out, microbench, parallel
from perfmodel.measure.timing import Measurement

L06 = ROOT / "notebooks" / "06_measure_your_own_machine.ipynb"
L07 = ROOT / "notebooks" / "07_find_the_parallelism_in_a_model.ipynb"
WORKBOOK06 = ROOT / "exercises" / "masters" / "06_measure_your_own_machine.ipynb"
WORKBOOK07 = ROOT / "exercises" / "masters" / "07_find_the_parallelism_in_a_model.ipynb"
SECONDS = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def cells(path):
    return json.loads(path.read_text(encoding="utf-8"))["cells"]


def source(cell):
    return "".join(cell["source"])


def printed(path, needle):
    """The text a code cell containing ``needle`` printed when the notebook was stored."""
    (cell,) = [c for c in cells(path) if c["cell_type"] == "code" and needle in source(c)]
    return "".join(
        "".join(o.get("text", "")) for o in cell["outputs"] if o["output_type"] == "stream"
    )


def prose(path):
    text = " ".join(source(c) for c in cells(path) if c["cell_type"] == "markdown")
    return re.sub(r"\s+", " ", text)


def seconds(text):
    value, unit = text.split()
    return float(value) * SECONDS[unit]


# --- Lecture 06 ------------------------------------------------------------------------------


def lecture06_table():
    """(name, roofline s, measured s) of every row of the predict-then-measure table."""
    out = printed(L06, "calibrated = calibration.calibrate(profile)")
    quantity = r"([\d.]+ (?:ns|µs|ms|s))"
    row = re.compile(rf"^(.+?)\s{{2,}}{quantity}\s+{quantity}\s+{quantity}\s+[\d.]+\s", re.M)
    rows = [(m[1].strip(), seconds(m[2]), seconds(m[4])) for m in row.finditer(out)]
    assert len(rows) == 11, out
    return rows, out


def test_lecture06_says_which_ops_beat_its_roofline_as_its_table_shows():
    """Finding: the lecture called the plain roofline an upper bound on speed while its own
    table showed ops beating it. Whatever the prose says of the bound must hold on the table."""
    rows, out = lecture06_table()
    # printed to three figures: a row within rounding of its roof is neither
    clear = [(n, roof, t) for n, roof, t in rows if abs(t / roof - 1) > 0.01]
    beating = {n for n, roof, t in clear if t < roof}
    text = prose(L06)
    if "upper bound on speed" in text and beating:
        match = re.search(r"^faster than the plain roofline: (.*)$", out, re.M)
        assert match, "the lecture calls the roofline a bound but never says which ops beat it"
        named = {n for n, _, _ in rows if f"{n} (" in match[1]}
        assert beating <= named and not named & {n for n, roof, t in clear if t > roof}
        assert "roofline is an upper bound on speed" not in text  # only ever conditional


def test_lecture06_a_microsecond_in_flops_follows_the_printed_peaks():
    """Finding: 'a microsecond is tens of thousands of FLOPs' where the printed peaks made it
    about 92k (fp64) and 183k (fp32). The figure is printed from the measured peak now."""
    peaks = {
        dtype: float(value) * {"G": 1e9, "T": 1e12, "M": 1e6}[prefix]
        for dtype, value, prefix in re.findall(
            r"^(fp\d+) peak: .*measured\s+([\d.]+) ([GTM])FLOP/s",
            printed(L06, "profile_machine("),
            re.M,
        )
    }
    assert set(peaks) == {"fp64", "fp32"}
    out = printed(L06, "calibration.fit_overhead(adds)")
    overhead = seconds(re.search(r"overhead per numpy call: ([\d.]+ (?:ns|µs|ms))", out)[1])
    claims = re.findall(
        r"at the measured (fp\d+) peak, a microsecond is ([\d,]+) FLOPs, "
        r"and one call's overhead ([\d,]+)",
        out,
    )
    assert {dtype for dtype, _, _ in claims} == set(peaks)
    for dtype, per_microsecond, per_call in claims:
        # the peak is printed to three figures, the overhead too
        assert float(per_microsecond.replace(",", "")) == pytest.approx(
            peaks[dtype] * 1e-6, rel=0.006
        )
        assert float(per_call.replace(",", "")) == pytest.approx(peaks[dtype] * overhead, rel=0.012)
    for words, low in (("tens of thousands", 1e4), ("hundreds of thousands", 1e5)):
        if f"{words} of FLOPs" in prose(L06):
            assert all(low <= p * 1e-6 < 10 * low for p in peaks.values()), words


def test_workbook06_closing_figure_is_computed_from_what_the_learner_measured():
    """The workbook's last words said 'tens of thousands of FLOPs' whatever was measured."""
    masters = cells(WORKBOOK06)
    assert not any("tens of thousands" in source(c) for c in masters)
    done = next(i for i, c in enumerate(masters) if source(c).startswith("## Done"))
    closing = masters[done + 1]
    assert closing["cell_type"] == "code"
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        exec(source(closing), {"overhead": 1.2e-6, "matmul": SimpleNamespace(flops_per_s=9.2e10)})
    assert "110,400 fp64 FLOPs" in buffer.getvalue()


# --- Lecture 07 ------------------------------------------------------------------------------


def lecture07_speedups():
    out = printed(L07, "parallel.operation_scaling(")
    found = re.findall(r"^\s*(sin|cumsum) of\s+([\d,]+) on (\d+) threads: ([\d.]+)x", out, re.M)
    return {(op, int(n.replace(",", "")), int(t)): float(s) for op, n, t, s in found}, out


class CountedAdd:
    """A number that counts every addition made with it (an oracle for the scan's work)."""

    additions = 0

    def __init__(self, value):
        self.value = value

    def __add__(self, other):
        CountedAdd.additions += 1
        return CountedAdd(self.value + getattr(other, "value", other))

    __radd__ = __add__


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 300), st.integers(1, 6))
def test_the_blocked_scan_makes_the_additions_it_is_said_to(n, threads):
    x = np.array([CountedAdd(1) for _ in range(n)], dtype=object)
    out = np.empty(n, dtype=object)
    CountedAdd.additions = 0
    parallel.parallel_cumsum(x, out, threads=threads)
    assert [v.value for v in out] == list(range(1, n + 1))
    assert CountedAdd.additions == parallel.blocked_scan_additions(n, threads)


def test_lecture07_and_workbook07_count_the_scan_the_same_way():
    """Finding: the lecture said 'twice the additions'; the scan makes 1 + (t - 1)/t times a
    serial scan's (1.5 on two threads), which workbook 07 question 5 expects."""
    n = 4_000_000
    for t in range(1, 9):
        ratio = parallel.blocked_scan_additions(n, t) / (n - 1)
        assert ratio == pytest.approx(1 + (t - 1) / t, abs=1e-5)
    assert "twice the additions" not in prose(L07)
    _, out = lecture07_speedups()
    claims = re.findall(r"blocked scan on (\d+) threads makes ([\d.]+)x the additions", out)
    assert claims
    for t, ratio in claims:
        assert float(ratio) == pytest.approx(1 + (int(t) - 1) / int(t), abs=0.005)
    practice = [source(c) for c in cells(WORKBOOK07) if "scan_work_ratio = " in source(c)]
    for solution in practice:  # the workbook's answers are the same formula
        t = int(re.search(r"1 \+ \((\d+) - 1\) / \1", solution)[1])
        value = eval(solution.split("=", 1)[1].split("#")[0])
        assert value == pytest.approx(
            parallel.blocked_scan_additions(10**7, t) / (10**7 - 1), abs=1e-5
        )


def flagged_lines(out, marker):
    """The printed lines containing ``marker`` that say their speedup is not trusted."""
    return [
        line
        for line in out.splitlines()
        if marker in line and re.search("not trusted|too disturbed", line)
    ]


def test_lecture07_says_noisy_or_busy_in_plain_words_and_defines_the_spread():
    """Finding: a flag read "(too disturbed to trust: noisy (spread up to 13% of the median))",
    nested parentheses and an undefined word; the gap's line called noise "a disturbed machine"."""
    text = prose(L07)
    assert "**spread**, the interquartile range over the median" in text
    assert "**noisy**" in text and "**busy**" in text
    _, out = lecture07_speedups()
    branches = printed(L07, "parallel.branch_scaling(")
    gap = printed(L07, "parallel.compare_operations(")
    for line in (out + branches + gap).splitlines():
        assert not re.search(r"\([^()]*\(", line), f"nested parentheses: {line}"
    assert "disturbed machine" not in gap
    for line in flagged_lines(out, " on 2 threads: ") + flagged_lines(branches, "width "):
        assert re.search(
            r"\(not trusted: (noisy, spread up to \d+%|busy, (other programs used|waited))", line
        ), line


def lecture07_findings():
    """The speedups on two threads and what the cell after them printed of this run."""
    speedups, out = lecture07_speedups()
    shown = printed(L07, "parallel.compare_operations(")
    assert "This run:" in shown, shown
    findings = shown.split("This run:", 1)[1].strip().splitlines()
    assert findings and all(line.startswith("- ") for line in findings)
    return speedups, out, shown, [line[2:] for line in findings]


def test_lecture07_reads_the_gap_only_from_a_run_it_can_trust():
    """Finding: the cell printed "run the cell again before reading the gap" and the next prose
    read the gap anyway ("its share rises") while the shares went 35%, 30%, 87%, 96%. Now the cell
    prints what this run shows, and nothing when it cannot be trusted; the prose speaks of a quiet
    run."""
    speedups, out, shown, findings = lecture07_findings()
    after = next(source(c) for c in cells(L07) if "**Short operands lose.**" in source(c))
    assert after.startswith("What a quiet run shows"), after[:80]
    flagged = flagged_lines(out, " on 2 threads: ")
    if flagged:
        kinds = [k for k in ("noisy", "busy") if any(k in line for line in flagged)]
        assert findings == [
            f"not read: {len(flagged)} of 8 speedups not trusted ({', '.join(kinds)}); "
            "run the cell again"
        ]
        return
    lengths = sorted({n for _, n, t in speedups if t == 2})
    sin = [speedups["sin", n, 2] for n in lengths]
    cumsum = [speedups["cumsum", n, 2] for n in lengths]
    shares = [c / s for c, s in zip(cumsum, sin, strict=True)]
    printed_shares = [int(s) / 100 for s in re.findall(r"(\d+)% at", shown.split("\n")[0])]
    assert printed_shares == pytest.approx(shares, abs=0.02)  # from speedups rounded to 0.01
    short, best, less, *trend = findings
    lose = [name for name, x in (("sin", sin[0]), ("cumsum", cumsum[0])) if x < 1]
    verdict = {2: "both lose", 0: "neither loses"}.get(len(lose), f"only {lose[0]} loses")
    assert short.endswith(verdict), short
    top = max(range(len(sin)), key=sin.__getitem__)
    assert best.startswith(f"sin: best {sin[top]:.2f}x (at {lengths[top]:,})")
    every = all(c < s for c, s in zip(cumsum, sin, strict=True))
    assert (less == "cumsum gains less than sin at every length") == every
    (trend,) = trend
    rises = shares[-1] > shares[0]
    assert (" rises from " in trend) == rises
    steady = all(b >= a for a, b in zip(shares, shares[1:], strict=False))
    assert ("(not at every step)" in trend) == (rises and not steady)
    assert ("the gap narrows but does not close" in trend) == (rises and shares[-1] < 1)


def test_lecture07_does_not_say_sin_rises_to_the_longest_operand():
    """Finding: "`sin` approaches 2×" while the run printed 1.91x at 1M and 1.79x at 4M. The
    prose now says which long operand does best changes from run to run, and the cell prints the
    best speedup of this run."""
    text = prose(L07)
    assert "approaches 2×" not in text
    assert "comes close to 2×" in text and "changes from run to run" in text
    speedups, _, _, findings = lecture07_findings()
    sin = {n: s for (op, n, t), s in speedups.items() if op == "sin" and t == 2}
    best = [line for line in findings if line.startswith("sin: best ")]
    if best:  # a run that can be trusted names its best, which need not be the longest
        top = max(sin, key=sin.get)
        assert best == [f"sin: best {sin[top]:.2f}x (at {top:,}); 2 threads allow at most 2x"]


def test_lecture07_names_where_two_branches_pay_only_from_a_run_it_can_trust():
    """Findings: the 'crossover' was the first width above 1x, even when wider ones lost again;
    then a run that printed "too disturbed to say where it pays" named a range anyway, and the
    prose said the range "has a number on this machine, the range printed above"."""
    out = printed(L07, "parallel.branch_scaling(")
    found = re.findall(r"^width\s+(\d+): .*?, ([\d.]+)x", out, re.M)
    assert len(found) == 6
    payoff = parallel.where_it_pays([int(n) for n, _ in found], [float(s) for _, s in found])
    flagged = flagged_lines(out, "width ")
    if flagged:
        assert f"not read from this run: {len(flagged)} of 6 widths not trusted" in out
        assert payoff.describe() not in out
    else:
        assert f"Running both at once {payoff.describe()}." in out
    assert "first pays" not in out
    text = prose(L07)
    assert "the range printed above" not in text and "range of widths the run prints" not in text
    assert "the range of widths that a quiet run of the cell above prints" in text
    assert "over a range of widths, which a quiet run names" in text


def _point(op, n, speedup, samples=(1.0, 1.0, 1.0, 1.0)):
    m = Measurement(samples_s=samples, inner_loops=1, threads=2)
    return parallel.ScalingPoint(op, n, 2, m, speedup)


def test_the_operation_plot_crosses_out_each_speedup_it_cannot_trust():
    """Finding: the plot of a run with noisy points did not say which they were."""
    import matplotlib.pyplot as plt

    from perfmodel.plotting.parallel import operation_scaling_plot

    noisy = (1.0, 1.6, 1.0, 1.9)
    points = [_point("sin", 1000, 0.5), _point("sin", 10**6, 1.7, noisy),
              _point("cumsum", 1000, 0.3), _point("cumsum", 10**6, 1.2)]  # fmt: skip
    ax = operation_scaling_plot(points)
    (cross,) = [line for line in ax.lines if line.get_label().startswith("not trusted")]
    assert list(cross.get_xdata()) == [10**6] and list(cross.get_ydata()) == [1.7]
    assert ax.get_title().startswith("1 of 4 speedups not trusted (noisy)")
    quiet = operation_scaling_plot([p for p in points if not p.kinds])
    assert not [line for line in quiet.lines if line.get_label().startswith("not trusted")]
    plt.close("all")


def test_the_branch_plot_names_no_range_from_a_run_it_cannot_trust():
    import matplotlib.pyplot as plt

    from perfmodel.plotting.parallel import branch_scaling_plot

    quiet = Measurement(samples_s=(1.0, 1.0, 1.0), inner_loops=1)
    noisy = Measurement(samples_s=(0.5, 0.8, 0.5, 0.95), inner_loops=1)
    points = [parallel.BranchPoint(16, quiet, Measurement(samples_s=(2.0,), inner_loops=1)),
              parallel.BranchPoint(512, quiet, noisy)]  # fmt: skip
    ax = branch_scaling_plot(points)
    title = "Where it pays is not read from this run: 1 of 2 widths not trusted (noisy)"
    assert ax.get_title() == title
    (cross,) = [line for line in ax.lines if line.get_label().startswith("not trusted")]
    assert list(cross.get_xdata()) == [512]
    labels = ax.get_legend_handles_labels()[1]
    assert "above 1× on this run" in labels and "above 1×: it pays" not in labels
    plt.close("all")


def test_the_branch_plot_shows_a_speedup_above_its_usual_top():
    """A busy run printed 2.63x at width 256, above the plot's fixed top of 2.4: the point was cut
    off."""
    import matplotlib.pyplot as plt

    from perfmodel.plotting.parallel import branch_scaling_plot

    one = Measurement(samples_s=(1.0,), inner_loops=1)
    points = [parallel.BranchPoint(256, Measurement(samples_s=(2.63,), inner_loops=1), one)]
    assert branch_scaling_plot(points).get_ylim()[1] > 2.63
    plt.close("all")


def test_the_schedule_legend_prints_brents_bounds_as_the_lecture_does():
    """Finding: the legend said "W/P + S = 1712.05" where the printout said 1712.1."""
    import matplotlib.pyplot as plt

    from perfmodel.plotting.taskgraph import gantt_plot
    from perfmodel.taskgraph import examples

    out = printed(L07, 'block = graphs["transformer block')
    low, high = re.search(r"^P = 2: .*bounds \[\s*([\d.]+),\s*([\d.]+)\]", out, re.M).groups()
    g = examples()["transformer block (µs on an H100)"]
    labels = gantt_plot(g.schedule(2), g).get_legend_handles_labels()[1]
    assert labels == [f"lower bound max(W/P, S) = {low}", f"greedy bound W/P + S = {high}"]
    plt.close("all")


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(1, 4096), min_size=1, max_size=8, unique=True).flatmap(
        lambda sizes: st.tuples(
            st.just(sizes),
            st.lists(st.floats(0.01, 4.0), min_size=len(sizes), max_size=len(sizes)),
        )
    )
)
def test_where_it_pays_is_exactly_the_widths_above_one(case):
    sizes, speedups = case
    payoff = parallel.where_it_pays(sizes, speedups)
    ordered = sorted(zip(sizes, speedups, strict=True))
    assert payoff.paying == tuple(n for n, s in ordered if s > 1)
    flags = [s > 1 for _, s in ordered]
    runs = sum(1 for i, f in enumerate(flags) if f and (i == 0 or not flags[i - 1]))
    assert payoff.contiguous == (runs <= 1)
    words = payoff.describe()
    if not payoff.paying:
        assert words.startswith("pays at no width")
    elif not payoff.contiguous:
        assert "not in one range" in words
        assert all(str(n) in words for n in payoff.paying)
    else:
        assert str(payoff.paying[0]) in words and str(payoff.paying[-1]) in words
        assert ("loses again" in words) == (payoff.paying[-1] != ordered[-1][0])


# --- Beside a busy machine -------------------------------------------------------------------

QUICK = {"repeats": 3, "min_time_s": 0.05}
LONG = {"repeats": 3, "min_time_s": 0.4}  # many 10 ms ticks: a hog's share shows


def test_beside_a_cpu_hog_lecture07_is_right_or_says_it_is_disturbed():
    with cpu_hog():
        points = parallel.operation_scaling([400_000], [2], progress=False, **QUICK)
        (branch,) = parallel.branch_scaling([256], progress=False, **QUICK)
    if all(p.measurement.contention is None for p in points):
        pytest.skip("this system keeps no scheduler statistics")
    for p in points:
        if p.threads == 2 and p.operation == "sin":
            assert p.doubt or p.speedup > 1  # independent elements, long operand: it splits
    for _, share, doubt in parallel.speedup_share(points, "cumsum", "sin", threads=2):
        assert doubt or share < 1  # the scan's extra pass: never more than sin's gain
    assert branch.doubt or branch.speedup > 1
    assert all(p.doubt for p in points if p.threads == 2) and branch.doubt  # a hog is busy
    # so the lecture reads neither the gap nor where two branches pay
    gap = parallel.compare_operations(points, "cumsum", "sin", threads=2)
    assert gap.findings() == [f"not read: {gap.untrusted}; run the cell again"]
    assert parallel.untrusted([branch], "widths").startswith("1 of 1 widths not trusted (")


def test_beside_a_cpu_hog_lecture06_never_beats_its_roof_unflagged():
    """A ceiling measured on a busy machine is too low, and an op then beats it: the row must
    say its measurement, or the ceiling's, was disturbed."""
    with cpu_hog():
        # windows of many 10 ms ticks: in a 50 ms one the kernel's tick counts can hide the
        # hog's share (seen once in a fresh clone's run)
        ceiling = microbench.matmul(192, threads=2, **LONG)
        machine = Device(
            name="busy", kind="cpu", peak_flops_by_dtype={"fp64": 1e15}, memory_bandwidth=1e15,
            measured_flops_by_dtype={"fp64": ceiling.flops_per_s}, measured_memory_bandwidth=1e15,
            measured_source="beside a CPU hog", source="this test",
        )  # fmt: skip
        model = calibration.Calibration(
            machine, overhead_s=0.0, blas_overhead_s=0.0, vector_flops=1e9, exp_rate=1e9, caches=()
        )
        a = np.ones((192, 192))
        cost = ops.matmul(192, 192, 192, dtype="fp64")
        case = held_out.Case("matmul 192", lambda: a @ a, cost, (calibration.Call(cost, "matrix"),))
        (row,) = held_out.predict_vs_measure(model, [case], progress=False, **LONG).rows
    if ceiling.measurement.contention is None:
        pytest.skip("this system keeps no scheduler statistics")
    assert not row.beats_roofline or row.doubt or ceiling.measurement.doubt
    assert ceiling.measurement.doubt and row.doubt  # a hog on every core is a busy machine
