"""Grade a folder of submitted workbooks, locally and without Docker.

Each submission is first read as plain JSON (a file that is not a notebook fails here,
with the reason), then run in its own sandboxed process (:mod:`perfmodel.grading.sandbox`), and
its answers are scored by otter-grader's own test-file runner **in this process**, which
never runs student code. Results go to one CSV row per submission and one JSON feedback
file per student. Each row is also appended to ``<out>.partial`` as soon as it is graded,
so a batch that is interrupted keeps every row it finished; the final files are written
after the whole batch, from memory.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import re
import shutil
import stat
import sys
import tempfile
from collections.abc import Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfmodel.exercises import feedback
from perfmodel.grading import levels, private
from perfmodel.grading.sandbox import Execution, Limits, execute_notebook
from perfmodel.grading.text import display_name, display_names, safe_text, sheet_cell

__all__ = [
    "MAX_NOTEBOOK_BYTES",
    "QuestionResult",
    "SubmissionGrade",
    "PartialSheet",
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
    """The score of one question and what each of its test cases said.

    Parameters
    ----------
    name : str
        The question's name, its test file's stem (``"q1"``).
    score : float
        Points earned, rounded to 4 decimals, dimensionless.
    possible : float
        Points the question is worth, rounded to 4 decimals, dimensionless.
    cases : tuple of dict
        One per test case, in order: ``"hidden"`` (bool), ``"points"`` (float),
        ``"passed"`` (bool) and ``"message"`` (str, the feedback shown for it).
    """

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

    Parameters
    ----------
    submission : str
        The submitted file's name, as :func:`display_name` prints it.
    status : {"graded", "failed"}
        Whether the answers were scored.
    reason : str
        What went wrong, ``"; "``-separated; empty when nothing did.
    questions : tuple of QuestionResult
        Each question's result, in the tests' order.
    seconds : float
        Wall-clock time of the sandboxed run, s; 0 when it did not run.
    isolation : str
        The isolation level it ran at (:data:`perfmodel.grading.isolation.LEVELS`), followed
        by ``"+cgroup"`` when the kernel counted its memory and tasks in a control group of
        its own (:mod:`perfmodel.grading.cgroup`; the watchdog alone counted them otherwise),
        or ``"not run"`` when it was refused before running.
    """

    submission: str
    status: str
    reason: str
    questions: tuple[QuestionResult, ...]
    seconds: float = 0.0
    isolation: str = "none"

    @property
    def total(self) -> float:
        """Points earned over every question, rounded to 4 decimals, dimensionless."""
        return round(sum(question.score for question in self.questions), 4)

    @property
    def possible(self) -> float:
        """Points the questions are worth together, rounded to 4 decimals, dimensionless."""
        return round(sum(question.possible for question in self.questions), 4)


def score_answers(tests: dict[str, str], answers: dict[str, Any]) -> tuple[QuestionResult, ...]:
    """Run otter test files against a dict of plain-data answers.

    Each test case gets its arguments by name from ``answers`` (``None`` where missing),
    exactly as it would in the notebook's global namespace.

    Parameters
    ----------
    tests : dict
        Question name to the source of its otter test file (see
        :func:`perfmodel.grading.workbooks.load_tests`).
    answers : dict
        Variable name to value, as read back from an executed submission.

    Returns
    -------
    tuple of QuestionResult
        One per test file, in the order of ``tests``.
    """
    from otter.test_files.exception_test import ExceptionTestFile

    env = {name: _from_readout(value) for name, value in answers.items()}
    results = []
    # Parsed from strings, not files: scoring needs no disk, so a full TMPDIR cannot stop it.
    for name, source in tests.items():
        test_file = ExceptionTestFile.from_string(source, path=f"{name}.py")
        test_file.run(dict(env))
        cases = tuple(
            {
                "hidden": bool(result.test_case.hidden),
                "points": round(float(result.test_case.points or 0), 4),
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


def _read_submission(path: Path) -> tuple[bytes, str]:
    """The file's bytes, or why it is refused unread: links, folders, FIFOs, huge files.

    Nothing is followed and nothing blocks: a symbolic link (which could point at the answer
    key or a classmate's work) is refused by its own entry, a FIFO is never opened for
    reading.
    """
    try:
        info = os.lstat(path)
    except OSError as error:
        return b"", f"could not be read: {error.strerror or type(error).__name__}"
    if stat.S_ISLNK(info.st_mode):
        return b"", "refused: a symbolic link (links are never followed)"
    if stat.S_ISDIR(info.st_mode):
        return b"", "not a notebook: a folder"
    if not stat.S_ISREG(info.st_mode):
        return b"", "not a notebook: not a regular file"
    if info.st_size > MAX_NOTEBOOK_BYTES:
        return b"", (
            f"the file is {info.st_size / 1024**2:.1f} MiB, over the "
            f"{MAX_NOTEBOOK_BYTES / 1024**2:.0f} MiB limit for a notebook (clear its outputs)"
        )
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        with os.fdopen(fd, "rb") as handle:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                return b"", "not a notebook: not a regular file"
            data = handle.read(MAX_NOTEBOOK_BYTES + 1)
    except OSError as error:
        return b"", f"could not be read: {error.strerror or type(error).__name__}"
    if len(data) > MAX_NOTEBOOK_BYTES:
        return b"", f"the file grew past the {MAX_NOTEBOOK_BYTES / 1024**2:.0f} MiB limit"
    return data, ""


def _describe_execution(execution: Execution) -> list[str]:
    notes = [f"cell {cell} timed out and was interrupted" for cell in execution.timed_out_cells]
    errors = [error for error in execution.cell_errors if error.name != "KeyboardInterrupt"]
    for error in errors[:3]:
        # IPython names each cell's code after a per-process hash; keep only the line number.
        message = re.sub(r"\([^()]*\.py, line (\d+)\)", r"(line \1)", error.message).strip()
        line = f"cell {error.cell} raised {safe_text(error.name, 100)}"
        notes.append(line + (f": {safe_text(message, 300)}" if message else ""))
    if len(errors) > 3:
        notes.append(f"{len(errors) - 3} more cells raised errors")
    return notes


def grade_submission(
    path: Path,
    tests: dict[str, str],
    *,
    assignment: str,
    limits: Limits,
    isolation_level: str | None = None,
    name: str | None = None,
) -> SubmissionGrade:
    """Grade one submitted notebook; never raises for anything the submission does.

    A submission that cannot be scored gets every question's result for "no answers", so
    its row and feedback still list each question and why it scored 0.

    Parameters
    ----------
    path : Path
        The submitted file; links, folders and files over :data:`MAX_NOTEBOOK_BYTES` are
        refused unread.
    tests : dict
        Question name to the source of its otter test file, hidden cases included.
    assignment : str
        The workbook's name; a notebook of another workbook fails with that reason.
    limits : Limits
        The sandbox's limits for this submission.
    isolation_level : str, optional
        The level it runs at (default: :func:`perfmodel.grading.levels.choose`'s).
    name : str, optional
        The name its row prints (default: :func:`~perfmodel.grading.text.display_name`'s;
        a batch passes :func:`~perfmodel.grading.text.display_names`', which writes names
        that would look alike apart).

    Returns
    -------
    SubmissionGrade
        The submission's row: its scores, status and reason.
    """
    name = display_name(path) if name is None else name
    data, refused = _read_submission(path)
    if refused:
        return SubmissionGrade(
            submission=name,
            status="failed",
            reason=refused,
            questions=score_answers(tests, {}),
            isolation="not run",
        )
    execution = execute_notebook(
        data, limits, name=f"{assignment}.ipynb", assignment=assignment,
        isolation_level=isolation_level,
    )  # fmt: skip
    notes = _describe_execution(execution)
    answers = execution.answers
    if execution.problem:
        notes.insert(0, safe_text(execution.problem, 500))
    return SubmissionGrade(
        submission=name,
        status="failed" if answers is None else "graded",
        reason=safe_text("; ".join(notes)),
        questions=score_answers(tests, answers or {}),
        seconds=execution.seconds,
        isolation=execution.isolation + ("+cgroup" if execution.counted == "cgroup" else ""),
    )


def _submissions(folder: Path) -> list[Path]:
    if not folder.is_dir():
        raise ValueError(f"`submissions` must be a folder of notebooks (got {str(folder)!r}).")
    # Every entry gets a row, hidden ones, folders and links included (each with its reason).
    return sorted(folder.iterdir(), key=lambda path: os.fsencode(path.name))


def grade_folder(
    tests: dict[str, str],
    submissions: Path,
    *,
    assignment: str,
    limits: Limits | None = None,
    jobs: int = 1,
    progress: bool = True,
    on_result: Callable[[SubmissionGrade], None] | None = None,
    isolation_level: str | None = None,
) -> list[SubmissionGrade]:
    """Grade every entry in ``submissions``, sorted by name: one row each, whatever it is.

    Parameters
    ----------
    tests : dict
        The workbook's test files, hidden cases included.
    submissions : Path
        A folder with one submitted notebook per student.
    assignment : str
        The workbook's name; a notebook of another workbook fails with that reason.
    limits : Limits, optional
        Per-submission limits (defaults: :class:`~perfmodel.grading.sandbox.Limits`).
    jobs : int, optional
        Submissions graded at once (each in its own sandbox).
    progress : bool, optional
        Show a tqdm progress bar on stderr.
    on_result : callable, optional
        Called with each grade as it comes, in order (to append it to a
        :class:`PartialSheet`, say); an exception it raises is printed, not raised.
    isolation_level : str, optional
        The level every submission runs at (default: the strongest that runs here; ``"none"``
        only when asked for, see :func:`perfmodel.grading.levels.choose`).

    Returns
    -------
    list of SubmissionGrade
        One per entry of ``submissions``, sorted by the entry's name in bytes.

    Raises
    ------
    ValueError
        If ``jobs`` is below 1 or ``submissions`` is not a folder.
    RuntimeError
        If the level cannot run here (with None: if no isolating level can), before any
        submission runs; the message says why and how to fix it.
    """
    # Everything scoring imports is imported now, before any student code runs: a module
    # planted later in a folder on sys.path can never be picked up by this process.
    import otter.test_files.exception_test  # noqa: F401
    from tqdm.auto import tqdm

    if jobs < 1:
        raise ValueError(f"`jobs` must be at least 1 (got jobs={jobs}).")
    limits = limits or Limits()
    paths = _submissions(submissions)
    names = display_names(paths)
    level = levels.choose(isolation_level)
    levels.warn(level)

    def grade(path: Path) -> SubmissionGrade:
        try:
            return grade_submission(
                path, tests, assignment=assignment, limits=limits, isolation_level=level,
                name=names[path],
            )  # fmt: skip
        except Exception as error:  # noqa: BLE001 - one broken row must not sink the batch
            return SubmissionGrade(
                submission=names[path],
                status="failed",
                reason=safe_text(
                    f"the grader failed on this file: {type(error).__name__}: "
                    f"{safe_text(error, 300)}"
                ),
                questions=score_answers(tests, {}),
                isolation="not run",
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
                    try:
                        on_result(grade_result)
                    except Exception as error:  # noqa: BLE001 - a side channel, not the batch
                        print(f"could not record a row as it came: {error!r}", file=sys.stderr)
                bar.update()
    finally:
        # Interrupted: let the submissions already running finish, start no more.
        pool.shutdown(wait=True, cancel_futures=True)
    return grades


_COLUMNS = ("total", "possible", "status", "isolation", "reason")


def _row(grade: SubmissionGrade) -> list[str]:
    return [
        sheet_cell(safe_text(grade.submission)),
        *(f"{question.score:g}" for question in grade.questions),
        f"{grade.total:g}",
        f"{grade.possible:g}",
        grade.status,
        grade.isolation,
        sheet_cell(safe_text(grade.reason)),
    ]


class PartialSheet:
    """Rows appended to ``<out>.partial`` as they are graded, flushed one at a time.

    Creating one writes the header row at once, creating the folder if needed.

    Parameters
    ----------
    out : Path
        The final CSV; the partial file sits beside it, its name plus ``.partial``.
    questions : list of str
        The question names, one column each.
    """

    def __init__(self, out: Path, questions: list[str]) -> None:
        self.path = out.with_name(out.name + ".partial")
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._handle = private.open_text(self.path)  # the grader's alone, like the CSV
        self._writer = csv.writer(self._handle)
        self._writer.writerow(["submission", *questions, *_COLUMNS])
        self._handle.flush()

    def add(self, grade: SubmissionGrade) -> None:
        """Append one submission's row and flush it to disk.

        Parameters
        ----------
        grade : SubmissionGrade
            The row to append.
        """
        self._writer.writerow(_row(grade))
        self._handle.flush()

    def finish(self) -> None:
        """Close and remove the partial file (the full CSV has been written)."""
        self._handle.close()
        self.path.unlink(missing_ok=True)


def write_csv(grades: Iterable[SubmissionGrade], path: Path) -> None:
    """Write one row per submission: scores per question, total, status and reason.

    The file is written beside ``path`` and moved into place whole, so a reader never sees
    half of it.

    Parameters
    ----------
    grades : iterable of SubmissionGrade
        The rows; the first one's questions name the columns.
    path : Path
        The CSV to write, replaced if it exists; its folder is created if needed.
    """
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
    still collide (after escaping) get ``~2``, ``~3``... before ``.json``. A ``/`` becomes
    ``_``, an empty name ``unnamed``, and a name over 200 bytes is cut and given a hash.

    Parameters
    ----------
    grades : iterable of SubmissionGrade
        The submissions, in order.

    Returns
    -------
    list of str
        One file name per submission, in the same order, all distinct.
    """
    names: list[str] = []
    taken: set[str] = set()
    for grade in grades:
        stem = grade.submission.replace("/", "_") or "unnamed"
        if len(stem.encode()) > 200:  # file names stop at 255 bytes
            digest = hashlib.sha256(stem.encode()).hexdigest()[:12]
            stem = stem.encode()[:160].decode("utf-8", "ignore") + f"~{digest}"
        candidate, counter = f"{stem}.json", 1
        while candidate in taken:
            counter += 1
            candidate = f"{stem}~{counter}.json"
        taken.add(candidate)
        names.append(candidate)
    return names


def write_feedback(grades: Iterable[SubmissionGrade], folder: Path) -> None:
    """Write one JSON file per student into ``folder``, replacing its contents.

    Each file is named by :func:`feedback_names` (the submission's whole name plus
    ``.json``) and holds the status, reason, totals, and every question's cases with their
    messages. The files are written into a new folder beside ``folder``, which then
    replaces it.

    Parameters
    ----------
    grades : iterable of SubmissionGrade
        The submissions' grades.
    folder : Path
        The feedback folder: new, or holding only feedback JSON files.

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
            "submission": safe_text(grade.submission),
            "status": grade.status,
            "isolation": grade.isolation,
            "reason": safe_text(grade.reason),
            "total": grade.total,
            "possible": grade.possible,
            "questions": [
                {
                    "name": question.name,
                    "score": question.score,
                    "possible": question.possible,
                    "cases": [
                        {**case, "message": safe_text(case["message"])} for case in question.cases
                    ],
                }
                for question in grade.questions
            ],
        }
        target = staging / file_name
        private.write_text(target, json.dumps(record, indent=2, ensure_ascii=False) + "\n")
    if folder.exists():
        shutil.rmtree(folder)
    staging.rename(folder)
