"""The package's shape: models never draw, the top level loads fast, notebooks use the
public faces only."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import perfmodel
from conftest import ROOT

PACKAGE = ROOT / "src" / "perfmodel"
#: The models: pure computation, no plotting and no widgets.
MODELS = [
    *(PACKAGE / f"{name}.py" for name in ("units", "hardware", "ops", "metrics", "roofline",
                                          "minibatch", "_validate", "scaling", "taskgraph",
                                          "transformer")),
    *sorted((PACKAGE / "measure").glob("*.py")),
    *sorted((PACKAGE / "pipeline").glob("*.py")),
    *sorted((PACKAGE / "comms").glob("*.py")),
    *sorted((PACKAGE / "distributed").glob("*.py")),
    *sorted((PACKAGE / "serving").glob("*.py")),
    *sorted((PACKAGE / "capstone").glob("*.py")),
]  # fmt: skip
DRAWING = ("matplotlib", "ipywidgets", "IPython", "perfmodel.plotting", "perfmodel.widgets")


def imported_modules(path: Path) -> set[str]:
    """Every module a file imports, at the top or inside a function."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


@pytest.mark.parametrize("path", MODELS, ids=lambda path: path.relative_to(PACKAGE).as_posix())
def test_models_never_import_plotting_or_widgets(path):
    drawing = sorted(
        name for name in imported_modules(path) if name.split(".")[0] in DRAWING or
        name.startswith(DRAWING)
    )  # fmt: skip
    assert not drawing, f"{path.name} imports {drawing}"


def test_the_top_level_finds_every_public_module_on_disk():
    on_disk = {
        path.stem if path.is_file() else path.name
        for path in PACKAGE.iterdir()
        if not path.name.startswith(("_", "."))
        and (path.suffix == ".py" or (path / "__init__.py").is_file())
    }
    assert set(perfmodel.__all__) - {"__version__"} == on_disk
    for name in on_disk:
        assert getattr(perfmodel, name).__name__ == f"perfmodel.{name}"


def test_the_version_has_one_source():
    from importlib.metadata import version

    assert version("perfmodel") == perfmodel.__version__
    assert "version =" not in (ROOT / "pyproject.toml").read_text().split("[project.optional")[0]


def test_import_perfmodel_loads_no_numpy():
    code = "import sys, perfmodel; print('numpy' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "False"]


NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb")) + sorted(
    (ROOT / "exercises").rglob("*.ipynb")
)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_notebooks_import_public_names_only(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    for cell in cells:
        if cell["cell_type"] != "code":
            continue
        source = "".join(cell["source"])
        try:
            tree = ast.parse("\n".join(
                line for line in source.splitlines() if not line.lstrip().startswith(("%", "!"))
            ))  # fmt: skip
        except SyntaxError:  # a student copy's answer placeholder
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("perfmodel"):
                private = [a.name for a in node.names if a.name.startswith("_")]
                assert not private, f"{path.name} imports private {private} from {node.module}"
                assert not any(part.startswith("_") for part in node.module.split(".")), node.module
                if node.module.startswith("perfmodel.pipeline."):
                    # The pipeline's public face is its package; submodules are its parts.
                    assert node.module == "perfmodel.pipeline.zoo", node.module
