"""Errors in the shape of the API a request came through.

Every failure a route can meet becomes an `APIError` (or toolerr's `RequestError`, a 400
naming the field); `error_response` renders it as OpenAI's `{"error": {message, type,
param, code}}` or Anthropic's `{"type": "error", "error": {type, message}}`, chosen by the
request path. No traceback ever reaches a client.
"""

from __future__ import annotations

import json

from starlette.responses import JSONResponse

from exactserve.toolerr.body import RequestError

# Anthropic's error types by HTTP status (docs: errors).
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    503: "overloaded_error",
    529: "overloaded_error",
}

_OPENAI_CODES = {401: "invalid_api_key", 404: "model_not_found", 413: "request_too_large"}


class APIError(Exception):
    """A request that cannot be served, with its HTTP status and, for 400s, the field."""

    def __init__(
        self, status: int, message: str, *, param: str | None = None, code: str | None = None
    ) -> None:
        super().__init__(message)
        self.status, self.message, self.param, self.code = status, message, param, code

    @classmethod
    def from_request_error(cls, exc: RequestError) -> APIError:
        return cls(400, exc.message, param=exc.param)


def is_anthropic_path(path: str) -> bool:
    return path.rstrip("/").startswith(("/v1/messages", "/messages"))


def error_body(path: str, error: APIError) -> dict:
    if is_anthropic_path(path):
        kind = _ANTHROPIC_TYPES.get(error.status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": error.message}}
    kind = "invalid_request_error" if error.status < 500 else "server_error"
    if error.status == 401:
        kind = "authentication_error"
    code = error.code or _OPENAI_CODES.get(error.status)
    return {"error": {"message": error.message, "type": kind, "param": error.param, "code": code}}


def error_response(path: str, error: APIError, headers: dict | None = None) -> JSONResponse:
    return JSONResponse(error_body(path, error), status_code=error.status, headers=headers)


def stream_error_payload(path: str, message: str) -> dict:
    """The error object sent inside an SSE stream that fails after its 200 header."""
    return error_body(path, APIError(500, message))


def decode_json_object(received: bytes) -> dict:
    """A request body as a JSON object, or RequestError saying why it is not one."""
    try:
        body = json.loads(received.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise RequestError(f"the request body is not UTF-8: {exc}") from exc
    except ValueError as exc:
        raise RequestError(f"the request body is not valid JSON: {exc}") from exc
    except RecursionError as exc:
        raise RequestError("the request body is nested too deeply to read") from exc
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    return body
