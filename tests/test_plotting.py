"""Plots: drawn from the models, styled for a projector, and safe for later cells."""

from __future__ import annotations

import matplotlib

matplotlib.use("agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from perfmodel import ops  # noqa: E402
from perfmodel.plotting import STYLE, bar_compare, roofline_plot, style  # noqa: E402


def test_style_restores_only_its_own_settings():
    plt.ioff()
    before = plt.rcParams["font.size"]
    with style():
        assert plt.rcParams["font.size"] == STYLE["font.size"]
        # What the notebook backend does when the first figure appears. plt.rc_context would
        # undo it on exit, and no later cell's figure would ever be shown.
        plt.ion()
    assert plt.rcParams["font.size"] == before
    assert plt.isinteractive(), "style() must not switch interactive mode back off"
    plt.ioff()


def test_roofline_plot_draws_one_roof_per_dtype_and_device():
    ax = roofline_plot(
        "H100 SXM", dtypes=["fp32", "bf16"], compare="A100 SXM4 80GB",
        ops=[ops.matvec(1024, 1024, dtype="bf16")],
    )  # fmt: skip
    labels = ax.get_legend_handles_labels()[1]
    assert labels == [
        "H100 SXM fp32",
        "H100 SXM bf16",
        "A100 SXM4 80GB fp32",
        "A100 SXM4 80GB bf16",
    ]
    assert [text.get_text() for text in ax.texts] == ["matvec 1024x1024"]
    assert ax.get_xscale() == ax.get_yscale() == "log"
    plt.close("all")


def test_bar_compare_checks_lengths():
    with pytest.raises(ValueError, match="same length"):
        bar_compare(["a", "b"], [1.0], unit="B", title="t")
