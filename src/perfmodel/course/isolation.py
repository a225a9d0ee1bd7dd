"""The isolation boundary around a submission's kernel: a bubblewrap sandbox.

`bubblewrap <https://github.com/containers/bubblewrap>`_ (``bwrap``, the sandbox Flatpak
uses) starts the kernel in new mount, PID, network, IPC and UTS namespaces. Inside, the
kernel sees only:

* the system's programs and libraries (``/usr``, ``/bin``, ``/lib``...), read-only;
* the Python environment that runs the grader and the ``perfmodel`` package, read-only;
* its own scratch folder, writable, holding nothing but its notebook copy (``TMPDIR`` and
  ``/dev/shm`` are folders inside it, so every byte it writes counts against its disk cap;
  everything else, ``/tmp`` included, is read-only);
* a fresh ``/proc`` (its own processes only) and a minimal ``/dev``;
* the environment variables it is given, and nothing else.

It cannot see the answer keys, the other submissions, the output folder, the package's
source tree, the grader's processes or environment, or the network; it dies with its
parent and cannot reach the grader's terminal.

Where ``bwrap`` is missing or cannot create namespaces (macOS, a container without user
namespaces), :func:`probe` says why and grading runs without isolation.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

__all__ = ["bwrap_command", "probe"]

#: Files under /etc a Python process needs: the dynamic linker's cache, user names, time zone.
_ETC = (
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
)
#: Top-level system folders; on merged-/usr systems some are symbolic links into /usr.
_SYSTEM = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")


def _python_roots() -> list[Path]:
    """The read-only folders the kernel's Python needs: its installation and environment."""
    import perfmodel

    roots = {Path(sys.base_prefix), Path(sys.prefix), Path(perfmodel.__file__).parent}
    # Only the outermost of nested folders needs binding.
    resolved = sorted({root.resolve() for root in roots} | roots, key=lambda p: len(p.parts))
    kept: list[Path] = []
    for root in resolved:
        if not any(root == k or k in root.parents for k in kept) and root.exists():
            kept.append(root)
    return kept


def bwrap_command(scratch: Path, env: Mapping[str, str]) -> list[str]:
    """The ``bwrap`` argument list that runs a command inside the sandbox.

    Parameters
    ----------
    scratch : Path
        The submission's private writable folder, bound at the same path inside (so that
        the kernel's socket files have the same name on both sides); it must hold an empty
        folder ``shm``.
    env : mapping
        The complete environment of the sandboxed process.

    Returns
    -------
    list of str
        Append the command to run (``[..., "python", "-m", "ipykernel_launcher", ...]``).
    """
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        raise RuntimeError("bubblewrap (`bwrap`) is not installed")
    scratch = Path(scratch).resolve()
    args = [bwrap]
    for folder in _SYSTEM:
        if os.path.islink(folder):
            args += ["--symlink", os.readlink(folder), folder]
        elif os.path.isdir(folder):
            args += ["--ro-bind", folder, folder]
    for path in _ETC:
        args += ["--ro-bind-try", path, path]
    for root in _python_roots():
        if not any(str(root).startswith(prefix + "/") for prefix in _SYSTEM):
            args += ["--ro-bind", str(root), str(root)]
    args += [
        "--proc", "/proc",
        "--dev", "/dev",
        "--bind", str(scratch), str(scratch),
        "--bind", str(scratch / "shm"), "/dev/shm",
        "--remount-ro", "/",
        "--chdir", str(scratch),
        "--unshare-all",
        "--hostname", "sandbox",
        "--die-with-parent",
        "--new-session",
        "--cap-drop", "ALL",
        "--clearenv",
    ]  # fmt: skip
    for name, value in sorted(env.items()):
        args += ["--setenv", name, value]
    return [*args, "--"]


@functools.cache
def probe() -> str:
    """Why the sandbox cannot be used here, or ``""`` when it works (checked once)."""
    if not sys.platform.startswith("linux"):
        return f"bubblewrap needs Linux (this is {sys.platform})"
    if shutil.which("bwrap") is None:
        return "bubblewrap (`bwrap`) is not installed; on Debian: apt-get install bubblewrap"
    import tempfile

    with tempfile.TemporaryDirectory(prefix="perfmodel-probe-") as folder:
        scratch = Path(folder)
        (scratch / "tmp").mkdir()
        (scratch / "shm").mkdir()
        command = [*bwrap_command(scratch, {"PATH": "/usr/bin:/bin"}), sys.executable, "-c", ""]
        try:
            done = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired) as error:
            return f"bubblewrap could not start: {error}"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no message"])[-1]
        return f"bubblewrap could not create a sandbox here: {last}"
    return ""
