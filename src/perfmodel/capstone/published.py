"""Predictions beside published measurements, on catalogue GPUs.

Two tables, each row cited (title, publisher, date, URL) and saying exactly what ran:

* :data:`PUBLISHED`: ResNet-50 in PyTorch, from NVIDIA's DeepLearningExamples: inference
  at batch 256 on a V100 and a T4, training on one and eight A100s (lecture 12's table).
* :data:`PUBLISHED_INFERENCE`: inference beyond that, across the zoo: BERT-large and
  BERT-base (PyTorch, and TensorRT's BERT demo), EfficientNet-B0 (PyTorch), and ResNet-50
  and BERT-large in NVIDIA's MLPerf Inference v3.1 closed-division submission (TensorRT,
  INT8), on V100, A100, H100 and L4.

Each run names its model in :data:`MODELS` (a builder and its arguments) and is predicted
node by node on the catalogue's roofs, with no fitted factor. :attr:`Prediction.ratio` is
predicted over published: above 1 the roofline was optimistic. Wherever the two differ by
more than a quarter either way (:attr:`Prediction.miss` above :data:`MISS`), the run
carries a ``why`` that says, in the model's terms, what the per-node roofline leaves out.

>>> [run.name for run in PUBLISHED][:2]
['V100 inference, FP32', 'V100 inference, mixed precision']
>>> sorted({run.model for run in PUBLISHED_INFERENCE})
['BERT-base', 'BERT-large', 'EfficientNet-B0', 'ResNet-50']
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from perfmodel.capstone.builders.bert import bert
from perfmodel.capstone.builders.efficientnet import efficientnet_b0
from perfmodel.capstone.builders.resnet import resnet
from perfmodel.capstone.devices import predict_on
from perfmodel.capstone.onnx_import import ImportedModel, import_onnx
from perfmodel.capstone.scale import data_parallel

__all__ = [
    "MISS",
    "MODELS",
    "PUBLISHED",
    "PUBLISHED_INFERENCE",
    "Prediction",
    "PublishedRun",
    "Source",
    "predict_published",
]

#: How far apart a prediction and its measurement may be, either way, before the run must
#: say why: a quarter (predicted over published above 1.25 or below 1/1.25), fraction.
MISS = 0.25

#: The op classes a fusing engine folds into a neighbouring matmul or convolution (a bias
#: add, GELU or ReLU in its epilogue, a batch norm into its weights, a residual add into a
#: layer norm), so their bytes never go to memory.
FUSIBLE = ("elementwise", "normalization")

#: Each model a run may name: its builder and the arguments that make it. BERT's sequence
#: length and every model's batch come from the run.
MODELS: dict[str, tuple[Callable[..., Any], dict[str, int]]] = {
    "ResNet-50": (resnet, {"image": 224}),  # ResNet-50 v1.5
    "EfficientNet-B0": (efficientnet_b0, {"image": 224}),
    "BERT-base": (bert, {"width": 768, "layers": 12, "heads": 12, "ffn": 3072}),
    "BERT-large": (bert, {"width": 1024, "layers": 24, "heads": 16, "ffn": 4096}),
}


@dataclass(frozen=True, slots=True)
class Source:
    """Where a number was published.

    Parameters
    ----------
    title : str
        The document's title and the section the number is in.
    publisher : str
        Who published it.
    date : str
        When, as ``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD`` (as precisely as the source says).
    url : str
        Where to read it (a fixed revision where the document changes).
    """

    title: str
    publisher: str
    date: str
    url: str


DLE_RESNET50 = Source(
    "ResNet50 v1.5 for PyTorch, README, section Performance (pytorch-21.03 NGC container)",
    "NVIDIA DeepLearningExamples",
    "2021",
    "https://github.com/NVIDIA/DeepLearningExamples/tree/master/PyTorch/Classification/"
    "ConvNets/resnet50v1.5",
)
DLE_EFFICIENTNET = Source(
    "EfficientNet For PyTorch, README, section Inference performance results (PyTorch 21.03 "
    "NGC container)",
    "NVIDIA DeepLearningExamples",
    "2021",
    "https://github.com/NVIDIA/DeepLearningExamples/blob/48dc9adacd401a3f414400bee061dc9e0fc86b3f"
    "/PyTorch/Classification/ConvNets/efficientnet/README.md",
)
DLE_BERT = Source(
    "BERT For PyTorch, README, section Inference performance results: fine-tuning inference "
    "on NVIDIA DGX-1 with 16G (pytorch:19.07-py3 NGC container)",
    "NVIDIA DeepLearningExamples",
    "2020-03",
    "https://github.com/NVIDIA/DeepLearningExamples/blob/23a6382cbe8f77c22b0a7b7d263191ee6b947dfa"
    "/PyTorch/LanguageModeling/BERT/README.md",
)
TRT_BERT = Source(
    "BERT Inference Using TensorRT, README, section Inference performance: NVIDIA A100 (40GB) "
    "(TensorRT 8.5.1)",
    "NVIDIA TensorRT (demo/BERT)",
    "2022",
    "https://github.com/NVIDIA/TensorRT/blob/768d994b7305b69eb5db2397337ae96e36586b41/demo/"
    "BERT/README.md",
)
MLPERF_31 = Source(
    "MLPerf Inference v3.1, datacenter, closed division, NVIDIA's results "
    "(mlperf_log_summary.txt of each run)",
    "MLCommons",
    "2023-09-11",
    "https://github.com/mlcommons/inference_results_v3.1/tree/"
    "eaf622a25c00f2b4b1d2c4f5b4f430570429d24a/closed/NVIDIA/results",
)


@dataclass(frozen=True, slots=True)
class PublishedRun:
    """A published throughput: what ran, where, in which precision, and how fast.

    Parameters
    ----------
    name : str
        A short description, ``"V100 inference, FP32"``.
    device : str
        The catalogue name of the GPU.
    dtype : str
        The dtype it is priced in (mixed precision as ``"fp16"``).
    training : bool
        A training step rather than inference.
    gpus : int
        GPUs that ran it, count.
    batch : int
        Samples (images or sequences) per GPU per step, count; where the source does not
        say, the batch it is priced at, and ``setup`` says so.
    samples_per_s : float
        The published throughput, all GPUs together, samples (images or sequences) per s.
    source : Source
        Where the number was published.
    model : str
        A key of :data:`MODELS`: the builder and its arguments.
    sequence : int or None
        Tokens per sequence for a language model, count; None for an image model (224 x
        224 images).
    setup : str
        What ran, as the source states it: framework or container, scenario, the GPU's
        memory size where the catalogue's differs.
    engine : {"PyTorch", "TensorRT"}
        What ran the model: eager PyTorch, one kernel per node (or close), or TensorRT,
        which fuses nodes.
    why : str
        What the roofline leaves out, wherever the prediction at the datasheet's roofs
        misses by more than :data:`MISS`; empty where it does not.
    """

    name: str
    device: str
    dtype: str
    training: bool
    gpus: int
    batch: int
    samples_per_s: float
    source: Source = DLE_RESNET50
    model: str = "ResNet-50"
    sequence: int | None = None
    setup: str = "PyTorch, pytorch-21.03 NGC container"
    engine: str = "PyTorch"
    why: str = ""


_EAGER_MEMORY = (
    "Most of the predicted time is memory-bound work (batch norms, ReLUs, residual adds) "
    "priced at full bandwidth; eager PyTorch runs each as its own kernel, which reaches a "
    "fraction of it, and the fp16 Tensor Core peak is harder to reach than the FP32 units'."
)
_POWER = (
    "The datasheet's peaks assume the T4's boost clock; a 70 W card under full load runs "
    "below it, and no power limit is on a roofline."
)
_STEP = (
    "A training step is priced as three forwards and nothing else; the real step also "
    "updates 25 million weights, computes batch-norm statistics and waits for the input "
    "pipeline to decode JPEGs."
)
_SCALE = (
    " Scaling is predicted perfect (the all-reduce hides behind the backward pass); what a "
    "faster step exposes is the same data loading and synchronisation, a larger share of it."
)
_FUSED = (
    "TensorRT fuses what the roofline prices node by node: bias adds and GELU run in the "
    "matmul's epilogue, the residual add with the layer norm, attention in one kernel, so "
    "the elementwise and normalization nodes, about half of the predicted time, never write "
    "their outputs to memory. The published run beats the per-node sum, which is a ceiling "
    "only for an engine that runs one kernel per node."
)
_FUSED_CONV = (
    "TensorRT folds each batch norm into its convolution's weights and runs the ReLUs and "
    "residual adds in the convolutions' epilogues (NVIDIA fuses all res2 layers into one "
    "kernel), so the normalization and elementwise nodes, most of the predicted time, never "
    "touch memory. The published run beats the per-node sum, which is a ceiling only for "
    "an engine that runs one kernel per node."
)
_PADDING = (
    " The harness also drops each sequence's padding and packs sequences into a batch "
    "(NVIDIA's 'variable sequence lengths'), while this prediction prices every sample at "
    "the full 384 tokens."
)
_MLPERF_BATCH = (
    "Offline scenario: the harness chooses its batch, which the results do not state; "
    "priced at batch 256."
)

#: ResNet-50 v1.5 in PyTorch, from NVIDIA's DeepLearningExamples. Inference rows are the
#: batch-256 lines of the latency tables; training rows are the throughput tables, whose
#: per-GPU batch the README's ``-b`` option sets to 256 by default (an assumption here: the
#: benchmark scripts' own batch is not printed). The catalogue's V100 SXM2 is the 32 GB
#: card; the README's DGX-1 has 16 GB V100s with the same peaks and bandwidth. Mixed
#: precision runs the matmuls in fp16 on the Tensor Cores.
PUBLISHED = (
    PublishedRun("V100 inference, FP32", "V100 SXM2", "fp32", False, 1, 256, 1261),
    PublishedRun("V100 inference, mixed precision", "V100 SXM2", "fp16", False, 1, 256, 3382,
                 why=_EAGER_MEMORY),
    PublishedRun("T4 inference, FP32", "T4", "fp32", False, 1, 256, 415, why=_POWER),
    PublishedRun("T4 inference, mixed precision", "T4", "fp16", False, 1, 256, 1198,
                 why=_POWER + " " + _EAGER_MEMORY),
    PublishedRun("A100 80GB training, TF32, 1 GPU", "A100 SXM4 80GB", "tf32", True, 1, 256, 938,
                 why=_STEP),
    PublishedRun("A100 80GB training, TF32, 8 GPUs", "A100 SXM4 80GB", "tf32", True, 8, 256,
                 7248, why=_STEP + _SCALE),
    PublishedRun("A100 80GB training, mixed, 1 GPU", "A100 SXM4 80GB", "fp16", True, 1, 256,
                 2470, why=_STEP),
    PublishedRun("A100 80GB training, mixed, 8 GPUs", "A100 SXM4 80GB", "fp16", True, 8, 256,
                 16621, why=_STEP + _SCALE),
)  # fmt: skip

#: Inference across the zoo. TensorRT's rows are batch over the table's average latency
#: (the source gives latencies; its timings leave out the copies to and from the GPU).
#: MLPerf's rows are the Offline scenario's samples per second on one GPU, in INT8
#: (NVIDIA's README for each benchmark: "we run the computations in INT8 precision").
PUBLISHED_INFERENCE = (
    PublishedRun(
        "BERT-large, 384 tokens, V100, FP32, batch 4", "V100 SXM2", "fp32", False, 1, 4, 37.64,
        DLE_BERT, "BERT-large", 384,
        "PyTorch, pytorch:19.07-py3 NGC container; SQuAD v1.1 fine-tuned model, run_squad.sh; "
        "DGX-1 with V100 16GB (same peaks and bandwidth as the catalogue's 32 GB card)",
        why="At 4 x 384 tokens the matmuls, most of the predicted time, are priced at the "
        "FP32 peak, which cuBLAS approaches but does not reach, and the GELU, bias adds, "
        "softmax and layer norms run as separate eager kernels below full bandwidth.",
    ),
    PublishedRun(
        "BERT-large, 384 tokens, V100, mixed precision, batch 4",
        "V100 SXM2", "fp16", False, 1, 4, 119.76,
        DLE_BERT, "BERT-large", 384,
        "PyTorch with APEX AMP, pytorch:19.07-py3 NGC container; SQuAD v1.1 fine-tuned model, "
        "run_squad.sh; DGX-1 with V100 16GB",
        why="On the Tensor Cores the matmuls shrink eightfold and the memory-bound "
        "elementwise work (GELU's erf chain, bias and residual adds, the attention mask) "
        "becomes the largest class; eager PyTorch runs each of those nodes as its own kernel "
        "below full bandwidth, and a batch of 4 sequences keeps the matmuls small for the "
        "Tensor Cores' peak.",
    ),
    PublishedRun(
        "BERT-large, 384 tokens, A100 40GB, TensorRT FP16, batch 128",
        "A100 SXM4 40GB", "fp16", False, 1, 128,
        128 / 0.16267, TRT_BERT, "BERT-large", 384,
        "TensorRT 8.5.1, CUDA 11.6, scripts/inference_benchmark.sh; 128 sequences over the "
        "average latency 162.67 ms; NVIDIA A100 (40G), form factor not stated",
        engine="TensorRT",
        why=_FUSED,
    ),
    PublishedRun(
        "BERT-large, 384 tokens, A100 40GB, TensorRT INT8, batch 128",
        "A100 SXM4 40GB", "int8", False, 1, 128,
        128 / 0.08904, TRT_BERT, "BERT-large", 384,
        "TensorRT 8.5.1 INT8 with FP16 where INT8 is not supported; 128 sequences over the "
        "average latency 89.04 ms; NVIDIA A100 (40G)",
        engine="TensorRT",
        why=_FUSED,
    ),
    PublishedRun(
        "BERT-base, 128 tokens, A100 40GB, TensorRT FP16, batch 128",
        "A100 SXM4 40GB", "fp16", False, 1, 128,
        128 / 0.01591, TRT_BERT, "BERT-base", 128,
        "TensorRT 8.5.1, FP16; 128 sequences over the average latency 15.91 ms; NVIDIA A100 "
        "(40G)",
        engine="TensorRT",
        why=_FUSED,
    ),
    PublishedRun(
        "BERT-base, 384 tokens, A100 40GB, TensorRT INT8, batch 128",
        "A100 SXM4 40GB", "int8", False, 1, 128,
        128 / 0.02953, TRT_BERT, "BERT-base", 384,
        "TensorRT 8.5.1, INT8 with FP16 where INT8 is not supported; 128 sequences over the "
        "average latency 29.53 ms; NVIDIA A100 (40G)",
        engine="TensorRT",
        why=_FUSED,
    ),
    PublishedRun(
        "BERT-base, 128 tokens, A100 40GB, TensorRT FP16, batch 1",
        "A100 SXM4 40GB", "fp16", False, 1, 1,
        1 / 0.00064, TRT_BERT, "BERT-base", 128,
        "TensorRT 8.5.1, FP16; one sequence over the average latency 0.64 ms; NVIDIA A100 (40G)",
        engine="TensorRT",
        why="At batch 1 every node is memory-bound and short: the roofline prices each at "
        "its bytes and nothing else, while every kernel also pays a launch and a wait of "
        "microseconds that a 0.64 ms inference of the whole model cannot hide. Fusion removes "
        "nodes, but not enough to make up for it.",
    ),
    PublishedRun(
        "EfficientNet-B0, A100, TF32, batch 256", "A100 SXM4 80GB", "tf32", False, 1, 256, 5154,
        DLE_EFFICIENTNET, "EfficientNet-B0", None,
        "PyTorch, PyTorch 21.03 NGC container, efficientnet/inference/FP32 script (TF32 on "
        "the A100); 1x A100 80GB",
        why="Almost every node is memory-bound (depthwise convolutions, SiLU, squeeze-and-"
        "excitation, batch norms), so the prediction scales with bandwidth: the A100 has 2.3 "
        "times the V100's, but the published throughput rose 1.7 times. The many small eager "
        "kernels (squeeze-and-excitation works on 1 x 1 maps) are too short to reach full "
        "bandwidth, the shorter the faster the memory, and their launch times, which no "
        "roofline holds, do not shrink.",
    ),
    PublishedRun(
        "EfficientNet-B0, A100, mixed precision, batch 256", "A100 SXM4 80GB", "fp16", False, 1,
        256, 10239, DLE_EFFICIENTNET, "EfficientNet-B0", None,
        "PyTorch with AMP, PyTorch 21.03 NGC container, efficientnet/inference/AMP script; "
        "1x A100 80GB",
        why="As in TF32: memory-bound almost throughout, and the many small eager kernels "
        "reach less of the A100's bandwidth than of the V100's (published A100 over V100: "
        "1.7 times; bandwidth: 2.3 times).",
    ),
    PublishedRun(
        "EfficientNet-B0, V100, FP32, batch 256", "V100 SXM2", "fp32", False, 1, 256, 2968,
        DLE_EFFICIENTNET, "EfficientNet-B0", None,
        "PyTorch, PyTorch 21.03 NGC container, efficientnet/inference/FP32 script; DGX-1 with "
        "V100 16GB",
    ),
    PublishedRun(
        "EfficientNet-B0, V100, mixed precision, batch 256", "V100 SXM2", "fp16", False, 1, 256,
        6176, DLE_EFFICIENTNET, "EfficientNet-B0", None,
        "PyTorch with AMP, PyTorch 21.03 NGC container, efficientnet/inference/AMP script; "
        "DGX-1 with V100 16GB",
    ),
    PublishedRun(
        "ResNet-50, H100, MLPerf Offline, INT8", "H100 SXM", "int8", False, 1, 256, 88526,
        MLPERF_31, "ResNet-50", None,
        "TensorRT, MLPerf harness (LWIS), system DGX-H100_H100-SXM-80GBx1_TRT; "
        + _MLPERF_BATCH,
        engine="TensorRT",
        why=_FUSED_CONV,
    ),
    PublishedRun(
        "ResNet-50, L4, MLPerf Offline, INT8", "L4", "int8", False, 1, 256, 12881.7, MLPERF_31,
        "ResNet-50", None,
        "TensorRT 9.0.0, CUDA 12.2, MLPerf harness (LWIS), system L4x1_TRT; " + _MLPERF_BATCH,
        engine="TensorRT",
        why=_FUSED_CONV,
    ),
    PublishedRun(
        "BERT-large, 384 tokens, H100, MLPerf Offline, INT8",
        "H100 SXM", "int8", False, 1, 256, 9102.26,
        MLPERF_31, "BERT-large", 384,
        "TensorRT, MLPerf harness, benchmark bert-99 (SQuAD v1.1, at most 384 tokens), system "
        "DGX-H100_H100-SXM-80GBx1_TRT; " + _MLPERF_BATCH,
        engine="TensorRT",
        why=_FUSED + _PADDING,
    ),
    PublishedRun(
        "BERT-large, 384 tokens, L4, MLPerf Offline, INT8",
        "L4", "int8", False, 1, 256, 1028.95, MLPERF_31,
        "BERT-large", 384,
        "TensorRT 9.0.0, CUDA 12.2, MLPerf harness, benchmark bert-99 (SQuAD v1.1, at most "
        "384 tokens), system L4x1_TRT; " + _MLPERF_BATCH,
        engine="TensorRT",
        why=_FUSED + _PADDING,
    ),
)  # fmt: skip


@dataclass(frozen=True, slots=True)
class Prediction:
    """A published run beside the roofline's prediction of it.

    Parameters
    ----------
    run : PublishedRun
        The published measurement.
    predicted_samples_per_s : float
        The roofline's throughput for it, all GPUs together, samples per s.
    compute_share : float
        The share of one GPU's roofline time under the compute roof, fraction.
    fusible_share : float
        The share of one GPU's roofline time in the op classes a fusing engine folds into
        their neighbours (:data:`FUSIBLE`: elementwise and normalization), fraction.
    bottleneck : str
        The op class with the most time on one GPU, and its roof: ``"conv (compute)"``.
    """

    run: PublishedRun
    predicted_samples_per_s: float
    compute_share: float
    fusible_share: float
    bottleneck: str

    @property
    def ratio(self) -> float:
        """Predicted over published, dimensionless: how optimistic the roofline is."""
        return self.predicted_samples_per_s / self.run.samples_per_s

    @property
    def miss(self) -> float:
        """How far apart the two are, either way: the larger over the smaller, less one,
        fraction (0.25 whether the prediction is 1.25 times or 0.8 times the published)."""
        return max(self.ratio, 1 / self.ratio) - 1

    @property
    def fused_ratio(self) -> float:
        """Predicted over published with the fusible classes' time taken out, dimensionless:
        the roofline of an engine that folds every elementwise and normalization node into
        its neighbour, so that only the matmuls, convolutions and the rest move bytes."""
        return self.ratio / (1 - self.fusible_share)


@lru_cache(maxsize=16)
def _model(name: str, batch: int, sequence: int | None) -> ImportedModel:
    builder, arguments = MODELS[name]
    length = {} if sequence is None else {"seq_len": sequence}
    return import_onnx(builder(batch=batch, weights=False, **arguments, **length))


def predict_published(
    runs: Sequence[PublishedRun] = PUBLISHED, *, ceiling: str | float = "nameplate"
) -> list[Prediction]:
    """Each of ``runs``, predicted from the catalogue's roofs.

    Inference is :func:`~perfmodel.capstone.devices.predict_on` at the run's batch (and
    sequence length); training is :func:`~perfmodel.capstone.scale.data_parallel`, on 8
    GPUs inside one DGX node (a ring all-reduce over NVLink 3, overlapped with the backward
    pass).

    Parameters
    ----------
    runs : sequence of PublishedRun
        The runs to predict: :data:`PUBLISHED` (ResNet-50, lecture 12's table) by default,
        or :data:`PUBLISHED_INFERENCE`.
    ceiling : {"nameplate", "measured"} or float
        The datasheets' roofs, the best published measurements, or a fraction of the
        datasheets' such as ``0.7`` (see :func:`perfmodel.roofline.ceilings`), fraction.

    Returns
    -------
    list of Prediction
        One per run, in the order of ``runs``.

    Examples
    --------
    >>> bert_large = predict_published(PUBLISHED_INFERENCE[:1])[0]
    >>> bert_large.run.sequence, round(bert_large.ratio, 2)
    (384, 1.27)
    """
    given: object = runs
    if isinstance(given, (str, bytes)) or not isinstance(given, Sequence):
        raise TypeError(f"`runs` must be a sequence of PublishedRun (got {type(given).__name__}).")
    if not runs:
        raise ValueError("`runs` must hold at least one PublishedRun (got an empty sequence).")
    for run in runs:
        if not isinstance(run, PublishedRun):
            raise TypeError(f"`runs` must hold PublishedRun only (got {type(run).__name__}).")
        if run.model not in MODELS:
            raise ValueError(
                f"`runs`: {run.name!r} names the model {run.model!r}; the models are "
                f"{', '.join(MODELS)}."
            )
    rows = []
    for run in runs:
        model = _model(run.model, run.batch, run.sequence)
        step = (
            data_parallel(
                model,
                run.device,
                devices=run.gpus,
                dtype=run.dtype,
                ceiling=ceiling,
                intra_link="NVLink 3",
            )
            if run.training
            else None
        )
        one = predict_on(model, run.device, dtype=run.dtype, ceiling=ceiling, training=run.training)
        rate = step.samples_per_s if step is not None else one.throughput(run.batch)
        times = one.by_class()
        fusible = sum(times.get(name, 0.0) for name in FUSIBLE) / one.time_s
        rows.append(Prediction(run, rate, one.compute_share, fusible, one.bottleneck))
    return rows
