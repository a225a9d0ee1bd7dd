"""What `make dist` ships: one version in one place, and every data file in the wheel."""

from __future__ import annotations

import re

import pytest

import perfmodel
from conftest import ROOT
from perfmodel.cli import main

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib


def test_perfmodel_version_prints_the_packages_version_and_the_changelog_has_its_release(capsys):
    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out.strip() == f"perfmodel {perfmodel.__version__}"
    assert re.fullmatch(r"\d+\.\d+\.\d+", perfmodel.__version__)
    changelog = (ROOT / "CHANGELOG.md").read_text()
    assert f"\n## {perfmodel.__version__} (" in changelog
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["dynamic"] == ["version"]  # read from the package, never typed


def test_every_data_file_of_the_package_is_declared_for_the_wheel():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = project["tool"]["setuptools"]["package-data"]["perfmodel"]
    package = ROOT / "src" / "perfmodel"
    data = [
        path.relative_to(package).as_posix()
        for path in package.rglob("*")
        if path.is_file() and path.suffix not in {".py", ".pyc"} and "__pycache__" not in path.parts
    ]
    assert data, "no data file found, so this test would prove nothing"

    # setuptools expands each pattern as a recursive glob from the package's folder
    declared = {
        path.relative_to(package).as_posix()
        for pattern in patterns
        for path in package.glob(pattern)
    }
    assert [name for name in data if name not in declared] == []
