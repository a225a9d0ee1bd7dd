"""The isolation boundary around a submission: who runs its code, and what it can see.

Three levels, the strongest this machine allows (:func:`level`):

``"bubblewrap"``
    The grading worker and the student's kernel run in a `bubblewrap
    <https://github.com/containers/bubblewrap>`_ sandbox (``bwrap``, the sandbox Flatpak
    uses) with new mount, PID, network, IPC and UTS namespaces. Inside they see only:

    * the system's programs and libraries, the Python environment and the ``perfmodel``
      package, read-only;
    * an *inbox*, read-only, holding the submitted notebook and the worker's request;
    * a scratch folder that is its own **tmpfs with a size and an inode cap**, so every byte
      written counts exactly (unlinked files, deep paths and hard links included), and
      ``/dev/shm`` lives inside it;
    * a fresh ``/proc`` (its own processes only; ``/proc/sys`` is not writable) and a
      minimal ``/dev``; System V shared memory and message queues are switched off in its
      IPC namespace.

    It runs as an **unprivileged user** even when the grader is root: as root, the sandbox
    drops to a fresh uid of its own (so the process cap, ``RLIMIT_NPROC``, counts its
    threads too, and no root bypass applies); as another user, it runs as that user inside
    a user namespace.
``"unprivileged"``
    No namespaces (a container without user namespaces, Gradescope's often), but the grader
    is root: the worker and kernel run as a fresh unprivileged uid with no capabilities, in a
    scratch folder only that uid can write. Files that every user may read stay readable;
    the Gradescope runner makes its tests, source and results root-only first.
``"none"``
    No isolation: the submission runs as the grader's user. Only when asked for by name
    (``--no-isolation``): :func:`perfmodel.grading.levels.choose` refuses to fall back to it.

The grader (:mod:`perfmodel.grading.sandbox`) watches every level from outside as well: the
wall clock, the memory of the whole tree (what its sockets and pipes can queue included) and
its threads.
"""

from __future__ import annotations

import functools
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

from perfmodel.grading import landlock, seccomp

__all__ = [
    "LEVELS",
    "SYSTEM_BIN",
    "Sandbox",
    "bwrap_path",
    "level",
    "package_parent",
    "readable_by_others",
    "probe",
    "run_trial",
    "sandbox_uid",
    "seccomp_pipe",
    "tool",
]

#: The isolation levels, strongest first.
LEVELS = ("bubblewrap", "unprivileged", "none")

#: Files under /etc a Python process needs: the dynamic linker's cache, time zone.
_ETC = ("/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/localtime")
#: Top-level system folders; on merged-/usr systems some are symbolic links into /usr.
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
#: Where the inbox appears inside a bubblewrap sandbox.
INBOX = "/inbox"

# Mount the scratch tmpfs and switch off System V IPC in the new IPC namespace, then run the
# rest of the command line. "$1".."$4": size, inodes, owner options, mount point.
_SETUP = (
    'set -e; mount -t tmpfs -o "size=$1,nr_inodes=$2,mode=0700$3" perfmodel-scratch "$4"; '
    'mkdir -m 1777 "$4/shm"; '
    "echo 0 > /proc/sys/kernel/shmmni; echo 0 > /proc/sys/kernel/msgmni; "
    'nproc="$5"; shift 5; if [ -n "$nproc" ]; then exec prlimit --nproc="$nproc" -- "$@"; fi; '
    'exec "$@"'
)


#: The only folders the sandboxing tools (``bwrap``, ``setpriv``, ``unshare``...) come from.
SYSTEM_BIN = ("/usr/bin", "/bin", "/usr/sbin", "/sbin")


def _root_only(path: str) -> bool:
    """Whether root owns ``path`` (links followed) and its folder, neither group- nor
    other-writable: no other user could have put it there or changed it."""
    real = Path(os.path.realpath(path))
    try:
        return all(
            (info := os.stat(each)).st_uid == 0 and not info.st_mode & 0o022
            for each in (real, real.parent)
        )
    except OSError:
        return False


def tool(name: str) -> str | None:
    """A system tool from :data:`SYSTEM_BIN`, never from ``PATH``.

    A program first on ``PATH`` (a fake ``setpriv`` that drops its options) must not decide
    who runs a submission, so ``PATH`` is not read; a tool is taken only where root owns it
    and its folder and neither is writable by the group or others.

    Parameters
    ----------
    name : str
        The program's name, ``"unshare"``.

    Returns
    -------
    str or None
        Its path, or None when no folder holds a trusted, executable one.
    """
    for folder in SYSTEM_BIN:
        path = f"{folder}/{name}"
        if os.access(path, os.X_OK) and _root_only(path):
            return path
    return None


def _missing(name: str) -> str:
    raise RuntimeError(f"`{name}` is not installed in {', '.join(SYSTEM_BIN)}, owned by root")


def bwrap_path() -> str | None:
    """Bubblewrap's ``bwrap`` from :func:`tool`, if ``PATH`` has one (``PATH`` only says
    whether to use bubblewrap, never which program runs).

    Returns
    -------
    str or None
        The trusted system copy, or None.
    """
    return tool("bwrap") if shutil.which("bwrap") else None


def seccomp_pipe() -> int | None:
    """A pipe's read end holding the seccomp filter for bubblewrap.

    The caller passes it to the child and closes it afterwards.

    Returns
    -------
    int or None
        The file descriptor, or None when there is no filter for this machine's
        architecture (:func:`perfmodel.grading.seccomp.program`).
    """
    code = seccomp.program()
    if code is None:
        return None
    read, write = os.pipe()
    os.write(write, code)
    os.close(write)
    return read


def sandbox_uid() -> int:
    """A fresh uid for one sandbox run by root: no other process shares its process cap.

    Returns
    -------
    int
        A random uid from 2,000,000,000 up to (not including) 2,100,000,000.
    """
    return 2_000_000_000 + secrets.randbelow(100_000_000)


def _python_roots() -> list[Path]:
    """The read-only folders the worker's Python needs: its installation and environment."""
    import perfmodel

    roots = {Path(sys.base_prefix), Path(sys.prefix), Path(perfmodel.__file__).parent.parent}
    resolved = sorted({root.resolve() for root in roots} | roots, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for root in resolved:
        if not any(root == k or k in root.parents for k in kept) and root.exists():
            kept.append(root)
    return kept


def package_parent() -> str:
    """The folder to put on ``PYTHONPATH`` so that ``import perfmodel`` finds this copy.

    Returns
    -------
    str
        The resolved folder that holds the ``perfmodel`` package.
    """
    import perfmodel

    return str(Path(perfmodel.__file__).resolve().parent.parent)


class Sandbox:
    """The command line that runs one process at one isolation level.

    Parameters
    ----------
    scratch : Path
        The submission's writable folder (an empty folder; under bubblewrap a tmpfs is
        mounted on it, so the grader never sees what is written there).
    inbox : Path
        A folder the sandbox may read: the notebook and the worker's request.
    env : mapping of str to str
        The complete environment of the sandboxed process.
    disk_bytes : int
        The scratch folder's size cap under bubblewrap, B.
    max_files : int
        The scratch folder's inode cap under bubblewrap, count.
    max_processes : int
        The processes and threads the command allows under bubblewrap when the grader is
        not root, count (as root, the caller sets ``RLIMIT_NPROC`` in the child instead).
    isolation : str, optional
        One of :data:`LEVELS` (default: :func:`perfmodel.grading.levels.choose`'s).
    """

    def __init__(
        self,
        scratch: Path,
        inbox: Path,
        env: Mapping[str, str],
        *,
        disk_bytes: int,
        max_files: int,
        max_processes: int,
        isolation: str | None = None,
    ) -> None:
        if isolation is None:
            from perfmodel.grading.levels import choose

            isolation = choose()
        self.level = isolation
        if self.level not in LEVELS:
            raise ValueError(f"`isolation` must be one of {LEVELS} (got {isolation!r}).")
        self.scratch, self.inbox, self.env = Path(scratch), Path(inbox), dict(env)
        self.disk_bytes, self.max_files = int(disk_bytes), int(max_files)
        self.max_processes = int(max_processes)
        self.root = os.geteuid() == 0
        self.uid = sandbox_uid() if self.root and self.level != "none" else None
        # Built here, in the parent: the child between fork and exec only installs it.
        self.filter = seccomp.program() if self.level != "bubblewrap" else None

    @property
    def inbox_inside(self) -> str:
        """Where the sandboxed process finds the inbox: ``/inbox`` under bubblewrap."""
        return INBOX if self.level == "bubblewrap" else str(self.inbox)

    def prepare(self) -> None:
        """Give the sandbox's user its folders (root only): the scratch, and the inbox to read
        only (it is its alone: no other sandbox's user may read it)."""
        if self.uid is None:
            return
        for path in self.inbox.iterdir():
            os.chown(path, self.uid, self.uid)
            os.chmod(path, 0o400)
        os.chown(self.inbox, self.uid, self.uid)
        os.chmod(self.inbox, 0o500)
        if self.level == "unprivileged":
            os.chown(self.scratch, self.uid, self.uid)
            os.chmod(self.scratch, 0o700)

    def command(self, argv: list[str], *, seccomp_fd: int | None = None) -> list[str]:
        """The whole command line that runs ``argv`` inside the sandbox.

        Parameters
        ----------
        argv : list of str
            The command to run, program first.
        seccomp_fd : int, optional
            A file descriptor the command inherits, holding the
            :mod:`~perfmodel.grading.seccomp` filter, which bubblewrap applies last, just
            before ``argv`` starts (the other levels install it themselves:
            :meth:`preexec`, and ignore this).

        Returns
        -------
        list of str
            ``argv`` itself at level ``"none"``; else ``argv`` behind the commands that
            drop to the sandbox's uid (when root) and, under bubblewrap, set up the
            namespaces, the scratch tmpfs and ``bwrap``.

        Raises
        ------
        RuntimeError
            Under bubblewrap, if ``bwrap`` is not installed.
        """
        if self.level == "none":
            return list(argv)
        drop = self._drop_privileges()
        if self.level == "unprivileged":
            return [*drop, *argv]
        return [*self._setup(), *self._bwrap(seccomp_fd), *drop, *argv]

    def preexec(self) -> None:  # pragma: no cover - runs in the child between fork and exec
        """The filter for the levels without bubblewrap, set in the child before ``exec``;
        at the unprivileged level first Landlock's scopes, where the kernel has them
        (:mod:`perfmodel.grading.landlock`: no abstract socket or signal outside)."""
        if self.level == "unprivileged":
            landlock.scope()
        if self.filter is not None:
            seccomp.install(self.filter)

    def clean_up(self) -> None:
        """Kill whatever the sandbox's own uid still runs, and delete every file it left
        (:func:`perfmodel.grading.leftovers.remove_uid`); only the unprivileged level needs it,
        having no namespace to do it."""
        if self.uid is None or self.level != "unprivileged":
            return
        from perfmodel.grading import leftovers

        leftovers.remove_uid(self.uid)

    def _drop_privileges(self) -> list[str]:
        if self.uid is None:
            return []
        setpriv = tool("setpriv") or _missing("setpriv")
        uid = str(self.uid)
        return [
            setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--no-new-privs",
            "--inh-caps=-all", "--",
        ]  # fmt: skip

    def _setup(self) -> list[str]:
        unshare = tool("unshare") or _missing("unshare")
        flags = ["--mount", "--ipc", "--propagation", "private"]
        if self.root:
            owner, nproc = f",uid={self.uid},gid={self.uid}", ""
        else:
            # A user namespace first, so that this user may mount; the thread cap is set inside
            # it, where only the sandbox's own threads count against it.
            flags = ["--user", "--map-root-user", *flags]
            owner, nproc = "", str(self.max_processes)
        return [
            unshare, *flags, "--", tool("sh") or "/bin/sh", "-c", _SETUP, "perfmodel-sandbox",
            str(self.disk_bytes), str(self.max_files), owner, str(self.scratch), nproc,
        ]  # fmt: skip

    def _bwrap(self, seccomp_fd: int | None) -> list[str]:
        bwrap = bwrap_path()
        if bwrap is None:
            raise RuntimeError("bubblewrap (`bwrap`) is not installed in a system folder")
        args = [bwrap]
        made: set[str] = set()

        def parents(target: Path) -> list[str]:
            # bwrap makes missing parent folders root-only; make them traversable first.
            out = []
            for parent in reversed(target.parents):
                text = str(parent)
                if text != "/" and text not in made and not text.startswith(_SYSTEM):
                    made.add(text)
                    out += ["--perms", "0755", "--dir", text]
            return out

        for folder in _SYSTEM:
            if os.path.islink(folder):
                args += ["--symlink", os.readlink(folder), folder]
            elif os.path.isdir(folder):
                args += ["--ro-bind", folder, folder]
        for path in _ETC:
            args += ["--ro-bind-try", path, path]
        for root in _python_roots():
            if not str(root).startswith(tuple(prefix + "/" for prefix in _SYSTEM)):
                args += [*parents(root), "--ro-bind", str(root), str(root)]
        args += [*parents(self.scratch), "--bind", str(self.scratch), str(self.scratch)]
        args += ["--ro-bind", str(self.inbox), INBOX]
        args += [
            "--proc", "/proc",
            "--dev", "/dev",
            "--bind", f"{self.scratch}/shm", "/dev/shm",
            "--remount-ro", "/",
            "--unshare-pid", "--unshare-net", "--unshare-uts", "--unshare-cgroup-try",
            "--hostname", "sandbox",
            "--die-with-parent",
            "--new-session",
        ]  # fmt: skip
        if self.root:
            # No user namespace: root sets the sandbox up, keeps only what setpriv needs to
            # drop to the sandbox's uid, and that uid runs everything.
            args += ["--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
        else:
            # The user's own uid inside (not the namespace's root, as set up above).
            uid, gid = str(os.getuid()), str(os.getgid())
            args += ["--unshare-user", "--uid", uid, "--gid", gid, "--cap-drop", "ALL"]
        if seccomp_fd is not None:
            args += ["--seccomp", str(seccomp_fd)]
        args += ["--clearenv"]
        for name, value in sorted(self.env.items()):
            args += ["--setenv", name, value]
        return [*args, "--"]


def readable_by_others(path: Path) -> bool:
    """Whether a user other than the owner can read ``path`` (a file, or list a folder).

    It must grant others the read bit, and every folder above it the search bit, through
    the "other" bits.

    Parameters
    ----------
    path : Path
        The file or folder; links are resolved first.

    Returns
    -------
    bool
        True when the "other" bits allow it; False also when it cannot be looked at.

    Examples
    --------
    >>> readable_by_others(Path("/"))
    True
    """
    path = Path(path).resolve()
    try:
        if not os.stat(path).st_mode & 0o004:
            return False
        return all(os.stat(parent).st_mode & 0o001 for parent in path.parents)
    except OSError:
        return False


def run_trial(isolation: str) -> str:
    """Run this Python at ``isolation`` as a submission's worker would start; say how it went.

    As the sandbox's user, it imports ``perfmodel``, ``jupyter_client`` and ``nbclient`` and
    starts a second Python that imports ``ipykernel``.

    Parameters
    ----------
    isolation : str
        One of :data:`LEVELS`.

    Returns
    -------
    str
        ``""`` when it worked, else why not (the last line of its error, at most 300
        characters).
    """
    with tempfile.TemporaryDirectory(prefix="perfmodel-probe-") as folder:
        scratch, inbox = Path(folder) / "work", Path(folder) / "inbox"
        scratch.mkdir()
        inbox.mkdir()
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": package_parent()}
        sandbox = Sandbox(
            scratch,
            inbox,
            env,
            disk_bytes=1024**2,
            max_files=100,
            max_processes=64,
            isolation=isolation,
        )
        os.chmod(folder, 0o711)
        sandbox.prepare()
        # The worker starts a kernel with this same Python: check it can, as the sandbox's user.
        check = (
            "import os, subprocess, sys; import perfmodel, jupyter_client, nbclient; "
            "subprocess.run([sys.executable, '-c', 'import ipykernel'], check=True)"
        )
        # And that it is isolated: not root (a fake setpriv), blind to the host's inbox path.
        if sandbox.uid is not None:
            check += "; assert os.getuid() != 0 != os.geteuid(), 'the sandbox ran it as root'"
        if isolation == "bubblewrap":
            check += f"; assert not os.path.exists({str(inbox)!r}), 'the sandbox sees the host'"
        filter_fd = seccomp_pipe() if isolation == "bubblewrap" else None
        command = sandbox.command([sys.executable, "-c", check], seccomp_fd=filter_fd)
        try:
            done = subprocess.run(
                command,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
                env=env,
                pass_fds=() if filter_fd is None else (filter_fd,),
                preexec_fn=sandbox.preexec,
            )
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"it could not start: {error}"
        finally:
            if filter_fd is not None:
                os.close(filter_fd)
            sandbox.clean_up()
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return last[:300]
    return ""


@functools.cache
def probe() -> str:
    """Why the bubblewrap sandbox cannot be used here, or ``""`` when it works (checked once).

    Returns
    -------
    str
        The reason, or an empty string.
    """
    if not sys.platform.startswith("linux"):
        return f"bubblewrap needs Linux (this is {sys.platform})"
    if shutil.which("bwrap") is None:
        return "bubblewrap (`bwrap`) is not installed; on Debian: apt-get install bubblewrap"
    if bwrap_path() is None:
        return f"`bwrap` is on PATH but not in {', '.join(SYSTEM_BIN)}, owned by root"
    if tool("unshare") is None:
        return "util-linux's `unshare` is not installed"
    why = run_trial("bubblewrap")
    return f"bubblewrap could not create a sandbox here: {why}" if why else ""


@functools.cache
def level() -> str:
    """The strongest isolation level this machine allows (checked once).

    Grading does not use it: :func:`perfmodel.grading.levels.choose` never falls back to
    ``"none"``.

    Returns
    -------
    str
        One of :data:`LEVELS`: ``"none"`` when neither isolating level can run.
    """
    from perfmodel.grading.levels import unprivileged_problem

    if not probe():
        return "bubblewrap"
    return "none" if unprivileged_problem() else "unprivileged"
