"""The distribution installs one top-level name, `exactserve`: a regular (non-editable) wheel
built from this checkout holds nothing else, keeps every layer folder as a subpackage, and
works installed on its own, beside another distribution's top-level `kernels` package (the
name Hugging Face's kernel hub uses)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("kernels", "reference", "runtime", "server", "toolerr")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Build the wheel as `pip install .` would, from a copy of the tracked files (so the
    build writes nothing into the checkout)."""
    tmp = tmp_path_factory.mktemp("wheel")
    source = tmp / "source"
    tracked = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    for name in filter(None, tracked.split("\0")):
        if (ROOT / name).is_file():
            (source / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, source / name)
    out = tmp / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        capture_output=True,
        text=True,
    )
    assert build.returncode == 0, build.stdout + build.stderr
    (path,) = out.glob("exactserve-*.whl")
    return path


def _package_folders() -> list[str]:
    """Every package folder of the layers, as its installed module path."""
    return sorted(
        "exactserve." + ".".join(init.parent.relative_to(ROOT).parts)
        for layer in LAYERS
        for init in (ROOT / layer).rglob("__init__.py")
    )


def test_wheel_has_one_top_level_name(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {name.split("/")[0] for name in names}
    dist_info = {top for top in tops if top.endswith(".dist-info")}
    assert tops - dist_info == {"exactserve"}
    (info,) = dist_info
    archive = zipfile.ZipFile(wheel)
    assert archive.read(f"{info}/top_level.txt").decode().split() == ["exactserve"]
    entry_points = archive.read(f"{info}/entry_points.txt").decode()
    assert "exactserve = exactserve.server.cli:main" in entry_points


def test_wheel_holds_every_layer_package_its_data_files(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for module in _package_folders():
        assert module.replace(".", "/") + "/__init__.py" in names, f"{module} not in the wheel"
    templates = sorted(p.name for p in (ROOT / "runtime" / "templates").glob("*.jinja"))
    assert templates
    for name in templates:
        assert f"exactserve/runtime/templates/{name}" in names
    assert "exactserve/runtime/cpu/group_loop.c" in names  # compiled on first use
    assert "exactserve/toolerr/wide/opinion.json" in names  # the wide rules' learned weights
    assert not any(name.startswith(("exactserve/tests", "exactserve/bench")) for name in names)


def test_installed_wheel_works_beside_another_kernels_package(wheel, tmp_path):
    """Install the wheel (no editable finder, no checkout on the path) into a target folder
    that also holds a stand-in for another distribution's top-level `kernels` package; ours
    is `exactserve.kernels`, theirs stays `kernels`, and the console script runs."""
    target = tmp_path / "site"
    install = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "-q"]
        + ["--target", str(target), str(wheel)],
        capture_output=True,
        text=True,
    )
    assert install.returncode == 0, install.stdout + install.stderr
    assert sorted(p.name for p in target.iterdir() if not p.name.endswith(".dist-info")) == [
        "bin",
        "exactserve",
    ]
    (target / "kernels").mkdir()
    (target / "kernels" / "__init__.py").write_text("OWNER = 'someone else'\n")

    env = dict(os.environ, PYTHONPATH=str(target))
    probe = (
        "import kernels, exactserve.kernels, exactserve.runtime.prompt as p\n"
        "print(kernels.OWNER)\n"
        "print(exactserve.kernels.__file__)\n"
        "print(p.__file__)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", probe], cwd=tmp_path, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr
    owner, ours, prompt = run.stdout.splitlines()
    assert owner == "someone else"
    assert Path(ours).is_relative_to(target / "exactserve" / "kernels")
    assert Path(prompt).is_relative_to(target / "exactserve" / "runtime")

    script = subprocess.run(
        [sys.executable, str(target / "bin" / "exactserve"), "--help"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert script.returncode == 0, script.stderr
    assert "Deterministic, bit-reproducible inference" in script.stdout
