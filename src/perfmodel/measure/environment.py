"""What the course runs on: versions, cores and platform, for the start-here check."""

from __future__ import annotations

import os
import platform
import sys
from importlib import metadata

__all__ = ["MINIMUM_PYTHON", "OPTIONAL", "REQUIRED", "environment_report"]

MINIMUM_PYTHON = (3, 10)

#: Distributions the course needs at run time, in the order the report lists them.
REQUIRED = (
    "perfmodel",
    "numpy",
    "scipy",
    "matplotlib",
    "ipywidgets",
    "jupyterlab",
    "tqdm",
)

#: Distributions one lecture needs, with that lecture and the extra that brings them
#: (``make lab`` installs both).
OPTIONAL = {
    "mpi4py": ("lecture 09", "mpi"),
    "onnxruntime": ("lecture 12", "capstone"),
}


def environment_report() -> dict[str, str]:
    """Describe this machine and the installed course dependencies.

    Returns
    -------
    dict
        Name to a short description; a missing required package reads ``"MISSING"``, a
        missing optional one names its lecture and the install line that brings it.

    Examples
    --------
    >>> report = environment_report()
    >>> report["python"].startswith("3.")
    True
    >>> int(report["CPU cores"]) >= 1
    True
    """
    report = {
        "python": platform.python_version(),
        "platform": f"{platform.system()} {platform.machine()}",
        "CPU cores": str(os.cpu_count() or 1),
    }
    for name in REQUIRED:
        try:
            report[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            report[name] = "MISSING"
    for name, (lecture, extra) in OPTIONAL.items():
        try:
            report[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            report[name] = f"not installed ({lecture} needs it: pip install 'perfmodel[{extra}]')"
    if sys.version_info < MINIMUM_PYTHON:
        report["python"] += " (too old: the course needs 3.10 or newer)"
    return report
