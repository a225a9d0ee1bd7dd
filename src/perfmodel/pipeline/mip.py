"""Pipeline partitioning as a mixed-integer program, solved by HiGHS through scipy.

:func:`solve_mip` finds the exact optimum of a small graph (and, on a time limit, the best
split found with HiGHS's dual bound as a proof of how good it is).

>>> from perfmodel.pipeline.graph import Graph
>>> g = Graph([1.0, 2.0, 2.0, 1.0], [0.1] * 4, [(0, 1), (0, 2), (1, 3), (2, 3)])
>>> result = solve_mip(g, 2)
>>> result.bottleneck, result.optimal
(3.2, True)
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from perfmodel.pipeline.graph import (
    MIP_REL_GAP,
    Graph,
    Partition,
    bottleneck_of,
    check_k,
    check_time_limit,
    combinatorial_lower_bound,
    stages_from_labels,
)

__all__ = ["SparseRows", "solve_mip"]

_HIGHS_ABS_GAP = 1e-6  # HiGHS's default mip_abs_gap, which scipy does not expose


class SparseRows:
    """Linear constraints ``lo <= row · x <= hi`` collected row by row, sparsely.

    >>> rows = SparseRows()
    >>> rows.add([(0, 1.0), (1, 2.0)], 0, 4)
    >>> rows.constraint(size=2).A.toarray()
    array([[1., 2.]])
    """

    def __init__(self) -> None:
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.lower: list[float] = []
        self.upper: list[float] = []

    def add(self, terms: list[tuple[int, float]], lo: float, hi: float) -> None:
        """Append the row ``lo <= sum(value * x[column] for column, value in terms) <= hi``.

        Parameters
        ----------
        terms : list of (int, float)
            ``(column, value)``: the row's nonzero coefficients, dimensionless.
        lo : float
            The row's lower bound (``-math.inf`` for none), dimensionless.
        hi : float
            The row's upper bound (``math.inf`` for none), dimensionless.
        """
        for col, val in terms:
            self.rows.append(len(self.lower))
            self.cols.append(col)
            self.vals.append(val)
        self.lower.append(lo)
        self.upper.append(hi)

    def constraint(self, size: int) -> Any:
        """The rows as one scipy ``LinearConstraint`` over ``size`` variables.

        Parameters
        ----------
        size : int
            Variables in the program, more than any column used, count.

        Returns
        -------
        scipy.optimize.LinearConstraint
            Every row added, over a sparse (CSR) matrix.
        """
        from scipy.optimize import LinearConstraint
        from scipy.sparse import coo_matrix

        shape = (len(self.lower), size)
        matrix = coo_matrix((self.vals, (self.rows, self.cols)), shape=shape).tocsr()
        return LinearConstraint(matrix, self.lower, self.upper)


def solve_mip(graph: Graph, k: int, *, time_limit_s: float = 30.0) -> Partition:
    """Minimise the bottleneck exactly with a mixed-integer program (scipy's HiGHS).

    Variables: ``x[i,s] = 1`` when node i is in stage s; ``r[u,s]`` and ``t[u,s]`` mark that
    stage s receives, or sends, node u's output; ``B`` the bottleneck. Constraints:
    each node in one stage; for each edge (u, v), stage(u) <= stage(v),
    ``r[u,s] >= x[v,s] - x[u,s]`` and ``t[u,s] >= x[u,s] - x[v,s]``; every stage's work
    plus its received and sent times is at most B. Minimise B.

    On a time limit the best split found is returned with HiGHS's dual bound as the lower
    bound, which is still a proof: no split is better than it.

    Parameters
    ----------
    graph : Graph
        The model graph.
    k : int
        The most stages, from 1 to the node count, count.
    time_limit_s : float
        HiGHS's wall-clock limit, positive or ``math.inf``, s.

    Returns
    -------
    Partition
        The split, proven optimal (to HiGHS's gap) unless its ``method`` ends in
        ``", time limit"``.

    Raises
    ------
    RuntimeError
        When HiGHS found no split within the time limit.
    """
    from scipy.optimize import Bounds, milp

    k = check_k(graph, k)
    time_limit_s = check_time_limit(time_limit_s)
    n = graph.n
    # Pose the MIP in units of the combinatorial bound (the scaled optimum is then >= 1), but
    # never below 1e-9 of the largest time, or HiGHS rejects the coefficients.
    largest = max(max(graph.work), max(graph.comm))
    unit = max(combinatorial_lower_bound(graph, k), 1e-9 * largest) or 1.0
    work = [w / unit for w in graph.work]
    comm = [c / unit for c in graph.comm]
    senders = [u for u in range(n) if graph.successors[u]]
    nx, nr = n * k, len(senders) * k
    size = nx + 2 * nr + 1

    def x(i: int, s: int) -> int:  # node i in stage s
        return i * k + s

    def r(j: int, s: int) -> int:  # stage s receives the output of the j-th sender
        return nx + j * k + s

    def t(j: int, s: int) -> int:  # stage s sends the output of the j-th sender
        return nx + nr + j * k + s

    rows = SparseRows()  # about 3·edges·k rows: dense ones would not fit in memory
    add = rows.add
    for i in range(n):
        add([(x(i, s), 1.0) for s in range(k)], 1, 1)
    for j, u in enumerate(senders):
        for v in graph.successors[u]:
            order = [(x(u, s), float(s)) for s in range(k)] + [
                (x(v, s), -float(s)) for s in range(k)
            ]
            add(order, -math.inf, 0)  # stage(u) <= stage(v)
            for s in range(k):
                add([(r(j, s), 1.0), (x(v, s), -1.0), (x(u, s), 1.0)], 0, math.inf)
                add([(t(j, s), 1.0), (x(u, s), -1.0), (x(v, s), 1.0)], 0, math.inf)
    for s in range(k):
        stage = [(x(i, s), work[i]) for i in range(n)]
        for j, u in enumerate(senders):
            stage += [(r(j, s), comm[u]), (t(j, s), comm[u])]
        add([*stage, (size - 1, -1.0)], -math.inf, 0)
        if graph.limited:  # within the device's memory
            add([(x(i, s), graph.memory[i] / graph.capacity) for i in range(n)], -math.inf, 1.0)
    objective = np.zeros(size)
    objective[-1] = 1.0
    integrality = np.zeros(size)
    integrality[:nx] = 1
    bounds_hi = np.ones(size)
    bounds_hi[-1] = math.inf
    # HiGHS's presolve (scipy 1.17) has certified a split as optimal that brute force
    # beats (tests/test_pipeline.py keeps the five-node case), so the solve runs without it.
    result = milp(
        objective,
        integrality=integrality,
        bounds=Bounds(np.zeros(size), bounds_hi),
        constraints=rows.constraint(size),
        options={"time_limit": time_limit_s, "mip_rel_gap": MIP_REL_GAP, "presolve": False},
    )
    if result.x is None:
        raise RuntimeError(f"the MIP found no split within {time_limit_s:g} s: {result.message}")
    labels = [int(np.argmax(result.x[x(i, 0) : x(i, 0) + k])) for i in range(n)]
    stages = stages_from_labels(labels, k)
    bottleneck = bottleneck_of(graph, stages)
    proven = result.status == 0
    # HiGHS stops once the incumbent is within max(1e-6, MIP_REL_GAP x incumbent) of its
    # bound, and may then report the incumbent itself as the "dual bound". Only the
    # incumbent minus that tolerance is a proof that no split is better.
    incumbent = float(result.fun)
    slack = max(_HIGHS_ABS_GAP, MIP_REL_GAP * incumbent)
    dual = getattr(result, "mip_dual_bound", None)
    proof = min(float(dual) if dual is not None else 0.0, incumbent - slack) * unit
    bound = max(proof, combinatorial_lower_bound(graph, k))
    return Partition(
        stages=stages,
        bottleneck=bottleneck,
        lower_bound=min(bound, bottleneck),
        method="MIP (HiGHS)" + ("" if proven else ", time limit"),
    )
