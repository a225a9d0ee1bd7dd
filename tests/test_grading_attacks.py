"""The second hostile campaign, graded in one batch by the CLI and through Gradescope's layout.

Every attack scores 0, honest work full marks, every entry in the folder gets exactly one
row, text fields are bounded and safe for a spreadsheet, and nothing is left behind.
"""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
from pathlib import Path

import pytest
from attacks import (
    build_attacks,
    grade_command,
    recovered_answers,
    search_key,
    shipped_keys,
)
from test_grading_hostile import leftover_kernels, package_fingerprint

from conftest import WORKBOOKS, assigned, read_json
from perfmodel import exercises
from perfmodel.grading import isolation
from perfmodel.grading.grade import MAX_TEXT, score_answers
from perfmodel.grading.workbooks import find_workbook

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


def test_the_seccomp_filter_refuses_what_reaches_around_the_caps():
    """In a child under the filter: no memfds, user namespaces or inet sockets; threads,
    processes and Unix sockets as usual."""
    import ctypes
    import socket

    from perfmodel.grading import seccomp

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


def test_names_that_look_alike_print_apart():
    from perfmodel.grading.grade import display_name, sheet_cell

    names = [
        "=a.ipynb", "'=a.ipynb", "alice smith", "alice\u0085smith", "alice\u00a0smith",
        "bob\uf0000", "bob\U000f0000", "carol", "carol\u3164", "d\u202eb", "db",
        os.fsdecode(b"caf\xe9"), "caf\\xe9", "e\u200bf", "ef",
    ]  # fmt: skip
    shown = [sheet_cell(display_name(Path(name))) for name in names]
    assert len(set(shown)) == len(names), shown
    for text in shown:
        assert all(char == " " or char.isprintable() for char in text), text
