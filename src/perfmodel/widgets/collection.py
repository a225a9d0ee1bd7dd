"""Garbage collection kept out of an explorer's moves.

Python's cyclic garbage collector runs when enough objects have been allocated, and a
matplotlib figure allocates tens of thousands. Every few moves of a control it therefore
runs a *full* collection, which walks every object the lecture holds: 50-85 ms on 2 cores
with a lecture's models loaded, in the middle of the move that happened to trigger it.
Those pauses were most of the difference between an explorer's median move and its worst.

:func:`collection_deferred` pauses automatic collection while a move is drawn and sends
its picture, and resumes it :data:`RESUME_AFTER_S` later, from the kernel's event loop, so
that the collection that was due runs while the room looks at the picture. Nothing is
collected any less: a burst of moves defers it to the end of the burst. Where no event
loop runs (a script, a test), collection resumes as the move ends.

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
from collections.abc import Iterator
from typing import Any

__all__ = ["RESUME_AFTER_S", "collection_deferred"]

#: How long after a move automatic collection resumes, s: after its picture is painted.
RESUME_AFTER_S = 0.3

_paused = False  # whether this module turned automatic collection off
_depth = 0  # blocks running now, one inside another
_resume_handle: Any = None  # the event loop's timer that turns it back on


@contextlib.contextmanager
def collection_deferred() -> Iterator[None]:
    """Run the block with automatic garbage collection paused; resume it
    :data:`RESUME_AFTER_S` after the block, or at once where no event loop runs.

    Collection that was off before (``gc.disable()`` by someone else) stays off. Nested
    blocks, and the moves of several explorers, share one pause: it ends
    :data:`RESUME_AFTER_S` after the last of them.
    """
    global _paused, _depth
    if gc.isenabled():
        gc.disable()
        _paused = True
    _depth += 1
    try:
        yield
    finally:
        _depth -= 1
        if _depth == 0:
            _resume_later()


def _resume_later() -> None:
    """Resume collection from the event loop after :data:`RESUME_AFTER_S`, or now."""
    global _resume_handle
    if _resume_handle is not None:  # a later move: the pause ends after it instead
        _resume_handle.cancel()
        _resume_handle = None
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # no event loop: nothing to wait for
        _resume()
    else:
        _resume_handle = loop.call_later(RESUME_AFTER_S, _resume)


def _resume() -> None:
    global _paused, _resume_handle
    _resume_handle = None
    if _paused and _depth == 0:
        _paused = False
        gc.enable()
