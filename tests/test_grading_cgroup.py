"""Limits the kernel counts: a submission's control group caps its memory (kernel memory and
files kept in memory included) and its tasks, and takes every process with it when removed."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from perfmodel.grading import cgroup
from perfmodel.grading.cgroup import Group


def _group(memory_bytes: int, max_processes: int) -> Group:
    group = Group.create(memory_bytes, max_processes)
    if group is None:
        pytest.skip("no control group can be made here (not root, or no cgroup file system)")
    return group


def _run(group: Group, code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        preexec_fn=group.join,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_kernel_stops_a_group_at_its_memory_cap_and_says_so():
    group = _group(128 * 1024**2, 4)
    try:
        assert not group.out_of_memory()
        done = _run(group, "held = []\nwhile True:\n    held.append(bytearray(16 * 1024**2))\n")
        assert done.returncode == -9  # SIGKILL from the OOM killer, not a MemoryError
        assert group.out_of_memory()
    finally:
        group.remove()


def test_files_kept_in_memory_count_against_the_cap():
    # A memfd holds pages no process maps: the watchdog's set sizes never see them.
    group = _group(96 * 1024**2, 4)
    try:
        done = _run(
            group,
            """
            import os
            fd = os.memfd_create("hog")
            for _ in range(32):
                os.write(fd, b"x" * 8 * 1024**2)
            print("wrote 256 MiB")
            """,
        )
        assert "wrote 256 MiB" not in done.stdout
        assert group.out_of_memory()
    finally:
        group.remove()


def test_forks_past_the_cap_fail_in_the_kernel_and_removal_takes_the_detached():
    group = _group(512 * 1024**2, 4)
    try:
        done = _run(
            group,
            """
            import os, time
            made = 0
            try:
                while True:
                    if os.fork() == 0:
                        os.setsid()  # detach: no longer the starter's child or group
                        os.closerange(0, 3)  # and let the starter's pipes close
                        time.sleep(60)
                        os._exit(0)
                    made += 1
            except OSError as error:
                print(made, error.errno)
            """,
        )
        made, errno = (int(word) for word in done.stdout.split())
        assert made == 4 + cgroup.SANDBOX_TASKS - 1 and errno == 11  # EAGAIN at pids.max
        assert len(group.processes()) == made  # they outlived their parent, in the group
    finally:
        group.remove()
    assert all(not folder.exists() for folder in group.folders)
    assert group.processes() == []


def test_no_group_where_none_may_be_made(monkeypatch, tmp_path):
    monkeypatch.setattr(cgroup, "_mounts", dict)
    assert Group.create(1024**3, 8) is None
    # A hierarchy this process may not write to: no group, nothing left behind.
    # Folders that are no cgroup (root may make folders anywhere): no limit file to write,
    # so no group, and nothing left behind.
    plain = {name: tmp_path / name for name in ("memory", "pids")}
    for folder in plain.values():
        folder.mkdir()
    monkeypatch.setattr(cgroup, "_mounts", lambda: plain)
    monkeypatch.setattr(cgroup, "_own_paths", lambda: {"memory": "/", "pids": "/"})
    assert Group.create(1024**3, 8) is None
    assert [list(folder.iterdir()) for folder in plain.values()] == [[], []]


def test_a_unified_hierarchy_that_hands_down_no_controllers_makes_no_group(monkeypatch, tmp_path):
    # As on a host whose controllers all sit in the v1 hierarchies: the new folder lists none.
    monkeypatch.setattr(cgroup, "_mounts", lambda: {"unified": tmp_path})
    monkeypatch.setattr(cgroup, "_own_paths", lambda: {"unified": "/"})
    assert Group.create(1024**3, 8) is None
    assert list(tmp_path.iterdir()) == []
