"""The system calls a submission may not make: a small seccomp filter, written by hand.

Namespaces and rlimits bound most of what a notebook can take; a few system calls reach
around them, and none of them is needed to run a notebook:

* ``memfd_create`` and ``memfd_secret``: memory held in a file that no process maps, passed
  around or closed while in flight on a socket, is seen by no per-process count; so are huge
  pages held in pipes (``vmsplice``), grown socket buffers (``setsockopt`` of ``SO_SNDBUF`` and
  its kin), and System V and POSIX IPC objects (``shmget``, ``msgget``, ``semget``,
  ``mq_open``), which also outlive the process;
* ``io_uring``: it makes sockets and files without the system calls this filter reads;
* ``clone``/``unshare`` with ``CLONE_NEWUSER``: a user namespace of its own would let the
  notebook mount a tmpfs outside the disk cap (and reach kernel code meant for root);
  ``clone3`` is refused with ``ENOSYS``, so the C library falls back to ``clone``, whose
  flags a filter can read;
* ``pidfd_getfd`` and ``ptrace``: taking file descriptors or control from the grading worker;
* ``socket`` for ``AF_INET``, ``AF_INET6`` and ``AF_PACKET``: the network (the kernel talks to
  its worker over Unix sockets).

Every other call is allowed. On an architecture the filter does not know (neither x86-64 nor
AArch64), :func:`program` returns ``None`` and the sandbox runs without it. The filter is
classic BPF, as the kernel takes it: each instruction is ``(code, jt, jf, k)``.

Examples
--------
>>> code = program()
>>> code is None or len(code) % 8 == 0
True
"""

from __future__ import annotations

import ctypes
import errno
import platform
import struct
from typing import Any

__all__ = ["install", "program"]

# Classic BPF opcodes and seccomp return values.
_LD_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ, _JGE, _JSET = 0x15, 0x35, 0x45  # BPF_JMP | BPF_JEQ/JGE/JSET | BPF_K
_RET = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_CLONE_NEWUSER = 0x10000000
_NETWORK_FAMILIES = (2, 10, 17)  # AF_INET, AF_INET6, AF_PACKET
# seccomp_data: nr (4 bytes), arch (4), instruction pointer (8), args (6 x 8).
_NR, _ARCH, _ARG0 = 0, 4, 16

#: (audit architecture, syscall numbers) per machine.
_ARCHES: dict[str, tuple[int, dict[str, Any]]] = {
    "x86_64": (
        0xC000003E,
        {"clone3": 435, "clone": 56, "unshare": 272, "socket": 41, "setsockopt": 54,
         "denied": (319, 447, 438, 101, 278, 425, 426, 427, 29, 68, 64, 240)},
    ),
    "aarch64": (
        0xC00000B7,
        {"clone3": 435, "clone": 220, "unshare": 97, "socket": 198, "setsockopt": 208,
         "denied": (279, 447, 438, 117, 75, 425, 426, 427, 194, 186, 190, 180)},
    ),
}  # fmt: skip
#: What "denied" lists, in order: memfd_create, memfd_secret, pidfd_getfd, ptrace, vmsplice,
#: io_uring_setup, io_uring_enter, io_uring_register, shmget, msgget, semget, mq_open.
_SOL_SOCKET = 1
_BUFFER_OPTIONS = (7, 8, 32, 33)  # SO_SNDBUF, SO_RCVBUF, SO_SNDBUFFORCE, SO_RCVBUFFORCE
_ARG1, _ARG2 = 24, 32


def _assemble(lines: list[tuple[int, str | int, str | int, int] | str]) -> bytes:
    """Instructions with jump targets given as labels (strings in the list mark them)."""
    labels: dict[str, int] = {}
    position = 0
    for line in lines:
        if isinstance(line, str):
            labels[line] = position
        else:
            position += 1
    out, position = bytearray(), 0
    for line in lines:
        if isinstance(line, str):
            continue
        code, true, false, k = line
        jt = labels[true] - position - 1 if isinstance(true, str) else true
        jf = labels[false] - position - 1 if isinstance(false, str) else false
        out += struct.pack("=HBBI", code, jt, jf, k)
        position += 1
    return bytes(out)


def program(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (default: this one), or ``None`` where it is not known.

    Parameters
    ----------
    machine : str, optional
        An architecture as :func:`platform.machine` names it: ``"x86_64"`` or
        ``"aarch64"``; None for this machine's.

    Returns
    -------
    bytes or None
        The classic BPF program, 8 bytes an instruction, as ``PR_SET_SECCOMP`` takes it;
        None for any other architecture.
    """
    found = _ARCHES.get(machine or platform.machine())
    if found is None:
        return None
    arch, nr = found
    deny = _ERRNO | errno.EPERM
    denied = nr["denied"]
    assert isinstance(denied, tuple)
    lines: list[tuple[int, str | int, str | int, int] | str] = [
        (_LD_ABS, 0, 0, _ARCH),
        (_JEQ, 0, "deny", arch),  # another ABI (i386 on x86-64): refuse everything
        (_LD_ABS, 0, 0, _NR),
        (_JGE, "deny", 0, 0x40000000),  # the x32 ABI's numbers
        *[(_JEQ, "deny", 0, number) for number in denied],
        (_JEQ, "nosys", 0, nr["clone3"]),
        (_JEQ, "flags", 0, nr["clone"]),
        (_JEQ, "flags", 0, nr["unshare"]),
        (_JEQ, "option", 0, nr["setsockopt"]),
        (_JEQ, "family", "allow", nr["socket"]),
        "flags",
        (_LD_ABS, 0, 0, _ARG0),
        (_JSET, "deny", "allow", _CLONE_NEWUSER),
        "option",  # socket buffers grown past their default hold kernel memory no one counts
        (_LD_ABS, 0, 0, _ARG1),
        (_JEQ, 0, "allow", _SOL_SOCKET),
        (_LD_ABS, 0, 0, _ARG2),
        *[(_JEQ, "deny", 0, option) for option in _BUFFER_OPTIONS],
        (_RET, 0, 0, _ALLOW),
        "family",
        (_LD_ABS, 0, 0, _ARG0),
        *[(_JEQ, "deny", 0, family) for family in _NETWORK_FAMILIES],
        "allow",
        (_RET, 0, 0, _ALLOW),
        "deny",
        (_RET, 0, 0, deny),
        "nosys",
        (_RET, 0, 0, _ERRNO | errno.ENOSYS),
    ]
    return _assemble(lines)


def install() -> bool:
    """Apply the filter to this process and its future children (Linux; once set, for good).

    Meant for a child between ``fork`` and ``exec``. It sets ``no_new_privs`` first, as
    the kernel requires of an unprivileged process.

    Returns
    -------
    bool
        Whether a filter was installed: False on an unknown architecture, or when a
        ``prctl`` call failed.
    """
    code = program()
    if code is None:
        return False
    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    buffer = ctypes.create_string_buffer(code, len(code))
    fprog = Program(len(code) // 8, ctypes.cast(buffer, ctypes.c_char_p))
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        return False
    return bool(libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(fprog), 0, 0) == 0)
