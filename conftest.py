"""Every pytest run, whatever it collects: each kernel a test starts reads the figures it draws.

``tests/figure_audit.py`` holds the rules (bars on a log value axis, an axis without a label or
a unit, a legend over the data). An IPython startup file, in a directory of the tests' own,
installs it in every kernel nbval and the tests start; the kernel appends each figure's problems
to a file of this worker's, and :func:`pytest_runtest_call` fails the cell that drew it.

What it cannot see: a figure a background thread renders after its cell has ended is blamed
on the next cell (or, after the last, on none), and figures drawn in fixtures are not read.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT / "tests"))
#: tests/unchanged.py skips an expensive test file whose inputs passed before, unchanged;
#: pytester tests it (tests/test_unchanged.py).
pytest_plugins = ["unchanged", "pytester"]

import kernel_starts  # noqa: E402  (tests/ is on the path from here)

FIGURE_AUDIT = ROOT / "test-output" / "figure-audit"
STARTUP = "import sys\nsys.path.insert(0, {tests!r})\nimport figure_audit\nfigure_audit.install()\n"


def _audit_every_kernels_figures() -> Path:
    startup = FIGURE_AUDIT / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True, exist_ok=True)
    script = startup / "00-figure-audit.py"
    text = STARTUP.format(tests=str(ROOT / "tests"))
    if not script.exists() or script.read_text() != text:
        partial = script.with_suffix(f".{os.getpid()}")
        partial.write_text(text)
        partial.replace(script)  # atomic: xdist workers write it side by side
    os.environ["IPYTHONDIR"] = str(FIGURE_AUDIT / "ipython")
    if "PYTEST_XDIST_WORKER" not in os.environ:  # the session's first process: none is running
        for stale in FIGURE_AUDIT.glob("worker-*.jsonl"):
            stale.unlink(missing_ok=True)
    found = FIGURE_AUDIT / f"worker-{os.getpid()}.jsonl"
    found.unlink(missing_ok=True)
    os.environ["PERFMODEL_FIGURE_AUDIT"] = str(found)
    return found


FIGURE_PROBLEMS = _audit_every_kernels_figures()
kernel_starts.install()  # a notebook's kernel that dies as it starts is started again


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """Fail a notebook cell that drew a misleading figure, naming each problem."""
    seen = FIGURE_PROBLEMS.stat().st_size if FIGURE_PROBLEMS.exists() else 0
    result = yield
    if FIGURE_PROBLEMS.exists() and FIGURE_PROBLEMS.stat().st_size > seen:
        with FIGURE_PROBLEMS.open(encoding="utf-8") as lines:
            lines.seek(seen)
            problems = [p for line in lines for p in json.loads(line)]
        pytest.fail("a figure this cell drew misleads:\n  " + "\n  ".join(problems), pytrace=False)
    return result


@pytest.fixture(autouse=True)
def _close_figures() -> Iterator[None]:
    """Close every pyplot figure a test leaves open: a worker runs many test files in turn,
    and matplotlib warns (an error here) once twenty are open at once."""
    yield
    pyplot = sys.modules.get("matplotlib.pyplot")
    if pyplot is not None:
        pyplot.close("all")
