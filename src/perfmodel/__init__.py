"""perfmodel: predict how fast an ML workload runs on a machine, and why.

The package backs the course notebooks. Its model modules (``hardware``, ``ops``,
``roofline``, ``metrics``, ``minibatch``, ``pipeline``...) are pure and never import
matplotlib or ipywidgets; ``plotting`` and ``widgets`` draw, ``grading`` and ``present``
hold the instructors' tooling and ``cli`` the ``perfmodel`` command. Every public module loads
on first use, so ``import perfmodel`` stays quick and loads no numpy.

>>> import perfmodel
>>> perfmodel.hardware.get("H100 SXM").kind
'gpu'
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

#: The one place the version is written; pyproject.toml reads it from here.
__version__ = "0.3.0"

#: Public modules and subpackages, found on disk: a new module needs no entry here.
_PUBLIC = tuple(
    sorted(info.name for info in pkgutil.iter_modules(__path__) if not info.name.startswith("_"))
)

__all__ = ["__version__", *_PUBLIC]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return importlib.import_module(f"perfmodel.{name}")
    raise AttributeError(f"module 'perfmodel' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_PUBLIC})
