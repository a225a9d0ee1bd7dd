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
    column,
    grade_command,
    recovered_answers,
    search_key,
    shipped_keys,
)
from test_grading_hostile import leftover_kernels, package_fingerprint

from conftest import WORKBOOKS, assigned, read_json
from perfmodel import exercises
from perfmodel.grading import isolation
from perfmodel.grading.grade import score_answers
from perfmodel.grading.text import MAX_TEXT
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
            "not run"
            if name in {"link.ipynb", "classmate_link.ipynb", ".ipynb"}
            else column("bubblewrap")
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
    assert leftover_kernels(attack_batch["tmp"]) == [], "grading left processes behind"
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


def test_the_seccomp_allowlist_refuses_everything_it_does_not_name():
    """In a child under the filter: no memfds, namespaces, keyrings, io_uring, ptrace,
    network, vsock or netlink sockets but routing; threads, processes and Unix sockets as
    usual."""
    import ctypes
    import socket

    from perfmodel.grading import seccomp

    if seccomp.problem():
        pytest.skip(seccomp.problem())
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        outcome = {"installed": seccomp.install()}
        libc = ctypes.CDLL(None, use_errno=True)
        libc.syscall.restype = ctypes.c_long
        for name, attempt in {
            "memfd": lambda: os.memfd_create("x"),
            "inet": lambda: socket.socket(socket.AF_INET),
            "inet6": lambda: socket.socket(socket.AF_INET6),
            "vsock": lambda: socket.socket(40, socket.SOCK_STREAM),
            "netlink audit": lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9),
            "netlink uevent": lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 15),
            "netlink route": lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0),
            "packet": lambda: socket.socket(17, socket.SOCK_RAW, 0),
            "unix": lambda: socket.socketpair(),
            "subprocess": lambda: subprocess.run(["true"], check=True),
            "thread": lambda: __import__("threading").Thread(target=int).start(),
        }.items():
            outcome[name] = _tried(attempt)
        numbers = {  # x86-64 numbers; AArch64 uses the generic table
            "x86_64": {"add_key": 248, "keyctl": 250, "request_key": 249, "ptrace": 101,
                       "io_uring_setup": 425, "memfd_secret": 447, "userfaultfd": 323,
                       "bpf": 321, "perf_event_open": 298, "setns": 308, "mount": 165,
                       "shmget": 29, "msgget": 68, "vmsplice": 278, "pidfd_getfd": 438},
            "aarch64": {"add_key": 217, "keyctl": 219, "request_key": 218, "ptrace": 117,
                        "io_uring_setup": 425, "memfd_secret": 447, "userfaultfd": 282,
                        "bpf": 280, "perf_event_open": 241, "setns": 268, "mount": 40,
                        "shmget": 194, "msgget": 186, "vmsplice": 75, "pidfd_getfd": 438},
        }[__import__("platform").machine()]  # fmt: skip
        for name, number in numbers.items():
            result = libc.syscall(number, 0, 0, 0, 0, 0)
            outcome[name] = "refused" if result < 0 and ctypes.get_errno() == 1 else "ok"
        outcome["userns"] = "ok" if libc.unshare(0x10000000) == 0 else "refused"
        one, _ = socket.socketpair()
        try:
            one.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 1 << 22)
            outcome["sndbuf"] = "ok"
        except OSError:
            outcome["sndbuf"] = "refused"
        one.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)  # other options as usual
        for backlog in (seccomp.LISTEN_BACKLOG, seccomp.LISTEN_BACKLOG + 1, 4096):
            server = socket.socket(socket.AF_UNIX)
            server.bind(f"\0perfmodel-listen-{os.getpid()}-{backlog}")
            try:
                server.listen(backlog)
                outcome[f"listen {backlog}"] = "ok"
            except OSError:
                outcome[f"listen {backlog}"] = "refused"
        os.write(write, json.dumps(outcome).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    outcome = json.loads(os.read(read, 4096))
    allowed = {"installed": True, "unix": "ok", "subprocess": "ok", "thread": "ok"}
    allowed["netlink route"] = "ok"  # ZeroMQ's interface listing
    allowed[f"listen {seccomp.LISTEN_BACKLOG}"] = "ok"  # ZeroMQ's 100, Python's 128
    assert outcome == {name: allowed.get(name, "refused") for name in outcome}
    assert len(outcome) == 32


def test_the_allowlist_holds_every_call_a_recorded_grading_run_made():
    """``benchmarks/syscalls.py --save`` over every master and student copy: each call it
    recorded is allowed, by name or by its arguments; nothing refused by name was needed."""
    from perfmodel.grading import seccomp

    recorded = (Path(__file__).parent / "data" / "recorded_syscalls.txt").read_text().split()
    assert len(recorded) > 50
    assert [name for name in recorded if name not in seccomp.ALLOWED | seccomp.RULED] == []
    assert not {"keyctl", "add_key", "ptrace", "unshare", "memfd_create"} & seccomp.ALLOWED


def test_names_that_look_alike_print_apart():
    from perfmodel.grading.text import display_name, display_names, sheet_cell

    names = [
        "=a.ipynb", "'=a.ipynb", "alice smith", "alice\u0085smith", "alice\u00a0smith",
        "bob\uf0000", "bob\U000f0000", "carol", "carol\u3164", "d\u202eb", "db",
        os.fsdecode(b"caf\xe9"), "caf\\xe9", "e\u200bf", "ef",
    ]  # fmt: skip
    shown = [sheet_cell(display_name(Path(name))) for name in names]
    assert len(set(shown)) == len(names), shown
    for text in shown:
        assert all(char == " " or char.isprintable() for char in text), text
    # Default-ignorable code points, marks with nothing to sit on, another script's look-alike
    # letters, decomposed and full-width forms: each batch prints every name apart, and the
    # plain ASCII name as it is.
    for odd in [
        "alice\u034f", "alice\ufe0f", "alice\u17b4", "alice\U000e0100", "alice\u180b",
        "\u0301alice", "alic\u0435", "\u0430lice", "\u0391lice", "ａｌｉｃｅ",
        "alice\u00ad", "alice\u2060", "alice\u115f", "alic\u00e9", "alice\u0301",
        "alice\U00016fe4", "\u0585lice", "alic\u0565", "al\u0456ce", "alice\u0301\u0301\u0301",
        "alic\u1d07", "\u13bblice", "alice\ua4f8",
    ]:  # fmt: skip
        batch = display_names([Path("alice.ipynb"), Path(odd + ".ipynb")])
        assert batch[Path("alice.ipynb")] == "alice.ipynb"
        assert len(set(batch.values())) == 2, (odd, batch)
        assert all(char.isprintable() for char in batch[Path(odd + ".ipynb")]), batch
    decomposed = display_names([Path("alice\u0301.ipynb"), Path("alic\u00e9\u0301.ipynb")])
    assert len(set(decomposed.values())) == 2
    # A mixed-script word is written out alone; names in one script each print as typed.
    assert display_name(Path("b\u0585b.ipynb")) == "b\\u0585b.ipynb"
    for plain in ("José Ñúñez.ipynb", "\u0915\u093f.ipynb", "张伟.ipynb", "田中たろう.ipynb"):
        assert display_name(Path(plain)) == plain


def test_reasons_and_feedback_print_as_they_are():
    from perfmodel.grading.text import safe_text

    for char in "\u202e\u202d\u2066\u2067\u2069\u200b\u200d\u2028\u2029\u061c\ufeff\u034f":
        shown = safe_text(f"score 0{char}5 of 5")
        assert char not in shown and f"\\u{ord(char):04x}" in shown
    assert safe_text("naïve café, 温度 ok") == "naïve café, 温度 ok"
    assert safe_text("m" + "\u0301" * 5) == "m\u0301\u0301" + "\\u0301" * 3  # no mark stack


def test_landlock_keeps_the_sandbox_from_the_hosts_abstract_sockets_and_signals():
    """The unprivileged level has no namespaces: without Landlock's scopes a submission could
    reach every abstract Unix socket on the host (a desktop bus, an X server) and signal any
    process its uid may."""
    import socket

    from perfmodel.grading import landlock

    if landlock.abi() < landlock.SCOPED_ABI:
        pytest.skip(f"this kernel's Landlock ABI is {landlock.abi()}; scopes need 6")
    outside = socket.socket(socket.AF_UNIX)
    outside.bind(f"\0perfmodel-outside-{os.getpid()}")
    outside.listen(1)
    read, write = os.pipe()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child reports through the pipe
        outcome = {"scoped": landlock.scope()}
        for name, attempt in {
            "host socket": lambda: socket.socket(socket.AF_UNIX).connect(
                f"\0perfmodel-outside-{parent}"
            ),
            "host signal": lambda: os.kill(parent, 0),
            "own socket": lambda: _own_abstract_pair(socket),
            "own signal": lambda: os.kill(os.getpid(), 0),
        }.items():
            outcome[name] = _tried(attempt)
        os.write(write, json.dumps(outcome).encode())
        os._exit(0)
    os.close(write)
    os.waitpid(pid, 0)
    outside.close()
    outcome = json.loads(os.read(read, 4096))
    assert outcome == {"scoped": True, "host socket": "refused", "host signal": "refused",
                       "own socket": "ok", "own signal": "ok"}  # fmt: skip


def _tried(attempt):  # pragma: no cover - runs in the forked children
    """'ok' when ``attempt()`` ran, 'refused' when the kernel said no."""
    try:
        attempt()
    except OSError:
        return "refused"
    return "ok"


def _own_abstract_pair(socket):  # pragma: no cover - runs in the scoped child
    server = socket.socket(socket.AF_UNIX)
    server.bind(f"\0perfmodel-inside-{os.getpid()}")
    server.listen(1)
    socket.socket(socket.AF_UNIX).connect(f"\0perfmodel-inside-{os.getpid()}")
