"""The HTTP edge of `exactserve serve`: one FastAPI app over one `Engine`.

`create_app(state)` mounts one router per API surface (openai_chat, openai_completions,
openai_responses, anthropic, extras) and the pieces they share: the API key check, the
request size limit, and error handlers that answer every failure in the shape of the API
the request came through (server/errors). Routes parse a body into the engine's terms,
submit, and format the events back; they never touch the model.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from fastapi import FastAPI, Request
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from exactserve.server.engine import Engine, EngineStopped
from exactserve.server.errors import APIError, decode_json_object, error_response
from exactserve.server.metrics import Metrics
from exactserve.server.served import ServedModel
from exactserve.server.shared import ClientGone
from exactserve.toolerr.body import RequestError

log = logging.getLogger("exactserve.server")

DEFAULT_MAX_BODY_BYTES = 16 * 2**20
PUBLIC_PATHS = frozenset({"/health", "/v1/health"})


@dataclass
class ServerState:
    """What the routes share; `served` and `engine` are None until the model is loaded
    (/health answers 503 until then)."""

    served: ServedModel | None = None
    engine: Engine | None = None
    api_key: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    metrics: Metrics = field(default_factory=Metrics)

    def ready(self) -> tuple[ServedModel, Engine]:
        if self.served is None or self.engine is None:
            raise APIError(503, "the model is still loading; retry when /health answers 200")
        return self.served, self.engine


def create_app(state: ServerState) -> FastAPI:
    from exactserve.server import anthropic, extras, openai_chat, openai_completions, responses

    app = FastAPI(
        title="exactserve",
        description="Deterministic OpenAI- and Anthropic-compatible inference for GGUF models",
        docs_url=None,
        redoc_url=None,
    )
    app.state.server = state
    for module in (openai_chat, openai_completions, responses, anthropic, extras):
        app.include_router(module.router)

    @app.exception_handler(APIError)
    async def _api_error(request: Request, exc: APIError):
        return error_response(request.url.path, exc)

    @app.exception_handler(RequestError)
    async def _request_error(request: Request, exc: RequestError):
        return error_response(request.url.path, APIError.from_request_error(exc))

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException):
        message = exc.detail if isinstance(exc.detail, str) else "request failed"
        if exc.status_code == 404:
            message = f"no route {request.method} {request.url.path}"
        elif exc.status_code == 405:
            message = f"{request.method} is not allowed on {request.url.path}"
        return error_response(request.url.path, APIError(exc.status_code, message))

    @app.exception_handler(EngineStopped)
    async def _stopping(request: Request, exc: EngineStopped):
        message = "the server is shutting down; retry on another replica"
        return error_response(request.url.path, APIError(503, message))

    @app.exception_handler(ClientGone)
    async def _gone(request: Request, exc: ClientGone):
        return Response(status_code=499)  # nobody is listening; the request was cancelled

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception):
        log.exception("unexpected error on %s %s", request.method, request.url.path)
        message = f"internal error ({type(exc).__name__}); the server keeps serving"
        return error_response(request.url.path, APIError(500, message))

    return LimitsMiddleware(app, state)


async def read_json(request: Request) -> dict:
    """The body as a JSON object (400 otherwise); the size limit is the middleware's."""
    return decode_json_object(await request.body())


def server_state(request: Request) -> ServerState:
    return request.app.state.server


async def model_request(request: Request) -> tuple[ServedModel, Engine, dict]:
    """The served model and engine (503 while loading), and the body as a JSON object
    naming this model or none (400, 404 otherwise)."""
    served, engine = server_state(request).ready()
    body = await read_json(request)
    check_model(served, body)
    return served, engine, body


def check_model(served: ServedModel, body: dict) -> None:
    """404 for a `model` this server does not serve (the alias and file name are served)."""
    model = body.get("model")
    if model is not None and not isinstance(model, str):
        raise RequestError("model must be a string", "model")
    if not served.accepts(model):
        raise APIError(
            404,
            f"the model {model!r} is not served here; this server serves {served.name!r} "
            "(GET /v1/models lists it)",
            param="model",
        )


class LimitsMiddleware:
    """API key and body size, before any route runs. The key may come as
    `Authorization: Bearer KEY` (OpenAI) or `x-api-key: KEY` (Anthropic); /health is open.
    A body over the limit gets 413, whether Content-Length says so or the bytes do."""

    def __init__(self, app: FastAPI, state: ServerState) -> None:
        self.app: ASGIApp = app
        self.fastapi = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        path = scope["path"]
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if self.state.api_key and path not in PUBLIC_PATHS and not self._authorized(headers):
            error = APIError(401, "invalid or missing API key: send Authorization: Bearer KEY")
            await error_response(path, error)(scope, receive, send)
            return
        limit = self.state.max_body_bytes
        declared = headers.get("content-length", "")
        if declared.isdigit() and int(declared) > limit:
            await error_response(path, _too_large(limit))(scope, receive, send)
            return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > limit:
                    raise _too_large(limit)  # an APIError: the app answers 413
            return message

        await self.app(scope, limited_receive, send)

    def _authorized(self, headers: dict[str, str]) -> bool:
        key = self.state.api_key
        bearer = headers.get("authorization", "")
        return bearer == f"Bearer {key}" or headers.get("x-api-key") == key

    @property
    def openapi(self):
        return self.fastapi.openapi


def _too_large(limit: int) -> APIError:
    return APIError(413, f"the request body is larger than the server's limit of {limit} bytes")
