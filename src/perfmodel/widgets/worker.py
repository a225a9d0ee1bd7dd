"""A second process for an explorer's model work, so that a move uses both cores.

A kernel runs its Python on one core. An explorer whose move runs several independent,
seeded computations (the serving explorer's ten simulations of a load curve) hands part
of them to one worker process and runs the rest itself meanwhile: on 2 cores a new
setting of the serving explorer simulates its curve in about half the time. The results
are the same either way, since each computation is seeded and runs whole in one process.

The worker is a fresh Python (``spawn``: no copy of a kernel's threads), started in the
background when an explorer is built, in about 0.1 s; until it is ready the kernel does
all the work itself, as it does where no process can be started. It ends with the kernel:
with it when the kernel exits, and within :data:`WATCH_S` when the kernel is killed, since
it watches for its parent to go. It imports its modules afresh, so what the kernel has
changed in them since (a constant patched in a cell) is not seen there: give it functions
of their arguments alone.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import BrokenExecutor
from typing import Any

__all__ = ["WATCH_S", "Worker"]

#: How often the worker looks for its parent, s.
WATCH_S = 0.5


def _start(parent: int, modules: tuple[str, ...]) -> None:
    """In the worker, as it starts: exit as soon as ``parent`` (the kernel) is gone, and
    import ``modules``."""
    import importlib

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(WATCH_S)
        os._exit(0)  # orphaned: nobody is left to ask for work

    threading.Thread(target=watch, name="perfmodel-watch-parent", daemon=True).start()
    for module in modules:
        importlib.import_module(module)


def _ready() -> int:
    return os.getpid()


def _each(function: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
    return [function(*arguments) for arguments in calls]


class Worker:
    """One worker process, shared by the calls of :meth:`map`.

    Parameters
    ----------
    modules : sequence of str
        Modules the worker imports as it starts, so that no call waits for them: those
        of the functions it will be given.

    Attributes
    ----------
    pid : int or None
        The worker's process id once it is ready, else None.
    """

    def __init__(self, modules: Sequence[str] = ()) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        self.pid: int | None = None
        self._pool: Any = None
        self._started: Any = None
        try:
            self._pool = ProcessPoolExecutor(
                max_workers=1,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_start,
                initargs=(os.getpid(), tuple(modules)),
            )
            self._started = self._pool.submit(_ready)
        except (OSError, RuntimeError):  # no processes here: the kernel works alone
            self._pool = None

    @property
    def ready(self) -> bool:
        """Whether the worker has started and answers."""
        if self._started is None or not self._started.done():
            return False
        if self._started.exception() is not None:
            self._started = None  # it could not start: the kernel works alone
            return False
        self.pid = self._started.result()
        return True

    def map(self, function: Callable[..., Any], calls: Sequence[tuple[Any, ...]]) -> list[Any]:
        """``[function(*arguments) for arguments in calls]``, every other call in the worker
        when it is ready.

        ``function`` must be importable by name (a module's top-level function) and its
        arguments and results picklable. A worker that dies (killed, out of memory) leaves
        its calls to the kernel and is not asked again; what a call raises in the worker is
        raised here.

        Parameters
        ----------
        function : callable
            What to run, on each call's positional arguments.
        calls : sequence of tuple
            The arguments of each call.

        Returns
        -------
        list
            Each call's result, in the order of ``calls``.
        """
        if not self.ready or len(calls) < 2:
            return _each(function, calls)
        theirs = calls[1::2]
        try:
            pending = self._pool.submit(_each, function, theirs)
        except RuntimeError:  # broken (killed), or shut down as the kernel exits
            self._started = None  # not asked again
            return _each(function, calls)
        mine = _each(function, calls[0::2])
        try:
            done = pending.result()  # what a call raised there is raised here
        except BrokenExecutor:  # it was killed meanwhile: its share is done here
            self._started = None
            done = _each(function, theirs)
        results: list[Any] = [None] * len(calls)
        results[0::2], results[1::2] = mine, done
        return results
