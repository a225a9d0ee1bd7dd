"""`pip install perfmodel` alone: the models work, and each extra's absence is a clear error.

A fresh virtual environment gets the core install (the package and its `dependencies`, no
extra), is shown to hold none of the extras' packages, runs every model module's doctests and
checks that each optional part names the extra it needs. The environment is kept under
test-output/ and rebuilt only when pyproject.toml changes; the package is installed editable,
so a warm run tests the current source.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import venv

import pytest

from conftest import ROOT
from perfmodel._extras import MODULE_EXTRAS

#: Model modules: each must import and pass its doctests with the core install alone.
MODELS = [
    "perfmodel", "perfmodel._validate", "perfmodel._extras", "perfmodel._lazy", "perfmodel._show",
    "perfmodel.units",
    "perfmodel.hardware", "perfmodel.hardware.dtypes", "perfmodel.hardware.specs",
    "perfmodel.hardware.catalogues", "perfmodel.ops", "perfmodel.ops.costs", "perfmodel.ops.dense",
    "perfmodel.ops.streaming", "perfmodel.metrics", "perfmodel.roofline",
    "perfmodel.minibatch", "perfmodel.scaling", "perfmodel.scaling.laws", "perfmodel.scaling.fits",
    "perfmodel.transformer", "perfmodel.taskgraph",
    "perfmodel.exercises", "perfmodel.exercises.keys", "perfmodel.exercises.slips",
    "perfmodel.exercises.checks", "perfmodel.checker", "perfmodel.measure",
    "perfmodel.measure.timing", "perfmodel.measure.load",
    "perfmodel.measure.microbench", "perfmodel.measure.calibration", "perfmodel.measure.empirical",
    "perfmodel.measure.comparison", "perfmodel.measure.held_out",
    "perfmodel.measure.parallel", "perfmodel.measure.threads", "perfmodel.measure.speedups",
    "perfmodel.measure.scaling_runs", "perfmodel.measure.payoff",
    "perfmodel.measure.environment", "perfmodel.measure.gpu",
    "perfmodel.pipeline", "perfmodel.pipeline.graph", "perfmodel.pipeline.masks",
    "perfmodel.pipeline.split",
    "perfmodel.pipeline.search", "perfmodel.pipeline.mip", "perfmodel.pipeline.bounds",
    "perfmodel.pipeline.cover", "perfmodel.pipeline.budget", "perfmodel.pipeline.baselines",
    "perfmodel.pipeline.schedule", "perfmodel.pipeline.zoo", "perfmodel.pipeline.partition",
    "perfmodel.pipeline.lattice", "perfmodel.pipeline.blocks", "perfmodel.pipeline.model",
    "perfmodel.pipeline.reduce",
    "perfmodel.pipeline.networks",
    "perfmodel.pipeline.cuts", "perfmodel.pipeline.threshold",
    "perfmodel.distributed", "perfmodel.distributed.memory", "perfmodel.distributed.mesh",
    "perfmodel.distributed.network", "perfmodel.distributed.strategies",
    "perfmodel.distributed.utilization", "perfmodel.distributed.data_parallel",
    "perfmodel.distributed.checkpoint", "perfmodel.distributed.moe",
    "perfmodel.distributed.weight_stationary", "perfmodel.serving.sizing",
    "perfmodel.comms", "perfmodel.comms.collectives", "perfmodel.comms.links",
    "perfmodel.comms.across",
    "perfmodel.comms.fit", "perfmodel.comms.published", "perfmodel.comms.topology",
    "perfmodel.comms.nccl",
    "perfmodel.comms.nccl_tests", "perfmodel.comms.sweeps", "perfmodel.comms.schedules",
    "perfmodel.serving",
    "perfmodel.serving.theory", "perfmodel.serving.simulator", "perfmodel.serving.llm",
    "perfmodel.serving.server", "perfmodel.serving.inference", "perfmodel.distributed.step",
    "perfmodel.achieved", "perfmodel.published",
]  # fmt: skip

#: Each optional part and the extra its error must name on import (the MPI benchmark imports
#: without its extra and names it when run).
OPTIONAL = {name: extra for name, extra in MODULE_EXTRAS.items() if name != "perfmodel.comms.bench"}

#: Modules only an extra brings: none may be in the core environment.
EXTRAS_ONLY = ["matplotlib", "ipywidgets", "jupyterlab", "otter", "nbformat", "onnx", "mpi4py"]

CHECK = """
import doctest, importlib, importlib.util, sys
models, optional, extras_only = {models!r}, {optional!r}, {extras_only!r}
present = [name for name in extras_only if importlib.util.find_spec(name) is not None]
assert not present, f"the core install brought extras' packages: {{present}}"
failed = tried = 0
for name in models:
    result = doctest.testmod(importlib.import_module(name),
                             optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failed, tried = failed + result.failed, tried + result.attempted
for name, extra in optional.items():
    try:
        importlib.import_module(name)
    except ImportError as error:
        assert f"perfmodel[{{extra}}]" in str(error), (name, str(error))
    else:
        raise AssertionError(f"{{name}} imported without its extra")
print(f"{{tried}} examples, {{failed}} failed")
sys.exit(1 if failed or not tried else 0)
"""


@pytest.fixture(scope="module")
def core_python():
    digest = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()[:12]
    home = ROOT / "test-output" / f"core-venv-{digest}"
    python = home / "bin" / "python"
    if not (home / ".installed").exists():
        for old in home.parent.glob("core-venv-*"):  # made for an older pyproject.toml
            shutil.rmtree(old, ignore_errors=True)
        venv.create(home, clear=True, with_pip=True)
        done = subprocess.run(
            [str(python), "-m", "pip", "install", "--quiet", "-e", str(ROOT)],
            capture_output=True,
            text=True,
        )
        if done.returncode != 0:
            if "No matching distribution" in done.stderr or "connection" in done.stderr.lower():
                pytest.skip(f"cannot install the core without an index: {done.stderr[-300:]}")
            raise AssertionError(f"pip install of the core failed:\n{done.stderr[-2000:]}")
        (home / ".installed").touch()
    return python


@pytest.mark.slow
def test_the_core_install_runs_every_models_doctests_and_names_each_missing_extra(core_python):
    script = CHECK.format(models=MODELS, optional=OPTIONAL, extras_only=EXTRAS_ONLY)
    done = subprocess.run(
        [str(core_python), "-c", script], capture_output=True, text=True, cwd=ROOT / "test-output"
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert " 0 failed" in done.stdout


def test_the_lists_cover_every_module_of_the_package():
    # a new module lands in MODELS or OPTIONAL, or the core test would never see it
    package = ROOT / "src" / "perfmodel"
    found = {
        "perfmodel." + ".".join(path.relative_to(package).with_suffix("").parts)
        for path in package.rglob("*.py")
    }
    found = {name.removesuffix(".__init__") for name in found}
    covered = set(MODELS) | set(OPTIONAL)
    under_optional = {n for n in found if any(n.startswith(o + ".") for o in OPTIONAL)}
    missing = found - covered - under_optional - {"perfmodel.cli", "perfmodel.comms.bench"}
    assert not missing, sorted(missing)
    assert sys.version_info >= (3, 10)


def test_each_optional_part_names_an_extra_that_pyproject_defines():
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras = extras["optional-dependencies"]
    assert {extra for extra in MODULE_EXTRAS.values() if extra not in extras} == set()
    assert {"lab", "grading", "course", "mpi", "capstone"} <= set(MODULE_EXTRAS.values())


@pytest.mark.slow
def test_a_workbooks_instant_check_runs_with_the_core_alone(core_python, tmp_path):
    # students get no otter-grader: the checks their copy carries must run without it
    shutil.copy(ROOT / "exercises" / "00_warmup.ipynb", tmp_path)
    script = (
        "import importlib.util\n"
        "assert importlib.util.find_spec('otter') is None\n"
        "from perfmodel.checker import Notebook\n"
        "grader = Notebook('00_warmup.ipynb')\n"
        "print(repr(grader.check('q1', {'vector_bytes': 8e7})))\n"
        "print(repr(grader.check('q1', {'vector_bytes': 1e7})))\n"
    )
    done = subprocess.run(
        [str(core_python), "-c", script], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    wrong, right = done.stdout.strip().split("\n", 1)[0], done.stdout.strip().splitlines()[-1]
    assert "8x too large" in done.stdout and "bits-vs-bytes" in done.stdout, done.stdout
    assert wrong == "q1 results:" and right == "q1 results: All test cases passed!"
