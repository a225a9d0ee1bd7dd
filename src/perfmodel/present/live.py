"""Which cells of a lecture a deck runs live, and which it shows as the lecture stored them.

A deck opens as fast as its live part runs. The lecture's code cells already hold their
outputs (executed and checked by the tests), so a deck shows those as they are and runs on
its kernel only what its explorers need: each cell that opens an explorer, and every earlier
cell that defines a name those cells read, transitively (a backward slice over the names
each cell binds and reads). Lecture 08's explorer, for example, plots the speed-ups measured
three cells before it, so that measurement runs live too; lecture 04's needs only its own
import.

A cell is left out of the live part by emptying its source: Voilà (like nbclient) does not
execute a code cell without source, and shows the outputs it holds. A stored widget view has
no kernel behind it, so it is dropped (a progress bar, in practice).
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Sequence
from typing import Any

__all__ = ["EXPLORER_CALL", "freeze_outputs", "live_cells"]

#: A cell that opens an explorer calls a function whose name ends in ``_explorer``.
EXPLORER_CALL = re.compile(r"\b\w+_explorer\(")

_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def _python(source: str) -> ast.Module:
    """``source`` parsed after IPython's transforms (``%magic``, ``!shell``), as the kernel
    runs it."""
    from IPython.core.inputtransformer2 import TransformerManager

    transformed: str = TransformerManager().transform_cell(source)  # type: ignore[no-untyped-call]
    return ast.parse(transformed)


def _binds_and_reads(source: str) -> tuple[set[str], set[str]]:
    """The names a cell binds, and the names it reads that it does not bind itself.

    A name the cell both reads and binds counts as its own (a loop variable, say): a lecture
    cell does not read a name from an earlier cell and then rebind it.
    """
    tree = _python(source)
    binds: set[str] = set()
    reads: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            (binds if isinstance(node.ctx, ast.Store | ast.Del) else reads).add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            binds.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                binds.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.arg):
            binds.add(node.arg)
    return binds, reads - binds - set(dir(builtins))


def live_cells(sources: Sequence[str | None]) -> set[int]:
    """The indices of the cells a deck must run: the explorers and what they read.

    Parameters
    ----------
    sources : sequence of str or None
        Each cell's source in order, None for a cell that is not code.

    Returns
    -------
    set of int
        Every code cell that calls an ``*_explorer(`` function, and every earlier code cell
        that last bound a name one of the kept cells reads, transitively.

    Examples
    --------
    >>> live_cells(["import math", "x = math.pi", "print(x)", None, "show_explorer(x)"])
    {0, 1, 4}
    """
    facts = {i: _binds_and_reads(s) for i, s in enumerate(sources) if s is not None}
    wanted = [i for i, s in enumerate(sources) if s is not None and EXPLORER_CALL.search(s)]
    kept: set[int] = set()
    while wanted:
        index = wanted.pop()
        if index in kept:
            continue
        kept.add(index)
        for name in facts[index][1]:
            earlier = (j for j in range(index - 1, -1, -1) if j in facts and name in facts[j][0])
            binder = next(earlier, None)
            if binder is not None:
                wanted.append(binder)
    return kept


def freeze_outputs(notebook: Any) -> int:
    """Empty the source of every code cell of ``notebook`` a deck need not run; return how
    many cells stay live.

    Parameters
    ----------
    notebook : nbformat.NotebookNode
        An executed lecture, changed in place: cells outside :func:`live_cells` keep their
        outputs, less any stored widget view, and lose their source and execution count.

    Returns
    -------
    int
        The number of code cells left to run.
    """
    cells = notebook.cells
    sources = ["".join(c.source) if c.cell_type == "code" else None for c in cells]
    live = live_cells(sources)
    for index, cell in enumerate(cells):
        if cell.cell_type != "code" or index in live:
            continue
        cell.source = ""
        cell.execution_count = None
        cell.outputs = [o for o in cell.outputs if _WIDGET_VIEW not in o.get("data", {})]
    return len(live)
