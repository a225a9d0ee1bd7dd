"""A notebook's kernel that dies as it starts is started again, and why it died is kept.

nbval starts one kernel per notebook and sends its stderr to ``/dev/null``. A kernel that
exits before it answers (one of the five TCP ports jupyter_client picked for it taken, between
the pick and the kernel's bind, by another process of a parallel test run, say) then errors
every cell of its notebook with "Kernel died before replying to kernel_info", and nothing
says why. :func:`install` makes nbval start such a kernel up to :data:`ATTEMPTS` times. Each
attempt's stderr goes to a pipe whose last :data:`KEPT` characters are kept; a kernel that
starts on a later attempt warns with why the earlier ones died, and one that never starts
errors with it. A kernel that hangs rather than dies is not tried again.
"""

from __future__ import annotations

import functools
import os
import threading
import warnings
from collections.abc import Callable
from typing import Any

#: How many times a notebook's kernel is started before its cells error.
ATTEMPTS = 3

#: How much of a kernel's stderr is kept, characters.
KEPT = 3000


class _Tail:
    """The write end of a pipe for a kernel's stderr, and the last :data:`KEPT` bytes read
    from it, by a thread that reads until the kernel and everyone else closes it."""

    def __init__(self) -> None:
        read, self.fd = os.pipe()
        self.data = b""
        self.done = threading.Thread(target=self._drain, args=(read,), daemon=True)
        self.done.start()

    def _drain(self, read: int) -> None:
        with open(read, "rb", buffering=0) as pipe:
            while chunk := pipe.read(1 << 16):
                self.data = (self.data + chunk)[-KEPT:]

    def text(self) -> str:
        """What the kernel wrote last, once it has exited (at most 5 s later)."""
        self.done.join(timeout=5)
        return self.data.decode("utf-8", errors="replace")


def started_again(start: Callable[..., Any]) -> Callable[..., Any]:
    """``start`` (nbval's ``start_new_kernel``), tried up to :data:`ATTEMPTS` times."""

    @functools.wraps(start)
    def start_new_kernel(*args: Any, **kwargs: Any) -> Any:
        reasons = []
        for _ in range(ATTEMPTS):
            tail = _Tail()
            try:
                started = start(*args, **{**kwargs, "stderr": tail.fd})
            except RuntimeError as error:
                if "died" not in str(error):  # it never answered: a hang, not a death
                    raise
                os.close(tail.fd)  # the kernel has exited: the pipe ends, and so the thread
                reasons.append(f"{error}; its stderr:\n{tail.text()}")
                continue
            except BaseException:
                os.close(tail.fd)
                raise
            os.close(tail.fd)  # the kernel holds its own copy; the thread drains it
            if reasons:
                warnings.warn(
                    "a kernel died as it started and was started again:\n\n" + "\n\n".join(reasons),
                    stacklevel=2,
                )
            return started
        raise RuntimeError(
            f"the kernel did not start in {ATTEMPTS} attempts:\n\n" + "\n\n".join(reasons)
        )

    return start_new_kernel


def install() -> None:
    """Make nbval start a kernel that dies as it starts again (see the module's doc)."""
    import nbval.kernel

    if not hasattr(nbval.kernel.start_new_kernel, "__wrapped__"):
        nbval.kernel.start_new_kernel = started_again(nbval.kernel.start_new_kernel)
