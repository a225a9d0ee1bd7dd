"""Landlock scoping for the level without namespaces: the sandbox may neither connect to an
abstract Unix socket nor signal a process that was made outside it.

An abstract Unix socket has no file, so no file permission guards it, and without a network
namespace every one on the host (a desktop bus, an X server, another grader) is in reach.
Landlock's scopes (Linux 6.12, Landlock ABI 6) close both channels for the calling process and
everything it starts, with no privilege needed; sockets and signals inside the sandbox work as
before. Under bubblewrap the network and PID namespaces already do this.
"""

from __future__ import annotations

import ctypes
import sys

__all__ = ["SCOPED_ABI", "abi", "scope"]

#: The first Landlock ABI with scopes (abstract Unix sockets, signals).
SCOPED_ABI = 6
_SCOPE_ABSTRACT_UNIX_SOCKET, _SCOPE_SIGNAL = 1, 2
#: The Landlock system calls: one number on every architecture (the generic table).
_CREATE_RULESET, _RESTRICT_SELF = 444, 446
_CREATE_RULESET_VERSION = 1
_PR_SET_NO_NEW_PRIVS = 38


class _Ruleset(ctypes.Structure):
    _fields_ = [
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    ]


def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc


def abi() -> int:
    """This kernel's Landlock ABI version (0 where Landlock is missing or off).

    Returns
    -------
    int
        The version, count.
    """
    if not sys.platform.startswith("linux"):
        return 0
    version = _libc().syscall(_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    return max(0, int(version))


def scope() -> bool:
    """Scope this process and its future children (once set, for good).

    Meant for a child between ``fork`` and ``exec``; sets ``no_new_privs`` first, as Landlock
    requires of an unprivileged process.

    Returns
    -------
    bool
        Whether the scopes were applied: False where the kernel's ABI is below
        :data:`SCOPED_ABI` or a call failed.
    """
    if abi() < SCOPED_ABI:
        return False
    libc = _libc()
    rules = _Ruleset(0, 0, _SCOPE_ABSTRACT_UNIX_SOCKET | _SCOPE_SIGNAL)
    fd = libc.syscall(_CREATE_RULESET, ctypes.byref(rules), ctypes.sizeof(rules), 0)
    if fd < 0:
        return False
    try:
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        return bool(libc.syscall(_RESTRICT_SELF, fd, 0) == 0)
    finally:
        libc.close(int(fd))
