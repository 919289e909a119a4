"""`POST /v1/messages` and `POST /v1/messages/count_tokens` (Anthropic Messages).

A final assistant message is continued (Anthropic's prefill). Streaming follows
Anthropic's event sequence: message_start, then per content block content_block_start /
content_block_delta (text_delta, or input_json_delta for a tool_use) / content_block_stop,
then message_delta (stop_reason, usage) and message_stop.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, StreamingResponse

from exactserve.server import params
from exactserve.server.app import check_model, read_json, server_state
from exactserve.server.errors import APIError, error_body
from exactserve.server.generation import CallOut, DoneOut, TextOut, run_choices
from exactserve.server.render import render_chat
from exactserve.server.shared import collect, failure_of, named_sse, tool_setup, toolerr_headers

router = APIRouter()
PATH = "/v1/messages"


def _stop_reason(done_reason: str, stop_string: str | None) -> str:
    if done_reason == "tool_calls":
        return "tool_use"
    if done_reason == "length":
        return "max_tokens"
    return "stop_sequence" if stop_string else "end_turn"


async def _render(request: Request, body: dict):
    served, _ = server_state(request).ready()
    check_model(served, body)
    messages = body.get("messages")
    final_is_assistant = (
        isinstance(messages, list)
        and bool(messages)
        and isinstance(messages[-1], dict)
        and messages[-1].get("role") == "assistant"
    )
    return await run_in_threadpool(
        render_chat,
        served,
        "messages",
        body,
        request.headers.get("user-agent", ""),
        continue_final=final_is_assistant,
    )


@router.post("/v1/messages/count_tokens")
@router.post("/messages/count_tokens", include_in_schema=False)
async def count_tokens(request: Request):
    body = await read_json(request)
    rendered = await _render(request, body)
    headers = toolerr_headers(rendered.outcome)
    return JSONResponse({"input_tokens": len(rendered.ids)}, headers=headers)


@router.post("/v1/messages")
@router.post("/messages", include_in_schema=False)
async def messages(request: Request):
    served, engine = server_state(request).ready()
    body = await read_json(request)
    params.require_fields(body, "max_tokens", "messages")
    rendered = await _render(request, body)
    max_tokens = params.max_new_tokens(
        body, ("max_tokens",), len(rendered.ids), served.context_length
    )
    configs = params.generation_configs(
        body, served, max_tokens, stop=params.stop_strings(body, "stop_sequences")
    )
    headers = toolerr_headers(rendered.outcome)
    events = run_choices(
        engine, rendered.ids, configs, served.tokenizer.eog_ids, tool_setup(served, rendered)
    )
    message_id = f"msg_{uuid.uuid4().hex}"
    if params.boolean(body, "stream", False):
        stream = _stream(served.name, message_id, events, len(rendered.ids))
        return StreamingResponse(named_sse(stream), media_type="text/event-stream", headers=headers)
    (result,) = await collect(request, events, 1)
    failure = failure_of([result])
    if failure is not None:
        raise failure
    content: list[dict] = []
    if result.text:
        content.append({"type": "text", "text": result.text})
    for call in result.calls:
        content.append(
            {
                "type": "tool_use",
                "id": call.call_id,
                "name": call.call.name,
                "input": json.loads(call.call.arguments),
            }
        )
    finished = result.finished
    return JSONResponse(
        {
            "id": message_id,
            "type": "message",
            "role": "assistant",
            "model": served.name,
            "content": content,
            "stop_reason": _stop_reason(result.reason, finished.stop_string),
            "stop_sequence": finished.stop_string,
            "usage": _usage(len(rendered.ids), finished.num_generated, finished.num_cached_tokens),
        },
        headers=headers,
    )


def _usage(n_prompt: int, n_out: int, n_cached: int) -> dict:
    return {
        "input_tokens": n_prompt - n_cached,
        "output_tokens": n_out,
        "cache_creation_input_tokens": 0,
        "cache_read_input_tokens": n_cached,
    }


async def _stream(model: str, message_id: str, events, n_prompt: int) -> AsyncIterator:
    start = {
        "id": message_id,
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage(n_prompt, 0, 0),
    }
    yield "message_start", {"type": "message_start", "message": start}
    block = -1
    text_open = False
    async for event in events:
        if isinstance(event, TextOut):
            if not text_open:
                block += 1
                text_open = True
                yield (
                    "content_block_start",
                    {
                        "type": "content_block_start",
                        "index": block,
                        "content_block": {"type": "text", "text": ""},
                    },
                )
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": block,
                    "delta": {"type": "text_delta", "text": event.text},
                },
            )
        elif isinstance(event, CallOut):
            if text_open:
                yield "content_block_stop", {"type": "content_block_stop", "index": block}
                text_open = False
            block += 1
            yield (
                "content_block_start",
                {
                    "type": "content_block_start",
                    "index": block,
                    "content_block": {
                        "type": "tool_use",
                        "id": event.call_id,
                        "name": event.call.name,
                        "input": {},
                    },
                },
            )
            yield (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": block,
                    "delta": {"type": "input_json_delta", "partial_json": event.call.arguments},
                },
            )
            yield "content_block_stop", {"type": "content_block_stop", "index": block}
        elif isinstance(event, DoneOut):
            if event.reason in ("error", "cancelled"):
                message = event.finished.error or "the server is shutting down"
                yield "error", error_body(PATH, APIError(500, message))
                return
            if text_open:
                yield "content_block_stop", {"type": "content_block_stop", "index": block}
            f = event.finished
            yield (
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": {
                        "stop_reason": _stop_reason(event.reason, f.stop_string),
                        "stop_sequence": f.stop_string,
                    },
                    "usage": {"output_tokens": f.num_generated},
                },
            )
            yield "message_stop", {"type": "message_stop"}
