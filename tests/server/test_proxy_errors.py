# ruff: noqa: E501
"""`exactserve proxy`'s edges: upstream errors and other requests pass through, bad requests
get an error in their API's shape, an unreachable upstream is a 502, the upstream response
is closed when sending fails, and the command's options. Same recording upstream as
test_proxy.py (proxy_upstream.py); every wait is bounded."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest
from proxy_upstream import (
    TIMEOUT,
    ServerThread,
)

from exactserve.server.proxy import ProxyConfig, api_for_path, create_app
from exactserve.toolerr.forms import Options


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
