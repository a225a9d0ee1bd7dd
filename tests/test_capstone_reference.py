"""The stored reference run lecture 12 tells its both-levels story from."""

from __future__ import annotations

import json
import statistics

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
    with pytest.raises(ValueError, match="`models` must name recorded models"):
        RUN.miss("all", ["AlexNet"])
    with pytest.raises(ValueError, match="`level` must be one of"):
        RUN.miss("fast")


def test_row_finds_a_recorded_row_and_names_what_exists_otherwise():
    row = RUN.row("all", "BERT", 8)
    assert (row.model, row.batch) == ("BERT", 8)
    with pytest.raises(ValueError, match="must name a recorded row.*'AlexNet' at batch 8"):
        RUN.row("all", "AlexNet", 8)
    with pytest.raises(ValueError, match="must name a recorded row"):
        RUN.row("none", "BERT", 4)


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


def test_a_path_that_is_not_one_is_a_type_error():
    with pytest.raises(TypeError, match="`path` must be a str or Path \\(got int\\)"):
        reference_run(3)  # type: ignore[arg-type]
