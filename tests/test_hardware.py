"""The hardware catalogue: every figure sourced, lookups, errors, user devices."""

from __future__ import annotations

import math

import pytest

from perfmodel import hardware
from perfmodel.hardware import Catalogue, Device, Link

REQUIRED_DEVICES = [
    "GPU circa 2015", "V100 SXM2", "A100 SXM4 40GB", "A100 SXM4 80GB", "H100 SXM", "H200 SXM",
    "B200", "TPU v4", "TPU v5e", "TPU v5p", "MI300X", "Xeon Platinum 8480+", "EPYC 9654",
]  # fmt: skip
REQUIRED_LINKS = [
    "PCIe 3.0 x16", "PCIe 4.0 x16", "PCIe 5.0 x16", "NVLink 3", "NVLink 4", "NVLink 5",
    "InfiniBand HDR", "InfiniBand NDR", "10 GbE", "100 GbE", "400 GbE",
]  # fmt: skip


def test_catalogue_has_every_required_entry():
    assert set(REQUIRED_DEVICES) <= set(hardware.names())
    assert set(REQUIRED_LINKS) <= set(hardware.link_names())


@pytest.mark.parametrize("name", REQUIRED_DEVICES)
def test_every_device_names_its_source(name):
    device = hardware.get(name)
    assert device.source.startswith(("https://", "Course seed"))
    assert device.peak_flops_by_dtype and device.memory_bandwidth > 0
    for dtype, sparse in device.sparse_flops_by_dtype.items():
        # 2:4 sparsity doubles the dense peak on every device that quotes it.
        assert math.isclose(sparse, 2 * device.peak_flops(dtype), rel_tol=0.01), (name, dtype)


@pytest.mark.parametrize("name", REQUIRED_LINKS)
def test_every_link_names_its_source(name):
    link = hardware.get_link(name)
    assert link.source.startswith("https://") and link.bandwidth > 0 and link.latency > 0


def test_seed_gpu_circa_2015():
    gpu = hardware.get("GPU circa 2015")
    assert (gpu.peak_flops("fp32"), gpu.memory_bandwidth) == (6e12, 300e9)
    assert gpu.ridge_point("fp32") == pytest.approx(20)  # "needs > 20 FLOP/byte"


def test_datasheet_figures_spot_checks():
    # H100 SXM datasheet: 3.35 TB/s, 80 GB, 1,979 TFLOP/s bf16 with sparsity.
    h100 = hardware.get("H100 SXM")
    assert h100.memory_bandwidth == 3.35e12 and h100.memory_capacity == 80e9
    assert h100.peak_flops("bf16", sparse=True) == 1979e12
    # Google's TPU v5p page: 459 TFLOP/s bf16, 2,765 GB/s, 95 GB.
    v5p = hardware.get("TPU v5p")
    assert (v5p.peak_flops("bf16"), v5p.memory_bandwidth) == (459e12, 2765e9)


def test_cpu_peaks_are_derived_from_cores_clock_and_flops_per_cycle():
    xeon = hardware.get("Xeon Platinum 8480+")
    assert xeon.peak_flops("fp64") == pytest.approx(56 * 2.0e9 * 32)
    assert "derived" in xeon.notes
    epyc = hardware.get("EPYC 9654")
    assert epyc.peak_flops("fp32") == pytest.approx(96 * 2.4e9 * 32)
    assert epyc.memory_bandwidth == pytest.approx(12 * 4800e6 * 8)


def test_links_are_per_direction():
    assert hardware.get_link("NVLink 4").bandwidth == 450e9  # 900 GB/s total on an H100
    pcie4 = hardware.get_link("PCIe 4.0 x16").bandwidth
    assert pcie4 == pytest.approx(16e9 * 16 * 128 / 130 / 8, rel=1e-4)  # stored to 5 digits
    assert hardware.get_link("InfiniBand NDR").bandwidth == 400e9 / 8


def test_lookup_is_forgiving_about_case_and_hyphens():
    assert hardware.get("h100-sxm").name == "H100 SXM"
    assert hardware.get(hardware.get("B200")).name == "B200"


def test_unknown_names_list_the_closest():
    with pytest.raises(ValueError, match=r"no device named 'H100'; closest: 'H100 SXM'"):
        hardware.get("H100")
    with pytest.raises(ValueError, match=r"no link named 'NVLink4'; closest: 'NVLink 4'"):
        hardware.get_link("NVLink4")


def test_missing_dtype_lists_the_available_ones():
    with pytest.raises(ValueError, match="TPU v4 has no dense peak for 'fp32'; it has: bf16"):
        hardware.get("TPU v4").peak_flops("fp32")
    with pytest.raises(ValueError, match="`dtype` must be one of fp64, fp32"):
        hardware.get("H100 SXM").peak_flops("fp12")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kind": "fpga"}, "`kind` must be one of gpu, tpu, cpu, other"),
        ({"memory_bandwidth": 0}, "`memory_bandwidth` must be a positive number"),
        ({"peak_flops_by_dtype": {}}, "needs at least one dtype"),
        ({"peak_flops_by_dtype": {"fp99": 1e12}}, "unknown dtype 'fp99'"),
        ({"peak_flops_by_dtype": {"fp32": -1.0}}, "must be positive"),
        ({"source": " "}, "`source` must say where the figures come from"),
    ],
)
def test_a_bad_device_says_what_is_wrong(kwargs, message):
    fields = {
        "name": "Mine", "kind": "gpu", "peak_flops_by_dtype": {"fp32": 1e12},
        "memory_bandwidth": 1e11, "source": "my measurements", **kwargs,
    }  # fmt: skip
    with pytest.raises(ValueError, match=message):
        Device(**fields)


def test_a_learner_adds_a_device_from_toml(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        '[[device]]\nname = "My laptop"\nkind = "cpu"\nmemory_bandwidth = 60e9\n'
        'source = "measured with perfmodel.timing"\n'
        "derived = { cores = 8, clock_hz = 3.0e9, flops_per_cycle = { fp32 = 32 } }\n"
        '[[link]]\nname = "Wi-Fi"\nkind = "other"\nbandwidth = 50e6\nlatency = 2e-3\n'
        'source = "my router"\n'
    )
    mine = hardware.load(path)
    laptop = mine.get("my laptop")
    assert laptop.peak_flops("fp32") == 8 * 3.0e9 * 32
    assert mine.get_link("wi-fi").latency == 2e-3
    assert "H100 SXM" in mine.devices  # the built-in catalogue is still there
    assert list(hardware.load(path, include_builtin=False).devices) == ["My laptop"]


def test_bad_toml_is_reported_with_its_origin(tmp_path):
    path = tmp_path / "broken.toml"
    path.write_text("[[device]]\nname = 'x'\n")
    with pytest.raises(ValueError, match="broken.toml: a \\[\\[device\\]\\] entry is incomplete"):
        hardware.load(path)
    with pytest.raises(ValueError, match="is not valid TOML"):
        Catalogue.from_toml("= nope", origin="inline")
    with pytest.raises(ValueError, match="does not exist"):
        hardware.load(tmp_path / "missing.toml")


def test_constructed_link_validates():
    with pytest.raises(ValueError, match="`latency` must be non-negative"):
        Link(name="x", kind="pcie", bandwidth=1e9, latency=-1, source="s")


def test_dtype_bytes():
    assert [hardware.dtype_bytes(d) for d in hardware.DTYPES] == [8, 4, 4, 2, 2, 1, 1]
    with pytest.raises(ValueError, match="as a width must be 1, 2, 4 or 8"):
        hardware.dtype_bytes(3)
    with pytest.raises(TypeError):
        hardware.dtype_bytes(True)


def test_import_loads_no_heavy_library():
    # `import perfmodel` must stay instant: its speed is in benchmarks/import_time.py; here,
    # what it loads. The models load no numpy until a function needs it.
    import json
    import subprocess
    import sys

    code = (
        "import json, sys, perfmodel, perfmodel.hardware, perfmodel.ops, perfmodel.roofline, "
        "perfmodel.metrics, perfmodel.minibatch; perfmodel.hardware.catalogue(); "
        "print(json.dumps(sorted(m for m in ('numpy', 'matplotlib', 'ipywidgets', 'scipy') "
        "if m in sys.modules)))"
    )
    loaded = json.loads(
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    )
    assert loaded == []
