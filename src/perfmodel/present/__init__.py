"""Presenting the lectures: live slides for a lecturer, and an offline book.

* :mod:`~perfmodel.present.slides`: each cell's slide type by the course's rules, and the
  slides that would overflow a projector;
* :mod:`~perfmodel.present.demo`: a lecture as Voilà reveal.js slides, explorers live;
* :mod:`~perfmodel.present.book`: every lecture as static HTML (and a PDF) that works offline.

The names below are this package's public face; they load on first use, so the ``perfmodel``
command starts without Voilà or a browser.
"""

from __future__ import annotations

import importlib
from typing import Any

from perfmodel._extras import require

require("course", "nbformat", "nbconvert", feature="perfmodel.present")

#: Each public name and the module that defines it.
_HOMES = {
    "annotate": "slides",
    "overflowing": "slides",
    "split_at_headings": "slides",
    "find_lecture": "demo",
    "presenter_copy": "demo",
    "build_book": "book",
    "print_pdf": "book",
}

__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'perfmodel.present' has no attribute {name!r}")
    return getattr(importlib.import_module(f"perfmodel.present.{_HOMES[name]}"), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
