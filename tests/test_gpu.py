"""The GPU path, without a GPU: a clear error here, and the harness's wiring checked on a
stand-in for CuPy that computes with numpy and counts its synchronisations.

Where a real GPU is present (PyTorch with CUDA, or CuPy), the last test measures it.
"""

from __future__ import annotations

import sys
import types

import numpy as np
import pytest

from perfmodel.measure import gpu


@pytest.fixture
def fake_cupy(monkeypatch):
    """A module named cupy that sees one 'GPU' and records every synchronize()."""
    syncs = []
    module = types.ModuleType("cupy")
    module.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDeviceCount=lambda: 1),
        Device=lambda: types.SimpleNamespace(synchronize=lambda: syncs.append(1)),
    )
    module.random = types.SimpleNamespace(
        random=lambda shape: np.random.default_rng(0).random(shape)
    )
    module.matmul = np.matmul
    module.copyto = np.copyto
    monkeypatch.setitem(sys.modules, "cupy", module)
    monkeypatch.setattr(gpu, "BACKENDS", ("cupy",))  # a real torch, if any, must not interfere
    return syncs


def test_every_sample_is_synchronised(fake_cupy):
    result = gpu.gpu_matmul(32, dtype="fp32", repeats=3, min_time_s=0)
    assert result.cost.flops == 2 * 32**3 and result.measurement.dtype == "fp32"
    # a warm-up sync, then one before and one after every timed sample
    samples = len(result.measurement.samples_s)
    assert len(fake_cupy) >= 1 + 2 * samples


def test_a_gpu_profile_is_a_device_with_measured_ceilings(fake_cupy):
    device, kernels = gpu.profile_gpu(
        name="stand-in", dtypes=("fp32", "fp16"), sizes=(16, 32), copy_elements=4096,
        repeats=2, min_time_s=0,
    )  # fmt: skip
    assert device.kind == "gpu" and set(device.dtypes) == {"fp32", "fp16"}
    assert device.measured_flops("fp32") == max(k.flops_per_s for k in kernels[:2])
    assert kernels[-1].cost.bytes == 2 * 4 * 4096
    assert device.measured_memory_bandwidth == kernels[-1].bytes_per_s


def test_cupy_has_no_bf16(fake_cupy):
    with pytest.raises(ValueError, match="`dtype` must be one of"):
        gpu.gpu_matmul(8, dtype="bf16")


@pytest.mark.skipif(gpu.gpu_backend() is not None, reason="a GPU is present")
def test_without_a_gpu_the_error_says_what_to_install():
    assert gpu.gpu_backend() is None
    with pytest.raises(RuntimeError, match="install PyTorch with CUDA or CuPy"):
        gpu.gpu_copy(1024)
    with pytest.raises(ValueError, match="`backend` must be one of"):
        gpu.gpu_copy(1024, backend="opencl")


@pytest.mark.skipif(gpu.gpu_backend() is None, reason="no GPU here (PyTorch with CUDA or CuPy)")
def test_a_real_gpu_is_measured_below_nothing_impossible():  # pragma: no cover - needs a GPU
    result = gpu.gpu_matmul(4096, dtype="fp32", repeats=3, min_time_s=0.1)
    assert 1e9 < result.flops_per_s < 1e16
