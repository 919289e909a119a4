"""Imports point down the data path only: server -> runtime -> reference/kernels;
toolerr is pure (standard library only); reference needs only NumPy and gguf."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PROJECT = {"server", "runtime", "toolerr", "reference", "kernels"}
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
    tree = ast.parse(path.read_text(), str(path))
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.add(node.module.split(".")[0])
    return names


@pytest.mark.parametrize("layer", sorted(ALLOWED))
def test_imports_point_down(layer):
    import sys

    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    files = sorted((ROOT / layer).rglob("*.py"))
    assert files, f"{layer}/ has no Python files"
    for path in files:
        for name in _imports(path):
            where = path.relative_to(ROOT)
            if name in PROJECT:
                assert name in ALLOWED[layer], f"{where} imports {name} (upward)"
            elif layer in THIRD_PARTY and name not in stdlib:
                assert name in THIRD_PARTY[layer], f"{where} imports third-party {name}"
