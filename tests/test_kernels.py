"""The engine's kernel rates: probes that price as they are named, curves read as documented,
a calibration that says when to doubt it and is never silently replaced by a worse one."""

from __future__ import annotations

import dataclasses
import math
import types
import warnings

import numpy as np
import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from perfmodel import capstone
from perfmodel.capstone import calibrate, probes
from perfmodel.capstone.kernels import COMPUTE_KINDS, Curve, KernelRates
from perfmodel.capstone.onnx_ops import KERNEL_KINDS

PROBES = probes.probes()


def test_every_kind_has_probes_over_a_range_of_sizes():
    for kind in KERNEL_KINDS:
        works = sorted({p.work for p in PROBES if p.kind == kind})
        assert len(works) >= 2, kind
        assert works[-1] >= 100 * works[0], kind  # two decades at least


@pytest.mark.parametrize("probe", PROBES, ids=lambda p: p.label)
def test_a_probe_is_priced_as_the_kind_it_measures_at_the_work_it_claims(probe):
    onnx.checker.check_model(probe.model, full_check=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        imported = capstone.import_onnx(probe.model)
    measured = [node for node in imported.nodes if node.name.startswith("n")]
    assert len(measured) == probe.nodes
    for node in measured:
        assert node.kind == probe.kind
        work = node.cost.flops if probe.kind in COMPUTE_KINDS else node.cost.bytes
        assert work / node.steps == pytest.approx(probe.work, rel=1e-9)
        assert node.steps == probe.steps


def curve(points):
    return Curve("gemm", "FLOP", tuple(points))


@given(
    st.lists(st.floats(1e-7, 1e-1), min_size=2, max_size=6, unique=True),
    st.floats(0, 1),
)
def test_a_curve_passes_through_its_probes_and_reads_log_log_between(times, share):
    times = sorted(times)
    points = [(10.0 ** (3 + i), t) for i, t in enumerate(times)]
    c = curve(points)
    for work, seconds in points:
        assert c.time(work) == pytest.approx(seconds)
    (w0, t0), (w1, t1) = points[0], points[1]
    between = w0 * (w1 / w0) ** share
    assert c.time(between) == pytest.approx(t0 * (t1 / t0) ** share)
    assert c.time(w0 / 10) == t0  # never cheaper than the smallest probe
    assert c.time(points[-1][0] * 7) == pytest.approx(points[-1][1] * 7)  # in proportion


def rates(**changes):
    base = {
        "curves": {
            "gemm": curve([(1e3, 1e-6), (1e9, 1e-2)]),
            "gemv": Curve("gemv", "FLOP", ((1e3, 1e-6), (1e9, 1e-1))),
            "elementwise": Curve("elementwise", "B", ((1e3, 1e-6), (1e9, 1e-1))),
            "recurrent": Curve("recurrent", "FLOP", ((1e3, 1e-6), (1e9, 1e-2))),
            "view": Curve("view", "B", ((1e3, 1e-7), (1e9, 1e-7))),
        },
        "start_s": 5e-6,
        "threads": 2,
        "machine": "test",
        "others": 0.0,
        "overhead_s": 3e-7,
        "reference_s": 1e-3,
    }
    return KernelRates(**{**base, **changes})


def lstm_model(steps=20, hidden=16):
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((1, 4 * hidden, hidden), np.float32), "w")
    r = numpy_helper.from_array(np.ones((1, 4 * hidden, hidden), np.float32), "r")
    node = helper.make_node("LSTM", ["x", "w", "r"], ["y"], name="cell", hidden_size=hidden)
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [steps, 1, hidden])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)], [w, r])  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_a_recurrent_node_is_its_steps_in_turn_and_a_matmul_is_never_faster_than_its_bytes():
    r = rates()
    (cell,) = capstone.import_onnx(lstm_model()).nodes
    per_step = r.curves["recurrent"].time(cell.cost.flops / 20)
    # R (64 x 16 floats) streams through again at each of the 19 steps after the first.
    assert cell.reread_bytes == 19 * 4 * 64 * 16
    stream = r.curves["elementwise"].time((cell.cost.bytes + cell.reread_bytes) / 20)
    assert r.node_time(cell) == pytest.approx(20 * max(per_step, stream))
    slow_memory = rates(
        curves={**r.curves, "elementwise": Curve("elementwise", "B", ((1.0, 1.0), (2.0, 2.0)))}
    )
    assert slow_memory.node_time(cell) == pytest.approx(cell.cost.bytes + cell.reread_bytes)
    # A big matmul whose bytes take longer to stream than its FLOPs to compute.
    crawl = Curve("elementwise", "B", ((1.0, 1.0), (2.0, 2.0)))
    slow_memory = rates(curves={**r.curves, "elementwise": crawl})
    (mm, _) = capstone.import_onnx(capstone.builders.mlp(batch=1, widths=(64, 64))).nodes
    assert slow_memory.node_time(mm) == pytest.approx(mm.cost.bytes)  # 1 s per byte
    assert "gemv at" in r.used(mm) and "GFLOP/s" in r.used(mm)


def depthwise_model(batch, channels=32, side=14):
    return conv_model(batch, group=channels, channels=channels, side=side)


def test_a_depthwise_convolution_is_priced_one_image_at_a_time():
    """onnxruntime's depthwise kernel takes a batch one image at a time, so a batch of 8 costs
    8 images at one image's rate; the curve's rate at 8 times the work would be faster."""
    r = rates(
        curves={
            **rates().curves,
            "depthwise": Curve("depthwise", "FLOP", ((1e3, 1e-6), (1e9, 1e-2))),
        }
    )
    (one,) = capstone.import_onnx(depthwise_model(1)).nodes
    (eight,) = capstone.import_onnx(depthwise_model(8)).nodes
    assert (one.kind, one.images, eight.images) == ("depthwise", 1, 8)
    assert r.node_time(eight) == pytest.approx(8 * r.node_time(one), rel=0.01)  # weights: once
    curve_at_eight = r.curves["depthwise"].time(eight.cost.flops)
    assert r.node_time(eight) > curve_at_eight  # the curve at the batch's work: too fast


def conv_model(batch, group=1, channels=32, side=14):
    from onnx import TensorProto, helper, numpy_helper

    w = numpy_helper.from_array(np.ones((channels, channels // group, 3, 3), np.float32), "w")
    node = helper.make_node("Conv", ["x", "w"], ["y"], name="c", group=group, pads=[1] * 4)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, channels, side, side])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    model = helper.make_model(helper.make_graph([node], "g", [x], [y], [w]),
                              opset_imports=[helper.make_opsetid("", 17)])  # fmt: skip
    model.ir_version = 8
    return model


@pytest.mark.parametrize(("group", "kind"), [(1, "conv"), (4, "grouped conv")])
def test_a_convolution_outside_the_blocked_layout_takes_its_images_in_turn(group, kind):
    """onnxruntime's Conv kernel loops over a batch's images, an im2col and a GEMM each (its
    grouped convolutions always run so); the blocked layout's kernel takes the batch whole."""
    conv = curve([(1e3, 1e-6), (1e9, 1e-2)])
    r = rates(curves={**rates().curves, kind: Curve(kind, "FLOP", conv.points)})
    (one,) = capstone.import_onnx(conv_model(1, group)).nodes
    (eight,) = capstone.import_onnx(conv_model(8, group)).nodes
    assert (one.kind, eight.kind, eight.images, eight.blocked) == (kind, kind, 8, False)
    assert r.node_time(eight) == pytest.approx(8 * r.node_time(one), rel=0.02)  # weights: once
    whole = dataclasses.replace(eight, blocked=True)
    if kind == "conv":  # the whole batch at once: the curve's rate at eight images' work
        assert r.node_time(whole) == r.node_time(dataclasses.replace(whole, images=1))
        assert r.node_time(whole) < r.node_time(eight)
    else:  # grouped: in turn whatever the layout
        assert r.node_time(whole) == r.node_time(eight)


def test_a_plain_convolution_at_the_default_level_runs_blocked_with_its_batch_whole():
    imported = capstone.import_onnx(conv_model(8, channels=64), optimization="all")
    convs = [node for node in imported.nodes if node.kind == "conv"]
    assert len(convs) == 1 and convs[0].blocked and convs[0].images == 8
    assert all(not node.blocked for node in capstone.import_onnx(conv_model(8)).nodes)


def test_where_the_time_goes_adds_up_to_the_prediction():
    r = rates()
    imported = capstone.import_onnx(capstone.builders.mlp(batch=1, widths=(64, 64, 8)))
    imported = type(imported)(  # only the kinds these rates know
        imported.name, tuple(n for n in imported.nodes if n.kind in r.curves),
        imported.parameters, imported.parameter_bytes)  # fmt: skip
    shares = r.by_kind(imported)
    assert math.fsum(shares.values()) == pytest.approx(r.predict(imported))
    assert shares["overhead"] >= r.start_s


def test_a_kind_that_was_not_measured_is_named():
    imported = capstone.import_onnx(capstone.builders.mlp(batch=1, widths=(8, 8)))
    gemm_only = rates(curves={"gemm": curve([(1.0, 1.0), (2.0, 2.0)])})
    with pytest.raises(ValueError, match="no 'gemv' kernels were measured"):
        gemm_only.predict(imported)


def test_the_warning_names_a_busy_machine_and_noisy_kinds_and_nothing_else():
    assert rates().warning() == "" and rates().trusted
    busy = rates(others=0.6)
    assert not busy.trusted and busy.warning().startswith("UNTRUSTED CALIBRATION")
    assert "60%" in busy.warning()
    noisy = rates(curves={"depthwise": Curve("depthwise", "FLOP", ((1.0, 1.0), (2.0, 2.0)),
                                              spreads=(0.9, 0.8))})  # fmt: skip
    assert noisy.trusted and noisy.noisy_kinds == ("depthwise",)
    assert "depthwise probes varied" in noisy.warning() and "UNTRUSTED" not in noisy.warning()


def test_rates_read_back_from_json():
    r = rates(curves={"gemm": Curve("gemm", "FLOP", ((1.0, 2.0), (3.0, 4.0)), (0.1, 0.2), 0.05)})
    assert KernelRates.from_json(r.to_json()) == r


def test_the_cache_keeps_the_better_measurement(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(calibrate, "fingerprint", lambda threads=None: "this-machine")
    fresh = []
    monkeypatch.setattr(calibrate, "measure_kernels", lambda **kw: fresh.pop(0))
    every = {kind: Curve(kind, "B", ((1.0, 1.0), (2.0, 2.0))) for kind in KERNEL_KINDS}
    quiet, busy, quieter = (rates(curves=every, others=x) for x in (0.1, 0.7, 0.02))
    fresh.append(quiet)
    assert calibrate.cached_kernels(progress=False) == quiet
    assert calibrate.cached_kernels(progress=False) == quiet  # kept: nothing measured
    fresh.append(busy)
    with pytest.warns(UserWarning, match="no better than the kept one"):
        assert calibrate.cached_kernels(refresh=True, progress=False) == quiet
    fresh.append(quieter)
    assert calibrate.cached_kernels(refresh=True, progress=False) == quieter
    assert calibrate.cached_kernels(progress=False) == quieter
    assert list((tmp_path / "kernels").iterdir()) == [tmp_path / "kernels" / "this-machine.json"]


def test_a_kept_file_this_version_cannot_read_is_measured_again(tmp_path, monkeypatch):
    monkeypatch.setenv("PERFMODEL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(calibrate, "fingerprint", lambda threads=None: "this-machine")
    every = {kind: Curve(kind, "B", ((1.0, 1.0), (2.0, 2.0))) for kind in KERNEL_KINDS}
    fresh = rates(curves=every)
    monkeypatch.setattr(calibrate, "measure_kernels", lambda **kw: fresh)
    kept = tmp_path / "kernels" / "this-machine.json"
    kept.parent.mkdir()
    for junk in ("{not json", '{"curves": {}}', rates().to_json()):  # the last lacks kinds
        kept.write_text(junk)
        with pytest.warns(UserWarning, match="measuring again"):
            assert calibrate.cached_kernels(progress=False) == fresh


def test_a_curve_and_rates_refuse_what_no_measurement_gives():
    with pytest.raises(ValueError, match="must hold a probe"):
        Curve("gemm", "FLOP", ())
    with pytest.raises(ValueError, match="strictly increasing work"):
        Curve("gemm", "FLOP", ((2.0, 1.0), (1.0, 2.0)))
    with pytest.raises(ValueError, match="time"):
        Curve("gemm", "FLOP", ((1.0, 0.0),))
    with pytest.raises(ValueError, match="`work`"):
        curve([(1.0, 1.0)]).time(float("nan"))
    with pytest.raises(TypeError, match="`work`"):
        curve([(1.0, 1.0)]).time("5")
    with pytest.raises(ValueError, match="`others`"):
        rates(others=float("nan"))


def test_the_fingerprint_is_stable_and_names_the_threads():
    assert calibrate.fingerprint(1) == calibrate.fingerprint(1) != calibrate.fingerprint(2)


def test_the_fingerprint_changes_when_a_kind_is_probed_at_another_level(monkeypatch):
    """Rates kept from probes run otherwise are measured again, not read back."""
    before = calibrate.fingerprint(1)
    monkeypatch.setattr(calibrate, "UNCHANGED", ("view",))
    assert calibrate.fingerprint(1) != before


def test_the_zoo_times_its_models_in_rounds(monkeypatch):
    """Each round takes every model once, so a slow spell lands on one repeat of several."""
    from perfmodel.capstone import engine

    order = []

    def timed(model, **kw):
        order.append(capstone.import_onnx(model).batch)
        return types.SimpleNamespace(median_s=1e-3, samples_s=(1e-3, 1e-3), others=0.0)

    monkeypatch.setattr(engine, "wall_times", timed)
    monkeypatch.setattr(calibrate, "drift", lambda rates: 1.0)
    every = {kind: Curve(kind, "B", ((1.0, 1.0), (2.0, 2.0))) for kind in KERNEL_KINDS}
    rows = capstone.run_zoo(rates(curves=every), batches=(1, 8), names=["MLP"], repeats=3,
                            progress=False)  # fmt: skip
    assert order == [1, 8] * 3
    assert [(row.batch, row.measured_s, row.drift) for row in rows] == [
        (1, 1e-3, 1.0),
        (8, 1e-3, 1.0),
    ]


def test_a_real_measurement_orders_its_probes_by_work():
    r = calibrate.measure_kernels(kinds=("elementwise", "view"), rounds=1, runs=2, progress=False)
    stream = r.curves["elementwise"]
    assert stream.unit == "B" and len(stream.points) == 5
    assert stream.time(48e6) > stream.time(12e3)  # 4,000 times the bytes
    assert r.start_s > 0 and r.reference_s > 0 and 0 <= r.others <= 1
    assert calibrate.drift(r, runs=3) > 0


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: probes.probes(["nope"]), ValueError, "`kinds` must be among"),
        (lambda: calibrate.measure_kernels(rounds=0, progress=False), ValueError, "`rounds`"),
        (lambda: calibrate.drift("fast"), TypeError, "`rates` must be KernelRates"),
        (lambda: calibrate.drift(rates(reference_s=0.0)), ValueError, "no reference time"),
        (lambda: capstone.run_zoo("fast"), TypeError, "`rates` must be KernelRates"),
        (lambda: capstone.zoo_model("AlexNet"), ValueError, "`name`"),
        (lambda: capstone.zoo_model("MLP", batch=0), ValueError, "`batch`"),
        (lambda: capstone.run_zoo(rates(), batches=8), TypeError, "`batches` must be a sequence"),
        (lambda: capstone.run_zoo(rates(), names="MLP"), TypeError, "`names` must be a sequence"),
        (lambda: capstone.run_zoo(rates(), names=[]), ValueError, "one value at least"),
    ],
)
def test_bad_input_is_named(call, error, message):
    with pytest.raises(error, match=message):
        call()


# --- the zoo --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", capstone.ZOO)
def test_every_zoo_model_imports_without_a_warning_and_every_operator_is_priced(name):
    model = capstone.zoo_model(name, batch=2, weights=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        imported = capstone.import_onnx(model)
    assert imported.batch == 2 and imported.flops > 0
    found = capstone.coverage({node.op_type for node in model.graph.node})
    assert found.unknown == ()


def test_the_zoo_runs_a_model_and_reports_its_row():
    r = calibrate.measure_kernels(kinds=("gemv", "elementwise", "view"), rounds=1, runs=2,
                                progress=False)  # fmt: skip
    (row,) = capstone.run_zoo(r, batches=(1,), names=["MLP"], runs=2, progress=False)
    assert row.model == "MLP" and row.batch == 1
    imported = capstone.import_onnx(capstone.zoo_model("MLP", 1, weights=False))
    assert row.predicted_s == pytest.approx(r.predict(imported))
    assert row.ratio == pytest.approx(row.measured_s / row.predicted_s)
    assert row.drift > 0
    assert row.unsure == (row.busy or not 0.8 <= row.drift <= 1.25 or row.spread > 0.5)


def test_weights_outgrowing_the_cache_stream_from_memory_on_every_run():
    """ResNet-50's 100 MB of weights do not fit a 32 MiB cache: its last 1x1 convolutions ran
    2.4-2.8 times their in-cache price at batch 1. Past the cache, weight bytes stream at the
    largest elementwise probe's rate, which is beyond it."""
    stream = Curve("elementwise", "B", ((1e3, 1e-7), (1e6, 1e-4), (1e8, 1e-1)))  # slower past 1 MB
    r = rates(curves={**rates().curves, "elementwise": stream}, cache_bytes=1e6)
    model = capstone.import_onnx(capstone.builders.mlp(batch=1, widths=(512, 512, 512)))
    assert r.cold_weights(model)  # two 1 MB weights do not fit a 1 MB cache
    first = model.nodes[0]
    warm, cold = r.node_time(first), r.node_time(first, cold_weights=True)
    weight_bytes = first.weights * 4
    assert cold >= weight_bytes * 1e-9  # 1e-1 s per 1e8 B: the probe past the cache
    assert cold > 3 * warm
    assert r.predict(model) > rates(curves=r.curves).predict(model)  # cache unknown: warm
    assert not rates(curves=r.curves, cache_bytes=1e9).cold_weights(model)


@pytest.mark.parametrize("cache", [16 * 2**20, 8 * 2**20])
def test_a_probe_chains_weights_within_half_the_cache_or_stand_alone(monkeypatch, cache):
    # A chain whose weights spill times main memory: the one-row matmul probes to 1536 wide
    # (19 MB on a 16 MiB cache) priced the MLP at batch 1 at 1.6x its time.
    monkeypatch.setattr(probes, "last_level_cache", lambda: float(cache))
    capped = probes.probes(("gemm", "gemv", "recurrent", "conv", "conv 1x1"))
    for probe in capped:
        held = sum(len(t.raw_data) for t in probe.model.graph.initializer if t.name[0] in "wr")
        assert held <= cache / 2 or probe.nodes == 1, (probe.label, probe.nodes, held)
    monkeypatch.setattr(probes, "last_level_cache", lambda: 0.0)  # unknown: no cap
    free = {p.label: p.nodes for p in probes.probes(("gemv",))}
    assert free["MatMul 1x768x768"] > {p.label: p.nodes for p in capped}["MatMul 1x768x768"]


def test_the_one_row_probes_reach_every_zoo_models_one_row_matmul():
    """Beyond the largest probe a curve extrapolates in proportion: a classifier head at batch
    1 (ResNet-50's 2048 x 1000, 4.1 MFLOP) must sit within the probes' span."""
    largest = max(p.work for p in probes.probes(("gemv",)))
    for name in capstone.ZOO:
        model = capstone.import_onnx(capstone.zoo_model(name, batch=1, weights=False))
        for node in model.nodes:
            if node.kind == "gemv":
                assert node.cost.flops <= largest, (name, node.name, node.cost.flops)


def test_a_matmul_of_a_few_rows_streams_its_weights_once_for_all_of_them():
    """Two to four rows share each weight the one-row probes stream: a four-row matmul is
    read off the gemv curve at one row's FLOPs, not at four times the weights."""
    fast_memory = Curve("elementwise", "B", ((1e3, 1e-9), (1e9, 1e-3)))
    r = rates(curves={**rates().curves, "elementwise": fast_memory})
    one, four = (capstone.import_onnx(capstone.builders.mlp(batch=b, widths=(256, 256))).nodes[0]
                 for b in (1, 4))  # fmt: skip
    assert (one.kind, four.kind, four.cost.flops) == ("gemv", "gemv", 4 * one.cost.flops)
    assert r.node_time(four) == pytest.approx(r.node_time(one))
    assert r.node_time(four) < r.curves["gemv"].time(four.cost.flops) / 3


def test_rates_refuse_what_is_not_an_imported_model_and_name_a_binding_memory_floor():
    r = rates()
    model = capstone.builders.mlp(batch=1, widths=(16, 4))
    for method in (r.predict, r.by_kind, r.cold_weights):
        with pytest.raises(TypeError, match="`model` must be an ImportedModel.*got ModelProto"):
            method(model)
    with pytest.raises(TypeError, match="`node` must be a Node.*got NoneType"):
        r.node_time(None)
    (cell,) = capstone.import_onnx(lstm_model()).nodes
    crawl = Curve("elementwise", "B", ((1.0, 1.0), (2.0, 2.0)))
    slow_memory = rates(curves={**r.curves, "elementwise": crawl})
    said = slow_memory.used(cell)
    assert said.startswith("the memory floor at ") and "(not recurrent at" in said


def test_probe_kinds_are_a_list_of_kinds_in_any_case():
    assert {p.kind for p in probes.probes(["GRU"])} == {"gru"}
    with pytest.raises(TypeError, match=r"`kinds` must be a list of kernel kinds.*'gru'"):
        probes.probes("gru")
    with pytest.raises(ValueError, match="at least one kernel kind"):
        probes.probes([])
    with pytest.raises(ValueError, match=r"`kinds` must be among .*got \['lstm'\]"):
        probes.probes(["LSTM"])


def test_rates_keep_counts_as_ints_and_each_curve_under_its_own_kind():
    assert rates(threads=2.0).threads == 2 and isinstance(rates(threads=2.0).threads, int)
    gemm = rates().curves["gemm"]
    for bad in (None, [gemm], {"gemv": gemm}):
        with pytest.raises(TypeError, match="`curves` must be a dict of each kind's Curve"):
            rates(curves=bad)
