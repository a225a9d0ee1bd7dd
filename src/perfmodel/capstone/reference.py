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
import math
import os
import platform
import statistics
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from perfmodel._validate import choice, count, describe, text
from perfmodel.capstone.zoo import Fusion, ZooRow

__all__ = ["ReferenceRun", "reference_run", "this_machine"]

#: Where the packaged reference run lives, under ``perfmodel/data``.
REFERENCE = ("reference", "capstone.json")
#: The levels a reference holds, and what its ``machine`` and ``method`` must say.
LEVELS = ("none", "all")
MACHINE_KEYS = ("cpu", "cores", "os", "python", "onnxruntime", "numpy", "others", "date")
METHOD_KEYS = ("cycles", "repeats", "runs")


@dataclass(frozen=True)
class ReferenceRun:
    """One recorded run of every model at both levels.

    Parameters
    ----------
    machine : dict of str to str
        What it ran on: the CPU, its cores, the software's versions, the share of the CPUs
        other programs used, the date (:data:`MACHINE_KEYS`).
    method : dict of str to int
        How it was timed: ``cycles`` (an odd count: each row is its median cycle), ``repeats``
        (fresh sessions per row and cycle) and ``runs`` (timed runs per session).
    rows : dict of str to tuple of ZooRow
        For each level (``"none"``, ``"all"``), every model at each batch, in the same order at
        both levels (the zoo, then the held-out): the cycle whose ratio was its cycles' median.
    fusions : dict of str to tuple of Fusion
        For every model at batch 8, the (up to four) fusions that save most on the median
        cycle's probes, the largest first.
    """

    machine: dict[str, str]
    method: dict[str, int]
    rows: dict[str, tuple[ZooRow, ...]]
    fusions: dict[str, tuple[Fusion, ...]]

    __hash__ = None  # type: ignore[assignment]  # its fields are dicts

    def __post_init__(self) -> None:
        _check(self)

    def _model(self, model: object, argument: str = "model") -> str:
        """A recorded model's name, as recorded; case and surrounding space are ignored."""
        recorded = tuple(dict.fromkeys(r.model for r in self.rows[LEVELS[0]]))
        if not isinstance(model, str):
            raise TypeError(f"`{argument}` must be a model name (got {describe(model)}).")
        found = [name for name in recorded if name.casefold() == model.strip().casefold()]
        if not found:
            raise ValueError(
                f"`{argument}` must name a recorded model (got {model!r}; recorded: "
                f"{', '.join(recorded)})."
            )
        return found[0]

    def row(self, level: str, model: str, batch: int) -> ZooRow:
        """The row of ``model`` at ``batch`` and ``level``.

        Parameters
        ----------
        level : {"none", "all"}
            The optimisation level; case and surrounding space are ignored.
        model : str
            A recorded model's name (``"BERT"``...); case and surrounding space are ignored.
        batch : int
            Inputs per run, count: one the model was recorded at.

        Returns
        -------
        ZooRow
            That row: its prediction, its measurement and how steady the machine was.
        """
        level = choice("level", level, LEVELS)
        model = self._model(model)
        batch = count("batch", batch)
        for found in self.rows[level]:
            if found.model == model and found.batch == batch:
                return found
        batches = sorted({r.batch for r in self.rows[level] if r.model == model})
        raise ValueError(
            f"`batch` must be one {model} was recorded at (got {batch}; recorded: "
            f"{', '.join(map(str, batches))})."
        )

    def miss(self, level: str, models: Iterable[str] | None = None) -> tuple[float, str, float]:
        """How far the predictions missed over the rows of ``models``.

        Parameters
        ----------
        level : {"none", "all"}
            The optimisation level; case and surrounding space are ignored.
        models : collection of str, optional
            Recorded models' names (a list, or a mapping such as ``capstone.ZOO``); every
            recorded model when None.

        Returns
        -------
        tuple of (float, str, float)
            The median of |measured/predicted - 1| over their rows, fraction; the model whose
            own median over its batches is worst; and that median, fraction.
        """
        level = choice("level", level, LEVELS)
        if models is None:
            chosen = set(r.model for r in self.rows[level])
        elif isinstance(models, (str, bytes)) or not isinstance(models, Iterable):
            raise TypeError(
                f"`models` must be a collection of model names, such as capstone.ZOO or "
                f"['BERT'] (got {type(models).__name__} {describe(models)})."
            )
        else:
            chosen = {self._model(name, "models") for name in list(models)}
            if not chosen:
                raise ValueError("`models` must name at least one recorded model (got none).")
        by_model: dict[str, list[float]] = {}
        for r in self.rows[level]:
            if r.model in chosen:
                by_model.setdefault(r.model, []).append(abs(r.ratio - 1))
        worst = max(by_model, key=lambda m: statistics.median(by_model[m]))
        median = statistics.median(e for errors in by_model.values() for e in errors)
        return median, worst, statistics.median(by_model[worst])

    def to_json(self) -> str:
        """The run as JSON.

        Returns
        -------
        str
            What :func:`reference_run` reads back: strict JSON (no NaN), one key a line.
        """
        return json.dumps(
            {
                "machine": self.machine,
                "method": self.method,
                "rows": {level: [asdict(r) for r in rows] for level, rows in self.rows.items()},
                "fusions": {m: [asdict(f) for f in found] for m, found in self.fusions.items()},
            },
            indent=1,
            allow_nan=False,
        )

    @classmethod
    def from_json(cls, text: str) -> ReferenceRun:
        """Read a run :meth:`to_json` wrote.

        Parameters
        ----------
        text : str
            The JSON; a malformed one is a ValueError naming the field.

        Returns
        -------
        ReferenceRun
        """
        if not isinstance(text, str):
            raise TypeError(f"`text` must be a str of JSON (got {type(text).__name__}).")
        try:
            data = json.loads(text, parse_constant=_refuse)
        except (ValueError, RecursionError) as error:
            raise ValueError(f"a reference run must be JSON ({error}).") from None
        where = "the reference run"
        data = _mapping(where, data, ("machine", "method", "rows", "fusions"))
        try:
            rows = {
                level: tuple(
                    ZooRow(**_mapping(f"rows[{level!r}][{i}]", row, _ROW_KEYS, exact=True))
                    for i, row in enumerate(_list(f"rows[{level!r}]", found))
                )
                for level, found in _mapping("rows", data["rows"], LEVELS, exact=True).items()
            }
            fusions = {
                str(model): tuple(
                    Fusion(
                        **{
                            **_mapping(f"fusions[{model!r}][{i}]", f, _FUSION_KEYS, exact=True),
                            "origin": tuple(_list(f"fusions[{model!r}][{i}].origin", f["origin"])),
                            "origin_ops": tuple(
                                _list(f"fusions[{model!r}][{i}].origin_ops", f["origin_ops"])
                            ),
                        }
                    )
                    for i, f in enumerate(_list(f"fusions[{model!r}]", found))
                )
                for model, found in _mapping("fusions", data["fusions"], ()).items()
            }
        except TypeError as error:  # a ZooRow's own checks, or a field of the wrong type
            raise ValueError(f"{where}: {error}") from None
        return cls(
            machine=dict(_mapping("machine", data["machine"], MACHINE_KEYS)),
            method=dict(_mapping("method", data["method"], METHOD_KEYS)),
            rows=rows,
            fusions=fusions,
        )


_ROW_KEYS = tuple(ZooRow.__dataclass_fields__)
_FUSION_KEYS = tuple(Fusion.__dataclass_fields__)


def _refuse(token: str) -> float:
    raise ValueError(f"{token} is not a number JSON allows")


def _mapping(
    where: str, value: Any, keys: tuple[str, ...], *, exact: bool = False
) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ValueError(f"{where} must be a JSON object (got {type(value).__name__}).")
    missing = [key for key in keys if key not in value]
    extra = [key for key in value if key not in keys] if exact else []
    if missing or extra:
        raise ValueError(
            f"{where} must have the keys {', '.join(keys)}"
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; unknown {', '.join(map(str, extra))}" if extra else "")
            + "."
        )
    return value


def _list(where: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise ValueError(f"{where} must be a JSON list (got {type(value).__name__}).")
    return value


def _check(run: ReferenceRun) -> None:
    """Everything the lecture and :meth:`ReferenceRun.miss` rely on, or a ValueError."""
    _mapping("machine", run.machine, MACHINE_KEYS)
    _mapping("method", run.method, METHOD_KEYS)
    for key in METHOD_KEYS:
        setting: Any = run.method[key]
        if type(setting) is not int or setting < 1:
            raise ValueError(
                f"method[{key!r}] must be a whole count of at least 1 (got {describe(setting)})."
            )
    if run.method["cycles"] % 2 == 0:
        raise ValueError(
            "method['cycles'] must be odd, so that a median cycle exists "
            f"(got {run.method['cycles']})."
        )
    _mapping("rows", run.rows, LEVELS, exact=True)
    pairs = [[(r.model, r.batch) for r in run.rows[level]] for level in LEVELS]
    if not pairs[0] or pairs[0] != pairs[1]:
        raise ValueError(
            "rows['none'] and rows['all'] must hold the same models at the same batches, in the "
            "same order."
        )
    for level in LEVELS:
        for i, r in enumerate(run.rows[level]):
            where = f"rows[{level!r}][{i}] ({r.model} at batch {r.batch})"
            measures: dict[str, Any] = {"spread": r.spread, "others": r.others,
                                        "worst": r.worst, "drift": r.drift}  # fmt: skip
            for field, measure in measures.items():
                if not _finite(measure) or measure < 0:
                    raise ValueError(
                        f"{where}.{field} must be a finite number of at least 0 "
                        f"(got {describe(measure)})."
                    )
            parts: Any = r.by_kind
            if (
                not isinstance(parts, dict)
                or not parts
                or not all(_finite(v) and v >= 0 for v in parts.values())
                or not math.isclose(math.fsum(parts.values()), r.predicted_s, rel_tol=1e-6)
            ):
                raise ValueError(f"{where}.by_kind must split predicted_s into non-negative parts.")
    for model, found in run.fusions.items():
        for i, f in enumerate(found):
            where = f"fusions[{model!r}][{i}]"
            names: tuple[Any, ...] = (*f.origin, *f.origin_ops)
            if not len(f.origin) == len(f.origin_ops) >= 2 or not all(
                isinstance(x, str) for x in names
            ):
                raise ValueError(
                    f"{where} must list two or more exported nodes and their operators, as many "
                    "of each."
                )
            if not _finite(f.saved_s):
                raise ValueError(
                    f"{where}.saved_s must be a finite number (got {describe(f.saved_s)})."
                )


def _finite(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def reference_run(path: str | os.PathLike[str] | None = None) -> ReferenceRun:
    """The stored reference run (the packaged one when ``path`` is None).

    Parameters
    ----------
    path : str or path-like, optional
        A JSON file ``benchmarks/capstone.py --record`` wrote.

    Returns
    -------
    ReferenceRun
    """
    if path is None:
        packaged = resources.files("perfmodel") / "data" / REFERENCE[0] / REFERENCE[1]
        return ReferenceRun.from_json(packaged.read_text("utf-8"))
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"`path` must be a str or Path (got {type(path).__name__}).")
    file = Path(text("path", os.fspath(path)))
    try:
        content = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise ValueError(
            f"`path` must be a readable UTF-8 file (got {str(file)!r}: {error})."
        ) from None
    try:
        return ReferenceRun.from_json(content)
    except ValueError as error:
        raise ValueError(f"{file}: {error}") from None


def this_machine() -> dict[str, str]:
    """What this machine is, in the reference's words: its CPU's model name, the cores this
    process may use, the operating system, and the versions of Python, onnxruntime and numpy.

    Returns
    -------
    dict of str to str
        ``cpu``, ``cores``, ``os``, ``python``, ``onnxruntime`` and ``numpy``.
    """
    import numpy as np
    import onnxruntime as ort

    from perfmodel.measure.empirical import cpu_name, usable_cores

    return {
        "cpu": cpu_name() or platform.machine(),
        "cores": str(usable_cores()),
        "os": f"{platform.system()} {platform.release()}",
        "python": platform.python_version(),
        "onnxruntime": ort.__version__,
        "numpy": np.__version__,
    }
