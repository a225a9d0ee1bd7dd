"""Grading without bubblewrap, and through Gradescope's layout: the isolation levels below
the sandbox hold as the README says (a module of its own, so that it runs beside the attack
batch rather than after it)."""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from attacks import answered, recovered_answers, when

from conftest import assigned, read_json, solved_copy, with_code
from perfmodel.grading import isolation
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
           (root + "/lib/perfmodel/exercises.py", "a"), (root + "/lib/sitecustomize.py", "w"),
           (root + "/source/files/perfmodel/exercises.py", "a")]
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


@pytest.fixture
def traversable_root():
    """Let an unprivileged user reach a Python installed under /root, as run_autograder does.

    A lock held for the whole test keeps two test runs (two checkouts, say) from each
    restoring the other's change."""
    import fcntl

    if not os.path.isdir("/root") or os.geteuid() != 0:
        yield
        return
    with open("/tmp/perfmodel-traversable-root.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        before = stat.S_IMODE(os.stat("/root").st_mode)
        os.chmod("/root", before | stat.S_IXOTH)
        try:
            yield
        finally:
            os.chmod("/root", before)


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
def test_gradescope_layout_holds_with_and_without_bubblewrap(
    tmp_path, with_bwrap, traversable_root
):
    if with_bwrap and isolation.probe():
        pytest.skip(f"no bubblewrap here: {isolation.probe()}")
    workbook = find_workbook("00_warmup", Path("exercises"))
    student = read_json(workbook.student)
    cases = {
        "honest": (solved_copy(workbook), 5),
        "key_search": (answered(student, recovered_answers(student)), 0),
    }
    for name, (nb, total) in cases.items():
        root = _autograder(tmp_path / name, nb, workbook)
        results = _run_autograder(root, with_bwrap)
        assert results["score"] == total, (name, results["output"])
    root = _autograder(tmp_path / "hostile", {}, workbook)
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
    assert b"rigged" not in (root / "lib" / "perfmodel" / "exercises.py").read_bytes()
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

DAEMON_AFTER = """
import os
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open(os.path.join("/tmp", "left-behind-%d" % os.getpid()), "w").write("x")
        os.execv("/bin/sleep", ["sleep", "299.25"])
    os._exit(0)
"""


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="the unprivileged level needs a root grader")
def test_the_unprivileged_level_keeps_classmates_apart_and_cleans_up(tmp_path, traversable_root):
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
    env = {**os.environ, "PATH": str(tmp_path / "no-tools-here")}
    import tempfile

    # A master every user may read is refused: the submissions would run as other users.
    with tempfile.TemporaryDirectory(prefix="perfmodel-open-") as open_folder:
        os.chmod(open_folder, 0o755)
        exposed = Path(open_folder) / "00_warmup.ipynb"
        shutil.copy(workbook.master, exposed)
        os.chmod(exposed, 0o644)
        refused = subprocess.run(
            [sys.executable, "-m", "perfmodel.cli", "grade", str(exposed), str(folder),
             "--out", str(out / "grades.csv"), "--no-progress"],
            capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
    assert refused.returncode == 2 and "unreadable to other users" in refused.stderr
    assert not (out / "grades.csv").exists()
    private = tmp_path / "keys"  # under pytest's own 0700 folder
    private.mkdir(mode=0o700)
    shutil.copy(workbook.master, private / "00_warmup.ipynb")
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
        "a_reader.ipynb": ("0", "unprivileged"),
        "b_honest.ipynb": ("5", "unprivileged"),
        "c_daemon.ipynb": ("5", "unprivileged"),
    }
    assert _running(b"sleep\0" + b"299.25") == [], "a sandbox's daemon outlived its row"
    assert not list(Path("/tmp").glob("left-behind-*")), "a sandbox's file outlived its row"
