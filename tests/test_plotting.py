"""Plots: drawn from the models, styled for a projector, and safe for later cells."""

from __future__ import annotations

import matplotlib

matplotlib.use("agg")

import matplotlib.pyplot as plt  # noqa: E402
import pytest  # noqa: E402

from perfmodel import ops  # noqa: E402
from perfmodel.plotting import STYLE, style  # noqa: E402
from perfmodel.plotting.devices import bar_compare  # noqa: E402
from perfmodel.plotting.roofline import roofline_plot  # noqa: E402


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
        bar_compare(["a", "b"], [1.0], unit="B", title="t", xlabel="x")


def test_bar_compare_keeps_ratios_honest():
    # A linear axis from zero: a bar 2.27x longer than another is 2.27x the number.
    ax = bar_compare(["H100", "B200"], [989.5e12, 2.25e15], unit="FLOP/s", title="t", xlabel="x")
    assert ax.get_xscale() == "linear" and ax.get_xlim()[0] == 0
    widths = [patch.get_width() for patch in ax.patches]
    assert widths[1] / widths[0] == pytest.approx(2.25e15 / 989.5e12)
    assert ax.get_xlabel() == "x"
    plt.close("all")


def test_roofline_labels_stay_inside_the_frame():
    # A matmul far right on the x axis used to be labelled to its right, off the figure.
    ax = roofline_plot("H100 SXM", dtypes=["bf16"], ops=[ops.matmul(16384, 16384, 16384)])
    figure = ax.figure
    figure.canvas.draw()
    frame = ax.get_window_extent()
    for text in ax.texts:
        box = text.get_window_extent()
        assert frame.x0 <= box.x0 and box.x1 <= frame.x1, text.get_text()
    plt.close("all")


def test_integer_roofs_read_op_per_second():
    ax = roofline_plot("H100 SXM", dtypes=["int8"])
    assert ax.get_ylabel() == "attainable OP/s"
    assert roofline_plot("H100 SXM", dtypes=["bf16"]).get_ylabel() == "attainable FLOP/s"
    plt.close("all")
