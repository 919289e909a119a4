"""The README's Python example runs as written, and its commands use the installed names."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _python_example() -> str:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"## Python API\n.*?```python\n(.*?)```", readme, re.S)
    assert match, "README.md has no Python API example"
    return match.group(1)


@pytest.mark.real_model
def test_readme_python_example_runs_on_the_demo_model(tmp_path):
    run = subprocess.run(
        [sys.executable, "-c", _python_example()],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr
    assert "<start_of_turn>user\nHi!<end_of_turn>\n<start_of_turn>model\n" in run.stdout
    first = run.stdout.splitlines()[0]
    assert first.startswith(" red, blue, and yellow."), first


def test_readme_module_commands_name_exactserve_modules():
    readme = (ROOT / "README.md").read_text()
    modules = re.findall(r"python -m ([\w.]+)", readme)
    assert modules
    for module in modules:
        # the package's own modules, the bench scripts (run from a checkout), or tools
        assert module in {"pytest", "venv"} or module.startswith(("exactserve.", "bench.")), module
