"""tests/kernel_starts.py: nbval starts a kernel that dies as it starts again, and says why."""

from __future__ import annotations

import json
import os
import sys

import nbval.kernel
import pytest
from kernel_starts import ATTEMPTS, started_again

#: nbval's own start, without the retry conftest.py installs.
NBVALS_OWN = nbval.kernel.start_new_kernel.__wrapped__

DIES = "import sys; sys.stderr.write('port 51234 taken'); sys.exit(3)"

# Dies the first time (it leaves a mark), then runs a real kernel.
DIES_ONCE = """
import os, sys
mark = sys.argv[1]
if not os.path.exists(mark):
    open(mark, "w").close()
    sys.stderr.write("first start fails")
    sys.exit(3)
from ipykernel import kernelapp
kernelapp.launch_new_instance(argv=["-f", sys.argv[2]])
"""


@pytest.fixture
def kernels(tmp_path, monkeypatch):
    """Two kernelspecs of this test's own: ``dies`` and ``dies-once``."""
    specs, mark = tmp_path / "jupyter" / "kernels", str(tmp_path / "mark")
    for name, argv in {
        "dies": [sys.executable, "-c", DIES, "{connection_file}"],
        "dies-once": [sys.executable, "-c", DIES_ONCE, mark, "{connection_file}"],
    }.items():
        (specs / name).mkdir(parents=True)
        spec = {"argv": argv, "display_name": name, "language": "python"}
        (specs / name / "kernel.json").write_text(json.dumps(spec), encoding="utf-8")
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    return tmp_path


def test_a_kernel_that_always_dies_errors_with_each_attempts_stderr(kernels):
    start = started_again(NBVALS_OWN)
    with pytest.raises(RuntimeError, match=f"did not start in {ATTEMPTS} attempts") as raised:
        start(startup_timeout=30, kernel_name="dies", cwd=str(kernels))
    assert str(raised.value).count("port 51234 taken") == ATTEMPTS


def test_a_kernel_that_dies_once_is_started_again_and_runs_cells(kernels):
    start = started_again(NBVALS_OWN)
    with pytest.warns(UserWarning, match="(?s)started again.*first start fails"):
        manager, client = start(startup_timeout=60, kernel_name="dies-once", cwd=str(kernels))
    try:
        assert (kernels / "mark").exists()  # the first attempt ran, and died
        reply = client.execute_interactive("print(6 * 7)", timeout=30, output_hook=lambda m: None)
        assert reply["content"]["status"] == "ok"
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_a_kernel_keeps_only_the_end_of_what_it_writes_to_stderr():
    from kernel_starts import KEPT, _Tail

    tail = _Tail()
    with os.fdopen(os.dup(tail.fd), "wb") as stderr:  # as the kernel's own copy
        stderr.write(b"x" * (10 * KEPT) + b"the end")
    os.close(tail.fd)
    assert tail.text().endswith("the end") and len(tail.text()) == KEPT


def test_nbval_starts_its_kernels_through_the_retry():
    assert nbval.kernel.start_new_kernel.__wrapped__.__module__ == "nbval.kernel"
