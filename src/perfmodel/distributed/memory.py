"""How much memory training takes on each device, and whether it fits.

Model states follow Rajbhandari et al., *ZeRO: Memory Optimizations Toward Training
Trillion Parameter Models* (2020): with mixed-precision Adam each parameter costs
2 bytes (16-bit weights) + 2 (16-bit gradients) + 12 (fp32 master weights, momentum and
variance) = 16 bytes, **2Ψ + 2Ψ + 12Ψ**. ZeRO shards them over the data-parallel group:
stage 1 the optimizer states, stage 2 the gradients too, stage 3 (FSDP) the weights too.

Activations follow Korthikanti et al., *Reducing Activation Recomputation in Large
Transformer Models* (2022): one transformer layer keeps ``s·b·h·(34 + 5·a·s/h)`` bytes for
a micro-batch of ``b`` sequences of ``s`` tokens (16-bit activations, width ``h``, ``a``
heads); ``34·s·b·h`` with selective recomputation (the attention scores recomputed);
``2·s·b·h`` with full recomputation (only each layer's input kept). Tensor parallelism with
sequence parallelism divides them by ``t``.

>>> from perfmodel.transformer import Transformer
>>> model = Transformer(width=4096, layers=32, heads=32, vocab=32000, mlp_width=11008,
...                     gated=True, tied_embeddings=False)
>>> plain = training_memory(model)                 # one GPU, no sharding
>>> round(plain.model_states / 1e9)                # 16 bytes x 6.74e9 parameters
108
>>> round(training_memory(model, data_parallel=8, zero_stage=3).model_states / 1e9, 1)
13.5
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from perfmodel._show import gib, shown
from perfmodel._validate import choice, count, flag, fraction
from perfmodel.transformer import Transformer

if TYPE_CHECKING:
    from perfmodel.hardware import DeviceLike

__all__ = ["PRECISIONS", "RECOMPUTE", "TrainingMemory", "activation_bytes", "training_memory"]

#: Bytes per parameter for (weights, gradients, optimizer states), by precision and optimizer.
PRECISIONS: dict[str, dict[str, tuple[int, int, int]]] = {
    # 16-bit weights and gradients; fp32 master weights plus the optimizer's fp32 states
    "mixed": {"adam": (2, 2, 12), "sgd": (2, 2, 8)},
    # everything in fp32: Adam's momentum and variance, SGD's momentum
    "fp32": {"adam": (4, 4, 8), "sgd": (4, 4, 4)},
    # bf16 weights and gradients, fp32 optimizer moments, no fp32 master copy (the JAX
    # scaling book's training setting): 12 bytes per parameter with Adam, not ZeRO's 16
    "bf16": {"adam": (2, 2, 8), "sgd": (2, 2, 4)},
}
#: Activation recomputation choices.
RECOMPUTE = ("none", "selective", "full")


@dataclass(frozen=True, slots=True, repr=False)
class TrainingMemory:
    """Bytes one device holds while training, by kind.

    Parameters
    ----------
    weights : float
        The weights this device keeps, B.
    gradients : float
        Their gradients, B.
    optimizer : float
        The optimizer's states (fp32 master weights, momentum, variance), B.
    activations : float
        What the forward pass keeps for the backward one, B.
    """

    weights: float
    gradients: float
    optimizer: float
    activations: float

    @property
    def model_states(self) -> float:
        """Weights, gradients and optimizer states: what ZeRO shards."""
        return self.weights + self.gradients + self.optimizer

    @property
    def total(self) -> float:
        """Everything, activations included (no allowance for buffers or fragmentation)."""
        return self.model_states + self.activations

    def fits(self, device: DeviceLike, *, usable: float = 0.9) -> bool:
        """Whether :attr:`total` fits in ``usable`` of ``device``'s memory.

        Parameters
        ----------
        device : str or hardware.Device
            A catalogue name or a device you built; it must state its memory capacity.
        usable : float
            The share of the memory training may use, fraction (the rest is the
            framework's workspace).

        Returns
        -------
        bool
            True when it fits.
        """
        from perfmodel.hardware import get

        spec = get(device, argument="device")
        if spec.memory_capacity is None:
            raise ValueError(f"`device` {spec.name!r} has no memory capacity in the catalogue.")
        usable = fraction("usable", usable)
        return self.total <= usable * spec.memory_capacity

    def __repr__(self) -> str:
        return shown("TrainingMemory", total=gib(self.total), weights=gib(self.weights),
                     gradients=gib(self.gradients), optimizer=gib(self.optimizer),
                     activations=gib(self.activations))  # fmt: skip


def activation_bytes(
    model: Transformer,
    *,
    micro_batch: int,
    seq_len: int,
    recompute: str = "none",
    tensor_parallel: int = 1,
    layers: int | None = None,
    sequence_parallel: bool = True,
    flash_attention: bool = False,
) -> float:
    """Activation bytes kept for the backward pass, after Korthikanti et al. (2022).

    See the module's docstring for the formula.

    Parameters
    ----------
    model : Transformer
        The model's shape.
    micro_batch : int
        Sequences per micro-batch, count.
    seq_len : int
        Tokens per sequence, count.
    recompute : {"none", "selective", "full"}
        Activation recomputation.
    tensor_parallel : int
        Ways each layer is split (with sequence parallelism), count.
    layers : int, optional
        Layers counted, count; all of the model's by default.
    sequence_parallel : bool, optional
        The norms' and dropout's ``10·s·b·h`` split over the tensor-parallel ranks too (the
        default); False keeps them whole on every rank.
    flash_attention : bool, optional
        A fused attention kernel that keeps no ``5·a·s²·b`` of scores (default False).

    Returns
    -------
    float
        Bytes, B.
    """
    if not isinstance(model, Transformer):
        raise TypeError(f"`model` must be a Transformer (got {type(model).__name__}).")
    b, s = count("micro_batch", micro_batch), count("seq_len", seq_len)
    recompute = choice("recompute", recompute, RECOMPUTE)
    t = count("tensor_parallel", tensor_parallel)
    layers = model.layers if layers is None else count("layers", layers, minimum=0)
    sp = flag("sequence_parallel", sequence_parallel)
    sbh = s * b * model.width
    if recompute == "full":
        return layers * 2.0 * sbh  # the layer's input only; the rest is recomputed
    per_layer = sbh * (24 / t + 10 / (t if sp else 1))
    if recompute == "none" and not flag("flash_attention", flash_attention):
        per_layer += 5.0 * model.heads * s * s * b / t  # the scores, softmax and dropout
    return layers * per_layer


def training_memory(
    model: Transformer | int,
    *,
    precision: str = "mixed",
    optimizer: str = "adam",
    data_parallel: int = 1,
    zero_stage: int = 0,
    tensor_parallel: int = 1,
    pipeline_parallel: int = 1,
    micro_batch: int = 1,
    seq_len: int | None = None,
    recompute: str = "none",
    convention: str = "zero",
) -> TrainingMemory:
    """Bytes per device to train ``model`` (a :class:`Transformer`, or a parameter count).

    Two conventions count ZeRO's model states. ``"zero"`` is the ZeRO paper's (Rajbhandari
    et al.): each stage shards one more of the 16-bit weights, their gradients and the
    optimizer's states. ``"deepspeed"`` is what DeepSpeed's own estimators
    (``estimate_zero2_model_states_mem_needs`` and ``..._zero3_...``, without offload) print,
    mixed precision with Adam only: stage 2 keeps the 16-bit weights and gradients whole
    (``4Ψ``) beside ``16Ψ/N`` of fp32 master weights, gradients and moments; stage 3 keeps
    ``18Ψ/N`` and the largest layer's 16-bit weights and gradients gathered (``4·L``, the
    largest of the embedding and the layer's weight matrices). DeepSpeed's figure is the
    higher: it keeps room for the whole 16-bit gradients at stage 2 and for the gathered
    largest layer at stage 3.

    Parameters
    ----------
    model : Transformer or int
        The model; a bare parameter count gives model states only.
    precision : {"mixed", "fp32", "bf16"}
        16-bit weights and gradients with fp32 master weights and optimizer states (ZeRO's
        16 bytes per parameter with Adam), fp32 throughout, or bf16 weights and gradients
        with fp32 optimizer moments and no master copy (12 with Adam).
    optimizer : {"adam", "sgd"}
        Adam (``"adamw"`` too: decoupled weight decay keeps the same states), or SGD with
        momentum; case is ignored.
    data_parallel : int
        The data-parallel group size, count.
    zero_stage : int
        How much ZeRO shards over it (0 to 3; 3 is FSDP).
    tensor_parallel, pipeline_parallel : int
        Ways the weights are split within a layer and across layers, count (evenly, by
        assumption).
    micro_batch : int
        Sequences per micro-batch, count, for activations (one micro-batch in flight per
        stage).
    seq_len : int, optional
        Tokens per sequence, count; no activations are counted without it (a Transformer
        only).
    recompute : {"none", "selective", "full"}
        Activation recomputation.
    convention : {"zero", "deepspeed"}
        How model states are counted (see above); ``"deepspeed"`` needs ZeRO stage 2 or 3,
        mixed precision and Adam, and a Transformer at stage 3.

    Returns
    -------
    TrainingMemory
        Bytes per device by kind, B.

    Examples
    --------
    >>> [round(training_memory(7.5e9, data_parallel=64, zero_stage=s, convention=c).total / 1e9, 1)
    ...  for s, c in ((2, "zero"), (2, "deepspeed"))]
    [16.6, 31.9]
    """
    precision = choice("precision", precision, tuple(PRECISIONS))
    optimizer = choice("optimizer", optimizer, tuple(PRECISIONS[precision]), {"adamw": "adam"})
    dp = count("data_parallel", data_parallel)
    stage = count("zero_stage", zero_stage, minimum=0, maximum=3)
    tp, pp = (
        count("tensor_parallel", tensor_parallel),
        count("pipeline_parallel", pipeline_parallel),
    )
    if isinstance(model, Transformer) and pp > model.layers:
        raise ValueError(
            f"`pipeline_parallel` must be at most the model's {model.layers} layers (got {pp})."
        )
    parameters = model.parameters if isinstance(model, Transformer) else count("model", model)
    local = parameters / (tp * pp)
    w, g, o = (local * b for b in PRECISIONS[precision][optimizer])
    o = o / dp if stage >= 1 else o
    g = g / dp if stage >= 2 else g
    w = w / dp if stage >= 3 else w
    if choice("convention", convention, ("zero", "deepspeed")) == "deepspeed":
        if stage < 2 or (precision, optimizer) != ("mixed", "adam"):
            raise ValueError(
                "`convention` 'deepspeed' counts ZeRO stages 2 and 3 with mixed precision and "
                f"Adam, as DeepSpeed's estimators do (got zero_stage={stage}, "
                f"precision={precision!r}, optimizer={optimizer!r})."
            )
        if stage == 2:
            w, g, o = 2 * local, 2 * local, 16 * local / dp
        else:
            if not isinstance(model, Transformer):
                raise TypeError(
                    "`model` must be a Transformer for the 'deepspeed' convention at stage 3 "
                    f"(it counts the largest layer; got {type(model).__name__})."
                )
            gemms = model.layer_gemms(tp)
            largest = max(model.vocab * model.width / tp, *(k * n for k, n in gemms))
            w, g, o = 2 * local / dp + 2 * largest, 2 * largest, 16 * local / dp
    activations = 0.0
    if seq_len is not None:
        if not isinstance(model, Transformer):
            raise TypeError(
                f"`model` must be a Transformer to count activations (got {type(model).__name__})."
            )
        layers = -(-model.layers // pp)  # the first stage's share, rounded up
        activations = activation_bytes(
            model, micro_batch=micro_batch, seq_len=seq_len, recompute=recompute,
            tensor_parallel=tp, layers=layers,
        )  # fmt: skip
    return TrainingMemory(w, g, o, activations)
