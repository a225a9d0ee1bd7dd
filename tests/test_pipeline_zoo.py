"""The model zoo: shapes, prices from the cost models, and reproducible random graphs."""

from __future__ import annotations

import math

import pytest

from perfmodel import hardware, ops
from perfmodel.metrics import transfer_time_s
from perfmodel.pipeline import is_feasible, partition, zoo
from perfmodel.roofline import estimate


def test_mlp_is_priced_by_the_roofline_and_the_link():
    g = zoo.mlp(layers=3, width=2048, batch=16, device="A100 SXM4 80GB", link="PCIe 4.0 x16")
    layer = estimate(ops.dense_forward(16, 2048, 2048, dtype="bf16"), "A100 SXM4 80GB").time_s
    link = hardware.get_link("PCIe 4.0 x16")
    send = transfer_time_s(16 * 2048 * 2, link.bandwidth, latency_s=link.latency)
    assert (
        g.is_chain
        and g.work == pytest.approx((layer,) * 3)
        and g.comm == pytest.approx((send,) * 3)
    )


@pytest.mark.parametrize(
    ("build", "nodes"),
    [
        (zoo.gpt2_like, 1 + 12 * 10 + 2),  # embed, 12 blocks of 10 ops, final norm and head
        (zoo.resnet50_like, 1 + 16 * 4 + 4 + 1),  # stem, 16 bottlenecks, 4 projections, head
        (zoo.inception_like, 1 + 9 * 8),  # stem, 9 modules of 8 ops
    ],
)
def test_zoo_shapes_have_skips_and_branches(build, nodes):
    g = build()
    assert g.n == nodes and not g.is_chain
    assert any(len(p) > 1 for p in g.predecessors)  # a join: residual add or concat
    result = partition(g, 4)
    assert is_feasible(g, result.stages) and 0 < result.lower_bound <= result.bottleneck


def test_a_faster_link_only_lowers_communication():
    slow, fast = zoo.gpt2_like(link="PCIe 3.0 x16"), zoo.gpt2_like(link="NVLink 4")
    assert slow.work == fast.work
    assert all(s > f for s, f in zip(slow.comm, fast.comm, strict=True))


def test_random_dags_are_reproducible_and_connected():
    a, b = zoo.random_layered_dag(6, 5, seed=7), zoo.random_layered_dag(6, 5, seed=7)
    assert (a.work, a.comm, a.edges) == (b.work, b.comm, b.edges)
    assert zoo.random_layered_dag(6, 5, seed=8).edges != a.edges
    for node in range(5, 30):  # every node past the first layer reads the layer before
        assert any(node // 5 - 1 == u // 5 for u in a.predecessors[node])
    with pytest.raises(ValueError, match=r"`edge_probability` must be a number in \[0, 1\]"):
        zoo.random_layered_dag(2, 2, edge_probability=2)


def test_zoo_models_carry_parameter_counts_and_pickle():
    import pickle

    resnet = zoo.resnet50_like()
    assert 25.4e6 < sum(resnet.params) < 25.6e6  # ResNet-50's 25.5 M weights, biases aside
    gpt2 = zoo.gpt2_like()
    assert 162.1e6 < sum(gpt2.params) < 162.2e6  # GPT-2 small's 124 M plus an untied head
    copy = pickle.loads(pickle.dumps(resnet))
    assert (copy.work, copy.edges, copy.params, copy.labels) == (
        resnet.work,
        resnet.edges,
        resnet.params,
        resnet.labels,
    )
    assert resnet.labels[0] == "conv7x7 3->64"


# --- Model and ModelBuilder reject what they cannot hold, and a failed add changes nothing ---


def builder():
    from perfmodel.pipeline.model import ModelBuilder

    return ModelBuilder("H100 SXM", "NVLink 4", "bf16")


def test_a_failed_add_leaves_the_builder_as_it_was():
    b = builder()
    first = b.add(ops.matmul(8, 64, 64, dtype="bf16"), 8 * 64, params=64 * 64)
    before = (list(b.work), list(b.comm), list(b.edges), list(b.params), list(b.labels))
    with pytest.raises(ValueError, match="`inputs` must be nodes already added, numbered below 1"):
        b.add(ops.matmul(8, 64, 64, dtype="bf16"), 8 * 64, first, 5)
    with pytest.raises(ValueError, match="`params` must be an integer >= 0"):
        b.add(ops.matmul(8, 64, 64, dtype="bf16"), 8 * 64, first, params=-1)
    with pytest.raises(TypeError, match="`cost` must be an ops.Cost"):
        b.add("matmul", 8 * 64, first)
    assert (b.work, b.comm, b.edges, b.params, b.labels) == before
    b.add(ops.matmul(8, 64, 64, dtype="bf16"), 8 * 64, first)  # and it still builds
    assert b.graph("one input").n == 2


def test_numpy_parameter_counts_do_not_overflow_in_memory():
    import numpy as np

    b = builder()
    b.add(ops.matmul(8, 64, 64, dtype="bf16"), 8 * 64, params=np.int32(2_000_000_000))
    model = b.graph("one input").with_memory(capacity_bytes=math.inf, bytes_per_param=16)
    assert model.params == (2_000_000_000,) and type(model.params[0]) is int
    assert model.memory[0] == 2_000_000_000 * 16 + 8 * 64 * 2  # not wrapped around


@pytest.mark.parametrize(
    ("field", "value", "error", "message"),
    [
        ("params", [1.5], ValueError, r"`params\[0\]` must be an integer"),
        ("params", [-1], ValueError, r"`params\[0\]` must be an integer >= 0"),
        ("params", [1, 2], ValueError, "`params` must have one entry per node: 1"),
        ("params", 3, TypeError, "`params` must be a sequence of counts, one per node"),
        ("labels", [7], TypeError, r"`labels\[0\]` must be a string"),
        ("out_bytes", [float("nan")], ValueError, r"`out_bytes\[0\]` must be an integer"),
        ("input_description", 4, TypeError, "`input_description` must be a string"),
    ],
)
def test_a_model_names_the_field_it_cannot_hold(field, value, error, message):
    from perfmodel.pipeline.model import Model

    fields = {"params": [0], "labels": ["a"], "input_description": "one input", "out_bytes": [1]}
    fields[field] = value
    with pytest.raises(error, match=message):
        Model([1.0], [0.1], [], **fields)
