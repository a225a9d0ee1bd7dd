"""The slips each workbook question declares, read from its master: one table per question.

A master's test cells call :func:`~perfmodel.exercises.check_number`,
:func:`~perfmodel.exercises.check_count` and :func:`~perfmodel.exercises.check_implied_work`
with the slips the question expects. :func:`declared_checks` reads those calls back without
running the notebook, so a test can feed every slip to its check and an author can print
the table (``perfmodel slips WORKBOOK``) to see which slips a question names.
"""

from __future__ import annotations

import ast
import json
from dataclasses import dataclass
from pathlib import Path

from perfmodel import exercises
from perfmodel.exercises import Slip, unit_slips

__all__ = ["DeclaredCheck", "declared_checks", "slip_table"]

#: The checks that take slips, and the kind each is recorded as.
_KINDS = {"check_number": "number", "check_count": "count", "check_implied_work": "implied"}


@dataclass(frozen=True, slots=True, kw_only=True)
class DeclaredCheck:
    """One numeric check in a master's tests, as written.

    Parameters
    ----------
    question : str
        The otter question it belongs to (``"q1"``).
    variable : str
        The learner's variable it checks.
    kind : {"number", "count", "implied"}
        :func:`check_number`, :func:`check_count` or :func:`check_implied_work` (whose
        answer is the work a time implies at the learner's own rate).
    key : str
        The answer key.
    unit : str
        The unit of the value checked: ``unit`` of a number, ``work_unit`` of implied work,
        empty for a count.
    slips : tuple of Slip
        The slips the check names (a number's default ones when it declares none).
    hidden : bool
        Whether the check runs only in the autograder (a graded part).
    arguments : tuple of (str, str)
        Its other keyword arguments as source text (``("rate", "my_bandwidth")``), for a
        caller that rebuilds the call in the master's namespace.
    """

    question: str
    variable: str
    kind: str
    key: str
    unit: str
    slips: tuple[Slip, ...]
    hidden: bool
    arguments: tuple[tuple[str, str], ...] = ()

    @property
    def rel_tol(self) -> float | None:
        """The key's relative tolerance, fraction; None for a count (exact)."""
        return None if self.kind == "count" else float(self.key.split(":")[2])

    def missing_unit_slips(self, value: float) -> tuple[Slip, ...]:
        """The unit slips that apply to the answer (:func:`unit_slips`) and that no declared
        slip of the same factor names.

        Parameters
        ----------
        value : float
            The right answer, in the check's own unit (s, B, FLOP..., as :attr:`unit` says).

        Returns
        -------
        tuple of Slip
            The missing ones, in :func:`unit_slips`'s order; empty when the check names them
            all.
        """
        declared = {(slip.reciprocal, slip.factor) for slip in self.slips if slip.key is None}
        return tuple(
            slip
            for slip in unit_slips(self.unit, value)
            if (slip.reciprocal, slip.factor) not in declared
        )


def _slips(node: ast.expr, where: str) -> tuple[Slip, ...]:
    """A check's ``slips`` expression, evaluated among the exercises package's names only."""
    expression = compile(ast.Expression(node), "<master test>", "eval")
    value = eval(expression, {"__builtins__": {}}, dict(vars(exercises)))  # noqa: S307
    slips = tuple(value) if isinstance(value, (tuple, list)) else (value,)
    if not all(isinstance(slip, Slip) for slip in slips):
        raise ValueError(f"{where}: `slips` must be Slip objects (got {ast.unparse(node)[:80]!r}).")
    return slips


def declared_checks(master: str | Path) -> tuple[DeclaredCheck, ...]:
    """Every numeric check a master's test cells make, in order, with its declared slips.

    Parameters
    ----------
    master : str or Path
        A master notebook in otter-assign format (``exercises/masters/09_go_multi_node.ipynb``).

    Returns
    -------
    tuple of DeclaredCheck
        One per call of a numeric check inside ``# BEGIN TESTS`` ... ``# END TESTS``.

    Raises
    ------
    FileNotFoundError
        If ``master`` does not exist.
    ValueError
        If a check's name, key or unit is not a literal (the table could not be read).
    """
    notebook = json.loads(Path(master).read_text(encoding="utf-8"))
    found: list[DeclaredCheck] = []
    question, in_tests = "", False
    for cell in notebook["cells"]:
        source = "".join(cell["source"])
        if cell["cell_type"] == "raw":
            text = source.strip()
            if text.startswith("# BEGIN QUESTION"):
                question = next(
                    (line.split(":", 1)[1].strip() for line in text.splitlines()
                     if line.startswith("name:")),
                    "",
                )  # fmt: skip
            in_tests = {"# BEGIN TESTS": True, "# END TESTS": False}.get(text, in_tests)
            continue
        if cell["cell_type"] != "code" or not in_tests:
            continue
        for node in ast.walk(ast.parse(source)):
            kind = _KINDS.get(getattr(getattr(node, "func", None), "id", ""))
            if not isinstance(node, ast.Call) or kind is None:
                continue
            try:
                variable, key = ast.literal_eval(node.args[0]), ast.literal_eval(node.args[2])
                given = {kw.arg: kw.value for kw in node.keywords if kw.arg}
                unit_node = given.get("work_unit" if kind == "implied" else "unit")
                unit = "" if unit_node is None else ast.literal_eval(unit_node)
            except (ValueError, IndexError):
                raise ValueError(
                    f"{master}: a check in {question or 'a test cell'} must give its name, key "
                    f"and unit as literals (got {ast.unparse(node)[:80]!r})."
                ) from None
            slips: tuple[Slip, ...]
            if "slips" in given:
                slips = _slips(given["slips"], f"{master}: {variable}")
            else:
                slips = () if kind == "count" else exercises.default_slips(unit)
            rest = ("slips", "unit", "work_unit")
            found.append(
                DeclaredCheck(
                    question=question,
                    variable=variable,
                    kind=kind,
                    key=key,
                    unit=unit,
                    slips=slips,
                    hidden=source.lstrip().startswith("# HIDDEN"),
                    arguments=tuple(
                        (name, ast.unparse(value))
                        for name, value in given.items()
                        if name not in rest
                    ),
                )
            )
    return tuple(found)


def _describe(slip: Slip) -> str:
    if slip.reciprocal:
        return "reciprocal"
    if slip.key is not None:
        return "keyed"
    way = {"both": "either way", "large": "too large", "small": "too small"}[str(slip.direction)]
    return f"x{slip.factor:.4g} {way}"


def slip_table(master: str | Path) -> str:
    """The slips every question of a master names, as one Markdown table per question.

    Parameters
    ----------
    master : str or Path
        A master notebook.

    Returns
    -------
    str
        For each question a heading and a table: the variable checked (a graded part marked),
        each slip's name, whether it is a unit slip (its factor printed) or a conceptual one,
        and the factor or ``keyed`` (a value of its own, never shown).
    """
    lines: list[str] = []
    question = None
    for check in declared_checks(master):
        if check.question != question:
            question = check.question
            lines += [
                "",
                f"### {question}",
                "",
                "| variable | slip | kind | factor |",
                "|---|---|---|---|",
            ]
        variable = f"{check.variable} (graded)" if check.hidden else check.variable
        for slip in check.slips:
            kind = "unit" if slip.unit else ("reciprocal" if slip.reciprocal else "conceptual")
            lines.append(f"| {variable} | {slip.name} | {kind} | {_describe(slip)} |")
    return "\n".join(lines).lstrip("\n") + "\n"
