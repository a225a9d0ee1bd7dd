"""perfmodel: predict how fast an ML workload runs on a machine, and why.

The package backs the course notebooks. Its model modules (``hardware``, ``ops``,
``roofline``, ``metrics``, ``minibatch``, ``pipeline``...) are pure and import fast; the
presentation and course-tooling modules (``plotting``, ``widgets``, ``grading``,
``workbooks``, ``cli``) import heavy libraries and load only when first used, so
``import perfmodel`` stays quick.

>>> import perfmodel
>>> perfmodel.hardware.get("H100 SXM").kind
'gpu'
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_SUBMODULES = (
    "environment",
    "exercises",
    "grading",
    "hardware",
    "metrics",
    "minibatch",
    "ops",
    "pipeline",
    "pipeline_baselines",
    "pipeline_bounds",
    "pipeline_cover",
    "pipeline_graph",
    "pipeline_mip",
    "pipeline_plots",
    "pipeline_schedule",
    "pipeline_search",
    "pipeline_split",
    "pipeline_zoo",
    "plotting",
    "roofline",
    "sandbox",
    "units",
    "widgets",
    "workbooks",
)

__all__ = ["__version__", *_SUBMODULES]


def __getattr__(name: str) -> Any:
    if name in _SUBMODULES:
        return importlib.import_module(f"perfmodel.{name}")
    raise AttributeError(f"module 'perfmodel' has no attribute {name!r}")
