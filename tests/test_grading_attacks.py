"""The second hostile campaign, graded in one batch by the CLI and through Gradescope's layout.

Every attack scores 0, honest work full marks, every entry in the folder gets exactly one
row, text fields are bounded and safe for a spreadsheet, and nothing is left behind.
"""

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
from attacks import (
    answered,
    build_attacks,
    grade_command,
    recovered_answers,
    search_key,
    shipped_keys,
    when,
)
from conftest import WORKBOOKS, assigned, read_json, solved_copy, with_code
from test_grading_hostile import leftover_kernels, package_fingerprint

from perfmodel import exercises
from perfmodel.course import isolation
from perfmodel.course.grading import MAX_TEXT, score_answers
from perfmodel.course.workbooks import find_workbook

needs_bubblewrap = pytest.mark.skipif(
    isolation.probe() != "", reason=f"no bubblewrap here: {isolation.probe()}"
)


@pytest.fixture(scope="module")
def attack_batch(tmp_path_factory):
    """One CLI batch over the whole attack folder, shared by every test below."""
    root = tmp_path_factory.mktemp("attacks")
    workbook = find_workbook("00_warmup", Path("exercises"))
    folder, out, private_tmp = root / "submissions", root / "out", root / "tmp"
    for path in (folder, private_tmp):
        path.mkdir()
    expected = build_attacks(workbook, folder)
    package_before = package_fingerprint()
    command = grade_command(folder, out, cell_s=30, memory_gib=1, disk_mib=64)
    env = {**os.environ, "TMPDIR": str(private_tmp)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    return {
        "done": done,
        "expected": expected,
        "out": out,
        "tmp": private_tmp,
        "package_before": package_before,
        "rows": list(csv.DictReader(io.StringIO((out / "grades.csv").read_text("utf-8"))))
        if (out / "grades.csv").is_file()
        else [],
    }


@pytest.mark.slow
@needs_bubblewrap
def test_every_attack_scores_zero_and_honest_work_full_marks(attack_batch):
    assert attack_batch["done"].returncode == 0, attack_batch["done"].stderr[-2000:]
    rows = {row["submission"].removeprefix("'"): row for row in attack_batch["rows"]}
    for name, (status, total, phrase) in attack_batch["expected"].items():
        row = rows[name]
        assert (row["status"], float(row["total"])) == (status, total), (name, row["reason"])
        assert phrase in row["reason"], (name, row["reason"])
        assert float(row["possible"]) == 5
        ran = row["isolation"]
        assert ran == (
            "not run" if name in {"link.ipynb", "classmate_link.ipynb", ".ipynb"} else "bubblewrap"
        ), (name, ran)


@pytest.mark.slow
@needs_bubblewrap
def test_every_entry_gets_one_row_and_names_stay_distinct(attack_batch):
    names = [row["submission"] for row in attack_batch["rows"]]
    assert len(names) == len(set(names)) == len(attack_batch["expected"])
    assert "caf\\xe9.ipynb" in names and "caf\\\\xe9.ipynb" in names
    feedback = attack_batch["out"] / "grades_feedback"
    assert len(list(feedback.iterdir())) == len(names)


@pytest.mark.slow
@needs_bubblewrap
def test_text_fields_are_bounded_escaped_and_safe_in_a_spreadsheet(attack_batch):
    rows = {row["submission"]: row for row in attack_batch["rows"]}
    assert "'=HYPERLINK(1).ipynb" in rows, "a formula-like name must be quoted"
    for row in attack_batch["rows"]:
        for field in ("submission", "reason"):
            assert len(row[field]) <= MAX_TEXT
            assert not row[field].startswith(("=", "+", "-", "@"))
            assert all(ord(char) >= 32 for char in row[field])
    assert "raised EEE" in rows["long_name.ipynb"]["reason"]
    for name in ("surrogate.ipynb.json", "surrogate_answers.ipynb.json"):
        text = (attack_batch["out"] / "grades_feedback" / name).read_bytes()
        record = json.loads(text.decode("utf-8"))  # valid UTF-8: no lone surrogate got in
        messages = [case["message"] for q in record["questions"] for case in q["cases"]]
        assert all(len(message) <= MAX_TEXT for message in messages)
    answers = read_json(attack_batch["out"] / "grades_feedback" / "surrogate_answers.ipynb.json")
    assert "\\udcff" in json.dumps(answers, ensure_ascii=False)


@pytest.mark.slow
@needs_bubblewrap
def test_the_batch_leaves_nothing_behind(attack_batch):
    assert list(attack_batch["tmp"].iterdir()) == [], "grading left files in TMPDIR"
    assert leftover_kernels() == [], "grading left processes behind"
    assert package_fingerprint() == attack_batch["package_before"]
    assert not (attack_batch["out"] / "grades.csv.partial").exists()


@pytest.mark.parametrize("workbook", WORKBOOKS, ids=lambda workbook: workbook.name)
def test_a_search_of_every_shipped_key_scores_zero(workbook):
    """The shipped keys fall to search (the attack is real), and buy nothing."""
    student = read_json(workbook.student)
    answers = recovered_answers(student)
    for question, checks in shipped_keys(student).items():
        for name, key, _ in checks:
            if ":count:" in key:
                continue  # whole numbers are searched up to two million only
            assert answers[name] is not None, f"{workbook.name} {question} {name}: search failed"
    scored = score_answers(assigned(workbook).tests, answers)
    practice = [case for q in scored for case in q.cases if not case["hidden"]]
    assert all(case["points"] == 0 for case in practice), "practice carries no points"
    assert sum(q.score for q in scored) == 0, [(q.name, q.score) for q in scored]
    assert sum(q.possible for q in scored) > 0


def test_the_key_search_recovers_a_value_the_check_accepts():
    key = exercises.number_key(3.7e-4, rel_tol=0.01, salt="attack/q1/x")
    exercises.check_number("x", search_key(key), key)
    assert (
        search_key(exercises.choice_key("memory", salt="attack/q2/y"), ("compute", "memory"))
        == "memory"
    )


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
        [sys.executable, "-m", "perfmodel.course.gradescope", str(root)],
        check=True, env=env, cwd=root, capture_output=True,
    )  # fmt: skip
    return read_json(root / "results" / "results.json")


def test_the_seccomp_filter_refuses_what_reaches_around_the_caps():
    """In a child under the filter: no memfds, user namespaces or inet sockets; threads,
    processes and Unix sockets as usual."""
    import ctypes
    import socket

    from perfmodel.course import seccomp

    if seccomp.program() is None:
        pytest.skip("no filter for this machine's architecture")
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        outcome = {"installed": seccomp.install()}
        libc = ctypes.CDLL(None, use_errno=True)
        for name, attempt in {
            "memfd": lambda: os.memfd_create("x"),
            "inet": lambda: socket.socket(socket.AF_INET),
            "inet6": lambda: socket.socket(socket.AF_INET6),
            "unix": lambda: socket.socketpair(),
            "subprocess": lambda: subprocess.run(["true"], check=True),
        }.items():
            try:
                attempt()
                outcome[name] = "ok"
            except OSError:
                outcome[name] = "refused"
        outcome["userns"] = "ok" if libc.unshare(0x10000000) == 0 else "refused"
        # memfd_secret and io_uring_setup share their numbers on x86-64 and AArch64.
        outcome["memfd_secret"] = "ok" if libc.syscall(447, 0) >= 0 else "refused"
        outcome["io_uring"] = "ok" if libc.syscall(425, 8, None) >= 0 else "refused"
        outcome["shmget"] = "ok" if libc.shmget(0, 4096, 0o1600) >= 0 else "refused"
        one, _ = socket.socketpair()
        try:
            one.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
            outcome["sndbuf"] = "ok"
        except OSError:
            outcome["sndbuf"] = "refused"
        os.write(write, json.dumps(outcome).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    outcome = json.loads(os.read(read, 4096))
    assert outcome == {
        "installed": True, "memfd": "refused", "inet": "refused", "inet6": "refused",
        "unix": "ok", "subprocess": "ok", "userns": "refused", "memfd_secret": "refused",
        "io_uring": "refused", "shmget": "refused", "sndbuf": "refused",
    }  # fmt: skip


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
            [sys.executable, "-m", "perfmodel.course.cli", "grade", str(exposed), str(folder),
             "--out", str(out / "grades.csv"), "--no-progress"],
            capture_output=True, text=True, env=env, check=False,
        )  # fmt: skip
    assert refused.returncode == 2 and "unreadable to other users" in refused.stderr
    assert not (out / "grades.csv").exists()
    private = tmp_path / "keys"  # under pytest's own 0700 folder
    private.mkdir(mode=0o700)
    shutil.copy(workbook.master, private / "00_warmup.ipynb")
    command = [
        sys.executable, "-m", "perfmodel.course.cli", "grade", str(private / "00_warmup.ipynb"),
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


def test_names_that_look_alike_print_apart():
    from perfmodel.course.grading import display_name, sheet_cell

    names = [
        "=a.ipynb", "'=a.ipynb", "alice smith", "alice\u0085smith", "alice\u00a0smith",
        "bob\uf0000", "bob\U000f0000", "carol", "carol\u3164", "d\u202eb", "db",
        os.fsdecode(b"caf\xe9"), "caf\\xe9", "e\u200bf", "ef",
    ]  # fmt: skip
    shown = [sheet_cell(display_name(Path(name))) for name in names]
    assert len(set(shown)) == len(names), shown
    for text in shown:
        assert all(char == " " or char.isprintable() for char in text), text
