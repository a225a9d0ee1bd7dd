"""What lecture 09 says about its own measured collectives and printed tables (issue 24).

Each test reads the committed notebook's stored output and asserts the relation its prose
states, with a minimum count of matches, so that a pattern which stopped matching fails
instead of asserting nothing. A run too noisy to judge must say so and judge nothing.
"""

from __future__ import annotations

import inspect
import json
import re

import pytest

from conftest import ROOT, cpu_hog
from perfmodel.transformer import preset

L09 = ROOT / "notebooks" / "09_go_multi_node.ipynb"
COLLECTIVES = ("allreduce", "allgather", "broadcast")


def cells():
    return json.loads(L09.read_text(encoding="utf-8"))["cells"]


def source(cell):
    return "".join(cell["source"])


def printed(needle):
    """The stdout the one code cell containing ``needle`` stored."""
    found = [c for c in cells() if c["cell_type"] == "code" and needle in source(c)]
    assert len(found) == 1, f"{len(found)} code cells contain {needle!r}"
    return "".join("".join(o.get("text", "")) for o in found[0]["outputs"])


def prose():
    text = " ".join(source(c) for c in cells() if c["cell_type"] == "markdown")
    return re.sub(r"\s+", " ", text)


def test_lecture_09_judges_each_held_out_error_only_from_a_steady_run():
    """Finding: the prose said "the broadcast often within a few percent" where the stored runs
    printed -10% and -20%, and the old test passed whenever "too noisy to judge" appeared. Now
    each line prints its verdict: within a quarter or not when the repeats agree, "not judged"
    when they do not, and the cell names the collectives it did not judge."""
    text = prose()
    assert "within a few percent" not in text
    assert "should land within about a quarter, and each line above ends with whether" in text
    out = printed("large = bench.read_results(")
    lines = re.findall(
        r"^\s*(allreduce|allgather|broadcast): B = .*measured\s+[\d.]+ ms \(([+-]\d+)%\): (.+)$",
        out,
        re.M,
    )
    unfitted = re.findall(
        r"^\s*(allreduce|allgather|broadcast): not fitted: its times do not grow", out, re.M
    )
    assert sorted(c for c, _, _ in lines) + unfitted == sorted(COLLECTIVES), out
    noisy = re.search(r"^too noisy to judge: (.+?) \(repeats that disagree", out, re.M)
    named = set(noisy[1].split(", ")) if noisy else set()
    assert named <= set(COLLECTIVES) and set(unfitted) <= named
    for collective, error, verdict in lines:
        if collective in named:
            assert verdict == "not judged: its repeats disagree"  # no conclusion from noise
        elif abs(int(error)) <= 25:
            assert verdict == "within a quarter"
        else:
            assert verdict == "off by more than a quarter"
    assert {c for c, _, v in lines if v.startswith("not judged")} | set(unfitted) == named


def test_lecture_09_first_fit_misses_by_tens_of_percent_somewhere():
    """ "The fit misses by tens of percent somewhere (the typical misses above)"."""
    out = printed("result = bench.run(2")
    misses = re.findall(r"^\s*(allreduce|allgather|broadcast): .*typical miss\s+(\d+)%", out, re.M)
    assert [c for c, _ in misses] == list(COLLECTIVES), out
    assert max(int(m) for _, m in misses) >= 10
    assert "the fit misses by tens of percent somewhere (the typical misses above)" in prose()


def test_lecture_09_buckets_and_intensity_match_the_text():
    """Moved from test_statements_09_11_12.py, with the count of matched rows asserted: a
    pattern that stopped matching left the dictionary empty, and the test failed only by
    chance (a KeyError)."""
    out = printed("for buckets in (1, 4, 16, 64, 512)")
    efficiency = {
        int(b): int(e) for b, e in re.findall(r"(\d+) buckets:.*efficiency\s+(\d+)%", out)
    }
    assert sorted(efficiency) == [1, 4, 16, 64, 512], out
    paragraph = [source(c) for c in cells() if "One bucket cannot overlap at all" in source(c)]
    assert len(paragraph) == 1
    text = paragraph[0]
    assert f"({efficiency[1]}%)" in text and f"({efficiency[16]}%)" in text
    assert f"({efficiency[512]}%)" in text
    assert efficiency[1] < efficiency[16] > efficiency[512]  # "lose again"
    xl = preset("GPT-2 XL (1.5B)")
    assert round(2 * xl.parameters / 25e6, -1) in (120, 130)  # "about 125 buckets"
    split = printed("distributed.split_minibatch(4096, 4096, 1024)")
    found = dict(re.findall(r"^\s*(before|after):.*MB,\s+([\d.]+) FLOPs per byte", split, re.M))
    assert sorted(found) == ["after", "before"], split
    assert (round(float(found["before"])), round(float(found["after"]))) == (341, 205)


def test_the_collective_benchmark_says_when_a_busy_machine_drowns_it():
    """Beside a CPU hog the repeats disagree, and the notebook then judges none of them."""
    from perfmodel.comms import bench

    with cpu_hog(4):
        busy = bench.run(2, quick=True, repeats=3, fit_from=2**16)
    assert busy.noisy  # the repeats disagree: the notebook then says "not judged"
    assert set(busy.noisy) <= set(COLLECTIVES)


@pytest.mark.parametrize("collective", COLLECTIVES)
def test_a_steady_run_is_judged_and_a_noisy_one_is_not(collective):
    """The verdict rule the notebook prints, on a synthetic run: steady repeats are judged,
    disagreeing ones named noisy."""
    from perfmodel.comms import bench

    sizes = [2**22, 2**23, 2**24]
    steady = [[n / 1e9 + 1e-6] * 2 for n in sizes]
    data = {"ranks": 2, "library": "a toy", "host": "here", "repeats": 2, "results": {}}
    for name in COLLECTIVES:
        times = [list(t) for t in steady]
        if name == collective:
            times[1] = [times[1][0], 2 * times[1][0]]  # two repeats a factor of two apart
        held = {"size": 2**25, "times": [2**25 / 1e9 + 1e-6] * 2}
        data["results"][name] = {"sizes": sizes, "times": times, "held_out": held}
    result = bench.read_results(data)
    assert result.noisy == (collective,) and result.unfitted == ()


def test_times_that_do_not_grow_leave_a_collective_unfitted_and_noisy():
    """Finding: on a busy machine lecture 09 stopped with "`times` do not grow with `sizes`"
    (the fit above the cache has three sizes, and a neighbour can make a larger one faster).
    The collective is now left unfitted and named too noisy to judge."""
    from perfmodel.comms import bench

    sizes = [2**22, 2**23, 2**24]
    held = {"size": 2**25, "times": [2**25 / 1e9] * 2}
    grow = [[n / 1e9] * 2 for n in sizes]
    shrink = [[t] * 2 for t in (0.03, 0.02, 0.01)]
    data = {"ranks": 2, "library": "a toy", "host": "here", "repeats": 2, "results": {
        "allreduce": {"sizes": sizes, "times": grow, "held_out": held},
        "broadcast": {"sizes": sizes, "times": shrink, "held_out": held},
    }}  # fmt: skip
    result = bench.read_results(data)
    assert list(result.fits) == ["allreduce"] and result.unfitted == ("broadcast",)
    assert result.noisy == ("broadcast",)


def test_the_static_views_efficiencies_are_the_ones_the_prose_gives():
    """Finding: "from 64 GPUs on ... efficiency falls to 64%" while the view drew 72% on 64
    GPUs (64% only on 512), the count a workbook question asks about."""
    from perfmodel.distributed import data_parallel_step
    from perfmodel.widgets.distributed import NVLINK, data_parallel_view

    defaults = inspect.signature(data_parallel_view).parameters

    def efficiency(devices, batch=defaults["batch_per_device"].default):
        return data_parallel_step(
            preset(defaults["model"].default), batch_per_device=batch,
            seq_len=defaults["seq_len"].default, devices=devices, device="H100 SXM",
            link=defaults["network"].default, overlap=True, buckets=defaults["buckets"].default,
            gpus_per_node=8, intra_link=NVLINK["H100 SXM"], zero_stage=1, recompute="full",
        ).efficiency  # fmt: skip

    (text,) = [source(c) for c in cells() if "Inside a node NVLink all but hides" in source(c)]
    said = f"({efficiency(8):.0%} on 8 GPUs)", f"{efficiency(64):.0%} on 64 GPUs"
    assert all(part in text for part in said), (said, text)
    assert f"{efficiency(512):.0%} on 512" in text
    assert "above 95%" in text and efficiency(512, batch=2) > 0.95
