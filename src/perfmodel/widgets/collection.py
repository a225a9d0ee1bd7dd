"""Garbage collection kept out of an explorer's moves.

Python's cyclic garbage collector runs when enough objects have been allocated, and a
matplotlib figure allocates tens of thousands. Every few moves of a control it therefore
runs a *full* collection, which walks every object the lecture holds: 50-85 ms on 2 cores
with a lecture's models loaded, in the middle of the move that happened to trigger it.
Those pauses were most of the difference between an explorer's median move and its worst.

:func:`collection_deferred` pauses automatic collection while a move is drawn and sends
its picture, and resumes it :data:`RESUME_AFTER_S` later (a timer thread turns it back on),
so that the collection that was due runs while the room looks at the picture. Nothing is
collected any less: a burst of moves defers it to the end of the burst. Where no event
loop runs (a script, a test), collection resumes as the move ends. A ``gc.disable()`` of
one's own within :data:`RESUME_AFTER_S` of a move is undone when the pause ends.

>>> import gc
>>> with collection_deferred():
...     gc.isenabled()
False
>>> gc.isenabled()  # no event loop here: resumed at once
True
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import threading
from collections.abc import Iterator

__all__ = ["RESUME_AFTER_S", "collection_deferred", "in_a_kernel"]

#: How long after a move automatic collection resumes, s: after its picture is painted.
RESUME_AFTER_S = 0.3

_lock = threading.Lock()  # the timer thread and the kernel's both change what follows
_paused = False  # whether this module turned automatic collection off
_depth = 0  # blocks running now, one inside another
_resume_timer: threading.Timer | None = None  # the timer that turns it back on


@contextlib.contextmanager
def collection_deferred() -> Iterator[None]:
    """Run the block with automatic garbage collection paused; resume it
    :data:`RESUME_AFTER_S` after the block, or at once where no event loop runs.

    Collection that was off before (``gc.disable()`` by someone else) stays off. Nested
    blocks, and the moves of several explorers, share one pause: it ends
    :data:`RESUME_AFTER_S` after the last of them.
    """
    global _paused, _depth
    with _lock:
        if gc.isenabled():
            gc.disable()
            _paused = True
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            last = _depth == 0
        if last:
            _resume_later()


def in_a_kernel() -> bool:
    """Whether an event loop runs here, as in a Jupyter kernel, where an explorer is live.

    Elsewhere (a script, a test) a move has no idle time after it to wait for, and nothing
    should be started in the background: a fresh Python imports the script that started
    it, and a script without a ``__main__`` guard would run again.

    Returns
    -------
    bool
        True when an asyncio event loop runs in this thread.

    >>> in_a_kernel()
    False
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _resume_later() -> None:
    """Resume collection :data:`RESUME_AFTER_S` from now where an event loop runs (a
    kernel, which is then idle), else now. A timer thread does it, not the loop: a loop
    that ends first (``asyncio.run``) would leave collection off for good."""
    global _resume_timer
    with _lock:
        if _resume_timer is not None:  # a later move: the pause ends after it instead
            _resume_timer.cancel()
            _resume_timer = None
    if not in_a_kernel():  # no event loop: nothing to wait for
        _resume()
        return
    timer = threading.Timer(RESUME_AFTER_S, _resume)
    timer.daemon = True
    with _lock:
        _resume_timer = timer
    timer.start()


def _resume() -> None:
    global _paused, _resume_timer
    with _lock:
        _resume_timer = None
        if _paused and _depth == 0:
            _paused = False
            gc.enable()
