"""Gradescope's entry point: grade one submission the way ``perfmodel grade`` does.

An autograder zip made by :func:`perfmodel.course.workbooks.release` runs
``python -m perfmodel.course.gradescope /autograder`` instead of otter's in-kernel grading. It
executes the notebook in the sandboxed worker, reads the answers back as plain data and
scores them here, with the tests in ``/autograder/source/tests``, which the submission's
kernel never sees in its working folder. Results go to ``/autograder/results/results.json``
in Gradescope's format; hidden cases are shown only after publication when the workbook's
config says ``show_hidden``, and their messages never hold an expected value.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

__all__ = ["grade_autograder_folder", "main"]


def grade_autograder_folder(root: Path) -> dict[str, Any]:
    """Grade the notebook in ``root/submission`` and write ``root/results/results.json``.

    Parameters
    ----------
    root : Path
        Gradescope's ``/autograder`` folder (``source/`` unzipped, ``submission/``).

    Returns
    -------
    dict
        The results, as written.
    """
    from perfmodel.course.grading import grade_submission, score_answers
    from perfmodel.course.sandbox import Limits
    from perfmodel.course.workbooks import tests_from_folder

    source = root / "source"
    config = json.loads((source / "otter_config.json").read_text(encoding="utf-8"))
    tests = tests_from_folder(source / "tests")
    notebooks = sorted((root / "submission").glob("*.ipynb"))
    questions: tuple[Any, ...]
    if notebooks:
        grade = grade_submission(
            notebooks[0], tests, assignment=config["assignment_name"], limits=Limits()
        )
        questions, output = grade.questions, grade.reason
        if grade.isolation == "none":
            output = "graded without isolation (bubblewrap unavailable). " + output
    else:
        questions = score_answers(tests, {})
        output = "no .ipynb file was submitted"
    after = "after_published" if config.get("show_hidden") else "hidden"
    results = {
        "score": round(sum(question.score for question in questions), 4),
        "output": output.strip(),
        "tests": [
            {
                "name": f"{question.name} - {number}",
                # A question's cases share its points equally, as the masters give them.
                "score": question.possible / len(question.cases) if case["passed"] else 0,
                "max_score": question.possible / len(question.cases),
                "visibility": after if case["hidden"] else "visible",
                "output": case["message"],
            }
            for question in questions
            for number, case in enumerate(question.cases, start=1)
        ],
    }
    target = root / "results" / "results.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(results, indent=2, ensure_ascii=False), encoding="utf-8")
    return results


def main(argv: list[str] | None = None) -> int:
    """Grade ``argv[0]`` (default ``/autograder``)."""
    args = sys.argv[1:] if argv is None else argv
    grade_autograder_folder(Path(args[0] if args else "/autograder"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
