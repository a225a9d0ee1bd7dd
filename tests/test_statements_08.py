"""Lecture 08 says things about its own output; these tests hold it to them.

The lecture prints measured speedups next to fitted fractions, draws a curve through a
measured point, and converts Gustafson's serial share into Amdahl's. Each relation is checked
on the output stored in the committed notebook (so a re-run that breaks one fails here), and
the measuring code is run beside a CPU hog to show that a busy machine gets a doubt, never a
confident wrong fraction.
"""

from __future__ import annotations

import re
import statistics

import pytest

from conftest import ROOT, cpu_hog, read_json
from perfmodel import parallel, scaling
from perfmodel.timing import Measurement

LECTURE = ROOT / "notebooks" / "08_scale_with_more_processors.ipynb"
NUMBER = r"(-?\d+(?:\.\d+)?)"


def cells() -> list[dict]:
    return read_json(LECTURE)["cells"]


def printed(cell: dict) -> str:
    return "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))


def output_of(marker: str) -> str:
    """The stored printed output of the one code cell whose source contains ``marker``."""
    found = [
        printed(c) for c in cells() if c["cell_type"] == "code" and marker in "".join(c["source"])
    ]
    assert len(found) == 1, f"{len(found)} cells contain {marker!r}"
    return found[0]


def lines_with(marker: str, prefix: str) -> list[str]:
    lines = [line for line in output_of(marker).splitlines() if line.strip().startswith(prefix)]
    assert lines, f"no printed line starts with {prefix!r}"
    return lines


# ------------------------------------------------------------ printed speedups and fractions


def test_each_printed_speedup_agrees_with_its_parallel_fraction_through_amdahl():
    for line in lines_with("measure_scaling(parallel.matmul_work(1024)", "strong,"):
        speedup, p = map(float, re.search(rf"speedup {NUMBER} on (\d+) threads", line).groups())
        fitted = re.search(rf"parallel fraction {NUMBER}", line)
        if fitted is None:
            assert "not fitted" in line, line
            continue
        # printed to 3 decimals and 2 decimals: agree within their rounding
        assert scaling.amdahl_speedup(float(fitted.group(1)), p) == pytest.approx(
            speedup, abs=0.006
        )


def test_each_printed_scaled_speedup_agrees_with_its_serial_share_through_gustafson():
    for line in lines_with("matmul_work(512, weak=True)", "weak,"):
        match = re.search(rf"scaled speedup {NUMBER} on (\d+) threads", line)
        speedup, p = float(match.group(1)), int(match.group(2))
        fitted = re.search(rf"serial share {NUMBER}", line)
        if fitted is None:
            assert "not fitted" in line, line
            continue
        assert scaling.gustafson_speedup(float(fitted.group(1)), p) == pytest.approx(
            speedup, abs=0.006
        )


def test_each_bottleneck_speedup_agrees_with_its_serial_fraction_through_amdahl():
    threads = max(int(n) for n in re.findall(r"on (\d+) threads", output_of("strong = {")))
    for line in lines_with('"half under a lock"', ""):
        speedup = float(re.search(rf"speedup {NUMBER}", line).group(1))
        fitted = re.search(rf"serial fraction {NUMBER}", line)
        if fitted is None:
            assert "not fitted" in line, line
            continue
        serial = float(fitted.group(1))
        assert scaling.amdahl_speedup(1 - serial, threads) == pytest.approx(speedup, abs=0.011)


def test_no_fraction_is_printed_whose_interval_reaches_no_speedup_at_all():
    # Amdahl's α = 0 (or a serial fraction of 1) and Gustafson's s = 1 mean "more threads buy
    # nothing": a fit whose interval reaches there cannot support its value (a busy machine
    # printed "parallel fraction 0.000" without a word), so the lecture says so instead.
    for marker, word, useless in (
        ("strong = {", "parallel fraction", 0.0),
        ("weak = {", "serial share", 1.0),
        ('"half under a lock"', "serial fraction", 1.0),
    ):
        for line in output_of(marker).splitlines():
            interval = re.search(rf"{word} {NUMBER}.*interval \[{NUMBER}, {NUMBER}\]", line)
            if interval:
                low, high = float(interval.group(2)), float(interval.group(3))
                assert not low <= useless <= high, line


def test_the_lock_fit_finds_at_least_the_half_that_is_serial_by_construction():
    (line,) = lines_with('"half under a lock"', "half under a lock")
    fitted = re.search(rf"serial fraction {NUMBER} \(95% interval \[{NUMBER}, {NUMBER}\]", line)
    if fitted is None:
        assert "not fitted" in line
    else:
        assert float(fitted.group(3)) >= 0.5, line  # "at least that much": its interval reaches 1/2


# ------------------------------------------------------- the static view draws what is printed


def _run(label: str, samples: dict[int, list[float]]) -> parallel.ScalingRun:
    return parallel.ScalingRun(
        label,
        tuple(
            Measurement(samples_s=tuple(s), inner_loops=1, threads=t) for t, s in samples.items()
        ),
    )


def test_the_static_view_passes_through_the_printed_speedup():
    import matplotlib.pyplot as plt

    from perfmodel.widgets.scaling import scaling_view

    source = next("".join(c["source"]) for c in cells() if "scaling_view(" in "".join(c["source"]))
    # a median speedup of 1.92 with a slow outlier that pulls the mean down to about 1.8
    run = _run("matmul", {1: [1.00, 1.01, 0.99, 1.0, 1.02], 2: [0.52, 0.5208, 0.53, 0.75, 0.515]})
    threads = range(1, 3)
    namespace = {
        "scaling": scaling,
        "scaling_view": scaling_view,
        "strong": {"matmul 1024": run},
        "threads": threads,
        "top": 2,
        "matmul_points": [(p, run.speedup(p)) for p in threads],
    }
    exec(compile(source, "cell", "exec"), namespace)
    ax = plt.gca()
    amdahl = next(line for line in ax.get_lines() if line.get_label().startswith("Amdahl:"))
    xs, ys = list(amdahl.get_xdata()), list(amdahl.get_ydata())
    assert ys[xs.index(2.0)] == pytest.approx(run.speedup(2), rel=1e-6)
    plt.close("all")


# ----------------------------------------------------- Gustafson's share and Amdahl's fraction


def test_the_sandia_caps_come_from_amdahls_fraction_of_the_one_processor_run():
    # Cell 5 prints Gustafson's s (a share of the 1024-processor run), then the same problem's
    # serial fraction on one processor and the cap Amdahl's law puts on it.
    out = output_of("sandia = {")
    rows = re.findall(
        rf"scaled speedup (\d+) on 1024\n\s+s = {NUMBER}% of the 1024-processor run, "
        rf"f = {NUMBER} × 10⁻⁶ of the one-processor run; Amdahl's cap (\d[\d,]*)",
        out,
    )
    assert len(rows) == 3, out
    for speedup, s_percent, f_millionths, cap in rows:
        s = scaling.fit_gustafson([1024], [float(speedup)]).value
        assert float(s_percent) == pytest.approx(100 * s, abs=0.005)
        f = scaling.amdahl_serial_fraction(s, 1024)
        assert float(f_millionths) == pytest.approx(1e6 * f, abs=0.005)
        assert int(cap.replace(",", "")) == pytest.approx(1 / f, rel=1e-3)
        # Amdahl's law on that problem gives back the scaled speedup it was measured at
        assert scaling.amdahl_speedup(1 - f, 1024) == pytest.approx(float(speedup))


def test_the_text_never_caps_the_scaled_problem_at_one_over_s():
    markdown = "\n".join("".join(c["source"]) for c in cells() if c["cell_type"] == "markdown")
    assert "130-340 times" not in markdown and "130–340 times" not in markdown


# --------------------------------------------------------------------- a busy machine


def test_a_run_slower_on_more_threads_is_doubted_not_fitted_as_zero():
    # What a loaded machine printed: two threads slower than one (speedup 0.73).
    run = _run("sin", {1: [1.0, 1.01, 1.0, 0.99, 1.0], 2: [1.37, 1.36, 1.38, 1.37, 1.37]})
    fit = scaling.fit_amdahl(run.processors, run.times)
    assert "outside" in fit.doubt
    assert not run.doubt  # quiet samples: the law, not the noise, is what fails


def test_a_noisy_run_is_doubted():
    run = _run("sin", {1: [1.0, 1.3, 1.0, 1.6, 1.1], 2: [0.6, 0.55, 0.9, 0.56, 0.7]})
    assert "noisy" in run.doubt and "spread" in run.doubt


def test_a_busy_machine_gets_a_plausible_fit_or_a_doubt_never_a_confident_zero():
    with cpu_hog():
        run = parallel.measure_scaling(
            parallel.elementwise_work(400_000), [2], progress=False, repeats=7, min_time_s=0.05
        )
    fit = scaling.fit_amdahl(run.processors, run.times)
    doubt = run.doubt or fit.doubt
    if not doubt:  # then the fit must be one the data supports
        assert 0 < fit.low <= fit.value <= fit.high <= 1
        assert scaling.amdahl_speedup(fit.value, 2) == pytest.approx(run.speedup(2))
    else:
        assert re.search("noisy|busy|outside|swamps", doubt), doubt


def test_the_scaled_speedup_is_the_median_the_gustafson_fit_sees():
    run = _run("sin, weak", {1: [1.0, 1.02, 0.98, 1.0], 2: [1.1, 1.05, 1.3, 1.06]})
    processors, speedups = run.scaled_points()
    assert run.scaled_speedup(2) == statistics.median(speedups)
    fit = scaling.fit_gustafson(processors, speedups)
    assert scaling.gustafson_speedup(fit.value, 2) == pytest.approx(run.scaled_speedup(2))


def test_the_sandia_prose_quotes_the_printed_range():
    out = output_of("sandia = {")
    caps = [int(c.replace(",", "")) for c in re.findall(r"Amdahl's cap (\d[\d,]*)", out)]
    shares = [float(s) for s in re.findall(rf"s = {NUMBER}% of the 1024", out)]
    prose = "".join(next(c["source"] for c in cells() if "Shares s of" in "".join(c["source"])))
    assert f"Shares s of {min(shares):.1f}% to {max(shares):.1f}%" in prose
    low, high = (round(x, -4) for x in (min(caps), max(caps)))
    assert f"{low:,.0f} to {high:,.0f} times" in prose
    one_over_s = sorted(round(100 / s, -1) for s in shares)
    assert f"about {one_over_s[0]:.0f}-{one_over_s[-1]:.0f}" in prose


def test_the_load_and_the_add_fit_a_serial_fraction_above_zero_when_fitted():
    for label in ("load, then compute", "memory-bound add"):
        (line,) = lines_with('"half under a lock"', label)
        fitted = re.search(rf"serial fraction {NUMBER}", line)
        assert "not fitted" in line if fitted is None else float(fitted.group(1)) > 0, line


def test_workbook_q5_describes_one_source_of_serial_time_only():
    # The old prompt read a file through one handle under a lock: I/O and a lock at once.
    master = read_json(ROOT / "exercises" / "masters" / "08_scale_with_more_processors.ipynb")
    prompt = " ".join(
        next(
            "".join(c["source"])
            for c in master["cells"]
            if "".join(c["source"]).startswith("**Question 5.**")
        ).split()
    )
    assert "with lock:" in prompt and "No file is read" in prompt
    assert not re.search(r"file handle|load|dataset", prompt), prompt
