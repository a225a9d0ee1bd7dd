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
    *(PACKAGE / f"{name}.py" for name in ("units", "metrics", "roofline",
                                          "minibatch", "_validate", "taskgraph",
                                          "transformer")),
    *sorted((PACKAGE / "hardware").glob("*.py")),
    *sorted((PACKAGE / "ops").glob("*.py")),
    *sorted((PACKAGE / "scaling").glob("*.py")),
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
                # Every wing's door is its package: ``perfmodel`` or ``perfmodel.<wing>``.
                past = node.module.count(".") > 1
                assert not past, f"{path.name} imports past a door: {node.module}"
            if isinstance(node, ast.Import):
                deep = [a.name for a in node.names if a.name.startswith("perfmodel.")
                        and a.name.count(".") > 1]  # fmt: skip
                assert not deep, f"{path.name} imports past a door: {deep}"


#: The rooms of the package, lowest first: a room imports only rooms of a lower layer, so the
#: import graph has no cycles and no arrow points back up (a model never reaches a picture, the
#: measurements never reach grading). A new room takes its place here.
LAYERS: tuple[frozenset[str], ...] = tuple(map(frozenset, (
    {"_validate", "_extras", "_lazy"},
    {"units"},
    {"_show"},  # reprs with units: hardware's and the models' results
    {"hardware"},
    {"ops", "metrics", "transformer", "scaling"},
    {"roofline", "achieved"},
    {"measure", "minibatch", "exercises"},
    {"comms"},
    {"pipeline", "distributed", "serving"},
    {"taskgraph", "capstone", "published"},
    {"plotting"},
    {"widgets"},
    {"checker", "grading", "present"},
    {"cli"},
)))  # fmt: skip


def room_imports() -> dict[tuple[str, str], str]:
    """Each (room, room it imports) across rooms, with a file that does it."""

    def room(module: str) -> str:
        return module.split(".")[1]

    found = {}
    for path in PACKAGE.rglob("*.py"):
        here = room("perfmodel." + ".".join(path.relative_to(PACKAGE).with_suffix("").parts))
        for name in imported_modules(path):
            if name.startswith("perfmodel.") and room(name) != here:
                found.setdefault((here, room(name)), path.relative_to(PACKAGE).as_posix())
    return found


def test_every_room_has_a_layer():
    on_disk = {
        path.stem if path.is_file() else path.name
        for path in PACKAGE.iterdir()
        if path.suffix == ".py" or (path / "__init__.py").is_file()
    } - {"__init__"}
    assert on_disk == set().union(*LAYERS), on_disk ^ set().union(*LAYERS)


def test_imports_point_only_down_the_layers():
    layer = {name: index for index, rooms in enumerate(LAYERS) for name in rooms}
    back = [
        f"{where}: {source} -> {target}"
        for (source, target), where in sorted(room_imports().items())
        if target in layer and layer[target] >= layer[source]
    ]
    assert not back, back


def test_no_room_imports_another_rooms_private_names():
    private = []
    for path in PACKAGE.rglob("*.py"):
        here = "perfmodel." + path.relative_to(PACKAGE).parts[0].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("perfmodel."):
                theirs = ".".join(node.module.split(".")[:2])
                shared = theirs in ("perfmodel._validate", "perfmodel._extras")
                private += [
                    f"{path.name} imports {alias.name} from {node.module}"
                    for alias in node.names
                    if alias.name.startswith("_") and theirs != here and not shared
                ]
    assert not private, private


def test_one_module_reads_the_clock():
    # measurements and deadlines alike read perfmodel.measure.timing.clock
    readers = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id == "time"
                and node.attr in ("perf_counter", "perf_counter_ns", "monotonic", "time")
            ):
                readers.append(f"{path.relative_to(PACKAGE).as_posix()}: time.{node.attr}")
    assert {r.split(":")[0] for r in readers} == {"measure/timing.py"}, readers


def test_no_module_imports_another_modules_private_names():
    """Inside a room too: a name with a leading underscore stays in its module (a private
    helper module, ``perfmodel._validate``, is imported whole or by its public names)."""
    private = []
    for path in PACKAGE.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (
                isinstance(node, ast.ImportFrom) and (node.module or "").startswith("perfmodel")
            ):
                continue
            folder = PACKAGE.parent.joinpath(*node.module.split("."))
            for alias in node.names:
                module = (folder / f"{alias.name}.py").is_file() or (folder / alias.name).is_dir()
                dunder = alias.name.startswith("__") and alias.name.endswith("__")
                if alias.name.startswith("_") and not module and not dunder:
                    private.append(
                        f"{path.relative_to(PACKAGE)} imports {alias.name} from {node.module}"
                    )
    assert not private, private
