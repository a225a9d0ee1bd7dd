"""Skip the expensive tests whose inputs have not changed since they last passed here.

Running a lecture, grading a folder of submissions or driving a browser takes seconds to
minutes; run again on the same files, it can only say what it said before. So each expensive
test file (:data:`EXPENSIVE`) has a key: a SHA-256 of its own bytes, of every file its group
reads (the package, the workbooks, the lectures...), of the test helpers, ``pyproject.toml``
and the installed distributions. When every test of a file passes, its key is written under
``test-output/passed/``; a later run that computes the same key skips the whole file, saying
so. A file runs all or nothing, because a notebook's cells (and a module's shared fixtures)
depend on each other.

A clean clone (CI) has no keys and runs everything. ``PERFMODEL_TEST_FRESH=1`` (``make test
FRESH=1``) ignores them and runs everything too, for a machine whose state changed (a busy
machine, a new Chromium) in ways no file shows.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import os
import subprocess
import sys
from collections import Counter
from importlib.metadata import distributions
from pathlib import Path

import pytest

#: What every expensive test reads besides its own file: the test helpers and the project.
ALWAYS = (
    "conftest.py",
    "pyproject.toml",
    "src",
    *(f"tests/{helper}" for helper in ("conftest.py", "attacks.py", "figure_audit.py",
                                       "nbval_sanitize.cfg", "unchanged.py")),
)  # fmt: skip
#: Expensive test files (glob, relative to the root) and the folders their tests read.
EXPENSIVE = {
    "notebooks/*.ipynb": (),
    "exercises/*.ipynb": (),
    "exercises/masters/*.ipynb": (),
    "tests/test_grading*.py": ("exercises", "tests/test_grading_hostile.py"),  # its helpers
    "tests/test_workbooks.py": ("exercises",),
    "tests/test_browser.py": ("notebooks", "exercises", "jupyter"),
    "tests/test_decks.py": ("notebooks", "tests/test_browser.py"),  # its helpers
    "tests/test_explorers_in_browser.py": ("benchmarks/widgets.py", "tests/test_browser.py"),
    "tests/test_explorer_controls.py": (),
    "tests/test_widget_spare.py": ("tests/test_explorer_controls.py",),  # its helpers
    "tests/test_headless.py": ("notebooks", "benchmarks/headless.py"),
    "tests/test_core_install.py": (),
}
FRESH = "PERFMODEL_TEST_FRESH"


def _project_files(root: Path) -> set[Path] | None:
    """The files git would commit (tracked, or untracked and not ignored), or None outside a
    git checkout: what a run writes (an otter log, a measured machine) is not an input."""
    try:
        listed = subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"],
            cwd=root, capture_output=True, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        return None
    return {root / name for name in listed.decode().split("\0") if name}


def _digest_of(path: Path, root: Path, project: set[Path] | None) -> bytes:
    """The SHA-256 of a file, or of a folder's files (names and bytes, caches left out)."""
    digest = hashlib.sha256()
    files = sorted(path.rglob("*")) if path.is_dir() else [path] if path.exists() else []
    for file in files:
        if project is not None and file not in project:
            continue
        if file.is_file() and not {"__pycache__", ".ipynb_checkpoints"} & set(file.parts):
            digest.update(file.relative_to(root).as_posix().encode() + b"\0" + file.read_bytes())
    return digest.digest()


@functools.cache
def _environment() -> bytes:
    installed = sorted(f"{d.metadata['Name']}=={d.version}" for d in distributions())
    return "\n".join([sys.version, *installed]).encode()


class Unchanged:
    """The plugin: keys expensive test files, skips those that passed unchanged, and records
    each that ran whole and passed (in each xdist worker, or the only process; an xdist
    controller collects nothing, so it records nothing)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.passed_dir = root / "test-output" / "passed"
        self.collected: Counter[Path] = Counter()
        self.selected: Counter[Path] = Counter()
        self.passed: Counter[Path] = Counter()
        self.failed: set[Path] = set()
        self._digests: dict[str, bytes] = {}
        self._keys: dict[Path, str | None] = {}
        self._project = _project_files(root)
        self.at_start: dict[Path, str | None] = {}
        self.by_id = False

    def reads(self, path: Path) -> tuple[str, ...] | None:
        """The folders an expensive test file reads, or None for a test that always runs."""
        try:
            relative = path.relative_to(self.root).as_posix()
        except ValueError:
            return None
        for pattern, folders in EXPENSIVE.items():
            if fnmatch.fnmatch(relative, pattern) and relative.count("/") == pattern.count("/"):
                return folders
        return None

    def key(self, path: Path) -> str | None:
        """The key of an expensive test file at the current inputs (None: not an expensive one)."""
        if path not in self._keys:
            folders = self.reads(path)
            digest = hashlib.sha256(_environment())
            for entry in (path.relative_to(self.root).as_posix(), *ALWAYS, *(folders or ())):
                if entry not in self._digests:
                    self._digests[entry] = _digest_of(self.root / entry, self.root, self._project)
                digest.update(entry.encode() + b"\0" + self._digests[entry])
            self._keys[path] = None if folders is None else digest.hexdigest()
        return self._keys[path]

    def record(self, path: Path) -> Path:
        """Where the key of an expensive file's last passing run is kept: ``.sha256`` on the
        file's own name, so that no tool takes a key for a notebook."""
        name = path.relative_to(self.root).as_posix().replace("/", "--")
        return self.passed_dir / f"{name}.sha256"

    @pytest.hookimpl(tryfirst=True)  # before -k and -m deselect: count every test of a file
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        self.collected = Counter(item.path for item in items if self.reads(item.path) is not None)
        # A test named by its id (file.py::test) collects alone: the file did not run whole.
        self.by_id = any("::" in str(arg) for arg in config.invocation_params.args)
        self.at_start = {path: self.key(path) for path in self.collected}  # before any runs
        if os.environ.get(FRESH):
            return
        for path in self.collected:
            record = self.record(path)
            if record.exists() and record.read_text() == self.key(path):
                skip = pytest.mark.skip(reason=f"unchanged since it passed here ({FRESH}=1 reruns)")
                for item in items:
                    if item.path == path:
                        item.add_marker(skip)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self.selected = Counter(item.path for item in session.items if item.path in self.collected)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        path = self.root / report.fspath
        if path not in self.selected:
            return
        if report.failed or (report.skipped and report.when != "teardown"):
            self.failed.add(path)  # a skipped test counts against: the file did not run whole
        elif report.when == "call" and report.passed:
            self.passed[path] += 1

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if session.shouldstop or session.shouldfail or self.by_id:
            return
        self._digests, self._keys = {}, {}  # read the inputs again: were they edited meanwhile?
        self._project = _project_files(self.root)
        for path, count in self.selected.items():
            whole = count == self.collected[path] == self.passed[path]
            current = self.key(path)
            if whole and path not in self.failed and current and current == self.at_start[path]:
                self.passed_dir.mkdir(parents=True, exist_ok=True)
                self.record(path).write_text(current)


def pytest_configure(config: pytest.Config) -> None:
    """Register the plugin for this run's root folder."""
    config.pluginmanager.register(Unchanged(config.rootpath), "perfmodel-unchanged")
