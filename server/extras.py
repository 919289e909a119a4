"""The endpoints around generation: `GET /v1/models`, `GET /health`, `GET /metrics`, and
llama-server's `POST /tokenize`, `POST /detokenize` and `POST /apply-template`.

`/tokenize` with `messages` (and `/apply-template`) go through the chat-rendering path
generation uses (server/render), so their ids and text are what the model reads.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, Response

from exactserve.server import params
from exactserve.server.app import read_json, server_state
from exactserve.server.metrics import CONTENT_TYPE
from exactserve.server.render import render_chat
from exactserve.server.shared import token_text
from exactserve.toolerr.body import RequestError

router = APIRouter()


@router.get("/health")
@router.get("/v1/health", include_in_schema=False)
async def health(request: Request):
    state = server_state(request)
    if state.served is None or state.engine is None:
        return JSONResponse({"status": "loading"}, status_code=503)
    if not state.engine.is_running:
        return JSONResponse({"status": "stopped"}, status_code=503)
    return {"status": "ok"}


@router.get("/v1/models")
@router.get("/models", include_in_schema=False)
async def models(request: Request):
    served, _ = server_state(request).ready()
    entry = {
        "id": served.name,
        "object": "model",
        "created": served.created,
        "owned_by": "exactserve",
        "meta": {"n_ctx": served.context_length, "n_vocab": served.n_vocab},
    }
    return {"object": "list", "data": [entry]}


@router.get("/metrics")
async def metrics(request: Request):
    return Response(server_state(request).metrics.render(), media_type=CONTENT_TYPE)


@router.post("/tokenize")
async def tokenize(request: Request):
    """{"content": text, "add_special": bool, "parse_special": bool, "with_pieces": bool}
    or {"messages": [...]} (rendered as a chat) -> {"tokens": [...]}."""
    served, _ = server_state(request).ready()
    body = await read_json(request)
    with_pieces = params.boolean(body, "with_pieces", False)
    if body.get("messages") is not None:
        rendered = await run_in_threadpool(
            render_chat, served, "chat", body, request.headers.get("user-agent", "")
        )
        ids = rendered.ids
    else:
        content = params.string_field(body, "content")
        if content is None:
            raise RequestError("content is required: the text to tokenize", "content")
        add_special = params.boolean(body, "add_special", False)
        parse_special = params.boolean(body, "parse_special", True)
        ids = await run_in_threadpool(
            served.tokenizer.encode,
            content,
            add_special=add_special,
            parse_special=parse_special,
        )
    if not with_pieces:
        return {"tokens": ids}
    return {"tokens": [{"id": t, "piece": token_text(served.tokenizer, t)[0]} for t in ids]}


@router.post("/detokenize")
async def detokenize(request: Request):
    served, _ = server_state(request).ready()
    body = await read_json(request)
    tokens = body.get("tokens")
    if not isinstance(tokens, list) or not all(
        isinstance(t, int) and not isinstance(t, bool) for t in tokens
    ):
        raise RequestError("tokens must be an array of token ids", "tokens")
    bad = [t for t in tokens if not 0 <= t < served.n_vocab]
    if bad:
        raise RequestError(
            f"token id {bad[0]} is outside this model's vocabulary (0..{served.n_vocab - 1})",
            "tokens",
        )
    return {"content": served.tokenizer.decode(tokens)}


@router.post("/apply-template")
async def apply_template(request: Request):
    """llama-server's shape: {"messages": [...]} -> {"prompt": rendered text}."""
    served, _ = server_state(request).ready()
    body = await read_json(request)
    if body.get("messages") is None:
        raise RequestError("messages is required", "messages")
    rendered = await run_in_threadpool(
        render_chat, served, "chat", body, request.headers.get("user-agent", "")
    )
    return {"prompt": rendered.text}
