"""The explorers: every one builds, reads in units, and survives a bad choice."""

from __future__ import annotations

import matplotlib

matplotlib.use("agg")

import re  # noqa: E402

import ipywidgets as widgets  # noqa: E402
import pytest  # noqa: E402

from conftest import ROOT  # noqa: E402
from perfmodel.widgets import controls  # noqa: E402
from perfmodel.widgets.capstone import capstone_explorer  # noqa: E402
from perfmodel.widgets.devices import device_explorer  # noqa: E402
from perfmodel.widgets.distributed import data_parallel_explorer  # noqa: E402
from perfmodel.widgets.measure import cache_sweep_explorer  # noqa: E402
from perfmodel.widgets.minibatch import batch_size_explorer  # noqa: E402
from perfmodel.widgets.op_cost import op_explorer  # noqa: E402
from perfmodel.widgets.partition import partition_explorer  # noqa: E402
from perfmodel.widgets.roofline import roofline_explorer  # noqa: E402
from perfmodel.widgets.run_time import run_time_explorer  # noqa: E402
from perfmodel.widgets.scaling import scaling_explorer  # noqa: E402
from perfmodel.widgets.serving import serving_explorer  # noqa: E402
from perfmodel.widgets.taskgraph import schedule_explorer  # noqa: E402
from perfmodel.widgets.transfer import transfer_time_explorer  # noqa: E402


@pytest.mark.parametrize(
    "explorer",
    [
        transfer_time_explorer, run_time_explorer, device_explorer, op_explorer,
        roofline_explorer, batch_size_explorer, cache_sweep_explorer, schedule_explorer,
        scaling_explorer, partition_explorer, data_parallel_explorer, serving_explorer,
        capstone_explorer,
    ],
)  # fmt: skip
def test_every_explorer_builds(explorer):
    assert isinstance(explorer(), widgets.VBox)


def test_a_log_slider_reads_in_units_and_follows_its_value():
    box = controls.log_slider(100e9, 8, 13, "bandwidth", "B/s")
    readout = box.children[1]
    assert box.slider.readout is False and readout.value == "100 GB/s"
    box.slider.value = 1e12
    assert readout.value == "1 TB/s"


def test_live_text_rerenders_when_a_control_moves():
    slider = controls.int_slider(3, 1, 10, "n")
    line = controls.live_text((slider,), lambda: f"n is {slider.value}", "demo")
    assert "n is 3" in line.value
    slider.value = 7
    assert "n is 7" in line.value


def test_a_bad_choice_shows_its_reason_instead_of_a_traceback():
    def view(dtype: str) -> None:
        if dtype == "fp12":
            raise ValueError(f"no peak for {dtype!r}")
        import matplotlib.pyplot as plt

        plt.figure(figsize=(1, 1))

    choice = widgets.Dropdown(options=["fp32", "fp12"], value="fp32")
    box = controls.live_plot(view, {"dtype": choice})
    assert [type(child) for child in box.children] == [widgets.Image]
    choice.value = "fp12"
    (shown,) = box.children
    assert "no peak for 'fp12'" in shown.value and "Traceback" not in shown.value
    choice.value = "fp32"  # and the explorer keeps working
    assert [type(child) for child in box.children] == [widgets.Image]


def test_the_cache_sweep_measures_what_its_controls_say(monkeypatch):
    from perfmodel.measure import empirical

    asked = {}

    def fake_sweep(largest, *, points):
        asked.update(largest=largest, points=points)
        return [empirical.microbench.working_set(n, repeats=2, min_time_s=0) for n in (8192, 65536)]

    monkeypatch.setattr(empirical, "working_set_sweep", fake_sweep)
    box = cache_sweep_explorer(largest=1e6, points=5)
    largest, points, button, _ = box.children
    points.value = 7
    button.click()
    assert asked == {"largest": int(largest.slider.value), "points": 7}
    assert not button.disabled  # ready for the next sweep


def test_the_capstone_view_names_the_bottleneck_and_the_memory_verdict():
    from perfmodel.widgets.capstone import capstone_view

    small = capstone_view(model="GPT-2 small, 8 x 1024 tokens", devices=8)
    big = capstone_view(model="7B decoder, 8 x 2048 tokens", devices=8)
    assert "bottleneck: compute" in small._suptitle.get_text()
    assert "does not fit" in big._suptitle.get_text()
    assert "no step time" in big._suptitle.get_text()
    split = capstone_view(model="7B decoder, 8 x 2048 tokens", devices=16, parallelism="pipeline")
    assert "8 pipeline stages x 2 replicas" in split._suptitle.get_text()
    assert split.axes[1].get_title() == "fits"


def test_the_package_table_lists_every_explorer_module():
    import pkgutil

    import perfmodel.widgets as package

    with_explorers = {
        info.name
        for info in pkgutil.iter_modules(package.__path__)
        if "_explorer(" in (ROOT / "src" / "perfmodel" / "widgets" / f"{info.name}.py").read_text()
    }
    listed = set(re.findall(r":mod:`~perfmodel\.widgets\.(\w+)`", package.__doc__ or ""))
    assert with_explorers and listed == with_explorers, with_explorers ^ listed


@pytest.mark.parametrize(
    ("view", "settings", "error", "message"),
    [
        ("distributed.data_parallel_view", {"device": "T4"}, ValueError,
         "`device` must be one of 'H100 SXM', 'H800 SXM', 'H200 SXM', 'A100 SXM4 80GB', "
         "'B200' (got 'T4')"),
        ("scaling.scaling_view", {"serial_percent": 150}, ValueError,
         "`serial_percent` must be a number in [0, 100] (got 150)"),
        ("scaling.scaling_view", {"serial_percent": "20"}, TypeError,
         "`serial_percent` must be a number (got str '20')"),
        ("scaling.scaling_explorer", {"serial_percent": -1}, ValueError,
         "`serial_percent` must be a number in [0, 100] (got -1)"),
        ("capstone.capstone_explorer", {"devices": 3}, ValueError,
         "`devices` must be one of the slider's 1, 2, 4, 8, 16, 32, 64, 256, 1024 (got 3)"),
    ],
)  # fmt: skip
def test_an_explorer_refuses_a_bad_setting_in_the_callers_terms(view, settings, error, message):
    import importlib

    module, name = view.split(".")
    function = getattr(importlib.import_module(f"perfmodel.widgets.{module}"), name)
    with pytest.raises(error, match=re.escape(message)):
        function(**settings)


def test_the_capstone_slider_offers_32_devices():
    box = capstone_explorer(devices=32)  # failed when the slider was built, 32 not among it
    (slider,) = [c for c in box.children if getattr(c, "description", "") == "devices"]
    assert slider.value == 32 and list(slider.options) == [1, 2, 4, 8, 16, 32, 64, 256, 1024]


def test_a_device_whose_dtypes_differ_redraws_the_figure_once(monkeypatch):
    drawn = []
    real = controls.render_svg
    monkeypatch.setattr(controls, "render_svg", lambda v, values, *rest: (
        drawn.append(dict(values)), real(v, values, *rest))[1])  # fmt: skip
    box = roofline_explorer(device="H100 SXM")
    first, _, dtype = box.children[0].children
    dtype.value = "fp8"
    drawn.clear()
    first.value = "V100 SXM2"  # no fp8: the dtype dropdown moves to bf16's fallback
    assert len(drawn) == 1, drawn
    assert drawn[0]["device"] == "V100 SXM2" and drawn[0]["dtype"] == dtype.value != "fp8"


def test_held_redraws_nest_and_draw_each_figure_once_at_the_end():
    calls = []

    def redraw() -> None:
        calls.append(1)

    with controls.held_redraws():
        with controls.held_redraws():
            assert controls._held is not None
        controls._held.extend([redraw, redraw])  # the same figure asked for twice
        assert calls == []
    assert controls._held is None
    assert calls == [1]


def test_a_kept_layout_draws_the_figure_its_own_layout_drew():
    from perfmodel.widgets.layout import FrozenLayout
    from perfmodel.widgets.roofline import roofline_view

    values = {"device": "H100 SXM", "compare": "A100 SXM4 80GB", "dtype": "bf16", "n": 4096}
    layout = FrozenLayout()
    fresh = controls.render_svg(roofline_view, values, layout)
    for n in (512, 4096):  # another figure placed by the kept layout between the two
        again = controls.render_svg(roofline_view, {**values, "n": n}, layout)
    assert (layout.laid_out, layout.reused) == (1, 2)
    assert again == fresh  # placed where constrained layout put it, to the last digit
    assert again == controls.render_svg(roofline_view, values)  # and as without a layout


def svg_view(width: float = 6.5) -> None:
    """Two panels: a line with a title of two lines and a 20-point label; an image."""
    import matplotlib.pyplot as plt
    import numpy as np

    figure, (left, right) = plt.subplots(1, 2, figsize=(width, 3), layout="constrained")
    left.plot([1, 2, 3], [3, 1, 2])
    left.set_title("time & rate\nper request")
    left.set_xlabel("time (s)", fontsize=20)
    right.imshow(np.arange(12.0).reshape(3, 4))  # an image is embedded, not drawn


def test_the_svg_holds_the_figure_as_vectors_and_sized_text_at_live_dpi():
    import matplotlib.pyplot as plt
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    before = plt.get_fignums()
    svg = controls.render_svg(svg_view, {"width": 6.5}).decode()
    assert svg.startswith("<?xml") and svg.rstrip().endswith("</svg>")
    wide, high = 6.5 * controls.LIVE_DPI, 3 * controls.LIVE_DPI
    assert f'width="{wide:g}px" height="{high:g}px" viewBox="0 0 468 216"' in svg
    sized = re.findall(
        r'<text xml:space="preserve" textLength="([0-9.]+)"[^>]*>([^<]*)</text>', svg
    )
    assert svg.count("<text ") == len(sized)  # every line of text told its width
    texts = {text: float(length) for length, text in sized}
    assert {"time &amp; rate", "per request", "time (s)"} <= set(texts)  # a line each
    measured = TextToPath().get_text_width_height_descent(
        "time (s)", FontProperties(size=20), False
    )
    assert texts["time (s)"] == pytest.approx(measured[0], abs=1e-3)  # points, as laid out
    assert texts["time &amp; rate"] > texts["per request"] * 0.9  # each line its own width
    assert "font-family: 'DejaVu Sans'" in svg and "sans-serif" in svg  # with fallbacks
    assert svg.count("<image ") == 1 and "data:image/png;base64," in svg
    assert "<dc:date>" not in svg
    assert plt.get_fignums() == before  # the view's figure is closed


def test_text_sizes_are_kept_for_a_few_thousand_lines(monkeypatch):
    monkeypatch.setattr(controls, "_TEXT_SIZES", {})
    monkeypatch.setattr(controls, "KEPT_SIZES", 5)
    first = controls.render_svg(svg_view, {"width": 6.5})
    assert 0 < len(controls._TEXT_SIZES) <= 5  # cleared when full, then filled again
    assert controls.render_svg(svg_view, {"width": 6.5}) == first  # kept or measured: equal


def test_a_text_width_is_the_width_of_the_font_its_name_resolves_to_now():
    import matplotlib as mpl
    import matplotlib.pyplot as plt
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    title = "Throughput of the widest device"

    def view() -> None:
        plt.subplots(figsize=(4, 3))[1].set_title(title)

    def drawn(svg: bytes) -> float:
        return float(re.search(rf'textLength="([0-9.]+)"[^>]*>{title}<'.encode(), svg).group(1))

    widths = []
    for font in ("DejaVu Sans", "DejaVu Sans Mono"):  # the same family name, sans-serif
        with mpl.rc_context({"font.sans-serif": [font]}):
            laid_out = TextToPath().get_text_width_height_descent(
                title, FontProperties(size=mpl.rcParams["axes.titlesize"]), False
            )[0]
            widths.append(drawn(controls.render_svg(view, {})))
            assert widths[-1] == pytest.approx(laid_out, abs=1e-3), font
    assert widths[1] > 1.1 * widths[0]  # the monospaced one really is wider


@pytest.mark.parametrize(
    ("view", "settings"),
    [
        ("serving.serving_view", {}),  # a two-line title, legends beside, SI tick labels
        ("capstone.capstone_view", {"model": "7B decoder, 8 x 2048 tokens"}),  # a wrapped title
        (
            "roofline.roofline_view",
            {"device": "H100 SXM", "compare": "EPYC 9654", "dtype": "bf16", "n": 1024},
        ),
    ],  # fmt: skip
)
def test_font_heights_kept_by_the_renderer_draw_what_matplotlib_reads_from_the_font(
    view, settings, monkeypatch
):
    """The oracle: the renderer's kept ascents, descents and gaps change nothing drawn."""
    import importlib

    module, name = view.split(".")
    function = getattr(importlib.import_module(f"perfmodel.widgets.{module}"), name)
    kept = controls.render_svg(function, settings)
    assert controls._FONT_HEIGHTS  # asked for, and kept
    monkeypatch.delattr(controls._sized_text_renderer(), "_get_font_height_metrics")
    assert controls.render_svg(function, settings) == kept  # matplotlib reading the tables
