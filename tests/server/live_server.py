"""A real `exactserve serve` on loopback for tests: uvicorn in a background thread over a
loaded model, stopped cleanly by `close()`."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import uvicorn

from exactserve.server.app import ServerState, create_app
from exactserve.server.serving import ExactServer, ServeSettings, load_into


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LiveServer:
    def __init__(self, path: Path, *, api_key: str | None = None, **settings) -> None:
        settings.setdefault("backend", "reference")
        self.state = ServerState(api_key=api_key, **settings.pop("state", {}))
        load_into(self.state, ServeSettings(path=Path(path), **settings))
        self.port = free_port()
        config = uvicorn.Config(
            create_app(self.state),
            host="127.0.0.1",
            port=self.port,
            log_level="warning",
            lifespan="off",
        )
        self.server = ExactServer(config, self.state)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def engine(self):
        return self.state.engine

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=30)
        self.state.engine.stop()
