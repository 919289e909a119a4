"""Shared fixtures. `tiny_model(arch, qtype, **options)` writes (once per session) and
returns the path of a tiny GGUF model; see runtime/tiny_model.py for the options. Tests that
use it need llama.cpp's vocab files: mark them `llama_cpp_data`."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gguf import GGMLQuantizationType

from exactserve.runtime.tiny_model import tiny_spec, write_tiny_model


@pytest.fixture(scope="session", autouse=True)
def _session_weight_cache(tmp_path_factory: pytest.TempPathFactory):
    """Converted weights go to a folder of this session (subprocesses inherit it), so no test
    reads a conversion left by an earlier run and none fills the user's cache."""
    patch = pytest.MonkeyPatch()
    patch.setenv("EXACTSERVE_WEIGHT_CACHE", str(tmp_path_factory.mktemp("weight_cache")))
    yield
    patch.undo()


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., Path]:
    cache = tmp_path_factory.mktemp("tiny_models")

    def make(
        arch: str, qtype: GGMLQuantizationType = GGMLQuantizationType.Q8_0, **options: Any
    ) -> Path:
        spec = tiny_spec(arch, qtype, **options)
        path = cache / spec.file_name
        if not path.exists():
            write_tiny_model(path, spec)
        return path

    return make
