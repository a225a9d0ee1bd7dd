"""Plots for the lectures, sized to read from the back of a lecture hall.

This package's top level holds what every plot shares: the house :func:`style`, the
colour cycle, and :func:`new_axes` / :func:`si_formatter`. Each submodule draws one
concept (:mod:`~perfmodel.plotting.roofline`, :mod:`~perfmodel.plotting.pipeline`, ...), and
every drawing is imported from here: ``from perfmodel.plotting import roofline_plot``.

Every drawing function draws on a matplotlib ``Axes`` (made for you when not given) and
returns it, so a notebook can add to it or save it. Only this package and
:mod:`perfmodel.widgets` import matplotlib; the models never do.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Any

from perfmodel._extras import require

require("lab", "matplotlib", feature="perfmodel.plotting")

import matplotlib.pyplot as plt  # noqa: E402

from perfmodel._lazy import lazy_face  # noqa: E402

#: Each drawing, by the module that holds it: the door a notebook imports from
#: (``from perfmodel.plotting import roofline_plot``). The modules import the shared style
#: above from here, so each loads on first use, not with this package.
_DRAWINGS = {
    "roofline_plot": "roofline:roofline_plot",
    "bar_compare": "devices:bar_compare",
    "batch_size_plot": "minibatch:batch_size_plot",
    "empirical_roofline_plot": "empirical:empirical_roofline_plot",
    "overhead_plot": "empirical:overhead_plot",
    "prediction_plot": "empirical:prediction_plot",
    "working_set_plot": "empirical:working_set_plot",
    "gantt_plot": "taskgraph:gantt_plot",
    "graph_plot": "taskgraph:graph_plot",
    "branch_scaling_plot": "parallel:branch_scaling_plot",
    "operation_scaling_plot": "parallel:operation_scaling_plot",
    "scaling_plot": "scaling:scaling_plot",
    "ring_plot": "collectives:ring_plot",
    "tree_plot": "collectives:tree_plot",
    "nvls_plot": "collectives:nvls_plot",
    "torus_plot": "collectives:torus_plot",
    "rails_plot": "collectives:rails_plot",
    "alpha_beta_plot": "distributed:alpha_beta_plot",
    "memory_plot": "distributed:memory_plot",
    "step_parts_plot": "distributed:step_parts_plot",
    "step_plot": "distributed:step_plot",
    "sweep_plot": "distributed:sweep_plot",
    "gantt": "pipeline:gantt",
    "gantts": "pipeline:gantts",
    "split_bars": "pipeline:split_bars",
    "stage_bars": "pipeline:stage_bars",
    "stage_breakdown": "pipeline:stage_breakdown",
    "latency_plot": "serving:latency_plot",
    "load_curve_plot": "serving:load_curve_plot",
    "node_plot": "capstone:node_plot",
    "published_plot": "capstone:published_plot",
    "upgrade_plot": "capstone:upgrade_plot",
}

__all__ = [
    "COLOURS",
    "STYLE",
    "legend_below",
    "legend_beside",
    "new_axes",
    "LOG_MINOR",
    "plain_formatter",
    "si_formatter",
    "settings_applied",
    "si_minor_formatter",
    "style",
    *_DRAWINGS,
]

#: Large type and thick lines: slides are read from 15 metres away.
STYLE: dict[str, Any] = {
    "font.size": 14,
    "axes.titlesize": 17,
    "axes.labelsize": 15,
    "legend.fontsize": 12,
    "lines.linewidth": 2.5,
    "lines.markersize": 9,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "figure.dpi": 100,
    "savefig.dpi": 120,
}

#: The colour cycle: distinct in print and for the common colour-vision deficiencies.
COLOURS = ("#1b6ca8", "#d1495b", "#2e933c", "#edae49", "#6b4c9a", "#00798c", "#8c564b")


@contextlib.contextmanager
def settings_applied(settings: Mapping[str, Any]) -> Iterator[None]:
    """Apply matplotlib ``settings`` inside a ``with`` block, then put back exactly those.

    Unlike ``plt.rc_context`` this restores only the keys given: rc_context also restores
    ``interactive``, which the notebook backend switches on when the first figure is made,
    and the figures of every later cell then never appear.

    Parameters
    ----------
    settings : Mapping of str to object
        rcParams keys and values (checked by matplotlib as they are set).

    Yields
    ------
    None
        Inside the block, matplotlib's settings have ``settings`` applied.

    Examples
    --------
    >>> with settings_applied({"font.size": 20}):
    ...     plt.rcParams["font.size"]
    20.0
    >>> plt.rcParams["font.size"] == 20
    False
    """
    params: Any = plt.rcParams  # typed with literal keys; the values are checked as set
    saved = {key: params[key] for key in settings}
    params.update(settings)
    try:
        yield
    finally:
        params.update(saved)


def style() -> contextlib.AbstractContextManager[None]:
    """Apply :data:`STYLE` inside a ``with`` block, then put back exactly those settings
    (:func:`settings_applied`).

    Returns
    -------
    contextlib.AbstractContextManager
        The ``with`` block's context manager.
    """
    return settings_applied(STYLE)


def new_axes(ax: Any, figsize: tuple[float, float]) -> Any:
    """``ax`` itself when given, else the axes of a new constrained-layout figure.

    Parameters
    ----------
    ax : matplotlib.axes.Axes or None
        Axes to draw on; None makes a new figure.
    figsize : tuple
        The new figure's ``(width, height)``, two numbers in inches (matplotlib's unit);
        unused when ``ax`` is given.

    Returns
    -------
    matplotlib.axes.Axes
        ``ax``, or the new figure's single axes.
    """
    if ax is not None:
        return ax
    _, new = plt.subplots(figsize=figsize, layout="constrained")
    return new


def legend_beside(ax: Any, **options: Any) -> Any:
    """A legend to the right of ``ax``, outside it: where the data fall depends on the
    machine that measured them, so no corner inside the axes is sure to be empty.

    ``options`` go to ``Axes.legend`` (``fontsize``, ``ncol``...). A constrained-layout figure
    narrows the axes to make room.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes whose labelled artists the legend lists; it is placed at their upper right,
        outside them.
    **options
        Passed on to ``Axes.legend``; not ``loc``, ``bbox_to_anchor`` or ``borderaxespad``,
        which this function sets.

    Returns
    -------
    matplotlib.legend.Legend
        The legend drawn.
    """
    return ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0, **options)


def legend_below(ax: Any, **options: Any) -> Any:
    """A legend under ``ax``, across the figure, when ``ax`` is its figure's only axes and the
    figure is laid out by constrained layout; else :func:`legend_beside`.

    Below, long entries take the figure's whole width and the axes keep theirs; beside, a
    legend of long entries leaves the axes a narrow strip.

    Parameters
    ----------
    ax : matplotlib.axes.Axes
        The axes whose labelled artists the legend lists.
    **options
        Passed on to ``Figure.legend`` (or ``Axes.legend``); not ``loc``.

    Returns
    -------
    matplotlib.legend.Legend
        The legend drawn.

    Examples
    --------
    >>> import matplotlib.pyplot as plt
    >>> figure, ax = plt.subplots(layout="constrained")
    >>> _ = ax.plot([0, 1], label="a line")
    >>> legend_below(ax) in figure.legends
    True
    >>> plt.close(figure)
    """
    from matplotlib.layout_engine import ConstrainedLayoutEngine

    figure = ax.figure
    if isinstance(figure.get_layout_engine(), ConstrainedLayoutEngine) and figure.axes == [ax]:
        handles, labels = ax.get_legend_handles_labels()
        return figure.legend(handles, labels, loc="outside lower center", **options)
    return legend_beside(ax, **options)


#: A log axis's minor ticks: 2 and 5 times each power of ten, the ones
#: :func:`si_minor_formatter` labels. Eight a decade, matplotlib's default, cost a live figure a
#: third of its drawing time (``benchmarks/widgets.py``) and read no better from the back row.
LOG_MINOR = (2.0, 5.0)


def plain_formatter() -> Any:
    """A tick formatter that writes a log axis's values as plain numbers (``0.01``, ``100``,
    ``1e+06``) instead of matplotlib's typeset powers of ten, which are slower to draw.

    Returns
    -------
    matplotlib.ticker.FuncFormatter
        Writes a tick with Python's ``g`` format; a tick at zero or below gets no label.

    Examples
    --------
    >>> plain_formatter()(0.01, 0), plain_formatter()(1000, 0), plain_formatter()(1e6, 0)
    ('0.01', '1000', '1e+06')
    """
    from matplotlib.ticker import FuncFormatter

    return FuncFormatter(lambda value, _: f"{value:g}" if value > 0 else "")


def si_formatter(unit: str) -> Any:
    """A tick formatter that writes values with SI prefixes: ``1 TFLOP/s``, ``100 GB/s``.

    Parameters
    ----------
    unit : str
        The unit written after the prefix (``"FLOP/s"``, ``"B/s"``, ``"s"``); ``""`` for a
        bare number.

    Returns
    -------
    matplotlib.ticker.FuncFormatter
        Writes a tick with :func:`perfmodel.units.format_quantity` to 3 significant digits;
        a tick at zero or below gets no label.
    """
    from matplotlib.ticker import FuncFormatter

    from perfmodel.units import format_quantity

    return FuncFormatter(
        lambda value, _: format_quantity(value, unit, digits=3) if value > 0 else ""
    )


def si_minor_formatter(unit: str, mantissas: tuple[int, ...] = (2, 5)) -> Any:
    """Like :func:`si_formatter` for a log axis's minor ticks, labelling only 2 and 5 (by
    default) times a power of ten: enough to read an axis that spans less than a decade.

    Parameters
    ----------
    unit : str
        The unit written after the prefix, as for :func:`si_formatter`.
    mantissas : tuple of int
        The multiples of a power of ten that get a label; other minor ticks stay blank.

    Returns
    -------
    matplotlib.ticker.FuncFormatter
        Labels the kept ticks with :func:`perfmodel.units.format_quantity` to 3 significant
        digits, and every other tick with an empty string.
    """
    import math

    from matplotlib.ticker import FuncFormatter

    from perfmodel.units import format_quantity

    def label(value: float, _: object) -> str:
        if value <= 0:
            return ""
        mantissa = value / 10 ** math.floor(math.log10(value) + 1e-9)
        keep = any(abs(mantissa - m) < 1e-6 for m in mantissas)
        return format_quantity(value, unit, digits=3) if keep else ""

    return FuncFormatter(label)


__getattr__, _drawings_dir = lazy_face(__name__, _DRAWINGS)


def __dir__() -> list[str]:
    return sorted({*globals(), *_drawings_dir()})
