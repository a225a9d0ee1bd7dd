"""A Gradescope image built from an autograder zip's own environment.yml grades its workbook.

The development environment holds every extra, so a test run there cannot see a dependency
that a zip's environment file forgets. Here a fresh virtual environment gets the zip's
environment file alone (its pip list, and its conda packages by their pip names; the Python
is this one, not the file's), and grades a solved workbook through the autograder's entry
point, as Gradescope's ``run_autograder`` does. The environment is built once per environment
file, under the system's temporary folder (the sandbox's unprivileged user must reach its
Python, so not under a clone that may sit in a private folder).
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import venv
import zipfile
from pathlib import Path

import pytest
import yaml
from attacks import level_args

from conftest import ROOT, WORKBOOKS, assigned, solved_copy
from perfmodel.grading.workbooks import find_workbook

try:
    import tomllib
except ImportError:  # Python 3.10
    import tomli as tomllib


def environment_file(workbook) -> dict:
    with zipfile.ZipFile(io.BytesIO(assigned(workbook).autograder_zip)) as archive:
        return yaml.safe_load(archive.read("environment.yml"))


def pip_lines(environment: dict) -> list[str]:
    return next(item["pip"] for item in environment["dependencies"] if isinstance(item, dict))


def names(lines: list[str]) -> set[str]:
    return {re.split(r"[\[<>=!~; ]", line, maxsplit=1)[0].lower() for line in lines}


def test_every_zip_lists_the_core_grading_and_the_extras_its_workbook_imports():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    core = names(project["dependencies"])
    grading = names(project["optional-dependencies"]["grading"])
    capstone = names(project["optional-dependencies"]["capstone"])
    assert {"numpy", "threadpoolctl", "tomli", "tomli-w"} <= core  # the ones once forgotten
    for workbook in WORKBOOKS:
        listed = names(pip_lines(environment_file(workbook)))
        assert core | grading <= listed, (workbook.name, sorted(core | grading - listed))
        if workbook.name.startswith("12_"):
            assert capstone <= listed, workbook.name
        else:
            assert not capstone & listed, workbook.name
        assert "jupyterlab" not in listed, workbook.name  # no workbook draws; no Lab to grade


def fresh_python(environment: dict) -> Path:
    """A virtual environment with the environment file's packages and nothing else."""
    conda = [
        item.replace("_", "-")
        for item in environment["dependencies"]
        if isinstance(item, str) and not item.startswith(("python", "pip"))
    ]
    wanted = sorted(pip_lines(environment)) + sorted(conda)
    digest = hashlib.sha256("\n".join([sys.version, *wanted]).encode()).hexdigest()[:16]
    home = Path(tempfile.gettempdir()) / f"perfmodel-gradescope-env-{digest}"
    python = home / "bin" / "python"
    with open(f"{home}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if (home / ".installed").exists():
            return python
        shutil.rmtree(home, ignore_errors=True)
        venv.create(home, with_pip=True)
        os.chmod(home, 0o755)
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", *wanted],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            if "No matching distribution" in done.stderr or "connection" in done.stderr.lower():
                pytest.skip(f"cannot build the image's environment without an index: "
                            f"{done.stderr[-300:]}")  # fmt: skip
            raise AssertionError(f"the zip's environment did not install:\n{done.stderr[-3000:]}")
        (home / ".installed").touch()
    return python


@pytest.mark.slow
@pytest.mark.skipif(os.geteuid() != 0, reason="Gradescope runs the autograder as root")
@pytest.mark.parametrize("name", ["06_measure_your_own_machine", "12_will_it_run_faster"])
def test_a_solved_workbook_scores_full_marks_in_its_zips_environment_alone(tmp_path, name):
    workbook = find_workbook(name, ROOT / "exercises")
    python = fresh_python(environment_file(workbook))
    probe = "import importlib.util as u; print([m for m in ('pytest', 'jupyterlab', 'voila') "
    probe += "if u.find_spec(m)])"
    shown = subprocess.run([str(python), "-c", probe], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "[]", "development packages leaked into the image"

    root = tmp_path / "autograder"
    with zipfile.ZipFile(io.BytesIO(assigned(workbook).autograder_zip)) as archive:
        archive.extractall(root / "source")
    for folder in ("submission", "results"):
        (root / folder).mkdir()
    submission = root / "submission" / f"{name}.ipynb"
    submission.write_text(json.dumps(solved_copy(workbook)), encoding="utf-8")
    env = {
        "PATH": f"{python.parent}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "PYTHONSAFEPATH": "1",
        "PYTHONPATH": str(root / "source" / "files"),
    }
    done = subprocess.run(
        [str(python), "-m", "perfmodel.grading.gradescope", str(root), *level_args()],
        env=env, cwd=root, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads((root / "results" / "results.json").read_text())
    possible = sum(test["max_score"] for test in results["tests"])
    assert possible > 0 and results["score"] == possible, results.get("output", "")[-3000:]
