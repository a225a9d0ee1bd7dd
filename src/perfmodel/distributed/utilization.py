"""Training FLOPs and model FLOPs utilization (MFU), with what large runs report.

MFU, as Chowdhery et al. define it for PaLM (2022): the FLOPs the *model* needs per second
at the observed throughput, over the hardware's peak. It counts ``6·N`` FLOPs per token
(plus attention, if you count it), never the recomputed forward passes, so it cannot be
raised by doing redundant work; *hardware* FLOPs utilization counts those too and is
higher.

>>> round(mfu(tokens_per_s=1e6, flops_per_token=6 * 8e9, devices=64, peak_flops=989e12), 3)
0.758
"""

from __future__ import annotations

from dataclasses import dataclass

from perfmodel._validate import count, non_negative, positive

__all__ = ["PUBLISHED_RUNS", "PublishedRun", "mfu", "step_time_for_mfu", "training_flops"]


def training_flops(parameters: float, tokens: float) -> float:
    """The rule of thumb for a dense transformer: ``6 · parameters · tokens`` FLOPs.

    That is 2 for the forward pass and 4 for the backward, per parameter and token.

    Parameters
    ----------
    parameters : float
        The model's parameters, count.
    tokens : float
        Tokens trained on, count.

    Returns
    -------
    float
        Training FLOPs, FLOP.

    Examples
    --------
    >>> training_flops(540.35e9, 780e9) / 1e21     # PaLM 540B, reported as 2527.2 ZFLOPs
    2528.838
    """
    return 6.0 * non_negative("parameters", parameters) * non_negative("tokens", tokens)


def mfu(*, tokens_per_s: float, flops_per_token: float, devices: int, peak_flops: float) -> float:
    """Model FLOPs utilization: ``tokens_per_s · flops_per_token / (devices · peak_flops)``.

    Parameters
    ----------
    tokens_per_s : float
        Observed throughput, tokens/s.
    flops_per_token : float
        The model's FLOPs per token (``6·N``, say), FLOP.
    devices : int
        Devices, count.
    peak_flops : float
        Each device's peak, FLOP/s.

    Returns
    -------
    float
        MFU, fraction.
    """
    achieved = non_negative("tokens_per_s", tokens_per_s) * positive(
        "flops_per_token", flops_per_token
    )
    return achieved / (count("devices", devices) * positive("peak_flops", peak_flops))


def step_time_for_mfu(
    *, tokens_per_step: float, flops_per_token: float, devices: int, peak_flops: float, mfu: float
) -> float:
    """The step time a given MFU means: the step's model FLOPs over the rate achieved.

    Parameters
    ----------
    tokens_per_step : float
        Tokens per step, count.
    flops_per_token : float
        The model's FLOPs per token, FLOP.
    devices : int
        Devices, count.
    peak_flops : float
        Each device's peak, FLOP/s.
    mfu : float
        Model FLOPs utilization, fraction.

    Returns
    -------
    float
        Seconds per step, s.

    Examples
    --------
    >>> round(step_time_for_mfu(tokens_per_step=4e6, flops_per_token=6 * 70e9, devices=1024,
    ...                         peak_flops=989e12, mfu=0.4), 2)
    4.15
    """
    flops = positive("tokens_per_step", tokens_per_step) * positive("flops_per_token",
                                                                    flops_per_token)  # fmt: skip
    rate = count("devices", devices) * positive("peak_flops", peak_flops) * positive("mfu", mfu)
    return flops / rate


@dataclass(frozen=True, slots=True)
class PublishedRun:
    """A large training run's own report of its utilization.

    Parameters
    ----------
    name : str
        The run.
    parameters : float
        The model's parameters, count.
    devices : int
        Devices it trained on, count.
    device : str
        Which device (a catalogue name).
    utilization : float
        What it reports, fraction.
    measure : str
        Which utilization: MFU, or hardware FLOPs utilization.
    source : str
        Where it is reported.
    """

    name: str
    parameters: float
    devices: int
    device: str
    utilization: float
    measure: str
    source: str


#: What large runs report. ``measure`` says which utilization: MFU counts only the model's
#: FLOPs; hardware FLOPs utilization also counts recomputation.
PUBLISHED_RUNS = (
    PublishedRun("PaLM 540B", 540.35e9, 6144, "TPU v4", 0.462, "MFU",
                 "Chowdhery et al., PaLM: Scaling Language Modeling with Pathways (2022), "
                 "Table 3 (57.8% hardware FLOPs utilization)"),
    PublishedRun("Llama 3 405B", 405e9, 16384, "H100 SXM", 0.38, "MFU (bf16)",
                 "Llama Team, The Llama 3 Herd of Models (2024), Table 4: 38-43% on 8K to 16K "
                 "GPUs"),
    PublishedRun("Megatron-LM 1T", 1.0e12, 3072, "A100 SXM", 0.52, "hardware FLOPs utilization",
                 "Narayanan et al., Efficient Large-Scale Language Model Training on GPU "
                 "Clusters Using Megatron-LM (2021): 163 TFLOP/s per GPU, 52% of peak"),
)  # fmt: skip
