"""What lecture 09 says about its pictures of the collectives (issue 49): each picture is
stored in the lecture, drawn with the ranks the prose names, and every byte count the prose
reads off it is the package's own formula (:func:`perfmodel.comms.terms`)."""

from __future__ import annotations

import re

import pytest
from test_statements_09 import cells, prose, source

from perfmodel.comms import terms

PICTURES = {
    "ring_plot(4)": "Here it is on four ranks, step by step:",
    "tree_plot(8)": "A tree pays far fewer, but moves whole buffers:",
    "nvls_plot(8)": "so its sending side sets the time:",
    "rails_plot(8, 2)": "the busier of the two sets the pace.",
    "torus_plot((4, 4))": "each chip's buffer drawn as a 4 × 4 grid of blocks:",
}


@pytest.mark.parametrize("call", PICTURES)
def test_each_picture_is_stored_right_after_the_prose_that_introduces_it(call):
    every = cells()
    found = [i for i, c in enumerate(every) if c["cell_type"] == "code" and call in source(c)]
    assert len(found) == 1, call
    cell = every[found[0]]
    assert [o for o in cell["outputs"] if "image/png" in o.get("data", {})], f"{call} drew nothing"
    assert not [o for o in cell["outputs"] if o.get("name") == "stderr"]
    before = re.sub(r"\s+", " ", source(every[found[0] - 1]))
    assert before.endswith(PICTURES[call])


def n(factor):
    """A byte factor as the prose writes it."""
    return f"{factor:g}n"


def test_the_prose_reads_each_picture_s_bytes_from_the_formulas():
    text = prose()
    ring, tree = terms("allreduce", 4), terms("allreduce", 8, "tree")
    assert f"2(p−1)/p · n = {n(ring.byte_factor)}, as the table says" in text
    assert (
        f"That is {tree.latencies} latencies against the ring's {terms('allreduce', 8).latencies}"
        in text
    )
    assert (
        f"{n(tree.byte_factor)} in turn against the ring's {n(terms('allreduce', 8).byte_factor)}"
        in text
    )
    # NVLS: whole buffer up, 1/p back; 1/p up, (p-1)/p back: (p+1)/p sent in all
    assert "goes up (n) and one summed slice comes back (n/8)" in text
    assert "goes up again (n/8) and the switch copies the other seven down (7n/8)" in text
    assert terms("allreduce", 8, "nvls").byte_factor == 1 + 1 / 8
    # rails: an eighth of an all-reduce over two nodes onto the network, 2 · 7/8 over NVLink
    rail = terms("allreduce", 2).byte_factor / 8
    nvlink = 2 * terms("reduce_scatter", 8).byte_factor
    assert f"onto the network ({n(rail)}), against the {n(nvlink)} it sends over NVLink" in text
    # torus: 3/4 along the rows, 3/16 along the columns, 15/16 as a flat ring of 16
    assert terms("reduce_scatter", 4).byte_factor == 3 / 4
    assert terms("reduce_scatter", 4).byte_factor / 4 == 3 / 16
    assert terms("reduce_scatter", 16).byte_factor == 15 / 16
    assert "having sent 3/4 of its buffer" in text and "for 3/16 more. That is 15/16" in text
    steps = 2 * (4 - 1)
    assert f"in {steps} steps instead of {terms('reduce_scatter', 16).latencies}" in text
