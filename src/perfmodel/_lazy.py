"""A subpackage's public face whose names load on first use (PEP 562).

A face that imported its modules eagerly would make ``import perfmodel.grading.worker`` (inside
every sandbox) load otter, and ``perfmodel.measure`` load numpy, before anything asked for them.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_face(
    package: str, homes: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``__getattr__`` and ``__dir__`` for ``package`` whose public names live in ``homes``.

    ``homes`` maps each public name to ``"module"`` (the name is that submodule) or
    ``"module:attribute"`` (the name is that attribute of the submodule).

    >>> getattr_, dir_ = lazy_face("perfmodel", {"units": "units", "fmt": "units:format_quantity"})
    >>> getattr_("fmt").__name__, getattr_("units").__name__, dir_()
    ('format_quantity', 'perfmodel.units', ['fmt', 'units'])
    """

    def __getattr__(name: str) -> Any:
        if name not in homes:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, _, attribute = homes[name].partition(":")
        found = importlib.import_module(f"{package}.{module}")
        return getattr(found, attribute) if attribute else found

    def __dir__() -> list[str]:
        return sorted(homes)

    return __getattr__, __dir__
