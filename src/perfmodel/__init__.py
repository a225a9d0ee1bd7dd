"""perfmodel: predict how fast an ML workload runs on a machine, and why.

The package backs the course notebooks. Its model modules are pure and import fast; the
presentation and course-tooling modules (``widgets``, ``grading``, ``workbooks``, ``cli``)
import heavy libraries and are loaded only when used.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]
