"""The ``grader`` object of a student copy: otter's checks, showing hints, not test code.

otter-grader prints a failed test case as the line of test code that raised, then the
error. In a workbook that line is test code the learner has no use for; this subclass keeps
the check's own message (right or wrong, and the likely slip) and drops the rest.
"""

from __future__ import annotations

import inspect
from typing import Any

from perfmodel._extras import require

require("course", "otter", feature="a workbook's checks")

import otter  # noqa: E402

from perfmodel.exercises import feedback  # noqa: E402

__all__ = ["Notebook"]


class Notebook(otter.Notebook):  # type: ignore[misc]
    """otter's ``Notebook``, whose ``check`` shows each failed case's hint only.

    Parameters
    ----------
    nb_path : str or None, optional
        Path to the notebook being run; None lets otter find it.
    tests_dir : str, optional
        Directory holding the question test files (default ``"./tests"``).
    tests_url_prefix : str or None, optional
        A URL prefix from which otter downloads the test files, if given.
    """

    def check(self, question: str, global_env: dict[str, Any] | None = None) -> Any:
        """Run the instant checks of ``question`` against the caller's variables.

        Parameters
        ----------
        question : str
            The question's name, as in the workbook's tests directory.
        global_env : dict or None, optional
            The variables to check; None (the default) takes the calling frame's globals.

        Returns
        -------
        Any
            otter's result for the question (a test file), whose failed cases' messages
            are replaced by "❌ " and the check's hint, without the test code.
        """
        if global_env is None:
            frame = inspect.currentframe()
            global_env = frame.f_back.f_globals if frame and frame.f_back else {}
        result = super().check(question, global_env)
        for case in getattr(result, "test_case_results", None) or ():
            if not case.passed:
                case.message = "❌ " + feedback(case.message)
        return result
