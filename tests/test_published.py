"""Published throughputs beside the roofline: every run is predicted, cited and, where the
two differ by more than a quarter, explained (capstone.published)."""

from __future__ import annotations

import re

import pytest

from perfmodel import capstone, hardware
from perfmodel.capstone import published
from perfmodel.capstone.published import MISS, MLPERF_31, PUBLISHED, PUBLISHED_INFERENCE

TABLES = {"PUBLISHED": PUBLISHED, "PUBLISHED_INFERENCE": PUBLISHED_INFERENCE}
#: The sane band: every prediction within a factor of 6 of its measurement, either way. The
#: widest miss is BERT-large on an L4 in MLPerf (5.5 times, fusion and unpadded sequences).
BAND = 6


@pytest.fixture(scope="module", params=list(TABLES))
def rows(request):
    return capstone.predict_published(TABLES[request.param])


def test_every_run_is_predicted_cited_and_in_the_band(rows):
    for row in rows:
        run = row.run
        source = run.source
        assert source.title and source.publisher, run.name
        assert re.fullmatch(r"\d{4}(-\d{2}(-\d{2})?)?", source.date), run.name
        assert source.url.startswith("https://"), run.name
        assert hardware.get(run.device).kind == "gpu"  # a catalogue GPU, never added here
        assert run.setup and run.engine in ("PyTorch", "TensorRT"), run.name
        assert row.predicted_samples_per_s > 0
        assert 1 / BAND < row.ratio < BAND, (run.name, row.ratio)


def test_why_is_given_exactly_where_the_miss_is_over_a_quarter(rows):
    for row in rows:
        assert bool(row.run.why) == (row.miss > MISS), (row.run.name, round(row.ratio, 2))


def test_the_miss_is_symmetric():
    row = capstone.predict_published(PUBLISHED[:1])[0]
    assert row.miss == pytest.approx(max(row.ratio, 1 / row.ratio) - 1)
    doubled = published.Prediction(row.run, 2 * row.run.samples_per_s, 0.5, 0.5, "x")
    halved = published.Prediction(row.run, row.run.samples_per_s / 2, 0.5, 0.5, "x")
    assert doubled.miss == halved.miss == pytest.approx(1.0)


def test_the_inference_table_spans_models_and_gpus():
    runs = PUBLISHED_INFERENCE
    assert len(runs) >= 10 and not any(run.training for run in runs)
    assert len({run.model for run in runs}) >= 3
    assert len({run.device for run in runs}) >= 3
    assert {run.model for run in runs} - {"ResNet-50"}  # beyond ResNet-50
    # every language model row says its sequence length; no image model row has one
    for run in runs:
        assert (run.sequence is not None) == run.model.startswith("BERT"), run.name
        # and says it in its name: BERT-base ran at 128 tokens in FP16, at 384 in INT8
        assert run.sequence is None or f", {run.sequence} tokens, " in run.name, run.name


def test_the_roofline_is_a_ceiling_for_eager_pytorch_and_fusion_beats_it():
    """An engine that runs one kernel per node never beats the per-node sum by much; TensorRT
    at a large batch does, and taking the fusible classes out of the sum brings it back to
    within a quarter, or above, except where MLPerf also drops BERT's padding."""
    rows = capstone.predict_published(PUBLISHED + PUBLISHED_INFERENCE)
    eager = [row for row in rows if row.run.engine == "PyTorch"]
    assert eager and min(row.ratio for row in eager) > 0.9
    fused = [row for row in rows if row.run.engine == "TensorRT" and row.run.batch >= 128]
    assert len(fused) >= 6 and max(row.ratio for row in fused) < 1
    padded = [row for row in fused if row.run.source == MLPERF_31 and row.run.sequence]
    assert len(padded) == 2
    for row in fused:
        if row not in padded:
            assert row.fused_ratio > 1 - MISS, (row.run.name, row.fused_ratio)
        else:  # fusion alone leaves MLPerf's BERT more than twice as fast as priced
            assert row.fused_ratio < 0.5, (row.run.name, row.fused_ratio)


def test_a_small_batch_is_slower_than_its_roofline():
    """At batch 1 every kernel's launch weighs: the same TensorRT engine that beats the
    roofline at batch 128 falls short of it at batch 1."""
    rows = {row.run.name: row for row in capstone.predict_published(PUBLISHED_INFERENCE)}
    assert rows["BERT-base, 128 tokens, A100 40GB, TensorRT FP16, batch 1"].ratio > 1 + MISS
    assert rows["BERT-base, 128 tokens, A100 40GB, TensorRT FP16, batch 128"].ratio < 1 - MISS


def test_each_run_is_priced_as_it_ran():
    """Sequence length, model size and precision reach the prediction: BERT-large at 384
    tokens does more than 3 times BERT-base's work, 128 tokens less than 40% of 384's, and
    the same engine in INT8 is predicted twice as fast as in FP16 (half the bytes, twice the
    peak)."""
    large = published._model("BERT-large", 1, 384)
    base = published._model("BERT-base", 1, 384)
    assert large.flops > 3 * base.flops
    assert published._model("BERT-base", 1, 128).flops < 0.4 * base.flops
    rows = {row.run.name: row for row in capstone.predict_published(PUBLISHED_INFERENCE[2:4])}
    fp16, int8 = (
        rows[f"BERT-large, 384 tokens, A100 40GB, TensorRT {p}, batch 128"]
        for p in ("FP16", "INT8")
    )
    # (the integer token ids are not retyped, hence not exactly 2)
    assert int8.predicted_samples_per_s == pytest.approx(2 * fp16.predicted_samples_per_s, rel=1e-4)


def test_the_runs_argument_is_checked():
    with pytest.raises(TypeError, match="`runs`"):
        capstone.predict_published(PUBLISHED[0])
    with pytest.raises(TypeError, match="`runs`"):
        capstone.predict_published(["V100 inference, FP32"])
    with pytest.raises(ValueError, match="`runs`"):
        capstone.predict_published(())
    unknown = published.PublishedRun("x", "T4", "fp16", False, 1, 1, 1.0, model="GPT-5")
    with pytest.raises(ValueError, match="GPT-5"):
        capstone.predict_published([unknown])
