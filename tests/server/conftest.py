"""Live servers over tiny models for the server tests (real HTTP on loopback)."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from gguf import GGMLQuantizationType as T

sys.path.insert(0, str(Path(__file__).resolve().parent))

from live_server import LiveServer  # noqa: E402
from proxy_upstream import ServerThread, Upstream  # noqa: E402

from exactserve.server.proxy import ProxyConfig, create_app  # noqa: E402
from exactserve.toolerr.forms import Options  # noqa: E402


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


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[Upstream, ServerThread]]:
    """The proxy tests' recording upstream (proxy_upstream.py), live on loopback."""
    recorder = Upstream()
    with ServerThread(recorder.app) as server:
        yield recorder, server


@pytest.fixture(scope="module")
def proxy(upstream) -> Iterator[str]:
    with ServerThread(create_app(ProxyConfig(upstream[1].url))) as server:
        yield server.url


@pytest.fixture(scope="module")
def proxy_c3(upstream) -> Iterator[str]:
    options = Options(form="c3", check_before_retry=True)
    with ServerThread(create_app(ProxyConfig(upstream[1].url, options))) as server:
        yield server.url


@pytest.fixture()
def recorder(upstream) -> Upstream:
    upstream[0].received.clear()
    upstream[0].gate.clear()
    upstream[0].stream_closed.clear()
    return upstream[0]
