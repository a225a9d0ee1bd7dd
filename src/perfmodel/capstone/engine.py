"""Run an ONNX model on onnxruntime with its profiler on: a measured time for every node.

onnxruntime's profiler writes one event per node per run (``<node>_kernel_time``, in
microseconds) and one per run of the whole model. :func:`profile` runs a fixed number of
times (bounded by iterations, never by seconds), drops the warm-up runs, and keeps each
node's median.

Graph optimisations are off by default (``optimization="none"``): every ONNX node then
runs as its own kernel under its own name, so each prediction has a measurement to meet.
``optimization="all"`` lets onnxruntime fuse (MatMul with its bias Add, the erf GELU into
one kernel, layer norm) and change layouts, which is how it would be deployed: the
difference between the two end-to-end times is what fusion buys.

Examples
--------
>>> from perfmodel.capstone import builders
>>> run = profile(builders.mlp(batch=4, widths=(8, 16, 2)), runs=3, warmup=1)
>>> sorted(run.node_s) == ['fc0', 'fc0_bias', 'fc0_relu', 'fc1', 'fc1_bias']
True
"""

from __future__ import annotations

import json
import statistics
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from perfmodel._validate import choice, count

if TYPE_CHECKING:
    import onnx

__all__ = [
    "OPTIMIZATIONS",
    "EngineProfile",
    "engine_overhead",
    "profile",
    "random_inputs",
    "session",
    "wall_times",
]

#: onnxruntime's graph optimisation levels, by our name.
OPTIMIZATIONS = ("none", "basic", "all")


@dataclass(frozen=True, slots=True)
class EngineProfile:
    """What onnxruntime measured.

    Parameters
    ----------
    node_s : dict of str to float
        Each node's median kernel time over the measured runs, s, by node name.
    total_s : float
        The median time of one whole run, s (the profiler's ``model_run`` event).
    runs : int
        Measured runs (warm-up runs excluded), count.
    threads : int
        onnxruntime's intra-op threads, count.
    optimization : str
        The graph optimisation level (see :data:`OPTIMIZATIONS`).
    totals_s : tuple of float
        Every measured run's whole time, s: their spread says how busy the machine was.
    """

    node_s: dict[str, float]
    total_s: float
    runs: int
    threads: int
    optimization: str
    totals_s: tuple[float, ...] = ()

    @property
    def noisy(self) -> bool:
        """True when the whole runs' interquartile range exceeds
        :data:`perfmodel.measure.timing.NOISY_SPREAD` of their median (the house rule for a busy
        machine): the node times are then too disturbed to judge a prediction by."""
        from perfmodel.measure.timing import Measurement

        if len(self.totals_s) < 2:
            return False
        return Measurement(samples_s=self.totals_s, inner_loops=1).noisy

    @property
    def kernels_s(self) -> float:
        """The node times added up, s: ``total_s`` less what runs between kernels."""
        return sum(self.node_s.values())


def random_inputs(model: onnx.ModelProto, *, seed: int = 0) -> dict[str, Any]:
    """Inputs for each of ``model``'s graph inputs: standard normal floats, zero indices.

    Parameters
    ----------
    model : onnx.ModelProto
        The model; its inputs that are weights (initializers) are left out.
    seed : int
        Seed of the random floats, at least 0.

    Returns
    -------
    dict of str to numpy.ndarray
        Input name to an array of its shape and element type: standard normal values for
        a floating-point input, zeros (a valid index into any table) for any other.

    Raises
    ------
    ValueError
        If an input has no fixed shape.
    """
    import numpy as np
    import onnx

    rng = np.random.default_rng(count("seed", seed, minimum=0))
    initializers = {t.name for t in model.graph.initializer}
    feeds: dict[str, Any] = {}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        kind = value.type.tensor_type
        dims = list(kind.shape.dim)
        shape = [d.dim_value for d in dims]
        if not all(d.HasField("dim_value") for d in dims):  # 0 is a size (an empty cache)
            raise ValueError(f"input {value.name!r} has no fixed shape ({shape}).")
        dtype = onnx.helper.tensor_dtype_to_np_dtype(kind.elem_type)
        if np.issubdtype(dtype, np.floating):
            feeds[value.name] = rng.standard_normal(shape).astype(dtype)
        else:
            feeds[value.name] = np.zeros(shape, dtype=dtype)  # a valid index into any table
    return feeds


def _session(model: Any, *, threads: int, optimization: str, profile_dir: str | None) -> Any:
    from perfmodel._extras import require

    require("capstone", "onnxruntime", feature="running a model on onnxruntime")
    import onnxruntime as ort

    levels = {
        "none": ort.GraphOptimizationLevel.ORT_DISABLE_ALL,
        "basic": ort.GraphOptimizationLevel.ORT_ENABLE_BASIC,
        "all": ort.GraphOptimizationLevel.ORT_ENABLE_ALL,
    }
    options = ort.SessionOptions()
    options.graph_optimization_level = levels[optimization]
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.log_severity_level = 3
    if profile_dir is not None:
        options.enable_profiling = True
        options.profile_file_prefix = str(Path(profile_dir) / "onnxruntime")
    return ort.InferenceSession(
        model.SerializeToString(), options, providers=["CPUExecutionProvider"]
    )


def session(
    model: onnx.ModelProto, *, threads: int | None = None, optimization: str = "none"
) -> Any:
    """An onnxruntime session on the CPU, profiler off, as the course runs every model.

    Parameters
    ----------
    model : onnx.ModelProto
        A model with its weights.
    threads : int, optional
        onnxruntime's intra-op threads (default: every core this process may use); one
        inter-op thread, so nodes run one after another.
    optimization : {"none", "basic", "all"}
        The graph optimisation level (see the module notes).

    Returns
    -------
    onnxruntime.InferenceSession
        Ready to run.
    """
    from perfmodel.measure.empirical import usable_cores

    threads = usable_cores() if threads is None else count("threads", threads)
    optimization = choice("optimization", optimization, OPTIMIZATIONS)
    return _session(model, threads=threads, optimization=optimization, profile_dir=None)


def wall_times(
    model: onnx.ModelProto,
    *,
    runs: int = 10,
    warmup: int = 2,
    threads: int | None = None,
    optimization: str = "none",
    seed: int = 0,
) -> Any:
    """Time whole runs of ``model`` end to end, the profiler off: what a user waits.

    Parameters
    ----------
    model : onnx.ModelProto
        A model with its weights.
    runs, warmup : int
        Measured runs, and runs before them that are not timed, count.
    threads : int, optional
        onnxruntime's intra-op threads (default: every core this process may use).
    optimization : {"none", "basic", "all"}
        The graph optimisation level.
    seed : int
        Seed of the random inputs.

    Returns
    -------
    perfmodel.measure.timing.Measurement
        One sample per run, s, with the share of the CPUs other programs used meanwhile.
    """
    from perfmodel.measure.timing import measure

    runs, warmup = count("runs", runs), count("warmup", warmup, minimum=0)
    ready = session(model, threads=threads, optimization=optimization)
    feeds = random_inputs(model, seed=seed)
    return measure(
        lambda: ready.run(None, feeds),
        warmup=warmup,
        repeats=runs,
        max_repeats=runs,
        min_time_s=0,
        min_sample_s=1e-9,
        max_inner=1,
        label=f"{model.graph.name or 'model'} on onnxruntime",
    )


def profile(
    model: onnx.ModelProto,
    *,
    runs: int = 10,
    warmup: int = 2,
    threads: int | None = None,
    optimization: str = "none",
    seed: int = 0,
) -> EngineProfile:
    """Run ``model`` ``warmup + runs`` times on onnxruntime's CPU provider, profiled.

    Parameters
    ----------
    model : onnx.ModelProto
        A model with its weights (see :mod:`perfmodel.capstone.builders`).
    runs, warmup : int
        Measured runs, and runs before them whose times are dropped (first-touch of the
        weights, thread pool start-up).
    threads : int, optional
        onnxruntime's intra-op threads (default: every core this process may use).
    optimization : {"none", "basic", "all"}
        The graph optimisation level (see the module notes).
    seed : int
        Seed of the random inputs.

    Returns
    -------
    EngineProfile
        Each node's median kernel time, the whole run's, and how it was run.
    """
    import onnx

    from perfmodel.measure.empirical import usable_cores

    if not isinstance(model, onnx.ModelProto):
        raise TypeError(f"`model` must be an onnx.ModelProto (got {type(model).__name__}).")
    runs, warmup = count("runs", runs), count("warmup", warmup, minimum=0)
    threads = usable_cores() if threads is None else count("threads", threads)
    optimization = choice("optimization", optimization, OPTIMIZATIONS)
    feeds = random_inputs(model, seed=seed)
    with tempfile.TemporaryDirectory(prefix="perfmodel-ort-") as directory:
        session = _session(model, threads=threads, optimization=optimization, profile_dir=directory)
        for _ in range(warmup + runs):
            session.run(None, feeds)
        events = json.loads(Path(session.end_profiling()).read_text())
    per_node: dict[str, list[float]] = {}
    totals: list[float] = []
    for event in events:
        if event.get("cat") == "Node" and event["name"].endswith("_kernel_time"):
            per_node.setdefault(event["name"].removesuffix("_kernel_time"), []).append(event["dur"])
        elif event.get("cat") == "Session" and event["name"] == "model_run":
            totals.append(event["dur"])
    node_s = {name: statistics.median(times[-runs:]) * 1e-6 for name, times in per_node.items()}
    return EngineProfile(
        node_s=node_s,
        total_s=statistics.median(totals[-runs:]) * 1e-6,
        runs=runs,
        threads=threads,
        optimization=optimization,
        totals_s=tuple(t * 1e-6 for t in totals[-runs:]),
    )


def engine_overhead(*, nodes: int = 64, runs: int = 20, threads: int | None = None) -> float:
    """The time onnxruntime spends on a node before any work.

    One run of ``nodes`` one-element Adds in a chain, divided by ``nodes`` (lecture 06's
    tiny-add measurement, on the engine). Dividing the whole run, not the kernel times,
    counts the executor's work between kernels too.

    Parameters
    ----------
    nodes : int
        Adds in the chain, count.
    runs : int
        Measured runs of the chain (after 2 warm-up runs), count.
    threads : int, optional
        onnxruntime's intra-op threads (default: every core this process may use).

    Returns
    -------
    float
        The median whole run over ``nodes``, s.

    Examples
    --------
    >>> 0 < engine_overhead(nodes=8, runs=3) < 1e-3
    True
    """
    from onnx import TensorProto, helper

    nodes = count("nodes", nodes)
    chain = [
        helper.make_node("Add", ["x" if i == 0 else f"t{i - 1}", "x"], [f"t{i}"], name=f"add{i}")
        for i in range(nodes)
    ]
    graph = helper.make_graph(
        chain,
        "tiny_adds",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info(f"t{nodes - 1}", TensorProto.FLOAT, [1])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return profile(model, runs=runs, warmup=2, threads=threads).total_s / nodes
