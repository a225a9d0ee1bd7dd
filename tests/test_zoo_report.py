"""Lecture 12's zoo table, printed by the package: rows as measured, summaries from the steady
rows only, and nothing concluded from an untrusted calibration."""

from __future__ import annotations

import types

import pytest

pytest.importorskip("onnx")

from perfmodel.capstone import ZooRow, zoo_report  # noqa: E402


def row(model, ratio, *, batch=1, drift=1.0, kinds=None):
    predicted = 2e-3
    return ZooRow(
        model=model,
        batch=batch,
        predicted_s=predicted,
        measured_s=predicted * ratio,
        spread=0.05,
        others=0.0,
        by_kind=kinds or {"overhead": 2e-4, "gemm": 1.5e-3, "elementwise": 3e-4},
        worst=ratio,
        drift=drift,
    )


ROWS = [
    row("A", 1.10),
    row("B", 0.70, kinds={"overhead": 2e-4, "conv": 4e-4, "depthwise": 1.4e-3}),
    row("C", 1.30),
    row("D", 1.02),
    row("E", 2.00, drift=1.6),  # the machine ran 60% slower: unsure
]
MODELS = {(r.model, r.batch): types.SimpleNamespace(nodes=[None] * 10) for r in ROWS}


def engine(*, unsure=False):
    # Lecture 06's roofline, standing in: it predicts every model at 2.5 ms, 1 us a node.
    return types.SimpleNamespace(predict=lambda model: 2.5e-3, unsure=unsure, overhead_s=1e-6)


def test_the_table_lists_every_row_and_summarises_the_steady_ones():
    text = zoo_report(ROWS, types.SimpleNamespace(trusted=True), engine(), MODELS)
    lines = text.splitlines()
    assert lines[1].split() == ["model", "batch", "curves", "roofline", "measured", "curves",
                                "roofline"]  # fmt: skip
    assert [line.split()[0] for line in lines[2:7]] == ["A", "B", "C", "D", "E"]
    assert lines[6].endswith("unsure") and not any(line.endswith("unsure") for line in lines[2:6])
    assert lines[2].split()[-2:] == ["1.10", "0.88"]  # 2.2 ms over 2 ms, and over 2.5 ms
    # |r - 1| over the four steady rows: 0.10, 0.30, 0.30, 0.02, median 0.20; E left out.
    assert "this run, 4 steady rows: the curves miss by a median of 20%" in text
    assert "above 1.00 times their prediction in 3 of them" in text
    assert "furthest off the curves: B at batch 1 (0.70), C at batch 1 (1.30), A at batch 1" in text
    assert "ran in under 0.80 of the curves' time: B at batch 1 (0.70), 70% of it depthwise" in text
    # On the roofline (2.5 ms): 0.88, 0.56, 1.04, 0.82; the curves come closer in A, C, D.
    assert "lecture 06's roofline misses by a median of 15%, above 1.00 in 1;" in text
    assert "the curves come closer in 3 of 4 rows" in text
    assert "is 0% to 0% of its predictions" in text  # 10 nodes at 1 us of 2.5 ms
    assert text.endswith("no conclusion from them") and "unsure: 1 of 5 rows" in text


def test_an_untrusted_calibration_or_a_disturbed_roofline_concludes_nothing_from_them():
    untrusted = zoo_report(ROWS, types.SimpleNamespace(trusted=False), engine(), MODELS)
    assert "the calibration was untrusted" in untrusted and "this run" not in untrusted
    disturbed = zoo_report(ROWS, types.SimpleNamespace(trusted=True), engine(unsure=True), MODELS)
    assert "this run, 4 steady rows" in disturbed
    assert "its column is no yardstick on this run" in disturbed
    assert "lecture 06's roofline misses" not in disturbed


def test_bad_rows_and_models_are_refused_by_name():
    trusted = types.SimpleNamespace(trusted=True)
    with pytest.raises(ValueError, match=r"missing: \[\('A', 1\)\]"):
        zoo_report(ROWS, trusted, engine(), {k: v for k, v in MODELS.items() if k[0] != "A"})
    with pytest.raises(TypeError, match="`models` must be a dict"):
        zoo_report(ROWS, trusted, engine(), None)
    with pytest.raises(TypeError, match="`rows` must be ZooRows"):
        zoo_report([("A", 1)], trusted, engine(), MODELS)
    with pytest.raises(ValueError, match="`predicted_s` must be a positive"):
        ZooRow(model="A", batch=1, predicted_s=0.0, measured_s=1e-3, spread=0.0, others=0.0,
               by_kind={}, worst=1.0)  # fmt: skip
    assert ZooRow(model="A", batch=2.0, predicted_s=1e-3, measured_s=1e-3, spread=0.0,
                  others=0.0, by_kind={}, worst=1.0).batch == 2  # fmt: skip
