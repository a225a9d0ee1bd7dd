"""The hardware catalogue: every figure sourced, lookups, errors, user devices."""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel import hardware
from perfmodel.hardware import Catalogue, Device, Link

REQUIRED_DEVICES = [
    "GPU circa 2015", "V100 SXM2", "A100 SXM4 40GB", "A100 SXM4 80GB", "H100 SXM", "H200 SXM",
    "B200", "TPU v4", "TPU v5e", "TPU v5p", "TPU v6e", "MI300X", "MI325X", "T4", "L4", "A10",
    "L40S", "RTX 4090", "H100 PCIe", "GH200", "Gaudi 3", "Apple M1 Max", "Xeon Platinum 8480+",
    "EPYC 9654",
]  # fmt: skip
REQUIRED_LINKS = [
    "PCIe 3.0 x16", "PCIe 4.0 x16", "PCIe 5.0 x16", "PCIe 6.0 x16", "NVLink 3", "NVLink 4",
    "NVLink 5", "NVLink-C2C", "InfiniBand HDR", "InfiniBand NDR", "InfiniBand XDR", "10 GbE",
    "100 GbE", "400 GbE",
]  # fmt: skip


def test_catalogue_has_every_required_entry():
    assert set(REQUIRED_DEVICES) <= set(hardware.names())
    assert set(REQUIRED_LINKS) <= set(hardware.link_names())


@pytest.mark.parametrize("name", REQUIRED_DEVICES)
def test_every_device_names_its_source(name):
    device = hardware.get(name)
    assert device.source.startswith(("https://", "Adam Coates, Deep Learning (hopefully faster)"))
    assert device.peak_flops_by_dtype and device.memory_bandwidth > 0
    for dtype, sparse in device.sparse_flops_by_dtype.items():
        # 2:4 sparsity doubles the dense peak on every device that quotes it (NVIDIA rounds
        # the L40S's 2 x 362.05 to 733, 1.2% over).
        assert math.isclose(sparse, 2 * device.peak_flops(dtype), rel_tol=0.015), (name, dtype)
    if device.measured_flops_by_dtype:
        assert "https://" in device.measured_source
        for dtype, measured in device.measured_flops_by_dtype.items():
            assert 0.4 < measured / device.peak_flops(dtype) < 1, (name, dtype)


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
    assert v5p.peak_flops("int8") == 918e12 and hardware.get("TPU v4").peak_flops("int8") == 275e12
    # NVIDIA's revised HGX B200 table.
    b200 = hardware.get("B200")
    assert (b200.memory_bandwidth, b200.peak_flops("fp32"), b200.peak_flops("fp64")) == (
        7.7e12,
        75e12,
        37e12,
    )
    # Google states TPU v4's HBM in GiB and TPU v6e's in GB; the catalogue keeps each as stated.
    assert hardware.get("TPU v4").memory_capacity == 32 * 2**30
    assert hardware.get("TPU v6e").memory_capacity == 32e9
    assert "vector fp64" in hardware.get("H100 SXM").notes


def test_measured_ceilings_sit_beside_the_nameplate():
    # Bekman's matmul table: about 80% of peak on H100 SXM, 87% on A100, 51% on MI300X.
    for name, share in (("H100 SXM", 0.80), ("A100 SXM4 80GB", 0.87), ("MI300X", 0.51)):
        device = hardware.get(name)
        assert device.measured_flops("bf16") / device.peak_flops("bf16") == pytest.approx(
            share, abs=0.01
        )
    with pytest.raises(ValueError, match="has no measured ceiling for 'fp32'; measured: bf16"):
        hardware.get("H100 SXM").measured_flops("fp32")


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
    with pytest.raises(ValueError, match=r"'H100' starts the names of 2: 'H100 SXM', 'H100 PCIe'"):
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
        ({"kind": "fpga"}, "`kind` must be one of 'gpu', 'tpu', 'cpu', 'other'"),
        ({"memory_bandwidth": 0}, "`memory_bandwidth` must be a positive finite number"),
        ({"peak_flops_by_dtype": {}}, "needs at least one dtype"),
        ({"peak_flops_by_dtype": {"fp99": 1e12}}, "unknown dtype 'fp99'"),
        ({"peak_flops_by_dtype": {"fp32": -1.0}}, "must be a positive finite number"),
        ({"peak_flops_by_dtype": {"fp32": math.inf}}, "must be a positive finite number"),
        ({"sparse_flops_by_dtype": {"fp32": 0.5e12}}, "must be at least the dense peak"),
        ({"measured_flops_by_dtype": {"fp32": 2e12}, "measured_source": "me"}, "at most"),
        ({"measured_flops_by_dtype": {"fp32": 0.8e12}}, "need a `measured_source`"),
        ({"year": 1850}, "`year` must be an integer from 1940 to 2100"),
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


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"year": "abc"}, "`year` must be an integer"),
        ({"memory_bandwidth": "1e11"}, "`memory_bandwidth` must be a number"),
        ({"peak_flops_by_dtype": [1e12]}, "`peak_flops` must be a table"),
        ({"source": None}, "`source` must be a string"),
    ],
)
def test_a_device_of_the_wrong_type_is_a_type_error(kwargs, message):
    fields = {
        "name": "Mine", "kind": "gpu", "peak_flops_by_dtype": {"fp32": 1e12},
        "memory_bandwidth": 1e11, "source": "my measurements", **kwargs,
    }  # fmt: skip
    with pytest.raises(TypeError, match=message):
        Device(**fields)


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ("device = 3", "`device` must be written \\[\\[device\\]\\]"),
        ("[[device]]\nname = 'x'\nkind = 'gpu'\nmemory_bandwidth = 1e9\nsource = 's'\n"
         "peak_flops = 5", "`peak_flops` must be a table"),
        ("[[device]]\nname = 'x'\nkind = 'gpu'\nmemory_bandwidth = 1e9\nsource = 's'\n",
         "give `peak_flops`"),
        ("[[device]]\nname = 'x'\nkind = 'gpu'\nmemory_bandwidth = 1e9\nsource = 's'\n"
         "peak_flops = { fp32 = 1e12 }\nspeed = 3", "unknown keys speed"),
        ("[[link]]\nname = 'w'\nkind = 'other'\nbandwidth = 1e6\nlatency = nan\nsource = 's'",
         "`latency` must be a non-negative finite number"),
        ("[[link]]\nname = 'w'\nkind = 'other'\nbandwidth = 1e6\nlatency = 0\nsource = 's'\n"
         "[[link]]\nname = 'w'\nkind = 'other'\nbandwidth = 2e6\nlatency = 0\nsource = 's'",
         "two \\[\\[link\\]\\] entries are named 'w'"),
        ("gpus = []", "unknown top-level keys gpus"),
    ],
)  # fmt: skip
def test_a_malformed_catalogue_says_where_and_what(toml, message):
    with pytest.raises(ValueError, match=message):
        Catalogue.from_toml(toml, origin="mine.toml")


def test_a_learner_cannot_silently_shadow_a_catalogue_device(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        '[[device]]\nname = "H100 SXM"\nkind = "gpu"\nmemory_bandwidth = 1e12\n'
        'source = "me"\npeak_flops = { bf16 = 1e15 }\n'
    )
    with pytest.raises(ValueError, match="'H100 SXM' are taken"):
        hardware.load(path)


def test_a_learner_adds_a_device_from_toml(tmp_path):
    path = tmp_path / "mine.toml"
    path.write_text(
        '[[device]]\nname = "My laptop"\nkind = "cpu"\nmemory_bandwidth = 60e9\n'
        'source = "measured with perfmodel.measure.timing"\n'
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
    with pytest.raises(ValueError, match="`latency` must be a non-negative finite number"):
        Link(name="x", kind="pcie", bandwidth=1e9, latency=-1, source="s")
    with pytest.raises(ValueError, match="`latency` must be a non-negative finite number"):
        Link(name="x", kind="pcie", bandwidth=1e9, latency=math.nan, source="s")


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
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
    )
    assert loaded == []


@settings(max_examples=60, deadline=None)
@given(source=st.text(), notes=st.text())
def test_any_text_in_a_saved_link_or_device_reads_back(source, notes):
    # the hand-written writer this replaced wrote "\r" and "\x07" raw, and load rejected them
    from perfmodel.hardware import to_toml

    source = source if source.strip() else "s"  # a blank source is refused, rightly
    wire = Link(name="wire", kind="ethernet", bandwidth=1e9, latency=1e-5, source=source,
                notes=notes)  # fmt: skip
    assert Catalogue.from_toml(to_toml(wire)).get_link("wire") == wire
    chip = Device(name="chip", kind="cpu", peak_flops_by_dtype={"fp64": 1e11},
                  memory_bandwidth=2e10, source=source, notes=notes)  # fmt: skip
    assert Catalogue.from_toml(to_toml(chip)).get("chip") == chip


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: hardware.op_unit(3), TypeError, "`dtype` must be a string (got int 3)"),
        (lambda: hardware.op_unit(None), TypeError, "`dtype` must be a string (got None)"),
        (lambda: hardware.names(3), TypeError, "`kind` must be a string (got int 3)"),
        (lambda: hardware.names("gpus"), ValueError, "`kind` must be one of"),
        # a width names no peak: 4 bytes is fp32 or tf32, whose peaks differ on an H100
        (lambda: hardware.get("H100 SXM").peak_flops(2), TypeError,
         "`dtype` must be a dtype name, not a width in bytes (got int 2)"),
        (lambda: hardware.get("H100 SXM").peak_flops(2, sparse=True), TypeError,
         "`dtype` must be a dtype name"),
        (lambda: hardware.get("H100 SXM").ridge_point(4), TypeError,
         "`dtype` must be a dtype name"),
    ],
)  # fmt: skip
def test_a_bad_dtype_or_kind_is_a_clear_error(call, error, message):
    import re

    with pytest.raises(error, match=re.escape(message)):
        call()


def test_op_unit_and_names_take_what_they_took():
    assert hardware.op_unit(" INT8 ") == "OP" and hardware.op_unit("bf16") == "FLOP"
    assert hardware.names("gpu") and set(hardware.names("gpu")) <= set(hardware.names())
    assert hardware.get("H100 SXM").peak_flops(" BF16 ") == 989.5e12
