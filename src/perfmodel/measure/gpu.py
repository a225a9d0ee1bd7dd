"""Measure a GPU with the same harness, when PyTorch with CUDA or CuPy is there.

A GPU runs its work asynchronously: a call returns as soon as the work is queued. So every
measurement here passes a ``sync`` to :func:`perfmodel.measure.timing.measure`
(``torch.cuda.synchronize`` or CuPy's ``Device.synchronize``), which waits inside the timed
region for the queued work to finish, and again before the clock starts. Without it, a timer
measures how fast Python can queue kernels.

Nothing here is needed on a CPU-only machine: :func:`gpu_backend` says whether a GPU can be
measured, and each function raises a clear ``RuntimeError`` when none can.

* :func:`gpu_matmul`: ``C = A·B`` for square matrices of a dtype (tensor cores where the dtype
  has them);
* :func:`gpu_copy`: a device-to-device copy, counted as STREAM counts its copy (a read and a
  write per element, no write-allocate);
* :func:`profile_gpu`: both, as a :class:`~perfmodel.hardware.Device` whose measured ceilings
  can be put beside the catalogue's nameplate for the same GPU.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from perfmodel import ops
from perfmodel._validate import choice, count, text
from perfmodel.hardware import Device
from perfmodel.measure.microbench import KernelResult
from perfmodel.measure.timing import measure

__all__ = ["BACKENDS", "GPU_DTYPES", "gpu_backend", "gpu_copy", "gpu_matmul", "profile_gpu"]

#: The libraries that can drive a GPU here, in the order they are tried.
BACKENDS = ("torch", "cupy")
#: The course's dtypes and their names in each backend (CuPy has no bf16).
GPU_DTYPES = {
    "torch": {"fp64": "float64", "fp32": "float32", "fp16": "float16", "bf16": "bfloat16"},
    "cupy": {"fp64": "float64", "fp32": "float32", "fp16": "float16"},
}


def _usable(name: str) -> Any | None:
    """The backend's module when it imports and sees at least one GPU, else None."""
    try:
        module = importlib.import_module(name)
        if name == "torch":
            return module if module.cuda.is_available() else None
        return module if module.cuda.runtime.getDeviceCount() > 0 else None
    except Exception:  # not installed, no driver, no device: all mean "not this one"
        return None


def gpu_backend() -> str | None:
    """``"torch"`` or ``"cupy"``, whichever first sees a GPU; None when neither does.

    Returns
    -------
    str or None
        The first name in :data:`BACKENDS` whose library imports and sees at least one
        GPU; None when none does (not installed, no driver, no device).

    Examples
    --------
    >>> gpu_backend() in (None, "torch", "cupy")
    True
    """
    return next((name for name in BACKENDS if _usable(name) is not None), None)


@dataclass(frozen=True, slots=True)
class _Gpu:
    """What a measurement needs from a backend: arrays, a matmul, a copy and a sync."""

    name: str
    module: Any

    def array(self, shape: tuple[int, ...], dtype: str) -> Any:
        width = GPU_DTYPES[self.name][choice("dtype", dtype, tuple(GPU_DTYPES[self.name]))]
        if self.name == "torch":
            return self.module.rand(*shape, device="cuda", dtype=getattr(self.module, width))
        return self.module.random.random(shape).astype(width)

    def matmul(self, a: Any, b: Any, out: Any) -> Callable[[], Any]:
        return lambda: self.module.matmul(a, b, out=out)

    def copy(self, source: Any, target: Any) -> Callable[[], Any]:
        if self.name == "torch":
            return lambda: target.copy_(source)
        return lambda: self.module.copyto(target, source)

    def sync(self) -> Callable[[], Any]:
        if self.name == "torch":
            return self.module.cuda.synchronize  # type: ignore[no-any-return]
        return self.module.cuda.Device().synchronize  # type: ignore[no-any-return]


def _gpu(backend: str | None) -> _Gpu:
    if backend is not None:
        backend = choice("backend", backend, BACKENDS)
    for name in (backend,) if backend else BACKENDS:
        module = _usable(name)
        if module is not None:
            return _Gpu(name, module)
    raise RuntimeError(
        "No GPU can be measured here: install PyTorch with CUDA or CuPy on a machine with an "
        "NVIDIA GPU (the CPU lectures need neither)."
        if backend is None
        else f"`backend` {backend!r} cannot see a GPU here (not installed, or no device)."
    )


def gpu_matmul(
    n: int, *, dtype: str = "bf16", backend: str | None = None, **timing: Any
) -> KernelResult:
    """``C = A·B`` for ``n × n`` matrices on the GPU, synchronised around every sample.

    Parameters
    ----------
    n : int
        The matrices' side, count (at least 1).
    dtype : str
        One of the backend's dtypes in :data:`GPU_DTYPES` (``"bf16"``: torch only).
    backend : {"torch", "cupy"}, optional
        The library to drive the GPU with; by default the first of :data:`BACKENDS` that
        sees one.
    **timing
        Passed to :func:`perfmodel.measure.timing.measure` (``repeats``, ``min_time_s``...);
        ``sync`` is set here.

    Returns
    -------
    KernelResult
        The exact cost of one matmul and its measurement (kind ``"matmul"``).

    Raises
    ------
    RuntimeError
        If no GPU can be measured with ``backend``.
    ValueError
        If the backend has no such dtype, or ``backend`` is not one of :data:`BACKENDS`.
    """
    n = count("n", n)
    gpu = _gpu(backend)
    a, b, c = (gpu.array((n, n), dtype) for _ in range(3))
    cost = ops.matmul(n, n, n, dtype=dtype)
    m = measure(gpu.matmul(a, b, c), sync=gpu.sync(), label=f"GPU {cost.label}", dtype=dtype,
                sizes={"n": n}, **timing)  # fmt: skip
    return KernelResult(cost, m, "matmul", f"GPU matmul {n}")


def gpu_copy(
    n: int, *, dtype: str = "fp32", backend: str | None = None, **timing: Any
) -> KernelResult:
    """Copy ``n`` elements from one GPU array to another (STREAM's counting).

    Parameters
    ----------
    n : int
        Elements copied, count (at least 1).
    dtype : str
        One of the backend's dtypes in :data:`GPU_DTYPES`.
    backend : {"torch", "cupy"}, optional
        The library to drive the GPU with; by default the first of :data:`BACKENDS` that
        sees one.
    **timing
        Passed to :func:`perfmodel.measure.timing.measure` (``repeats``, ``min_time_s``...);
        ``sync`` is set here.

    Returns
    -------
    KernelResult
        One read and one write per element, no FLOPs, and the measurement (kind
        ``"stream"``).

    Raises
    ------
    RuntimeError
        If no GPU can be measured with ``backend``.
    ValueError
        If the backend has no such dtype, or ``backend`` is not one of :data:`BACKENDS`.
    """
    n = count("n", n)
    gpu = _gpu(backend)
    source, target = gpu.array((n,), dtype), gpu.array((n,), dtype)
    cost = ops.elementwise(n, flops_per_element=0, dtype=dtype, label="GPU copy")
    m = measure(gpu.copy(source, target), sync=gpu.sync(), label=cost.label, dtype=dtype,
                sizes={"n": n}, **timing)  # fmt: skip
    return KernelResult(cost, m, "stream", "GPU copy")


def profile_gpu(
    *,
    name: str = "This GPU",
    dtypes: tuple[str, ...] = ("fp32", "bf16"),
    sizes: tuple[int, ...] = (2048, 4096, 8192),
    copy_elements: int = 256 * 1024**2,
    backend: str | None = None,
    **timing: Any,
) -> tuple[Device, tuple[KernelResult, ...]]:
    """The best matmul per dtype and the best copy bandwidth, as a Device and its kernels.

    Nothing here knows the GPU's nameplate, so the device's nominal figures are its
    measurements (the notes say so); compare them with the catalogue's entry for the same GPU
    (``hardware.get("H100 SXM")``).

    Parameters
    ----------
    name : str
        The device's name.
    dtypes : tuple of str
        The dtypes whose matmul peak is measured (each in :data:`GPU_DTYPES` for the
        backend).
    sizes : tuple of int
        The matmul sides tried for each dtype, count; the best rate is the peak.
    copy_elements : int
        fp32 elements in the copy that measures bandwidth, count (the default is 1 GiB per
        array, two arrays).
    backend : {"torch", "cupy"}, optional
        The library to drive the GPU with; by default the first of :data:`BACKENDS` that
        sees one.
    **timing
        Passed to :func:`perfmodel.measure.timing.measure` (``repeats``, ``min_time_s``...);
        ``sync`` is set here.

    Returns
    -------
    tuple of (hardware.Device, tuple of KernelResult)
        The device, whose nominal and measured peaks (FLOP/s per dtype) and bandwidth (B/s)
        are the same measurements; and every kernel, the matmuls dtype by dtype and size by
        size, then the copy.

    Raises
    ------
    RuntimeError
        If no GPU can be measured with ``backend``.
    """
    name = text("name", name)
    kernels = [gpu_matmul(n, dtype=d, backend=backend, **timing) for d in dtypes for n in sizes]
    kernels.append(gpu_copy(copy_elements, backend=backend, **timing))
    peaks: dict[str, float] = {}
    for kernel in kernels[:-1]:
        dtype = kernel.cost.dtype or ""
        peaks[dtype] = max(peaks.get(dtype, 0.0), kernel.flops_per_s)
    bandwidth = kernels[-1].bytes_per_s
    device = Device(
        name=name,
        kind="gpu",
        peak_flops_by_dtype=peaks,
        memory_bandwidth=bandwidth,
        measured_flops_by_dtype=peaks,
        measured_memory_bandwidth=bandwidth,
        measured_source="perfmodel.measure.gpu.profile_gpu: the best matmul per dtype, and a copy",
        source="measured on this machine (lecture 06)",
        notes="Nominal figures are the measurements: compare with the catalogue's entry.",
    )
    return device, tuple(kernels)
