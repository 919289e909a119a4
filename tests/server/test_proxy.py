# ruff: noqa: E501
"""`exactserve proxy` end to end: the official openai and anthropic SDKs and raw httpx talk
to the proxy over real HTTP; the proxy forwards over real HTTP to a recording upstream
started here (uvicorn on 127.0.0.1, ephemeral ports) that keeps every request it got and
answers with canned JSON and SSE in OpenAI and Anthropic shapes. Every wait is bounded."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
from collections.abc import Iterator

import anthropic
import httpx
import openai
import pytest
import uvicorn
from fastapi import FastAPI, Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from exactserve.server.proxy import ProxyConfig, api_for_path, create_app
from exactserve.toolerr.forms import Options

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


@pytest.fixture(scope="module")
def upstream() -> Iterator[tuple[Upstream, ServerThread]]:
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


class SentBodies:
    """An httpx event hook keeping the exact bytes each SDK request carried."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []

    def __call__(self, request: httpx.Request) -> None:
        self.bodies.append(request.read())


CHAT_MESSAGES = [
    {"role": "user", "content": "Fetch the page."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "fetch", "arguments": '{"url":"https://example.com"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "Error: 503 Service Unavailable"},
]
CHAT_NOTE = (
    P
    + 'fetch with url="https://example.com" and it failed with: Error: 503 Service Unavailable\n\n'
    + G_T
)
CHAT_HEADER_C3 = (
    '{"form":"c3","changed":true,"failures":[{"message":2,"kind":"transient","rule":"generic"}]}'
)


def test_openai_sdk_non_streaming_rewrite(proxy, recorder, caplog):
    sent = SentBodies()
    with httpx.Client(event_hooks={"request": [sent]}, timeout=TIMEOUT) as http_client:
        client = openai.OpenAI(
            base_url=proxy + "/v1", api_key="sk-test", max_retries=0, http_client=http_client
        )
        with caplog.at_level(logging.INFO, logger="exactserve.toolerr"):
            raw = client.chat.completions.with_raw_response.create(
                model="m", messages=CHAT_MESSAGES, temperature=0, extra_body={"tool_errors": "c3"}
            )
    assert raw.status_code == 200
    assert raw.headers["x-tool-errors"] == CHAT_HEADER_C3
    assert raw.headers["x-upstream"] == "yes"
    assert raw.parse().choices[0].message.content == "Done."
    [(method, target, headers, body)] = recorder.received
    assert (method, target) == ("POST", "/v1/chat/completions")
    assert headers["authorization"] == "Bearer sk-test"
    assert headers["user-agent"].startswith("OpenAI/Python")
    assert json.loads(body) == {
        "model": "m",
        "temperature": 0,
        "messages": [*CHAT_MESSAGES, {"role": "user", "content": CHAT_NOTE}],
    }
    assert f"X-Tool-Errors: {CHAT_HEADER_C3}" in caplog.messages


def test_openai_sdk_streaming_is_forwarded_unchanged(proxy, recorder):
    sent = SentBodies()
    with httpx.Client(event_hooks={"request": [sent]}, timeout=TIMEOUT) as http_client:
        client = openai.OpenAI(
            base_url=proxy + "/v1", api_key="sk-test", max_retries=0, http_client=http_client
        )
        with client.chat.completions.with_streaming_response.create(
            model="m", messages=CHAT_MESSAGES, stream=True
        ) as response:
            assert (
                response.headers["x-tool-errors"]
                == '{"form":"off","changed":false,"failures":[{"message":2,"kind":"transient","rule":"generic"}]}'
            )
            assert response.headers["content-type"].startswith("text/event-stream")
            deltas = [chunk.choices[0].delta.content for chunk in response.parse()]
    assert deltas == ["", "Hel", "lo", None]
    [(_, _, _, body)] = recorder.received
    assert body == sent.bodies[0]  # layer off, no layer field: the very bytes the SDK sent


def test_anthropic_sdk_non_streaming_rewrite(proxy, recorder):
    client = anthropic.Anthropic(
        base_url=proxy, api_key="sk-ant-test", max_retries=0, timeout=TIMEOUT
    )
    messages = [
        {"role": "user", "content": "Deploy."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "deploy", "input": {"env": "prod"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "is_error": True,
                    "content": "EACCES: /srv is read-only",
                }
            ],
        },
    ]
    raw = client.messages.with_raw_response.create(
        model="claude-x", max_tokens=64, messages=messages, extra_body={"tool_errors": "c4"}
    )
    assert (
        raw.headers["x-tool-errors"]
        == '{"form":"c4","changed":true,"failures":[{"message":2,"kind":"unrecoverable","rule":"is_error"}]}'
    )
    assert raw.parse().content[0].text == "Done."
    [(method, target, headers, body)] = recorder.received
    assert (method, target) == ("POST", "/v1/messages")
    assert headers["authorization"] == "Bearer sk-ant-test"
    assert headers["anthropic-version"] == client.default_headers["anthropic-version"]
    assert headers["user-agent"].startswith("Anthropic/Python")
    assert json.loads(body) == {
        "model": "claude-x",
        "max_tokens": 64,
        "messages": [
            {"role": "user", "content": "Deploy."},
            {
                "role": "user",
                "content": P
                + 'deploy with env="prod" and it failed with: EACCES: /srv is read-only\n\n'
                + G_U,
            },
        ],
    }


def test_anthropic_sdk_streaming_with_the_server_default_form(proxy_c3, recorder):
    client = anthropic.Anthropic(
        base_url=proxy_c3, api_key="sk-ant-test", max_retries=0, timeout=TIMEOUT
    )
    messages = [
        {"role": "user", "content": "Pay the invoice."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Paying."},
                {"type": "tool_use", "id": "toolu_9", "name": "pay", "input": {"invoice": 42}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_9", "content": "Error: ETIMEDOUT"}
            ],
        },
    ]
    tools = [
        {
            "name": "pay",
            "input_schema": {"type": "object"},
            "annotations": {"idempotentHint": False},
        }
    ]
    with client.messages.with_streaming_response.create(
        model="claude-x", max_tokens=64, messages=messages, tools=tools, stream=True
    ) as response:
        assert (
            response.headers["x-tool-errors"]
            == '{"form":"c3","changed":true,"failures":[{"message":2,"kind":"transient","rule":"generic"}]}'
        )
        events = [event.type for event in response.parse()]
    assert events == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    [(_, _, _, body)] = recorder.received
    check = "This looks like a temporary failure, but the last attempt may have taken effect before it failed. Check whether it did before calling the tool again."
    assert json.loads(body) == {
        "model": "claude-x",
        "max_tokens": 64,
        "stream": True,
        "tools": [{"name": "pay", "input_schema": {"type": "object"}}],
        "messages": [
            messages[0],
            messages[1],
            {
                "role": "user",
                "content": [
                    messages[2]["content"][0],
                    {
                        "type": "text",
                        "text": P
                        + "pay with invoice=42 and it failed with: Error: ETIMEDOUT\n\n"
                        + check,
                    },
                ],
            },
        ],
    }


@pytest.mark.parametrize(
    ("path", "events"), [("/v1/chat/completions", CHAT_EVENTS), ("/v1/messages", ANTHROPIC_EVENTS)]
)
def test_sse_chunks_arrive_intact_and_before_the_stream_ends(proxy, recorder, path, events):
    body = {
        "model": "m",
        "max_tokens": 8,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    with httpx.Client(timeout=TIMEOUT) as client:
        with client.stream(
            "POST", proxy + path, json=body, headers={"x-test-mode": "gated"}
        ) as response:
            assert response.status_code == 200
            assert response.headers["cache-control"] == "no-cache"
            chunks = response.iter_raw()
            first = next(chunks)
            # The upstream holds the rest until the gate opens: the first event came through
            # on its own, not buffered until the end.
            assert first == events[0]
            recorder.gate.set()
            rest = b"".join(chunks)
    assert first + rest == b"".join(events)


def test_client_disconnect_closes_the_upstream_stream(proxy, recorder):
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(timeout=TIMEOUT) as client:
        with client.stream(
            "POST", proxy + "/v1/chat/completions", json=body, headers={"x-test-mode": "endless"}
        ) as response:
            assert next(response.iter_raw()) == CHAT_EVENTS[1]
    assert recorder.stream_closed.wait(TIMEOUT), "the upstream stream was left open"


def test_unchanged_bodies_are_forwarded_byte_for_byte(proxy_c3, recorder):
    # Odd spacing, escapes and number spellings: re-serialising would change them. The
    # failure is ambiguous (ENOENT), so even with c3 on nothing is rewritten.
    received = (
        b'{ "model" : "m",  "messages": [{"role":"user","content":"caf\\u00e9 \\ud83d\\ude00"},'
        b'{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"ls","arguments":"{}"}}]},'
        b'{"role":"tool","tool_call_id":"c","content":"Error: ENOENT"}], "temperature": 1.50E0 }'
    )
    with httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(
            proxy_c3 + "/v1/chat/completions",
            content=received,
            headers={"content-type": "application/json"},
        )
    assert response.status_code == 200
    assert (
        response.headers["x-tool-errors"]
        == '{"form":"c3","changed":false,"failures":[{"message":2,"kind":"ambiguous","rule":"generic"}]}'
    )
    assert response.json() == CHAT_COMPLETION
    assert recorder.received[0][3] == received


def test_layer_fields_are_cut_out_and_nothing_else_changes(proxy, recorder):
    received = b'{"model":"m" , "tool_errors":"c2", "messages":[{"role":"user","content":"x  y"},{"role":"tool","tool_call_id":"q","content":"ok","error_kind":null}]}'
    with httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(proxy + "/chat/completions", content=received)
    assert response.headers["x-tool-errors"] == '{"form":"c2","changed":false,"failures":[]}'
    assert recorder.received[0][1] == "/chat/completions"
    assert (
        recorder.received[0][3]
        == b'{"model":"m" , "messages":[{"role":"user","content":"x  y"},{"role":"tool","tool_call_id":"q","content":"ok"}]}'
    )


def test_responses_requests_are_rewritten_in_their_own_shape(proxy, recorder):
    body = {
        "model": "gpt-x",
        "tool_errors": "c1",
        "input": [
            {"role": "user", "content": "Run it."},
            {"type": "function_call", "call_id": "c1", "name": "run", "arguments": "{}"},
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": "Error: 503 Service Unavailable",
            },
        ],
    }
    with httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(proxy + "/v1/responses", json=body)
    assert response.json() == RESPONSE_OBJECT
    assert (
        response.headers["x-tool-errors"]
        == '{"form":"c1","changed":true,"failures":[{"message":2,"kind":"transient","rule":"generic"}]}'
    )
    assert json.loads(recorder.received[0][3]) == {
        "model": "gpt-x",
        "input": [
            {"role": "user", "content": "Run it."},
            {"type": "function_call", "call_id": "c1", "name": "run", "arguments": "{}"},
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": "Error: 503 Service Unavailable\n" + G_T,
            },
        ],
    }


def test_agent_rules_use_the_forwarded_user_agent(proxy, recorder):
    body = {
        "model": "m",
        "tool_errors": "c1",
        "messages": [
            {"role": "user", "content": "Open it."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c", "content": "Error: EACCES"},
        ],
    }
    with httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(
            proxy + "/v1/chat/completions", json=body, headers={"user-agent": "codex_cli_rs/0.42.0"}
        )
    assert response.headers["x-tool-errors"] == '{"form":"c1","changed":false,"failures":[]}'
    assert recorder.received[0][2]["user-agent"] == "codex_cli_rs/0.42.0"


def test_upstream_status_and_errors_pass_through(proxy, recorder):
    with httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(
            proxy + "/v1/chat/completions",
            json={"model": "m", "messages": []},
            headers={"x-test-mode": "status-429"},
        )
    assert response.status_code == 429
    assert response.headers["retry-after"] == "7"
    assert response.headers["x-tool-errors"] == '{"form":"off","changed":false,"failures":[]}'
    assert response.json() == {"error": {"message": "slow down", "type": "rate_limit_error"}}


def test_other_requests_are_forwarded_untouched(proxy, recorder):
    with httpx.Client(timeout=TIMEOUT) as client:
        response = client.get(
            proxy + "/v1/models?limit=2&after=a%20b",
            headers={"x-api-key": "k", "anthropic-version": "2023-06-01"},
        )
    assert response.json() == {"object": "list", "data": [{"id": "m", "object": "model"}]}
    assert "x-tool-errors" not in response.headers
    [(method, target, headers, body)] = recorder.received
    assert (method, target, body) == ("GET", "/v1/models?limit=2&after=a%20b", b"")
    assert (headers["x-api-key"], headers["anthropic-version"]) == ("k", "2023-06-01")


@pytest.mark.parametrize(
    ("path", "content", "status", "expected"),
    [
        (
            "/v1/chat/completions",
            b"{not json",
            400,
            {
                "error": {
                    "message": "the request body is not valid JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            },
        ),
        (
            "/v1/chat/completions",
            b"[1]",
            400,
            {
                "error": {
                    "message": "the request body must be a JSON object",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            },
        ),
        (
            "/v1/responses",
            b'{"input": [], "tool_errors": "c9"}',
            400,
            {
                "error": {
                    "message": 'tool_errors must be one of off, c1, c2, c3, c4, got "c9"',
                    "type": "invalid_request_error",
                    "param": "tool_errors",
                    "code": None,
                }
            },
        ),
        (
            "/v1/messages",
            b'{"messages": "hi"}',
            400,
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "messages must be an array, got a string",
                },
            },
        ),
        (
            "/v1/messages",
            b"\xff\xfe",
            400,
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "the request body is not UTF-8: 'utf-8' codec can't decode byte 0xff in position 0: invalid start byte",
                },
            },
        ),
        (
            "/v1/chat/completions",
            b'{"messages":' + b"[" * 100000 + b"]" * 100000 + b"}",
            400,
            {
                "error": {
                    "message": "the request body is nested too deeply to read",
                    "type": "invalid_request_error",
                    "param": None,
                    "code": None,
                }
            },
        ),
    ],
)
def test_bad_requests_get_an_error_in_their_api_shape(
    proxy, recorder, path, content, status, expected
):
    with httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(proxy + path, content=content)
    assert (response.status_code, response.json()) == (status, expected)
    assert recorder.received == []


def test_unreachable_upstream_is_a_502_in_the_api_shape():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    with (
        ServerThread(create_app(ProxyConfig(dead, connect_timeout_s=2.0))) as server,
        httpx.Client(timeout=TIMEOUT) as client,
    ):
        chat = client.post(server.url + "/v1/chat/completions", json={"model": "m", "messages": []})
        messages = client.post(server.url + "/v1/messages", json={"model": "m", "messages": []})
    assert chat.status_code == 502 and messages.status_code == 502
    assert chat.json()["error"]["type"] == "api_error"
    assert chat.json()["error"]["message"].startswith(
        f"the upstream {dead} is unreachable: ConnectError("
    )
    assert messages.json()["type"] == "error" and messages.json()["error"]["type"] == "api_error"
    assert chat.headers["x-tool-errors"] == '{"form":"off","changed":false,"failures":[]}'


def test_paths_and_config():
    assert [
        api_for_path(p)
        for p in (
            "/v1/chat/completions",
            "/chat/completions",
            "/v1/messages",
            "/v1/messages/count_tokens",
            "/v1/responses/",
            "/v1/completions",
            "/v1/models",
        )
    ] == ["chat", "chat", "messages", "messages", "responses", None, None]
    with pytest.raises(
        ValueError, match="upstream must be an http:// or https:// URL, got 'localhost:8080'"
    ):
        ProxyConfig("localhost:8080")


class _TrackedStream(httpx.AsyncByteStream):
    def __init__(self) -> None:
        self.is_closed = False

    async def __aiter__(self):
        yield b"data: 1\n\n"
        yield b"data: 2\n\n"

    async def aclose(self) -> None:
        self.is_closed = True


@pytest.mark.parametrize("spec_version", ["2.3", "2.4"])
def test_the_upstream_response_is_closed_when_sending_fails(spec_version):
    # ASGI 2.4 servers report a gone client by failing `send`; Starlette then abandons the
    # body iterator without closing it, so UpstreamResponse must close the upstream itself.
    from starlette.requests import ClientDisconnect

    from exactserve.server.proxy import UpstreamResponse

    stream = _TrackedStream()
    response = UpstreamResponse(httpx.Response(200, stream=stream), [])

    async def receive():
        await asyncio.sleep(TIMEOUT)
        return {"type": "http.disconnect"}

    async def send(message):
        if message["type"] == "http.response.body":
            raise OSError("client went away")

    scope = {"type": "http", "asgi": {"version": "3.0", "spec_version": spec_version}}
    with pytest.raises((ClientDisconnect, OSError)):
        asyncio.run(asyncio.wait_for(response(scope, receive, send), TIMEOUT))
    assert stream.is_closed


def test_proxy_command_options():
    from exactserve.server.cli import build_parser, main
    from exactserve.server.commands.toolerr import options_from_args

    args = build_parser().parse_args(
        [
            "proxy",
            "--upstream",
            "http://127.0.0.1:8080",
            "--tool-errors",
            "c3",
            "--check-before-retry",
            "--retry-safe-tools",
            "read_file, grep",
            "--quote-errors",
            "--quote-max-chars",
            "500",
            "--port",
            "9000",
        ]
    )
    assert (args.upstream, args.host, args.port) == ("http://127.0.0.1:8080", "127.0.0.1", 9000)
    assert options_from_args(args) == Options(
        form="c3",
        check_before_retry=True,
        retry_safe_tools=frozenset({"read_file", "grep"}),
        quote_errors=True,
        quote_max_chars=500,
    )
    assert main(["proxy", "--upstream", "ftp://example.com"]) == 2
