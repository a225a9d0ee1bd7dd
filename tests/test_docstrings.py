"""Every public definition of every module says what it takes, in what units, and what it
gives back.

numpydoc's own validator (the one pandas and scipy run) reads each docstring; of its checks
these must pass:

* GL08: there is a docstring, and SS01: it opens with a summary;
* PR01: the Parameters section names every parameter, PR02: and none the signature lacks,
  PR07: each with a description;
* RT01: a Returns section, unless the function returns nothing.

On top of those, every number a float parameter or a float return value carries names its
unit (:data:`UNITS`: s, B, B/s, FLOP, FLOP/s, ... or "count", "fraction" when it has none).

A public definition is a function or class in the module's ``__all__`` that the module
defines, and every public method and property of such a class. Every module of the package
is read but the private ones, so a new module is checked from its first commit.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import pkgutil
import re
import sys
import textwrap

import pytest
from numpydoc.validate import Validator, get_doc_object, validate

import perfmodel

#: Every module of the package but the private ones (a leading underscore).
MODULES = sorted(
    info.name
    for info in pkgutil.walk_packages(perfmodel.__path__, "perfmodel.")
    if not any(part.startswith("_") for part in info.name.split("."))
)
#: numpydoc's checks that must pass (see the module's docstring).
CHECKS = ("GL08", "SS01", "PR01", "PR02", "PR07", "RT01")
#: The units a float may carry, as written in a description.
UNITS = ("s", "B", "B/s", "FLOP", "FLOP/s", "FLOP/B", "tokens/s", "count", "fraction",
         "dimensionless")  # fmt: skip
_UNIT = re.compile(r"(?<![\w'`/])(" + "|".join(map(re.escape, UNITS)) + r")(?![\w/`])")


def public_definitions(module_name: str) -> list[str]:
    """The dotted names of a module's public functions and classes, and of their methods."""
    module = importlib.import_module(module_name)
    found = []
    for name in getattr(module, "__all__", ()):
        obj = getattr(module, name)
        if not (inspect.isfunction(obj) or inspect.isclass(obj)):
            continue  # a constant
        if obj.__module__ != module_name:
            continue  # re-exported: documented where it is defined
        found.append(f"{module_name}.{name}")
        if inspect.isclass(obj):
            found += [
                f"{module_name}.{name}.{attribute}"
                for attribute, member in vars(obj).items()
                if not attribute.startswith("_")
                and (inspect.isfunction(member) or isinstance(member, (property, classmethod)))
            ]
    return found


def _floats_without_units(name: str) -> list[str]:
    doc = Validator(get_doc_object(Validator._load_obj(name)))
    entries = [(f"parameter {p!r}", kind, desc) for p, (kind, desc) in doc.doc_parameters.items()]
    entries += [("Returns", r.type or r.name, r.desc) for r in doc.doc["Returns"]]
    return [
        f"{name}: {where} is a float but names no unit ({', '.join(UNITS)})"
        for where, kind, desc in entries
        if "float" in kind and not _UNIT.search(" ".join(desc))
    ]


def problems(name: str) -> list[str]:
    """What is wrong with one definition's docstring, one line per problem.

    Calling an Enum class looks a member up, with a signature that is Python's own and
    differs between versions (3.11: value, names, module, ...; 3.12 on: \\*values), so an
    Enum's parameters are not checked; its members are documented as Attributes."""
    checks = CHECKS
    obj = Validator._load_obj(name)
    if inspect.isclass(obj) and issubclass(obj, enum.Enum):
        checks = tuple(code for code in CHECKS if code not in ("PR01", "PR02"))
    errors = validate(name)["errors"]
    found = [f"{name}: {code} {message}" for code, message in errors if code in checks]
    return found or _floats_without_units(name)


def test_every_module_is_checked():
    assert len(MODULES) > 90 and "perfmodel.measure.timing" in MODULES
    assert not any("._" in module for module in MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_every_public_definition_documents_its_parameters_and_returns(module):
    definitions = public_definitions(module)
    found = [line for name in definitions for line in problems(name)]
    assert not found, "\n".join(found)


UNDOCUMENTED = '''
"""A module as many are before they are documented."""

__all__ = ["Rate", "documented", "no_returns", "wrong_names", "no_unit", "no_summary",
           "says_nothing", "returns_none"]


def documented(nbytes: float, bandwidth: float) -> float:
    """The time to send ``nbytes``.

    Parameters
    ----------
    nbytes : float
        The message, B.
    bandwidth : float
        The link, B/s.

    Returns
    -------
    float
        Seconds, s.
    """
    return nbytes / bandwidth


def no_returns(nbytes: float) -> float:
    """The time to send ``nbytes`` at 1 GB/s.

    Parameters
    ----------
    nbytes : float
        The message, B.
    """
    return nbytes / 1e9


def wrong_names(nbytes: float, p: int) -> float:
    """Half the buffer.

    Parameters
    ----------
    n : float
        The buffer, B.

    Returns
    -------
    float
        Bytes, B.
    """
    return nbytes / 2


def no_unit(seconds: float) -> float:
    """Twice the time.

    Parameters
    ----------
    seconds : float
        How long it took.

    Returns
    -------
    float
        Twice that, s.
    """
    return 2 * seconds


def no_summary(x: int) -> int:
    """
    Parameters
    ----------
    x : int
        A count, count.

    Returns
    -------
    int
        The same, count.
    """
    return x


def says_nothing(x: int) -> int:
    return x


def returns_none(path: str) -> None:
    """Touch ``path``.

    Parameters
    ----------
    path : str
        Where.
    """


class Rate:
    """A rate.

    Parameters
    ----------
    per_s : float
        Events per second.
    """

    def __init__(self, per_s: float) -> None:
        self.per_s = per_s

    def every(self, n: int) -> float:
        """How long ``n`` events take."""
        return n / self.per_s
'''


def test_the_checker_fails_a_module_that_is_not_yet_documented(tmp_path, monkeypatch):
    (tmp_path / "not_yet_documented.py").write_text(textwrap.dedent(UNDOCUMENTED))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "not_yet_documented", raising=False)
    found = {
        name.rsplit(".", 1)[-1]: problems(name) for name in public_definitions("not_yet_documented")
    }
    codes = {name: {line.split(": ")[1].split()[0] for line in lines}
             for name, lines in found.items()}  # fmt: skip
    assert codes == {
        "documented": set(),
        "returns_none": set(),  # no value returned, so no Returns section needed
        "no_returns": {"RT01"},
        "wrong_names": {"PR01", "PR02"},  # `nbytes` and `p` missing, `n` extra
        "no_unit": {"parameter"},  # "How long it took." names no unit
        "no_summary": {"SS01"},
        "says_nothing": {"GL08"},
        "Rate": {"parameter"},  # "Events per second." names no unit
        "every": {"PR01", "RT01"},
    }


if __name__ == "__main__":
    # python tests/test_docstrings.py perfmodel.scaling ...: what is left to document, per module.
    for module_name in sys.argv[1:]:
        left = [line for name in public_definitions(module_name) for line in problems(name)]
        print(f"{module_name}: {len(left)} problem(s)", *left, sep="\n  ")
