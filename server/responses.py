"""`POST /v1/responses` (OpenAI Responses): `input` as a string or items (messages,
`function_call`, `function_call_output`), `instructions`, function tools; non-streaming,
and streaming with the Responses event sequence (response.created, output items, text and
function-call argument deltas, response.completed). Stateless: `previous_response_id` is
refused (send the whole conversation)."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from starlette.concurrency import run_in_threadpool
from starlette.responses import JSONResponse, StreamingResponse

from exactserve.server import params
from exactserve.server.app import model_request
from exactserve.server.errors import APIError, error_body
from exactserve.server.generation import CallOut, DoneOut, TextOut, run_choices
from exactserve.server.render import render_chat
from exactserve.server.shared import collect, failure_of, named_sse, tool_setup, toolerr_headers
from exactserve.toolerr.body import RequestError

router = APIRouter()
PATH = "/v1/responses"


@router.post("/v1/responses")
@router.post("/responses", include_in_schema=False)
async def create_response(request: Request):
    served, engine, body = await model_request(request)
    if body.get("previous_response_id") is not None:
        raise RequestError(
            "previous_response_id is not supported: this server keeps no conversation state; "
            "send the whole conversation in input",
            "previous_response_id",
        )
    params.require_fields(body, "input")
    text_format = params.obj(params.obj(body, "text"), "format")
    if text_format and text_format.get("type") != "text":
        raise RequestError("text.format other than text is not supported yet", "text.format")
    rendered = await run_in_threadpool(
        render_chat, served, "responses", body, request.headers.get("user-agent", "")
    )
    max_tokens = params.max_new_tokens(
        body, ("max_output_tokens",), len(rendered.ids), served.context_length
    )
    configs = params.generation_configs(body, served, max_tokens)
    headers = toolerr_headers(rendered.outcome)
    events = run_choices(
        engine, rendered.ids, configs, served.tokenizer.eog_ids, tool_setup(served, rendered)
    )
    base = {
        "id": f"resp_{uuid.uuid4().hex}",
        "object": "response",
        "created_at": int(time.time()),
        "model": served.name,
        "instructions": body.get("instructions"),
        "tools": body.get("tools") or [],
        "tool_choice": body.get("tool_choice") or "auto",
        "parallel_tool_calls": True,
        "temperature": body.get("temperature"),
        "top_p": body.get("top_p"),
        "max_output_tokens": body.get("max_output_tokens"),
        "previous_response_id": None,
        "text": {"format": {"type": "text"}},
        "truncation": "disabled",
        "metadata": body.get("metadata") or {},
        "error": None,
        "incomplete_details": None,
    }
    if params.boolean(body, "stream", False):
        stream = _stream(base, events, len(rendered.ids))
        return StreamingResponse(named_sse(stream), media_type="text/event-stream", headers=headers)
    (result,) = await collect(request, events, 1)
    failure = failure_of([result])
    if failure is not None:
        raise failure
    output = []
    if result.text:
        output.append(_message_item(_item_id("msg", base), result.text, "completed"))
    output += [_call_item(call, "completed") for call in result.calls]
    f = result.finished
    return JSONResponse(_final(base, output, result.reason, f), headers=headers)


def _item_id(kind: str, base: dict, index: int = 0) -> str:
    return f"{kind}_{base['id'][5:]}{index:02d}"


def _message_item(item_id: str, text: str, status: str) -> dict:
    part = {"type": "output_text", "text": text, "annotations": []}
    return {
        "type": "message",
        "id": item_id,
        "status": status,
        "role": "assistant",
        "content": [part] if status == "completed" else [],
    }


def _call_item(call: CallOut, status: str) -> dict:
    return {
        "type": "function_call",
        "id": f"fc_{call.call_id[5:]}",
        "call_id": call.call_id,
        "name": call.call.name,
        "arguments": call.call.arguments if status == "completed" else "",
        "status": status,
    }


def _final(base: dict, output: list, reason: str, f) -> dict:
    incomplete = reason == "length"
    return {
        **base,
        "status": "incomplete" if incomplete else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if incomplete else None,
        "output": output,
        "usage": {
            "input_tokens": f.num_prompt_tokens,
            "input_tokens_details": {"cached_tokens": f.num_cached_tokens},
            "output_tokens": f.num_generated,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": f.num_prompt_tokens + f.num_generated,
        },
    }


async def _stream(base: dict, events, n_prompt: int) -> AsyncIterator[tuple[str, dict]]:
    sequence = 0

    def event(kind: str, **fields) -> tuple[str, dict]:
        nonlocal sequence
        sequence += 1
        return kind, {"type": kind, "sequence_number": sequence - 1, **fields}

    pending = {**base, "status": "in_progress", "output": [], "usage": None}
    yield event("response.created", response=pending)
    yield event("response.in_progress", response=pending)
    output: list[dict] = []
    text, text_index = None, None
    msg_id = _item_id("msg", base)

    def close_text():
        item = _message_item(msg_id, text, "completed")
        output[text_index] = item
        part = item["content"][0]
        where = {"item_id": msg_id, "output_index": text_index, "content_index": 0}
        return [
            event("response.output_text.done", **where, text=text, logprobs=[]),
            event("response.content_part.done", **where, part=part),
            event("response.output_item.done", output_index=text_index, item=item),
        ]

    async for out in events:
        if isinstance(out, TextOut):
            if text is None:
                text, text_index = "", len(output)
                output.append(_message_item(msg_id, "", "in_progress"))
                yield event("response.output_item.added", output_index=text_index, item=output[-1])
                part = {"type": "output_text", "text": "", "annotations": []}
                where = {"item_id": msg_id, "output_index": text_index, "content_index": 0}
                yield event("response.content_part.added", **where, part=part)
            text += out.text
            where = {"item_id": msg_id, "output_index": text_index, "content_index": 0}
            yield event("response.output_text.delta", **where, delta=out.text, logprobs=[])
        elif isinstance(out, CallOut):
            index = len(output)
            item = _call_item(out, "in_progress")
            output.append(item)
            yield event("response.output_item.added", output_index=index, item=item)
            where = {"item_id": item["id"], "output_index": index}
            arguments = out.call.arguments
            yield event("response.function_call_arguments.delta", **where, delta=arguments)
            yield event("response.function_call_arguments.done", **where, arguments=arguments)
            output[index] = _call_item(out, "completed")
            yield event("response.output_item.done", output_index=index, item=output[index])
        elif isinstance(out, DoneOut):
            if out.reason in ("error", "cancelled"):
                message = out.finished.error or "the server is shutting down"
                yield "error", error_body(PATH, APIError(500, message))
                return
            if text is not None:
                for closing in close_text():
                    yield closing
            final = _final(base, output, out.reason, out.finished)
            kind = "response.incomplete" if final["status"] == "incomplete" else None
            yield event(kind or "response.completed", response=final)
    del n_prompt
