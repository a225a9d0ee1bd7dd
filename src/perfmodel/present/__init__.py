"""Presenting the lectures: live slides for a lecturer, and an offline book.

* :mod:`~perfmodel.present.slides`: each cell's slide type by the course's rules, and the
  slides that would overflow a projector;
* :mod:`~perfmodel.present.demo`: a lecture as Voilà reveal.js slides, explorers live;
* :mod:`~perfmodel.present.book`: every lecture as static HTML (and a PDF) that works offline.

The names below are this package's public face; they load on first use, so the ``perfmodel``
command starts without Voilà or a browser.
"""

from __future__ import annotations

from perfmodel._extras import require
from perfmodel._lazy import lazy_face

require("course", "nbformat", "nbconvert", feature="perfmodel.present")

#: Each public name and where it lives.
_HOMES = {
    "annotate": "slides:annotate",
    "overflowing": "slides:overflowing",
    "split_at_headings": "slides:split_at_headings",
    "find_lecture": "demo:find_lecture",
    "presenter_copy": "demo:presenter_copy",
    "build_book": "book:build_book",
    "print_pdf": "book:print_pdf",
}

__all__ = sorted(_HOMES)
__getattr__, __dir__ = lazy_face(__name__, _HOMES)
