"""Grading for instructors: release student copies, grade submissions, run on Gradescope.

One concept a module:

* :mod:`~perfmodel.grading.workbooks`: masters to student copies and Gradescope zips
  (otter assign, cached);
* :mod:`~perfmodel.grading.declared`: the slips each workbook question declares, read
  from its master;
* :mod:`~perfmodel.grading.edition`: the student edition a class clones, without the masters;
* :mod:`~perfmodel.grading.grade`: grade a folder of submissions into a CSV and
  per-student feedback;
* :mod:`~perfmodel.grading.sandbox` runs one submission under limits, with
  :mod:`~perfmodel.grading.worker` inside the sandbox and :mod:`~perfmodel.grading.isolation`
  (bubblewrap, namespaces, a fresh uid) and :mod:`~perfmodel.grading.seccomp` around it;
  :mod:`~perfmodel.grading.levels` picks the level, and never falls back to none unasked;
* :mod:`~perfmodel.grading.usage`: what a submission's processes hold, as the watchdog counts
  it;
* :mod:`~perfmodel.grading.leftovers`: what a sandbox's uid leaves behind, removed;
* :mod:`~perfmodel.grading.text`: names, reasons and feedback that print as they are;
* :mod:`~perfmodel.grading.gradescope`: the entry point Gradescope's autograder runs.

The names below are this package's public face. They load on first use, so the worker that
starts inside every sandbox imports none of otter, nbformat or the grader.

What a learner's notebook imports stays at the top level: :mod:`perfmodel.exercises` (answer
keys and checks) and :mod:`perfmodel.checker` (the student copies' ``Notebook``).
"""

from __future__ import annotations

from perfmodel._extras import require
from perfmodel._lazy import lazy_face

require("grading", "otter", "nbformat", "nbclient", feature="perfmodel.grading")

#: Each public name and where it lives.
_HOMES = {
    "Workbook": "workbooks:Workbook",
    "assign": "workbooks:assign",
    "find_workbook": "workbooks:find_workbook",
    "find_workbooks": "workbooks:find_workbooks",
    "release": "workbooks:release",
    "DeclaredCheck": "declared:DeclaredCheck",
    "declared_checks": "declared:declared_checks",
    "slip_table": "declared:slip_table",
    "STUDENT_FILES": "edition:STUDENT_FILES",
    "write_student_edition": "edition:write_student_edition",
    "SubmissionGrade": "grade:SubmissionGrade",
    "grade_folder": "grade:grade_folder",
    "grade_submission": "grade:grade_submission",
    "write_csv": "grade:write_csv",
    "write_feedback": "grade:write_feedback",
    "Limits": "sandbox:Limits",
    "execute_notebook": "sandbox:execute_notebook",
    "isolation_level": "isolation:level",
}

__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_face(__name__, _HOMES)
