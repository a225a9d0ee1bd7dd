"""The zoo: nine model families at sizes a 2-core CPU runs in milliseconds, predicted with
this machine's kernel rates and then timed on onnxruntime.

Each family keeps its architecture (its kinds of layers, in its proportions) and shrinks only
what sets the cost: the image or sequence, and for the transformers the width and depth. The
families span what an engine meets: dense convolutions (ResNet-50), depthwise ones with
squeeze-and-excitation (MobileNetV2, EfficientNet-B0), 7x7 depthwise with layer norms
(ConvNeXt), attention (ViT, BERT, GPT-2), recurrence (an LSTM) and plain matmuls (an MLP).
None of them was used to choose a probe or a rate in :mod:`perfmodel.capstone.kernels`.

Examples
--------
>>> from perfmodel.capstone import import_onnx
>>> sorted(ZOO)[:3]
['BERT', 'ConvNeXt', 'EfficientNet-B0']
>>> import_onnx(zoo_model("LSTM", batch=1, weights=False)).batch
1
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from perfmodel._validate import choice, count, flag, positive
from perfmodel.capstone import builders
from perfmodel.capstone.kernels import KernelRates
from perfmodel.capstone.onnx_import import ImportedModel, import_onnx
from perfmodel.capstone.predict import EngineModel

__all__ = ["ZOO", "Fusion", "ZooRow", "fusions", "run_zoo", "zoo_model", "zoo_report"]

#: Each family: its builder and the arguments that size it for this CPU (batch aside).
ZOO: dict[str, tuple[Callable[..., Any], dict[str, Any]]] = {
    "MLP": (builders.mlp, {"widths": (784, 1024, 1024, 10)}),
    "ResNet-50": (builders.resnet, {"image": 96}),
    "MobileNetV2": (builders.mobilenet_v2, {"image": 160}),
    "EfficientNet-B0": (builders.efficientnet_b0, {"image": 128}),
    "ConvNeXt": (
        builders.convnext_t,
        {"image": 128, "depths": (2, 2, 6, 2), "widths": (48, 96, 192, 384)},
    ),
    "ViT": (
        builders.vit,
        {"image": 64, "patch": 8, "width": 192, "layers": 4, "heads": 3, "mlp_width": 768},
    ),
    "BERT": (
        builders.bert,
        {
            "seq_len": 64,
            "width": 256,
            "layers": 2,
            "heads": 4,
            "ffn": 1024,
            "vocab": 4096,
            "context": 128,
        },
    ),  # fmt: skip
    "GPT-2": (
        builders.gpt2,
        {"seq_len": 64, "width": 256, "layers": 2, "heads": 4, "vocab": 4096, "context": 256},
    ),
    "LSTM": (
        builders.lstm_lm,
        {"seq_len": 35, "hidden": 200, "layers": 2, "vocab": 2000, "embedding": 200},
    ),
}


#: Every family :func:`zoo_model` builds: the zoo, and the held-out families
#: (:data:`~perfmodel.capstone.builders.HELD_OUT`) that nothing was tuned on.
FAMILIES = {**ZOO, **builders.HELD_OUT}


def zoo_model(name: str, batch: int = 1, *, weights: bool = True, seed: int = 0) -> Any:
    """One family of :data:`ZOO` (or of the held-out ones) at its CPU size.

    Parameters
    ----------
    name : str
        A key of :data:`ZOO` or of :data:`~perfmodel.capstone.builders.HELD_OUT`.
    batch : int
        Inputs per run, count.
    weights : bool
        Write seeded random weights (needed to run it); False writes their shapes only.
    seed : int
        Seed of the weights, at least 0.

    Returns
    -------
    onnx.ModelProto
        The model.
    """
    name = choice("name", name, tuple(FAMILIES))
    builder, arguments = FAMILIES[name]
    return builder(batch=count("batch", batch), weights=flag("weights", weights), seed=seed,
                   **arguments)  # fmt: skip


@dataclass(frozen=True, slots=True)
class ZooRow:
    """One model at one batch: predicted, then measured.

    Parameters
    ----------
    model : str
        The family.
    batch : int
        Inputs per run, count.
    predicted_s : float
        The kernel rates' prediction of one run, s.
    measured_s : float
        The median of the repeats' median run, s.
    spread : float
        The repeats' runs' interquartile range over their median, fraction.
    others : float
        Share of the CPUs other programs used while it ran, fraction.
    by_kind : dict of str to float
        The prediction split into overhead and each kind's work, s.
    worst : float
        The repeat whose median was furthest from the prediction, as measured over
        predicted, dimensionless.
    drift : float
        The machine's speed just before each repeat, against when the rates were measured
        (:func:`~perfmodel.capstone.calibrate.drift`: 1.3 is 30% slower), their median,
        dimensionless.
    """

    model: str
    batch: int
    predicted_s: float
    measured_s: float
    spread: float
    others: float
    by_kind: dict[str, float]
    worst: float
    drift: float = 1.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "batch", count("batch", self.batch))
        positive("predicted_s", self.predicted_s)
        positive("measured_s", self.measured_s)

    @property
    def ratio(self) -> float:
        """Measured over predicted, dimensionless: 1.2 means it ran 20% slower than said."""
        return self.measured_s / self.predicted_s

    @property
    def busy(self) -> bool:
        """True when other programs used more than a quarter of the CPUs while it ran."""
        from perfmodel.measure.timing import BUSY_OTHERS

        return self.others > BUSY_OTHERS

    @property
    def unsure(self) -> bool:
        """True when the machine was busy, ran more than a quarter slower or faster than
        when the rates were measured, or the runs spread more than half their median: then
        the gap says more about the machine than about the model."""
        from perfmodel.capstone.kernels import NOISY_SPREAD

        return self.busy or not 0.8 <= self.drift <= 1.25 or self.spread > NOISY_SPREAD


def run_zoo(
    rates: KernelRates,
    *,
    batches: Sequence[int] = (1, 8),
    names: Iterable[str] | None = None,
    runs: int = 10,
    repeats: int = 1,
    progress: bool = True,
    optimization: str = "none",
) -> list[ZooRow]:
    """Predict each zoo model with ``rates``, then time it on onnxruntime.

    Parameters
    ----------
    rates : perfmodel.capstone.kernels.KernelRates
        This machine's kernel rates.
    batches : sequence of int
        The batch sizes to run each model at, count.
    names : iterable of str, optional
        Which families (default: all of :data:`ZOO`; the held-out ones by name).
    runs : int
        Timed runs per repeat, after two untimed ones, count.
    repeats : int
        Sessions per model and batch, each timed ``runs`` times, count, in rounds that take
        every model once; the row keeps the median of their medians and the worst one.
    progress : bool
        Show a progress bar over the sessions.
    optimization : {"none", "basic", "all"}
        onnxruntime's graph optimisation level, the same for the prediction (the graph it
        runs, :func:`~perfmodel.capstone.import_onnx`) and the timed sessions.

    Returns
    -------
    list of ZooRow
        One row per model and batch, in :data:`ZOO` order.
    """
    from perfmodel.capstone.calibrate import drift
    from perfmodel.capstone.engine import wall_times
    from perfmodel.measure.load import OthersWatch

    if not isinstance(rates, KernelRates):
        raise TypeError(f"`rates` must be KernelRates (got {type(rates).__name__}).")
    for argument, given in (("names", names), ("batches", batches)):
        if isinstance(given, (str, int)) or (given is not None and not hasattr(given, "__iter__")):
            raise TypeError(
                f"`{argument}` must be a sequence (got {type(given).__name__} {given!r}): "
                f"wrap one value in a list."
            )
    chosen = list(ZOO) if names is None else [choice("names", n, tuple(FAMILIES)) for n in names]
    batches = [count("batches", b) for b in batches]
    if not chosen or not batches:
        raise ValueError(f"`names` and `batches` must each hold one value at least "
                         f"(got {chosen} and {batches}).")  # fmt: skip
    runs, repeats = count("runs", runs), count("repeats", repeats)
    level = choice("optimization", optimization, ("none", "basic", "all"))
    work = [(name, batch) for name in chosen for batch in batches]
    models = [zoo_model(name, batch) for name, batch in work]
    imported = [import_onnx(model, optimization=level) for model in models]
    # Round-robin: each round times every model once, so a slow spell of the machine (a
    # shared VM's run to run drift lasts seconds) lands on one repeat of several models, and
    # each row's median of repeats sets it aside, rather than on every repeat of one model.
    taken: list[list[Any]] = [[] for _ in work]
    speeds: list[list[float]] = [[] for _ in work]
    loop: Iterable[tuple[int, int]] = [(r, i) for r in range(repeats) for i in range(len(work))]
    if flag("progress", progress):
        from tqdm.auto import tqdm

        loop = tqdm(loop, desc="zoo", unit="session")
    for _, i in loop:
        speeds[i].append(drift(rates))
        with OthersWatch() as watch:
            times = wall_times(models[i], runs=runs, warmup=2, optimization=level)
        taken[i].append((times, watch.others if watch.others is not None else times.others))
    rows = []
    for i, (name, batch) in enumerate(work):
        predicted = rates.predict(imported[i])
        medians = [t.median_s for t, _ in taken[i]]
        samples = sorted(s for t, _ in taken[i] for s in t.samples_s)
        q = statistics.quantiles(samples, n=4) if len(samples) > 1 else [samples[0]] * 3
        loads = [load for _, load in taken[i] if load is not None]
        rows.append(
            ZooRow(
                model=name,
                batch=batch,
                predicted_s=predicted,
                measured_s=statistics.median(medians),
                spread=(q[2] - q[0]) / statistics.median(samples),
                others=statistics.fmean(loads) if loads else 0.0,
                by_kind=rates.by_kind(imported[i]),
                worst=max((m / predicted for m in medians), key=lambda r: abs(r - 1)),
                drift=statistics.median(speeds[i]),
            )
        )
    return rows


def zoo_report(
    rows: Sequence[ZooRow],
    rates: KernelRates,
    engine: EngineModel,
    models: dict[tuple[str, int], ImportedModel],
) -> str:
    """Lecture 12's table of the zoo: each row predicted on the curves and on lecture 06's
    roofline, measured, and each prediction's ratio; then what the steady rows say.

    Parameters
    ----------
    rows : sequence of ZooRow
        From :func:`run_zoo`.
    rates : KernelRates
        The curves the rows were predicted with: when untrusted, no summary line is drawn.
    engine : perfmodel.capstone.predict.EngineModel
        Lecture 06's roofline, from :func:`~perfmodel.capstone.predict.calibrate_engine`.
    models : dict of (str, int) to ImportedModel
        Each row's model and batch, imported (as exported): what the roofline prices.

    Returns
    -------
    str
        The table, a line a row (``unsure`` after a row that is), then the summary lines:
        the curves' median miss over the steady rows and how many ran slower than said, the
        three furthest off, those under 0.80, the roofline's median miss and how often the
        curves come closer, and how much of the roofline's predictions its overhead is.

    Raises
    ------
    TypeError
        If a row is not a :class:`ZooRow`, or ``models`` is not a dict.
    ValueError
        If ``models`` lacks a row's model and batch.
    """
    rows = list(rows)
    if not all(isinstance(row, ZooRow) for row in rows):
        raise TypeError("`rows` must be ZooRows from run_zoo.")
    if not isinstance(models, dict):
        raise TypeError(f"`models` must be a dict by (model, batch) (got {type(models).__name__}).")
    missing = [(row.model, row.batch) for row in rows if (row.model, row.batch) not in models]
    if missing:
        raise ValueError(f"`models` must hold every row's model and batch (missing: {missing}).")
    roofline = {
        (row.model, row.batch): engine.predict(models[row.model, row.batch]) for row in rows
    }
    lines = [
        f"{'':22s} {'predicted by':^21s} {'':10s} {'measured over':^17s}".rstrip(),
        f"{'model':16s} {'batch':>5s} {'curves':>10s} {'roofline':>10s} {'measured':>10s}"
        f" {'curves':>8s} {'roofline':>8s}",
    ]
    for row in rows:
        line = roofline[row.model, row.batch]
        lines.append(
            f"{row.model:16s} {row.batch:5d} {row.predicted_s * 1e3:7.2f} ms {line * 1e3:7.2f} ms "
            f"{row.measured_s * 1e3:7.2f} ms {row.ratio:8.2f} {row.measured_s / line:8.2f}"
            + ("  unsure" if row.unsure else "")
        )
    sure = [row for row in rows if not row.unsure]
    if not rates.trusted:
        lines.append(
            "the calibration was untrusted (its warning is above): no conclusion from this table"
        )
    elif sure:
        curves = [row.ratio for row in sure]
        ruled = [row.measured_s / roofline[row.model, row.batch] for row in sure]
        lines.append(
            f"this run, {len(sure)} steady rows: the curves miss by a median of "
            f"{statistics.median(abs(r - 1) for r in curves):.0%}, and the measured time is "
            f"above 1.00 times their prediction in {sum(round(r, 2) > 1 for r in curves)} of them"
        )
        worst = sorted(sure, key=lambda row: -abs(row.ratio - 1))[:3]
        lines.append(
            "furthest off the curves: "
            + ", ".join(f"{row.model} at batch {row.batch} ({row.ratio:.2f})" for row in worst)
        )
        fast = [row for row in sure if round(row.ratio, 2) < 0.8]  # as printed
        lines.append(
            "ran in under 0.80 of the curves' time: "
            + (", ".join(f"{row.model} at batch {row.batch} ({row.ratio:.2f}), "
                         f"{_largest_share(row)}" for row in fast) or "none")
        )  # fmt: skip
        if engine.unsure:
            lines.append(
                "lecture 06's calibration was disturbed: its column is no yardstick on this run"
            )
        else:
            closer = sum(abs(c - 1) < abs(r - 1) for c, r in zip(curves, ruled, strict=True))
            lines.append(
                f"lecture 06's roofline misses by a median of "
                f"{statistics.median(abs(r - 1) for r in ruled):.0%}, above 1.00 in "
                f"{sum(round(r, 2) > 1 for r in ruled)}; the curves come closer in {closer} of "
                f"{len(sure)} rows"
            )
            padding = [engine.overhead_s * len(models[k].nodes) / roofline[k] for k in roofline]
            lines.append(
                f"the roofline's {engine.overhead_s * 1e6:.1f} us a node (profiler on) is "
                f"{min(padding):.0%} to {max(padding):.0%} of its predictions"
            )
    if len(sure) < len(rows):
        lines.append(
            f"unsure: {len(rows) - len(sure)} of {len(rows)} rows (the machine was busy, or ran "
            "at another speed than during the calibration); no conclusion from them"
        )
    return "\n".join(lines)


def _largest_share(row: ZooRow) -> str:
    """The kind with the largest share of a row's prediction, and that share."""
    kind = max((k for k in row.by_kind if k != "overhead"), key=row.by_kind.__getitem__)
    return f"{row.by_kind[kind] / row.predicted_s:.0%} of it {kind}"


@dataclass(frozen=True, slots=True)
class Fusion:
    """One node of onnxruntime's optimised graph that stands for several exported ones.

    Parameters
    ----------
    name : str
        The optimised node's name.
    op_type : str
        Its operator (``"FusedGemm"``, ``"Conv"`` in the blocked layout...).
    origin : tuple of str
        The exported nodes it stands for, in the export's order.
    origin_ops : tuple of str
        Their operators, in the same order.
    saved_s : float
        The exported nodes' predicted time on rates of their level, less the fused node's on
        rates of its own, s (negative when the fusion costs time).
    """

    name: str
    op_type: str
    origin: tuple[str, ...]
    origin_ops: tuple[str, ...]
    saved_s: float


def fusions(model: Any, plain: KernelRates, fused: KernelRates) -> list[Fusion]:
    """Every fused node of ``model``'s optimised graph, the one that saves most first.

    Parameters
    ----------
    model : onnx.ModelProto
        The exported model.
    plain : KernelRates
        Rates measured with the optimisations off (``optimization="none"``).
    fused : KernelRates
        Rates measured at the optimised graph's level; the model is imported at it.

    Returns
    -------
    list of Fusion
        One per optimised node standing for two or more exported nodes, by saving, largest
        first.
    """
    for argument, rates in (("plain", plain), ("fused", fused)):
        if not isinstance(rates, KernelRates):
            raise TypeError(f"`{argument}` must be KernelRates (got {type(rates).__name__}).")
    exported = import_onnx(model, optimization=plain.optimization)
    optimised = import_onnx(model, optimization=fused.optimization)
    alone = {node.name: node for node in exported.nodes}
    found = [
        Fusion(
            name=node.name,
            op_type=node.op_type,
            origin=node.origin,
            origin_ops=tuple(alone[o].op_type for o in node.origin),
            saved_s=math.fsum(plain.node_time(alone[o]) for o in node.origin)
            - fused.node_time(node),
        )
        for node in optimised.nodes
        if len(node.origin) > 1
    ]
    return sorted(found, key=lambda f: -f.saved_s)
