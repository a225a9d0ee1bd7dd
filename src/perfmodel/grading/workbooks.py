"""Workbooks: otter-assign master notebooks, their student copies and autograder zips.

Layout (relative to the ``exercises`` folder)::

    masters/00_warmup.ipynb   the answer key, in otter-assign format
    00_warmup.ipynb           the student copy generated from it (committed)

:func:`release` regenerates every student copy and writes one Gradescope-ready autograder
zip per workbook. Student copies are normalised (stable cell ids, and a ``grader`` that shows
hints rather than test code) so that regenerating an unchanged master gives a byte-identical
file, which is how the tests spot a stale copy.

otter assign takes seconds per master, so :func:`assign` keeps its output in a file cache
keyed by a hash of the master, the package files bundled into the zip and otter's version:
an unchanged master is assigned once per machine, whichever process asks first.

The zip's ``run_autograder`` grades with the same clean-room pipeline as ``perfmodel grade``
(:mod:`perfmodel.grading.gradescope`): the tests stay in ``/autograder/source``, never in the
submission's working folder.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import nbformat

__all__ = [
    "Assigned",
    "Workbook",
    "assign",
    "find_workbook",
    "find_workbooks",
    "assignment_name",
    "grading_requirements",
    "workbook_extras",
    "cache_dir",
    "load_tests",
    "release",
    "tests_from_folder",
]

#: The ``perfmodel`` package itself, bundled into autograder zips so the tests can import it.
_PACKAGE_DIR = Path(__file__).resolve().parent.parent  # src/perfmodel, not grading/
#: A fixed timestamp for zip entries, so that a release is reproducible byte for byte.
_ZIP_DATE = (2024, 1, 1, 0, 0, 0)


@dataclass(frozen=True, slots=True)
class Workbook:
    """One workbook: its name and the path of its master notebook.

    Parameters
    ----------
    name : str
        The workbook's name, its master's stem (``"00_warmup"``).
    master : Path
        The master notebook, in otter-assign format.
    """

    name: str
    master: Path

    @property
    def student(self) -> Path:
        """Where the committed student copy lives: two folders up from the master."""
        return self.master.parent.parent / f"{self.name}.ipynb"


@dataclass(frozen=True, slots=True)
class Assigned:
    """What otter assign made of a master notebook.

    Parameters
    ----------
    student_text : str
        The student copy, normalised, as the text of a notebook file.
    tests : dict of str to str
        Question name to the source of its otter test file, hidden cases included.
    autograder_zip : bytes
        The Gradescope autograder zip, with the ``perfmodel`` package bundled.
    """

    student_text: str
    tests: dict[str, str]
    autograder_zip: bytes


def find_workbooks(exercises_dir: Path) -> list[Workbook]:
    """List the workbooks whose masters live in ``exercises_dir / "masters"``, sorted.

    Parameters
    ----------
    exercises_dir : Path
        The exercises folder.

    Returns
    -------
    list of Workbook
        One per ``*.ipynb`` master, sorted by path; empty when there is none.
    """
    masters = sorted((Path(exercises_dir) / "masters").glob("*.ipynb"))
    return [Workbook(master.stem, master) for master in masters]


def find_workbook(name_or_path: str | Path, exercises_dir: Path) -> Workbook:
    """Find a workbook by name (``"00_warmup"``) or by the path of its master notebook.

    Parameters
    ----------
    name_or_path : str or Path
        A workbook's name, or the path of an existing ``.ipynb`` master (anywhere).
    exercises_dir : Path
        The exercises folder, where names are looked up.

    Returns
    -------
    Workbook
        The workbook; one given by path is named after the file's stem.

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


#: otter's set-up cell in a student copy, and perfmodel's replacement for it.
_OTTER_INIT = re.compile(r'# Initialize Otter\nimport otter\ngrader = otter\.Notebook\(("[^"]*")\)')
_PERFMODEL_INIT = (
    "# Initialize the checks (otter-grader's format, showing each hint rather than its test code)\n"
    "from perfmodel.checker import Notebook\n\n"
    "grader = Notebook({name})"
)


def _normalise(text: str) -> str:
    nb = nbformat.reads(text, as_version=4)
    for index, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{index:03d}"
        found = _OTTER_INIT.fullmatch(cell.source.strip()) if cell.cell_type == "code" else None
        if found:
            cell.source = _PERFMODEL_INIT.format(name=found.group(1))
    return str(nbformat.writes(nb)) + "\n"


#: ``perfmodel`` imported as a module path, or names imported from it, in a master's code.
_IMPORTED = re.compile(r"perfmodel((?:\.\w+)+)|from perfmodel import ([\w ,()]+)")
#: One extra a requirement belongs to, in its environment marker.
_EXTRA_MARKER = re.compile(r"""\s*(?:\band\s+)?extra\s*==\s*["']([\w.-]+)["']""")


def workbook_extras(master: Path) -> list[str]:
    """The extras a workbook's code needs besides the core and ``grading``, by its imports.

    Parameters
    ----------
    master : Path
        The workbook's master notebook.

    Returns
    -------
    list of str
        The extras (``"capstone"``, ...) of the optional parts it imports, sorted.
    """
    from perfmodel._extras import MODULE_EXTRAS

    nb = nbformat.read(master, as_version=4)
    code = "\n".join(cell.source for cell in nb.cells if cell.cell_type == "code")
    modules = set()
    for path, names in _IMPORTED.findall(code):
        modules.add("perfmodel" + path)
        modules.update(f"perfmodel.{name.strip('() ')}" for name in names.split(",") if name)
    return sorted(
        extra
        for extra in set(MODULE_EXTRAS.values())
        if any(
            module == part or module.startswith(part + ".")
            for module in modules
            for part, needed in MODULE_EXTRAS.items()
            if needed == extra
        )
    )


def grading_requirements(extras: list[str] | tuple[str, ...] = ()) -> list[str]:
    """What running a workbook needs: the core, the ``grading`` extra and ``extras``.

    Read from the installed package's metadata, which ``pyproject.toml`` writes, so that a
    Gradescope image's ``environment.yml`` never lists the dependencies a second time.

    Parameters
    ----------
    extras : sequence of str, optional
        More extras, as :func:`workbook_extras` finds them.

    Returns
    -------
    list of str
        pip requirement lines, without ``perfmodel`` itself (the zip bundles it), in order.

    Examples
    --------
    >>> any(line.startswith("numpy") for line in grading_requirements())
    True
    """
    from importlib.metadata import requires

    by_extra: dict[str, list[str]] = {}
    for line in requires("perfmodel") or []:
        requirement, _, marker = line.partition(";")
        found = _EXTRA_MARKER.search(marker)
        rest = _EXTRA_MARKER.sub("", marker).strip().removeprefix("and ").strip()
        text = requirement.strip() + (f"; {rest}" if rest else "")
        by_extra.setdefault(found.group(1) if found else "", []).append(text)
    wanted, seen, lines = ["", "grading", *extras], set(), []
    while wanted:
        extra = wanted.pop(0)
        if extra in seen:
            continue
        if extra not in by_extra:
            raise ValueError(f"`extras` must name extras of perfmodel (got {extra!r})")
        seen.add(extra)
        for text in by_extra[extra]:
            nested = re.fullmatch(r"perfmodel\[([\w,.-]+)\]", text)
            if nested:
                wanted += nested.group(1).split(",")
            elif text not in lines:
                lines.append(text)
    return lines


_RUN_AUTOGRADER_TAIL = "python /autograder/source/run_otter.py"
_PERFMODEL_RUN = (
    "# perfmodel: grade with the same clean-room pipeline as `perfmodel grade` (run the\n"
    "# notebook as an unprivileged user, in bubblewrap where it works, read the answers back\n"
    "# as data, score outside it). /root stays unlistable but traversable, so that user can\n"
    "# run the conda Python under it; the runner locks /autograder down before any student code.\n"
    "chmod o+x,o-rw /root\n"
    "PYTHONSAFEPATH=1 PYTHONPATH=/autograder/source/files python -m perfmodel.grading.gradescope "
    "/autograder"
)


def _rewrite_entry(name: str, data: bytes, requirements: list[str]) -> bytes:
    """Adapt otter's Gradescope files: perfmodel's runner, its dependencies, bubblewrap."""
    if name == "run_autograder":
        text = data.decode()
        if _RUN_AUTOGRADER_TAIL not in text:
            raise RuntimeError("otter's run_autograder changed shape; update workbooks.py")
        return text.replace(_RUN_AUTOGRADER_TAIL, _PERFMODEL_RUN).encode()
    if name == "environment.yml":
        extra = "".join(f"      - {requirement}\n" for requirement in requirements)
        return (data.decode().rstrip("\n") + "\n" + extra).encode()
    if name == "setup.sh":
        return (
            data
            + b"\n# perfmodel: the grading sandbox (bubblewrap optional; grading warns without\n"
            b"# it) and libseccomp, which both sandboxed levels need for their syscall allowlist\n"
            b"apt-get install -y bubblewrap libseccomp2 || true\n"
        )
    return data


def _bundle_package(zip_bytes: bytes, requirements: list[str]) -> bytes:
    """Rewrite an otter autograder zip reproducibly, adding ``files/perfmodel``."""
    buffer = io.BytesIO()
    with (
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as out,
        zipfile.ZipFile(io.BytesIO(zip_bytes)) as original,
    ):
        for info in sorted(original.infolist(), key=lambda item: item.filename):
            entry = zipfile.ZipInfo(info.filename, date_time=_ZIP_DATE)
            entry.external_attr = info.external_attr
            data = _rewrite_entry(info.filename, original.read(info), requirements)
            out.writestr(entry, data, zipfile.ZIP_DEFLATED)
        for source in _package_files():
            relative = source.relative_to(_PACKAGE_DIR.parent).as_posix()
            entry = zipfile.ZipInfo(f"files/{relative}", date_time=_ZIP_DATE)
            entry.external_attr = 0o644 << 16
            out.writestr(entry, source.read_bytes(), zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def _package_files() -> list[Path]:
    return sorted(
        path for path in _PACKAGE_DIR.rglob("*") if path.suffix in {".py", ".typed", ".toml"}
    )


def cache_dir() -> Path:
    """Where assigned workbooks are cached: ``$PERFMODEL_CACHE_DIR``, else the user cache.

    Returns
    -------
    Path
        ``$PERFMODEL_CACHE_DIR`` when it is set, else ``perfmodel`` in
        ``$XDG_CACHE_HOME`` or ``~/.cache``.
    """
    explicit = os.environ.get("PERFMODEL_CACHE_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "perfmodel"


def _cache_key(workbook: Workbook) -> str:
    from importlib.metadata import version

    digest = hashlib.sha256()
    digest.update(f"otter {version('otter-grader')}\0".encode())
    digest.update(workbook.master.read_bytes())
    digest.update("\n".join(grading_requirements(workbook_extras(workbook.master))).encode())
    for path in _package_files():
        digest.update(path.relative_to(_PACKAGE_DIR).as_posix().encode() + b"\0")
        digest.update(path.read_bytes())
    return f"{workbook.name}-{digest.hexdigest()[:24]}"


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path`` (POSIX; elsewhere no lock is taken)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def assign(workbook: Workbook, *, cache: bool = True) -> Assigned:
    """Run otter assign on a master notebook (or reuse a cached run) and collect its output.

    Parameters
    ----------
    workbook : Workbook
        The master to assign.
    cache : bool, optional
        Reuse an earlier run on the same master, package and otter version (see
        :func:`cache_dir`); concurrent callers wait for the first instead of repeating it.

    Returns
    -------
    Assigned
        The normalised student copy, the tests and the autograder zip.

    Raises
    ------
    RuntimeError
        If otter assign fails; the message carries otter's own output.
    """
    if not cache:
        return _assign(workbook)
    folder = cache_dir() / "assign"
    # The cache holds hidden tests: only this user may read it (a grading sandbox's user,
    # say, may not).
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    key = _cache_key(workbook)
    student, archive = folder / f"{key}.ipynb", folder / f"{key}.zip"
    with _locked(folder / f"{key}.lock"):
        if not (student.is_file() and archive.is_file()):
            assigned = _assign(workbook)
            for target, data in (
                (archive, assigned.autograder_zip),
                (student, assigned.student_text.encode("utf-8")),
            ):
                partial = target.with_suffix(".partial")
                partial.touch(mode=0o600)
                partial.write_bytes(data)
                os.replace(partial, target)
            return assigned
    data = archive.read_bytes()
    return Assigned(
        student_text=student.read_text(encoding="utf-8"),
        tests=load_tests(data),
        autograder_zip=data,
    )


def _assign(workbook: Workbook) -> Assigned:
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
        requirements = grading_requirements(workbook_extras(workbook.master))
        zip_bytes = _bundle_package(zips[0].read_bytes(), requirements)
        return Assigned(
            student_text=_normalise(student.read_text(encoding="utf-8")),
            tests=load_tests(zip_bytes),
            autograder_zip=zip_bytes,
        )


def assignment_name(autograder_zip: bytes | Path) -> str:
    """The workbook name an autograder zip was made for, from its ``otter_config.json``.

    Parameters
    ----------
    autograder_zip : bytes or Path
        The zip's bytes, or its path.

    Returns
    -------
    str
        The ``assignment_name`` of its otter config.

    Raises
    ------
    ValueError
        If the zip has no otter config naming its assignment.
    """
    data = autograder_zip.read_bytes() if isinstance(autograder_zip, Path) else autograder_zip
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            config = json.loads(archive.read("otter_config.json"))
        name = config["assignment_name"]
    except (zipfile.BadZipFile, KeyError, ValueError, TypeError):
        raise ValueError(
            "`workbook` zip must be an otter autograder zip with an assignment_name in its "
            "otter_config.json"
        ) from None
    if not isinstance(name, str) or not name:
        raise ValueError(f"`workbook` zip names no assignment (got {name!r}).")
    return name


def tests_from_folder(folder: Path) -> dict[str, str]:
    """Read every ``*.py`` test file in ``folder``, in question order.

    Parameters
    ----------
    folder : Path
        A folder of otter test files (an unzipped autograder's ``tests``).

    Returns
    -------
    dict of str to str
        Question name (the file's stem) to its source, in question order (``q2`` before
        ``q10``).
    """
    paths = sorted(Path(folder).glob("*.py"), key=lambda path: _question_order(path.name))
    return {path.stem: path.read_text(encoding="utf-8") for path in paths}


def load_tests(autograder_zip: bytes | Path) -> dict[str, str]:
    """Read every test file (hidden cases included) out of an autograder zip.

    Parameters
    ----------
    autograder_zip : bytes or Path
        The zip's bytes, or its path.

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

    Parameters
    ----------
    exercises_dir : Path
        The exercises folder: masters in ``masters/``, student copies beside it.
    dist_dir : Path
        Where the autograder zips are written; created if needed.

    Returns
    -------
    list of Path
        The files written: each workbook's student copy, then its zip.
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
