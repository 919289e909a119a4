"""`POST /v1/chat/completions` (OpenAI Chat Completions), streaming and not."""

from __future__ import annotations

import json
import logging
import time
import uuid
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, StreamingResponse

from exactserve.server import params
from exactserve.server.app import model_request
from exactserve.server.errors import stream_error_payload
from exactserve.server.generation import (
    CallOut,
    DoneOut,
    LogprobsOut,
    TextOut,
    run_choices,
)
from exactserve.server.render import RenderedChat, render_chat
from exactserve.server.shared import (
    ChoiceResult,
    collect,
    failure_of,
    logprob_entries,
    sse,
    tool_setup,
    toolerr_headers,
    usage_of,
)
from exactserve.toolerr.body import RequestError

router = APIRouter()
log = logging.getLogger("exactserve.server")
PATH = "/v1/chat/completions"


@router.post("/v1/chat/completions")
@router.post("/chat/completions", include_in_schema=False)
async def chat_completions(request: Request):
    served, engine, body = await model_request(request)
    stream = params.boolean(body, "stream", False)
    include_usage = params.boolean(params.obj(body, "stream_options"), "include_usage", False)
    _refuse_response_format(body)
    n = params.choices(body)
    want_logprobs = params.boolean(body, "logprobs", False)
    top = params.top_logprobs(body)
    if top and not want_logprobs:
        raise RequestError("top_logprobs needs logprobs: true", "top_logprobs")
    rendered: RenderedChat = await run_in_threadpool(
        render_chat,
        served,
        "chat",
        body,
        request.headers.get("user-agent", ""),
        continue_final=params.boolean(body, "continue_final_message", False),
        add_generation_prompt=params.boolean(body, "add_generation_prompt", True),
        template_kwargs=params.obj(body, "chat_template_kwargs"),
    )
    max_tokens = params.max_new_tokens(
        body, ("max_completion_tokens", "max_tokens"), len(rendered.ids), served.context_length
    )
    configs = params.generation_configs(
        body,
        served,
        max_tokens,
        n=n,
        stop=params.stop_strings(body, "stop"),
        logprobs=top if want_logprobs else None,
    )
    headers = toolerr_headers(rendered.outcome)
    events = run_choices(
        engine, rendered.ids, configs, served.tokenizer.eog_ids, tool_setup(served, rendered)
    )
    meta = {
        "id": f"chatcmpl-{uuid.uuid4().hex}",
        "created": int(time.time()),
        "model": served.name,
        "system_fingerprint": fingerprint(served),
    }
    if stream:
        chunks = _stream(served, events, meta, n, len(rendered.ids), include_usage)
        return StreamingResponse(sse(chunks), media_type="text/event-stream", headers=headers)
    results = await collect(request, events, n)
    failure = failure_of(results)
    if failure is not None:
        raise failure
    return JSONResponse(
        {
            **meta,
            "object": "chat.completion",
            "choices": [_choice(served, r, want_logprobs) for r in results],
            "usage": usage_of(results, len(rendered.ids)),
        },
        headers=headers,
    )


def fingerprint(served) -> str:
    """Names what decides the bits: the contract's implementation and the backend."""
    return f"exactserve-{served.backend}"


def _refuse_response_format(body: dict) -> None:
    value = body.get("response_format")
    if value is None:
        return
    kind = value.get("type") if isinstance(value, dict) else None
    if kind != "text":
        raise RequestError(
            f"response_format {json.dumps(kind)} is not supported yet (constrained decoding "
            'is not implemented); omit it or use {"type": "text"}',
            "response_format",
        )


def _finish(reason: str) -> str:
    return reason if reason in ("stop", "length", "tool_calls") else "stop"


def _choice(served, result: ChoiceResult, want_logprobs: bool) -> dict:
    message: dict = {"role": "assistant", "content": result.text or None}
    if result.calls:
        message["tool_calls"] = [_call(c) for c in result.calls]
    elif message["content"] is None:
        message["content"] = ""
    logprobs = None
    if want_logprobs:
        logprobs = {"content": logprob_entries(served.tokenizer, result.logprobs)}
    return {
        "index": result.index,
        "message": message,
        "logprobs": logprobs,
        "finish_reason": _finish(result.reason),
    }


def _call(out: CallOut, with_index: bool = False) -> dict:
    entry = {
        "id": out.call_id,
        "type": "function",
        "function": {"name": out.call.name, "arguments": out.call.arguments},
    }
    return {"index": out.call_index, **entry} if with_index else entry


async def _stream(
    served, events, meta: dict, n: int, n_prompt: int, include_usage: bool
) -> AsyncIterator[dict]:
    base = {**meta, "object": "chat.completion.chunk"}

    def chunk(index: int, delta: dict, finish=None, logprobs=None) -> dict:
        choice = {"index": index, "delta": delta, "logprobs": logprobs, "finish_reason": finish}
        return {**base, "choices": [choice]}

    for index in range(n):
        yield chunk(index, {"role": "assistant", "content": ""})
    done: list[DoneOut] = []
    async for event in events:
        if isinstance(event, TextOut):
            yield chunk(event.index, {"content": event.text})
        elif isinstance(event, CallOut):
            yield chunk(event.index, {"tool_calls": [_call(event, with_index=True)]})
        elif isinstance(event, LogprobsOut):
            entries = logprob_entries(served.tokenizer, event.logprobs)
            yield chunk(event.index, {}, logprobs={"content": entries})
        elif isinstance(event, DoneOut):
            if event.reason in ("error", "cancelled"):
                message = event.finished.error or "the server is shutting down"
                yield stream_error_payload(PATH, message)
                return
            done.append(event)
            yield chunk(event.index, {}, finish=_finish(event.reason))
    if include_usage:
        results = [ChoiceResult.from_done(d) for d in done]
        yield {**base, "choices": [], "usage": usage_of(results, n_prompt)}
