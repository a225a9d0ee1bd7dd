"""Lecture 12's kernel rates and zoo say what their own outputs show (issue 26).

Each test reads the lecture's stored outputs (what a learner sees) and checks a relation its
prose states, or runs the lecture's own cells on rates and rows made to order, so that each
branch (a trusted calibration and an untrusted one, steady rows and unsure ones) is taken on
purpose; one runs the calibration beside a CPU hog.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import re
import statistics

import matplotlib

matplotlib.use("agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402
from figure_audit import problems  # noqa: E402

from conftest import ROOT, cpu_hog, read_json  # noqa: E402
from perfmodel import capstone  # noqa: E402
from perfmodel.capstone import kernels  # noqa: E402
from perfmodel.capstone.kernels import COMPUTE_KINDS, Curve, KernelRates  # noqa: E402
from perfmodel.capstone.onnx_costs import KERNEL_KINDS  # noqa: E402
from perfmodel.capstone.zoo import ZooRow  # noqa: E402
from perfmodel.measure.timing import BUSY_OTHERS  # noqa: E402

CELLS = read_json(ROOT / "notebooks" / "12_will_it_run_faster.ipynb")["cells"]
UNTRUSTED = "UNTRUSTED CALIBRATION"


def source(cell: dict) -> str:
    return "".join(cell["source"])


def code(marker: str) -> dict:
    found = [c for c in CELLS if c["cell_type"] == "code" and marker in source(c)]
    assert len(found) == 1, f"{len(found)} code cells contain {marker!r}"
    return found[0]


def printed(marker: str) -> str:
    """The stored stdout of the one code cell whose source contains ``marker``."""
    return "".join("".join(o.get("text", "")) for o in code(marker)["outputs"])


def prose(marker: str) -> str:
    found = [source(c) for c in CELLS if c["cell_type"] == "markdown" and marker in source(c)]
    assert len(found) == 1, f"{len(found)} markdown cells contain {marker!r}"
    return " ".join(found[0].split())  # one line, so a phrase may span the source's lines


def number(pattern: str, text: str) -> float:
    match = re.search(pattern, text)
    assert match, f"{pattern!r} not in {text!r}"
    return float(match.group(1).replace(",", ""))


# --- the unsupported operator and the coverage ------------------------------------------------


def test_the_unsupported_op_shown_is_one_no_rule_prices_and_the_coverage_is_the_packages():
    """The cell built an Einsum, which a rule now prices: the warning it printed was never
    given, and re-executing the lecture failed on ``caught[0]``."""
    out = printed("capstone.coverage()")
    op = re.search(r"no cost rule for (\w+) \(1 node\)", out)
    assert op, out
    found = capstone.coverage()
    assert op.group(1) in found.unknown
    assert "supported=False" in out and ", 0 FLOPs" in out
    total = len(found.priced) + len(found.bytes_only) + len(found.unknown)
    assert (
        f"{total} operators, {len(found.priced)} priced from their shapes, "
        f"{len(found.bytes_only)} bytes only, {len(found.unknown)} unknown"
    ) in out
    text = prose("An op the importer has no rule for")
    assert op.group(1) in text and "capstone.coverage()" in text


# --- the calibration ------------------------------------------------------------------------------


def calibration() -> str:
    return printed("rates = capstone.measure_kernels(")


def test_the_overhead_per_node_is_a_fraction_of_a_microsecond_and_less_than_with_the_profiler():
    out = calibration()
    start = number(r"a run starts in ([\d.]+) us", out)
    overhead = number(r"each node costs ([\d.]+) us besides its work", out)
    assert start > 0 and 0 < overhead < 1  # "a fraction of a microsecond"
    profiled = number(r"onnxruntime overhead per node: ([\d.]+) us", printed("calibrate_engine("))
    assert profiled >= 2 and profiled > 3 * overhead  # "several microseconds per node"
    text = prose("With the profiler off, onnxruntime's own cost per node")
    assert "a fraction of a microsecond" in text and "several microseconds per node" in text


def test_a_depthwise_node_and_a_one_row_matmul_run_below_the_gemm_curve():
    out = calibration()
    gaps = re.findall(
        r"(\w+)'s \S+ \(([\d.]+) MFLOP\): its (\w+) probes say ([\d.]+) GFLOP/s; the gemm curve "
        r"at the same FLOPs says ([\d.]+) GFLOP/s, ([\d.]+) times as fast",
        out,
    )
    assert [(model, kind) for model, _, kind, *_ in gaps] == [
        ("MobileNetV2", "depthwise"),
        ("MLP", "gemv"),
    ]
    for _, mflop, kind, own, square, times in gaps:
        own, square, times = float(own), float(square), float(times)
        assert times == pytest.approx(square / own, rel=0.02, abs=0.06)
        assert times > (3 if kind == "depthwise" else 1)  # "far below"; "too fast"
        if kind == "gemv":  # a square matmul of these FLOPs uses each weight n times
            n = (float(mflop) * 1e6 / 2) ** (1 / 3)
            assert 24 <= n < 100, n  # "dozens of times"
    one = number(r"times one row: ([\d.]+) GFLOP/s", out)
    eight = number(r"times eight rows: ([\d.]+) GFLOP/s", out)
    assert eight > 2 * one  # "the gemv line leaps at its last probe"
    assert "dozens of times" in prose("A **one-row matmul**")
    assert "leaps at its" in prose("Each dot is one probe")


def test_the_probes_span_the_sizes_the_text_gives_and_time_what_it_says():
    text = prose("No probe is a model")
    assert "matmuls from 16x16 to 768x768" in text
    assert "convolutions from 8 to 960 channels" in text
    labels = [p.label for p in kernels.probes()]
    squares = [int(m[1]) for label in labels if (m := re.match(r"MatMul (\d+)x\1x\1", label))]
    assert (min(squares), max(squares)) == (16, 768)
    channels = [int(m[1]) for label in labels if (m := re.match(r"Conv (\d+)ch", label))]
    assert (min(channels), max(channels)) == (8, 960)
    floats = [int(m[1].replace(",", "")) for label in labels
              if (m := re.match(r"(?:Add|Erf|Reshape) of ([\d,]+) floats", label))]  # fmt: skip
    assert (min(floats), max(floats)) == (1_000, 4_000_000)  # "a thousand to a few million"
    assert "tensors from a thousand to a few million elements" in text
    assert "a chain of 64 one-element Adds" in prose("So measure one curve per kind")
    assert kernels.TINY_NODES == 64
    matmuls = [n for n in kernels.reference_model().graph.node if n.op_type == "MatMul"]
    assert len(matmuls) == 4  # "four 128x128 matmuls"
    assert "four 128x128 matmuls" in prose("Now the test: nine model families")


# --- the zoo ----------------------------------------------------------------------------------


def zoo_table() -> tuple[list[dict], str]:
    out = printed("capstone.run_zoo(rates")
    pattern = r"^(\S+)\s+(\d+)\s+([\d.]+) ms\s+([\d.]+) ms\s+([\d.]+)(  unsure)?$"
    rows = [
        {"model": m[0], "batch": int(m[1]), "predicted": float(m[2]), "measured": float(m[3]),
         "ratio": float(m[4]), "unsure": bool(m[5])}
        for m in re.findall(pattern, out, flags=re.M)
    ]  # fmt: skip
    return rows, out


def test_the_zoo_table_has_every_family_at_both_batches_and_ratio_is_measured_over_predicted():
    rows, _ = zoo_table()
    assert [(r["model"], r["batch"]) for r in rows] == [
        (m, b) for m in capstone.ZOO for b in (1, 8)
    ]
    for row in rows:  # times print to 0.01 ms and the ratio to 0.01
        ratio = row["measured"] / row["predicted"]
        slack = 0.006 + ratio * (0.005 / row["predicted"] + 0.005 / row["measured"])
        assert row["ratio"] == pytest.approx(ratio, abs=slack)
    assert "**ratio** is measured over predicted" in prose("Now the test: nine model families")
    assert "runs=5" in source(code("capstone.run_zoo(rates"))  # "5 timed runs"
    assert "warmup=2" in inspect.getsource(capstone.run_zoo)  # "after 2 untimed ones"


def test_the_summary_line_reads_the_steady_rows_of_a_trusted_calibration_only():
    rows, out = zoo_table()
    untrusted = UNTRUSTED in calibration()
    sure = [row for row in rows if not row["unsure"]]
    lines = [line for line in out.splitlines() if line.startswith("this run: median")]
    if untrusted:
        assert not lines and "no conclusion from this table" in out
    elif sure:
        (line,) = lines
        median = statistics.median(abs(row["ratio"] - 1) for row in sure)
        assert number(r"= (\d+)% over", line) == pytest.approx(100 * median, abs=1.5)
        assert f"over {len(sure)} steady rows" in line
        slower = sum(row["ratio"] > 1 for row in sure)
        assert number(r"slower than predicted in (\d+) of them", line) == pytest.approx(
            slower, abs=sum(row["ratio"] == 1 for row in sure)
        )  # a ratio printed as 1.00 may be either side
        worst = max(sure, key=lambda row: abs(row["ratio"] - 1))
        assert f"({worst['ratio']:.2f})" in line
    unsure = len(rows) - len(sure)
    if unsure:
        assert f"unsure: {unsure} of {len(rows)} rows" in out and "no conclusion from them" in out
    else:
        assert "unsure: " not in out


def test_a_row_is_unsure_exactly_as_the_text_says():
    """ "more than 25% longer or 20% less time than during the calibration, or when other
    programs held more than a quarter of the CPUs"."""

    def row(drift: float, others: float = 0.0) -> ZooRow:
        return ZooRow("MLP", 1, 1e-3, 1e-3, 0.0, others, {"overhead": 1e-3}, 1.0, drift)

    assert [row(d).unsure for d in (0.79, 0.81, 1.0, 1.24, 1.26)] == [1, 0, 0, 0, 1]
    assert row(1.0, BUSY_OTHERS + 0.01).unsure and not row(1.0, BUSY_OTHERS - 0.01).unsure
    text = prose("Now the test: nine model families")
    assert "more than 25% longer or 20% less time" in text
    assert "more than a quarter of the CPUs" in text and BUSY_OTHERS == 0.25


# --- the overhead bar ---------------------------------------------------------------------------


def test_the_largest_kind_of_each_model_is_the_one_the_text_names():
    out = printed("batch_1 = [row for row in rows if row.batch == 1]")
    line = next(line for line in out.splitlines() if line.startswith("largest kind: "))
    largest = dict(part.rsplit(" ", 1) for part in line.removeprefix("largest kind: ").split(", "))
    assert list(largest) == list(capstone.ZOO)
    named = {"ResNet-50": "conv", "MobileNetV2": "depthwise", "EfficientNet-B0": "depthwise",
             "ViT": "gemm", "BERT": "gemm", "GPT-2": "gemm", "LSTM": "recurrent"}  # fmt: skip
    assert {model: largest[model] for model in named} == named
    text = prose("With the profiler off, onnxruntime's own cost per node")
    assert ("the dense convolutions in ResNet-50, the depthwise ones in MobileNetV2 and "
            "EfficientNet-B0, the matmuls in ViT, BERT and GPT-2, the recurrent layers in the "
            "LSTM") in text  # fmt: skip


def test_the_overhead_matters_most_in_the_model_of_a_few_small_nodes():
    out = printed("batch_1 = [row for row in rows if row.batch == 1]")
    match = re.search(r"the overhead is ([\d.]+)% \((\S+)\) to ([\d.]+)% \((\S+)\)", out)
    assert match, out
    low, high = float(match[1]), float(match[3])
    assert 0 < low <= high < 20  # the summary: "how little of the time is the engine's own"
    assert "how little of the time is the engine's own" in prose("## Summary")
    assert match[4] == "MLP"  # "a model of a few small nodes at batch 1"
    mlp = capstone.import_onnx(capstone.zoo_model("MLP", 1, weights=False))
    assert len(mlp.nodes) <= 10


# --- the lecture's cells, run on rates and rows made to order -----------------------------------


def made_rates(others: float) -> KernelRates:
    """Rates with a curve for every kind (compute at 10-100 GFLOP/s, the rest 10-100 GB/s)."""
    curves = {
        kind: Curve(kind, "FLOP" if kind in COMPUTE_KINDS else "B",
                    ((1e3, 1e3 / 1e10), (1e9, 1e9 / 1e11)), (0.1, 0.1), others)
        for kind in KERNEL_KINDS
    }  # fmt: skip
    return KernelRates(curves, 7e-6, 2, "made", others, 3e-7, 1e-3)


def made_rows(rates: KernelRates, *, drift: float = 1.0) -> list[ZooRow]:
    rows = []
    for name in capstone.ZOO:
        for batch in (1, 8):
            model = capstone.import_onnx(capstone.zoo_model(name, batch, weights=False))
            predicted = rates.predict(model)
            rows.append(ZooRow(name, batch, predicted, 1.2 * predicted, 0.05, 0.0,
                               rates.by_kind(model), 1.2, drift))  # fmt: skip
    return rows


def run(text: str, namespace: dict) -> str:
    """Run the lecture's code ``text`` in ``namespace``; what it printed."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(text, namespace)  # noqa: S102 - the lecture's own code
    return out.getvalue()


def run_cells(markers: list[str], namespace: dict) -> str:
    """Run the lecture's code cells named by ``markers`` in turn; what they printed."""
    return run("\n".join(source(code(marker)) for marker in markers), namespace)


LECTURE_CELLS = [
    "rates = capstone.measure_kernels(",
    "figure, panels = plt.subplots(1, 2",
    "capstone.run_zoo(rates",
    "batch_1 = [row for row in rows if row.batch == 1]",
]


@pytest.mark.parametrize("others", [0.0, 0.6], ids=["quiet", "busy"])
def test_the_lecture_warns_and_draws_no_conclusion_only_on_an_untrusted_calibration(
    monkeypatch, others
):
    rates = made_rates(others)
    rows = made_rows(rates)
    monkeypatch.setattr(capstone, "measure_kernels", lambda **_: rates)
    monkeypatch.setattr(capstone, "run_zoo", lambda *_, **__: rows)
    namespace = {"capstone": capstone}
    try:
        out = run_cells(LECTURE_CELLS, namespace)
        for figure in map(plt.figure, plt.get_fignums()):  # both new figures pass the audit
            assert not problems(figure), problems(figure)
    finally:
        plt.close("all")
    busy = others > BUSY_OTHERS
    assert (UNTRUSTED in out) == busy
    assert ("no conclusion from this table" in out) == busy
    assert ("this run: median |measured/predicted - 1| = 20% over 18 steady rows" in out) != busy
    assert "slower than predicted in 18 of them" in out or busy
    assert "unsure: " not in out


def test_the_lecture_leaves_unsure_rows_out_of_its_summary(monkeypatch):
    rates = made_rates(0.0)
    rows = made_rows(rates)
    rows[0:2] = [made_rows(rates, drift=1.5)[i] for i in (0, 1)]  # the MLP ran on a slower machine
    monkeypatch.setattr(capstone, "measure_kernels", lambda **_: rates)
    monkeypatch.setattr(capstone, "run_zoo", lambda *_, **__: rows)
    try:
        out = run_cells(LECTURE_CELLS[:1] + LECTURE_CELLS[2:3], {"capstone": capstone})
    finally:
        plt.close("all")
    assert out.count("  unsure") == 2 and "over 16 steady rows" in out
    assert "unsure: 2 of 18 rows" in out and "no conclusion from them" in out


def test_the_lecture_calibration_under_a_cpu_hog_says_untrusted_exactly_when_busy():
    """The lecture's calibration code, on a subset of kinds, while every core spins: the
    calibration reads the hog (one reading around the whole measurement) and the lecture
    says UNTRUSTED; on a quiet machine it does not."""
    cell = source(code("rates = capstone.measure_kernels("))
    calibrate = cell.split("\nfor name, kind in", 1)[0]  # the subset measures no depthwise
    subset = (
        'capstone.measure_kernels(kinds=("elementwise", "gemm"), rounds=1, runs=3, progress=False)'
    )
    assert "capstone.measure_kernels(progress=False)" in calibrate
    calibrate = calibrate.replace("capstone.measure_kernels(progress=False)", subset)
    namespace = {"capstone": capstone}
    with cpu_hog():
        out = run(calibrate, namespace)
    rates = namespace["rates"]
    assert rates.busy and rates.others > BUSY_OTHERS
    assert UNTRUSTED in out and rates.warning().startswith(UNTRUSTED)
    assert f"other programs used {rates.others:.0%} of the CPUs" in out
    quiet = {"capstone": capstone}
    out = run(calibrate, quiet)
    assert (UNTRUSTED in out) == quiet["rates"].busy  # quiet unless something else is running


def test_the_readme_gives_the_coverage_of_the_onnx_it_names():
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    match = re.search(r"with onnx (\d+\.\d+), (\d+) of the (\d+) operators of its default domain "
                      r"are priced from their shapes, (\d+) by the bytes they move, and the other "
                      r"(\d+) as bytes", readme)  # fmt: skip
    assert match, "the README's coverage sentence is gone"
    assert "`perfmodel.capstone.coverage()`" in readme
    assert "`.venv/bin/python benchmarks/capstone.py`" in readme
    import onnx

    if not onnx.__version__.startswith(match[1] + "."):
        pytest.skip(
            f"the README counts onnx {match[1]}'s operators; onnx {onnx.__version__} is here"
        )
    found = capstone.coverage()
    total = len(found.priced) + len(found.bytes_only) + len(found.unknown)
    assert [int(match[i]) for i in (2, 3, 4, 5)] == [
        len(found.priced), total, len(found.bytes_only), len(found.unknown)]  # fmt: skip
