"""A deck's live cells, run once the deck has opened instead of before.

Voilà runs every cell with source before it sends a deck's first slide, so a lecture whose
explorer plots this machine's measurements (lecture 08) would open only after those
measurements ran. In a deck written by :func:`perfmodel.present.demo.presenter_copy`, each
live cell (:mod:`perfmodel.present.live`) instead calls :func:`later`, which returns at once
with a box showing the outputs the lecture stored, and queues the cell's own source.

The box also holds a hidden button. Once the deck is open, its page (the
``perfmodel-reveal`` template) clicks one, each second until the run disables the buttons as
it starts (a click made before the page's connection to the kernel is up is lost). The
first click that arrives runs the whole queue in the order the cells came, each on the
kernel as the cell itself would run (its figures, its printing and its last value shown),
and each cell's outputs replace its stored ones once it has run: the presenter talks over
the title slide while lecture 08 measures. A cell that fails shows its traceback, and the
cells after it keep their stored outputs: they would have read what it did not compute.

The cells run inside the kernel's own event loop, so a live cell cannot use top-level
``await``; and what a program writes straight to a file descriptor (``os.system``, a C
extension) reaches the kernel's log, not the slide. No lecture does either.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

__all__ = ["NOT_RUN", "TRIGGER_CLASS", "defer_live_cells", "later", "run_queued"]

#: The CSS class of the hidden button the deck's page clicks when its slide is shown.
TRIGGER_CLASS = "perfmodel-later"

_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


@dataclass
class _Queued:
    """A live cell waiting to run: its source and the box that shows its outputs."""

    source: str
    box: Any


_queue: list[_Queued] = []
_ran = False


def _stored(cell: dict[str, Any]) -> tuple[dict[str, Any], ...]:
    """The cell's stored outputs as an output widget holds them: multi-line strings joined,
    and no widget view (a stored view has no kernel behind it)."""

    def joined(value: Any, kind: str = "text/plain") -> Any:
        # A notebook splits text into lines; JSON stays the value it is (nbformat's rule).
        json_kind = kind == "application/json" or kind.endswith("+json")
        return "".join(value) if isinstance(value, list) and not json_kind else value

    outputs = []
    for output in cell.get("outputs", []):
        data = output.get("data", {})
        if _WIDGET_VIEW in data:
            continue
        output = dict(output)
        if "text" in output:
            output["text"] = joined(output["text"])
        if data:
            output["data"] = {kind: joined(value, kind) for kind, value in data.items()}
        outputs.append(output)
    return tuple(outputs)


@lru_cache(maxsize=4)
def _cells(deck: str) -> dict[str, dict[str, Any]]:
    """The deck's cells by id, read once for all its live cells."""
    notebook = json.loads(Path(deck).read_text(encoding="utf-8"))
    return {cell["id"]: cell for cell in notebook["cells"] if "id" in cell}


def later(deck: str, cell_id: str) -> Any:
    """Queue the deck's cell ``cell_id``; return a box showing its stored outputs.

    Parameters
    ----------
    deck : str
        The deck notebook's path, relative to the kernel's folder (Voilà starts the kernel
        in the deck's folder).
    cell_id : str
        The cell's id; its ``metadata["perfmodel"]["source"]`` holds the code to run.

    Returns
    -------
    ipywidgets.VBox
        The hidden button that runs the queue, and an output widget holding the cell's stored
        outputs; once the cell has run, its outputs take that widget's place.
    """
    import ipywidgets as widgets

    cell = _cells(deck).get(cell_id)
    if cell is None:
        raise ValueError(f"`cell_id` must name a cell of {deck} (got {cell_id!r}).")
    trigger = widgets.Button(description="run live", layout=widgets.Layout(display="none"))
    trigger.add_class(TRIGGER_CLASS)
    trigger.on_click(lambda _: run_queued())
    box = widgets.VBox([trigger, *_shown(_stored(cell))])
    _queue.append(_Queued(cell["metadata"]["perfmodel"]["source"], box))
    return box


def _shown(outputs: Sequence[dict[str, Any]]) -> list[Any]:
    """Widgets that show ``outputs``: each widget view as its widget, and each run of other
    outputs in an output widget (Voilà's output widget shows no widget view)."""
    import ipywidgets as widgets
    from ipywidgets.widgets.widget import _instances

    shown: list[Any] = []
    run: list[dict[str, Any]] = []
    for output in [*outputs, None]:
        view = None if output is None else output.get("data", {}).get(_WIDGET_VIEW)
        if output is not None and view is None:
            run.append(output)
            continue
        if run:
            shown.append(widgets.Output(outputs=tuple(run)))
            run = []
        if view is not None and view["model_id"] in _instances:  # not a closed progress bar
            shown.append(_instances[view["model_id"]])
    return shown


class _Recorder:
    """Everything a cell shows, in the order it shows it, as notebook outputs: its printing
    (``sys.stdout`` and ``sys.stderr``), its ``display`` calls (figures, widgets; a display
    updated by its ``display_id`` changes in place) and its last value (unless the cell ends
    in ``;``); ``clear_output`` empties it.

    While an output widget captures (a ``with Output():`` block, ``interact``), what the cell
    shows goes to the kernel as usual, for that widget to show.
    """

    def __init__(self, shell: Any, source: str) -> None:
        from IPython.core.displaypub import DisplayPublisher

        self.shell = shell
        self.source = source
        self.outputs: list[dict[str, Any]] = []
        self.displays: dict[str, dict[str, Any]] = {}  # each display_id's output
        kernels = shell.display_pub
        recorder = self

        class Publisher(DisplayPublisher):
            def publish(self, data: Any, metadata: Any = None, *args: Any, **kwargs: Any) -> None:
                if recorder.widget_captures():
                    kernels.publish(data, metadata, *args, **kwargs)
                    return
                transient = kwargs.get("transient") or {}
                recorder.add("display_data", data, metadata, transient.get("display_id"),
                             update=bool(kwargs.get("update")))  # fmt: skip

            def clear_output(self, wait: bool = False) -> None:
                if recorder.widget_captures():
                    kernels.clear_output(wait)
                else:
                    recorder.outputs.clear()

            def set_parent(self, parent: Any) -> None:  # an output widget entering
                kernels.set_parent(parent)

        self.kernels = kernels
        self.publisher = Publisher(shell=shell)  # type: ignore[no-untyped-call]

    @staticmethod
    def widget_captures() -> bool:
        """Whether an output widget is capturing what the kernel shows."""
        from ipywidgets import Output
        from ipywidgets.widgets.widget import _instances

        return any(isinstance(w, Output) and w.msg_id for w in list(_instances.values()))

    def add(
        self,
        kind: str,
        data: dict[str, Any],
        metadata: Any = None,
        display_id: str | None = None,
        *,
        update: bool = False,
    ) -> None:
        if update:
            if display_id in self.displays:
                self.displays[display_id].update(data=data, metadata=metadata or {})
            return
        output: dict[str, Any] = {"output_type": kind, "data": data, "metadata": metadata or {}}
        if kind == "execute_result":
            output["execution_count"] = None
        if display_id is not None:
            self.displays[display_id] = output
        self.outputs.append(output)

    def write(self, name: str, text: str) -> None:
        last = self.outputs[-1] if self.outputs else {}
        if last.get("output_type") == "stream" and last.get("name") == name:
            last["text"] += text
        else:
            self.outputs.append({"output_type": "stream", "name": name, "text": text})

    def show(self, value: Any) -> None:
        """``sys.displayhook``: a cell's last value, shown as the notebook would."""
        from IPython.core.displayhook import DisplayHook

        quiet = DisplayHook.semicolon_at_end_of_expression
        if value is None or quiet(self.source):  # type: ignore[no-untyped-call]
            return
        data, metadata = self.shell.display_formatter.format(value)
        self.add("execute_result", data, metadata)

    def run(self) -> Any:
        """Run the cell on the shell, recording what it shows; return its ExecutionResult."""
        import contextlib
        import io
        import sys

        class Stream(io.TextIOBase):
            def __init__(self, name: str, recorder: _Recorder, kernels: Any) -> None:
                self.name, self.recorder, self.kernels = name, recorder, kernels

            def write(self, text: str) -> int:
                if self.recorder.widget_captures():
                    self.kernels.write(text)
                else:
                    self.recorder.write(self.name, text)
                return len(text)

            def flush(self) -> None:
                self.kernels.flush()

        shell = self.shell
        shell.display_pub = self.publisher
        try:
            # Inside the shell's display trap, run_cell leaves sys.displayhook as set here
            # (outside it, run_cell would set the kernel's own, which sends to no cell).
            with (
                shell.display_trap,
                contextlib.redirect_stdout(Stream("stdout", self, sys.stdout)),
                contextlib.redirect_stderr(Stream("stderr", self, sys.stderr)),
            ):
                sys.displayhook = self.show
                result = shell.run_cell(self.source, store_history=False)
        finally:
            shell.display_pub = self.kernels
        error = result.error_before_exec or result.error_in_exec
        if error is not None:  # shown as the notebook shows it, in IPython's colours
            traceback = shell.InteractiveTB.structured_traceback(
                type(error), error, error.__traceback__
            )
            self.outputs.append({"output_type": "error", "ename": type(error).__name__,
                                 "evalue": str(error), "traceback": traceback})  # fmt: skip
        return result


#: Shown under the stored outputs of each cell left unrun after a live cell failed.
NOT_RUN = "Not run live (a live cell above failed): this is what the lecture stored.\n"


def run_queued() -> int:
    """Run every queued cell, once, in order; return how many ran without an error.

    Each cell's outputs replace its stored ones once it has run, so a slide never goes blank.

    Returns
    -------
    int
        The cells that ran and succeeded; later calls run nothing and return 0.
    """
    global _ran
    if _ran:
        return 0
    _ran = True
    from IPython import get_ipython

    shell = get_ipython()
    for queued in _queue:  # the page stops clicking
        queued.box.children[0].disabled = True
    succeeded = 0
    for index, queued in enumerate(_queue):
        recorder = _Recorder(shell, queued.source)
        result = recorder.run()
        queued.box.children = (queued.box.children[0], *_shown(recorder.outputs))
        if not result.success:
            note = {"output_type": "stream", "name": "stderr", "text": NOT_RUN}
            for unrun in _queue[index + 1 :]:
                unrun.box.children = (*unrun.box.children, *_shown([note]))
            break
        succeeded += 1
    return succeeded


def defer_live_cells(notebook: Any, deck: str) -> int:
    """Turn each code cell of ``notebook`` that has source into a call of :func:`later`;
    return how many.

    Parameters
    ----------
    notebook : nbformat.NotebookNode
        A deck whose frozen cells have no source (:func:`perfmodel.present.live.freeze_outputs`),
        changed in place: each live cell keeps its outputs and id, its source moves to
        ``metadata["perfmodel"]["source"]``, and its new source calls :func:`later`. A
        notebook older than nbformat 4.5 gets the cell ids it lacks.
    deck : str
        The deck's file name, as the kernel will find it from the deck's folder.

    Returns
    -------
    int
        The cells deferred.
    """
    from nbformat.corpus.words import generate_corpus_id

    for cell in notebook.cells:  # a notebook older than nbformat 4.5 has no cell ids
        if "id" not in cell:
            cell["id"] = generate_corpus_id()  # type: ignore[no-untyped-call]
    notebook.nbformat_minor = max(notebook.nbformat_minor, 5)
    deferred = 0
    for cell in notebook.cells:
        if cell.cell_type != "code" or not "".join(cell.source).strip():
            continue
        cell.metadata.setdefault("perfmodel", {})["source"] = "".join(cell.source)
        cell.source = (
            "from perfmodel.present.later import later\n\n"
            f"later({json.dumps(deck)}, {json.dumps(cell.id)})"
        )
        deferred += 1
    return deferred
