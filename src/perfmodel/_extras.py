"""What each optional part of perfmodel needs, and a clear error when it is not installed.

``pip install perfmodel`` brings the models: numpy, scipy and what they need. The rest comes
in extras, each named after what it is for:

==========  =====================================================================
extra       for
==========  =====================================================================
lab         the lectures: JupyterLab, widgets, plots
course      instructors: releasing, grading, Gradescope, slides and the book
mpi         measuring collectives with real MPI (lecture 09)
capstone    ONNX models, priced and run on onnxruntime (lecture 12)
all         every extra above (what ``make lab`` and ``make test`` install)
==========  =====================================================================
"""

from __future__ import annotations

import importlib.util

__all__ = ["require"]


def require(extra: str, *modules: str, feature: str = "") -> None:
    """Raise an ImportError naming ``extra`` unless every one of ``modules`` is installed.

    The check only looks the modules up; it imports nothing.

    >>> require("lab", "math")
    >>> require("capstone", "no_such_module_here", feature="ONNX import")
    Traceback (most recent call last):
    ...
    ImportError: ONNX import needs no_such_module_here: pip install 'perfmodel[capstone]'
    """
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if missing:
        what = feature or f"this part of perfmodel ({extra})"
        raise ImportError(f"{what} needs {', '.join(missing)}: pip install 'perfmodel[{extra}]'")
