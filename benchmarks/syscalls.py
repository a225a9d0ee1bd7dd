"""Record the system calls a graded notebook makes, to check the sandbox's allowlist.

Every master and every untouched student copy of ``exercises/`` runs through
:func:`perfmodel.grading.sandbox.execute_notebook` under ``strace -f``, at the level asked
for, with a filter that allows everything in place of the allowlist. The calls that count
are those made after that filter was installed, by the process that installed it and by
every process it started: the sandbox's own side. The script prints each call with how many
processes made it, marks those :data:`perfmodel.grading.seccomp.ALLOWED` does not hold (the
four calls it rules by argument are marked as such), and exits 1 if any call is unmarked
and missing.

At the bubblewrap level the sandbox has its own PID namespace, so the processes the worker
starts cannot be told apart from their parents' traces; record at ``unprivileged`` (as root,
with the folders above the environment passable: ``chmod o+x /root``) for the whole tree.

Run as root on Linux, with strace installed::

    .venv/bin/python benchmarks/syscalls.py [--level bubblewrap|unprivileged] [--save FILE]

``--save`` writes the recorded names, one a line, for ``tests/data/recorded_syscalls.txt``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

from tqdm import tqdm

ROOT = Path(__file__).resolve().parents[1]
_CALL = re.compile(r"^(?:<\.\.\. )?([a-z_0-9]+)[( ]")
_SPAWN = re.compile(r"^(?:<\.\.\. )?(?:clone3?|fork|vfork)\b.*= (\d+)$")
_FILTER = re.compile(r"seccomp\(SECCOMP_SET_MODE_FILTER|prctl\(PR_SET_SECCOMP")


def sandbox_calls(folder: Path) -> Counter[str]:
    """The calls made under the filter, from ``strace -ff`` files ``trace.PID``."""
    lines = {
        int(p.suffix[1:]): p.read_text(errors="replace").splitlines() for p in folder.iterdir()
    }
    children: dict[int, list[int]] = {}
    filtered_from: dict[int, int] = {}
    for pid, text in lines.items():
        for index, line in enumerate(text):
            if pid not in filtered_from and _FILTER.search(line) and line.rstrip().endswith("= 0"):
                filtered_from[pid] = index + 1
            spawned = _SPAWN.match(line)
            if spawned:
                children.setdefault(pid, []).append(int(spawned.group(1)))
    counts: Counter[str] = Counter()
    stack = [(pid, start) for pid, start in filtered_from.items()]
    seen: set[int] = set()
    while stack:
        pid, start = stack.pop()
        if pid in seen or pid not in lines:
            continue
        seen.add(pid)
        counts.update({m.group(1) for line in lines[pid][start:] if (m := _CALL.match(line))})
        stack += [(child, 0) for child in children.get(pid, [])]
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--level", default="bubblewrap", choices=("bubblewrap", "unprivileged"))
    parser.add_argument("--save", type=Path, help="write the recorded names here")
    args = parser.parse_args()
    if shutil.which("strace") is None:
        sys.exit("strace is not installed (apt-get install strace)")
    from perfmodel.grading import seccomp
    from perfmodel.grading.workbooks import assign, find_workbooks

    workbooks = find_workbooks(ROOT / "exercises")
    total: Counter[str] = Counter()
    with tempfile.TemporaryDirectory() as tmp:
        for workbook in tqdm(workbooks, desc="workbooks", unit="workbook"):
            assigned = assign(workbook)
            student = Path(tmp) / f"{workbook.name}-student.ipynb"
            student.write_text(assigned.student_text, encoding="utf-8")
            for kind, notebook in (("master", workbook.master), ("student", student)):
                traces = Path(tmp) / f"{workbook.name}-{kind}"
                traces.mkdir()
                code = (
                    "import sys; from pathlib import Path; import pyseccomp as sc; "
                    "import tempfile; from perfmodel.grading import seccomp; "
                    "f = sc.SyscallFilter(sc.ALLOW); h = tempfile.TemporaryFile(); "
                    "f.export_bpf(h); h.seek(0); code = h.read(); "
                    "seccomp.program = lambda: code; "
                    "from perfmodel.grading.sandbox import Limits, execute_notebook; "
                    f"r = execute_notebook(Path({str(notebook)!r}), Limits(), "
                    f"name={workbook.name + '.ipynb'!r}, assignment={workbook.name!r}, "
                    f"isolation_level={args.level!r}); "
                    "sys.exit(0 if r.answers is not None else 3)"
                )
                run = subprocess.run(
                    ["strace", "-f", "-ff", "-qq", "-o", str(traces / "trace"),
                     sys.executable, "-c", code],
                    check=False, capture_output=True, text=True,
                )  # fmt: skip
                if run.returncode:
                    print(f"{workbook.name} {kind}: exit {run.returncode} {run.stderr[-400:]}")
                total.update(sandbox_calls(traces))
    allowed = seccomp.ALLOWED
    ruled = seccomp.RULED
    missing = []
    for name, count in sorted(total.items()):
        mark = "" if name in allowed else "   by its arguments" if name in ruled else "   MISSING"
        missing += [name] if mark.endswith("MISSING") else []
        print(f"{name:24} {count:4} processes{mark}")
    if args.save:
        args.save.write_text("".join(f"{name}\n" for name in sorted(total)), encoding="utf-8")
    print(
        f"{len(total)} calls recorded over {2 * len(workbooks)} notebooks; the allowlist "
        f"holds {len(allowed)}; missing: {', '.join(missing) or 'none'}"
    )
    sys.exit(1 if missing else 0)


if __name__ == "__main__":
    main()
