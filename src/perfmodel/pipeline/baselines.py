"""The splits practitioners use today, priced with the same stage-cost model.

* :func:`equal_layers`: the same number of nodes per stage (Megatron-LM's default).
* :func:`balance_by_params`: the same number of parameters per stage (DeepSpeed's
  ``partition_method="parameters"``).
* :func:`balance_by_time`: the contiguous split minimising the largest sum of per-node
  compute times, communication ignored: the objective of the block-partition heuristic
  behind torchgpipe's ``balance_by_time`` (computed here exactly, so the heuristic itself
  can only do as well or worse on that objective).

Each splits the graph's topological order into contiguous stages, so every result is
feasible, and each is then priced with communication included, which is how
:func:`perfmodel.pipeline.partition` is judged too.

>>> from perfmodel.pipeline import Graph
>>> g = Graph.chain([1, 1, 1, 5], [0, 0, 0, 0])
>>> equal_layers(g, 2).bottleneck, balance_by_time(g, 2).bottleneck
(6.0, 5.0)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

from perfmodel._validate import non_negative, sequence
from perfmodel.pipeline.graph import Graph, Partition, bisect_threshold, check_k, stage_cost

__all__ = ["balance_by_params", "balance_by_time", "equal_layers", "greedy_cuts"]


def _priced(graph: Graph, cuts: Sequence[int], method: str) -> Partition:
    """Stages from cut positions in the topological order, priced with communication."""
    order = graph.order
    bounds = [0, *cuts, graph.n]
    stages = tuple(tuple(order[a:b]) for a, b in itertools.pairwise(bounds) if b > a)
    bottleneck = max(stage_cost(graph, stage) for stage in stages)
    return Partition(stages=stages, bottleneck=bottleneck, lower_bound=0.0, method=method)


def equal_layers(graph: Graph, k: int) -> Partition:
    """``k`` stages of (as nearly as possible) equal node counts.

    Parameters
    ----------
    graph : Graph
        The model graph; its topological order is cut.
    k : int
        The most stages, from 1 to the node count, count.

    Returns
    -------
    Partition
        The split, priced with communication; its ``lower_bound`` is 0.0 (none proven).
    """
    k = check_k(graph, k)
    cuts = [round(j * graph.n / k) for j in range(1, k)]
    return _priced(graph, cuts, "equal layers")


def balance_by_params(graph: Graph, k: int, params: Sequence[float]) -> Partition:
    """Cut where the running parameter count crosses each multiple of ``total / k``.

    Parameters
    ----------
    graph : Graph
        The model graph; its topological order is cut.
    k : int
        The most stages, from 1 to the node count, count.
    params : sequence of float
        ``params[i]``: the parameters node i holds, non-negative, count.

    Returns
    -------
    Partition
        The split, priced with communication; its ``lower_bound`` is 0.0 (none proven).
    """
    k = check_k(graph, k)
    params = sequence("params", params, "counts")
    if len(params) != graph.n:
        raise ValueError(
            f"`params` must give a count for each of the {graph.n} nodes "
            f"(got {len(params)} values)."
        )
    params = [non_negative(f"params[{i}]", p) for i, p in enumerate(params)]
    total = math.fsum(params)
    running, cuts, target = 0.0, [], 1
    for position, node in enumerate(graph.order[:-1]):
        running += params[node]
        while target < k and running >= target * total / k:
            cuts.append(position + 1)
            target += 1
    return _priced(graph, sorted(set(cuts)), "balance by parameters")


def balance_by_time(graph: Graph, k: int) -> Partition:
    """The contiguous split of the order minimising the largest block of compute time.

    Parameters
    ----------
    graph : Graph
        The model graph; its topological order is cut.
    k : int
        The most stages, from 1 to the node count, count.

    Returns
    -------
    Partition
        The split, priced with communication; its ``lower_bound`` is 0.0 (none proven).
    """
    k = check_k(graph, k)
    work = [graph.work[node] for node in graph.order]

    def cuts_within(limit: float) -> list[int] | None:
        cuts, block = [], 0.0
        for position, w in enumerate(work):
            if block + w > limit and block > 0:
                cuts.append(position)
                block = 0.0
            block += w
        return cuts if len(cuts) < k else None

    # Summing a block in order can exceed fsum of the total by an ulp; start just above it.
    low, high = max(work), math.fsum(work) * (1 + 1e-12) + 1e-300
    _, high = bisect_threshold(lambda t: cuts_within(t) is not None, low, high, rel_tol=0.0)
    cuts = cuts_within(high)
    assert cuts is not None  # high is always feasible: it starts at the total
    return _priced(graph, cuts, "balance by time (block partition)")


def greedy_cuts(graph: Graph, k: int) -> Partition:
    """Cut the order greedily: at a threshold T, a stage grows until one more node would take its
    cost (communication included) over T; the best such split into at most ``k`` stages, over
    every T a stage can cost.

    The rule lecture 10 shows failing: a cut it chooses can send a large tensor across the link
    where a cut one node later would not. Every contiguous block is priced, so the work grows as
    the cube of the node count: for teaching-size chains.

    Parameters
    ----------
    graph : Graph
        The model graph; its topological order is cut.
    k : int
        The most stages, from 1 to the node count, count.

    Returns
    -------
    Partition
        The split, priced with communication; its ``lower_bound`` is 0.0 (none proven).

    Examples
    --------
    >>> from perfmodel.pipeline import partition
    >>> chain = Graph.chain([4.0, 2.0, 1.0, 1.0], [0.5, 0.5, 3.0, 0.5])  # lecture 10's chain
    >>> found = greedy_cuts(chain, 2)
    >>> found.stages, found.bottleneck, partition(chain, 2).bottleneck
    (((0, 1), (2, 3)), 6.5, 4.5)
    """
    k = check_k(graph, k)
    order, n = graph.order, graph.n
    limits = sorted({stage_cost(graph, order[a:b]) for a in range(n) for b in range(a + 1, n + 1)})
    best: Partition | None = None
    for limit in limits:
        cuts, start = [], 0
        for end in range(1, n):
            if stage_cost(graph, order[start : end + 1]) > limit:  # node `end` takes it over
                cuts.append(end)
                start = end
        if len(cuts) < k:
            found = _priced(graph, cuts, "greedy cuts")
            best = found if best is None or found.bottleneck < best.bottleneck else best
    assert best is not None  # the largest limit is the whole order in one stage
    return best
