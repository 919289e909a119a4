"""Backend selection: argument, then $EXACTSERVE_BACKEND, then the reference."""

from __future__ import annotations

import pytest

from exactserve.runtime.backend import BACKEND_ENV, backend_name, select_ops
from exactserve.runtime.errors import UnsupportedError
from exactserve.server.cli import main


def test_default_is_the_reference(monkeypatch):
    monkeypatch.delenv(BACKEND_ENV, raising=False)
    assert backend_name() == "reference"
    assert select_ops().name == "reference"


def test_environment_then_argument(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "Triton")
    assert backend_name() == "triton"
    assert backend_name("reference") == "reference"


def test_unknown_backend_names_the_source_and_the_choices(monkeypatch):
    monkeypatch.setenv(BACKEND_ENV, "cuda")
    with pytest.raises(UnsupportedError) as info:
        backend_name()
    assert str(info.value) == (
        "unknown backend 'cuda' (from EXACTSERVE_BACKEND); choose one of: reference, triton"
    )


@pytest.mark.llama_cpp_data
def test_generate_reports_a_bad_backend_without_a_traceback(monkeypatch, capsys, tiny_model):
    monkeypatch.setenv(BACKEND_ENV, "cuda")
    path = tiny_model("qwen2")
    assert main(["generate", str(path), "-p", "hi", "-n", "1"]) == 2
    err = capsys.readouterr().err
    assert "error: unknown backend 'cuda' (from EXACTSERVE_BACKEND)" in err
    assert "Traceback" not in err
