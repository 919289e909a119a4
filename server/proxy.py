"""`exactserve proxy`: the tool-error layer in front of any OpenAI- or Anthropic-compatible
server (llama.cpp's llama-server, vLLM, SGLang, ...).

Chat-style POSTs (`/v1/chat/completions`, `/v1/messages`, `/v1/messages/count_tokens`,
`/v1/responses`, with or without the `/v1` prefix) go through the layer and are forwarded
in their own API shape: byte for byte as received when nothing is rewritten and no layer
field has to be stripped. Every other request is forwarded untouched. Responses, streamed
(SSE) or not, come back as the upstream sent them, status and headers included, plus the
`X-Tool-Errors` header on chat-style requests.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field

import anyio
import httpx
from fastapi import FastAPI, Request
from starlette.responses import Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from exactserve.server.errors import decode_json_object
from exactserve.toolerr.body import RequestError
from exactserve.toolerr.forms import Options
from exactserve.toolerr.report import HEADER, log_line
from exactserve.toolerr.request import process

log = logging.getLogger("exactserve.toolerr")

# Paths (after an optional "v1/") whose bodies the layer reads, and their API shape.
CHAT_PATHS = {
    "chat/completions": "chat",
    "messages": "messages",
    "messages/count_tokens": "messages",
    "responses": "responses",
}

# Headers that describe one connection, not the message (RFC 9110 section 7.6.1), plus
# those the proxy recomputes for its own hop.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "proxy-connection",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "host",
        "content-length",
    }
)

METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"]


@dataclass(frozen=True)
class ProxyConfig:
    """upstream: the server's root URL (scheme://host:port[/prefix]); request paths are
    appended to it unchanged. timeout_s bounds each read from the upstream (generation can
    be slow); connecting is bounded by connect_timeout_s."""

    upstream: str
    options: Options = field(default_factory=Options)
    timeout_s: float = 600.0
    connect_timeout_s: float = 10.0

    def __post_init__(self) -> None:
        url = httpx.URL(self.upstream)
        if url.scheme not in ("http", "https") or not url.host:
            raise ValueError(f"upstream must be an http:// or https:// URL, got {self.upstream!r}")


def api_for_path(path: str) -> str | None:
    """The API shape of a chat-style path, or None for a path forwarded untouched."""
    path = path.strip("/")
    return CHAT_PATHS.get(path[3:] if path.startswith("v1/") else path)


def error_body(api: str | None, message: str, kind: str, param: str | None = None) -> dict:
    """An error in the shape of the API the request came through (OpenAI's by default)."""
    if api == "messages":
        return {"type": "error", "error": {"type": kind, "message": message}}
    return {"error": {"message": message, "type": kind, "param": param, "code": None}}


def create_app(config: ProxyConfig) -> FastAPI:
    """The proxy as an ASGI app; it holds one upstream connection pool for its lifetime."""

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        timeout = httpx.Timeout(config.timeout_s, connect=config.connect_timeout_s)
        async with httpx.AsyncClient(timeout=timeout, follow_redirects=False) as client:
            app.state.client = client
            yield

    app = FastAPI(lifespan=lifespan, openapi_url=None, docs_url=None, redoc_url=None)
    upstream_root = config.upstream.rstrip("/")

    @app.api_route("/{path:path}", methods=METHODS)
    async def forward(request: Request) -> Response:
        received = await request.body()
        api = api_for_path(request.url.path) if request.method == "POST" else None
        content, extra_headers = received, []
        if api is not None:
            try:
                outcome = process(
                    decode_json_object(received),
                    api,
                    request.headers.get("user-agent", ""),
                    config.options,
                )
            except RequestError as exc:
                body = error_body(api, exc.message, "invalid_request_error", exc.param)
                return _json_response(400, body, [])
            log.info(log_line(outcome.header))
            content = outcome.forward_bytes(received)
            extra_headers = [(HEADER.lower().encode(), outcome.header.encode())]
        raw_path = request.scope.get("raw_path") or request.url.path.encode()
        url = upstream_root + raw_path.decode("latin-1")
        if request.url.query:
            url += "?" + request.url.query
        client: httpx.AsyncClient = request.app.state.client
        upstream_request = client.build_request(
            request.method, url, headers=_request_headers(request), content=content
        )
        try:
            upstream = await client.send(upstream_request, stream=True)
        except httpx.TimeoutException as exc:
            message = f"the upstream {upstream_root} did not answer in time: {exc!r}"
            return _json_response(504, error_body(api, message, "api_error"), extra_headers)
        except httpx.HTTPError as exc:
            message = f"the upstream {upstream_root} is unreachable: {exc!r}"
            return _json_response(502, error_body(api, message, "api_error"), extra_headers)
        return UpstreamResponse(upstream, extra_headers)

    return app


class UpstreamResponse(StreamingResponse):
    """Streams an upstream response's raw bytes (still encoded as the upstream sent them)
    with its status and headers, and always closes the upstream connection: when the body
    ends, when sending fails, and when the client disconnects mid-stream."""

    def __init__(self, upstream: httpx.Response, extra_headers: list[tuple[bytes, bytes]]):
        super().__init__(upstream.aiter_raw(), status_code=upstream.status_code)
        self.upstream = upstream
        self.raw_headers = [
            (name.lower(), value)
            for name, value in upstream.headers.raw
            if name.lower().decode("latin-1") not in HOP_BY_HOP
        ] + extra_headers

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            await super().__call__(scope, receive, send)
        finally:
            with anyio.CancelScope(shield=True):
                await self.body_iterator.aclose()
                await self.upstream.aclose()


def _request_headers(request: Request) -> list[tuple[bytes, bytes]]:
    """The client's headers for the upstream hop: everything but hop-by-hop ones (so
    Authorization, x-api-key, anthropic-version, User-Agent... all pass). Without the
    client's own Accept-Encoding, ask for identity so no encoding the client did not
    accept comes back."""
    headers = [
        (name, value)
        for name, value in request.headers.raw
        if name.decode("latin-1").lower() not in HOP_BY_HOP
    ]
    if "accept-encoding" not in request.headers:
        headers.append((b"accept-encoding", b"identity"))
    return headers


def _json_response(status: int, body: dict, headers: list[tuple[bytes, bytes]]) -> Response:
    response = Response(
        json.dumps(body).encode(), status_code=status, media_type="application/json"
    )
    response.raw_headers.extend(headers)
    return response
