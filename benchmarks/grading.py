"""How long grading takes per submission, by isolation level and number of jobs.

Grades a folder of copies of workbook 00's solved notebook with ``perfmodel grade`` (the CLI, as
an instructor runs it) at ``--jobs 1`` and ``--jobs 2`` and prints wall seconds per submission.
The last round measured 2.9 s (jobs 1) and 1.3 s (jobs 2) on the course's 2-core machine. On
a busy machine these numbers grow; the grades do not.

    .venv/bin/python benchmarks/grading.py [--submissions 12]
"""

from __future__ import annotations

import argparse
import importlib
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))


def main() -> None:
    solved_copy = importlib.import_module("conftest").solved_copy  # tests/conftest.py
    from perfmodel.grading import isolation
    from perfmodel.grading.workbooks import find_workbook

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--submissions", type=int, default=12)
    args = parser.parse_args()
    workbook = find_workbook("00_warmup", ROOT / "exercises")
    solved = json.dumps(solved_copy(workbook))
    print(f"isolation level: {isolation.level()}; {args.submissions} submissions of 00_warmup")
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "submissions"
        folder.mkdir()
        for index in range(args.submissions):
            (folder / f"student_{index:03d}.ipynb").write_text(solved, encoding="utf-8")
        for jobs in (1, 2):
            out = Path(scratch) / f"jobs{jobs}" / "grades.csv"
            command = [
                sys.executable, "-m", "perfmodel.cli", "grade", "00_warmup", str(folder),
                "--out", str(out), "--jobs", str(jobs), "--no-progress",
            ]  # fmt: skip
            start = time.perf_counter()
            subprocess.run(command, check=True, capture_output=True, cwd=ROOT)
            seconds = time.perf_counter() - start
            totals = [line.split(",")[5] for line in out.read_text().splitlines()[1:]]
            assert totals == ["5"] * args.submissions, totals
            print(f"--jobs {jobs}: {seconds / args.submissions:.2f} s per submission "
                  f"({seconds:.1f} s in all, every one 5/5)")  # fmt: skip


if __name__ == "__main__":
    main()
