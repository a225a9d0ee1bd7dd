"""What lecture 10 says about its own output, checked against what it prints.

Each test reads the committed notebook (its prose, its code and its stored outputs) and asserts
one sentence on the numbers printed there, or on the package the lecture calls: greedy cutting
fails on the lecture's chain, the combinatorial bound's ratio is the one quoted, the bubble
section cuts *one* batch into micro-batches, and the exercise asks a question the explorer can
answer.
"""

from __future__ import annotations

import ast
import json
import re

import pytest

from conftest import ROOT
from perfmodel import pipeline
from perfmodel.hardware import link_names
from perfmodel.pipeline import zoo

L10 = ROOT / "notebooks" / "10_split_a_model_into_a_pipeline.ipynb"


def cells():
    return json.loads(L10.read_text(encoding="utf-8"))["cells"]


def source(cell):
    return "".join(cell["source"])


def code(needle):
    """The source of the one code cell containing ``needle``."""
    (cell,) = [c for c in cells() if c["cell_type"] == "code" and needle in source(c)]
    return source(cell)


def printed(needle):
    """The text the code cell containing ``needle`` printed when the notebook was stored."""
    (cell,) = [c for c in cells() if c["cell_type"] == "code" and needle in source(c)]
    return "".join(
        "".join(o.get("text", "")) for o in cell["outputs"] if o["output_type"] == "stream"
    )


def prose():
    text = " ".join(source(c) for c in cells() if c["cell_type"] == "markdown")
    return re.sub(r"\s+", " ", text)


def rows(text, pattern):
    """Every match of ``pattern`` in ``text`` as a tuple of floats, keyed by its first group."""
    found = {int(m[0]): tuple(float(g) for g in m[1:]) for m in re.findall(pattern, text)}
    assert found, f"no line matches {pattern!r} in:\n{text}"
    return found


# --- "Greedy cutting gets this wrong" --------------------------------------------------------


def the_chain():
    """The lecture's chain, rebuilt from the numbers in its own code cell."""
    call = re.search(
        r"^chain = pipeline\.Graph\.chain\((\[.*?\]), (\[.*?\])\)$",
        code("pipeline.partition(chain, 2)"),
        re.MULTILINE,
    )
    assert call, "the chain example is not a pipeline.Graph.chain([...], [...]) call"
    return pipeline.Graph.chain(ast.literal_eval(call[1]), ast.literal_eval(call[2]))


def test_greedy_cutting_is_wrong_on_the_lectures_own_chain():
    assert "Greedy cutting" in prose() and "gets this wrong" in prose()
    out = printed("pipeline.greedy_cuts(")
    match = re.search(r"greedy (\(.*?\)): ([\d.]+) ms; exact (\(.*?\)): ([\d.]+) ms", out)
    assert match, out
    greedy, exact = float(match[2]), float(match[4])
    assert greedy > exact  # the claim: greedy's best split is worse than the optimum
    chain = the_chain()
    assert exact == pytest.approx(pipeline.partition(chain, 2).bottleneck)
    stages = ast.literal_eval(match[1])
    assert len(stages) <= 2 and pipeline.is_feasible(chain, stages)
    assert greedy == pytest.approx(max(pipeline.stage_cost(chain, s) for s in stages))


def test_the_prose_prices_the_stages_it_names_on_the_chain():
    """ "layers 1 and 2 together cost 0.5 + 3 + 3 = 6.5 ms; yet layers 1 to 3 cost only ... 4.5"."""
    text, chain = prose(), the_chain()
    pair = re.search(r"layers 1 and 2 together cost [\d.+ ]+= ([\d.]+) ms", text)
    three = re.search(r"layers 1 to 3 cost only [\d.+ ]+= ([\d.]+) ms", text)
    assert pair and three, "the prose no longer names the two stages greedy compares"
    assert pipeline.stage_cost(chain, [1, 2]) == pytest.approx(float(pair[1]))
    assert pipeline.stage_cost(chain, [1, 2, 3]) == pytest.approx(float(three[1]))
    assert float(three[1]) < float(pair[1])  # adding a layer made the stage cheaper
    start = re.search(r"giving stages of ([\d.+ ]+) and ([\d.+ ]+) ms", text)
    assert start, "the prose no longer prices the best cut"
    best = pipeline.partition(chain, 2)
    priced = [sum(float(x) for x in start[i].split("+")) for i in (1, 2)]
    assert priced == pytest.approx([pipeline.stage_cost(chain, s) for s in best.stages])


def test_the_10000_layer_split_claims_work_not_wall_clock_time():
    """It took 0.6-1.1 s on a busy 2-core machine: "well under a second" was not always true."""
    sentence = re.search(r"a 10,000-layer chain splits into 64 stages ([^:]*):", prose())
    assert sentence, "the sentence before the 10,000-layer split is gone"
    assert not re.search(r"second|fast|quick", sentence[1]) and "passes" in sentence[1]


# --- The combinatorial bound ------------------------------------------------------------------


def test_the_bound_ratio_in_the_prose_is_the_printed_one():
    out = printed("combinatorial_lower_bound(resnet, k)")
    table = rows(
        out,
        r"k=\s*(\d+): best\s+([\d.]+) µs in \d+ stages, combinatorial bound\s+([\d.]+)",
    )
    best, bound = table[16]
    ratio_line = re.search(r"B/L = ([\d.]+); .* could be (\d+)% worse", out)
    assert ratio_line, out
    assert float(ratio_line[1]) == pytest.approx(best / bound, abs=0.05)
    assert int(ratio_line[2]) == pytest.approx(100 * (best / bound - 1), abs=1)
    text = prose()
    assert f"might take {ratio_line[1]} times as long as the best one ({ratio_line[2]}% worse)" in (
        text
    )
    gap = re.search(r"leaves a gap of (\d+)%", text)
    assert gap and int(gap[1]) == round(100 * (1 - bound / best))


# --- Bubbles: one batch cut into micro-batches ------------------------------------------------

BUBBLE_CELL = "simulate_batch(zoo.gpt2_like, batch=8, micro_batches=m, stages=4) for m in"
BUBBLE_ROW = (
    r"m=(\d+): slowest stage\s+([\d.]+) µs a sequence, bubble\s+([\d.]+)% "
    r"\(equal stages\s+([\d.]+)%\), batch done in ([\d.]+) ms"
)


def test_the_bubble_run_cuts_one_batch_and_the_prose_quotes_it():
    table = rows(printed(BUBBLE_CELL), BUBBLE_ROW)
    assert sorted(table) == [1, 2, 4, 8]
    # One micro-batch is the whole batch crossing 4 stages in turn: 3 of 4 stages idle.
    assert table[1][1] == pytest.approx(75.0)
    # The same batch, cut finer, is done sooner, and each cut costs a little per sequence.
    done = [table[m][3] for m in (1, 2, 4, 8)]
    assert done == sorted(done, reverse=True) and done[-1] < done[0]
    per_sequence = [table[m][0] for m in (1, 2, 4, 8)]
    assert per_sequence == sorted(per_sequence)
    text = prose()
    quoted = re.search(
        r"shrink the bubble from ([\d.]+)% to ([\d.]+)%, and the batch is done in ([\d.]+) ms "
        r"instead of ([\d.]+) ms",
        text,
    )
    assert quoted, "the sentence reading the bubble table is gone"
    assert [float(g) for g in quoted.groups()] == [table[1][1], table[8][1], table[8][3],
                                                   table[1][3]]  # fmt: skip
    grows = re.search(r"grows only from ([\d.]+) to ([\d.]+) µs", text)
    assert grows and (float(grows[1]), float(grows[2])) == (table[1][0], table[8][0])
    assert (table[8][0] - table[1][0]) / table[1][0] < 0.01  # "only": under 1% here
    for misleading in ("latency of one micro-batch", "running 8 micro-batches"):
        assert misleading not in text and misleading not in printed(BUBBLE_CELL)


def test_the_printed_bubble_run_is_the_batch_cut_into_micro_batches():
    """Recomputed from the package: 8 micro-batches of 1 sequence, each priced at its size."""
    table = rows(printed(BUBBLE_CELL), BUBBLE_ROW)
    whole = zoo.gpt2_like()
    split = pipeline.partition(whole, 4)
    assert table[1][3] == pytest.approx(
        1e3 * sum(pipeline.stage_cost(whole, s) for s in split.stages), abs=0.005
    )
    one = zoo.gpt2_like(batch=1)
    times = [pipeline.stage_cost(one, s) for s in pipeline.partition(one, 4).stages]
    assert table[8][3] == pytest.approx(1e3 * pipeline.simulate(times, 8).makespan, abs=0.005)


def test_short_sequences_show_that_smaller_micro_batches_stop_paying():
    out = printed("seq_len=128)")
    table = rows(out, r"m=(\d+): slowest stage\s+([\d.]+) µs a sequence, bubble\s+([\d.]+)%, "
                      r"batch done in\s+(\d+) µs")  # fmt: skip
    soonest = re.search(r"soonest done with m = (\d+)", out)
    assert soonest and int(soonest[1]) == min(table, key=lambda m: table[m][2])
    assert int(soonest[1]) < max(table)  # past it, more micro-batches take longer
    text = prose()
    quoted = re.search(
        r"One 128-token sequence costs the slowest stage ([\d.]+) µs, ([\d.]+) times its share of "
        r"the whole batch \(([\d.]+) µs\), and the batch is done soonest with (\d+) micro-batches",
        text,
    )
    assert quoted, "the sentence reading the short-sequence table is gone"
    one, times, whole, best = float(quoted[1]), float(quoted[2]), float(quoted[3]), int(quoted[4])
    assert (one, whole, best) == (table[8][0], table[1][0], int(soonest[1]))
    assert times == pytest.approx(one / whole, abs=0.05)


# --- On your own -----------------------------------------------------------------------------


def stages_used(device, link):
    return len(pipeline.partition(zoo.resnet50_like(device=device, link=link), 8).stages)


def test_the_resnet_exercise_asks_what_the_explorer_can_show():
    (bullet,) = [
        line for c in cells() if c["cell_type"] == "markdown" and "### On your own" in source(c)
        for line in re.split(r"\n- ", source(c)) if "ResNet-50" in line
    ]  # fmt: skip
    bullet = re.sub(r"\s+", " ", bullet)
    never, some = (
        re.search(r"On (\S+ \S+)s the best ResNet-50 split never uses all 8", bullet),
        (re.search(r"Switch the device to (.+?): over which links does it use all 8", bullet)),
    )
    assert never and some, bullet
    assert all(stages_used(never[1], link) < 8 for link in link_names())
    assert any(stages_used(some[1], link) == 8 for link in link_names())


def test_the_inception_section_quotes_its_printed_counts_and_proofs():
    out = printed("networks.inception_v3()")
    assert "312 nodes" in out and "35,682 downsets" in out and "23,834,568 parameters" in out
    assert "312 nodes and 35,682 downsets" in prose()
    assert out.count("optimal: True") == 2  # "Both splits are proven optimal"
    assert "Both splits are proven optimal" in prose()
    pairs = 35_682 * 35_681 / 2
    assert 5.5e8 < pairs < 6.5e8  # "some 6 × 10⁸ pairs"


def test_the_inception_series_points_are_the_ones_the_prose_lists():
    from perfmodel.pipeline import networks
    from perfmodel.pipeline.blocks import series_points

    g = networks.inception_v3()
    labels = [g.labels[v] for v in series_points(g)]
    concats = [label for label in labels if label.startswith("Mixed_") and label.endswith("concat")]
    assert len(concats) == 11 and len(labels) == 30
    stem = labels[: labels.index(concats[0])]
    assert len(stem) == 17  # "the 17 layers of the stem"
    assert labels[-2:] == ["Inception-v3 average pool", "Inception-v3 fc"]
    assert "the 17 layers of the stem, the concatenation closing each of the 11 modules" in prose()
    # "stops listing downsets at about 16,000 for a graph this size"
    assert pipeline.downsets(g) is None and 15_000 < 5_000_000 // g.n < 17_000


def test_the_memory_section_quotes_what_it_prints():
    out = printed("bytes_per_param")
    free, held = re.findall(r"(\d+\.\d+) ms, optimal: True; GB per stage: ([\d., ]+)", out)
    free_ms, held_ms = float(free[0]), float(held[0])
    free_gb = [float(g) for g in free[1].split(",")]
    held_gb = [float(g) for g in held[1].split(",")]
    text = prose()
    assert f"asks {max(free_gb)} GB of its first stage" in text and free_gb[0] == max(free_gb)
    assert max(free_gb) > 40 >= max(held_gb)
    assert f"rises from {free_ms:.2f} to {held_ms:.2f} ms, {held_ms / free_ms - 1:.1%}" in text
    assert f"raises the bottleneck by {held_ms / free_ms - 1:.1%}" in out
    assert f"raised the bottleneck {held_ms / free_ms - 1:.1%}" in text  # the summary
    assert max(free_gb) < 40 * 2**30 / 1e9  # "with the card's whole 40 GiB ... fits as it is"


def test_the_memory_sections_layer_facts_hold():
    gpt3 = zoo.gpt2_like(layers=32, d_model=2560, heads=32, batch=6, seq_len=1536,
                         device="A100 SXM4 40GB", link="NVLink 3")  # fmt: skip
    assert gpt3.labels[0] == "embed" and gpt3.params[0] == 50_257 * 2_560
    assert f"{gpt3.params[0] * 16 / 1e9:.1f} GB" == "2.1 GB"  # "take 2.1 GB"
    assert gpt3.params[-1] >= gpt3.params[0]  # "an output head as large"
    training = {"in_flight": 4, "bytes_per_param": 16}
    free = pipeline.partition(gpt3.with_memory(capacity_bytes=float("inf"), **training), 4)
    held = pipeline.partition(gpt3.with_memory(capacity_bytes=40e9, **training), 4)
    assert len(free.stages[-1]) == min(len(s) for s in free.stages)  # the head's stage: fewest
    assert len(held.stages[0]) == len(free.stages[0]) - 5  # "ends five nodes sooner"
    assert gpt3.labels[held.stages[0][-1]] == "residual" == gpt3.labels[free.stages[0][-1]]
    assert gpt3.labels[held.stages[0][-1] + 1] == "layer norm"  # the end of a layer
    assert all(h[-1] < f[-1] for h, f in zip(held.stages[:-1], free.stages[:-1], strict=True))
    costs = [pipeline.stage_cost(gpt3, s) for s in held.stages]
    assert costs.index(max(costs)) == 2  # "the third stage becomes the slowest"
    limited = gpt3.with_memory(capacity_bytes=40 * 2**30, **training)
    assert pipeline.partition(limited, 4).bottleneck == free.bottleneck
