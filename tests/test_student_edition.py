"""The student edition: everything a class needs, and no line of the answer key."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

from conftest import ROOT, WORKBOOKS, assigned, read_json, solutions
from perfmodel.cli import main


@pytest.fixture(scope="module")
def edition(tmp_path_factory):
    out = tmp_path_factory.mktemp("class") / "perfmodel-course"
    assert main(["student", str(out), "--root", str(ROOT)]) == 0
    return out


def edition_text(edition) -> str:
    return "\n".join(
        path.read_text(encoding="utf-8", errors="replace")
        for path in sorted(edition.rglob("*"))
        if path.is_file()
    )


def public_text() -> str:
    """The lectures, the package and the workbooks' questions: a solution line found there
    gives nothing away (a question may say which call to make)."""
    paths = [*(ROOT / "notebooks").glob("*.ipynb"), *(ROOT / "src").rglob("*.py")]
    questions = [
        "".join(cell["source"])
        for workbook in WORKBOOKS
        for cell in read_json(workbook.student)["cells"]
        if cell["cell_type"] == "markdown"
    ]
    return "\n".join([*(path.read_text(encoding="utf-8") for path in paths), *questions])


def hidden_lines(source: str) -> list[str]:
    """The lines of a test file's hidden cases (each case starts at its decorator)."""
    cases = re.split(r"(?m)^(?=@test_case\()", source)
    return [
        line.strip()
        for case in cases
        if case.startswith("@test_case(") and "hidden=True" in case.splitlines()[0]
        for line in case.splitlines()[1:]
        if "pm1:" in line or line.strip().startswith("def test_")
    ]


def test_the_edition_holds_the_lectures_the_workbooks_and_an_installable_package(edition):
    lectures = sorted(path.name for path in (ROOT / "notebooks").glob("*.ipynb"))
    assert sorted(path.name for path in (edition / "notebooks").glob("*.ipynb")) == lectures
    workbooks = sorted(workbook.student.name for workbook in WORKBOOKS)
    assert sorted(path.name for path in (edition / "exercises").glob("*")) == workbooks
    for name in ("README.md", "Makefile", "pyproject.toml", "LICENSE", ".gitignore"):
        assert (edition / name).is_file(), name
    assert (edition / "src" / "perfmodel" / "data" / "catalogue.toml").is_file()
    readme = (edition / "README.md").read_text()
    assert 'pip install -e ".[lab,mpi,capstone]"' in readme and "jupyter lab" in readme
    assert "masters" not in readme and "perfmodel grade" not in readme


def test_no_master_hidden_test_zip_test_suite_or_history_reaches_it(edition):
    found = [path.relative_to(edition).parts for path in edition.rglob("*")]
    assert not [parts for parts in found if parts[0] in ("tests", "dist", "build")]
    assert (edition / "benchmarks" / "published.py").is_file()  # the lectures name it
    assert not (edition / "benchmarks" / "grading.py").exists()  # it grades the masters
    assert not [parts for parts in found if {"masters", ".git", "__pycache__"} & set(parts)]
    assert not [parts for parts in found if parts[-1].endswith((".zip", ".pyc"))]


@pytest.mark.parametrize("workbook", WORKBOOKS, ids=lambda workbook: workbook.name)
def test_no_hidden_test_line_and_no_solution_line_reaches_it(edition, workbook):
    text = edition_text(edition)
    hidden = [line for source in assigned(workbook).tests.values() for line in hidden_lines(source)]
    assert hidden, f"{workbook.name}: no hidden case found, so this test would prove nothing"
    assert [line for line in hidden if line in text] == []
    # a solution's own lines: those with an answer on the right of `=` (not `...`), less
    # those the lectures or the package hold anyway ("parameters = model.parameters")
    public = public_text()
    answers = [
        line.strip()
        for cell in solutions(workbook)
        for line in cell.splitlines()
        if re.match(r"\s*(graded_)?\w+\s*=\s*(?!\.\.\.)\S", line) and len(line.strip()) > 12
        if line.strip() not in public
    ]
    assert answers, f"{workbook.name}: no solution line found, so this test would prove nothing"
    assert [line for line in answers if line in text] == []


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_the_editions_make_lab_serves_its_own_root(edition):
    done = subprocess.run(
        ["make", "-n", "lab"], cwd=edition, capture_output=True, text=True, check=True
    )
    assert 'pip install --quiet -e ".[lab,mpi,capstone]"' in done.stdout
    assert f'--ServerApp.root_dir="{edition}" notebooks/00_start_here.ipynb' in done.stdout


def test_the_edition_refuses_a_folder_that_is_not_empty(tmp_path):
    (tmp_path / "something").write_text("keep me")
    with pytest.raises(ValueError, match="`out` must be a new or empty folder"):
        from perfmodel.grading import write_student_edition

        write_student_edition(tmp_path, ROOT)
    assert (tmp_path / "something").read_text() == "keep me"


def _course(tmp_path):
    """A small course: one lecture, workbook 00 and its master, a package."""
    root = tmp_path / "course"
    for folder in ("notebooks", "exercises/masters", "src/perfmodel"):
        (root / folder).mkdir(parents=True)
    shutil.copy(ROOT / "notebooks" / "00_start_here.ipynb", root / "notebooks")
    shutil.copy(ROOT / "exercises" / "00_warmup.ipynb", root / "exercises")
    shutil.copy(ROOT / "exercises" / "masters" / "00_warmup.ipynb", root / "exercises" / "masters")
    (root / "src" / "perfmodel" / "__init__.py").write_text("")
    (root / "pyproject.toml").write_text("")
    return root


def test_a_master_copied_or_linked_into_exercises_never_reaches_the_edition(tmp_path):
    from perfmodel.grading import write_student_edition

    root = _course(tmp_path)
    assert write_student_edition(tmp_path / "fine", root)  # the small course itself is fine
    master = root / "exercises" / "masters" / "00_warmup.ipynb"
    cases = {
        "link": ("zz_link.ipynb", "is a symbolic link"),
        "copy": ("00_warmup-Copy1.ipynb", "has no master"),
        "marked": ("00_warmup.ipynb", "which only a master holds"),
    }
    for case, (name, words) in cases.items():
        target = root / "exercises" / name
        saved = target.read_bytes() if target.exists() else None
        if case == "link":
            target.symlink_to(master)
        else:
            target.write_bytes(master.read_bytes())
        out = tmp_path / case
        with pytest.raises(ValueError, match=words):
            write_student_edition(out, root)
        assert not out.exists() or not any(out.iterdir()), case  # nothing written
        target.unlink()
        if saved is not None:
            target.write_bytes(saved)


def test_the_edition_is_never_written_inside_the_course(tmp_path):
    from perfmodel.grading import write_student_edition

    root = _course(tmp_path)
    for inside in ("tests/empty", "build/student", ".git/x"):
        with pytest.raises(ValueError, match="must lie outside the course's folder"):
            write_student_edition(root / inside, root)
