"""The ``grader`` object of a student copy: instant checks that show hints, not test code.

otter assign embeds each question's public test cases in the student copy's metadata, in
otter's exception-based format (a ``test_case`` decorator around a function that raises on a
wrong answer). Running them needs none of otter itself: this module reads them back, calls
each case with the learner's variables, and shows the check's own message (right or wrong,
and the likely slip), never the line of test code that raised. Students therefore need only
the ``lab`` extra; otter-grader stays an instructors' tool (releasing and grading).
"""

from __future__ import annotations

import html
import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from perfmodel.exercises import feedback

__all__ = ["CheckResult", "Notebook", "test_case"]

#: The one import line otter writes at the top of an embedded test; this module stands in.
_OTTER_IMPORT = "from otter.test_files import test_case"


class test_case:  # noqa: N801 - the name otter's test files use
    """The decorator of one test case, as otter's exception-based test files write it.

    Parameters
    ----------
    name : str or None, optional
        The case's name.
    points : int, float or None, optional
        Its points, a count (instant checks in a student copy are worth none).
    hidden : bool, optional
        Whether it is hidden (a student copy ships none that are).
    success_message, failure_message : str or None, optional
        Extra words shown when the case passes or fails.
    """

    def __init__(
        self,
        name: str | None = None,
        points: float | None = None,
        hidden: bool = False,
        success_message: str | None = None,
        failure_message: str | None = None,
    ) -> None:
        self.name = name
        self.points = points
        self.hidden = hidden
        self.success_message = success_message
        self.failure_message = failure_message
        self.function: Callable[..., object] = lambda: None

    def __call__(self, function: Callable[..., object]) -> test_case:
        """Wrap ``function`` as this case.

        Parameters
        ----------
        function : callable
            The case: it raises when the answer is wrong; its parameters name the variables.

        Returns
        -------
        test_case
            This decorator, holding ``function``.
        """
        self.function = function
        return self

    def run(self, env: dict[str, Any]) -> str | None:
        """Call the case with the variables it names; None when it passes, else the hint.

        Parameters
        ----------
        env : dict
            The learner's variables; a missing one is passed as None, as otter does.

        Returns
        -------
        str or None
            None when the case passes, else the learner-facing message.
        """
        names = inspect.signature(self.function).parameters
        arguments = {name: env if name == "env" else env.get(name) for name in names}
        try:
            self.function(**arguments)
        except Exception as error:  # a wrong answer raises; any error is the learner's to see
            message = feedback(str(error).strip("'"))
            return f"{message} {self.failure_message}" if self.failure_message else message
        return None


@dataclass(frozen=True)
class CheckResult:
    """What one question's instant check found: a hint per failed case.

    Parameters
    ----------
    question : str
        The question's name (``"q1"``).
    failures : tuple of str
        The message of each failed case, in order; empty when every case passed.
    """

    question: str
    failures: tuple[str, ...]

    @property
    def passed(self) -> bool:
        """Whether every case passed."""
        return not self.failures

    def __repr__(self) -> str:
        if self.passed:
            return f"{self.question} results: All test cases passed!"
        lines = [f"{self.question} results:"]
        lines += [f"    ❌ {message}" for message in self.failures]
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        question = html.escape(self.question)
        if self.passed:
            return (
                f"<p><strong style='color: #1b7f3b;'>✅ {question}</strong> results: "
                f"All test cases passed!</p>"
            )
        items = "".join(f"<li>❌ {html.escape(message)}</li>" for message in self.failures)
        return (
            f"<p><strong style='color: #b00020;'>{question}</strong> results:</p>"
            f"<ul style='list-style: none;'>{items}</ul>"
        )


class Notebook:
    """The checks of one workbook, read from its student copy.

    Parameters
    ----------
    nb_path : str or None, optional
        The student copy's file name (the set-up cell passes it); None takes the only
        notebook in the working folder that carries checks.
    tests_dir : str, optional
        Accepted for otter's signature; the checks live in the notebook itself.
    tests_url_prefix : str or None, optional
        Accepted for otter's signature and unused.
    """

    def __init__(
        self,
        nb_path: str | None = None,
        tests_dir: str = "./tests",
        tests_url_prefix: str | None = None,
    ) -> None:
        self._path = Path(nb_path) if nb_path is not None else None

    def _tests(self) -> dict[str, str]:
        candidates = [self._path] if self._path is not None else sorted(Path().glob("*.ipynb"))
        for path in candidates:
            if not path.is_file():
                raise FileNotFoundError(
                    f"the checks live in the workbook file {str(path)!r}, which is not in "
                    f"{Path.cwd()}: open the workbook from its own folder (exercises/)"
                )
            tests = json.loads(path.read_text(encoding="utf-8"))["metadata"]
            tests = tests.get("otter", {}).get("tests", {})
            if tests:
                return dict(tests)
        raise FileNotFoundError(f"no workbook with checks in {Path.cwd()}")

    def check(self, question: str, global_env: dict[str, Any] | None = None) -> CheckResult:
        """Run the instant checks of ``question`` against the caller's variables.

        Parameters
        ----------
        question : str
            The question's name (``"q1"``), as the workbook's check cell gives it.
        global_env : dict or None, optional
            The variables to check; None (the default) takes the calling frame's globals.

        Returns
        -------
        CheckResult
            Each failed case's hint ("❌ " and the check's words), without the test code.
        """
        if global_env is None:
            frame = inspect.currentframe()
            global_env = frame.f_back.f_globals if frame and frame.f_back else {}
        tests = self._tests()
        if question not in tests:
            raise ValueError(
                f"`question` must be one of {', '.join(sorted(tests))} (got {question!r})"
            )
        source = tests[question].replace(_OTTER_IMPORT, "", 1)
        space: dict[str, Any] = {"test_case": test_case}
        exec(compile(source, f"<checks of {question}>", "exec"), space)  # noqa: S102
        cases = [value for value in space.values() if isinstance(value, test_case)]
        failures = (case.run(global_env) for case in cases if not case.hidden)
        return CheckResult(question, tuple(message for message in failures if message))
