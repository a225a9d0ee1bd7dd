"""What kernels really reach on a device: the ceilings a prediction of a real run uses.

A datasheet's peak is what no training or serving run reaches. A prediction of "how long will
it take" prices each kernel at what kernels of its kind *achieve*:

* **matrix multiplies** at the most a large one reaches (the catalogue's measured maximum,
  Bekman's mamf-finder table, where it has one), in whole waves of output tiles, plus a fixed
  cost per kernel. A GEMM with an ``m × n`` output is cut into ``⌈m/128⌉·⌈n/128⌉`` tiles, one
  per streaming multiprocessor at a time, and a wave that leaves some idle takes as long as a
  full one (NVIDIA, *Matrix Multiplication Background User's Guide*: tile and wave
  quantization). So a GEMM of ``F`` FLOPs takes ``F / matmul_flops · waves · units / tiles +
  kernel_s``: small and thin ones fall off the ceiling as real ones do;
* **attention** (the score and value products): a fused kernel (FlashAttention) at what
  published FlashAttention-2 runs reach on the device, which rises with the sequence as
  ``plateau · s / (s + s½)`` and is lower for narrow heads (:data:`FLASH_ATTENTION`); unfused,
  as two batched GEMMs a head at the matmul ceiling, its softmax and dropout among the
  memory-bound kernels;
* **memory-bound kernels** (norms, activations, residual adds, optimizer steps, and a decode
  step's weight and cache reads) at an achieved fraction of the memory bandwidth.

The constants without a published measurement for every device (the share of a measured
GEMM ceiling a run's own shapes reach, an unmeasured GEMM's share of its peak, the bandwidth
small kernels reach, ``kernel_s``, and a serving engine's attention plateau as a share of the
matmul ceiling) are fitted once, on the calibration half
of ``data/published_runs.toml`` (:mod:`perfmodel.published`), and never on its held-out half;
:data:`FITTED` says what they are and where they came from. Every prediction names the
ceilings it used (:meth:`Achieved.describe`), and nameplate stays one argument away.

>>> h100 = achieved("H100 SXM")
>>> round(h100.matmul_flops / 1e12), h100.matmul_source.split(",")[0]
(662, '83% of 794 TFLOP/s: Stas Bekman')
>>> round(h100.gemm_time(2 * 8192**3) * 1e3, 2)     # an 8192^3 bf16 GEMM, ms
1.67
>>> thin = 2 * 128 * 8192 * 2560     # FLOPs of a 128 x 2560 output: 20 tiles for 132 SMs
>>> round(h100.gemm_time(thin) * 1e6), round(h100.gemm_time(thin, rows=128, cols=2560) * 1e6)
(19, 64)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from perfmodel._validate import choice, count, non_negative, positive
from perfmodel.hardware import Device, DeviceLike, get

__all__ = [
    "FITTED",
    "FLASH_ATTENTION",
    "HALF_TOKENS",
    "MIN_TILE_ROWS",
    "TILE",
    "Achieved",
    "achieved",
    "default_links",
]

#: The side of a GEMM's output tile, elements: cuBLAS's usual 128 × 128 for 16-bit GEMMs
#: (NVIDIA, *Matrix Multiplication Background User's Guide*), one tile per streaming
#: multiprocessor at a time.
TILE = 128
#: Fewer output rows than a tile get a shorter tile: the next power of two, at least this many
#: (libraries keep narrow tiles and GEMV kernels for few rows, as in a decode step).
MIN_TILE_ROWS = 16

#: FlashAttention-2's forward and backward pass on a device, causal, head dimension 128, as
#: Dao publishes it (*FlashAttention-2: Faster Attention with Better Parallelism and Work
#: Partitioning*, 2023; the repository's ``assets/flash2_*_fwd_bwd_benchmark.png``, FLOPs
#: counted over the causal half): the plateau it rises to, FLOP/s, and the sequence length at
#: which it reaches half of it, tokens, from ``plateau · s / (s + s½)`` through the figure's
#: ends (512 and 16k tokens); the four lengths between are within 3%. Head dimension 64 runs
#: 0.87-0.91 of it on both devices (:data:`NARROW_HEADS`).
FLASH_ATTENTION = {
    "A100": (195e12, 495, "Dao, FlashAttention-2 (2023), A100 80GB forward + backward, causal, "
             "head dim 128: 99 TFLOP/s at 512 tokens, 189 at 16k"),
    "H100": (339e12, 553, "Dao, FlashAttention-2 (2023), H100 80GB SXM5 forward + backward, "
             "causal, head dim 128: 163 TFLOP/s at 512 tokens, 328 at 16k"),
}  # fmt: skip
#: Which catalogue devices share those chips.
_FLASH_CHIPS = {"A100 SXM4 40GB": "A100", "A100 SXM4 80GB": "A100", "H100 SXM": "H100",
                "H200 SXM": "H100", "H800 SXM": "H100", "GH200": "H100"}  # fmt: skip
#: Where no figure is published: the half-point of both published curves, rounded, tokens.
HALF_TOKENS = 512
#: Head dimension 64 over 128 in the same figures (A100 0.89-0.91, H100 0.87).
NARROW_HEADS = 0.88

#: What :func:`achieved` assumes where the catalogue has no measurement, for a training
#: framework and for a serving engine (engines launch their kernels differently: CUDA graphs,
#: fused decode kernels). Each set was fitted on the calibration half of the published runs of
#: its kind by ``benchmarks/published.py --fit`` (a least-squares fit of log(predicted /
#: published)); the held-out half was never used.
FITTED = {
    "training": {
        # a device's largest GEMMs as a fraction of its dtype's peak, where none was measured
        # (in the published training runs: fp8 on H100)
        "matmul_fraction": 0.5531,
        # a fused attention kernel's plateau over the matmul ceiling, where FLASH_ATTENTION has
        # no figure for the device: the lower of its two (H100's 339 of 794 TFLOP/s; A100's is
        # 195 of 271). Not fitted: every published training run is on an A100 or an H100
        "attention_fraction": 0.427,
        # achieved over nameplate memory bandwidth, for the memory-bound kernels between GEMMs;
        # kept within 70-95%, what copy kernels reach (an A100 40GB copies at 1,355 of its
        # 1,555 GB/s: PTsolvers, gpu-workshop-JuliaCon23 issue 7), where the catalogue has no
        # measured copy; the fit sits at the floor
        "bandwidth_fraction": 0.7,
        # the share of a measured ceiling the run's own GEMMs reach: Bekman's figure is the best
        # of a search over shapes, and he warns a real model's shapes reach less
        "measured_share": 0.833,
        # a kernel's fixed cost: launch, ramp-up and tail, and the framework's dispatch, s
        "kernel_s": 10.95e-6,
    },
    "serving": {
        # fp8 GEMMs on H100, L40S and MI300X, and fp16 on the L40S and RTX 4090
        "matmul_fraction": 0.4402,
        # an engine's prefill attention (its own kernels, forward only) over the matmul ceiling
        "attention_fraction": 0.4548,
        # where the catalogue has no measured copy (the L40S); the fit sits at the ceiling
        "bandwidth_fraction": 0.95,
        "measured_share": 0.8747,
        "kernel_s": 4.133e-6,
    },
}
FITTED_SOURCE = "fitted on the calibration half of data/published_runs.toml"


@dataclass(frozen=True, slots=True)
class Achieved:
    """The ceilings one device's kernels reach, with where each came from.

    Parameters
    ----------
    device : hardware.Device
        The device.
    dtype : str
        The dtype the matmul ceiling is for (``"bf16"``...).
    matmul_flops : float
        The most a large GEMM reaches, FLOP/s.
    matmul_source : str
        Where that came from.
    attention_fraction : float
        Attention's plateau FLOP/s over ``matmul_flops``, fraction.
    bandwidth : float
        Memory bandwidth memory-bound kernels reach, B/s.
    bandwidth_source : str
        Where that came from.
    kernel_s : float
        Each kernel's fixed cost, s.
    attention_half : float, optional
        The sequence length at which attention reaches half its plateau, count (tokens).
    attention_source : str, optional
        Where attention's plateau came from.
    """

    device: Device
    dtype: str
    matmul_flops: float
    matmul_source: str
    attention_fraction: float
    bandwidth: float
    bandwidth_source: str
    kernel_s: float
    attention_half: float = HALF_TOKENS
    attention_source: str = FITTED_SOURCE

    def __post_init__(self) -> None:
        if not isinstance(self.device, Device):
            raise TypeError(f"`device` must be a hardware.Device (got {self.device!r}).")
        for name in ("matmul_flops", "attention_fraction", "bandwidth", "attention_half"):
            positive(name, getattr(self, name))
        non_negative("kernel_s", self.kernel_s)
        if self.attention_fraction > 1:
            raise ValueError(
                f"`attention_fraction` must be at most 1 (got {self.attention_fraction!r})."
            )

    def gemm_time(
        self, flops: float, nbytes: float = 0.0, *, rows: int | None = None,
        cols: int | None = None,
    ) -> float:  # fmt: skip
        """One GEMM: its FLOPs at the matmul ceiling or its bytes at the bandwidth, the slower,
        plus the kernel's fixed cost.

        Given its output's shape and a device whose compute units the catalogue counts, the
        FLOPs run in whole waves of :data:`TILE` × :data:`TILE` output tiles (fewer rows, a
        shorter tile: the next power of two, at least :data:`MIN_TILE_ROWS`), one tile per
        unit at a time, each as long as a full one: 20 tiles on 132 units take as long as
        132 would.

        Parameters
        ----------
        flops : float
            The GEMM's FLOPs, FLOP.
        nbytes : float, optional
            The bytes it reads and writes, B (0 prices the FLOPs alone).
        rows, cols : int, optional
            Its output's rows and columns, count (both, or neither: no waves).

        Returns
        -------
        float
            Seconds, s.
        """
        flops, nbytes = non_negative("flops", flops), non_negative("nbytes", nbytes)
        compute = flops / self.matmul_flops
        if (rows is None) != (cols is None):
            raise ValueError("give both `rows` and `cols` of the GEMM's output, or neither.")
        units = self.device.compute_units
        if rows is not None and cols is not None:
            m, n = count("rows", rows), count("cols", cols)
            if units:  # every tile costs a whole tile's FLOPs; a wave, a whole wave's
                tall = min(TILE, max(MIN_TILE_ROWS, 1 << (m - 1).bit_length()))
                tiles = math.ceil(m / tall) * math.ceil(n / TILE)
                compute *= math.ceil(tiles / units) * units * tall * TILE / (m * n)
        return max(compute, nbytes / self.bandwidth) + self.kernel_s

    def attention_time(
        self, flops: float, *, seq_len: int | None = None, head_dim: int | None = None
    ) -> float:
        """Attention's score and value products in a fused kernel, s.

        The kernel runs at its plateau times ``s / (s + attention_half)`` for a sequence of
        ``s`` tokens, and :data:`NARROW_HEADS` of that at head dimension 64 (in proportion
        between 64 and 128).

        Parameters
        ----------
        flops : float
            Their FLOPs, FLOP.
        seq_len : int, optional
            The sequence (queries and keys) each kernel sees, tokens; none: the plateau.
        head_dim : int, optional
            The heads' dimension, count; none: 128.

        Returns
        -------
        float
            Seconds, s.
        """
        flops = non_negative("flops", flops)
        rate = self.matmul_flops * self.attention_fraction
        if seq_len is not None:
            s = count("seq_len", seq_len)
            rate *= s / (s + self.attention_half)
        if head_dim is not None:
            d = min(max(count("head_dim", head_dim), 64), 128)
            rate *= NARROW_HEADS + (1 - NARROW_HEADS) * (d - 64) / 64
        return flops / rate + self.kernel_s

    def memory_time(self, nbytes: float, kernels: int = 1) -> float:
        """Memory-bound kernels moving ``nbytes`` in all, s.

        Parameters
        ----------
        nbytes : float
            Bytes read and written, B.
        kernels : int, optional
            How many kernels they are, count (each pays ``kernel_s``).

        Returns
        -------
        float
            Seconds, s.
        """
        kernels = count("kernels", kernels, minimum=0)
        return non_negative("nbytes", nbytes) / self.bandwidth + kernels * self.kernel_s

    def describe(self) -> str:
        """The ceilings in words, with their sources: what a prediction used.

        Returns
        -------
        str
            One line per ceiling.
        """
        peak = self.device.peak_flops_by_dtype.get(self.dtype, 0.0)
        share = f" ({self.matmul_flops / peak:.0%} of peak)" if peak else ""
        return (
            f"matmul {self.matmul_flops / 1e12:.0f} TFLOP/s {self.dtype}{share}: "
            f"{self.matmul_source}\n"
            f"attention up to {self.attention_fraction:.0%} of that: {self.attention_source}\n"
            f"memory {self.bandwidth / 1e12:.2f} TB/s: {self.bandwidth_source}\n"
            f"{self.kernel_s * 1e6:.1f} µs a kernel: {FITTED_SOURCE}"
        )


def achieved(
    device: DeviceLike,
    dtype: str = "bf16",
    *,
    use: str = "training",
    fitted: dict[str, float] | None = None,
) -> Achieved:
    """The achieved ceilings of ``device`` for ``dtype``: measured where the catalogue has it.

    Parameters
    ----------
    device : str or hardware.Device
        A catalogue name or a device you built.
    dtype : str, optional
        The matmuls' dtype (default ``"bf16"``; ``"fp16"`` shares bf16's measurement).
    use : {"training", "serving"}, optional
        Whose fitted constants: a training framework's or a serving engine's.
    fitted : dict, optional
        Replacements for those constants (what a fit on the calibration half tries).

    Returns
    -------
    Achieved
        The ceilings, each with its source.

    Raises
    ------
    ValueError
        If the device has no peak for ``dtype``.
    """
    device = get(device, argument="device")
    use = choice("use", use, tuple(FITTED))
    values = {**FITTED[use], **_checked(fitted, FITTED[use])}
    dtype = choice("dtype", dtype, tuple(device.peak_flops_by_dtype))
    peak = device.peak_flops_by_dtype[dtype]
    measured = device.measured_flops_by_dtype
    # a device measured for both cites both in one source, the bandwidth's after this marker
    flops_told, _, bandwidth_told = device.measured_source.partition("; memory bandwidth: ")
    same = measured.get(dtype) or (measured.get("bf16") if dtype == "fp16" else None)
    if same:
        matmul, source = same * values["measured_share"], flops_told
        if values["measured_share"] < 1:
            source = f"{values['measured_share']:.0%} of {same / 1e12:.0f} TFLOP/s: {source}"
    else:
        matmul = values["matmul_fraction"] * peak
        source = f"{values['matmul_fraction']:.0%} of the {dtype} peak ({FITTED_SOURCE})"
    if device.measured_memory_bandwidth:
        bandwidth, where = device.measured_memory_bandwidth, bandwidth_told or flops_told
    else:
        bandwidth = values["bandwidth_fraction"] * device.memory_bandwidth
        where = f"{values['bandwidth_fraction']:.0%} of nameplate ({FITTED_SOURCE})"
    attention, half, told = values["attention_fraction"], HALF_TOKENS, FITTED_SOURCE
    chip = _FLASH_CHIPS.get(device.name)
    if chip and use == "training" and dtype in ("bf16", "fp16", "fp8"):  # 16-bit attention
        plateau, half, told = FLASH_ATTENTION[chip]
        attention = min(1.0, plateau / matmul)
    return Achieved(
        device=device,
        dtype=dtype,
        matmul_flops=positive("matmul_flops", matmul),
        matmul_source=source,
        attention_fraction=positive("attention_fraction", attention),
        bandwidth=positive("bandwidth", bandwidth),
        bandwidth_source=where,
        kernel_s=non_negative("kernel_s", values["kernel_s"]),
        attention_half=half,
        attention_source=told,
    )


def _checked(fitted: object, known: dict[str, float]) -> dict[str, float]:
    """Replacement constants, each a known name: fractions in (0, 1], a kernel's cost >= 0."""
    if fitted is None:
        return {}
    if not isinstance(fitted, dict):
        raise TypeError(f"`fitted` must be a dict of constant -> value (got {fitted!r}).")
    out = {}
    for key, value in fitted.items():
        if key not in known:
            raise ValueError(f"`fitted` may set {', '.join(sorted(known))} (got {key!r}).")
        if key == "kernel_s":
            out[key] = non_negative(f"fitted[{key!r}]", value)
        else:
            out[key] = positive(f"fitted[{key!r}]", value)
            if out[key] > 1:
                raise ValueError(
                    f"`fitted[{key!r}]` must be a fraction, at most 1 (got {value!r})."
                )
    return out


def default_links(device: str) -> tuple[str, str]:
    """The links of a catalogue GPU's usual node: NVLink inside, one InfiniBand port per GPU.

    Parameters
    ----------
    device : str
        The device's catalogue name.

    Returns
    -------
    (str, str)
        The link inside a node and the link between nodes (catalogue names).
    """
    if device.startswith(("H100", "H200", "H800", "GH200")):
        return "NVLink 4", "InfiniBand NDR"
    if device.startswith("B200"):
        return "NVLink 5", "InfiniBand NDR"
    return "NVLink 3", "InfiniBand HDR"
