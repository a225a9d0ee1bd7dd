"""The system calls a submission may make: an allowlist, built with libseccomp.

Every call not named here fails with ``EPERM``. The list holds what a Python kernel, numpy,
matplotlib, the grading worker and ``setpriv`` call while a workbook is graded, recorded by
``benchmarks/syscalls.py`` over every master and student copy (``strace -f``, kept in
``tests/data/recorded_syscalls.txt``), and the near variants a C library picks on another
machine (``stat`` beside ``newfstatat``, ``epoll_pwait`` beside ``epoll_wait``). Four calls
are allowed only with certain arguments:

* ``socket`` and ``socketpair`` for ``AF_UNIX``: the kernel talks to its worker over Unix
  sockets; and ``socket`` for netlink's ``NETLINK_ROUTE``, through which ZeroMQ lists the
  interfaces (it aborts without it). No network, no ``AF_VSOCK`` to a hypervisor, no other
  netlink protocol (audit, uevents, sockets' diagnostics);
* ``clone`` without any namespace flag; ``clone3``, whose flags a filter cannot read, fails
  with ``ENOSYS`` so the C library falls back to ``clone``;
* ``setsockopt`` except growing a socket's buffers (``SO_SNDBUF``, ``SO_RCVBUF`` and their
  ``FORCE`` forms), kernel memory no per-process count sees.

So, among others, nothing can reach keyrings (``add_key``, ``keyctl``), ``io_uring``,
``ptrace``, ``memfd_create``, ``userfaultfd``, ``bpf``, ``perf_event_open``, System V and
POSIX IPC, ``vmsplice``, ``mount``, ``unshare`` or ``setns``. Calls of another ABI on the
same machine (i386 or x32 on x86-64) kill the process.

The filter comes from libseccomp through `pyseccomp <https://pypi.org/project/pyseccomp/>`_
(ctypes bindings with the API of libseccomp's own); :func:`problem` says what is missing where
it cannot be built, and :func:`perfmodel.grading.levels.choose` then refuses both sandboxed
levels rather than run submissions unfiltered.
"""

from __future__ import annotations

import errno
import functools
import socket
import sys
import tempfile

__all__ = ["ALLOWED", "GROUPS", "LISTEN_BACKLOG", "RULED", "install", "problem", "program"]

#: Calls allowed whatever their arguments, by what they are for.
GROUPS = {
    "files and folders": (
        "read write readv writev pread64 pwrite64 preadv pwritev preadv2 pwritev2 open openat "
        "close close_range creat lseek stat fstat lstat newfstatat statx statfs fstatfs access "
        "faccessat faccessat2 readlink readlinkat getdents getdents64 mkdir mkdirat rmdir "
        "unlink unlinkat rename renameat renameat2 link linkat symlink symlinkat chmod fchmod "
        "fchmodat truncate ftruncate fsync fdatasync fallocate flock fcntl dup dup2 dup3 pipe "
        "pipe2 getcwd chdir fchdir umask utime utimes utimensat ioctl sendfile copy_file_range "
        "fadvise64 getxattr lgetxattr fgetxattr"
    ),
    "memory": (
        "brk mmap munmap mremap mprotect madvise msync mincore mbind get_mempolicy set_mempolicy"
    ),
    "processes and threads": (
        "execve exit exit_group wait4 waitid vfork fork kill tkill tgkill getpid getppid gettid "
        "getuid geteuid getgid getegid getresuid getresgid getgroups setresuid setresgid "
        "setgroups setuid setgid capget capset prctl arch_prctl set_tid_address "
        "set_robust_list get_robust_list rseq getpgid getpgrp setpgid getsid setsid "
        "getpriority setpriority sched_yield sched_getaffinity sched_setaffinity "
        "sched_getparam sched_setparam sched_getscheduler sched_setscheduler "
        "sched_get_priority_max sched_get_priority_min prlimit64 getrlimit setrlimit getrusage "
        "times sysinfo uname getcpu"
    ),
    "signals": (
        "rt_sigaction rt_sigprocmask rt_sigreturn rt_sigsuspend rt_sigtimedwait sigaltstack "
        "pause alarm restart_syscall signalfd signalfd4"
    ),
    "time and waiting": (
        "clock_gettime clock_getres clock_nanosleep nanosleep gettimeofday time timer_create "
        "timer_settime timer_gettime timer_delete timerfd_create timerfd_settime "
        "timerfd_gettime getitimer setitimer futex poll ppoll select pselect6 epoll_create "
        "epoll_create1 epoll_ctl epoll_wait epoll_pwait epoll_pwait2 eventfd eventfd2 getrandom"
    ),
    "sockets already made (socket, socketpair and listen are ruled by argument)": (
        "bind accept accept4 connect getsockname getpeername sendto recvfrom sendmsg "
        "recvmsg sendmmsg recvmmsg shutdown getsockopt"
    ),
}
ALLOWED = frozenset(name for names in GROUPS.values() for name in names.split())
#: Calls allowed, or refused otherwise than by EPERM, only by their arguments (see above).
RULED = frozenset({"socket", "socketpair", "listen", "clone", "clone3", "setsockopt"})
#: The longest queue of unaccepted connections ``listen`` may ask for (ZeroMQ asks for 100,
#: Python's ``socket.listen()`` for 128): each can hold a closed client's unread bytes, which
#: no process's count sees, so the watchdog charges a listening socket this many buffers.
LISTEN_BACKLOG = 128

#: ``clone`` flags that make a namespace (mount, cgroup, UTS, IPC, user, PID, network, time).
NAMESPACE_FLAGS = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000
NAMESPACE_FLAGS |= 0x20000000 | 0x40000000 | 0x00000080
#: The one netlink protocol allowed: reading the routing table and the interfaces.
NETLINK_ROUTE = 0
#: Socket options that grow a socket's buffers: SO_SNDBUF, SO_RCVBUF and their FORCE forms.
BUFFER_OPTIONS = (7, 8, 32, 33)


def problem() -> str:
    """Why the filter cannot be built here, with how to fix it; ``""`` when it can.

    Returns
    -------
    str
        The reason, or an empty string.
    """
    if not sys.platform.startswith("linux"):
        return "seccomp filters exist on Linux only"
    try:
        import pyseccomp  # noqa: F401
    except ImportError as error:
        return (
            f"the seccomp allowlist needs libseccomp and pyseccomp ({error}; Debian: "
            f"apt-get install libseccomp2, then pip install 'perfmodel[grading]')"
        )
    except OSError as error:  # pragma: no cover - pyseccomp found no libseccomp
        return f"libseccomp could not be loaded ({error}; Debian: apt-get install libseccomp2)"
    return ""


@functools.cache
def program() -> bytes | None:
    """The filter as the kernel takes it: classic BPF, 8 bytes an instruction.

    Returns
    -------
    bytes or None
        The program libseccomp compiled for this machine's architecture; None where
        :func:`problem` says it cannot be built.
    """
    if problem():
        return None
    import pyseccomp as sc

    rules = sc.SyscallFilter(defaction=sc.ERRNO(errno.EPERM))
    for name in sorted(ALLOWED):
        try:
            rules.add_rule(sc.ALLOW, name)
        except (OSError, ValueError, RuntimeError):  # pragma: no cover - not on this arch
            continue
    for name in ("socket", "socketpair"):
        rules.add_rule(sc.ALLOW, name, sc.Arg(0, sc.EQ, socket.AF_UNIX))
    # ZeroMQ lists the interfaces through a routing socket as the kernel starts, and aborts
    # when it is refused (recorded; in bubblewrap's network namespace it sees loopback only).
    rules.add_rule(
        sc.ALLOW, "socket", sc.Arg(0, sc.EQ, socket.AF_NETLINK), sc.Arg(2, sc.EQ, NETLINK_ROUTE)
    )
    rules.add_rule(sc.ALLOW, "listen", sc.Arg(1, sc.LE, LISTEN_BACKLOG))
    rules.add_rule(sc.ALLOW, "clone", sc.Arg(0, sc.MASKED_EQ, NAMESPACE_FLAGS, 0))
    rules.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")
    rules.add_rule(sc.ALLOW, "setsockopt", sc.Arg(1, sc.NE, socket.SOL_SOCKET))
    others = [option for option in range(1, 80) if option not in BUFFER_OPTIONS]
    for option in others:
        rules.add_rule(
            sc.ALLOW, "setsockopt", sc.Arg(1, sc.EQ, socket.SOL_SOCKET), sc.Arg(2, sc.EQ, option)
        )
    with tempfile.TemporaryFile() as handle:
        rules.export_bpf(handle)
        handle.seek(0)
        return handle.read()


def install(code: bytes | None = None) -> bool:
    """Apply the filter to this process and its future children (Linux; once set, for good).

    Meant for a child between ``fork`` and ``exec``: pass ``code`` built in the parent, so
    the child allocates almost nothing. It sets ``no_new_privs`` first, as the kernel
    requires of an unprivileged process.

    Parameters
    ----------
    code : bytes, optional
        :func:`program`'s output (default: built now).

    Returns
    -------
    bool
        Whether a filter was installed: False where none can be built, or when a ``prctl``
        call failed.
    """
    code = program() if code is None else code
    if code is None:
        return False
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_set_no_new_privs, pr_set_seccomp, seccomp_mode_filter = 38, 22, 2

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    fprog = Program(len(code) // 8, code)
    if libc.prctl(pr_set_no_new_privs, 1, 0, 0, 0) != 0:
        return False
    return bool(libc.prctl(pr_set_seccomp, seccomp_mode_filter, ctypes.byref(fprog), 0, 0) == 0)
