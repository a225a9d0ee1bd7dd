"""A notebook's kernel that dies as it starts is started again, and why it died is kept.

nbval starts one kernel per notebook and sends its stderr to ``/dev/null``. A kernel that
exits before it answers (most often: one of the five TCP ports jupyter_client picked for it
was taken, between the pick and the kernel's bind, by another process of a parallel test
run) then errors every cell of its notebook with "Kernel died before replying to
kernel_info", and nothing says why. :func:`install` makes nbval start such a kernel up to
:data:`ATTEMPTS` times, keeping each attempt's stderr, and a notebook whose kernel never
starts errors with what each attempt printed.
"""

from __future__ import annotations

import functools
import tempfile
from collections.abc import Callable
from typing import Any

#: How many times a notebook's kernel is started before its cells error.
ATTEMPTS = 3

#: How much of a dead kernel's stderr an error keeps, characters.
KEPT = 3000


def started_again(start: Callable[..., Any]) -> Callable[..., Any]:
    """``start`` (nbval's ``start_new_kernel``), tried up to :data:`ATTEMPTS` times."""

    @functools.wraps(start)
    def start_new_kernel(*args: Any, **kwargs: Any) -> Any:
        reasons = []
        for _ in range(ATTEMPTS):
            # The kernel holds its own copy of the file: closing ours loses nothing.
            with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as stderr:
                try:
                    return start(*args, **{**kwargs, "stderr": stderr})
                except RuntimeError as error:  # it died, or never answered
                    stderr.seek(0)
                    reasons.append(f"{error}; its stderr:\n{stderr.read()[-KEPT:]}")
        raise RuntimeError(
            f"the kernel did not start in {ATTEMPTS} attempts:\n\n" + "\n\n".join(reasons)
        )

    return start_new_kernel


def install() -> None:
    """Make nbval start a kernel that dies as it starts again (see the module's doc)."""
    import nbval.kernel

    if not hasattr(nbval.kernel.start_new_kernel, "__wrapped__"):
        nbval.kernel.start_new_kernel = started_again(nbval.kernel.start_new_kernel)
