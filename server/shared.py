"""Pieces every API surface uses: collecting a non-streamed result, usage, logprob entries,
SSE framing, the tool-error header and log line."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

from starlette.requests import Request

from exactserve.runtime.generate import TokenLogprob
from exactserve.server.engine import Finished
from exactserve.server.errors import APIError
from exactserve.server.generation import (
    CallOut,
    DoneOut,
    LogprobsOut,
    Out,
    TextOut,
    ToolSetup,
)
from exactserve.server.render import RenderedChat
from exactserve.toolerr.report import HEADER, log_line
from exactserve.toolerr.request import Outcome

log = logging.getLogger("exactserve.toolerr")


@dataclass
class ChoiceResult:
    """One choice, collected: its text, calls, logprobs and how it ended."""

    index: int
    text: str = ""
    calls: list[CallOut] = field(default_factory=list)
    logprobs: list[TokenLogprob] = field(default_factory=list)
    reason: str = "stop"
    finished: Finished | None = None

    @classmethod
    def from_done(cls, done: DoneOut) -> ChoiceResult:
        return cls(done.index, reason=done.reason, finished=done.finished)


async def collect(request: Request, events: AsyncIterator[Out], n: int) -> list[ChoiceResult]:
    """Every choice's whole result, for a non-streamed response. If the client disconnects
    first, the generation is cancelled (its KV blocks return to the pool) and ClientGone
    is raised."""
    gathering = asyncio.ensure_future(_gather(events, n))
    watching = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({gathering, watching}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watching.cancel()
        if not gathering.done():
            gathering.cancel()
            await asyncio.gather(gathering, return_exceptions=True)
    if gathering.cancelled():
        raise ClientGone
    return gathering.result()


class ClientGone(Exception):
    """The client disconnected before its non-streamed response was ready."""


async def _gather(events: AsyncIterator[Out], n: int) -> list[ChoiceResult]:
    results = [ChoiceResult(i) for i in range(n)]
    try:
        async for event in events:
            result = results[event.index]
            if isinstance(event, TextOut):
                result.text += event.text
            elif isinstance(event, CallOut):
                result.calls.append(event)
            elif isinstance(event, LogprobsOut):
                result.logprobs.extend(event.logprobs)
            elif isinstance(event, DoneOut):
                result.reason, result.finished = event.reason, event.finished
    finally:
        await events.aclose()  # cancels what is still running
    return results


async def _disconnected(request: Request) -> None:
    """Returns when the client has gone (the request body was read before)."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


def failure_of(results: list[ChoiceResult]) -> APIError | None:
    """The error to answer with when a choice failed (500) or was cut by shutdown (503)."""
    for result in results:
        if result.reason == "error":
            detail = result.finished.error if result.finished else "unknown"
            return APIError(500, f"generation failed: {detail}; the server keeps serving")
        if result.reason == "cancelled":
            return APIError(503, "the server is shutting down; retry on another replica")
    return None


def usage_of(results: list[ChoiceResult], n_prompt: int) -> dict:
    generated = sum(r.finished.num_generated for r in results if r.finished)
    cached = results[0].finished.num_cached_tokens if results and results[0].finished else 0
    return {
        "prompt_tokens": n_prompt,
        "completion_tokens": generated,
        "total_tokens": n_prompt + generated,
        "prompt_tokens_details": {"cached_tokens": cached},
    }


def token_text(tokenizer, token_id: int) -> tuple[str, list[int]]:
    """A token's text (its bytes as UTF-8, a partial character replaced) and bytes."""
    piece = tokenizer.token_to_piece(token_id)
    return piece.decode("utf-8", errors="replace"), list(piece)


NEGLIGIBLE_LOGPROB = -9999.0  # OpenAI's stand-in for -inf, which JSON cannot carry


def json_logprob(value: float | None) -> float | None:
    """A logprob as JSON carries it: the contract's float32 value exactly (shortest
    round-trip decimal), -inf (a row whose logits span more than float32's range) as
    -9999.0."""
    if value is None:
        return None
    return NEGLIGIBLE_LOGPROB if value == float("-inf") else value


def logprob_entries(tokenizer, logprobs) -> list[dict]:
    """OpenAI's `logprobs.content` entries (docs/SAMPLING.md, log-probabilities)."""
    entries = []
    for lp in logprobs:
        text, raw = token_text(tokenizer, lp.token_id)
        top = []
        for token_id, value in lp.top:
            t_text, t_raw = token_text(tokenizer, token_id)
            top.append({"token": t_text, "logprob": json_logprob(value), "bytes": t_raw})
        entry = {"token": text, "logprob": json_logprob(lp.logprob), "bytes": raw}
        entries.append({**entry, "top_logprobs": top})
    return entries


async def sse(payloads: AsyncIterator[dict], done_marker: bool = True) -> AsyncIterator[bytes]:
    """OpenAI-style server-sent events: `data: JSON` per payload, then `data: [DONE]`."""
    async for payload in payloads:
        yield f"data: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()
    if done_marker:
        yield b"data: [DONE]\n\n"


async def named_sse(events: AsyncIterator[tuple[str, dict]]) -> AsyncIterator[bytes]:
    """Anthropic/Responses-style events: `event: NAME` and `data: JSON`."""
    async for name, payload in events:
        yield f"event: {name}\ndata: {json.dumps(payload, ensure_ascii=False)}\n\n".encode()


def toolerr_headers(outcome: Outcome) -> dict[str, str]:
    """The X-Tool-Errors header for a chat-style response, logged once as docs/TOOLERR.md
    specifies for the proxy."""
    value = outcome.header
    log.info(log_line(value))
    return {HEADER: value}


def tool_setup(served, rendered: RenderedChat) -> ToolSetup | None:
    if not rendered.tool_names or rendered.tool_choice.mode == "none":
        return None
    return ToolSetup(served.tool_format, rendered.tool_names, rendered.prefix)
