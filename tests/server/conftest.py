"""Live servers over tiny models for the server tests (real HTTP on loopback)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from gguf import GGMLQuantizationType as T

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_server import LiveServer  # noqa: E402


@pytest.fixture(scope="session")
def qwen_path(tiny_model) -> Path:
    """Qwen2 architecture, Qwen2.5's real template and byte-level BPE vocabulary (151,936)."""
    return tiny_model("qwen2", T.Q8_0)


@pytest.fixture(scope="session")
def gemma_path(tiny_model) -> Path:
    """Gemma 3 architecture with the SentencePiece vocabulary (the generic tool format)."""
    return tiny_model("gemma3", T.Q8_0, template="google-gemma-2-2b-it")


@pytest.fixture(scope="module")
def qwen_server(qwen_path):
    server = LiveServer(qwen_path, api_key="sekret", alias="tiny-qwen")
    yield server
    server.close()
