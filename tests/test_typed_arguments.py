"""Strict mypy checks a caller's devices and links: hardware.DeviceLike and LinkLike.

A device is a catalogue name or a ``hardware.Device``; a link is a catalogue name, a
``hardware.Link``, or anything with ``bandwidth`` and ``latency`` (``hardware.LinkSpec``):
a ``comms.LinkModel``, or a fit from ``comms.fit_alpha_beta``. mypy reads the caller below
and must flag exactly the lines marked ``# wrong``. The one ``Comparison`` of lectures 06 and
12 offers the roofline columns only over lecture 06's rows and the op classes only over
lecture 12's nodes.
"""

from __future__ import annotations

import re

from mypy import api

from conftest import ROOT

CALLER = """
from perfmodel import capstone, comms, distributed, hardware, minibatch, roofline, serving
from perfmodel.measure import comparison
from perfmodel.comms import LinkModel
from perfmodel.pipeline import zoo
from perfmodel.serving import llm
from perfmodel.transformer import preset

fit = comms.fit_alpha_beta([8.0, 1e6, 1e8], [1e-5, 1e-3, 1e-1], ranks=2)
comms.allreduce_time(1e9, 8, "NVLink 4")
comms.allreduce_time(1e9, 8, hardware.get_link("NVLink 4"))
comms.allreduce_time(1e9, 8, LinkModel(1e9, 1e-6))
comms.allreduce_time(1e9, 8, fit)
comms.Axis(4, fit)
zoo.mlp(layers=2, device=hardware.get("H100 SXM"), link=fit)
distributed.network_ridge("H100 SXM", 6e9)
distributed.critical_tokens("data", 8, hardware.get("H100 SXM"), "InfiniBand NDR")
distributed.Mesh({"X": 4}, links={"X": fit})
roofline.attainable_flops(1.0, "H100 SXM")
comms.allreduce_time(1e9, 8, 3.0)  # wrong
comms.allreduce_time(1e9, 8, hardware.get("H100 SXM"))  # wrong
minibatch.step_time_s(1024, 8, hardware.get_link("NVLink 4"))  # wrong
roofline.attainable_flops(1.0, 42)  # wrong
distributed.critical_width(8, "H100 SXM", None)  # wrong
llama = preset("Llama 2 7B")
llm.max_batch(llama, "H100 SXM", context=4096)
llm.frontier(llama, hardware.get("H100 SXM"), context=4096)
llm.time_to_first_token(llama, hardware.get("H100 SXM"), batch=1, prompt=512)
llm.time_per_output_token(llama, "H100 SXM", batch=8, context=512)
llm.compute_bound_batch(llama, hardware.get("H100 SXM"), context=512)
serving.roofline_batch_time(lambda b: llm.decode_cost(llama, batch=b, context=512), "H100 SXM")
llm.max_batch(llama, 80e9, context=4096)  # wrong
llm.compute_bound_batch(llama, hardware.get_link("NVLink 4"), context=512)  # wrong
serving.roofline_batch_time(lambda b: llm.decode_cost(llama, batch=b, context=512), None)  # wrong
model = capstone.import_onnx(capstone.builders.mlp(batch=2, widths=(4, 2), weights=False))
capstone.predict_on(model, hardware.get("H100 SXM")).device.memory_capacity
capstone.upgrade(model, "A100 SXM4 80GB", hardware.get("H100 SXM"))
capstone.data_parallel(model, "H100 SXM", devices=16, link=fit, intra_link="NVLink 4")
capstone.pipeline_parallel(model, hardware.get("H100 SXM"), stages=2,
                           link=hardware.get_link("NVLink 4"), network=LinkModel(5e10, 1e-6))
capstone.design(model, "H100 SXM", target_samples_per_s=1e4, link=fit,
                intra_link=hardware.get_link("NVLink 4"))
capstone.data_parallel(model, "H100 SXM", devices=8, intra_link=50e9)  # wrong
capstone.pipeline_parallel(model, "H100 SXM", stages=2, network=hardware.get("H100 SXM"))  # wrong
capstone.design(model, 3, target_samples_per_s=1e4)  # wrong
capstone.predict_on(model, "H100 SXM").device.startswith("H")  # wrong


def read(ops: comparison.Comparison[comparison.Row],
         nodes: capstone.Comparison[capstone.NodeComparison]) -> None:
    ops.misses(0.25), ops.row("matvec"), ops.beat_roofline, ops.median_abs_error
    nodes.largest_misses(4), nodes.class_ratios(), nodes.by_class(), nodes.median_node_error
    ops.class_ratios()  # wrong
    nodes.roofline_median_abs_error  # wrong
"""


def test_strict_mypy_accepts_every_device_and_link_form_and_flags_the_wrong_ones(tmp_path):
    caller = tmp_path / "caller.py"
    caller.write_text(CALLER)
    cache = ROOT / "test-output" / "mypy-cache"  # kept between runs: a warm run takes a second
    out, err, _ = api.run(["--strict", "--no-error-summary", "--cache-dir", str(cache),
                           str(caller)])  # fmt: skip
    flagged = {int(m) for m in re.findall(r"caller\.py:(\d+): error", out)}
    wrong = {n for n, line in enumerate(CALLER.splitlines(), 1) if line.endswith("# wrong")}
    assert wrong and flagged == wrong, out + err
