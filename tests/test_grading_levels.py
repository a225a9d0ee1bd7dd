"""Grading without bubblewrap, and through Gradescope's layout: the isolation levels below
the sandbox hold as the README says, and where none can run, nothing is graded unless asked
(a module of its own, so that it runs beside the attack batch rather than after it).

Where the clone sits does not matter: a test of the unprivileged level opens the folders on
the way to this Python for itself (:func:`reachable`), and a test of a refusal makes a Python
whose environment sits in a folder of its own that only root may enter (:func:`closed_python`).
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import os
import shutil
import site
import stat
import subprocess
import sys
import tempfile
import venv
import zipfile
from pathlib import Path

import pytest
from attacks import answered, column, recovered_answers, when

from conftest import assigned, read_json, solved_copy, with_code
from perfmodel.grading import isolation, leftovers, levels
from perfmodel.grading.workbooks import find_workbook

# --- Gradescope's /autograder layout ------------------------------------------------------

GRADESCOPE_HOSTILE = """
import glob, os
root = {root!r}
attack_worked = False
for path in glob.glob(root + "/source/tests/*.py") + glob.glob(root + "/source/otter_config.json"):
    try:
        open(path).read(1)
        attack_worked = True
    except OSError:
        pass
targets = [(root + "/run_autograder", "a"), (root + "/results/results.json", "w"),
           (root + "/lib/perfmodel/exercises/checks.py", "a"),
           (root + "/lib/sitecustomize.py", "w"),
           (root + "/source/files/perfmodel/exercises/checks.py", "a")]
for path, mode in targets:
    try:
        with open(path, mode) as handle:
            handle.write("\\n# rigged\\n")
        attack_worked = True
    except OSError:
        pass
os.makedirs("perfmodel", exist_ok=True)
with open("perfmodel/__init__.py", "w") as handle:  # a shadow package in its own folder
    handle.write("raise SystemExit('rigged')")
"""


@contextlib.contextmanager
def _folders_held():
    """Hold the lock under which tests change folders' modes (two checkouts share it)."""
    import fcntl

    with open("/tmp/perfmodel-traversable-root.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


@pytest.fixture
def reachable():
    """Let the unprivileged level's fresh uid reach this Python and the package, as
    run_autograder does for /root: each closed folder on the way gets the "other" search bit
    for the test (so a clone in a 0700 folder works too), and its mode back after. The lock,
    held for the whole test, keeps two tests from each restoring the other's change.

    The checkout's masters, git history and ``dist/`` are closed to other users meanwhile, as
    ``perfmodel grade`` asks.
    Yields a new folder that uid may pass through, for what it must reach (pytest's own
    temporary folders are no place for it: every pytest that starts makes them 0700 again).
    """
    if os.geteuid() != 0:
        pytest.skip("the unprivileged level needs a root grader")
    modes: dict[Path, int] = {}
    with _folders_held():
        folder = Path(tempfile.mkdtemp(prefix="perfmodel-reachable-"))
        try:
            os.chmod(folder, 0o711)
            while closed := levels.closed_folders([*levels.needed_paths(), folder]):
                for shut, _ in closed:
                    modes.setdefault(shut, stat.S_IMODE(shut.stat().st_mode))
                    os.chmod(shut, modes[shut] | stat.S_IXOTH)
            checkout = Path(isolation.package_parent()).parent
            for secret in ("exercises/masters", ".git", "dist"):
                if (checkout / secret).is_dir():
                    shut = (checkout / secret).resolve()
                    modes.setdefault(shut, stat.S_IMODE(shut.stat().st_mode))
                    os.chmod(shut, modes[shut] & ~0o007)
            yield folder
        finally:
            for shut, mode in modes.items():
                os.chmod(shut, mode)
            leftovers.remove_tree(folder)


@pytest.fixture
def closed_python(tmp_path) -> Path:
    """A Python with this one's packages whose environment sits in a folder only its owner may
    enter: no unprivileged uid can run it, wherever the clone is."""
    closed = tmp_path / "closed"
    closed.mkdir(mode=0o700)
    venv.create(closed / "env", symlinks=True, with_pip=False)
    [site_packages] = (closed / "env" / "lib").glob("python3*/site-packages")
    folders = [*site.getsitepackages(), isolation.package_parent()]
    lines = "; ".join(f"site.addsitedir({folder!r})" for folder in folders)
    (site_packages / "parent.pth").write_text(f"import site; {lines}\n", encoding="utf-8")
    return closed / "env" / "bin" / "python"


def _first_closed(path: Path) -> Path | None:
    """The first folder on the way to ``path`` without the "other" search bit."""
    return next((f for f in reversed(path.parents) if not f.stat().st_mode & stat.S_IXOTH), None)


def _autograder(tmp_path: Path, nb: dict, workbook) -> Path:
    root = tmp_path / "autograder"
    with zipfile.ZipFile(io.BytesIO(assigned(workbook).autograder_zip)) as archive:
        archive.extractall(root / "source")
    shutil.copy(root / "source" / "run_autograder", root / "run_autograder")
    (root / "submission").mkdir()
    (root / "results").mkdir()
    (root / "submission" / "anything.ipynb").write_text(json.dumps(nb), encoding="utf-8")
    return root


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="Gradescope runs the autograder as root")
@pytest.mark.parametrize("with_bwrap", [True, False], ids=["bubblewrap", "no-bubblewrap"])
def test_gradescope_layout_holds_with_and_without_bubblewrap(tmp_path, with_bwrap, request):
    if with_bwrap and isolation.probe():
        pytest.skip(f"no bubblewrap here: {isolation.probe()}")
    base = tmp_path if with_bwrap else request.getfixturevalue("reachable")
    workbook = find_workbook("00_warmup", Path("exercises"))
    student = read_json(workbook.student)
    cases = {
        "honest": (solved_copy(workbook), 5),
        "key_search": (answered(student, recovered_answers(student)), 0),
    }
    for name, (nb, total) in cases.items():
        root = _autograder(base / name, nb, workbook)
        results = _run_autograder(root, with_bwrap)
        assert results["score"] == total, (name, results["output"])
    root = _autograder(base / "hostile", {}, workbook)
    attack = when(GRADESCOPE_HOSTILE.format(root=str(root)), solved_copy(workbook))
    hostile = with_code(student, len(student["cells"]), attack)
    (root / "submission" / "anything.ipynb").write_text(json.dumps(hostile), encoding="utf-8")
    runner = (root / "run_autograder").read_bytes()
    results = _run_autograder(root, with_bwrap)
    assert results["score"] == 0, results["output"]
    level = "bubblewrap" if with_bwrap else "unprivileged"
    if not with_bwrap:
        assert "isolation level 'unprivileged'" in results["output"]
    assert (root / "run_autograder").read_bytes() == runner
    assert b"rigged" not in (root / "lib" / "perfmodel" / "exercises" / "checks.py").read_bytes()
    assert not (root / "lib" / "sitecustomize.py").exists()
    assert stat.S_IMODE((root / "source").stat().st_mode) == 0o700, level


def _run_autograder(root: Path, with_bwrap: bool) -> dict:
    env = {**os.environ, "PYTHONPATH": str(root / "source" / "files")}
    env.pop("PERFMODEL_LOCKED", None)
    if not with_bwrap:
        env["PATH"] = str(root / "no-tools-here")
    subprocess.run(
        [sys.executable, "-m", "perfmodel.grading.gradescope", str(root)],
        check=True, env=env, cwd=root, capture_output=True,
    )  # fmt: skip
    return read_json(root / "results" / "results.json")


def _running(command: bytes) -> list[int]:
    """Processes whose command line is ``command`` (arguments joined by NUL bytes)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if (entry / "cmdline").read_bytes().rstrip(b"\0") == command:
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


CLASSMATE_READER = """
import glob, os, time
attack_worked = False
deadline = time.time() + 15
while time.time() < deadline and not attack_worked:
    # The grader's folders are traversable, not listable: try each one's inbox by name.
    own = os.path.dirname(os.getcwd())  # this sandbox's own grading folder
    for folder in glob.glob("/tmp/perfmodel-grade-*"):
        if folder == own:
            continue
        try:
            open(folder + "/inbox/submission.ipynb").read(1)
            attack_worked = True
        except OSError:
            pass
    time.sleep(0.2)
"""

CMDLINE_READER = """
import glob
attack_worked = False
for path in glob.glob("/proc/[0-9]*/cmdline"):  # the grader's names the folder and the sheet
    try:
        text = open(path, "rb").read()
    except OSError:
        continue
    attack_worked = attack_worked or b"grades.csv" in text or b"submissions" in text
"""

DAEMON_AFTER = """
import glob, os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open(os.path.join("/tmp", "left-behind-%d" % os.getpid()), "w").write("x")
        for nested in glob.glob("/tmp/perfmodel-nested-*/sticky"):  # as /tmp/.X11-unix is
            open(os.path.join(nested, "left-behind-%d" % os.getpid()), "w").write("x")
        os.execv("/bin/sleep", ["sleep", "299.25"])
    os._exit(0)
"""


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the unprivileged level needs a root grader")
def test_the_unprivileged_level_keeps_classmates_apart_and_cleans_up(tmp_path, reachable):
    """Without bubblewrap on PATH: classmates' inboxes stay unreadable, and nothing a
    submission starts or writes in the shared temporary folders outlives its row."""
    workbook = find_workbook("00_warmup", Path("exercises"))
    student, solved = read_json(workbook.student), solved_copy(workbook)
    folder, out = tmp_path / "submissions", tmp_path / "out"
    folder.mkdir()
    reader = with_code(student, len(student["cells"]), when(CLASSMATE_READER, solved))
    (folder / "a_reader.ipynb").write_text(json.dumps(reader), encoding="utf-8")
    (folder / "b_honest.ipynb").write_text(json.dumps(solved), encoding="utf-8")
    daemon = with_code(solved, 1, DAEMON_AFTER)
    (folder / "c_daemon.ipynb").write_text(json.dumps(daemon), encoding="utf-8")
    peeker = with_code(student, len(student["cells"]), when(CMDLINE_READER, solved))
    (folder / "d_cmdline.ipynb").write_text(json.dumps(peeker), encoding="utf-8")
    env = {**os.environ, "PATH": str(tmp_path / "no-tools-here")}
    nested = Path(tempfile.mkdtemp(prefix="perfmodel-nested-", dir="/tmp")) / "sticky"
    nested.mkdir()
    os.chmod(nested.parent, 0o755)
    os.chmod(nested, 0o1777)
    # A master or a classmate's notebook every user may read is refused: the submissions
    # would run as other users.
    private = tmp_path / "keys"  # under pytest's own 0700 folder
    private.mkdir(mode=0o700)
    shutil.copy(workbook.master, private / "00_warmup.ipynb")
    for name, source in (("keys", workbook.master), ("submissions", folder / "b_honest.ipynb")):
        (reachable / name).mkdir()
        os.chmod(reachable / name, 0o755)
        shutil.copy(source, reachable / name / source.name)
        os.chmod(reachable / name / source.name, 0o644)
    for master, submissions, phrase in (
        (reachable / "keys" / workbook.master.name, folder, "the answer key"),
        (private / "00_warmup.ipynb", reachable / "submissions", "a classmate's submission"),
    ):
        refused = subprocess.run(
            [sys.executable, "-m", "perfmodel.cli", "grade", str(master), str(submissions),
             "--out", str(out / "grades.csv"), "--no-progress"],
            capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
        assert refused.returncode == 2, refused.stderr[-2000:]
        assert "unreadable to other users" in refused.stderr and phrase in refused.stderr
    assert not (out / "grades.csv").exists()
    command = [
        sys.executable, "-m", "perfmodel.cli", "grade", str(private / "00_warmup.ipynb"),
        str(folder), "--out", str(out / "grades.csv"), "--jobs", "2", "--no-progress",
        "--timeout", "60",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = {row["submission"]: row for row in csv.DictReader(io.StringIO(
        (out / "grades.csv").read_text("utf-8")))}  # fmt: skip
    assert {name: (row["total"], row["isolation"]) for name, row in rows.items()} == {
        "a_reader.ipynb": ("0", column("unprivileged")),
        "b_honest.ipynb": ("5", column("unprivileged")),
        "c_daemon.ipynb": ("5", column("unprivileged")),
        "d_cmdline.ipynb": ("0", column("unprivileged")),
    }
    assert _running(b"sleep\0" + b"299.25") == [], "a sandbox's daemon outlived its row"
    assert not list(Path("/tmp").glob("left-behind-*")), "a sandbox's file outlived its row"
    assert not list(nested.iterdir()), "a file in a nested shared folder outlived its row"
    shutil.rmtree(nested.parent)


@pytest.mark.slow
def test_where_no_level_runs_nothing_is_graded_unless_asked(tmp_path, closed_python):
    """Bubblewrap off PATH and the environment in a 0700 folder: ``perfmodel grade`` and the
    Gradescope runner stop before the first submission, naming the folder (as root; as
    another user, saying that only root can run the unprivileged level); with
    ``--no-isolation`` the batch runs, and the CSV says so."""
    workbook = find_workbook("00_warmup", Path("exercises"))
    folder, out = tmp_path / "submissions", tmp_path / "out"
    folder.mkdir()
    (folder / "right.ipynb").write_text(json.dumps(solved_copy(workbook)), encoding="utf-8")
    env = {**os.environ, "PATH": str(tmp_path / "no-tools-here")}
    command = [
        str(closed_python), "-m", "perfmodel.cli", "grade", str(workbook.master), str(folder),
        "--out", str(out / "grades.csv"), "--no-progress",
    ]  # fmt: skip
    root = _autograder(tmp_path / "gradescope", solved_copy(workbook), workbook)
    runner = [str(closed_python), "-m", "perfmodel.grading.gradescope", str(root)]
    with _folders_held():  # no test opens a folder meanwhile
        named = _first_closed(closed_python) if os.geteuid() == 0 else "not root"
        refused = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        gradescope_env = {**env, "PYTHONPATH": str(root / "source" / "files")}
        gradescope_env.pop("PERFMODEL_LOCKED", None)
        stopped = subprocess.run(
            runner, capture_output=True, text=True, env=gradescope_env, check=False
        )
    assert refused.returncode == 2, refused.stderr[-2000:]
    for phrase in ("nothing was graded", "`bwrap`) is not installed", str(named), "--no-isolation"):
        assert phrase in refused.stderr, (phrase, refused.stderr[-2000:])
    assert not out.exists(), "a refused batch wrote its sheet"
    assert stopped.returncode == 2, stopped.stderr[-2000:]
    assert str(named) in stopped.stderr and "--no-isolation" in stopped.stderr
    results = read_json(root / "results" / "results.json")
    assert results["score"] == 0 and results["output"].startswith("not graded"), results
    assert str(named) in results["output"]

    done = subprocess.run(
        [*command, "--no-isolation"], capture_output=True, text=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "WARNING: grading WITHOUT isolation (--no-isolation)" in done.stderr
    [row] = csv.DictReader(io.StringIO((out / "grades.csv").read_text("utf-8")))
    assert (row["total"], row["isolation"]) == ("5", "none")
