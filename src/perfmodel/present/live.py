"""Which cells of a lecture a deck runs live, and which it shows as the lecture stored them.

A deck opens as fast as its live part runs. The lecture's code cells already hold their
outputs (executed and checked by the tests), so a deck shows those as they are and runs on
its kernel only what its explorers need:

* each cell that opens an explorer;
* backwards, every earlier cell that binds or changes a name a live cell reads (lecture 08's
  explorer plots the speed-ups measured three cells before it, so that measurement runs);
* forwards, every later cell that reads a value a live cell computed, so that no stored
  output contradicts a live one (lecture 08's fitted plot of those speed-ups runs too).
  A module a live cell imports is the same module whoever imports it, so reading one does
  not count.

Both are repeated until nothing changes. The analysis is conservative where Python is
dynamic: a cell that stores into a name (``x[i] = ...``, ``x.a = ...``, ``x += ...``) counts
as changing it and every such cell is kept, not only the last; a cell that does not parse,
or imports ``*``, or runs a cell magic, is kept when an explorer comes after it.

A cell is left out of the live part by emptying its source: Voilà (like nbclient) does not
execute a code cell without source, and shows the outputs it holds. A stored widget view has
no kernel behind it, so it is dropped (a progress bar, in practice).
"""

from __future__ import annotations

import ast
import builtins
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["EXPLORER_CALL", "freeze_outputs", "live_cells"]

#: A cell that opens an explorer calls a function whose name ends in ``_explorer``.
EXPLORER_CALL = re.compile(r"\b\w+_explorer\(")

_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
_BUILTINS = frozenset(dir(builtins))


@dataclass
class _Cell:
    """What one code cell does to the notebook's names."""

    values: set[str] = field(default_factory=set)  # bound or changed to a computed value
    modules: set[str] = field(default_factory=set)  # bound by an import
    reads: set[str] = field(default_factory=set)  # read from before the cell
    deferred: set[str] = field(default_factory=set)  # read when a function it defines runs
    opaque: bool = False  # not analysable: kept when an explorer comes after it


def _python(source: str) -> ast.Module | None:
    """``source`` parsed after IPython's transforms (``%magic``, ``!shell``), as the kernel
    runs it; None when it does not parse or is a cell magic (``%%time`` and the like, whose
    body becomes a string)."""
    from IPython.core.inputtransformer2 import TransformerManager

    if source.lstrip().startswith("%%"):
        return None
    transformed: str = TransformerManager().transform_cell(source)  # type: ignore[no-untyped-call]
    try:
        return ast.parse(transformed)
    except SyntaxError:
        return None


def _stored_name(target: ast.expr) -> str | None:
    """The name a store into ``target`` changes: ``x`` for ``x``, ``x[i]``, ``x.a.b``."""
    while isinstance(target, ast.Subscript | ast.Attribute | ast.Starred):
        target = target.value
    return target.id if isinstance(target, ast.Name) else None


def _declared_global(body: list[ast.AST]) -> set[str]:
    """The names a function or class body declares ``global``."""
    found: set[str] = set()
    for part in body:
        for node in ast.walk(part):
            if isinstance(node, ast.Global):
                found.update(node.names)
    return found


class _Names(ast.NodeVisitor):
    """The names one statement reads, stores and imports at module level. A function's or a
    class's body counts for the globals it reads; a comprehension's variables stay inside."""

    def __init__(self) -> None:
        self.loads: set[str] = set()
        self.stores: set[str] = set()
        self.imports: set[str] = set()
        self.deferred: set[str] = set()  # globals a function or class body reads when it runs

    def visit_Name(self, node: ast.Name) -> None:
        if not isinstance(node.ctx, ast.Load):
            self.stores.add(node.id)
        elif node.id not in self.stores:  # not a loop variable bound just before
            self.loads.add(node.id)

    def _changed(self, target: ast.expr) -> None:
        """A store into part of a name (``x[i] = ``, ``x.a = ``) reads and changes it."""
        name = _stored_name(target)
        if name is not None and not isinstance(target, ast.Name):
            self.loads.add(name)
            self.stores.add(name)
        self.visit(target)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for target in node.targets:
            self._changed(target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        self._changed(node.target)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        name = _stored_name(node.target)
        if name is not None:  # x += 1 reads x first
            self.loads.add(name)
            self.stores.add(name)
        self.visit(node.target)

    def visit_Delete(self, node: ast.Delete) -> None:
        for target in node.targets:
            self._changed(target)

    def visit_Import(self, node: ast.Import | ast.ImportFrom) -> None:
        self.imports.update((a.asname or a.name).split(".")[0] for a in node.names)

    visit_ImportFrom = visit_Import

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> None:
        if node.name:
            self.stores.add(node.name)
        self.generic_visit(node)

    def _scope(self, body: list[ast.AST], own: set[str]) -> None:
        """Code that runs in a scope of its own: what it reads but neither binds nor takes as
        ``own`` is a global it reads; what it declares ``global`` it stores here."""
        inner = _Names()
        for part in body:
            inner.visit(part)
        declared = _declared_global(body)
        self.deferred |= (inner.loads - inner.stores - own) | (inner.loads & declared)
        self.deferred |= inner.deferred
        self.stores |= inner.stores & declared

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        for expr in [*node.decorator_list, *node.args.defaults, *node.args.kw_defaults]:
            if expr is not None:
                self.visit(expr)
        parameters = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        self._scope(list(node.body), parameters)
        self.stores.add(node.name)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        for expr in [*node.decorator_list, *node.bases]:
            self.visit(expr)
        self._scope(list(node.body), set())
        self.stores.add(node.name)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        parameters = {a.arg for a in ast.walk(node.args) if isinstance(a, ast.arg)}
        self._scope([node.body], parameters)
        self.loads |= self.deferred  # a lambda is as likely to run now as later

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp
    ) -> None:
        self.visit(node.generators[0].iter)  # evaluated in the enclosing scope
        targets = {
            n.id for g in node.generators for n in ast.walk(g.target) if isinstance(n, ast.Name)
        }
        inner: list[ast.AST] = [g.iter for g in node.generators[1:]]
        inner += [i for g in node.generators for i in g.ifs]
        inner += [node.key, node.value] if isinstance(node, ast.DictComp) else [node.elt]
        body = _Names()
        for part in inner:
            body.visit(part)
            for walrus in ast.walk(part):  # := inside binds in the enclosing scope
                if isinstance(walrus, ast.NamedExpr) and isinstance(walrus.target, ast.Name):
                    self.stores.add(walrus.target.id)
        self.loads |= body.loads - targets
        self.deferred |= body.deferred

    visit_ListComp = visit_SetComp = visit_GeneratorExp = visit_DictComp = _comprehension


def _analyse(source: str) -> _Cell:
    """The names a cell binds (by value or by import) and reads from before it.

    Statement by statement: a name read after the cell bound it is the cell's own (a loop
    variable); one read before, or changed in place (``x += 1``, ``x[0] = 1``), is read.
    """
    tree = _python(source)
    cell = _Cell()
    if tree is None:
        cell.opaque = True
        return cell
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and any(a.name == "*" for a in statement.names):
            cell.opaque = True
        names = _Names()
        names.visit(statement)
        cell.reads |= names.loads - cell.values - cell.modules - _BUILTINS
        cell.deferred |= names.deferred - _BUILTINS
        cell.values |= names.stores
        cell.modules |= names.imports - names.stores
    return cell


def live_cells(sources: Sequence[str | None]) -> set[int]:
    """The indices of the cells a deck must run: the explorers, what they read, and what reads
    what they compute.

    Parameters
    ----------
    sources : sequence of str or None
        Each cell's source in order, None for a cell that is not code.

    Returns
    -------
    set of int
        Every code cell that calls an ``*_explorer(`` function, closed under "binds or
        changes a name a kept cell reads" (earlier cells) and "reads a value a kept cell
        computed last" (later cells); empty when no cell opens an explorer.

    Examples
    --------
    >>> live_cells(["import math", "x = math.pi", "print(x)", None, "show_explorer(x)"])
    {0, 1, 2, 4}
    >>> live_cells(["import math", "print(math.pi)", "show_explorer(math.e)"])
    {0, 2}
    """
    cells = {i: _analyse(s) for i, s in enumerate(sources) if s is not None}
    kept = {i for i, s in enumerate(sources) if s is not None and EXPLORER_CALL.search(s)}
    if not kept:
        return set()
    kept |= {i for i, cell in cells.items() if cell.opaque and i < max(kept)}

    def binders(name: str, before: int) -> list[int]:
        return [j for j in cells if j < before and name in cells[j].values | cells[j].modules]

    def reads_live_value(index: int, live: set[int]) -> bool:
        for name in cells[index].reads:
            last = binders(name, index)
            if last and last[-1] in live and name in cells[last[-1]].values:
                return True  # a module is the same module whoever imported it
        return False

    last_explorer = max(kept)
    while True:
        grown = set(kept)
        for index in kept:  # backwards: every cell that gave a name read here its value
            for name in cells[index].reads:
                grown.update(binders(name, index))
            for name in cells[index].deferred:  # read when called: by the last explorer
                grown.update(binders(name, last_explorer + 1))
        grown |= {i for i in cells if i not in grown and reads_live_value(i, grown)}
        if grown == kept:
            return kept
        kept = grown


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
