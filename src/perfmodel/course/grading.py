"""Grade a folder of submitted workbooks, locally and without Docker.

Each submission is first read as plain JSON (a file that is not a notebook fails here,
with the reason), then run in its own sandboxed process (:mod:`perfmodel.course.sandbox`), and
its answers are scored by otter-grader's own test-file runner **in this process**, which
never runs student code. Results go to one CSV row per submission and one JSON feedback
file per student. Each row is also appended to ``<out>.partial`` as soon as it is graded,
so a batch that is interrupted keeps every row it finished; the final files are written
after the whole batch, from memory.
"""

from __future__ import annotations

import csv
import functools
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import nbformat

from perfmodel.course import isolation
from perfmodel.course.sandbox import Execution, Limits, execute_notebook
from perfmodel.exercises import feedback

__all__ = [
    "MAX_NOTEBOOK_BYTES",
    "QuestionResult",
    "SubmissionGrade",
    "PartialSheet",
    "display_name",
    "feedback_names",
    "grade_folder",
    "grade_submission",
    "score_answers",
    "write_csv",
    "write_feedback",
]

#: How the read-out marks a variable still set to ``...`` (JSON has no Ellipsis).
_UNANSWERED = {"$unanswered": True}
#: How the read-out marks a value too large to read back.
_TOO_LARGE = {"$too_large": True}


def _from_readout(value: Any) -> Any:
    if value == _UNANSWERED:
        return Ellipsis
    if value == _TOO_LARGE:
        return "<a value too large to grade>"
    return value


#: Larger files are not notebooks a learner wrote by hand; they are refused unread.
MAX_NOTEBOOK_BYTES = 20 * 1024**2


@dataclass(frozen=True, slots=True, kw_only=True)
class QuestionResult:
    """The score of one question and what each of its test cases said."""

    name: str
    score: float
    possible: float
    cases: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True, kw_only=True)
class SubmissionGrade:
    """One row of the grade sheet.

    ``status`` is ``"graded"`` when the notebook ran and its answers were scored (``reason``
    then lists anything that went wrong along the way) and ``"failed"`` when it could not be
    scored at all (every question gets 0 and ``reason`` says why).
    """

    submission: str
    status: str
    reason: str
    questions: tuple[QuestionResult, ...]
    seconds: float = 0.0
    isolation: str = "none"

    @property
    def total(self) -> float:
        return round(sum(question.score for question in self.questions), 4)

    @property
    def possible(self) -> float:
        return round(sum(question.possible for question in self.questions), 4)


def score_answers(tests: dict[str, str], answers: dict[str, Any]) -> tuple[QuestionResult, ...]:
    """Run otter test files against a dict of plain-data answers.

    Each test case gets its arguments by name from ``answers`` (``None`` where missing),
    exactly as it would in the notebook's global namespace.

    Parameters
    ----------
    tests : dict
        Question name to the source of its otter test file (see
        :func:`perfmodel.course.workbooks.load_tests`).
    answers : dict
        Variable name to value, as read back from an executed submission.
    """
    from otter.test_files.exception_test import ExceptionTestFile

    env = {name: _from_readout(value) for name, value in answers.items()}
    results = []
    with tempfile.TemporaryDirectory(prefix="perfmodel-tests-") as scratch:
        for name, source in tests.items():
            path = Path(scratch) / f"{name}.py"
            path.write_text(source, encoding="utf-8")
            test_file = ExceptionTestFile.from_file(str(path))
            test_file.run(dict(env))
            cases = tuple(
                {
                    "hidden": bool(result.test_case.hidden),
                    "passed": bool(result.passed),
                    "message": feedback(result.message),
                }
                for result in test_file.test_case_results
            )
            results.append(
                QuestionResult(
                    name=name,
                    score=round(float(test_file.score), 4),
                    possible=round(float(test_file.possible), 4),
                    cases=cases,
                )
            )
    return tuple(results)


def _read_notebook(path: Path, assignment: str) -> tuple[str, str]:
    """Check that ``path`` holds a notebook of this workbook: ("", "") or (status, reason)."""
    if not path.is_file():
        return "failed", "not a regular file"
    size = path.stat().st_size
    if size > MAX_NOTEBOOK_BYTES:
        return "failed", (
            f"the file is {size / 1024**2:.1f} MiB, over the "
            f"{MAX_NOTEBOOK_BYTES / 1024**2:.0f} MiB limit for a notebook (clear its outputs)"
        )
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return "failed", "not a notebook: the file is not UTF-8 text"
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        return "failed", f"not a notebook: invalid JSON at line {error.lineno} ({error.msg})"
    if not isinstance(data, dict) or "cells" not in data:
        return "failed", "not a notebook: the JSON has no `cells` list"
    try:
        nb = nbformat.reads(text, as_version=4)
        nbformat.validate(nb)
    except Exception as error:  # noqa: BLE001 - nbformat raises several unrelated types
        first_line = str(error).strip().splitlines()[0][:160] if str(error).strip() else ""
        return "failed", f"not a valid notebook: {type(error).__name__}: {first_line}"
    found = nb.metadata.get("otter", {}).get("assignment_name")
    if found and found != assignment:
        return "failed", f"this is workbook {found!r}, not {assignment!r}"
    return "", ""


def _describe_execution(execution: Execution) -> list[str]:
    notes = [f"cell {cell} timed out and was interrupted" for cell in execution.timed_out_cells]
    errors = [error for error in execution.cell_errors if error.name != "KeyboardInterrupt"]
    for error in errors[:3]:
        # IPython names each cell's code after a per-process hash; keep only the line number.
        message = re.sub(r"\([^()]*\.py, line (\d+)\)", r"(line \1)", error.message).strip()
        notes.append(f"cell {error.cell} raised {error.name}" + (f": {message}" if message else ""))
    if len(errors) > 3:
        notes.append(f"{len(errors) - 3} more cells raised errors")
    return notes


def display_name(path: Path) -> str:
    """A file name as printable text: bytes that are not UTF-8 become ``\\xNN`` escapes.

    Examples
    --------
    >>> display_name(Path(os.fsdecode(b"caf\\xe9.ipynb")))
    'caf\\\\xe9.ipynb'
    """
    return os.fsencode(path.name).decode("utf-8", "backslashreplace")


def grade_submission(
    path: Path, tests: dict[str, str], *, assignment: str, limits: Limits
) -> SubmissionGrade:
    """Grade one submitted notebook; never raises for anything the submission does.

    A submission that cannot be scored gets every question's result for "no answers", so
    its row and feedback still list each question and why it scored 0.
    """
    name = display_name(path)
    kind = "none" if isolation.probe() else "bubblewrap"
    status, reason = _read_notebook(path, assignment)
    if status:
        return SubmissionGrade(
            submission=name,
            status=status,
            reason=reason,
            questions=score_answers(tests, {}),
            isolation=kind,
        )
    execution = execute_notebook(path, limits, name=f"{assignment}.ipynb")
    notes = _describe_execution(execution)
    answers = execution.answers
    if execution.problem:
        notes.insert(0, execution.problem)
    return SubmissionGrade(
        submission=name,
        status="failed" if answers is None else "graded",
        reason="; ".join(notes),
        questions=score_answers(tests, answers or {}),
        seconds=execution.seconds,
        isolation=execution.isolation,
    )


def _submissions(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise ValueError(f"`submissions` must be a folder of notebooks (got {str(folder)!r}).")
    return sorted(
        (path for path in folder.iterdir() if not path.name.startswith(".") and not path.is_dir()),
        key=lambda path: os.fsencode(path.name),
    )


@functools.cache
def _warn_without_isolation() -> None:
    """Say once per process, loudly, that submissions will run unisolated."""
    why = isolation.probe()
    if why:
        print(
            f"\n*** WARNING: grading WITHOUT isolation: {why}.\n*** Submissions run as your "
            f"user and can read your files. The CSV records `isolation: none`.\n",
            file=sys.stderr,
        )


def grade_folder(
    tests: dict[str, str],
    submissions: Path,
    *,
    assignment: str,
    limits: Limits | None = None,
    jobs: int = 1,
    progress: bool = True,
    on_result: Callable[[SubmissionGrade], None] | None = None,
) -> list[SubmissionGrade]:
    """Grade every file in ``submissions`` (hidden files and folders skipped), sorted by name.

    Parameters
    ----------
    tests : dict
        The workbook's test files, hidden cases included.
    submissions : Path
        A folder with one submitted notebook per student.
    assignment : str
        The workbook's name; a notebook of another workbook fails with that reason.
    limits : Limits, optional
        Per-submission limits (defaults: :class:`~perfmodel.course.sandbox.Limits`).
    jobs : int, optional
        Submissions graded at once (each in its own sandbox).
    progress : bool, optional
        Show a tqdm progress bar on stderr.
    """
    from tqdm.auto import tqdm

    if jobs < 1:
        raise ValueError(f"`jobs` must be at least 1 (got jobs={jobs}).")
    limits = limits or Limits()
    paths = _submissions(submissions)

    _warn_without_isolation()

    def grade(path: Path) -> SubmissionGrade:
        try:
            return grade_submission(path, tests, assignment=assignment, limits=limits)
        except Exception as error:  # noqa: BLE001 - one broken row must not sink the batch
            return SubmissionGrade(
                submission=display_name(path),
                status="failed",
                reason=f"the grader failed on this file: {type(error).__name__}: {error}"[:300],
                questions=score_answers(tests, {}),
            )

    grades: list[SubmissionGrade] = []
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        with tqdm(
            total=len(paths), desc=f"grading {assignment}", unit="nb", disable=not progress
        ) as bar:
            for grade_result in pool.map(grade, paths):
                grades.append(grade_result)
                if on_result:
                    on_result(grade_result)
                bar.update()
    finally:
        # Interrupted: let the submissions already running finish, start no more.
        pool.shutdown(wait=True, cancel_futures=True)
    return grades


_COLUMNS = ("total", "possible", "status", "isolation", "reason")


def _row(grade: SubmissionGrade) -> list[str]:
    return [
        grade.submission,
        *(f"{question.score:g}" for question in grade.questions),
        f"{grade.total:g}",
        f"{grade.possible:g}",
        grade.status,
        grade.isolation,
        grade.reason,
    ]


class PartialSheet:
    """Rows appended to ``<out>.partial`` as they are graded, flushed one at a time."""

    def __init__(self, out: Path, questions: list[str]) -> None:
        self.path = out.with_name(out.name + ".partial")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = open(self.path, "w", newline="", encoding="utf-8")  # noqa: SIM115
        self._writer = csv.writer(self._handle)
        self._writer.writerow(["submission", *questions, *_COLUMNS])
        self._handle.flush()

    def add(self, grade: SubmissionGrade) -> None:
        self._writer.writerow(_row(grade))
        self._handle.flush()

    def finish(self) -> None:
        """Close and remove the partial file (the full CSV has been written)."""
        self._handle.close()
        self.path.unlink(missing_ok=True)


def write_csv(grades: Iterable[SubmissionGrade], path: Path) -> None:
    """Write one row per submission: scores per question, total, status and reason."""
    grades = list(grades)
    questions = [question.name for question in grades[0].questions] if grades else []
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(
        "w", newline="", encoding="utf-8", dir=path.parent, delete=False, suffix=".csv"
    ) as handle:
        writer = csv.writer(handle)
        writer.writerow(["submission", *questions, *_COLUMNS])
        for grade in grades:
            writer.writerow(_row(grade))
    os.replace(handle.name, path)


def feedback_names(grades: Iterable[SubmissionGrade]) -> list[str]:
    """One distinct feedback file name per submission: its whole name plus ``.json``.

    ``dup.ipynb`` and ``dup.json`` get ``dup.ipynb.json`` and ``dup.json.json``; names that
    still collide (after escaping) get ``~2``, ``~3``... before ``.json``.
    """
    names: list[str] = []
    taken: set[str] = set()
    for grade in grades:
        stem = grade.submission.replace("/", "_") or "unnamed"
        candidate, counter = f"{stem}.json", 1
        while candidate in taken:
            counter += 1
            candidate = f"{stem}~{counter}.json"
        taken.add(candidate)
        names.append(candidate)
    return names


def write_feedback(grades: Iterable[SubmissionGrade], folder: Path) -> None:
    """Write ``<submission stem>.json`` per student into ``folder``, replacing its contents.

    Raises
    ------
    ValueError
        If ``folder`` exists and holds anything but feedback JSON files (so a typo in the
        path can never wipe unrelated work).
    """
    if folder.exists():
        strangers = [p.name for p in folder.iterdir() if p.suffix != ".json" or p.is_dir()]
        if strangers:
            raise ValueError(
                f"`feedback` folder {str(folder)!r} holds files that are not feedback JSON "
                f"({', '.join(sorted(strangers)[:3])}); choose an empty or new folder."
            )
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=".feedback-", dir=folder.parent))
    grades = list(grades)
    for grade, file_name in zip(grades, feedback_names(grades), strict=True):
        record = {
            "submission": grade.submission,
            "status": grade.status,
            "isolation": grade.isolation,
            "reason": grade.reason,
            "total": grade.total,
            "possible": grade.possible,
            "questions": [
                {
                    "name": question.name,
                    "score": question.score,
                    "possible": question.possible,
                    "cases": list(question.cases),
                }
                for question in grade.questions
            ],
        }
        target = staging / file_name
        target.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", "utf-8")
    if folder.exists():
        shutil.rmtree(folder)
    staging.rename(folder)
