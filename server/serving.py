"""Running the server: load a model into a `ServerState` (with progress), and a uvicorn
server whose shutdown first ends every in-flight request, so Ctrl-C ends open streams
promptly and cleanly.

    settings = ServeSettings(path=..., backend="reference", ...)
    state = ServerState(api_key=...)
    load_into(state, settings, progress=print)    # engine started, /health turns 200
    server = ExactServer(uvicorn.Config(create_app(state), ...), state)
    server.run()
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from exactserve.runtime.backend import backend_name
from exactserve.runtime.model import load_model
from exactserve.runtime.model.threads import default_threads
from exactserve.runtime.speculative import SpeculativeConfig
from exactserve.server.app import ServerState
from exactserve.server.engine import Engine
from exactserve.server.served import ServedModel
from exactserve.toolerr.forms import Options

DEFAULT_PREFIX_CACHE_BLOCKS = 1024


@dataclass(frozen=True)
class ServeSettings:
    path: Path
    backend: str | None = None  # None: triton where CUDA is present, else reference
    threads: int | None = None  # None: the CPUs this process may use
    alias: str | None = None
    ctx_size: int | None = None
    max_running: int = 8
    kv_blocks: int | None = None
    prefix_cache_blocks: int = DEFAULT_PREFIX_CACHE_BLOCKS
    template_file: Path | None = None
    toolerr: Options = Options()
    speculative: SpeculativeConfig | None = None
    draft_model: Path | None = None


def default_backend() -> str:
    """triton where CUDA is present, reference otherwise ($EXACTSERVE_BACKEND wins)."""
    import os

    if os.environ.get("EXACTSERVE_BACKEND"):
        return backend_name()
    try:
        import torch

        return "triton" if torch.cuda.is_available() else "reference"
    except ImportError:
        return "reference"


def load_into(
    state: ServerState, settings: ServeSettings, progress: Callable[[str], None] | None = None
) -> None:
    """Load the model and start its engine; sets `state.served` and `state.engine` last,
    so /health turns 200 only when everything is ready."""
    backend = settings.backend or default_backend()
    threads = settings.threads or default_threads()
    model = load_model(
        settings.path,
        progress=progress,
        threads=threads,
        backend=backend,
        kv_blocks=settings.kv_blocks,
        prefix_cache_blocks=settings.prefix_cache_blocks,
        context_length=settings.ctx_size,
    )
    served = ServedModel.load(
        settings.path,
        context_length=model.context_length,
        backend=backend,
        alias=settings.alias,
        template_file=settings.template_file,
        toolerr=settings.toolerr,
        speculative=settings.speculative,
    )
    draft = None
    if settings.draft_model is not None:
        if progress:
            progress(f"loading the draft model {settings.draft_model.name}")
        draft = load_model(settings.draft_model, threads=threads, backend=backend)
    engine = Engine(model, served.tokenizer, max_running=settings.max_running, draft_model=draft)
    engine.start()
    state.metrics.watch(lambda: state.engine)
    state.served, state.engine = served, engine


class ExactServer(uvicorn.Server):
    """uvicorn's server; on exit it first stops the engine, which ends every in-flight
    request (their streams close with an error event instead of hanging)."""

    def __init__(self, config: uvicorn.Config, state: ServerState) -> None:
        super().__init__(config)
        self.state = state

    def handle_exit(self, sig, frame) -> None:
        engine = self.state.engine
        if engine is not None:
            threading.Thread(target=engine.stop, daemon=True).start()
        super().handle_exit(sig, frame)
