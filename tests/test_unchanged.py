"""An expensive test file is skipped only when every input it reads passed before, unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
GRADING = """
import pkg

def test_one():
    assert pkg.VALUE == 1

def test_two():
    assert pkg.VALUE + 1 == 2
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project with one expensive test file (a grading test), one cheap one, and a package."""
    monkeypatch.delenv("PERFMODEL_TEST_FRESH", raising=False)
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\npythonpath = ['src']\n")
    pytester.makeconftest(
        f"import sys\nsys.path.insert(0, {str(TESTS)!r})\npytest_plugins = ['unchanged']\n"
    )
    (pytester.path / "src").mkdir()
    (pytester.path / "src" / "pkg.py").write_text("VALUE = 1\n")
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_grading_demo.py").write_text(GRADING)
    (pytester.path / "tests" / "test_quick.py").write_text("def test_quick():\n    pass\n")
    return pytester


def record(project: pytest.Pytester) -> Path:
    return project.path / "test-output" / "passed" / "tests--test_grading_demo.py.sha256"


def test_a_file_that_passed_is_skipped_until_an_input_changes(project):
    project.runpytest_inprocess().assert_outcomes(passed=3)
    assert record(project).exists()
    again = project.runpytest_inprocess("-rs")
    again.assert_outcomes(passed=1, skipped=2)  # the cheap test always runs
    again.stdout.fnmatch_lines(["*unchanged since it passed here*"])
    (project.path / "src" / "pkg.py").write_text("VALUE = 1  # edited\n")
    project.runpytest_inprocess().assert_outcomes(passed=3)


def test_fresh_runs_everything(project, monkeypatch):
    project.runpytest_inprocess().assert_outcomes(passed=3)
    monkeypatch.setenv("PERFMODEL_TEST_FRESH", "1")
    project.runpytest_inprocess().assert_outcomes(passed=3)


def test_a_file_run_in_part_or_failing_is_not_recorded(project):
    project.runpytest_inprocess("-k", "one").assert_outcomes(passed=1, deselected=2)
    assert not record(project).exists()
    (project.path / "src" / "pkg.py").write_text("VALUE = 2\n")
    project.runpytest_inprocess().assert_outcomes(passed=1, failed=2)
    assert not record(project).exists()
    (project.path / "src" / "pkg.py").write_text("VALUE = 1\n")
    project.runpytest_inprocess().assert_outcomes(passed=3)
    (project.path / "src" / "pkg.py").write_text("VALUE = 2\n")
    project.runpytest_inprocess().assert_outcomes(passed=1, failed=2)  # not the old record


def test_a_test_run_by_its_id_does_not_record_its_file(project):
    project.runpytest_inprocess("tests/test_grading_demo.py::test_one").assert_outcomes(passed=1)
    assert not record(project).exists()


def test_an_input_edited_while_the_tests_run_is_not_recorded(project):
    editor = """

def test_edits():
    import pathlib

    source = pathlib.Path("src/pkg.py")
    source.write_text(source.read_text() + "# saved while the tests ran")
"""
    (project.path / "tests" / "test_grading_demo.py").write_text(GRADING + editor)
    project.runpytest_inprocess().assert_outcomes(passed=4)
    assert not record(project).exists()  # the key at the end is not the key the run began with
