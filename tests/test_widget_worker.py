"""The explorers' worker process (perfmodel.widgets.worker): the same results, and no
process left behind."""

from __future__ import annotations

import math
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from perfmodel.widgets import serving
from perfmodel.widgets.worker import WATCH_S, Worker


def _ready(worker: Worker, timeout_s: float = 60.0) -> Worker:
    deadline = time.monotonic() + timeout_s
    while not worker.ready:
        assert time.monotonic() < deadline, "the worker did not start"
        time.sleep(0.05)
    return worker


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped) is gone for our purposes
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        return stat.read().split(")")[-1].split()[0] != "Z"


@pytest.fixture(scope="module")
def worker():
    return _ready(Worker())


def test_the_worker_runs_every_other_call_and_the_results_keep_their_order(worker):
    calls = [(n, k) for n in range(8, 20) for k in (2, 3)]
    assert worker.map(math.comb, calls) == [math.comb(*call) for call in calls]
    assert worker.map(os.getpid, [(), (), ()]) == [os.getpid(), worker.pid, os.getpid()]


def test_the_serving_load_curve_is_the_same_whoever_runs_it(worker, monkeypatch):
    setup = (2, 8, 5.0, 2, "power_of_two")
    monkeypatch.setattr(serving, "_worker", None)
    alone = serving._load_curve.__wrapped__(*setup)
    monkeypatch.setattr(serving, "_worker", worker)
    assert serving._load_curve.__wrapped__(*setup) == alone


def test_a_worker_not_yet_ready_leaves_every_call_to_the_caller(monkeypatch):
    idle = Worker()
    monkeypatch.setattr(Worker, "ready", property(lambda self: False))
    assert idle.map(os.getpid, [(), ()]) == [os.getpid(), os.getpid()]


def test_a_worker_that_dies_leaves_its_calls_to_the_caller_and_is_not_asked_again():
    broken = _ready(Worker())
    os.kill(broken.pid, signal.SIGKILL)
    time.sleep(0.2)
    assert broken.map(os.getpid, [(), (), ()]) == [os.getpid()] * 3
    assert not broken.ready


def test_the_worker_exits_when_its_kernel_is_killed(tmp_path):
    script = textwrap.dedent(
        """
        import time
        from perfmodel.widgets.worker import Worker

        if __name__ == "__main__":
            worker = Worker()
            while not worker.ready:
                time.sleep(0.05)
            print(worker.pid, flush=True)
            time.sleep(600)
        """
    )
    (tmp_path / "kernel.py").write_text(script, encoding="utf-8")
    kernel = subprocess.Popen([sys.executable, "kernel.py"], cwd=tmp_path,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        pid = int(kernel.stdout.readline())
        assert _alive(pid)
        kernel.kill()  # as a kernel restart or a process manager's SIGKILL does
        kernel.wait()
        deadline = time.monotonic() + 10 * WATCH_S + 5
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid), "the worker outlived its kernel"
    finally:
        kernel.kill()


def test_a_script_without_an_event_loop_starts_no_worker(monkeypatch):
    monkeypatch.setattr(serving, "_worker", None)
    serving.serving_explorer()
    assert serving._worker is None  # a script would be run again by a fresh Python


def test_what_a_call_raises_in_the_worker_is_raised_in_the_kernel(worker):
    with pytest.raises(ValueError, match="non-negative"):
        worker.map(math.comb, [(4, 2), (-1, 2)])  # the second call runs in the worker
    assert worker.ready  # a call's error does not retire the worker
