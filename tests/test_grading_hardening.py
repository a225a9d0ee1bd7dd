"""Three holes an attacker found in grading, closed:

* the grade sheet, its ``.partial`` file and the feedback are the grader's alone, and at the
  unprivileged level ``perfmodel grade`` refuses while other users could read the course
  checkout's git history, ``dist/`` or autograder zips (a submission found them through
  ``PYTHONPATH``);
* the Gradescope runner checks that its lock-down holds, whatever ``PERFMODEL_LOCKED`` says;
* the sandboxing tools come from root's system folders, never ``PATH``, and the trial run
  checks that the sandbox really isolates (a fake ``setpriv`` ran submissions as root).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from attacks import when
from test_grading_levels import GRADESCOPE_HOSTILE, _autograder, reachable  # noqa: F401

from conftest import read_json, solved_copy, with_code
from perfmodel import cli
from perfmodel.grading import gradescope, isolation, levels
from perfmodel.grading.grade import PartialSheet, SubmissionGrade, write_csv, write_feedback
from perfmodel.grading.workbooks import find_workbook

ROOT_ONLY = "needs a root grader (files root owns, a fresh uid, Gradescope's layout)"


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@contextlib.contextmanager
def _umask(mask: int):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


# --- F1: the grader's output, and the checkout ---------------------------------------------


def test_sheets_and_feedback_are_the_graders_alone_whatever_the_umask(tmp_path):
    """Even under umask 000, and over a sheet and feedback an older grader left readable."""
    out = tmp_path / "out" / "grades.csv"
    feedback = tmp_path / "out" / "grades_feedback"
    feedback.mkdir(parents=True, mode=0o755)
    (feedback / "old.json").write_text("{}", encoding="utf-8")
    out.with_name("grades.csv.partial").write_text("old", encoding="utf-8")
    out.write_text("old", encoding="utf-8")
    for path in (feedback, feedback / "old.json", out, out.with_name("grades.csv.partial")):
        os.chmod(path, 0o777 if path.is_dir() else 0o666)
    grade = SubmissionGrade(
        submission="a.ipynb", status="graded", reason="", questions=(), isolation="unprivileged"
    )
    with _umask(0):
        sheet = PartialSheet(out, [])
        sheet.add(grade)
        assert _mode(sheet.path) == 0o600
        assert "a.ipynb" in sheet.path.read_text(encoding="utf-8")
        write_csv([grade], out)
        write_feedback([grade], feedback)
        sheet.finish()
    assert _mode(out) == 0o600
    assert "a.ipynb" in out.read_text(encoding="utf-8")
    assert _mode(feedback) == 0o700
    [written] = list(feedback.iterdir())
    assert written.name == "a.ipynb.json" and _mode(written) == 0o600


@pytest.fixture
def checkout(monkeypatch):
    """A course checkout other users may reach (not under pytest's 0700 folders), that the
    package seems imported from: ``src/``, closed masters, an open ``.git`` and ``dist/``."""
    base = Path(tempfile.mkdtemp(prefix="perfmodel-checkout-"))
    try:
        os.chmod(base, 0o755)
        if levels.closed_folders([base]):
            pytest.skip(f"other users cannot reach {base}'s folder, so nothing there is exposed")
        for folder in ("src", "exercises/masters", ".git/objects/ab", "dist"):
            (base / folder).mkdir(parents=True)
        for folder, _, _ in os.walk(base):
            os.chmod(folder, 0o755)
        os.chmod(base / "exercises" / "masters", 0o700)
        (base / ".git" / "HEAD").write_text("ref: refs/heads/main\n", encoding="utf-8")
        (base / ".git" / "objects" / "ab" / "cdef").write_bytes(b"x")
        (base / "dist" / "00_warmup-autograder.zip").write_bytes(b"PK")
        for path in base.rglob("*"):
            if path.is_file():
                os.chmod(path, 0o644)
        monkeypatch.setattr(isolation, "package_parent", lambda: str(base / "src"))
        yield base
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _refusal(checkout: Path, level: str = "unprivileged") -> str:
    master = checkout / "exercises" / "masters" / "00_warmup.ipynb"
    try:
        cli._refuse_readable_keys(master, level, None, checkout / "exercises")
    except ValueError as error:
        return str(error)
    return ""


def test_the_unprivileged_level_refuses_a_readable_git_history_or_dist(checkout):
    git, dist = checkout / ".git", checkout / "dist"
    message = _refusal(checkout)
    assert f"git history (every master) through {git}:" in message
    assert f"chmod -R o-rwx {git})" in message
    assert _refusal(checkout, "bubblewrap") == "", "bubblewrap hides the checkout"
    # Passable but not listable: its files are still read by name.
    os.chmod(git, 0o711)
    assert f"through {git / 'HEAD'}:" in _refusal(checkout)
    os.chmod(git / "HEAD", 0o600)
    assert f"through {git / 'objects'}:" in _refusal(checkout), "a listable folder"
    os.chmod(git / "objects", 0o711)
    os.chmod(git / "objects" / "ab", 0o711)
    assert f"through {git / 'objects' / 'ab' / 'cdef'}:" in _refusal(checkout)
    os.chmod(git / "objects", 0o700)  # hides all below
    message = _refusal(checkout)
    assert f"release folder (hidden tests) through {dist}:" in message
    assert f"chmod -R o-rwx {dist})" in message
    os.chmod(dist, 0o711)
    assert f"through {dist / '00_warmup-autograder.zip'}:" in _refusal(checkout)
    os.chmod(dist / "00_warmup-autograder.zip", 0o600)
    assert _refusal(checkout) == ""
    loose = checkout / "00_warmup-autograder.zip"
    loose.write_bytes(b"PK")
    os.chmod(loose, 0o644)
    assert f"autograder zip (hidden tests) through {loose}:" in _refusal(checkout)
    os.chmod(loose, 0o600)
    assert _refusal(checkout) == ""


def test_the_exercises_folders_checkout_is_looked_at_too(checkout, monkeypatch, tmp_path):
    """The package may be installed elsewhere: ``--exercises``'s parent is a checkout too."""
    monkeypatch.setattr(isolation, "package_parent", lambda: str(tmp_path / "site-packages"))
    assert f"chmod -R o-rwx {checkout / '.git'})" in _refusal(checkout)


def test_perfmodel_grade_refuses_before_any_submission(checkout, monkeypatch, tmp_path, capsys):
    workbook = find_workbook("00_warmup", Path("exercises"))
    keys, folder = tmp_path / "keys", tmp_path / "submissions"
    keys.mkdir(mode=0o700)
    folder.mkdir(mode=0o700)
    shutil.copy(workbook.master, keys / workbook.master.name)
    (folder / "a.ipynb").write_text(json.dumps(solved_copy(workbook)), encoding="utf-8")
    monkeypatch.setattr(levels, "choose", lambda requested=None: "unprivileged")
    out = tmp_path / "out" / "grades.csv"
    code = cli.main(
        ["grade", str(keys / workbook.master.name), str(folder), "--out", str(out),
         "--exercises", str(checkout / "exercises"), "--no-progress"]
    )  # fmt: skip
    error = capsys.readouterr().err
    assert code == 2, error
    assert f"chmod -R o-rwx {checkout / '.git'})" in error
    assert not out.parent.exists(), "a refused batch wrote its sheet"


# --- F3: the sandboxing tools, and the trial ------------------------------------------------


def test_tools_never_come_from_path(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "setpriv"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\nwhile [ "$1" != -- ]; do shift; done; shift; exec "$@"\n')
    os.chmod(fake, 0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    assert shutil.which("setpriv") == str(fake)
    found = isolation.tool("setpriv")
    if found is None:
        pytest.skip("util-linux's setpriv is not installed in a system folder")
    assert Path(found).parent in {Path(folder) for folder in isolation.SYSTEM_BIN}


@pytest.mark.skipif(os.geteuid() != 0, reason=ROOT_ONLY)
def test_a_tool_another_user_could_change_is_refused(tmp_path, monkeypatch):
    folder = tmp_path / "bin"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    program = folder / "setpriv"
    program.write_text("#!/bin/sh\n")
    os.chmod(program, 0o755)
    monkeypatch.setattr(isolation, "SYSTEM_BIN", (str(folder),))
    assert isolation.tool("setpriv") == str(program)
    for path, mode in ((program, 0o775), (program, 0o757), (folder, 0o777), (folder, 0o775)):
        os.chmod(path, mode)
        assert isolation.tool("setpriv") is None, (path, oct(mode))
        os.chmod(path, 0o755)
    os.chown(program, 12345, 0)
    assert isolation.tool("setpriv") is None, "owned by another user"
    os.chown(program, 0, 0)
    elsewhere = tmp_path / "open"
    elsewhere.mkdir()
    os.chmod(elsewhere, 0o777)
    program.unlink()
    (elsewhere / "setpriv").write_text("#!/bin/sh\n")
    os.chmod(elsewhere / "setpriv", 0o755)
    program.symlink_to(elsewhere / "setpriv")
    assert isolation.tool("setpriv") is None, "a link into a folder anyone may write"


def _fake(path: Path) -> str:
    """A sandboxing tool that drops its options and runs the rest, isolating nothing."""
    path.write_text('#!/bin/sh\nwhile [ "$1" != -- ]; do shift; done; shift; exec "$@"\n')
    os.chmod(path, 0o755)
    return str(path)


@pytest.mark.skipif(os.geteuid() != 0, reason=ROOT_ONLY)
def test_the_trial_catches_a_setpriv_that_keeps_root(tmp_path, monkeypatch):
    fake, real = _fake(tmp_path / "setpriv"), isolation.tool
    monkeypatch.setattr(isolation, "tool", lambda name: fake if name == "setpriv" else real(name))
    assert "ran it as root" in isolation.run_trial("unprivileged")


@pytest.mark.skipif(os.geteuid() != 0, reason=ROOT_ONLY)
def test_the_trial_catches_a_bwrap_that_isolates_nothing(tmp_path, monkeypatch, reachable):  # noqa: F811
    if isolation.tool("unshare") is None or isolation.tool("setpriv") is None:
        pytest.skip("util-linux's unshare and setpriv are needed")
    fake = _fake(reachable / "bwrap")
    monkeypatch.setattr(isolation, "bwrap_path", lambda: fake)
    assert "sees the host" in isolation.run_trial("bubblewrap")


# --- F2: Gradescope's lock-down ------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason=ROOT_ONLY)
def test_the_lock_down_is_checked_not_assumed(tmp_path):
    workbook = find_workbook("00_warmup", Path("exercises"))
    root = _autograder(tmp_path, solved_copy(workbook), workbook)
    assert "source is not root's alone" in gradescope.lock_problem(root)
    lib = gradescope.lock_down(root)
    # This process imports perfmodel from the checkout, not from the locked copy.
    assert f"not {lib}" in gradescope.lock_problem(root)
    os.chmod(root / "source", 0o755)
    assert "source is not root's alone" in gradescope.lock_problem(root)
    gradescope.lock_down(root)
    os.chmod(lib / "perfmodel" / "exercises" / "checks.py", 0o666)
    env = {**os.environ, "PYTHONPATH": str(lib), "PYTHONDONTWRITEBYTECODE": "1"}
    check = "import sys; from pathlib import Path; from perfmodel.grading import gradescope; "
    check += f"print(gradescope.lock_problem(Path({str(root)!r})))"

    def problem() -> str:
        done = subprocess.run([sys.executable, "-c", check], env=env, cwd=tmp_path,
                              capture_output=True, text=True, check=True)  # fmt: skip
        return done.stdout

    assert "exercises/checks.py is not root's, or others may write it" in problem()
    os.chmod(lib / "perfmodel" / "exercises" / "checks.py", 0o644)
    said = problem()
    assert said.strip() == "", said


def _run(root: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environ = {**os.environ, "PYTHONPATH": str(root / "source" / "files"), **env}
    environ["PATH"] = str(root / "no-tools-here")  # bubblewrap off: the unprivileged level
    return subprocess.run(
        [sys.executable, "-m", "perfmodel.grading.gradescope", str(root)],
        env=environ, cwd=root, capture_output=True, text=True, check=False,
    )  # fmt: skip


@pytest.mark.skipif(os.geteuid() != 0, reason=ROOT_ONLY)
def test_a_forged_marker_makes_the_runner_refuse_not_grade_unlocked(tmp_path):
    workbook = find_workbook("00_warmup", Path("exercises"))
    root = _autograder(tmp_path, solved_copy(workbook), workbook)
    done = _run(root, PERFMODEL_LOCKED=str(root / "lib"), PERFMODEL_LOCK_TRIED=str(root / "lib"))
    assert done.returncode == 2, done.stderr[-2000:]
    assert "could not make" in done.stderr
    results = read_json(root / "results" / "results.json")
    assert results["score"] == 0 and results["output"].startswith("not graded"), results


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason=ROOT_ONLY)
def test_perfmodel_locked_in_the_environment_no_longer_skips_the_lock_down(reachable):  # noqa: F811
    """The attack as found: ``PERFMODEL_LOCKED=<root>/lib`` set, ``source/`` left at 755, a
    notebook that reads the tests and scores only if it can."""
    workbook = find_workbook("00_warmup", Path("exercises"))
    student = read_json(workbook.student)
    honest = _autograder(reachable / "honest", solved_copy(workbook), workbook)
    os.chmod(honest / "source", 0o755)
    done = _run(honest, PERFMODEL_LOCKED=str(honest / "lib"))
    assert done.returncode == 0, done.stderr[-2000:]
    assert read_json(honest / "results" / "results.json")["score"] == 5
    assert _mode(honest / "source") == 0o700
    root = _autograder(reachable / "hostile", {}, workbook)
    os.chmod(root / "source", 0o755)
    attack = GRADESCOPE_HOSTILE.format(root=str(root))
    hostile = with_code(student, len(student["cells"]), when(attack, solved_copy(workbook)))
    (root / "submission" / "anything.ipynb").write_text(json.dumps(hostile), encoding="utf-8")
    done = _run(root, PERFMODEL_LOCKED=str(root / "lib"))
    assert done.returncode == 0, done.stderr[-2000:]
    results = read_json(root / "results" / "results.json")
    assert results["score"] == 0, results["output"]
    assert "isolation level 'unprivileged'" in results["output"]
    assert _mode(root / "source") == 0o700
