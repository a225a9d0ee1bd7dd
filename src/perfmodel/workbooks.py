"""Workbooks: otter-assign master notebooks, their student copies and autograder zips.

Layout (relative to the ``exercises`` folder)::

    masters/00_warmup.ipynb   the answer key, in otter-assign format
    00_warmup.ipynb           the student copy generated from it (committed)

:func:`release` regenerates every student copy and writes one Gradescope-ready autograder
zip per workbook. Student copies are normalised (stable cell ids) so that regenerating an
unchanged master gives a byte-identical file, which is how the tests spot a stale copy.
"""

from __future__ import annotations

import difflib
import io
import subprocess
import sys
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import nbformat

__all__ = [
    "Assigned",
    "Workbook",
    "assign",
    "find_workbook",
    "find_workbooks",
    "load_tests",
    "release",
]

#: The ``perfmodel`` package itself, bundled into autograder zips so the tests can import it.
_PACKAGE_DIR = Path(__file__).resolve().parent
#: A fixed timestamp for zip entries, so that a release is reproducible byte for byte.
_ZIP_DATE = (2024, 1, 1, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class Workbook:
    """One workbook: its name and the path of its master notebook."""

    name: str
    master: Path

    @property
    def student(self) -> Path:
        """Where the committed student copy lives."""
        return self.master.parent.parent / f"{self.name}.ipynb"


@dataclass(frozen=True, slots=True)
class Assigned:
    """What otter assign made of a master notebook."""

    student_text: str
    tests: dict[str, str]
    autograder_zip: bytes


def find_workbooks(exercises_dir: Path) -> list[Workbook]:
    """List the workbooks whose masters live in ``exercises_dir / "masters"``, sorted."""
    masters = sorted((Path(exercises_dir) / "masters").glob("*.ipynb"))
    return [Workbook(master.stem, master) for master in masters]


def find_workbook(name_or_path: str | Path, exercises_dir: Path) -> Workbook:
    """Find a workbook by name (``"00_warmup"``) or by the path of its master notebook.

    Raises
    ------
    ValueError
        If there is no such workbook; the message lists the closest names.
    """
    candidate = Path(name_or_path)
    if candidate.suffix == ".ipynb" and candidate.is_file():
        return Workbook(candidate.stem, candidate.resolve())
    known = find_workbooks(exercises_dir)
    for workbook in known:
        if workbook.name == str(name_or_path):
            return workbook
    names = [workbook.name for workbook in known]
    close = difflib.get_close_matches(str(name_or_path), names, n=3, cutoff=0.3)
    hint = f" Did you mean {', '.join(repr(n) for n in close)}?" if close else ""
    raise ValueError(
        f"`workbook` must name a workbook in {exercises_dir}/masters or be the path of a "
        f"master notebook (got {str(name_or_path)!r}; known: {', '.join(names) or 'none'}).{hint}"
    )


def _normalise(text: str) -> str:
    nb = nbformat.reads(text, as_version=4)
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index:03d}"
    return str(nbformat.writes(nb)) + "\n"


def _bundle_package(zip_bytes: bytes) -> bytes:
    """Rewrite an otter autograder zip reproducibly, adding ``files/perfmodel``."""
    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out,
        zipfile.ZipFile(io.BytesIO(zip_bytes)) as original,
    ):
        for info in sorted(original.infolist(), key=lambda item: item.filename):
            entry = zipfile.ZipInfo(info.filename, date_time=_ZIP_DATE)
            entry.external_attr = info.external_attr
            out.writestr(entry, original.read(info), zipfile.ZIP_DEFLATED)
        for source in sorted(_PACKAGE_DIR.rglob("*")):
            if source.suffix not in {".py", ".typed", ".toml"}:
                continue
            relative = source.relative_to(_PACKAGE_DIR.parent).as_posix()
            entry = zipfile.ZipInfo(f"files/{relative}", date_time=_ZIP_DATE)
            entry.external_attr = 0o644 << 16
            out.writestr(entry, source.read_bytes(), zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def assign(workbook: Workbook) -> Assigned:
    """Run otter assign on a master notebook and collect what it generates.

    Raises
    ------
    RuntimeError
        If otter assign fails; the message carries otter's own output.
    """
    with tempfile.TemporaryDirectory(prefix="perfmodel-assign-") as scratch:
        result = Path(scratch) / "out"
        command = [
            sys.executable,
            "-m",
            "otter",
            "assign",
            "--no-run-tests",
            "--no-pdfs",
            str(workbook.master.resolve()),
            str(result),
        ]
        done = subprocess.run(command, capture_output=True, text=True, cwd=scratch, check=False)
        if done.returncode != 0:
            raise RuntimeError(
                f"otter assign failed on {workbook.master}:\n{done.stdout}\n{done.stderr}"
            )
        student = result / "student" / f"{workbook.name}.ipynb"
        zips = sorted((result / "autograder").glob("*.zip"))
        if not student.is_file() or len(zips) != 1:
            raise RuntimeError(
                f"otter assign did not produce a student notebook and one autograder zip for "
                f"{workbook.master}; check the master's ASSIGNMENT CONFIG (name must be "
                f"{workbook.name!r})."
            )
        zip_bytes = _bundle_package(zips[0].read_bytes())
        return Assigned(
            student_text=_normalise(student.read_text(encoding="utf-8")),
            tests=load_tests(zip_bytes),
            autograder_zip=zip_bytes,
        )


def load_tests(autograder_zip: bytes | Path) -> dict[str, str]:
    """Read every test file (hidden cases included) out of an autograder zip.

    Returns
    -------
    dict
        Question name (``"q1"``) to the source of its otter test file, in question order.
    """
    data = autograder_zip.read_bytes() if isinstance(autograder_zip, Path) else autograder_zip
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = sorted(
            (n for n in archive.namelist() if n.startswith("tests/") and n.endswith(".py")),
            key=_question_order,
        )
        return {Path(n).stem: archive.read(n).decode("utf-8") for n in names}


def _question_order(path: str) -> tuple[str, int, str]:
    stem = Path(path).stem
    prefix = stem.rstrip("0123456789")
    digits = stem[len(prefix) :]
    return (prefix, int(digits) if digits else -1, stem)


def release(exercises_dir: Path, dist_dir: Path) -> list[Path]:
    """Regenerate every student copy and write ``dist/<name>-autograder.zip`` for each.

    Returns
    -------
    list of Path
        The files written.
    """
    dist_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for workbook in find_workbooks(exercises_dir):
        assigned = assign(workbook)
        workbook.student.write_text(assigned.student_text, encoding="utf-8")
        archive = dist_dir / f"{workbook.name}-autograder.zip"
        archive.write_bytes(assigned.autograder_zip)
        written += [workbook.student, archive]
    return written
