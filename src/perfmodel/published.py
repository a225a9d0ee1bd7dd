"""Published training and serving runs, and how well the course's models predict them.

``data/published_runs.toml`` holds measurements nobody on the project chose: training
throughput, TFLOP/s per GPU or MFU of runs from about 1B to 1T parameters, and serving time to
first token, time per output token and throughput, each with its source, the quote it was
read from and every assumption made. **Its split into a calibration half and a held-out half
was fixed before anything was fitted**, by a rule nobody can steer (the parity of a SHA-256
of the row's id; :func:`split_of`), and recorded in the file. The few constants the models fit
(:data:`perfmodel.achieved.FITTED`, :data:`perfmodel.serving.inference.ENGINE_STEP_S`) were fit
on the calibration half only (:func:`fit`); :func:`compare` reports both halves.

>>> rows = load()
>>> len(rows) >= 40, {row.split for row in rows} == {"calibration", "held-out"}
(True, True)
"""

from __future__ import annotations

import hashlib
import math
import statistics
import sys
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

from perfmodel._validate import non_negative
from perfmodel.transformer import Transformer

if TYPE_CHECKING:
    from perfmodel.distributed.step import TrainingStep

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

__all__ = [
    "Comparison",
    "Row",
    "compare",
    "fit",
    "load",
    "predict",
    "split_of",
    "summary",
    "training_step_of",
]

SPLITS = ("calibration", "held-out")


def split_of(row_id: str) -> str:
    """The half a row belongs to: the parity of the SHA-256 of its id (fixed before fitting).

    Parameters
    ----------
    row_id : str
        The row's id.

    Returns
    -------
    str
        ``"calibration"`` or ``"held-out"``.
    """
    if not isinstance(row_id, str):
        raise TypeError(f"`row_id` must be a string (got {row_id!r}).")
    return SPLITS[int(hashlib.sha256(row_id.encode()).hexdigest(), 16) % 2]


@dataclass(frozen=True, slots=True)
class Row:
    """One published measurement and what it was measured on.

    Parameters
    ----------
    kind : str
        ``"training"`` or ``"inference"``.
    id : str
        Its unique id.
    split : str
        ``"calibration"`` or ``"held-out"``.
    metric : str
        What was measured (``"tflops_per_gpu"``, ``"mfu"``, ``"tpot_s"``...).
    value : float
        The published value, in the metric's SI unit (s, tokens/s, FLOP/s or fraction).
    fields : dict
        Every field of the row as the file gives it.
    """

    kind: str
    id: str
    split: str
    metric: str
    value: float
    fields: dict[str, Any]

    @property
    def source(self) -> str:
        """The row's citation."""
        return str(self.fields.get("source", ""))

    def model(self) -> Transformer:
        """The row's model shape.

        Returns
        -------
        Transformer
            Built from the row's ``layers``, ``width``, ``heads``... fields.
        """
        f = self.fields
        return Transformer(
            width=f["width"], layers=f["layers"], heads=f["heads"], vocab=f["vocab"],
            kv_heads=f.get("kv_heads"), mlp_width=f.get("mlp_width"),
            gated=bool(f.get("gated", False)), tied_embeddings=not f.get("gated", False),
        )  # fmt: skip


def load() -> list[Row]:
    """Every published row, training first, in the file's order.

    Returns
    -------
    list of Row
        The rows, each with its split as the file records it.

    Raises
    ------
    ValueError
        If a row's recorded split is not the one its id gives (the split was moved).
    """
    text = (resources.files("perfmodel") / "data" / "published_runs.toml").read_text("utf-8")
    data = tomllib.loads(text)
    rows = []
    for kind in ("training", "inference"):
        for raw in data.get(kind, []):
            if raw["split"] != split_of(raw["id"]):
                raise ValueError(f"row {raw['id']!r} is recorded as {raw['split']!r}, "
                                 f"but its id puts it in {split_of(raw['id'])!r}")  # fmt: skip
            rows.append(Row(kind, raw["id"], raw["split"], raw["metric"], float(raw["value"]), raw))
    return rows


# --- predictions ------------------------------------------------------------------------


def _step_flops(row: Row, passes: int) -> float:
    """A step's FLOPs as Narayanan et al. count them (their eq. 3 with ``passes = 4``): the
    layers ``passes`` times, attention over the whole sequence, and the output layer three
    times (it is not recomputed): ``24·passes·B·s·l·h²(1 + s/6h) + 6·B·s·h·V``; a mixture of
    experts adds its ``top_k - 1`` further MLPs a token."""
    f = row.fields
    model = row.model()
    per_token = model.forward_flops_per_token(f["seq_len"])
    if f.get("experts", 1) > 1:  # each token runs top_k of the experts' MLPs
        from perfmodel.distributed import moe_parameters

        used = moe_parameters(model, experts=f["experts"], top_k=f["top_k"]).active
        per_token += 2.0 * (used - model.parameters)
    logits = 2.0 * model.vocab * model.width
    tokens = f["global_batch"] * f["seq_len"]
    return float((passes * (per_token - logits) + 3 * logits) * tokens)


def _micro_batch(f: dict[str, Any]) -> int:
    """The row's micro-batch; unstated, the whole per-replica batch without a pipeline (nothing
    to overlap, so frameworks run it at once where it fits) and 1 with one (the most
    micro-batches, the smallest bubble)."""
    if "micro_batch" in f:
        return int(f["micro_batch"])
    if f.get("pipeline", 1) == 1:
        return int(f["global_batch"]) // int(f.get("data", 1))
    return 1


def training_step_of(row: Row, *, fitted: dict[str, float] | None = None) -> TrainingStep:
    """The training step a published training row ran, as :func:`predict` prices it.

    Parameters
    ----------
    row : Row
        A training row.
    fitted : dict, optional
        Constants to use instead of the fitted ones.

    Returns
    -------
    distributed.TrainingStep
        The step's parts, s, and its MFU.

    Raises
    ------
    ValueError
        If ``row`` is not a training row.
    """
    from perfmodel.achieved import achieved
    from perfmodel.distributed.step import training_step

    if not isinstance(row, Row):
        raise TypeError(f"`row` must be a published.Row (got {row!r}).")
    if row.kind != "training":
        raise ValueError(f"`row` must be a training row (got {row.kind} row {row.id!r})")
    if fitted is not None and not isinstance(fitted, dict):
        raise TypeError(f"`fitted` must be a dict of constant -> value (got {fitted!r}).")
    f = row.fields
    dtype = "bf16" if f.get("precision", "bf16") in ("bf16", "fp16") else f["precision"]
    fitted = {key: value for key, value in (fitted or {}).items() if key != "engine_step_s"}
    return training_step(
        row.model(), seq_len=f["seq_len"], global_batch=f["global_batch"],
        device=f["device"], tensor=f.get("tensor", 1), pipeline=f.get("pipeline", 1),
        data=f.get("data", 1), context=f.get("context", 1), experts=f.get("experts", 1),
        top_k=f.get("top_k", 1), expert_parallel=f.get("expert_parallel", 1),
        micro_batch=_micro_batch(f),
        virtual_stages=f.get("virtual_stages", 1),
        sequence_parallel=f.get("sequence_parallel", False),
        recompute=f.get("recompute", "none"),
        flash_attention=f.get("flash_attention", str(f.get("date", "")) >= "2023"),
        distributed_optimizer=f.get("distributed_optimizer", False),
        fsdp=f.get("sharding") == "fsdp", overlap=f.get("overlap", False),
        dtype=dtype, ceilings=achieved(f["device"], dtype, fitted=fitted), check_memory=False,
    )  # fmt: skip


def predict(row: Row, *, fitted: dict[str, float] | None = None) -> tuple[float, str]:
    """The model's prediction of ``row``'s metric, and the ceilings it used.

    Parameters
    ----------
    row : Row
        A published row.
    fitted : dict, optional
        Constants to use instead of the module's fitted ones (what :func:`fit` tries).

    Returns
    -------
    (float, str)
        The predicted value in the metric's SI unit (s, tokens/s, FLOP/s or fraction), and
        the ceilings' description.
    """
    from perfmodel.achieved import achieved
    from perfmodel.serving.inference import ENGINE_STEP_S, gemm_dtype, inference_run

    if not isinstance(row, Row):
        raise TypeError(f"`row` must be a published.Row (got {row!r}).")
    if fitted is not None and not isinstance(fitted, dict):
        raise TypeError(f"`fitted` must be a dict of constant -> value (got {fitted!r}).")
    fitted = dict(fitted or {})
    engine = non_negative("fitted['engine_step_s']", fitted.pop("engine_step_s", ENGINE_STEP_S))
    f = row.fields
    if row.kind == "training":
        step = training_step_of(row, fitted=fitted)
        gpus, peak = step.gpus, step.peak_flops
        passes = {"full": 4, "selective": 3, "none": 3}[f.get("recompute", "none")]
        per_gpu = {
            "step_s": step.step_s,
            "tokens_per_s": step.tokens_per_s,
            "tokens_per_s_per_gpu": step.tokens_per_s / gpus,
            "tflops_per_gpu": _step_flops(row, passes) / step.step_s / gpus,
            "hfu": _step_flops(row, passes) / step.step_s / gpus / peak,
            "mfu": _step_flops(row, 3) / step.step_s / gpus / peak,
        }
        return per_gpu[row.metric], step.ceilings
    dtype = f.get("activation_dtype", "fp16")
    compute = gemm_dtype(dtype)
    ceilings = achieved(f["device"], compute, use="serving", fitted=fitted)
    run = inference_run(
        row.model(), f["device"], batch=f["batch"], prompt=f["prompt"], output=f["output"],
        tensor=f.get("tensor", 1), weight_dtype=f.get("weight_dtype", "fp16"),
        kv_dtype=f.get("kv_dtype", "fp16"), activation_dtype=dtype, engine_step_s=engine,
        ceilings=ceilings,
    )  # fmt: skip
    metrics = {
        "ttft_s": run.ttft_s,
        "tpot_s": run.tpot_s,
        "e2e_latency_s": run.e2e_latency_s,
        "output_tokens_per_s": run.output_tokens_per_s,
        "output_tokens_per_s_per_gpu": run.output_tokens_per_s / run.gpus,
    }
    return metrics[row.metric], run.ceilings


@dataclass(frozen=True, slots=True)
class Comparison:
    """One row predicted: the published value, the prediction and their ratio.

    Parameters
    ----------
    row : Row
        The published row.
    predicted : float
        The prediction, in the metric's SI unit (s, tokens/s, FLOP/s or fraction).
    ceilings : str
        The achieved ceilings the prediction used.
    """

    row: Row
    predicted: float
    ceilings: str

    @property
    def ratio(self) -> float:
        """Predicted over published."""
        return self.predicted / self.row.value

    @property
    def error(self) -> float:
        """``|predicted / published - 1|``, fraction."""
        return abs(self.ratio - 1)


def compare(
    rows: list[Row] | None = None, *, fitted: dict[str, float] | None = None
) -> list[Comparison]:
    """Predict every row.

    Parameters
    ----------
    rows : list of Row, optional
        The rows; all of :func:`load` by default.
    fitted : dict, optional
        Constants to use instead of the fitted ones.

    Returns
    -------
    list of Comparison
        One per row, in order.
    """
    chosen = load() if rows is None else rows
    if not isinstance(chosen, (list, tuple)):
        raise TypeError(f"`rows` must be a list of published.Row (got {rows!r}).")
    return [Comparison(row, *predict(row, fitted=fitted)) for row in chosen]


def summary(comparisons: list[Comparison]) -> dict[tuple[str, str], tuple[int, float, float]]:
    """Per kind and half: rows, median and worst ``|predicted / published - 1|``.

    Parameters
    ----------
    comparisons : list of Comparison
        What :func:`compare` returned.

    Returns
    -------
    dict
        ``(kind, split)`` to ``(rows, median error, worst error)``, errors as fractions.
    """
    if not isinstance(comparisons, (list, tuple)) or not all(
        isinstance(c, Comparison) for c in comparisons
    ):
        raise TypeError(f"`comparisons` must be what compare() returned (got {comparisons!r}).")
    out = {}
    for kind in ("training", "inference"):
        for split in SPLITS:
            errors = [c.error for c in comparisons if c.row.kind == kind and c.row.split == split]
            if errors:
                out[(kind, split)] = (len(errors), statistics.median(errors), max(errors))
    return out


#: What :func:`fit` fits, per kind, and the bounds each constant keeps to.
FIT_KEYS = {
    "training": ("matmul_fraction", "measured_share", "bandwidth_fraction", "kernel_s"),
    "serving": ("matmul_fraction", "measured_share", "attention_fraction", "bandwidth_fraction",
                "kernel_s", "engine_step_s"),
}  # fmt: skip
BOUNDS = {"matmul_fraction": (0.3, 1.0), "attention_fraction": (0.1, 1.0),
          "measured_share": (0.7, 1.0), "bandwidth_fraction": (0.7, 0.95), "kernel_s": (0.0, 1e-4),
          "engine_step_s": (0.0, 0.05)}  # fmt: skip


def fit(use: str = "training") -> dict[str, float]:
    """Fit one kind's free constants on the **calibration half only**.

    Minimises the soft-L1 loss of ``log(predicted / published)`` over the calibration rows of
    that kind with scipy's bounded least squares, each constant within physical bounds.

    Parameters
    ----------
    use : {"training", "serving"}
        The training framework's constants (training rows) or the serving engine's
        (inference rows, and the engine's cost per step).

    Returns
    -------
    dict of str to float
        The fitted constants: fractions, and the fixed costs in s.
    """
    import numpy as np
    from scipy.optimize import least_squares

    from perfmodel._validate import choice
    from perfmodel.achieved import FITTED
    from perfmodel.serving.inference import ENGINE_STEP_S

    use = choice("use", use, tuple(FIT_KEYS))
    keys = FIT_KEYS[use]
    start = {**FITTED[use], "engine_step_s": ENGINE_STEP_S}
    scale = {key: BOUNDS[key][1] for key in keys}
    kind = "training" if use == "training" else "inference"
    calibration = [row for row in load() if row.split == "calibration" and row.kind == kind]

    def residuals(x: Any) -> Any:
        trial = {key: float(value) * scale[key] for key, value in zip(keys, x, strict=True)}
        return [math.log(predict(row, fitted=trial)[0] / row.value) for row in calibration]

    x0 = np.array([min(max(start[k], BOUNDS[k][0]), BOUNDS[k][1]) / scale[k] for k in keys])
    lower = [BOUNDS[key][0] / scale[key] for key in keys]
    upper = [BOUNDS[key][1] / scale[key] for key in keys]
    found = least_squares(residuals, x0, bounds=(lower, upper), loss="soft_l1", f_scale=0.1)
    return {key: float(value) * scale[key] for key, value in zip(keys, found.x, strict=True)}
