"""Lecture 12's both-levels section says what the stored reference run shows (issue 53).

The section's table, its fusion lines and the prose around them read the packaged reference run
(:func:`perfmodel.capstone.reference_run`), so these tests hold on any machine: each checks a
number or a relation the prose states against the reference, and that the stored outputs are
the reference's. The "your machine" cell is checked for what it prints beside the reference.
"""

from __future__ import annotations

import re
import statistics

import pytest

pytest.importorskip("onnxruntime")

from conftest import ROOT, read_json  # noqa: E402
from perfmodel.capstone import ZOO, builders, reference_run  # noqa: E402

CELLS = read_json(ROOT / "notebooks" / "12_will_it_run_faster.ipynb")["cells"]
RUN = reference_run()
LEVELS = list(zip(RUN.rows["none"], RUN.rows["all"], strict=True))
SPEED_UP = {off.model: off.measured_s / on.measured_s for off, on in LEVELS if off.batch == 8}
CONVOLUTIONAL = ("ResNet-50", "MobileNetV2", "EfficientNet-B0", "ConvNeXt", "ShuffleNetV2",
                 "RegNetY-400MF", "DenseNet blocks", "SqueezeNet 1.1")  # fmt: skip
REST = ("MLP", "ViT", "BERT", "GPT-2", "LSTM", "GRU")
GELU = ("Div", "Erf", "Mul", "Add", "Mul")


def source(cell: dict) -> str:
    return "".join(cell["source"])


def printed(marker: str) -> str:
    found = [c for c in CELLS if c["cell_type"] == "code" and marker in source(c)]
    assert len(found) == 1, f"{len(found)} code cells contain {marker!r}"
    return "".join("".join(o.get("text", "")) for o in found[0]["outputs"])


def prose(marker: str) -> str:
    found = [source(c) for c in CELLS if c["cell_type"] == "markdown" and marker in source(c)]
    assert len(found) == 1, f"{len(found)} markdown cells contain {marker!r}"
    return " ".join(found[0].split())


def test_the_families_of_models_cover_the_reference():
    assert set(CONVOLUTIONAL) | set(REST) == set(ZOO) | set(builders.HELD_OUT)
    assert not set(CONVOLUTIONAL) & set(REST)


def test_the_stored_tables_are_the_packaged_reference():
    zoo = printed("reference = capstone.reference_run()")
    held = printed('print("held-out families")')
    machine = RUN.machine
    assert zoo.startswith(f"reference run, {machine['date']}: {machine['cpu']}")
    pattern = (r"^(\S.*?)\s+([18])\s+([\d.]+) ms\s+([\d.]+) ms\s+([\d.]+)(\*?)\s+([\d.]+) ms"
               r"\s+([\d.]+) ms\s+([\d.]+)(\*?) *$")  # fmt: skip
    for out, names in ((zoo, ZOO), (held, builders.HELD_OUT)):
        table = re.findall(pattern, out, re.M)
        chosen = [(off, on) for off, on in LEVELS if off.model in names]
        assert len(table) == len(chosen) == 2 * len(names)
        for (off, on), line in zip(chosen, table, strict=True):
            assert (line[0], int(line[1])) == (off.model, off.batch)
            assert float(line[2]) == pytest.approx(off.predicted_s * 1e3, abs=0.0051)
            assert float(line[4]) == pytest.approx(off.ratio, abs=0.0051)
            assert float(line[7]) == pytest.approx(on.measured_s * 1e3, abs=0.0051)
            assert float(line[8]) == pytest.approx(on.ratio, abs=0.0051)
            assert (bool(line[5]), bool(line[9])) == (off.unsure, on.unsure)  # "*": unsure
    assert any(r.unsure for r in RUN.rows["all"])  # the mark is shown on the stored run
    for label, level in (("off", "none"), ("all", "all")):
        for part, names in (("zoo", ZOO), ("held out", builders.HELD_OUT), ("all", None)):
            median, worst, miss = RUN.miss(level, names)
            line = f"optimisations {label}, {part}: median miss {median:.0%}, worst model {worst}"
            assert f"{line} ({miss:.0%})" in held
    speed_ups = held.splitlines()[-1].split(": ", 1)[1].split(", ")
    assert len(speed_ups) == len(SPEED_UP)
    for item in speed_ups:
        model, ratio = item.rsplit(" ", 1)
        assert float(ratio.rstrip("x")) == pytest.approx(SPEED_UP[model], abs=0.0051)


def test_the_method_the_prose_gives_is_the_one_recorded():
    text = prose("The table below is a **reference run**")
    words = {3: "three", 5: "five", 7: "seven", 10: "ten"}
    cycles, repeats, runs = (RUN.method[k] for k in ("cycles", "repeats", "runs"))
    assert f"Each row went through {words[cycles]} cycles" in text
    assert f"then {words[repeats]} fresh sessions of {words[runs]} timed runs" in text
    assert f"the median of the {words[cycles]}" in text
    for name in builders.HELD_OUT:
        assert name.split()[0] in text


def test_what_the_optimisations_buy_is_what_the_reference_measured():
    text = prose("The last line measures what the optimisations buy")
    conv = [SPEED_UP[m] for m in CONVOLUTIONAL]
    assert f"({min(conv):.1f} to {max(conv):.1f} times at batch 8)" in text
    most = sorted(SPEED_UP, key=SPEED_UP.__getitem__)[-2:]
    assert set(most) == {"MobileNetV2", "EfficientNet-B0"}
    assert "MobileNetV2 and EfficientNet-B0, built on depthwise convolutions, gain most" in text
    rest = [SPEED_UP[m] for m in REST]
    assert f"gain nothing ({min(rest):.2f} to {max(rest):.2f} times)" in text
    assert max(rest) < min(conv)
    assert min(SPEED_UP, key=SPEED_UP.__getitem__) == "BERT"
    assert "in BERT the optimised graph is clearly slower" in text


def test_berts_slowdown_and_what_the_prediction_expected():
    text = prose("The last line measures what the optimisations buy")
    off, on = RUN.row("none", "BERT", 8), RUN.row("all", "BERT", 8)
    assert f"took {on.measured_s / off.measured_s:.2f} times as long as the plain one" in text
    assert f"it expected {on.predicted_s / off.predicted_s:.2f} times" in text


def test_the_misses_the_prose_quotes_are_the_references():
    text = prose("The last line measures what the optimisations buy")
    for level, words in (("all", "with the optimisations on"), ("none", "with them off")):
        _, worst, miss = RUN.miss(level)
        if level == "all":
            assert (
                f"So {worst} is the model the reference misses most {words}, by {miss:.0%}" in text
            )
        else:
            assert f"{words} it is {worst}, by {miss:.0%}" in text
    none, all_on = RUN.miss("none")[0], RUN.miss("all")[0]
    held = [RUN.miss(level, builders.HELD_OUT)[0] for level in ("none", "all")]
    zoo = [RUN.miss(level, ZOO)[0] for level in ("none", "all")]
    rows = len(RUN.rows["none"])
    assert rows == 28 and len({r.model for r in RUN.rows["none"]}) == 14
    assert "Over the 28 rows of all fourteen families" in text
    assert f"median of {none:.0%} with the optimisations off and {all_on:.0%} with them on" in text
    assert f"over the 18 rows of the zoo alone, by {zoo[0]:.0%} and {zoo[1]:.0%}" in text
    assert f"over the 10 of the five held-out families, by {held[0]:.0%} and {held[1]:.0%}" in text
    summary = prose("## Summary")
    assert (
        f"misses the 28 rows of the fourteen families by a median of {none:.0%} with the "
        f"optimisations off and {all_on:.0%} with them on, and the five held-out ones by "
        f"{held[0]:.0%} and {held[1]:.0%}" in summary
    )


def test_the_fusion_lines_are_the_references_and_the_prose_describes_them():
    out = printed("the fusion that saves most")
    for model, found in RUN.fusions.items():
        top = " + ".join(found[0].origin_ops) if found else "(none)"
        assert re.search(rf"^{re.escape(model)}\s+{re.escape(top)}\s", out, re.M), model
    text = prose("In the convolutional networks the fusion that saves most")
    tops = {m: found[0].origin_ops for m, found in RUN.fusions.items() if found}
    with_bn = [m for m in CONVOLUTIONAL if m not in ("ConvNeXt", "SqueezeNet 1.1")]
    assert all(tops[m][:2] == ("Conv", "BatchNormalization") for m in with_bn)
    assert sum(len(tops[m]) == 3 for m in with_bn) > len(with_bn) / 2  # "in most, its activation"
    assert tops["SqueezeNet 1.1"] == ("Conv", "Relu")
    assert all(tops[m] == GELU for m in ("ConvNeXt", "ViT", "BERT", "GPT-2"))
    mobile = RUN.fusions["MobileNetV2"]
    assert all(f.origin_ops == ("Conv", "BatchNormalization", "Clip") for f in mobile)
    assert all(f.origin[0].endswith("depthwise") for f in mobile)
    assert any(f.origin_ops == ("MatMul", "Div") for f in RUN.fusions["BERT"])
    assert RUN.fusions["LSTM"] and all(
        f.origin_ops == ("Slice", "Slice") for f in RUN.fusions["LSTM"]
    )
    assert RUN.fusions["GRU"] == ()
    assert "The LSTM's fusions each join two slices, and the GRU has none." in text


def test_your_machine_sets_each_row_beside_the_reference():
    out = printed("on_rows = capstone.run_zoo(all_on")
    assert f"the reference: {RUN.machine['cpu']}, {RUN.machine['cores']} cores" in out
    ratio = r"\s+([\d.]+)(\*?)"
    pattern = rf"^(\S.*?)\s+([18]){ratio * 4} *$"
    lines = re.findall(pattern, out, re.M)
    assert [(m, int(b)) for m, b, *_ in lines] == [(m, b) for m in ZOO for b in (1, 8)]
    mine: dict[str, list[float]] = {"none": [], "all": []}
    for model, batch, off, _, ref_off, star_off, on, _, ref_on, star_on in lines:
        for level, ref, star in (("none", ref_off, star_off), ("all", ref_on, star_on)):
            row = RUN.row(level, model, int(batch))
            assert float(ref) == pytest.approx(row.ratio, abs=0.0051)
            assert bool(star) == row.unsure
        mine["none"].append(float(off))
        mine["all"].append(float(on))
    for label, level in (("off", "none"), ("all", "all")):
        yours = statistics.median(abs(r - 1) for r in mine[level])
        said = re.search(rf"optimisations {label}: your median miss (\d+)%, the reference's (\d+)%",
                         out)  # fmt: skip
        assert said, out
        assert abs(int(said[1]) - 100 * yours) <= 1  # the table rounds each ratio
        assert int(said[2]) == round(100 * RUN.miss(level, ZOO)[0])
    stars = sum(line[3] == "*" for line in lines) + sum(line[7] == "*" for line in lines)
    assert f"* unsure: {stars} of your {2 * len(lines)} rows" in out


def test_lecture_09s_activations_for_llama_are_what_lecture_12_quotes():
    """Lecture 12 cited "lecture 09's 417 GB", a number lecture 09 never printed; it now quotes
    the total lecture 09 prints and the activations' share of it."""
    from perfmodel import distributed
    from perfmodel.transformer import preset

    memory = distributed.training_memory(preset("Llama 2 7B"), data_parallel=8, zero_stage=1,
                                         micro_batch=4, seq_len=4096, recompute="none")  # fmt: skip
    nine = read_json(ROOT / "notebooks" / "09_go_multi_node.ipynb")["cells"]
    out = "".join("".join(o.get("text", "")) for c in nine if c["cell_type"] == "code"
                  for o in c.get("outputs", []))  # fmt: skip
    assert f"recompute      none: {memory.total / 1e9:6.1f} GB per GPU" in out
    text = prose("So the graph's count is the pessimistic one")
    assert f"Lecture 09 printed {memory.total / 1e9:.1f} GB per GPU for Llama 2 7B" in text
    assert f"{memory.activations / 1e9:.0f} GB of that is activations" in text
