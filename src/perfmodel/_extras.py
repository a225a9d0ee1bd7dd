"""What each optional part of perfmodel needs, and a clear error when it is not installed.

``pip install perfmodel`` brings the models: numpy, scipy and what they need. The rest comes
in extras, each named after what it is for:

==========  =====================================================================
extra       for
==========  =====================================================================
lab         the lectures and workbooks: JupyterLab, widgets, plots
grading     grading submissions, here or on Gradescope: otter-grader, a kernel
course      instructors: releasing, grading, Gradescope, slides and the book
mpi         measuring collectives with real MPI (lecture 09)
capstone    ONNX models, priced and run on onnxruntime (lecture 12)
all         every extra above (``make lab`` installs lab, mpi and capstone)
==========  =====================================================================
"""

from __future__ import annotations

import importlib.util

__all__ = ["MODULE_EXTRAS", "require"]

#: The optional parts of the package and the extra each needs: what a workbook that imports
#: one needs in a grading image besides the core (``grading.workbooks`` reads it).
MODULE_EXTRAS = {
    "perfmodel.plotting": "lab",
    "perfmodel.widgets": "lab",
    "perfmodel.grading": "grading",
    "perfmodel.present": "course",
    "perfmodel.capstone": "capstone",
    "perfmodel.comms.bench": "mpi",
}


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
