"""The stored reference run: the zoo and the held-out families, predicted and timed at both
optimisation levels on one quiet machine, which lecture 12 tells its story from.

A lecture run on a shared machine moves a row by tens of percent from one minute to the
next, so the lecture's prose cannot rest on its own cells' numbers. ``benchmarks/capstone.py
--record`` measures every row in several cycles (a kernel calibration, then each model timed
in fresh sessions), keeps for each row the cycle whose ratio is the median of its cycles, and
writes them, with the machine, its load and the date, to ``data/reference/capstone.json``.
:func:`reference_run` reads it back; the lecture's "your machine" cell sets a fresh run beside
it.

Examples
--------
>>> run = reference_run()
>>> sorted(run.rows)
['all', 'none']
>>> run.rows["none"][0].model, run.rows["none"][0].batch
('MLP', 1)
"""

from __future__ import annotations

import json
import statistics
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from perfmodel._validate import choice
from perfmodel.capstone.zoo import Fusion, ZooRow

__all__ = ["ReferenceRun", "reference_run"]

#: Where the packaged reference run lives, under ``perfmodel/data``.
REFERENCE = ("reference", "capstone.json")


@dataclass(frozen=True)
class ReferenceRun:
    """One recorded run of every model at both levels.

    Parameters
    ----------
    machine : dict of str to str
        What it ran on: the CPU, its cores, the software's versions, the date.
    method : dict of str to int
        How it was timed: ``cycles``, ``repeats`` (fresh sessions per row and cycle) and
        ``runs`` (timed runs per session).
    rows : dict of str to tuple of ZooRow
        For each level (``"none"``, ``"all"``), every model at each batch: the cycle whose
        ratio was its cycles' median, in the order they ran (the zoo, then the held-out).
    fusions : dict of str to tuple of Fusion
        For a few models at batch 8 (``"MobileNetV2"``...), the fusions that save most on the
        median cycle's probes.
    """

    machine: dict[str, str]
    method: dict[str, int]
    rows: dict[str, tuple[ZooRow, ...]]
    fusions: dict[str, tuple[Fusion, ...]]

    def row(self, level: str, model: str, batch: int) -> ZooRow:
        """The row of ``model`` at ``batch`` and ``level``."""
        level = choice("level", level, self.rows)
        for found in self.rows[level]:
            if found.model == model and found.batch == batch:
                return found
        known = sorted({r.model for r in self.rows[level]})
        raise ValueError(
            f"`model` and `batch` must name a recorded row (got {model!r} at batch {batch}; "
            f"models: {', '.join(known)}; batches 1 and 8)."
        )

    def miss(self, level: str, models: Any = None) -> tuple[float, str, float]:
        """The median |measured/predicted - 1| over the rows of ``models`` (all when None),
        the model whose median miss over its batches is worst, and that miss."""
        level = choice("level", level, self.rows)
        chosen = [r for r in self.rows[level] if models is None or r.model in models]
        if not chosen:
            raise ValueError(f"`models` must name recorded models (got {models!r}).")
        by_model: dict[str, list[float]] = {}
        for r in chosen:
            by_model.setdefault(r.model, []).append(abs(r.ratio - 1))
        worst = max(by_model, key=lambda m: statistics.median(by_model[m]))
        median = statistics.median(abs(r.ratio - 1) for r in chosen)
        return median, worst, statistics.median(by_model[worst])

    def to_json(self) -> str:
        """The run as the JSON :func:`reference_run` reads."""
        return json.dumps(
            {
                "machine": self.machine,
                "method": self.method,
                "rows": {level: [asdict(r) for r in rows] for level, rows in self.rows.items()},
                "fusions": {m: [asdict(f) for f in found] for m, found in self.fusions.items()},
            },
            indent=1,
        )

    @classmethod
    def from_json(cls, text: str) -> ReferenceRun:
        """Read a run :meth:`to_json` wrote."""
        data = json.loads(text)
        return cls(
            machine=dict(data["machine"]),
            method={k: int(v) for k, v in data["method"].items()},
            rows={
                level: tuple(ZooRow(**row) for row in rows) for level, rows in data["rows"].items()
            },
            fusions={
                model: tuple(
                    Fusion(
                        **{**f, "origin": tuple(f["origin"]), "origin_ops": tuple(f["origin_ops"])}
                    )
                    for f in found
                )
                for model, found in data["fusions"].items()
            },
        )


def reference_run(path: str | Path | None = None) -> ReferenceRun:
    """The stored reference run (the packaged one when ``path`` is None).

    Parameters
    ----------
    path : str or Path, optional
        A JSON file ``benchmarks/capstone.py --record`` wrote.

    Returns
    -------
    ReferenceRun
    """
    if path is None:
        packaged = resources.files("perfmodel") / "data" / REFERENCE[0] / REFERENCE[1]
        text = packaged.read_text("utf-8")
    elif isinstance(path, (str, Path)):
        text = Path(path).read_text(encoding="utf-8")
    else:
        raise TypeError(f"`path` must be a str or Path (got {type(path).__name__}).")
    return ReferenceRun.from_json(text)
