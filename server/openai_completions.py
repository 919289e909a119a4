"""`POST /v1/completions` (OpenAI legacy Completions): a prompt string, an array of token
ids, or an array of either (one choice set per prompt); `echo`; `logprobs` (0..20: the
chosen token's logprob and that many alternatives, as `top_logprobs` dicts)."""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse, StreamingResponse

from exactserve.runtime.generate import TokenLogprob
from exactserve.server import params
from exactserve.server.app import model_request
from exactserve.server.errors import stream_error_payload
from exactserve.server.generation import DoneOut, LogprobsOut, TextOut, run_choices
from exactserve.server.openai_chat import fingerprint
from exactserve.server.shared import (
    ChoiceResult,
    collect,
    failure_of,
    json_logprob,
    sse,
    token_text,
    usage_of,
)
from exactserve.toolerr.body import RequestError

router = APIRouter()
PATH = "/v1/completions"
MAX_PROMPTS = 16


@router.post("/v1/completions")
@router.post("/completions", include_in_schema=False)
async def completions(request: Request):
    served, engine, body = await model_request(request)
    prompts = _prompts(body, served)
    stream = params.boolean(body, "stream", False)
    echo = params.boolean(body, "echo", False)
    n = params.choices(body)
    top = params.integer(body, "logprobs", None, 0, 20)
    if stream and echo:
        raise RequestError("echo is not supported with stream", "echo")
    if stream and len(prompts) > 1:
        raise RequestError("stream takes one prompt per request", "prompt")
    stop = params.stop_strings(body, "stop")
    meta = {"id": f"cmpl-{uuid.uuid4().hex}", "created": int(time.time()), "model": served.name}
    meta["system_fingerprint"] = fingerprint(served)
    all_choices, usage = [], {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    for p, ids in enumerate(prompts):
        max_tokens = params.max_new_tokens(
            body, ("max_tokens",), len(ids), served.context_length, minimum=0
        )
        if "max_tokens" not in body:
            max_tokens = min(max_tokens, 16)  # OpenAI's default for this endpoint
        configs = params.generation_configs(body, served, max_tokens, n=n, stop=stop, logprobs=top)
        events = run_choices(
            engine,
            ids,
            configs,
            served.tokenizer.eog_ids,
            prompt_logprobs=echo and top is not None,
        )
        if stream:
            include_usage = params.boolean(
                params.obj(body, "stream_options"), "include_usage", False
            )
            chunks = _stream(events, meta, served, top, len(ids) if include_usage else None)
            return StreamingResponse(sse(chunks), media_type="text/event-stream")
        results = await collect(request, events, n)
        failure = failure_of(results)
        if failure is not None:
            raise failure
        for r in results:
            all_choices.append(_choice(served, r, p * n + r.index, ids, echo, top))
        for key, value in usage_of(results, len(ids)).items():
            if key in usage:
                usage[key] += value
    return JSONResponse(
        {**meta, "object": "text_completion", "choices": all_choices, "usage": usage}
    )


def _prompts(body: dict, served) -> list[list[int]]:
    if "prompt" not in body or body["prompt"] is None:
        raise RequestError("prompt is required: a string or an array of token ids", "prompt")
    value = body["prompt"]
    items = [value] if isinstance(value, str) or _is_ids(value) else value
    if not isinstance(items, list) or not items:
        raise RequestError("prompt must be a string, an array of token ids, or an array of those")
    if len(items) > MAX_PROMPTS:
        raise RequestError(f"at most {MAX_PROMPTS} prompts per request", "prompt")
    prompts = []
    for item in items:
        if isinstance(item, str):
            prompts.append(served.tokenizer.encode(item, add_special=True, parse_special=False))
        elif _is_ids(item):
            bad = [t for t in item if not 0 <= t < served.n_vocab]
            if bad:
                raise RequestError(
                    f"prompt holds token id {bad[0]}, outside this model's vocabulary "
                    f"(0..{served.n_vocab - 1})",
                    "prompt",
                )
            prompts.append(list(item))
        else:
            raise RequestError(
                "prompt must be a string, an array of token ids, or an array of those", "prompt"
            )
        if not prompts[-1]:
            raise RequestError("the prompt is empty", "prompt")
    return prompts


def _is_ids(value) -> bool:
    return (
        isinstance(value, list)
        and bool(value)
        and all(isinstance(t, int) and not isinstance(t, bool) for t in value)
    )


def _legacy_logprobs(served, entries, offset: int) -> dict:
    """OpenAI's legacy shape: parallel lists of tokens, logprobs, top dicts, offsets."""
    tokens, values, tops, offsets = [], [], [], []
    for entry in entries:
        text = token_text(served.tokenizer, entry.token_id)[0]
        tokens.append(text)
        values.append(json_logprob(entry.logprob))
        tops.append(
            {token_text(served.tokenizer, t)[0]: json_logprob(v) for t, v in entry.top}
            if entry.logprob is not None
            else None
        )
        offsets.append(offset)
        offset += len(text)
    return {
        "tokens": tokens,
        "token_logprobs": values,
        "top_logprobs": tops,
        "text_offset": offsets,
    }


def _choice(served, r: ChoiceResult, index: int, ids: list[int], echo: bool, top) -> dict:
    prefix = served.tokenizer.decode(ids, skip_special=False) if echo else ""
    logprobs = None
    if top is not None:
        entries = list(r.logprobs)
        if echo:  # the first prompt token has no context, hence no logprob
            prompt = list(r.finished.prompt_logprobs or ())
            entries = [TokenLogprob(ids[0], None), *prompt[1:]] + entries
        logprobs = _legacy_logprobs(served, entries, 0)
    return {
        "index": index,
        "text": prefix + r.text,
        "logprobs": logprobs,
        "finish_reason": r.reason if r.reason in ("stop", "length") else "stop",
    }


async def _stream(events, meta: dict, served, top, n_prompt: int | None) -> AsyncIterator[dict]:
    """Chunks of text (and legacy logprobs), a final chunk per choice, then the usage when
    `n_prompt` is given (stream_options.include_usage)."""
    base = {**meta, "object": "text_completion"}
    done = []
    async for event in events:
        if isinstance(event, TextOut):
            yield {**base, "choices": [_chunk(event.index, event.text)]}
        elif isinstance(event, LogprobsOut) and top is not None:
            lp = _legacy_logprobs(served, event.logprobs, 0)
            yield {**base, "choices": [_chunk(event.index, "", logprobs=lp)]}
        elif isinstance(event, DoneOut):
            if event.reason in ("error", "cancelled"):
                yield stream_error_payload(PATH, event.finished.error or "the server stopped")
                return
            finish = event.reason if event.reason in ("stop", "length") else "stop"
            done.append(ChoiceResult.from_done(event))
            yield {**base, "choices": [_chunk(event.index, "", finish=finish)]}
    if n_prompt is not None:
        yield {**base, "choices": [], "usage": usage_of(done, n_prompt)}


def _chunk(index: int, text: str, finish=None, logprobs=None) -> dict:
    return {"index": index, "text": text, "logprobs": logprobs, "finish_reason": finish}
