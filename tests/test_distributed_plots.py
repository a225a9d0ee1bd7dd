"""Lecture 09's pictures draw what the models computed, and the explorer agrees with them."""

from __future__ import annotations

import matplotlib

matplotlib.use("agg")

import pytest  # noqa: E402

from perfmodel import comms, distributed  # noqa: E402
from perfmodel.comms.bench import read_results  # noqa: E402
from perfmodel.plotting.distributed import alpha_beta_plot, memory_plot, step_plot  # noqa: E402
from perfmodel.transformer import preset  # noqa: E402
from perfmodel.widgets.distributed import data_parallel_explorer, data_parallel_view  # noqa: E402

MODEL = preset("GPT-2 XL (1.5B)")


def synthetic_run() -> dict:
    """A benchmark's JSON for a link with α = 5 µs and B = 2 GB/s, every repeat exact."""
    truth = comms.LinkModel(2e9, 5e-6)
    sizes = [8 * 4**k for k in range(10)]
    results = {}
    for collective in ("allreduce", "allgather", "broadcast"):
        cost = comms.terms(collective, 2)
        results[collective] = {
            "sizes": sizes,
            "times": [[cost.time(n, truth)] * 3 for n in sizes],
            "held_out": {"size": 2**26, "times": [cost.time(2**26, truth) * 1.1] * 3},
        }
    return {"ranks": 2, "library": "synthetic", "host": "test", "repeats": 3, "results": results}


def test_the_alpha_beta_plot_draws_the_fit_and_the_held_out_check():
    result = read_results(synthetic_run())
    assert result.fits["allreduce"].latency == pytest.approx(5e-6)
    assert result.held_out["allreduce"].error == pytest.approx(1 / 1.1 - 1)
    ax = alpha_beta_plot(result)
    labels = [line.get_label() for line in ax.get_lines()]
    assert any("α = 5 µs" in label and "B = 2 GB/s" in label for label in labels)
    assert any("measured (-9%)" in label for label in labels)
    left_out = read_results(synthetic_run(), fit_from=8 * 4**5)
    labels = [line.get_label() for line in alpha_beta_plot(left_out).get_lines()]
    assert "measured, left out of the fit" in labels


def test_the_step_plot_stacks_to_the_step_time():
    steps = [distributed.data_parallel_step(MODEL, batch_per_device=2, seq_len=1024, devices=n,
                                            device="H100 SXM", link="10 GbE", buckets=4)
             for n in (1, 8, 64)]  # fmt: skip
    ax = step_plot(steps)
    tops = {}
    for bar in ax.patches:
        x = round(bar.get_x() + bar.get_width() / 2)
        tops[x] = max(tops.get(x, 0), bar.get_y() + bar.get_height())
    assert [tops[i] for i in range(3)] == pytest.approx([s.step_s * 1e3 for s in steps])
    assert [t.get_text() for t in ax.texts] == [f"{s.efficiency:.0%}" for s in steps]


def test_the_memory_plot_stacks_to_the_total():
    memory = distributed.training_memory(MODEL, micro_batch=2, seq_len=1024)
    ax = memory_plot(memory, 80e9)
    assert sum(bar.get_height() for bar in ax.patches) == pytest.approx(memory.total / 1e9)


def test_the_explorer_view_says_what_the_model_computes():
    figure = data_parallel_view(model="GPT-2 XL (1.5B)", devices=64, network="10 GbE")
    step = distributed.data_parallel_step(
        MODEL, batch_per_device=1, seq_len=4096, devices=64, device="H100 SXM", link="10 GbE",
        buckets=16, gpus_per_node=8, intra_link="NVLink 4", zero_stage=1, recompute="full",
    )  # fmt: skip
    assert f"efficiency {step.efficiency:.0%}" in figure._suptitle.get_text()
    with pytest.raises(TypeError, match="unknown settings: gpus"):
        data_parallel_explorer(gpus=4)
    with pytest.raises(ValueError, match="`name`"):
        data_parallel_view(model="GPT-5")


def test_the_sweep_plot_draws_the_measured_points_and_each_pick_of_nccls_model():
    from importlib import resources

    from perfmodel.plotting.distributed import sweep_plot

    folder = resources.files("perfmodel") / "data" / "nccl_sweeps"
    sweep = comms.read_nccl_tests((folder / "together-h100x8-ring-allreduce.txt").read_text(),
                                  collective="all_reduce")  # fmt: skip
    fabric = comms.Fabric(ranks=8, channels=12, channel_bw=370e9 / 12, algorithms=("ring",))
    ax = sweep_plot(sweep, fabric)
    labels = [line.get_label() for line in ax.get_lines()]
    assert "measured (nccl-tests)" in labels
    assert [label for label in labels if label.startswith("NCCL's model")] == [
        "NCCL's model: ring, LL",
        "NCCL's model: ring, LL128",
        "NCCL's model: ring, Simple",
    ]
    switches = [line for line in ax.get_lines() if line.get_linestyle() == ":"]
    assert len(switches) == 2  # LL to LL128, LL128 to Simple
    assert ax.get_xlabel() and ax.get_ylabel() and ax.get_xscale() == "log"
    import matplotlib.pyplot as plt

    plt.close(ax.figure)
