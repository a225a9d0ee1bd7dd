"""Every public model function, fed bad values, says which argument is wrong and how.

The rule (scipy's): a wrong type raises TypeError, a bad value raises ValueError, and the
message names the argument. numpy numbers are numbers; NaN and infinity are rejected
wherever they make no sense; flags must be real bools. Hypothesis draws the bad values
for each argument from what that argument must *not* be, and each call must end in one of
the two errors naming that argument: never a traceback from deep inside, never a number.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel import (
    capstone,
    comms,
    distributed,
    hardware,
    metrics,
    minibatch,
    ops,
    roofline,
    scaling,
    serving,
    transformer,
    units,
)
from perfmodel import pipeline as pl
from perfmodel.capstone import builders
from perfmodel.comms.published import PUBLISHED_BUSBW, across_nodes_busbw, predicted_busbw
from perfmodel.measure import parallel
from perfmodel.measure.timing import Measurement
from perfmodel.pipeline import zoo
from perfmodel.serving import server

# ----------------------------------------------------------------------------- bad values

NOT_NUMBERS = st.sampled_from(["4", "", "nan", None, [], (1,), {}, object(), b"4", True, False])
NAN_INF = st.sampled_from([math.nan, math.inf, -math.inf, np.float64("nan"), np.float32("inf")])
NEGATIVE = st.one_of(
    st.floats(max_value=-1e-9, allow_nan=False, allow_infinity=False),
    st.integers(max_value=-1),
    st.integers(-(2**62), -1).map(np.int64),
    st.floats(max_value=-1e-3, allow_nan=False, allow_infinity=False).map(np.float64),
)
ZERO = st.sampled_from([0, 0.0, np.int64(0), np.float64(0.0), -0.0])
# A whole-number float is a count as people type it (7e9, 4.0); a fractional one is not.
NOT_INTEGERS = st.one_of(
    NOT_NUMBERS,
    st.floats().filter(lambda x: not float(x).is_integer()),
    st.sampled_from([2.5, np.float64(3.5), 1e3 + 0.5, math.nan, math.inf]),
)


def below(minimum: int) -> st.SearchStrategy[Any]:
    """Integers (Python and numpy) below ``minimum``."""
    return st.one_of(
        st.integers(max_value=minimum - 1), st.integers(-(2**62), minimum - 1).map(np.int64)
    )


BAD: dict[str, st.SearchStrategy[Any]] = {
    "count": st.one_of(NOT_INTEGERS, below(1)),
    "count0": st.one_of(NOT_INTEGERS, below(0)),
    "positive": st.one_of(NOT_NUMBERS, NAN_INF, NEGATIVE, ZERO),
    "non_negative": st.one_of(NOT_NUMBERS, NAN_INF, NEGATIVE),
    "seconds_cap": st.one_of(NOT_NUMBERS, st.sampled_from([math.nan, -math.inf]), NEGATIVE, ZERO),
    "fraction": st.one_of(NOT_NUMBERS, NAN_INF, NEGATIVE, ZERO, st.floats(1.0001, 1e6)),
    "probability": st.one_of(NOT_NUMBERS, NAN_INF, NEGATIVE, st.floats(1.0001, 1e6)),
    "intensity": st.one_of(NOT_NUMBERS, st.sampled_from([math.nan, -math.inf]), NEGATIVE),
    "real": st.one_of(NOT_NUMBERS, st.sampled_from([math.nan, -math.inf, np.float64("nan")])),
    "flag": st.sampled_from(["no", "yes", "", 0, 1, None, 1.0, [], np.int64(1)]),
    "dtype": st.sampled_from(["fp12", "FP99", "", "float", None, 3, 2.0, [], True]),
    "dtype_or_none": st.sampled_from(["fp12", "FP99", "", "float", 3, 2.0, [], True]),
    "device": st.sampled_from(["H101", "", "gpu9", "TPU", None, 42, 3.5, [], True]),
    "link": st.sampled_from(["NVLink 9", "", None, 42, []]),
    "cost": st.sampled_from([None, 3.0, "matmul", (1, 2, 3), {"flops": 1}]),
    "graph": st.sampled_from([None, 3, "graph", [[1.0]], {"work": [1.0]}]),
    "times": st.one_of(
        st.sampled_from([None, 3.0, "1,2"]),
        st.lists(st.one_of(NOT_NUMBERS, NAN_INF, NEGATIVE), min_size=1, max_size=3),
    ),
    "pairs": st.sampled_from([None, 3, "ab", [], [(1,)], [1, 2], [(None, None)], [("a", "b")]]),
    "ceiling": st.one_of(
        st.sampled_from(["datasheet", "", None, [], True, math.nan]),
        NEGATIVE,
        ZERO,
        st.floats(1.0001, 100),
    ),
}

# ----------------------------------------------------------------------- the public API

TINY = capstone.import_onnx(
    builders.gpt2(
        batch=1, seq_len=8, width=16, layers=1, heads=2, vocab=32, context=8, weights=False
    )
)
RUN = serving.simulate(1.0, 0.5, 1, requests=100, seed=0)  # any run with p50 and p99
CHAIN = pl.Graph.chain([1.0, 2.0, 3.0, 1.0], [0.1, 0.1, 0.1, 0.1])
SMALL = transformer.Transformer(width=64, layers=2, heads=4, vocab=128)
TORUS = distributed.Mesh({"X": 4, "Y": 4}, links={"X": "TPU v5p ICI", "Y": "TPU v5p ICI"})

#: Every public model function: a valid call, and what each argument must be.
CASES: list[tuple[str, Callable[..., Any], dict[str, Any], dict[str, str]]] = [
    ("ops.matvec", ops.matvec, {"m": 4, "n": 4}, {"m": "count", "n": "count", "dtype": "dtype"}),
    ("ops.matmul", ops.matmul, {"m": 4, "k": 4, "n": 4},
     {"m": "count", "k": "count", "n": "count", "accumulate": "flag", "dtype": "dtype"}),
    ("ops.elementwise", ops.elementwise, {"n": 8},
     {"n": "count", "flops_per_element": "non_negative", "inputs": "count0", "outputs": "count",
      "dtype": "dtype"}),
    ("ops.reduction", ops.reduction, {"n": 8}, {"n": "count", "dtype": "dtype"}),
    ("ops.scan", ops.scan, {"n": 8}, {"n": "count", "dtype": "dtype"}),
    ("ops.softmax", ops.softmax, {"rows": 4, "cols": 4}, {"rows": "count", "cols": "count"}),
    ("ops.layer_norm", ops.layer_norm, {"rows": 4, "cols": 4}, {"rows": "count", "cols": "count"}),
    ("ops.conv2d", ops.conv2d,
     {"batch": 1, "in_channels": 3, "out_channels": 8, "height": 8, "width": 8, "kernel": 3},
     {"batch": "count", "in_channels": "count", "out_channels": "count", "height": "count",
      "width": "count", "kernel": "count", "stride": "count", "padding": "count0",
      "dtype": "dtype"}),
    ("ops.attention", ops.attention, {"batch": 1, "heads": 2, "seq_len": 8, "head_dim": 4},
     {"batch": "count", "heads": "count", "seq_len": "count", "head_dim": "count",
      "fused": "flag", "dtype": "dtype"}),
    ("ops.dense_forward", ops.dense_forward, {"batch": 2, "in_features": 4, "out_features": 4},
     {"batch": "count", "in_features": "count", "out_features": "count"}),
    ("ops.dense_backward", ops.dense_backward, {"batch": 2, "in_features": 4, "out_features": 4},
     {"batch": "count", "in_features": "count", "out_features": "count"}),
    ("ops.flops_from_macs", ops.flops_from_macs, {"macs": 10}, {"macs": "non_negative"}),
    ("ops.fusion", ops.fusion, {"n": 8, "flops_per_element": [1, 2]}, {"n": "count"}),
    ("metrics.transfer_time_s", metrics.transfer_time_s,
     {"nbytes": 1e6, "bandwidth_bytes_per_s": 1e9},
     {"nbytes": "non_negative", "bandwidth_bytes_per_s": "positive",
      "latency_s": "non_negative"}),
    ("metrics.run_time_s", metrics.run_time_s, {"work": 1e6, "time_per_work_s": 1e-9},
     {"work": "non_negative", "time_per_work_s": "non_negative", "parallelism": "positive"}),
    ("metrics.throughput", metrics.throughput, {"work": 1e6, "seconds": 1.0},
     {"work": "non_negative", "seconds": "positive"}),
    ("metrics.utilization", metrics.utilization, {"achieved": 1.0, "peak": 2.0},
     {"achieved": "non_negative", "peak": "positive"}),
    ("metrics.energy_j", metrics.energy_j, {"power_w": 100, "seconds": 2},
     {"power_w": "non_negative", "seconds": "non_negative"}),
    ("metrics.flops_per_joule", metrics.flops_per_joule,
     {"flops": 1e12, "power_w": 100, "seconds": 2},
     {"flops": "non_negative", "power_w": "positive", "seconds": "positive"}),
    ("metrics.headroom", metrics.headroom, {"fraction_of_light": 0.5},
     {"fraction_of_light": "fraction"}),
    ("units.format_quantity", units.format_quantity, {"value": 1e9, "unit": "B"},
     {"value": "real", "digits": "count"}),
    ("roofline.attainable_flops", roofline.attainable_flops,
     {"intensity": 1.0, "device": "H100 SXM"},
     {"intensity": "intensity", "device": "device", "dtype": "dtype", "ceiling": "ceiling"}),
    ("roofline.estimate", roofline.estimate,
     {"cost": ops.matmul(64, 64, 64, dtype="bf16"), "device": "H100 SXM"},
     {"cost": "cost", "device": "device", "dtype": "dtype_or_none", "ceiling": "ceiling"}),
    ("minibatch.crossover_batch", minibatch.crossover_batch,
     {"width": 4096, "device": "GPU circa 2015"},
     {"width": "count", "device": "device", "dtype": "dtype"}),
    ("minibatch.smallest_compute_bound_power_of_two",
     minibatch.smallest_compute_bound_power_of_two, {"width": 4096, "device": "GPU circa 2015"},
     {"width": "count", "device": "device", "largest": "count"}),
    ("minibatch.step_time_s", minibatch.step_time_s,
     {"width": 4096, "batch": 64, "device": "GPU circa 2015"},
     {"width": "count", "batch": "count", "device": "device", "dtype": "dtype"}),
    ("minibatch.steps_to_converge", minibatch.steps_to_converge,
     {"batch": 64, "min_steps": 1e4, "noise_scale": 100.0},
     {"batch": "count", "min_steps": "positive", "noise_scale": "non_negative"}),
    ("hardware.dtype_bytes", hardware.dtype_bytes, {"dtype": "bf16"}, {"dtype": "dtype"}),
    ("pipeline.Graph", pl.Graph, {"work": [1.0, 2.0], "comm": [0.1, 0.1], "edges": [(0, 1)]},
     {"work": "times", "comm": "times"}),
    ("pipeline.partition", pl.partition, {"graph": CHAIN, "k": 2},
     {"graph": "graph", "k": "count", "seed": "count0", "time_limit_s": "seconds_cap"}),
    ("pipeline.brute_force", pl.brute_force, {"graph": CHAIN, "k": 2},
     {"graph": "graph", "k": "count"}),
    ("pipeline.search_orders", pl.search_orders, {"graph": CHAIN, "k": 2},
     {"graph": "graph", "k": "count", "seed": "count0", "generations": "count0",
      "patience": "count"}),
    ("pipeline.combinatorial_lower_bound", pl.combinatorial_lower_bound, {"graph": CHAIN, "k": 2},
     {"graph": "graph", "k": "count"}),
    ("pipeline.mip_lower_bound", pl.mip_lower_bound, {"graph": CHAIN, "k": 2, "upper": 4.0},
     {"graph": "graph", "k": "count", "upper": "non_negative", "probes": "count",
      "rounds": "count", "mip_nodes": "count", "time_limit_s": "seconds_cap"}),
    ("pipeline.equal_layers", pl.equal_layers, {"graph": CHAIN, "k": 2},
     {"graph": "graph", "k": "count"}),
    ("pipeline.balance_by_time", pl.balance_by_time, {"graph": CHAIN, "k": 2},
     {"graph": "graph", "k": "count"}),
    ("pipeline.greedy_cuts", pl.greedy_cuts, {"graph": CHAIN, "k": 2},
     {"graph": "graph", "k": "count"}),
    ("pipeline.bubble_fraction", pl.bubble_fraction, {"stages": 4, "micro_batches": 8},
     {"stages": "count", "micro_batches": "count"}),
    ("pipeline.simulate", pl.simulate, {"stage_times": [1.0, 2.0], "micro_batches": 4},
     {"stage_times": "times", "micro_batches": "count"}),
    ("pipeline.simulate_batch", pl.simulate_batch,
     {"build": zoo.mlp, "batch": 4, "micro_batches": 2, "stages": 2, "layers": 2, "width": 8},
     {"batch": "count", "micro_batches": "count", "stages": "count"}),
    ("zoo.random_layered_dag", zoo.random_layered_dag, {"layers": 3, "width": 2},
     {"layers": "count", "width": "count", "edge_probability": "probability", "seed": "count0"}),
    ("zoo.mlp", zoo.mlp, {"layers": 2, "width": 64, "batch": 4},
     {"layers": "count", "width": "count", "batch": "count", "device": "device",
      "link": "link", "dtype": "dtype"}),
    ("parallel.blocked_scan_additions", parallel.blocked_scan_additions, {"n": 8, "threads": 2},
     {"n": "count", "threads": "count"}),
    ("parallel.where_it_pays", parallel.where_it_pays,
     {"sizes": [16, 32], "speedups": [0.5, 1.5]}, {"speedups": "times"}),
    ("parallel.compare_operations", parallel.compare_operations,
     {"points": [parallel.ScalingPoint(op, 10, 2, Measurement(samples_s=[1.0], inner_loops=1), s)
                 for op, s in (("sin", 1.6), ("cumsum", 0.4))],
      "operation": "cumsum", "reference": "sin", "threads": 2}, {"threads": "count"}),
    ("comms.allreduce_time", comms.allreduce_time, {"nbytes": 1e6, "p": 8, "link": "NVLink 4"},
     {"nbytes": "non_negative", "p": "count", "link": "link"}),
    ("comms.allgather_time", comms.allgather_time, {"nbytes": 1e6, "p": 8, "link": "NVLink 4"},
     {"nbytes": "non_negative", "p": "count", "link": "link"}),
    ("comms.broadcast_time", comms.broadcast_time, {"nbytes": 1e6, "p": 8, "link": "NVLink 4"},
     {"nbytes": "non_negative", "p": "count", "link": "link"}),
    ("comms.parameter_server_time", comms.parameter_server_time,
     {"nbytes": 1e6, "workers": 8, "link": "100 GbE"},
     {"nbytes": "non_negative", "workers": "count", "link": "link", "servers": "count"}),
    ("comms.hierarchical_allreduce_time", comms.hierarchical_allreduce_time,
     {"nbytes": 1e6, "gpus_per_node": 8, "nodes": 4, "intra": "NVLink 4",
      "inter": "InfiniBand NDR"},
     {"nbytes": "non_negative", "gpus_per_node": "count", "nodes": "count", "intra": "link",
      "inter": "link"}),
    ("comms.bus_bandwidth", comms.bus_bandwidth, {"algbw": 1e9, "p": 8},
     {"algbw": "non_negative", "p": "count"}),
    ("comms.algorithm_bandwidth", comms.algorithm_bandwidth, {"nbytes": 1e9, "seconds": 1.0},
     {"nbytes": "non_negative", "seconds": "positive"}),
    ("distributed.training_memory", distributed.training_memory, {"model": 7_000_000_000},
     {"model": "count", "data_parallel": "count", "zero_stage": "count0",
      "tensor_parallel": "count", "pipeline_parallel": "count"}),
    ("distributed.training_flops", distributed.training_flops,
     {"parameters": 1e9, "tokens": 1e9}, {"parameters": "non_negative", "tokens": "non_negative"}),
    ("distributed.mfu", distributed.mfu,
     {"tokens_per_s": 1e5, "flops_per_token": 6e9, "devices": 8, "peak_flops": 1e15},
     {"tokens_per_s": "non_negative", "flops_per_token": "positive", "devices": "count",
      "peak_flops": "positive"}),
    ("distributed.critical_tokens", distributed.critical_tokens,
     {"strategy": "data", "p": 8, "device": "H100 SXM", "link": "InfiniBand NDR"},
     {"p": "count", "device": "device", "link": "link"}),
    ("distributed.critical_width", distributed.critical_width,
     {"p": 8, "device": "H100 SXM", "link": "InfiniBand NDR"},
     {"p": "count", "device": "device", "link": "link", "mlp_ratio": "positive"}),
    ("distributed.network_ridge", distributed.network_ridge,
     {"device": "H100 SXM", "link": "InfiniBand NDR"}, {"device": "device"}),
    ("ops.conv2d", ops.conv2d,
     {"batch": 1, "in_channels": 4, "out_channels": 4, "height": 8, "width": 8, "kernel": 3},
     {"batch": "count", "in_channels": "count", "kernel": "count", "stride": "count",
      "padding": "count0", "dilation": "count", "groups": "count", "dtype": "dtype"}),
    ("ops.pooling", ops.pooling, {"batch": 1, "channels": 4, "height": 8, "width": 8, "window": 2},
     {"batch": "count", "channels": "count", "window": "count", "stride": "count",
      "padding": "count0", "dtype": "dtype"}),
    ("ops.reduction", ops.reduction, {"n": 8},
     {"n": "count", "outputs": "count", "dtype": "dtype"}),
    ("builders.gpt2", builders.gpt2,
     {"batch": 1, "seq_len": 4, "width": 8, "layers": 1, "heads": 2, "vocab": 16, "context": 8,
      "weights": False},
     {"batch": "count", "seq_len": "count", "layers": "count", "vocab": "count",
      "weights": "flag"}),
    ("builders.resnet", builders.resnet,
     {"batch": 1, "image": 32, "blocks": (1,), "widths": (4,), "weights": False},
     {"batch": "count", "image": "count", "classes": "count", "weights": "flag"}),
    ("builders.mlp", builders.mlp, {"batch": 2, "widths": (4, 2), "weights": False},
     {"batch": "count", "weights": "flag", "seed": "count0"}),
    ("capstone.predict_on", capstone.predict_on, {"model": TINY, "device": "H100 SXM"},
     {"device": "device", "training": "flag", "overhead_s": "non_negative",
      "ceiling": "ceiling"}),
    ("capstone.data_parallel", capstone.data_parallel,
     {"model": TINY, "device": "H100 SXM", "devices": 8},
     {"device": "device", "devices": "count", "gpus_per_node": "count", "link": "link",
      "intra_link": "link", "overlap": "flag"}),
    ("capstone.pipeline_parallel", capstone.pipeline_parallel,
     {"model": TINY, "device": "H100 SXM", "stages": 2},
     {"stages": "count", "microbatches": "count", "link": "link", "training": "flag",
      "replicas": "count", "network": "link"}),
    ("capstone.memory_bytes", capstone.memory_bytes, {"model": TINY}, {"training": "flag"}),
    ("capstone.design", capstone.design,
     {"model": TINY, "device": "H100 SXM", "target_samples_per_s": 10.0},
     {"target_samples_per_s": "positive", "max_devices": "count"}),
    ("zoo.gpt2_like", zoo.gpt2_like, {"layers": 1, "d_model": 64, "heads": 4, "seq_len": 16},
     {"layers": "count", "d_model": "count", "heads": "count", "seq_len": "count",
      "batch": "count", "vocab": "count"}),
    ("scaling.amdahl_serial_fraction", scaling.amdahl_serial_fraction,
     {"serial_share": 0.1, "p": 4}, {"serial_share": "probability", "p": "positive"}),
    ("scaling.gustafson_serial_share", scaling.gustafson_serial_share,
     {"serial_fraction": 0.1, "p": 4}, {"serial_fraction": "probability", "p": "positive"}),
    ("distributed.compute_time", distributed.compute_time,
     {"model": SMALL, "tokens": 16, "device": "H100 SXM"},
     {"tokens": "count", "device": "device", "dtype": "dtype", "ceiling": "ceiling"}),
    ("distributed.data_parallel_step", distributed.data_parallel_step,
     {"model": SMALL, "batch_per_device": 1, "seq_len": 16,
      "devices": 8, "gpus_per_node": 4, "device": "H100 SXM", "link": "InfiniBand NDR",
      "intra_link": "NVLink 4"},
     {"batch_per_device": "count", "seq_len": "count", "devices": "count", "buckets": "count",
      "device": "device", "link": "link", "intra_link": "link", "overlap": "flag",
      "ceiling": "ceiling"}),
    ("comms.Axis", comms.Axis, {"size": 8, "link": "NVLink 4"},
     {"size": "count", "link": "link", "wraparound": "flag", "switched": "flag",
      "ceiling": "ceiling"}),
    ("comms.over_axes", comms.over_axes,
     {"collective": "allgather", "nbytes": 1e6, "axes": [comms.Axis(4, "NVLink 4")] * 2},
     {"nbytes": "non_negative"}),
    ("comms.published.predicted_busbw", predicted_busbw, {"row": PUBLISHED_BUSBW[0]},
     {"ceiling": "ceiling"}),
    ("comms.published.across_nodes_busbw", across_nodes_busbw, {"nodes": 2},
     {"nodes": "count", "gpus_per_node": "count", "nbytes": "positive", "ceiling": "ceiling",
      "intra": "link", "inter": "link"}),
    ("distributed.moe_parameters", distributed.moe_parameters,
     {"model": SMALL, "experts": 4, "top_k": 2}, {"experts": "count", "top_k": "count"}),
    ("distributed.moe_critical_batch", distributed.moe_critical_batch,
     {"device": "TPU v5e", "experts": 4, "top_k": 2},
     {"device": "device", "experts": "count", "top_k": "count", "dtype": "dtype"}),
    ("distributed.moe_dispatch_time", distributed.moe_dispatch_time,
     {"tokens": 16, "width": 64, "top_k": 2, "p": 4, "link": "NVLink 4"},
     {"tokens": "count", "width": "count", "top_k": "count", "p": "count", "link": "link",
      "dtype_bytes": "count", "ceiling": "ceiling"}),
    ("distributed.expert_parallel_bytes", distributed.expert_parallel_bytes,
     {"model": SMALL, "experts": 4, "expert_parallel": 2},
     {"experts": "count", "expert_parallel": "count", "dtype_bytes": "count"}),
    ("distributed.checkpoint_bytes", distributed.checkpoint_bytes,
     {"model": SMALL, "tokens": 16, "seq_len": 8},
     {"tokens": "count", "seq_len": "count", "dtype_bytes": "count"}),
    ("distributed.remat_flops", distributed.remat_flops,
     {"model": SMALL, "tokens": 16, "seq_len": 8}, {"tokens": "count", "seq_len": "count"}),
    ("distributed.weight_stationary", distributed.weight_stationary,
     {"batch": 8, "width": 64, "mlp_width": 256, "chips": 16, "ici_bandwidth": 1e9},
     {"batch": "count", "width": "count", "mlp_width": "count", "chips": "count",
      "ici_bandwidth": "positive"}),
    ("distributed.fsdp_tensor_critical_tokens", distributed.fsdp_tensor_critical_tokens,
     {"mesh": TORUS, "fsdp": "X", "tensor": "Y", "device": "TPU v5p", "mlp_width": 1024},
     {"device": "device", "mlp_width": "count", "dtype": "dtype"}),
    ("serving.sizing.slice_max_batch", serving.sizing.slice_max_batch,
     {"weight_bytes": 1e9, "kv_bytes_per_token": 1e5, "device": "TPU v5e", "chips": 4,
      "context": 1024},
     {"weight_bytes": "non_negative", "kv_bytes_per_token": "positive", "device": "device",
      "chips": "count", "context": "count", "usable": "fraction"}),
    ("serving.sizing.decode_step", serving.sizing.decode_step,
     {"weight_bytes": 1e9, "kv_bytes_per_token": 1e5, "device": "TPU v5e", "chips": 4,
      "batch": 2, "context": 1024},
     {"weight_bytes": "non_negative", "kv_bytes_per_token": "non_negative", "device": "device",
      "chips": "count", "batch": "count", "context": "count", "dtype": "dtype"}),
    ("server.tail_report", server.tail_report, {"pairs": [(RUN, RUN)]}, {"pairs": "pairs"}),
]  # fmt: skip

ARGUMENTS = [
    pytest.param(function, valid, argument, kind, id=f"{name}-{argument}")
    for name, function, valid, kinds in CASES
    for argument, kind in kinds.items()
]


def names_the_argument(message: str, argument: str) -> bool:
    return f"`{argument}`" in message or f"`{argument}[" in message


@pytest.mark.parametrize(("function", "valid", "argument", "kind"), ARGUMENTS)
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_a_bad_value_is_a_clear_error_naming_its_argument(function, valid, argument, kind, data):
    bad = data.draw(BAD[kind], label=argument)
    with pytest.raises((TypeError, ValueError)) as caught:
        function(**{**valid, argument: bad})
    message = str(caught.value)
    assert names_the_argument(message, argument), message
    frames = caught.traceback
    # Raised by perfmodel's own checks, not from deep inside numpy, scipy or Python.
    assert "perfmodel" in str(frames[-1].path), f"raised in {frames[-1].path}: {message}"


def test_the_wrong_type_is_a_type_error_and_a_bad_value_a_value_error():
    with pytest.raises(TypeError, match="`m` must be an integer"):
        ops.matvec("4", 4)
    with pytest.raises(ValueError, match="`m` must be a positive integer"):
        ops.matvec(-4, 4)
    with pytest.raises(TypeError, match="`nbytes` must be a number"):
        metrics.transfer_time_s("10", 1e9)
    with pytest.raises(ValueError, match="`nbytes` must be a non-negative finite number"):
        metrics.transfer_time_s(math.nan, 1e9)
    with pytest.raises(TypeError, match="`fused` must be True or False"):
        ops.attention(1, 1, 8, 8, fused="no")


@pytest.mark.parametrize(("name", "function", "valid", "kinds"), CASES, ids=[c[0] for c in CASES])
def test_numpy_numbers_are_numbers(name, function, valid, kinds):
    as_numpy = {
        key: (np.int64(value) if isinstance(value, int) else np.float64(value))
        if isinstance(value, (int, float)) and not isinstance(value, bool)
        else value
        for key, value in valid.items()
    }
    assert repr(function(**as_numpy)) == repr(function(**valid))
