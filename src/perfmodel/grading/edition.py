"""The student edition: the course a class clones, without the answer key.

The instructors' repository holds the masters (``exercises/masters/``: every solution and
hidden test) beside everything else. :func:`write_student_edition` copies out what a student
needs, by an allowlist: the lectures, the student copies of the workbooks, the package, its
``pyproject.toml``, the shared ``jupyter/lab.mk``, the benchmarks the lectures name, and a
student README and Makefile. Nothing else reaches it: no masters, no hidden tests, no autograder
zips, no test suite (it holds graded answers to test the grader), and no history (it is a plain
folder; ``git init`` it to publish).
"""

from __future__ import annotations

import shutil
from importlib import resources
from pathlib import Path

__all__ = ["STUDENT_FILES", "write_student_edition"]

#: What the edition copies from the course's root, as glob patterns (an allowlist).
STUDENT_FILES = (
    "LICENSE",
    "pyproject.toml",
    "jupyter/overrides.json",
    "jupyter/lab.mk",
    "notebooks/*.ipynb",
    "exercises/*.ipynb",
    "src/perfmodel/**/*",
    "benchmarks/*.py",
    "benchmarks/c/*.c",
)

#: Files written from the package's templates (``perfmodel/data/student``), by name there.
_TEMPLATES = {"README.md": "README.md", "Makefile": "Makefile", ".gitignore": "gitignore"}

#: Never copied, whatever the patterns match.
_SKIPPED_PARTS = {"__pycache__", "masters", ".ipynb_checkpoints"}
#: Nor these files: the grading benchmark grades the masters, which the edition lacks.
_SKIPPED_FILES = {"benchmarks/grading.py"}
#: What only a master holds (otter assign's markers); no notebook of the edition may.
_MASTER_MARKERS = ("# BEGIN SOLUTION", "# SOLUTION", "# BEGIN TESTS", "# HIDDEN", "hidden=True")


def _sources(root: Path) -> list[Path]:
    found: set[Path] = set()
    for pattern in STUDENT_FILES:
        for path in root.glob(pattern):
            relative = path.relative_to(root)
            skipped = _SKIPPED_PARTS & set(relative.parts) or path.suffix in {".pyc", ".zip"}
            skipped = skipped or relative.as_posix() in _SKIPPED_FILES
            if path.is_file() and not skipped:
                found.add(relative)
    return sorted(found)


def _check(root: Path, sources: list[Path]) -> None:
    """Refuse a file that could carry the answer key: a symbolic link, a workbook without a
    master of its name (a saved copy of a master, say), a notebook with a master's markers."""
    for relative in sources:
        path = root / relative
        if path.is_symlink() or not path.resolve().is_relative_to(root):
            raise ValueError(f"{relative} is a symbolic link: copy the file itself, or remove it")
        if (
            relative.parts[0] == "exercises"
            and not (root / "exercises" / "masters" / relative.name).is_file()
        ):
            raise ValueError(
                f"{relative} has no master in exercises/masters: it may be a copy of one; move "
                f"it out of exercises/ (only `perfmodel release` writes the student copies)"
            )
        if path.suffix == ".ipynb":
            text = path.read_text(encoding="utf-8", errors="replace")
            marker = next((m for m in _MASTER_MARKERS if m in text), None)
            if marker is not None:
                raise ValueError(
                    f"{relative} holds {marker!r}, which only a master holds: regenerate the "
                    f"student copies with `perfmodel release`"
                )


def write_student_edition(out: Path, root: Path = Path()) -> list[Path]:
    """Write the student edition of the course at ``root`` into the new folder ``out``.

    Parameters
    ----------
    out : Path
        The folder to write; it must not exist yet, or be empty.
    root : Path, optional
        The course's root (the instructors' clone); by default the working folder.

    Returns
    -------
    list of Path
        The files written, relative to ``out``.

    Raises
    ------
    ValueError
        If ``root`` is not a course (no ``notebooks/`` or ``exercises/masters/``); if ``out``
        is not empty or lies inside ``root``; or if a file to copy is a symbolic link, a
        workbook without a master, or a notebook holding a master's markers (nothing is
        written then).
    """
    root, out = Path(root).resolve(), Path(out).resolve()
    for needed in ("notebooks", "exercises", "src/perfmodel", "pyproject.toml"):
        if not (root / needed).exists():
            raise ValueError(
                f"`root` must be the course's root folder, holding {needed} (got {root})"
            )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"`out` must be a new or empty folder (got {out}, which is not)")
    if out.is_relative_to(root):
        raise ValueError(
            f"`out` must lie outside the course's folder {root}, which holds the answer key "
            f"(got {out})"
        )
    sources = _sources(root)
    _check(root, sources)
    written = []
    for relative in sources:
        target = out / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(root / relative, target)
        written.append(relative)
    templates = resources.files("perfmodel") / "data" / "student"
    for name, template in _TEMPLATES.items():
        (out / name).write_text(templates.joinpath(template).read_text(encoding="utf-8"))
        written.append(Path(name))
    return sorted(written)
