"""The stored reference run lecture 12 tells its both-levels story from."""

from __future__ import annotations

import json
import statistics

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from perfmodel.capstone import ZOO, builders, reference_run  # noqa: E402
from perfmodel.capstone.reference import ReferenceRun  # noqa: E402

RUN = reference_run()


def test_both_levels_hold_every_model_of_the_zoo_and_the_held_out_at_both_batches():
    expected = [(m, b) for m in (*ZOO, *builders.HELD_OUT) for b in (1, 8)]
    for level in ("none", "all"):
        assert [(r.model, r.batch) for r in RUN.rows[level]] == expected
        assert all(r.predicted_s > 0 and r.measured_s > 0 for r in RUN.rows[level])
        # each row's parts add up to its prediction, as a live run's do
        for r in RUN.rows[level]:
            assert sum(r.by_kind.values()) == pytest.approx(r.predicted_s, rel=1e-9)


def test_the_machine_and_the_method_are_recorded():
    assert {"cpu", "cores", "onnxruntime", "numpy", "python", "date", "others"} <= set(RUN.machine)
    assert int(RUN.machine["cores"]) >= 1
    assert RUN.method["cycles"] >= 3 and RUN.method["repeats"] >= 5 and RUN.method["runs"] >= 5


def test_the_reference_meets_issue_53s_median_goal_at_both_levels():
    """Median |measured/predicted - 1| at most 10% at each level. The worst model's goal (25%)
    holds with the optimisations off; with them on, BERT missed it by two points on the
    recorded run (27%), which lecture 12 says."""
    for level in ("none", "all"):
        median, worst, miss = RUN.miss(level)
        assert median <= 0.10, (level, median)
    assert RUN.miss("none")[2] <= 0.25


def test_miss_is_the_median_over_rows_and_the_worst_models_median_over_its_batches():
    for level in ("none", "all"):
        rows = RUN.rows[level]
        median, worst, miss = RUN.miss(level, ZOO)
        zoo = [abs(r.ratio - 1) for r in rows if r.model in ZOO]
        assert median == statistics.median(zoo)
        per_model = {
            m: statistics.median(abs(r.ratio - 1) for r in rows if r.model == m) for m in ZOO
        }
        assert miss == max(per_model.values()) == per_model[worst]
    with pytest.raises(ValueError, match="`level` must be one of"):
        RUN.miss("fast")


def test_miss_takes_any_collection_of_names_and_refuses_what_is_not_one():
    """A generator was used up by the first row; a string matched substrings; an unknown name
    was ignored (found by an attack on the reference)."""
    expected = RUN.miss("all", list(ZOO))
    assert RUN.miss("all", (m for m in ZOO)) == expected
    assert RUN.miss("all", iter(list(ZOO))) == expected
    assert RUN.miss("all", ZOO) == expected
    assert RUN.miss(" ALL ", [m.lower() for m in ZOO]) == expected
    with pytest.raises(TypeError, match="`models` must be a collection of model names.*str 'BERT'"):
        RUN.miss("all", "BERT")
    with pytest.raises(TypeError, match="`models` must be a collection of model names.*int 5"):
        RUN.miss("all", 5)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`models` must name a recorded model.*'Nope'.*BERT"):
        RUN.miss("all", ["BERT", "Nope"])
    with pytest.raises(ValueError, match="`models` must name at least one"):
        RUN.miss("all", [])


def test_row_finds_a_recorded_row_and_names_what_exists_otherwise():
    row = RUN.row("all", "BERT", 8)
    assert (row.model, row.batch) == ("BERT", 8)
    assert RUN.row("ALL", " bert", np.int64(8)) == row == RUN.row("all", "BERT", 8.0)
    with pytest.raises(ValueError, match="`model` must name a recorded model.*'AlexNet'.*BERT"):
        RUN.row("all", "AlexNet", 8)
    with pytest.raises(ValueError, match="`batch` must be one BERT was recorded at.*got 4.*1, 8"):
        RUN.row("none", "BERT", 4)
    with pytest.raises(TypeError, match="`batch`"):
        RUN.row("none", "BERT", "8")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="`batch`"):
        RUN.row("none", "BERT", True)
    with pytest.raises(TypeError, match="`model` must be a model name"):
        RUN.row("none", None, 1)  # type: ignore[arg-type]


def test_the_fusions_name_their_exported_nodes_and_the_largest_saving_comes_first():
    assert {"MobileNetV2", "BERT"} <= set(RUN.fusions)
    for found in RUN.fusions.values():
        assert [f.saved_s for f in found] == sorted((f.saved_s for f in found), reverse=True)
        assert all(len(f.origin) == len(f.origin_ops) >= 2 for f in found)


def test_the_run_survives_a_round_trip_through_json(tmp_path):
    again = ReferenceRun.from_json(RUN.to_json())
    assert again == RUN
    path = tmp_path / "run.json"
    path.write_text(RUN.to_json(), encoding="utf-8")
    assert reference_run(path) == RUN
    assert reference_run(str(path)).rows["none"][0] == RUN.rows["none"][0]
    assert json.loads(RUN.to_json())["method"] == RUN.method


def test_a_path_that_is_not_one_is_a_type_error_and_a_bad_file_a_value_error(tmp_path):
    with pytest.raises(TypeError, match="`path` must be a str or Path \\(got int\\)"):
        reference_run(3)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="`path` must be a readable UTF-8 file"):
        reference_run(tmp_path)
    binary = tmp_path / "run.bin"
    binary.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(ValueError, match="`path` must be a readable UTF-8 file"):
        reference_run(binary)
    broken = tmp_path / "broken.json"
    broken.write_text("{", encoding="utf-8")
    with pytest.raises(ValueError, match="broken.json: a reference run must be JSON"):
        reference_run(broken)


def good() -> dict:
    return json.loads(RUN.to_json())


def broken(change) -> str:
    data = good()
    change(data)
    return json.dumps(data)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d.pop("machine"),
            "must have the keys machine, method, rows, fusions; missing machine",
        ),
        (lambda d: d["machine"].pop("date"), "machine must have the keys.*missing date"),
        (lambda d: d["method"].update(cycles=4), "method\\['cycles'\\] must be odd"),
        (lambda d: d["method"].update(cycles=5.5), "method\\['cycles'\\] must be a whole count"),
        (lambda d: d["method"].update(runs=True), "method\\['runs'\\] must be a whole count"),
        (lambda d: d["rows"].pop("all"), "rows must have the keys none, all; missing all"),
        (lambda d: d["rows"]["all"].reverse(), "must hold the same models at the same batches"),
        (lambda d: d["rows"]["all"].pop(), "must hold the same models at the same batches"),
        (lambda d: d["rows"]["none"][0].pop("worst"), "rows\\['none'\\]\\[0\\] must have the keys"),
        (lambda d: d["rows"]["none"][0].update(ratio=1.0), "unknown ratio"),
        (
            lambda d: d["rows"]["none"][0].update(spread=-5),
            "spread must be a finite number of at least 0",
        ),
        (lambda d: d["rows"]["none"][0].update(by_kind={}), "by_kind must split predicted_s"),
        (lambda d: d["rows"]["none"][0].update(by_kind="x"), "by_kind must split predicted_s"),
        (lambda d: d["rows"]["none"][0].update(predicted_s=-1), "predicted_s"),
        (lambda d: d["fusions"]["BERT"][0].update(origin="fc0"), "origin must be a JSON list"),
        (
            lambda d: d["fusions"]["BERT"][0].update(origin_ops=["Div"]),
            "two or more exported nodes",
        ),
        (
            lambda d: d["fusions"]["BERT"][0].update(saved_s="big"),
            "saved_s must be a finite number",
        ),
    ],
)
def test_a_malformed_reference_is_a_value_error_naming_the_field(change, message):
    with pytest.raises(ValueError, match=message):
        ReferenceRun.from_json(broken(change))


def test_nan_is_neither_read_nor_written():
    text = RUN.to_json().replace('"spread": 0.', '"spread": NaN, "x": 0.', 1)
    with pytest.raises(ValueError, match="must be JSON \\(NaN is not a number JSON allows"):
        ReferenceRun.from_json(text)
    with pytest.raises(TypeError, match="`text` must be a str of JSON"):
        ReferenceRun.from_json(None)  # type: ignore[arg-type]


def test_this_machine_says_what_the_reference_records_of_it():
    from perfmodel.capstone import this_machine

    here = this_machine()
    assert set(here) == set(RUN.machine) - {"others", "date"}
    assert int(here["cores"]) >= 1 and here["cpu"]
    import onnxruntime

    assert here["onnxruntime"] == onnxruntime.__version__
