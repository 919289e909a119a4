# ruff: noqa: E501
"""The proxy tests' recording upstream: canned OpenAI and Anthropic answers (JSON and SSE),
an upstream that keeps every request it got, and uvicorn on 127.0.0.1 in a thread. The
fixtures that start them are in conftest.py."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time

import httpx
import uvicorn
from fastapi import FastAPI, Request
from starlette.responses import JSONResponse, Response, StreamingResponse

TIMEOUT = 10.0
G_T = "This is a temporary failure. Retrying the same call is expected to succeed."
G_U = "This cannot be fixed by retrying or by changing the arguments. Tell the user what happened."
P = "Note from the tool runtime: the last attempt called "

CHAT_COMPLETION = {
    "id": "chatcmpl-1",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "m",
    "choices": [
        {"index": 0, "message": {"role": "assistant", "content": "Done."}, "finish_reason": "stop"}
    ],
    "usage": {"prompt_tokens": 5, "completion_tokens": 2, "total_tokens": 7},
}


def _chunk(delta, finish=None):
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "m",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }


CHAT_EVENTS = [
    f"data: {json.dumps(_chunk({'role': 'assistant', 'content': ''}))}\n\n".encode(),
    f"data: {json.dumps(_chunk({'content': 'Hel'}))}\n\n".encode(),
    f"data: {json.dumps(_chunk({'content': 'lo'}))}\n\n".encode(),
    f"data: {json.dumps(_chunk({}, 'stop'))}\n\n".encode(),
    b"data: [DONE]\n\n",
]
ANTHROPIC_MESSAGE = {
    "id": "msg_1",
    "type": "message",
    "role": "assistant",
    "model": "claude-x",
    "content": [{"type": "text", "text": "Done."}],
    "stop_reason": "end_turn",
    "stop_sequence": None,
    "usage": {"input_tokens": 5, "output_tokens": 2},
}
ANTHROPIC_EVENTS = [
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":5,"output_tokens":1}}}\n\n',
    b'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}\n\n',
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hel"}}\n\n',
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"lo"}}\n\n',
    b'event: content_block_stop\ndata: {"type":"content_block_stop","index":0}\n\n',
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":2}}\n\n',
    b'event: message_stop\ndata: {"type":"message_stop"}\n\n',
]
RESPONSE_OBJECT = {"id": "resp_1", "object": "response", "status": "completed", "output": []}


class Upstream:
    """The recording upstream: `received` holds (method, path+query, headers, body)."""

    def __init__(self) -> None:
        self.received: list[tuple[str, str, dict[str, str], bytes]] = []
        self.gate = threading.Event()  # a gated stream waits for it after its first event
        self.stream_closed = threading.Event()  # an endless stream ended (its client left)
        self.app = FastAPI()
        self.app.add_api_route("/{path:path}", self.handle, methods=["GET", "POST"])

    async def handle(self, request: Request) -> Response:
        body = await request.body()
        target = request.url.path + (f"?{request.url.query}" if request.url.query else "")
        self.received.append((request.method, target, dict(request.headers), body))
        mode = request.headers.get("x-test-mode", "")
        if mode.startswith("status-"):
            error = {"error": {"message": "slow down", "type": "rate_limit_error"}}
            return JSONResponse(error, status_code=int(mode[7:]), headers={"retry-after": "7"})
        if request.method == "GET":
            return JSONResponse({"object": "list", "data": [{"id": "m", "object": "model"}]})
        payload = json.loads(body)
        path = request.url.path
        if mode == "endless":
            return StreamingResponse(self._endless(), media_type="text/event-stream")
        if path.endswith("/messages"):
            if payload.get("stream"):
                return self._sse(ANTHROPIC_EVENTS, gated=mode == "gated")
            return JSONResponse(ANTHROPIC_MESSAGE)
        if path.endswith("/responses"):
            return JSONResponse(RESPONSE_OBJECT)
        if payload.get("stream"):
            return self._sse(CHAT_EVENTS, gated=mode == "gated")
        return JSONResponse(CHAT_COMPLETION, headers={"x-upstream": "yes"})

    def _sse(self, events: list[bytes], gated: bool) -> StreamingResponse:
        async def body():
            for index, event in enumerate(events):
                yield event
                if index == 0 and gated:
                    await asyncio.to_thread(self.gate.wait, TIMEOUT)
                await asyncio.sleep(0.005)

        return StreamingResponse(
            body(), media_type="text/event-stream", headers={"cache-control": "no-cache"}
        )

    async def _endless(self):
        try:
            while True:
                yield CHAT_EVENTS[1]
                await asyncio.sleep(0.02)
        finally:
            self.stream_closed.set()


class ServerThread:
    """Runs an ASGI app with uvicorn on 127.0.0.1 (ephemeral port) in a thread."""

    def __init__(self, app) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.port = self.sock.getsockname()[1]
        config = uvicorn.Config(app, log_level="warning", ws="none", timeout_graceful_shutdown=2)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(
            target=self.server.run, kwargs={"sockets": [self.sock]}, daemon=True
        )

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + TIMEOUT
        while not self.server.started:
            assert time.monotonic() < deadline, "server did not start"
            assert self.thread.is_alive(), "server thread died"
            time.sleep(0.01)
        return self

    def __exit__(self, *exc) -> None:
        self.server.should_exit = True
        self.thread.join(TIMEOUT)
        self.sock.close()
        assert not self.thread.is_alive(), "server did not stop"


class SentBodies:
    """An httpx event hook keeping the exact bytes each SDK request carried."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def __call__(self, request: httpx.Request) -> None:
        self.bodies.append(request.read())
