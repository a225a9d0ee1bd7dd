"""Grading for instructors: release student copies, grade submissions, run on Gradescope.

One concept a module:

* :mod:`~perfmodel.grading.workbooks`: masters to student copies and Gradescope zips
  (otter assign, cached);
* :mod:`~perfmodel.grading.grade`: grade a folder of submissions into a CSV and
  per-student feedback;
* :mod:`~perfmodel.grading.sandbox` runs one submission under limits, with
  :mod:`~perfmodel.grading.worker` inside the sandbox and :mod:`~perfmodel.grading.isolation`
  (bubblewrap, namespaces, a fresh uid) and :mod:`~perfmodel.grading.seccomp` around it;
* :mod:`~perfmodel.grading.gradescope`: the entry point Gradescope's autograder runs.

The names below are this package's public face. They load on first use, so the worker that
starts inside every sandbox imports none of otter, nbformat or the grader.

What a learner's notebook imports stays at the top level: :mod:`perfmodel.exercises` (answer
keys and checks) and :mod:`perfmodel.checker` (the student copies' ``Notebook``).
"""

from __future__ import annotations

import importlib
from typing import Any

from perfmodel._extras import require

require("course", "otter", "nbformat", "nbclient", feature="perfmodel.grading")

#: Each public name and the module that defines it.
_HOMES = {
    "Workbook": "workbooks",
    "assign": "workbooks",
    "find_workbook": "workbooks",
    "find_workbooks": "workbooks",
    "release": "workbooks",
    "SubmissionGrade": "grade",
    "grade_folder": "grade",
    "grade_submission": "grade",
    "write_csv": "grade",
    "write_feedback": "grade",
    "Limits": "sandbox",
    "execute_notebook": "sandbox",
    "isolation_level": "isolation",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'perfmodel.grading' has no attribute {name!r}")
    module = importlib.import_module(f"perfmodel.grading.{_HOMES[name]}")
    return getattr(module, "level" if name == "isolation_level" else name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
