"""This machine as a catalogue device: measured, saved to TOML, loaded back, used.

The checks hold on any machine: every figure positive, nothing measured above its nominal,
one bandwidth per cache level and main memory, and an exact TOML round trip.
"""

from __future__ import annotations

import functools

import pytest

from perfmodel import hardware, ops, roofline
from perfmodel.measure import empirical


@functools.cache
def profile() -> empirical.MachineProfile:
    return empirical.profile_machine(quick=True, progress=False)


@pytest.mark.slow  # seconds of solver or measurement: make test, not test-fast
def test_the_profile_is_a_device_like_the_catalogues():
    device = profile().device
    assert device.kind == "cpu" and set(device.dtypes) == {"fp64", "fp32"}
    for dtype in device.dtypes:
        assert 0 < device.measured_flops(dtype) <= device.peak_flops(dtype)
    levels = list(device.memory_levels)
    assert levels[0] == "L1" and levels[-1] == "DRAM" and len(levels) >= 3
    assert all(rate > 0 for rate in device.memory_levels.values())
    assert device.measured_memory_bandwidth == device.memory_bandwidth > 0
    assert "Nominal:" in device.notes and "two FMA units" in device.notes


def test_every_kernel_behind_it_is_kept():
    kernels = profile().kernels
    labels = [k.measurement.label for k in kernels]
    assert sum(k.kind == "matmul" for k in kernels) == 6
    assert sum(label.startswith("STREAM") for label in labels) == 4
    assert {k.name for k in kernels if k.kind == "tiny"} >= {"add of 1", "matmul 8"}
    assert sum(k.kind == "special" for k in kernels) == 1
    assert all(k.measurement.median_s > 0 for k in kernels)


def test_it_survives_a_round_trip_through_toml_and_predicts(tmp_path):
    device = profile().device
    path = hardware.save(device, tmp_path / "mine.toml")
    mine = hardware.load(path).get("This machine")
    assert mine == device
    big = ops.matmul(1024, 1024, 1024, dtype="fp64")
    measured = roofline.estimate(big, mine, ceiling="measured")
    nominal = roofline.estimate(big, mine)
    assert measured.time_s >= nominal.time_s > 0


@pytest.mark.parametrize("name", hardware.names())
def test_every_catalogue_device_round_trips_through_toml(name):
    device = hardware.get(name)
    assert hardware.Catalogue.from_toml(hardware.to_toml(device)).get(name) == device


def test_the_nominal_peak_states_its_assumptions():
    nominal = empirical.cpu_nominal()
    assert nominal.cores >= 1 and nominal.clock_hz > 0
    assert nominal.peak("fp32") == 2 * nominal.peak("fp64")
    assert "cores" in nominal.assumptions and "FLOP/cycle" in nominal.assumptions


def test_caches_are_listed_fastest_first():
    caches = empirical.cpu_caches()
    assert [name for name, _ in caches] == [f"L{i}" for i in range(1, len(caches) + 1)]
    assert all(a < b for (_, a), (_, b) in zip(caches, caches[1:], strict=False))


def test_the_plot_puts_each_kernel_under_the_measured_roof():
    import matplotlib

    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    from perfmodel.plotting.empirical import empirical_roofline_plot

    ax = empirical_roofline_plot(profile().device, profile().kernels)
    labels = [text.get_text() for text in ax.texts]
    names = [
        k.name
        for k in profile().kernels
        if k.kind in ("stream", "elementwise", "matmul") and k.cost.dtype == "fp64"
    ]
    # copy has no FLOPs, so it has no point on a FLOP/s axis
    assert len(labels) == len([name for name in names if name != "copy"])
    assert all(label.endswith("%") for label in labels)
    legend = ax.get_legend_handles_labels()[1]
    assert legend[:2] == ["nominal fp64", "measured fp64"] and "DRAM bandwidth" in legend
    plt.close("all")


def test_the_staircase_and_overhead_plots_show_what_was_measured():
    import matplotlib

    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    from perfmodel.measure.calibration import fit_overhead
    from perfmodel.plotting.empirical import overhead_plot, working_set_plot

    sets = [k for k in profile().kernels if k.kind == "working set"]
    ax = working_set_plot(sets, empirical.cpu_caches())
    x, y = ax.lines[0].get_data()
    assert list(x) == [k.measurement.sizes["bytes"] for k in sets]
    assert list(y) == [k.bytes_per_s for k in sets]
    assert [t.get_text().split()[0] for t in ax.texts] == [n for n, _ in empirical.cpu_caches()]
    adds = [k for k in profile().kernels if k.kind == "tiny" and k.name.startswith("add")]
    overhead, per_flop = fit_overhead(adds)
    ax = overhead_plot(adds, overhead, per_flop)
    assert ax.lines[2].get_ydata()[0] == overhead  # the dashed line at the fitted overhead
    plt.close("all")


def test_a_sweep_interrupted_keeps_what_it_measured(monkeypatch):
    from perfmodel.measure import microbench

    real = microbench.working_set
    calls = []

    def stop_at_the_third(nbytes, **timing):
        if len(calls) == 2:
            raise KeyboardInterrupt
        calls.append(nbytes)
        return real(nbytes, repeats=2, min_time_s=0)

    monkeypatch.setattr(microbench, "working_set", stop_at_the_third)
    kernels = empirical.working_set_sweep(1024**2, points=5, progress=False)
    assert [k.measurement.sizes["bytes"] for k in kernels] == calls and len(calls) == 2


def test_the_prediction_plot_has_a_row_and_two_markers_per_op():
    import matplotlib

    matplotlib.use("agg")
    import matplotlib.pyplot as plt

    from perfmodel.measure import calibration, held_out
    from perfmodel.plotting.empirical import prediction_plot

    cases = held_out.held_out_ops()[-3:]
    comparison = held_out.predict_vs_measure(
        calibration.calibrate(profile()), cases, progress=False, repeats=2, min_time_s=0
    )
    ax = prediction_plot(comparison)
    assert [t.get_text() for t in ax.get_yticklabels()] == [c.name for c in cases][::-1]
    plain, calibrated = ax.lines[1], ax.lines[2]
    assert list(calibrated.get_xdata()) == [r.ratio for r in comparison.rows][::-1]
    assert list(plain.get_xdata()) == [r.roofline_ratio for r in comparison.rows][::-1]
    plt.close("all")
