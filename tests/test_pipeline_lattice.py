"""The block-by-block downset program against brute force and the plain program, and memory."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from perfmodel import pipeline as pl
from perfmodel.pipeline import networks, zoo
from perfmodel.pipeline.blocks import BLOCK_LIMIT, lattice_blocks, lattice_size, series_points
from perfmodel.pipeline.graph import stage_cost
from perfmodel.pipeline.lattice import _Fronts, _through_fronts, split_lattice
from perfmodel.pipeline.split import split_downsets, split_order


def series_graph(seed: int, blocks: int, width: int, *, memory: bool = False) -> pl.Graph:
    """Small random DAGs joined in series: each block's nodes read the point before it (or
    each other), the point after reads some of them, and the first point may be absent."""
    rng = np.random.default_rng(seed)
    work: list[float] = []
    comm: list[float] = []
    edges: list[tuple[int, int]] = []

    def node() -> int:
        work.append(float(rng.uniform(0.1, 1)))
        comm.append(float(rng.uniform(0, 0.5)))
        return len(work) - 1

    entry = node() if rng.random() < 0.7 else None
    for _ in range(blocks):
        inner: list[int] = []
        for _ in range(int(rng.integers(0, width + 1))):
            v = node()
            sources = [u for u in inner if rng.random() < 0.4]
            if entry is not None and (not sources or rng.random() < 0.5):
                sources.append(entry)
            edges += [(u, v) for u in sources]
            inner.append(v)
        point = node()
        readers = {u for u in inner if rng.random() < 0.6 or not any(e[0] == u for e in edges)}
        if entry is not None and (not readers or rng.random() < 0.3):
            readers.add(entry)
        edges += [(u, point) for u in readers or inner[-1:]]
        entry = point
    if not memory:
        return pl.Graph(work, comm, edges)
    held = rng.uniform(1, 3, len(work))
    capacity = float(rng.uniform(held.max(), held.sum() / 2 + held.max()))
    return pl.Graph(work, comm, edges, memory=held.tolist(), capacity=capacity)


def test_series_points_of_a_diamond_and_of_a_skip():
    diamond = pl.Graph([1] * 4, [0] * 4, [(0, 1), (0, 2), (1, 3), (2, 3)])
    assert series_points(diamond) == [0, 3]
    skip = pl.Graph([1] * 4, [0] * 4, [(0, 1), (1, 2), (0, 3), (2, 3)])  # 0 -> 3 jumps 1, 2
    assert series_points(skip) == [0, 3]
    two_sources = pl.Graph([1] * 3, [0] * 3, [(0, 2), (1, 2)])
    assert series_points(two_sources) == [2]


@pytest.mark.parametrize("seed", range(40))
def test_series_points_meet_their_definition(seed):
    g = series_graph(seed, 4, 3)
    ancestors = [set() for _ in range(g.n)]
    for v in g.order:
        for u in g.predecessors[v]:
            ancestors[v] |= ancestors[u] | {u}
    expected = []
    for c in g.order:
        before = ancestors[c]
        after = {v for v in range(g.n) if c in ancestors[v]}
        jumps = any(u in before and v not in before | {c} for u, v in g.edges)
        if len(before) + len(after) == g.n - 1 and not jumps:
            expected.append(c)
    assert series_points(g) == expected


@pytest.mark.parametrize("memory", [False, True])
@pytest.mark.parametrize("seed", range(60))
def test_the_block_program_matches_brute_force(seed, memory):
    g = series_graph(seed, 3, 2, memory=memory)
    if g.n > 8:
        g = series_graph(seed, 2, 2, memory=memory)
    for k in range(1, min(4, g.n) + 1):
        oracle = pl.brute_force(g, k)
        found = split_lattice(g, k, upper=math.inf)
        if math.isinf(oracle.bottleneck):  # nothing fits the memory
            assert found is None
            continue
        assert found is not None and pl.is_feasible(g, found.stages) and len(found.stages) <= k
        assert found.bottleneck == pytest.approx(oracle.bottleneck, rel=1e-9)
        assert found.lower_bound <= oracle.bottleneck
        assert all(stage_cost(g, stage) <= found.bottleneck for stage in found.stages)


@pytest.mark.parametrize("memory", [False, True])
@pytest.mark.parametrize("seed", range(25))
def test_the_block_program_matches_the_plain_one_on_longer_graphs(seed, memory):
    g = series_graph(1000 + seed, 6, 5, memory=memory)
    for k in (2, 3, 5, 8):
        plain = split_downsets(g, min(k, g.n))
        assert plain is not None
        found = split_lattice(g, min(k, g.n), upper=math.inf)
        if math.isinf(plain.bottleneck):
            assert found is None
        else:
            assert found is not None
            assert found.bottleneck == pytest.approx(plain.bottleneck, rel=1e-9)


def test_a_graph_without_series_points_is_one_block_of_all_its_downsets():
    g = zoo.random_layered_dag(4, 3, edge_probability=0.3, seed=5)
    blocks = lattice_blocks(g)
    assert blocks is not None and len(blocks) == 1
    assert lattice_size(g) == len(pl.downsets(g))


def test_inception_v3_is_solved_exactly():
    g = networks.inception_v3()
    assert lattice_size(g) == 35_682  # over the plain program's 50,000-pair comfort
    result = pl.partition(g, 16)
    assert result.optimal and result.method.startswith("dynamic programming on downsets")
    assert pl.is_feasible(g, result.stages)
    order = split_order(g, g.order, 16)
    assert result.bottleneck <= order.bottleneck


def test_a_wide_graph_says_why_the_exact_program_did_not_run():
    g = networks.nasnet_a_mobile()
    assert lattice_size(g) is None  # one block of 700-odd nodes: far over BLOCK_LIMIT
    result = pl.partition(g, 4, time_limit_s=3)  # the reason does not depend on the limit
    assert f"{BLOCK_LIMIT:,} in one block" in result.method and "bound: " in result.method
    assert 0 < result.lower_bound <= result.bottleneck


# memory -----------------------------------------------------------------------------


def test_with_memory_counts_weights_and_the_activations_in_flight():
    model = zoo.gpt2_like()
    held = model.with_memory(capacity_bytes=80e9, in_flight=3)
    i = int(np.argmax(model.params))
    assert held.memory[i] == model.params[i] * model.weight_bytes + 3 * model.out_bytes[i]
    assert held.capacity == 80e9 and held.work == model.work and held.edges == model.edges
    assert not held.limited  # 80 GB holds all of GPT-2 small


def test_a_stage_over_capacity_costs_infinity_and_every_method_avoids_it():
    g = pl.Graph.chain([1, 1, 1, 1], [0.1] * 4, memory=[3, 3, 1, 1], capacity=5)
    assert math.isinf(stage_cost(g, [0, 1]))
    result = pl.partition(g, 2)
    assert result.stages == ((0,), (1, 2, 3)) and result.optimal
    dag = pl.Graph([1, 1, 1, 1], [0.1] * 4, [(0, 1), (0, 2), (1, 3), (2, 3)],
                   memory=[3, 3, 1, 1], capacity=5)  # fmt: skip
    assert pl.partition(dag, 2).bottleneck == pl.brute_force(dag, 2).bottleneck
    assert pl.solve_mip(dag, 2).bottleneck == pytest.approx(pl.brute_force(dag, 2).bottleneck)


def test_memory_moves_the_best_split_of_gpt2():
    model = zoo.gpt2_like().with_memory(capacity_bytes=math.inf, in_flight=2)
    free = pl.partition(model, 4)
    heaviest = max(sum(model.memory[v] for v in stage) for stage in free.stages)
    tight = zoo.gpt2_like().with_memory(capacity_bytes=0.9 * heaviest, in_flight=2)
    bound = pl.partition(tight, 4)
    assert bound.optimal and bound.bottleneck > free.bottleneck
    assert all(sum(tight.memory[v] for v in s) <= tight.capacity for s in bound.stages)


def test_no_split_that_fits_is_a_clear_error():
    g = pl.Graph.chain([1, 1, 1], [0.1] * 3, memory=[2, 2, 2], capacity=3)
    with pytest.raises(ValueError, match="`k` must allow a split whose every stage fits"):
        pl.partition(g, 2)
    assert len(pl.partition(g, 3).stages) == 3


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        ({"memory": [1, 2]}, ValueError, "one entry per node: 3"),
        ({"memory": "lots"}, TypeError, "`memory` must be a sequence of bytes"),
        ({"memory": [1, float("nan"), 1]}, ValueError, r"memory\[1\]"),
        ({"memory": [1, 5, 1], "capacity": 4}, ValueError, "node 1 needs 5 B"),
        ({"capacity": 0}, ValueError, "`capacity`"),
        ({"capacity": "big"}, TypeError, "`capacity`"),
    ],
)
def test_bad_memory_is_a_clear_error(kwargs, error, match):
    with pytest.raises(error, match=match):
        pl.Graph([1, 1, 1], [0, 0, 0], [(0, 1), (1, 2)], **kwargs)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(1, 4))
def test_memory_never_lowers_the_optimum(seed, k):
    g = series_graph(seed, 3, 2, memory=True)
    free = pl.Graph(g.work, g.comm, g.edges)
    k = min(k, g.n)
    try:
        held = pl.partition(g, k).bottleneck
    except ValueError:
        held = math.inf
    assert held >= pl.partition(free, k).bottleneck * (1 - 1e-12)


# the published networks ---------------------------------------------------------------


def test_the_networks_have_their_papers_parameter_counts():
    assert sum(networks.inception_v3().params) == 23_834_568  # torchvision, no aux head
    assert sum(networks.inception_v3(fused=True).params) == 23_834_568
    assert sum(networks.nasnet_a_mobile().params) == 5_289_978  # Keras NASNetMobile
    assert networks.inception_v3(fused=True).n == 124


def test_the_networks_end_in_their_papers_shapes():
    inception = networks.inception_v3(batch=1)
    last_concat = max(i for i, label in enumerate(inception.labels) if label == "Mixed_7c concat")
    assert inception.out_bytes[last_concat] == 2048 * 8 * 8 * 2
    nasnet = networks.nasnet_a_mobile(batch=1)
    final = max(i for i, label in enumerate(nasnet.labels) if label == "cell_12 concat")
    assert nasnet.out_bytes[final] == 1056 * 7 * 7 * 2
    assert series_points(nasnet)[-1] > final  # cells read two cells back: no points inside


def test_gnmt_has_residuals_from_the_third_layer_and_attention_everywhere():
    g = networks.gnmt(layers=8)
    name = {label: i for i, label in enumerate(g.labels)}
    assert g.n == 34
    for side in ("encoder", "decoder"):
        for layer in range(3, 9):
            add = name[f"{side} {layer} residual"]
            assert len(g.predecessors[add]) == 2
        assert f"{side} 2 residual" not in name
    for layer in range(2, 9):
        assert name["attention"] in g.predecessors[name[f"decoder {layer}"]]
    assert name["encoder 8 residual"] in g.predecessors[name["attention"]]


def test_each_bound_says_which_method_proved_it():
    dag = zoo.random_layered_dag(10, 6, seed=3)
    found = pl.search_orders(dag, 32, seed=0)
    proof = pl.mip_lower_bound(dag, 32, found.bottleneck)
    assert proof.source == "covering LP"
    assert proof.lower_bound > pl.combinatorial_lower_bound(dag, 32)
    chain_like = pl.Graph([1, 1, 1], [0, 0, 0], [(0, 1), (0, 2)])
    trivial = pl.mip_lower_bound(chain_like, 3, 1.0)
    assert trivial.source in {"combinatorial bound", "window bound"}


# what an attack found ------------------------------------------------------------------------


def test_a_stage_that_fills_the_device_exactly_fits_whichever_way_it_is_summed():
    chain = pl.Graph.chain([0.36, 0.12, 0.15], [0.15, 0.31, 0.16],
                           memory=[0.4, 0.2, 1.1], capacity=1.3)  # fmt: skip
    assert pl.partition(chain, 3).bottleneck == pytest.approx(pl.brute_force(chain, 3).bottleneck)
    assert pl.partition(chain, 3).stages == ((0,), (1, 2))
    g = pl.Graph([1.0, 0.25, 0.75, 0.0, 0.0], [0.25, 0.5, 0.5, 0.5, 0.5],
                 [(0, 2), (1, 2), (2, 3), (2, 4)],
                 memory=[0.2, 0.7, 1.1, 0.6, 0.3], capacity=2.6999999999999997)  # fmt: skip
    assert pl.partition(g, 2).bottleneck == pytest.approx(pl.brute_force(g, 2).bottleneck)
    tiny = pl.Graph.chain([1.0, 1.0], [0.0, 0.0], memory=[0.1, 0.3], capacity=0.3)
    assert pl.partition(tiny, 2).stages == ((0,), (1,))
    loose = pl.Graph([1.0] * 3, [0.0] * 3, [], memory=[0.2] * 3, capacity=0.2)
    found = split_lattice(loose, 3, upper=1.0)
    assert found is not None and found.bottleneck == 1.0


@pytest.mark.parametrize("seed", range(30))
def test_capacities_that_are_sums_of_memories_give_the_optimum(seed):
    rng = np.random.default_rng(seed)
    base = series_graph(seed, 3, 2)
    if base.n > 8:
        base = series_graph(seed, 2, 2)
    held = np.round(rng.uniform(0.1, 1.2, base.n), 1)  # decimal sizes: sums round
    pick = rng.choice(base.n, size=max(2, base.n // 2), replace=False)
    capacity = max(float(sum(held[pick])), float(held.max()))
    g = pl.Graph(base.work, base.comm, base.edges, memory=held.tolist(), capacity=capacity)
    for k in range(1, min(4, g.n) + 1):
        oracle = pl.brute_force(g, k).bottleneck
        try:
            found = pl.partition(g, k)
        except ValueError:
            assert math.isinf(oracle)
            continue
        assert found.bottleneck == pytest.approx(oracle, rel=1e-9)
        assert found.lower_bound <= oracle * (1 + 1e-9)


def test_running_out_of_time_with_nothing_that_fits_says_so():
    g = pl.Graph([1.0] * 4, [0.5] * 4, [(0, 2), (1, 3)], memory=[2, 2, 1, 1], capacity=3)
    assert pl.partition(g, 2).bottleneck < math.inf  # ((0, 2), (1, 3)) fits
    with pytest.raises(ValueError, match="`time_limit_s` ran out before any split"):
        pl.partition(g, 2, time_limit_s=1e-9)


def test_memory_must_be_an_ordered_sequence():
    for bad in ({0: 1, 1: 2, 2: 3}, {1, 2, 3}):
        with pytest.raises(TypeError, match="`memory` must be a sequence of bytes"):
            pl.Graph([1, 1, 1], [0, 0, 0], [], memory=bad)


def test_lattice_size_keeps_its_limit():
    chain = pl.Graph.chain([1.0] * 3, [0.0] * 3)
    assert lattice_size(chain) == 4 and lattice_size(chain, limit=3) is None


def test_split_lattice_names_a_bad_upper_or_blocks():
    from perfmodel.pipeline.lattice import split_lattice
    from perfmodel.pipeline.zoo import inception_like

    g = inception_like(modules=2)
    with pytest.raises(ValueError, match="`upper`"):
        split_lattice(g, 2, upper=float("nan"))
    with pytest.raises(TypeError, match="`upper`"):
        split_lattice(g, 2, upper="1.0")
    with pytest.raises(TypeError, match="`blocks` must be the list of Block"):
        split_lattice(g, 2, upper=1.0, blocks=[1, 2])
    with pytest.raises(ValueError, match="`pair_limit`"):
        split_lattice(g, 2, upper=1.0, pair_limit=1.5)


@settings(max_examples=200, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda n: st.tuples(
            st.lists(  # best[r][downset]: an eighth of a second, or not reached (None)
                st.lists(st.one_of(st.none(), st.integers(0, 40)), min_size=n, max_size=n),
                min_size=1,
                max_size=5,
            ),
            st.lists(st.integers(0, 40), min_size=n, max_size=n),  # leaving each downset
            st.lists(st.integers(0, 40), min_size=0, max_size=8),  # extra
            st.integers(0, 40),  # upper
        )
    )
)
def test_all_rows_at_once_give_each_rows_best_way_through(case):
    rows, leaving, extras, upper = case
    best = np.array([[math.inf if v is None else v / 8 for v in row] for row in rows])
    starts, extra, upper = np.array(leaving) / 8, np.array(extras) / 8, upper / 8
    fronts = _Fronts.of(best, starts, upper)
    value, origin = _through_fronts(fronts, extra, np.argsort(extra, kind="stable"))
    reached = range(len(best))[fronts.reached.start - 1 : fronts.reached.stop - 1]
    assert value.shape == (len(reached), len(extra))
    for row, r in enumerate(reached):
        alive = np.flatnonzero(best[r] <= upper)  # brute force: every downset, not the front
        for e, x in enumerate(extra):
            through = np.maximum(best[r, alive], starts[alive] + x)
            assert value[row, e] == (through.min() if len(alive) else math.inf)
            if len(alive):
                assert max(best[r, origin[row, e]], starts[origin[row, e]] + x) == value[row, e]
    # rows outside fronts.reached have no downset within upper
    assert all(not (best[r] <= upper).any() for r in range(len(best)) if r not in reached)


@pytest.mark.parametrize("seed", range(12))
def test_the_split_does_not_depend_on_how_the_work_is_chunked(seed, monkeypatch):
    from perfmodel.pipeline import lattice

    graph = zoo.random_layered_dag(3 + seed % 3, 3 + seed % 2, edge_probability=0.6, seed=seed,
                                   comm_range=(1e-4, 1e-3))  # fmt: skip
    tie = pl.Graph(  # found by an attack: two optimal splits, told apart by the last bit
        [0.1, 0.2, 0.3, 0.3, 0.6, 0.3, 0.1, 0.6, 0.7, 0.6, 0.7, 0.7],
        [0.6, 0.3, 0.1, 0.3, 0.6, 0.6, 0.7, 0.2, 0.7, 0.1, 0.2, 0.1],
        [(0, 5), (0, 7), (0, 11), (1, 4), (1, 5), (1, 7), (1, 8), (2, 4), (2, 5), (2, 11),
         (3, 4), (3, 5), (3, 6), (3, 7), (3, 8), (3, 10), (4, 9), (4, 11), (5, 8), (5, 9),
         (5, 10), (5, 11), (6, 8), (6, 9), (7, 9)],
    )  # fmt: skip
    for g in (graph, tie):
        k = min(5, g.n)
        whole = split_lattice(g, k, upper=math.inf)
        for cells in (1, 7, 300):
            monkeypatch.setattr(lattice, "_CELLS", cells)
            piecewise = split_lattice(g, k, upper=math.inf)
            assert piecewise.stages == whole.stages
            assert piecewise.lower_bound == whole.lower_bound
        monkeypatch.undo()
