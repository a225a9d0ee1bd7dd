"""From one device to many: data parallel, pipeline, memory, and Coates' design loop.

Following Coates (*Deep Learning (hopefully faster)*): know the single-node time first,
then choose a partition, estimate, and ask whether you are happy. Each step reuses a
lecture: the step on one device is the roofline of every node (:mod:`.devices`), data
parallel adds lecture 09's gradient all-reduce (ring inside a node, hierarchical across
nodes), pipeline parallel splits the execution order with lecture 10's partitioner.

Examples
--------
>>> from perfmodel.capstone import builders, import_onnx
>>> model = import_onnx(builders.resnet(batch=256, weights=False))
>>> one = data_parallel(model, "A100 SXM4 80GB", devices=1, dtype="tf32")
>>> eight = data_parallel(model, "A100 SXM4 80GB", devices=8, dtype="tf32")
>>> round(eight.samples_per_s / one.samples_per_s, 1)
8.0
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from perfmodel import hardware
from perfmodel._validate import count, flag, positive, text
from perfmodel.capstone.devices import TRAINING_FACTOR, node_costs, predict_on
from perfmodel.capstone.onnx_import import ImportedModel
from perfmodel.comms import allreduce_time, as_link, hierarchical_allreduce_time
from perfmodel.distributed.memory import PRECISIONS
from perfmodel.hardware import DeviceLike, LinkLike

__all__ = [
    "DataParallel",
    "DesignStep",
    "PipelinePlan",
    "data_parallel",
    "design",
    "memory_bytes",
    "pipeline_parallel",
]

#: Bytes per parameter trained with Adam in mixed precision: 16-bit weights and gradients,
#: an fp32 master copy and two fp32 moments (2 + 2 + 12), lecture 09's count.
TRAINING_BYTES_PER_PARAMETER = sum(PRECISIONS["mixed"]["adam"])


def memory_bytes(model: ImportedModel, *, dtype: str = "bf16", training: bool = False) -> float:
    """Bytes one device holds for ``model``.

    Inference: the weights in ``dtype`` and the two largest activations (one being read,
    one written). Training: 16 bytes per parameter (Adam, mixed precision) and every
    node's output, kept for the backward pass. Each node's outputs are scaled from the width
    its export stores them in to ``dtype``'s (an fp32 or an fp16 export holds the same bytes
    in bf16); integer outputs keep their width.

    Parameters
    ----------
    model : ImportedModel
        The model, priced node by node.
    dtype : str
        The dtype the weights and activations are held in, ``"bf16"``, ``"fp32"``, ...
    training : bool
        Count what a training step holds rather than a forward pass.

    Returns
    -------
    float
        Bytes one device needs, B.
    """
    if not isinstance(model, ImportedModel):
        raise TypeError(f"`model` must be an ImportedModel (got {type(model).__name__}).")
    outputs = _output_bytes(model, dtype)
    if flag("training", training):
        return TRAINING_BYTES_PER_PARAMETER * model.parameters + math.fsum(outputs)
    largest = sorted(outputs, reverse=True)[:2]
    return hardware.dtype_bytes(dtype) * model.parameters + math.fsum(largest)


@dataclass(frozen=True, slots=True)
class DataParallel:
    """One data-parallel training step, priced.

    Parameters
    ----------
    devices : int
        Devices in the data-parallel group, count.
    samples_per_device : int
        Samples each device processes per step (the model's batch), count.
    compute_s : float
        Forward and backward pass on one device, s.
    allreduce_s : float
        The gradient all-reduce, s; 0 for one device.
    exposed_s : float
        The part of the all-reduce not hidden under the backward pass, s.
    memory_bytes : float
        What each device holds for training (see :func:`memory_bytes`), B.
    capacity_bytes : float or None
        Each device's memory, B; None when the catalogue gives none.
    """

    devices: int
    samples_per_device: int
    compute_s: float
    allreduce_s: float
    exposed_s: float
    memory_bytes: float
    capacity_bytes: float | None

    @property
    def step_s(self) -> float:
        """The step: compute plus the exposed all-reduce, s."""
        return self.compute_s + self.exposed_s

    @property
    def samples_per_s(self) -> float:
        """Samples every device together processes per s."""
        return self.devices * self.samples_per_device / self.step_s

    @property
    def efficiency(self) -> float:
        """Compute over the step, fraction: 1 when the all-reduce hides under the backward."""
        return self.compute_s / self.step_s

    @property
    def fits(self) -> bool:
        """Whether a device holds what it needs (True when its capacity is unknown)."""
        return self.capacity_bytes is None or self.memory_bytes <= self.capacity_bytes

    @property
    def bottleneck(self) -> str:
        """What limits the step: memory, the network (exposed all-reduce over 10% of compute)
        or compute, with a short reason."""
        if not self.fits:
            return "memory: the model does not fit one device"
        if self.exposed_s > 0.1 * self.compute_s:
            return "network: the gradient all-reduce is not hidden"
        return "compute: the step on each device"


def data_parallel(
    model: ImportedModel,
    device: DeviceLike,
    *,
    devices: int,
    link: LinkLike = "InfiniBand NDR",
    gpus_per_node: int = 8,
    intra_link: LinkLike = "NVLink 3",
    dtype: str = "bf16",
    ceiling: str | float = "nameplate",
    overlap: bool = True,
) -> DataParallel:
    """Price a data-parallel training step of ``model`` (its batch on every device).

    Gradients (one per parameter, in ``dtype``) are all-reduced: a ring over
    ``intra_link`` when every device is in one node, else the hierarchical all-reduce over
    ``link`` between nodes. With ``overlap`` the all-reduce runs during the backward pass
    (two thirds of the step) and only what is left over adds to the step.

    Parameters
    ----------
    model : ImportedModel
        The model; its batch is each device's batch.
    device : str or hardware.Device
        A catalogue name or a device you built.
    devices : int
        Devices in the group, count; more than ``gpus_per_node`` must be a multiple of it.
    link : str or hardware.Link
        The network between nodes.
    gpus_per_node : int
        Devices per node, joined by ``intra_link``, count.
    intra_link : str or hardware.Link
        The link between the devices of a node.
    dtype : str
        The dtype of the compute and of the gradients.
    ceiling : {"nameplate", "measured"} or float
        Which roofs (see :func:`perfmodel.roofline.ceilings`); a number is a fraction of
        the datasheet's, fraction.
    overlap : bool
        Hide the all-reduce under the backward pass as far as it goes.

    Returns
    -------
    DataParallel
        The step's compute, all-reduce and memory, per device.

    Raises
    ------
    ValueError
        If ``devices`` spans several nodes but is not a multiple of ``gpus_per_node``.
    """
    devices, gpus_per_node = count("devices", devices), count("gpus_per_node", gpus_per_node)
    spec = hardware.get(device, argument="device")
    inter = as_link(link, argument="link")  # both checked now, whichever the step uses
    intra = as_link(intra_link, argument="intra_link")
    one = predict_on(model, spec, dtype=dtype, ceiling=ceiling, training=True)
    gradient_bytes = model.parameters * hardware.dtype_bytes(dtype)
    if devices == 1:
        reduce_s = 0.0
    elif devices <= gpus_per_node:
        reduce_s = allreduce_time(gradient_bytes, devices, intra)
    else:
        if devices % gpus_per_node:
            raise ValueError(
                f"`devices` ({devices}) must be a multiple of `gpus_per_node` ({gpus_per_node}) "
                f"when it spans several nodes."
            )
        reduce_s = hierarchical_allreduce_time(
            gradient_bytes, gpus_per_node, devices // gpus_per_node, intra, inter
        )
    backward = one.time_s * (TRAINING_FACTOR - 1) / TRAINING_FACTOR
    exposed = max(0.0, reduce_s - backward) if flag("overlap", overlap) else reduce_s
    return DataParallel(
        devices=devices,
        samples_per_device=model.batch,
        compute_s=one.time_s,
        allreduce_s=reduce_s,
        exposed_s=exposed,
        memory_bytes=memory_bytes(model, dtype=dtype, training=True),
        capacity_bytes=spec.memory_capacity,
    )


@dataclass(frozen=True, slots=True)
class PipelinePlan:
    """A model split into pipeline stages, and its time per batch.

    ``step_s`` is the pipelined batch (``(m + k - 1)`` slots of the slowest stage) plus the
    gradient all-reduce between ``replicas`` copies of the pipeline (``allreduce_s``; zero
    for one copy), which runs once the pipeline has drained.

    Parameters
    ----------
    stages : int
        Stages the partitioner used, count (``k``): at most the number asked for and at
        most the model's number of nodes.
    microbatches : int
        Micro-batches the batch is cut into, count (``m``).
    stage_s : tuple of float
        Each stage's work on the whole batch, without communication, s.
    bottleneck_s : float
        The costliest stage's work plus the tensors it receives and sends, on the whole
        batch, s.
    step_s : float
        The time per batch, s.
    stage_memory_bytes : tuple of float
        What each stage holds: its model states and one micro-batch's activations, B.
    capacity_bytes : float or None
        Each device's memory, B; None when the catalogue gives none.
    method : str
        The algorithm that found the split (see :func:`perfmodel.pipeline.split_order`).
    replicas : int
        Copies of the pipeline, data parallel, count.
    allreduce_s : float
        The slowest stage's gradient all-reduce between the replicas, s; 0 for one.
    stage_state_bytes : tuple of float
        Each stage's model states (weights, and in training gradients and Adam's states), B.
    """

    stages: int
    microbatches: int
    stage_s: tuple[float, ...]
    bottleneck_s: float
    step_s: float
    stage_memory_bytes: tuple[float, ...]
    capacity_bytes: float | None
    method: str
    replicas: int = 1
    allreduce_s: float = 0.0
    stage_state_bytes: tuple[float, ...] = ()

    @property
    def stage_activation_bytes(self) -> tuple[float, ...]:
        """What each stage holds beyond its model states: one micro-batch's activations, B.

        Raises
        ------
        ValueError
            If the plan was built without ``stage_state_bytes``, one per stage (as
            :func:`pipeline_parallel` gives them): what is not states cannot be told apart.
        """
        memory, states = self.stage_memory_bytes, self.stage_state_bytes
        if len(states) != len(memory):
            raise ValueError(
                f"`stage_activation_bytes` needs `stage_state_bytes`, one per stage "
                f"({len(memory)}), to take from `stage_memory_bytes` (got {len(states)})."
            )
        return tuple(total - held for total, held in zip(memory, states, strict=True))

    @property
    def bubble_fraction(self) -> float:
        """Idle share of a GPipe schedule, (k - 1) / (m + k - 1), fraction."""
        return (self.stages - 1) / (self.microbatches + self.stages - 1)

    @property
    def fits(self) -> bool:
        """Whether every stage's device holds it (True when the capacity is unknown)."""
        return self.capacity_bytes is None or max(self.stage_memory_bytes) <= self.capacity_bytes


def pipeline_parallel(
    model: ImportedModel,
    device: DeviceLike,
    *,
    stages: int,
    microbatches: int = 8,
    link: LinkLike = "NVLink 3",
    dtype: str = "bf16",
    ceiling: str | float = "nameplate",
    training: bool = True,
    replicas: int = 1,
    network: LinkLike = "InfiniBand NDR",
) -> PipelinePlan:
    """Split ``model``'s execution order into ``stages`` with lecture 10's partitioner.

    Each node's work is its roofline time on ``device``; sending its output to the next
    stage costs ``latency + bytes / bandwidth`` on ``link``. The batch is cut into
    ``microbatches``, each taking ``1 / microbatches`` of every stage's time, so a GPipe
    schedule takes ``(m + k - 1)`` slots of the slowest stage.

    A stage holds the model states of the weights its nodes read (16 bytes a parameter in
    training, the weights alone otherwise), each weight once however many of its nodes read
    it; a weight read in two stages, such as GPT-2's tied embedding, is held by both. It
    also holds one micro-batch's outputs of its nodes, in ``dtype`` (one micro-batch in
    flight per stage, lecture 09's assumption). With ``replicas`` copies of the pipeline
    (data parallel over pipelines, each copy's stages on other nodes), each stage's gradients
    are all-reduced between the copies over ``network`` after the pipeline drains; the
    slowest stage's all-reduce adds to the step.

    Parameters
    ----------
    model : ImportedModel
        The model; its batch is the pipeline's batch.
    device : str or hardware.Device
        The device every stage runs on: a catalogue name or a device you built.
    stages : int
        Stages to split into, count; fewer are used when the model has fewer nodes, or
        when fewer give the best split.
    microbatches : int
        Micro-batches the batch is cut into, count.
    link : str or hardware.Link
        The link between consecutive stages.
    dtype : str
        The dtype of the compute, the activations and the gradients.
    ceiling : {"nameplate", "measured"} or float
        Which roofs (see :func:`perfmodel.roofline.ceilings`); a number is a fraction of
        the datasheet's, fraction.
    training : bool
        Price a training step (three forwards, Adam's states) rather than a forward pass.
    replicas : int
        Copies of the pipeline, data parallel, count; their all-reduce only counts in
        training.
    network : str or hardware.Link
        The link the replicas' gradients are all-reduced over.

    Returns
    -------
    PipelinePlan
        The split, each stage's time and memory, and the time per batch.
    """
    from perfmodel.pipeline import Graph, split_order

    stages, microbatches = count("stages", stages), count("microbatches", microbatches)
    replicas = count("replicas", replicas)
    training = flag("training", training)
    spec = hardware.get(device, argument="device")
    wire = as_link(link, argument="link")
    between = as_link(network, argument="network")
    one = predict_on(model, spec, dtype=dtype, ceiling=ceiling, training=training)
    work = [step.time_s for step in one.estimates]
    outputs = _output_bytes(model, dtype)  # each node's outputs at dtype's width, B
    comm = [wire.time(retyped_bytes) for retyped_bytes in outputs]
    graph = Graph(work, comm, model.edges())
    split = split_order(graph, list(range(graph.n)), min(stages, graph.n))
    per_stage_s = tuple(math.fsum(work[i] for i in stage) for stage in split.stages)
    width = hardware.dtype_bytes(dtype)
    per_parameter = TRAINING_BYTES_PER_PARAMETER if training else width
    stage_weights = [_weights_read(model, stage) for stage in split.stages]
    stage_states = tuple(per_parameter * weights for weights in stage_weights)
    stage_memory = tuple(
        states + math.fsum(outputs[i] for i in stage) / microbatches
        for states, stage in zip(stage_states, split.stages, strict=True)
    )
    allreduce_s = 0.0
    if training and replicas > 1:
        allreduce_s = max(allreduce_time(w * width, replicas, between) for w in stage_weights)
    used = len(split.stages)
    return PipelinePlan(
        stages=used,
        microbatches=microbatches,
        stage_s=per_stage_s,
        bottleneck_s=split.bottleneck,
        step_s=(microbatches + used - 1) * split.bottleneck / microbatches + allreduce_s,
        stage_memory_bytes=stage_memory,
        capacity_bytes=spec.memory_capacity,
        method=split.method,
        replicas=replicas,
        allreduce_s=allreduce_s,
        stage_state_bytes=stage_states,
    )


def _weights_read(model: ImportedModel, stage: Sequence[int]) -> int:
    """Elements of the weights the nodes ``stage`` reads, each once however many read it."""
    read = {tensor for i in stage for tensor in model.nodes[i].inputs}
    return sum(n for name, n in model.initializer_elements.items() if name in read)


def _output_bytes(model: ImportedModel, dtype: str) -> list[float]:
    """Each node's output bytes scaled from the width its export stores to ``dtype``'s."""
    return [
        node.output_bytes * (cost.bytes / node.cost.bytes if node.cost.bytes else 1)
        for node, cost in zip(model.nodes, node_costs(model, dtype), strict=True)
    ]


@dataclass(frozen=True, slots=True)
class DesignStep:
    """One turn of the design loop: what was tried, what it gives, and the verdict.

    Parameters
    ----------
    action : str
        What was tried: ``"one device"``, ``"pipeline over 4 stages"``,
        ``"data parallel x8"``, ``"one replica"`` or ``"stop"``.
    devices : int
        Devices it uses, count.
    samples_per_s : float
        The training throughput it gives, samples per s; 0 for a pipeline of 64 stages
        that still does not fit.
    fits : bool
        Whether each device holds what it needs.
    verdict : str
        Whether to be happy, and why.
    """

    action: str
    devices: int
    samples_per_s: float
    fits: bool
    verdict: str


def design(
    model: ImportedModel,
    device: DeviceLike,
    *,
    target_samples_per_s: float,
    link: LinkLike = "InfiniBand NDR",
    intra_link: LinkLike = "NVLink 3",
    gpus_per_node: int = 8,
    max_devices: int = 4096,
    min_efficiency: float = 0.8,
    dtype: str = "bf16",
    ceiling: str | float = "nameplate",
) -> list[DesignStep]:
    """Coates' loop for a training throughput target.

    Single device first; if the model does not fit, the fewest pipeline stages (inside one
    node, over ``intra_link``) that make it fit; then scale out weakly, doubling the
    data-parallel replicas (whole devices, or copies of the pipeline on other nodes, their
    gradients all-reduced over ``link``), until the target is met, the efficiency falls
    below ``min_efficiency``, or ``max_devices`` is reached. When a doubling meets the
    target, the replica counts between it and the last one are searched for the fewest that
    also meet it, so the loop never buys twice the devices for a small shortfall. Each step
    says whether to be happy.

    The replica counts allowed: any for a pipeline; for whole devices, up to
    ``gpus_per_node`` and then whole nodes (lecture 09's hierarchical all-reduce).

    Parameters
    ----------
    model : ImportedModel
        The model; its batch is each replica's batch.
    device : str or hardware.Device
        A catalogue name or a device you built.
    target_samples_per_s : float
        The training throughput wanted, samples per s.
    link : str or hardware.Link
        The network between nodes.
    intra_link : str or hardware.Link
        The link inside a node, between devices and between pipeline stages.
    gpus_per_node : int
        Devices per node, count.
    max_devices : int
        The most devices the loop may use, count.
    min_efficiency : float
        Stop scaling out when a step's efficiency falls below this, fraction.
    dtype : str
        The dtype of the compute and of the gradients.
    ceiling : {"nameplate", "measured"} or float
        Which roofs (see :func:`perfmodel.roofline.ceilings`); a number is a fraction of
        the datasheet's, fraction.

    Returns
    -------
    list of DesignStep
        The turns of the loop in order; the last one's verdict says whether the target
        was met.
    """
    target = positive("target_samples_per_s", target_samples_per_s)
    max_devices = count("max_devices", max_devices)
    gpus_per_node = count("gpus_per_node", gpus_per_node)
    text("dtype", dtype)
    # resolved once: every step below prices the same device and links
    device = hardware.get(device, argument="device")
    link, intra_link = as_link(link, argument="link"), as_link(intra_link, argument="intra_link")
    steps: list[DesignStep] = []
    one = data_parallel(
        model, device, devices=1, dtype=dtype, ceiling=ceiling, link=link, intra_link=intra_link
    )
    stages, per_replica_s = 1, one.step_s
    steps.append(
        DesignStep(
            "one device",
            1,
            one.samples_per_s,
            one.fits,
            "fits" if one.fits else "does not fit: partition it",
        )
    )
    if not one.fits:
        for stages in range(2, 65):
            plan = pipeline_parallel(
                model, device, stages=stages, link=intra_link, dtype=dtype, ceiling=ceiling
            )
            if plan.fits:
                per_replica_s = plan.step_s
                steps.append(
                    DesignStep(
                        f"pipeline over {plan.stages} stages",
                        plan.stages,
                        model.batch / plan.step_s,
                        True,
                        f"fits; {plan.microbatches} micro-batches, bubble "
                        f"{plan.bubble_fraction:.0%}",
                    )
                )
                break
        else:
            steps.append(
                DesignStep("pipeline over 64 stages", 64, 0.0, False, "still does not fit")
            )
            return steps

    def scaled(replicas: int) -> tuple[float, float]:
        """Samples per second and efficiency of ``replicas`` data-parallel replicas."""
        if stages == 1:
            step = data_parallel(
                model, device, devices=replicas, link=link, intra_link=intra_link,
                gpus_per_node=min(gpus_per_node, replicas), dtype=dtype, ceiling=ceiling,
            )  # fmt: skip
            return step.samples_per_s, step.efficiency
        plan = pipeline_parallel(
            model, device, stages=stages, link=intra_link, dtype=dtype, ceiling=ceiling,
            replicas=replicas, network=link,
        )  # fmt: skip
        return replicas * model.batch / plan.step_s, per_replica_s / plan.step_s

    def allowed(replicas: int) -> bool:
        return stages > 1 or replicas <= gpus_per_node or replicas % gpus_per_node == 0

    rate = model.batch / per_replica_s
    if rate >= target:
        steps.append(DesignStep("one replica", stages, rate, True, "happy: target met"))
        return steps
    replicas = 1
    while True:
        if replicas * 2 * stages > max_devices:
            verdict = f"not happy: {max_devices} devices reached"
            steps.append(DesignStep("stop", replicas * stages, rate, True, verdict))
            return steps
        last, replicas = replicas, replicas * 2
        rate, efficiency = scaled(replicas)
        if rate >= target:
            fewest = next(r for r in range(last + 1, replicas + 1) if allowed(r)
                          and scaled(r)[0] >= target)  # fmt: skip
            verdict = "happy: target met"
            if fewest < replicas:
                verdict += f" with the fewest replicas (x{replicas} would use {replicas * stages})"
                rate = scaled(fewest)[0]
            steps.append(
                DesignStep(f"data parallel x{fewest}", fewest * stages, rate, True, verdict)
            )
            return steps
        verdict = f"short of {target:,.0f}/s, efficiency {efficiency:.0%}: " + (
            "stop, communication dominates" if efficiency < min_efficiency else "keep scaling"
        )
        steps.append(
            DesignStep(f"data parallel x{replicas}", replicas * stages, rate, True, verdict)
        )
        if efficiency < min_efficiency:
            return steps
