"""Gradescope's entry point: grade one submission the way ``perfmodel grade`` does.

An autograder zip made by :func:`perfmodel.grading.workbooks.release` runs
``python -m perfmodel.grading.gradescope /autograder`` instead of otter's in-kernel grading. It
executes the notebook in the sandboxed worker, reads the answers back as plain data and
scores them here, with the tests in ``/autograder/source/tests``. Results go to
``/autograder/results/results.json`` in Gradescope's format, written by this (root) process
after the student's code has exited; hidden cases are shown only after publication when the
workbook's config says ``show_hidden``, and their messages never hold an expected value.

Gradescope runs the autograder as root, often in a container without user namespaces, so
without bubblewrap. Before any student code runs, :func:`lock_down` therefore makes
``/autograder`` root's alone: the source (tests included), ``run_autograder``, the submission
and the results become unreadable and unwritable to other users, and the bundled package is
copied to ``/autograder/lib``, root-owned and read-only, from which this process re-imports
itself. The notebook then runs as a fresh unprivileged user (isolation level
``"unprivileged"``) or inside bubblewrap where it works, never as root. Where neither can run
(:func:`perfmodel.grading.levels.choose`), the runner grades nothing: it writes a zero result
that says why, prints the reason and the fix, and exits with status 2. Only
``--no-isolation`` after the folder (unsafe: the notebook then runs as root) grades anyway.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

__all__ = ["grade_autograder_folder", "lock_down", "lock_problem", "main"]

#: Entries of ``/autograder`` that only root may touch while student code runs.
_PRIVATE = ("source", "submission", "results", "run_autograder", "submission_metadata.json")


def lock_down(root: Path) -> Path:
    """Make ``root`` root's alone and give the sandbox a read-only copy of the package.

    ``root`` becomes traversable but not listable by others; its private entries (the
    source, the submission and its metadata, the results, ``run_autograder``) are made
    root's alone (a symbolic link among them is left as it is); ``lib``
    is replaced by a fresh, world-readable copy of the ``perfmodel`` package.

    Parameters
    ----------
    root : Path
        Gradescope's ``/autograder`` folder.

    Returns
    -------
    Path
        The folder to put on ``PYTHONPATH``: ``root/lib``, holding ``perfmodel``.
    """
    import perfmodel

    os.chmod(root, 0o711)
    for name in _PRIVATE:
        path = root / name
        if path.exists() and not path.is_symlink():
            os.chmod(path, 0o700)
    lib = root / "lib"
    if lib.exists():
        shutil.rmtree(lib)
    lib.mkdir(mode=0o755)
    shutil.copytree(
        Path(perfmodel.__file__).resolve().parent,
        lib / "perfmodel",
        ignore=shutil.ignore_patterns("__pycache__"),
    )
    for folder, _, files in os.walk(lib):
        os.chmod(folder, 0o755)
        for file in files:
            os.chmod(Path(folder, file), 0o644)
    return lib


def lock_problem(root: Path) -> str:
    """Why :func:`lock_down` does not hold for ``root`` now; ``""`` when it does.

    It holds when root owns ``root`` and no one else may write it; the private entries
    (those present, a link followed) are root's alone (mode ``0700`` or less); and this
    process's ``perfmodel`` comes from ``root/lib``, which root owns throughout and no one
    else may write. An environment variable proves none of this: it is checked each time.

    Parameters
    ----------
    root : Path
        Gradescope's ``/autograder`` folder.

    Returns
    -------
    str
        The first thing that does not hold, or an empty string.
    """
    import perfmodel

    def shut(path: Path, others: int) -> bool:
        info = os.stat(path)
        return info.st_uid == 0 and not info.st_mode & others

    lib = (root / "lib").resolve()
    try:
        if not shut(root, 0o022):
            return f"{root} is not root's, or others may write it"
        for name in _PRIVATE:
            if (root / name).exists() and not shut(root / name, 0o077):
                return f"{root / name} is not root's alone"
        if lib not in Path(perfmodel.__file__).resolve().parents:
            return f"perfmodel is imported from {Path(perfmodel.__file__).parent}, not {lib}"
        for folder, _, files in os.walk(lib):
            for path in [Path(folder), *(Path(folder, file) for file in files)]:
                if not shut(path, 0o022):
                    return f"{path} is not root's, or others may write it"
    except OSError as error:
        return f"it cannot be checked: {error}"
    return ""


def grade_autograder_folder(root: Path, *, isolation_level: str | None = None) -> dict[str, Any]:
    """Grade the notebook in ``root/submission`` and write ``root/results/results.json``.

    Parameters
    ----------
    root : Path
        Gradescope's ``/autograder`` folder (``source/`` unzipped, ``submission/``).
    isolation_level : str, optional
        The level the notebook runs at (default: the strongest that runs here, see
        :func:`perfmodel.grading.levels.choose`; ``"none"`` only when asked for).

    Returns
    -------
    dict
        The results, as written.

    Raises
    ------
    RuntimeError
        If the level cannot run here; the results then hold a zero score and the reason,
        and no student code has run.
    """
    import otter.test_files.exception_test  # noqa: F401 - imported before any student code

    from perfmodel.grading import levels
    from perfmodel.grading.grade import grade_submission, score_answers
    from perfmodel.grading.sandbox import Limits
    from perfmodel.grading.workbooks import tests_from_folder

    source = root / "source"
    config = json.loads((source / "otter_config.json").read_text(encoding="utf-8"))
    tests = tests_from_folder(source / "tests")
    # A zero result first, so that Gradescope reads one even if this process dies.
    _write_results(root, _results(score_answers(tests, {}), "not graded", config))
    try:
        level = levels.choose(isolation_level)
    except RuntimeError as error:
        why = f"not graded: the autograder cannot isolate student code here. {error}"
        _write_results(root, _results(score_answers(tests, {}), why, config))
        raise
    folder = root / "submission"
    notebooks = sorted(
        (path for path in folder.iterdir() if path.name.endswith(".ipynb")),
        key=lambda path: os.fsencode(path.name),
    )
    questions: tuple[Any, ...]
    if notebooks:
        try:
            grade = grade_submission(
                notebooks[0],
                tests,
                assignment=config["assignment_name"],
                limits=Limits(),
                isolation_level=level,
            )
            questions, output = grade.questions, grade.reason
            ran, _, counted = grade.isolation.partition("+")
            if ran != "bubblewrap":
                by = " (memory and tasks counted by the kernel in a cgroup)" if counted else ""
                output = f"graded at isolation level {ran!r}{by}. " + output
        except Exception as error:  # noqa: BLE001 - a results file is written whatever happens
            questions = score_answers(tests, {})
            output = f"the grader failed on this submission: {type(error).__name__}"
    else:
        questions = score_answers(tests, {})
        output = "no .ipynb file was submitted"
    results = _results(questions, output, config)
    _write_results(root, results)
    return results


def _results(questions: tuple[Any, ...], output: str, config: dict[str, Any]) -> dict[str, Any]:
    """Gradescope's results for scored questions."""
    from perfmodel.grading.text import safe_text

    after = "after_published" if config.get("show_hidden") else "hidden"
    return {
        "score": round(sum(question.score for question in questions), 4),
        "output": safe_text(output.strip()),
        "tests": [
            {
                "name": f"{question.name} - {number}",
                # Each case's own points, as the master gives them (practice cases have none).
                "score": case["points"] if case["passed"] else 0,
                "max_score": case["points"],
                "visibility": after if case["hidden"] else "visible",
                "output": safe_text(case["message"]),
            }
            for question in questions
            for number, case in enumerate(question.cases, start=1)
        ],
    }


def _write_results(root: Path, results: dict[str, Any]) -> None:
    target = root / "results" / "results.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(".results.json.partial")
    partial.write_text(json.dumps(results, indent=2), encoding="utf-8")
    os.replace(partial, target)
    os.chmod(target, 0o644)


def main(argv: list[str] | None = None) -> int:
    """Grade ``argv[0]`` (default ``/autograder``), locked down first when run as root.

    As root, unless the lock-down already holds (:func:`lock_problem`, checked whatever the
    environment says), it locks the folder down (:func:`lock_down`) and replaces this process
    with a fresh Python that imports the locked copy of the package, which checks the lock
    again and then grades (or, where it still does not hold, refuses).

    Parameters
    ----------
    argv : list of str, optional
        The command line's arguments after the program; None reads ``sys.argv``. A
        ``--no-isolation`` among them grades even where no isolation level can run (unsafe:
        the notebook runs as this user, root on Gradescope).

    Returns
    -------
    int
        The exit status: 0 once the results are written, 2 when no isolation level can run
        or the lock-down does not hold after a try (the reason goes to stderr and into the
        results). As root, a process that locks down is replaced and never returns.
    """
    args = sys.argv[1:] if argv is None else list(argv)
    unsafe = "--no-isolation" in args
    args = [arg for arg in args if arg != "--no-isolation"]
    root = Path(args[0] if args else "/autograder").resolve()
    lib = root / "lib"
    # Whether the lock holds is checked every time, whatever the environment says; the
    # marker only stops a second try (set by hand, it can only make the runner refuse).
    problem = lock_problem(root) if os.geteuid() == 0 else ""
    if problem and os.environ.get("PERFMODEL_LOCK_TRIED") == str(lib):
        why = f"not graded: the autograder could not make {root} root's alone: {problem}"
        _write_results(root, {"score": 0, "output": why, "tests": []})
        print(f"perfmodel.grading.gradescope: error: {why}", file=sys.stderr)
        return 2
    if problem:
        lock_down(root)
        # Start again on the locked copy, so that the grader and the sandbox import the
        # package from a folder no student can write; that process checks the lock again.
        env = {
            **os.environ,
            "PYTHONPATH": str(lib),
            "PERFMODEL_LOCKED": str(lib),
            "PERFMODEL_LOCK_TRIED": str(lib),
            "PYTHONSAFEPATH": "1",  # the working folder is never on the path
            "PYTHONDONTWRITEBYTECODE": "1",  # lib stays as lock_down made it
        }
        command = [sys.executable, "-m", "perfmodel.grading.gradescope", str(root)]
        os.execve(sys.executable, command + ["--no-isolation"] * unsafe, env)
    try:
        grade_autograder_folder(root, isolation_level="none" if unsafe else None)
    except RuntimeError as error:
        print(f"perfmodel.grading.gradescope: error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
