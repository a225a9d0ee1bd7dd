"""An explorer's next figure built ahead, while the room looks at the last one.

A move's figure starts as ``plt.subplots(...)``: a figure, its axes, and each axis' tick
artists (about half a millisecond a tick, tens of them a figure). On 2 cores that is 20 to
30 ms of every move (the serving explorer's moves 125 -> 103 ms in the kernel, the capstone's
91 -> 61 ms), and it does not depend on the setting chosen. :class:`SpareFigures`
notes how the view built its last figure (the call's arguments, matplotlib's settings, and
how many ticks each axis drew), and when the kernel is next idle it builds one more the
same way. The next move's ``plt.subplots`` with the same arguments and settings gets that
figure, handed to pyplot as a new figure of its own (its canvas and manager, the current
figure); any other call builds its own, as before.

A figure built ahead is what the call would have built: the same settings and axes, and
ticks made as the axis makes them, each copying the first tick's properties. So a view
styles its ticks through ``tick_params``, as matplotlib advises, not by changing single tick
objects, which matplotlib does not keep (a tick made ahead would not carry such a change
made before the axis grew to it). Every explorer's pictures are the same to the byte with
and without a figure built ahead (``tests/test_widget_spare.py``, which takes every
explorer there is). A call with pyplot's own keywords (``num``, ``clear``,
``FigureClass``), or with ``figure.hooks`` set, is never built ahead. Where no event loop
runs (a script, a test, the book), the kernel is never idle between moves and nothing is
built ahead.

>>> import matplotlib.pyplot as plt
>>> spares = SpareFigures()
>>> with spares.lending():
...     figure, ax = plt.subplots(figsize=(4, 3))
>>> spares.drawn()  # the recipe: this call, these settings, its axes' ticks
>>> spares.build()  # what an idle kernel does after a move
>>> with spares.lending():
...     again, ax = plt.subplots(figsize=(4, 3))
>>> spares.lent, again is not figure, plt.gcf() is again
(1, True, True)
>>> plt.close("all")
"""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
import pickle
from collections.abc import Iterator
from typing import Any

__all__ = ["IDLE_AFTER_S", "SpareFigures"]

#: How long after a move the spare figure is built, s: after the browser has painted the
#: move's picture, so that both do not share the cores.
IDLE_AFTER_S = 0.15

#: ``plt.subplots`` keywords that only pyplot understands: such a call is not built ahead.
_PYPLOT_ONLY = frozenset({"num", "clear", "FigureClass"})


@dataclasses.dataclass(frozen=True, slots=True)
class _Recipe:
    """How a view built a figure: ``plt.subplots``'s arguments (and their key), matplotlib's
    settings at the call, and each axis' tick counts as drawn."""

    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    key: bytes
    settings: dict[str, Any]
    ticks: tuple[tuple[int, int], ...]  # (major, minor) per axis, axes in order


def _key(args: tuple[Any, ...], kwargs: dict[str, Any]) -> bytes | None:
    """The call's arguments as bytes, equal only for equal arguments (numbers and arrays to
    the bit); None for arguments that cannot be pickled."""
    try:
        return pickle.dumps((args, sorted(kwargs.items())))
    except Exception:  # noqa: BLE001  (a lambda, a lock...: such a call is not built ahead)
        return None


def _axes_list(axes: Any) -> list[Any]:
    """The axes ``plt.subplots`` returned (one, or an array of them), in order."""
    import numpy as np

    return list(np.ravel(np.asarray(axes, dtype=object))) if not hasattr(axes, "figure") else [axes]


def _figure_arguments(
    args: tuple[Any, ...], kwargs: dict[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """``plt.subplots``'s arguments split as it splits them: the figure's keywords, and
    what ``Figure.subplots`` takes (the grid)."""
    from matplotlib.figure import Figure

    grid = inspect.signature(Figure.subplots).parameters
    given = dict(zip(("nrows", "ncols"), args, strict=False))  # the two it takes by position
    return (
        {name: value for name, value in kwargs.items() if name not in grid},
        given | {name: value for name, value in kwargs.items() if name in grid},
    )


class SpareFigures:
    """One explorer's figure built ahead, for its next move.

    Attributes
    ----------
    lent : int
        Moves whose figure was one built ahead, count.
    """

    def __init__(self) -> None:
        self._recipe: _Recipe | None = None
        self._pending: tuple[_Recipe, Any] | None = None  # the last call, and its axes
        self._spare: tuple[bytes, dict[str, Any], Any, Any] | None = None
        self.lent = 0

    @contextlib.contextmanager
    def lending(self) -> Iterator[None]:
        """Within the block, ``plt.subplots`` hands out the spare figure when its call and
        matplotlib's settings are those it was built for, and builds a figure otherwise.
        The figure handed out is pyplot's current figure, as one it built would be."""
        import matplotlib as mpl
        import matplotlib.pyplot as plt

        real = plt.subplots

        def subplots(*args: Any, **kwargs: Any) -> Any:
            key = _key(args, kwargs)
            params: Any = mpl.rcParams  # typed with literal keys
            settings: dict[str, Any] = dict(params)
            spare, self._spare = self._spare, None
            if spare is not None and key is not None and spare[:2] == (key, settings):
                _, _, built, axes = spare
                # pyplot's own path for a new figure (canvas, manager, current figure),
                # given the figure built ahead (its size and layout already set) instead
                figure = plt.figure(FigureClass=lambda *_, **__: built)  # type: ignore[arg-type]
                self.lent += 1
                result = figure, axes
            else:
                result = real(*args, **kwargs)
            self._pending = None
            if key is not None and not _PYPLOT_ONLY & kwargs.keys():
                self._pending = (_Recipe(args, kwargs, key, settings, ticks=()), result[1])
            return result

        plt.subplots = subplots
        try:
            yield
        finally:
            plt.subplots = real

    def drawn(self) -> None:
        """Note how the last figure lent or built was drawn (its axes' tick counts), as the
        recipe for the next spare. Call it after the figure is drawn."""
        if self._pending is None:
            return
        recipe, axes = self._pending
        self._pending = None
        if recipe.settings["figure.hooks"]:  # run on a new figure before its axes: not ahead
            self._recipe = None
            return
        ticks = tuple(
            (len(axis.majorTicks), len(axis.minorTicks))
            for ax in _axes_list(axes)
            for axis in ax._axis_map.values()
        )
        self._recipe = dataclasses.replace(recipe, ticks=ticks)

    def build(self) -> None:
        """Build a figure by the recipe, as ``plt.subplots`` would, with its ticks; it waits
        for the next :meth:`lending`. Nothing when no figure has been drawn yet."""
        from matplotlib.figure import Figure

        recipe = self._recipe
        if recipe is None:
            return
        figure_kw, grid = _figure_arguments(recipe.args, recipe.kwargs)
        with _settings(recipe.settings):
            figure = Figure(**figure_kw)
            axes = figure.subplots(**grid)
            counts = iter(recipe.ticks)
            for ax in _axes_list(axes):
                for axis in ax._axis_map.values():
                    major, minor = next(counts, (0, 0))
                    axis.get_major_ticks(major)
                    axis.get_minor_ticks(minor)
        self._spare = (recipe.key, recipe.settings, figure, axes)


def _settings(settings: dict[str, Any]) -> contextlib.AbstractContextManager[None]:
    """matplotlib's settings as in ``settings`` inside the block, then as they were: only
    those that differ, and never the backend or interactive mode (which the notebook's
    backend switches on by itself; see :func:`perfmodel.plotting.settings_applied`)."""
    import matplotlib as mpl

    from perfmodel.plotting import settings_applied

    params: Any = mpl.rcParams
    return settings_applied(
        {
            key: value
            for key, value in settings.items()
            if key not in ("backend", "interactive") and params[key] != value
        }
    )
