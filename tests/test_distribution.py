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


@pytest.mark.slow
def test_the_sdist_holds_the_package_and_no_answer(tmp_path):
    import subprocess
    import sys
    import tarfile

    done = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0 and "Could not" in done.stderr + done.stdout:
        pytest.skip(f"cannot build without the package index: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr[-2000:]
    (sdist,) = tmp_path.glob("perfmodel-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
        top = {name.split("/")[1] for name in names if name.count("/") >= 1}
        assert {"tests", "exercises", "notebooks", "benchmarks"}.isdisjoint(top), top
        text = b"".join(
            archive.extractfile(member).read() for member in archive.getmembers() if member.isfile()
        )
    assert any(name.endswith("data/catalogue.toml") for name in names)
    # no hidden key (salted "WORKBOOK/QUESTION/graded_...") and no master's solution cell
    assert not re.search(rb"pm1:\w+:[^'\"\s]*/graded_", text)
    assert not re.search(rb"= [^\n]*  # SOLUTION", text)  # a master's answer line
