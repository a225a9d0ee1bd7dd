"""Predictions beside published measurements: ResNet-50 on NVIDIA GPUs.

Every row is from NVIDIA's DeepLearningExamples, *ResNet50 v1.5 for PyTorch*, README,
section Performance (results obtained in the pytorch-21.03 NGC container):
https://github.com/NVIDIA/DeepLearningExamples/tree/master/PyTorch/Classification/ConvNets/resnet50v1.5

The model is :func:`perfmodel.capstone.builders.resnet` at its defaults (ResNet-50 v1.5,
224x224 images). Inference rows are the batch-256 lines of the latency tables; training
rows are the throughput tables, whose per-GPU batch the README's ``-b`` option sets to
256 by default (an assumption here: the benchmark scripts' own batch is not printed).

>>> [run.name for run in PUBLISHED][:2]
['V100 inference, FP32', 'V100 inference, mixed precision']
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from perfmodel.capstone.builders import resnet
from perfmodel.capstone.devices import predict_on
from perfmodel.capstone.onnx_import import ImportedModel, import_onnx
from perfmodel.capstone.scale import data_parallel

__all__ = ["PUBLISHED", "PublishedRun", "Prediction", "predict_published"]

SOURCE = (
    "NVIDIA DeepLearningExamples, ResNet50 v1.5 for PyTorch, README, Performance "
    "(pytorch-21.03 NGC container): https://github.com/NVIDIA/DeepLearningExamples/tree/"
    "master/PyTorch/Classification/ConvNets/resnet50v1.5"
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
        Images per GPU per step, count.
    images_per_s : float
        The published throughput, all GPUs together, images per s.
    source : str
        Where the number was published.
    """

    name: str
    device: str
    dtype: str
    training: bool
    gpus: int
    batch: int
    images_per_s: float
    source: str = SOURCE


#: The catalogue's V100 SXM2 is the 32 GB card; the README's DGX-1 has 16 GB V100s with the
#: same peaks and bandwidth. Mixed precision runs the matmuls in fp16 on the Tensor Cores.
PUBLISHED = (
    PublishedRun("V100 inference, FP32", "V100 SXM2", "fp32", False, 1, 256, 1261),
    PublishedRun("V100 inference, mixed precision", "V100 SXM2", "fp16", False, 1, 256, 3382),
    PublishedRun("T4 inference, FP32", "T4", "fp32", False, 1, 256, 415),
    PublishedRun("T4 inference, mixed precision", "T4", "fp16", False, 1, 256, 1198),
    PublishedRun("A100 80GB training, TF32, 1 GPU", "A100 SXM4 80GB", "tf32", True, 1, 256, 938),
    PublishedRun("A100 80GB training, TF32, 8 GPUs", "A100 SXM4 80GB", "tf32", True, 8, 256, 7248),
    PublishedRun("A100 80GB training, mixed, 1 GPU", "A100 SXM4 80GB", "fp16", True, 1, 256, 2470),
    PublishedRun(
        "A100 80GB training, mixed, 8 GPUs", "A100 SXM4 80GB", "fp16", True, 8, 256, 16621
    ),
)


@dataclass(frozen=True, slots=True)
class Prediction:
    """A published run beside the roofline's prediction of it.

    Parameters
    ----------
    run : PublishedRun
        The published measurement.
    predicted_images_per_s : float
        The roofline's throughput for it, all GPUs together, images per s.
    compute_share : float
        The share of one GPU's roofline time under the compute roof, fraction.
    bottleneck : str
        The op class with the most time on one GPU, and its roof: ``"conv (compute)"``.
    """

    run: PublishedRun
    predicted_images_per_s: float
    compute_share: float
    bottleneck: str

    @property
    def ratio(self) -> float:
        """Predicted over published, dimensionless: how optimistic the roofline is."""
        return self.predicted_images_per_s / self.run.images_per_s


@lru_cache(maxsize=4)
def _resnet50(batch: int) -> ImportedModel:
    return import_onnx(resnet(batch=batch, weights=False))


def predict_published(ceiling: str | float = "nameplate") -> list[Prediction]:
    """Each of :data:`PUBLISHED`, predicted from the catalogue's roofs.

    Inference is :func:`~perfmodel.capstone.devices.predict_on` at the run's batch; training
    is :func:`~perfmodel.capstone.scale.data_parallel`, on 8 GPUs inside one DGX node (a
    ring all-reduce over NVLink 3, overlapped with the backward pass).

    Parameters
    ----------
    ceiling : {"nameplate", "measured"} or float
        The datasheets' roofs, the best published measurements, or a fraction of the
        datasheets' such as ``0.7`` (see :func:`perfmodel.roofline.ceilings`), fraction.

    Returns
    -------
    list of Prediction
        One per run of :data:`PUBLISHED`, in its order.
    """
    rows = []
    for run in PUBLISHED:
        model = _resnet50(run.batch)
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
        rows.append(Prediction(run, rate, one.compute_share, one.bottleneck))
    return rows
