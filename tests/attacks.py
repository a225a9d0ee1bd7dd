"""The second hostile campaign: submissions that try to buy a grade or break the batch.

Shared by the local CLI batch and the Gradescope layout tests. Every attack starts from the
blank student copy and sets the right answers only if its attack succeeds, so a row's score
says whether the sandbox held: 0 for every attack, full marks for honest work.
"""

from __future__ import annotations

import ast
import copy
import functools
import json
import math
import os
import re
from pathlib import Path

from conftest import answer_cells, read_json, solved_copy, with_code


def write_submission(path: Path, nb: dict | bytes | str) -> None:
    """Write a notebook (a dict), raw bytes or text at ``path``."""
    if isinstance(nb, dict):
        path.write_text(json.dumps(nb), encoding="utf-8")
    elif isinstance(nb, bytes):
        path.write_bytes(nb)
    else:
        path.write_text(nb, encoding="utf-8")


def scoring_level() -> str:
    """The level a test that checks scores, not isolation, grades at: bubblewrap where it runs,
    else none, asked for by name. The unprivileged level needs every folder above the Python
    environment open to other users, which a clone's folder may not be; the tests of that
    level (tests/test_grading_levels.py) open them for themselves."""
    from perfmodel.grading import isolation

    return "none" if isolation.probe() else "bubblewrap"


@functools.cache
def column(level: str) -> str:
    """The ``isolation`` column of a row run at ``level`` on this machine: ``"+cgroup"`` after
    a sandboxed level where the grader may make a control group (root, a cgroup file system)."""
    from perfmodel.grading.cgroup import Group

    if level == "none":
        return level
    group = Group.create(64 * 1024**2, 1)
    if group is None:
        return level
    group.remove()
    return level + "+cgroup"


def level_args() -> list[str]:
    """:func:`scoring_level` as flags of ``perfmodel grade`` and of the Gradescope runner."""
    return ["--no-isolation"] if scoring_level() == "none" else []


def grade_command(folder: Path, out: Path, *, cell_s: int, memory_gib: int, disk_mib: int) -> list:
    """``perfmodel grade 00_warmup`` on ``folder`` with two jobs and the given limits."""
    import sys

    return [
        sys.executable, "-m", "perfmodel.cli", "grade", "00_warmup", str(folder),
        "--out", str(out / "grades.csv"), "--timeout", "90", "--cell-timeout", str(cell_s),
        "--memory-gib", str(memory_gib), "--disk-mib", str(disk_mib), "--jobs", "2",
        "--no-progress",
    ]  # fmt: skip


# --- recovering shipped keys by search ------------------------------------------------------


def search_key(key: str, words: tuple[str, ...] = ()) -> object:
    """Recover a value that passes ``key`` by trying every bucket, count or word.

    This is the attack a determined learner runs on a shipped key with the package's own code:
    about 10^5 buckets per tolerance between 1e-18 and 1e22, a second each at most.
    """
    from perfmodel.exercises.keys import bucket_width, key_digest

    parts = key.split(":")
    kind, digest = parts[1], parts[-1]
    salt = parts[-2]
    if kind == "choice":
        for word in words:
            if key_digest(salt, f"w{word}") == digest:
                return word
        return None
    if kind == "count":
        for whole in range(0, 2_000_000):
            if key_digest(salt, f"n{whole}") == digest:
                return whole
        return None
    width = bucket_width(float(parts[2]))
    if key_digest(salt, "0") == digest:
        return 0.0
    low, high = math.floor(math.log(1e-18) / width), math.ceil(math.log(1e22) / width)
    for bucket in range(low, high):
        for sign in ("+", "-"):
            if key_digest(salt, f"{sign}{bucket}") == digest:
                value = math.exp(width * (bucket + 0.5))
                return value if sign == "+" else -value
    return None


def shipped_keys(student: dict) -> dict[str, list[tuple[str, str, tuple[str, ...]]]]:
    """Question -> [(variable, key, option words)] for every check the student copy ships."""
    found: dict[str, list[tuple[str, str, tuple[str, ...]]]] = {}
    for question, source in student["metadata"]["otter"]["tests"].items():
        for node in ast.walk(ast.parse(source)):
            name = getattr(getattr(node, "func", None), "id", "")
            if not (isinstance(node, ast.Call) and name.startswith("check_")):
                continue
            if name not in ("check_number", "check_count", "check_choice"):
                continue
            variable, key = ast.literal_eval(node.args[0]), ast.literal_eval(node.args[2])
            words: tuple[str, ...] = ()
            if name == "check_choice":
                words = tuple(eval(compile(ast.Expression(node.args[3]), "<o>", "eval"), {}))
            found.setdefault(question, []).append((variable, key, words))
    return found


def question_of_variables(student: dict) -> dict[str, str]:
    """Variable -> the question whose check cell follows the answer cell that sets it."""
    owners: dict[str, str] = {}
    pending: list[str] = []
    for cell in student["cells"]:
        source = "".join(cell["source"])
        if "otter_answer_cell" in cell["metadata"].get("tags", []):
            pending += re.findall(r"^(\w+) = ", source, re.M)
        found = re.search(r'grader\.check\("(\w+)"\)', source)
        if found:
            owners.update(dict.fromkeys(pending, found.group(1)))
            pending = []
    return owners


def recovered_answers(student: dict) -> dict[str, object]:
    """Every shipped key recovered by search, and each graded part answered with its
    question's last recovered practice value: the best a key search can do for a part whose
    key does not ship."""
    answers: dict[str, object] = {}
    owners = question_of_variables(student)
    for question, checks in shipped_keys(student).items():
        values = [search_key(key, words) for _, key, words in checks]
        answers.update({name: value for (name, _, _), value in zip(checks, values, strict=True)})
        for name, owner in owners.items():
            if name.startswith("graded_") and owner == question:
                answers[name] = values[-1]
    return answers


def answered(student: dict, answers: dict[str, object]) -> dict:
    """The student copy with ``answers`` typed into its answer cells."""
    nb = copy.deepcopy(student)
    for cell in answer_cells(nb):
        lines = "".join(cell["source"]).splitlines()
        cell["source"] = "\n".join(
            f"{line.split(' = ')[0]} = {answers[line.split(' = ')[0]]!r}"
            if line.endswith(" = ...") and line.split(" = ")[0] in answers
            else line
            for line in lines
        )
    return nb


# --- the attack cells -----------------------------------------------------------------------


def set_all(solved: dict) -> str:
    """Code that sets every answer of the solved copy (run only when an attack succeeds)."""
    return "\n".join("".join(cell["source"]) for cell in answer_cells(solved))


def when(condition_code: str, solved: dict) -> str:
    body = "\n".join("    " + line for line in set_all(solved).splitlines())
    return f"{condition_code}\nif attack_worked:\n{body}\n"


AS_ROOT = """
import ctypes, os
attack_worked = os.getuid() == 0 or os.geteuid() == 0
for target in ("/proc/sys/kernel/core_pattern", "/proc/sys/vm/drop_caches", "/etc/passwd"):
    try:
        with open(target, "a"):
            attack_worked = True
    except OSError:
        pass
for secret in ("/etc/shadow", "/root/.bashrc"):
    try:
        open(secret).read(1)
        attack_worked = True
    except OSError:
        pass
libc = ctypes.CDLL(None, use_errno=True)
if libc.shmget(0, 1 << 30, 0o1600) >= 0:  # System V shared memory outside every cap
    attack_worked = True
"""

READ_OTHERS = """
import glob, os
attack_worked = False
targets = glob.glob({masters!r}) + glob.glob({folder!r} + "/*")
targets += glob.glob("/tmp/perfmodel-*/**", recursive=True)
for path in targets:
    try:
        with open(path, "rb") as handle:
            if handle.read(1):
                attack_worked = True
    except OSError:
        pass
"""

SURROGATE = 'raise ValueError("a lone surrogate: \\udcff and a bell \\x07 and =1+1")'
LONG_NAME = 'raise type("E" * 300_000, (Exception,), {})("x" * 300_000)'

MEMFD_HOG = """
import os
fds = []
chunk = b"m" * (64 * 1024**2)
for _ in range(24):  # 1.5 GiB held in memfds, none of it mapped
    fd = os.memfd_create("hog")
    os.write(fd, chunk)
    fds.append(fd)
import time
time.sleep(30)
"""

UNLINKED_DISK = """
import os
handles = []
for index in range(10):  # 300 MiB in unlinked files, each under the single-file cap
    handle = open(f"ghost-{index}", "wb")
    os.unlink(f"ghost-{index}")
    handles.append(handle)
    for _ in range(30):
        handle.write(b"d" * 1024**2)
        handle.flush()
"""

DEEP_PATH_DISK = """
import os
os.chdir(os.environ["TMPDIR"])
for depth in range(400):  # past PATH_MAX: a scan by path could not reach these files
    os.mkdir("d" * 200)
    os.chdir("d" * 200)
    with open("blob", "wb") as handle:
        handle.write(b"p" * 1024**2)
"""

DEEP_CHAIN = """
import os
os.chdir(os.environ["TMPDIR"])
for _ in range(1500):
    os.mkdir("c")
    os.chdir("c")
"""

THREADS = """
import threading, time
for _ in range(1500):
    threading.Thread(target=time.sleep, args=(20,), daemon=True).start()
"""

INFLIGHT_MEMFD = """
import array, os, socket
a, b = socket.socketpair()
for _ in range(24):  # 1.5 GiB in memfds closed while in flight on a socket: no process holds them
    fd = os.memfd_create("inflight")
    os.write(fd, b"m" * (64 * 1024**2))
    a.sendmsg([b"x"], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [fd]))])
    os.close(fd)
"""

SOCKET_HOG = """
import os, socket, time
for _ in range(30):  # 30 processes, each with all the socket pairs it may open, bytes queued
    if os.fork() == 0:
        try:
            pairs = []
            while True:
                try:
                    pairs.append(socket.socketpair())
                except OSError:
                    break
            for a, _ in pairs:
                a.setblocking(False)
                a.send(b"s" * 16384)
            time.sleep(20)
        finally:
            os._exit(0)
time.sleep(5)
attack_worked = True
"""

LISTEN_BACKLOG = """
import os, socket, time
# Listening sockets whose queues of unaccepted connections hold bytes from clients that
# closed: no open file shows them, so each listener is charged its whole queue of buffers.
listeners = []
for n in range(60):
    server = socket.socket(socket.AF_UNIX)
    server.bind(f"\\0backlog-{os.getpid()}-{n}")
    server.listen(128)
    listeners.append(server)
    for _ in range(4):
        client = socket.socket(socket.AF_UNIX)
        client.connect(f"\\0backlog-{os.getpid()}-{n}")
        client.setblocking(False)
        try:
            client.send(b"b" * 65536)
        except BlockingIOError:
            pass
        client.close()
time.sleep(5)
attack_worked = True
"""

HIDDEN_THREADS = """
import subprocess, sys, time
CODE = (
    "import threading, ctypes, time, os\\n"
    "def run():\\n"  # once the main thread has gone, /proc shows the process as a zombie
    "    while open('/proc/self/stat').read().rsplit(') ', 1)[1][0] != 'Z':\\n"
    "        time.sleep(0.001)\\n"
    "    held = bytearray(200 * 2**20)\\n"
    "    for i in range(0, len(held), 4096):\\n"
    "        held[i] = 1\\n"
    "    time.sleep(12)\\n"
    "    os._exit(0)\\n"
    "threading.Thread(target=run).start()\\n"
    "ctypes.CDLL(None).pthread_exit(None)\\n"
)
for _ in range(3):
    subprocess.Popen([sys.executable, "-S", "-c", CODE])
time.sleep(8)
attack_worked = True
"""

VSOCK = """
import socket
attack_worked = False
try:  # AF_VSOCK ignores the network namespace: the hypervisor is one connect away
    socket.socket(40, socket.SOCK_STREAM)
    attack_worked = True
except OSError:
    pass
"""

KEYRING = """
import ctypes, platform
libc = ctypes.CDLL(None, use_errno=True)
number = {"x86_64": 248, "aarch64": 217}.get(platform.machine(), 248)  # add_key
# A key in the uid's persistent keyring (-5, KEY_SPEC_USER_KEYRING -4) outlives the row.
attack_worked = libc.syscall(number, b"user", b"left-behind", b"x", 1, -4) >= 0
"""

NESTED_USERNS = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
# A user namespace of its own would let it mount a tmpfs outside the disk cap.
attack_worked = libc.unshare(0x10000000) == 0
"""

TAKE_REPORT_PIPE = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
attack_worked = False
try:
    pidfd = os.pidfd_open(os.getppid())
    attack_worked = libc.syscall(438, pidfd, 3, 0) >= 0  # pidfd_getfd: the worker's report pipe
except OSError:
    pass
for fd in range(3, 10):
    try:
        open(f"/proc/{os.getppid()}/fd/{fd}", "wb").close()
        attack_worked = True
    except OSError:
        pass
"""

NETWORK = """
import socket
attack_worked = False
for family in (socket.AF_INET, socket.AF_INET6):
    try:
        socket.socket(family, socket.SOCK_STREAM).close()
        attack_worked = True
    except OSError:
        pass
"""

PLANT_READOUT = """
import os, re
def plant(info):
    found = re.search(r"_perfmodel_readout\\('([^']+)'", info.raw_cell)
    if found:
        {plant}
get_ipython().events.register("pre_run_cell", plant)
"""


def build_attacks(workbook, folder: Path) -> dict[str, tuple[str, float, str]]:
    """Write the attack folder; return name -> (status, total, a phrase the reason holds)."""
    student = read_json(workbook.student)
    solved = solved_copy(workbook)
    expected: dict[str, tuple[str, float, str]] = {}

    def add(name: str, nb: dict | bytes | str, status: str, total: float, phrase: str = ""):
        write_submission(folder / name, nb)
        expected[name] = (status, total, phrase)

    def attack(name: str, code: str, status: str = "graded", phrase: str = ""):
        # Last, after the answer cells: an attack that works keeps the answers it sets.
        add(name, with_code(student, len(student["cells"]), code), status, 0, phrase)

    add("honest.ipynb", solved, "graded", 5)
    add("key_search.ipynb", answered(student, recovered_answers(student)), "graded", 0)
    attack("surrogate.ipynb", SURROGATE, phrase="a lone surrogate")
    surrogates = answered(student, {"vector_bytes": "\udcff", "slower": "\udcff\u202e"})
    add("surrogate_answers.ipynb", surrogates, "graded", 0)
    attack("long_name.ipynb", LONG_NAME, phrase="raised EEEE")
    attack("memfd_hog.ipynb", MEMFD_HOG, phrase="PermissionError")  # memfd_create is refused
    attack("unlinked_disk.ipynb", UNLINKED_DISK, status="failed", phrase="No space left on device")
    attack(
        "deep_path_disk.ipynb", DEEP_PATH_DISK, status="failed", phrase="No space left on device"
    )
    attack("deep_chain.ipynb", DEEP_CHAIN)
    attack("threads.ipynb", THREADS, phrase="can't start new thread")
    attack("inflight_memfd.ipynb", INFLIGHT_MEMFD, phrase="PermissionError")
    attack(
        "socket_hog.ipynb",
        when(SOCKET_HOG, solved),
        status="failed",
        phrase="stopped for using more than 1 GiB",
    )
    attack(
        "listen_backlog.ipynb",
        when(LISTEN_BACKLOG, solved),
        status="failed",
        phrase="stopped for using more than 1 GiB",
    )
    attack("nested_userns.ipynb", when(NESTED_USERNS, solved))
    attack("vsock.ipynb", when(VSOCK, solved))
    attack(
        "hidden_threads.ipynb",
        when(HIDDEN_THREADS, solved),
        status="failed",
        phrase="main thread exited",
    )
    attack("keyring.ipynb", when(KEYRING, solved))
    attack("take_report_pipe.ipynb", when(TAKE_REPORT_PIPE, solved))
    attack("network.ipynb", when(NETWORK, solved))
    attack("as_root.ipynb", when(AS_ROOT, solved))
    masters = str(workbook.master.parent / "*.ipynb")
    attack(
        "read_others.ipynb", when(READ_OTHERS.format(masters=masters, folder=str(folder)), solved)
    )
    # mknod is not on the allowlist, so the FIFO is never made and the row scores 0.
    attack("fifo_readout.ipynb", PLANT_READOUT.format(plant="os.mkfifo(found.group(1))"))
    attack(
        "folder_readout.ipynb",
        PLANT_READOUT.format(plant="os.mkdir(found.group(1))"),
        status="failed",
        phrase="could not read the answers back",
    )
    (folder / "link.ipynb").symlink_to(workbook.master)
    expected["link.ipynb"] = ("failed", 0, "symbolic link")
    (folder / "classmate_link.ipynb").symlink_to(folder / "honest.ipynb")
    expected["classmate_link.ipynb"] = ("failed", 0, "symbolic link")
    (folder / ".ipynb").mkdir()
    expected[".ipynb"] = ("failed", 0, "a folder")

    import nbformat

    version3 = nbformat.convert(nbformat.reads(json.dumps(solved), as_version=4), 3)
    add("version3.ipynb", nbformat.writes(version3, version=3), "graded", 5)
    add("deep_json.ipynb", "[" * 200_000 + "]" * 200_000, "failed", 0, "not a notebook")
    add("=HYPERLINK(1).ipynb", solved, "graded", 5)
    add("'=HYPERLINK(1).ipynb", student, "graded", 0)  # must not print as the quoted one
    expected["\\x27=HYPERLINK(1).ipynb"] = expected.pop("'=HYPERLINK(1).ipynb")
    (folder / os.fsdecode(b"caf\xe9.ipynb")).write_text(json.dumps(solved), encoding="utf-8")
    expected["caf\\xe9.ipynb"] = ("graded", 5, "")
    (folder / "caf\\xe9.ipynb").write_text(json.dumps(student), encoding="utf-8")
    expected["caf\\\\xe9.ipynb"] = ("graded", 0, "")
    add("zz_honest_last.ipynb", solved, "graded", 5)
    return expected
