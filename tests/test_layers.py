"""Imports point down the data path only: exactserve.server -> exactserve.runtime ->
exactserve.reference / exactserve.kernels; exactserve.toolerr is pure (standard library only);
exactserve.reference needs only NumPy and gguf. Every project import goes through the one
top-level name `exactserve`: a bare `import runtime` would find whatever else a user has
installed under that name."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = {"server", "runtime", "toolerr", "reference", "kernels"}
ALLOWED = {
    "server": {"server", "runtime", "toolerr", "reference", "kernels"},
    "runtime": {"runtime", "reference", "kernels", "toolerr"},
    "kernels": {"kernels", "reference"},
    "reference": {"reference"},
    "toolerr": {"toolerr"},
}
THIRD_PARTY = {
    "reference": {"numpy", "gguf"},
    "toolerr": set(),
}


def _imports(path: Path) -> set[str]:
    """Module paths imported by `path`, absolute imports only."""
    tree = ast.parse(path.read_text(), str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module == "exactserve":
                names.update(f"exactserve.{alias.name}" for alias in node.names)
            else:
                names.add(node.module)
    return names


def _layer_of(module: str) -> str | None:
    """'exactserve.runtime.prompt' -> 'runtime'; None for a module outside the project."""
    parts = module.split(".")
    if parts[0] == "exactserve" and len(parts) > 1 and parts[1] in LAYERS:
        return parts[1]
    return None


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_imports_point_down(layer):
    import sys

    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    files = sorted((ROOT / layer).rglob("*.py"))
    assert files, f"{layer}/ has no Python files"
    for path in files:
        for module in _imports(path):
            where = path.relative_to(ROOT)
            top = module.split(".")[0]
            target = _layer_of(module)
            if target is not None:
                assert target in ALLOWED[layer], f"{where} imports {module} (upward)"
            elif top == "exactserve":
                assert layer == "server", f"{where} imports {module}"
            else:
                assert top not in LAYERS, f"{where} imports {module}: use exactserve.{module}"
                if layer in THIRD_PARTY and top not in stdlib:
                    assert top in THIRD_PARTY[layer], f"{where} imports third-party {module}"


@pytest.mark.parametrize("folder", ["tests", "bench"])
def test_tests_and_bench_import_the_project_by_its_one_name(folder):
    for path in sorted((ROOT / folder).rglob("*.py")):
        for module in _imports(path):
            top = module.split(".")[0]
            assert top not in LAYERS, f"{path.relative_to(ROOT)} imports {module}"
