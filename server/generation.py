"""From engine events to what every API surface reports: text, tool calls, logprobs and a
final outcome per choice, in the order they happened.

`run_choices` submits one engine request per choice (choice i samples with seed + i) and
merges their events; each choice's text goes through the tool-call parser when the request
offered tools, so a call is reported once it is complete and text that does not parse as a
call stays text (server/tools). The surfaces (openai_chat, anthropic, responses,
completions) only reshape these events.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from exactserve.runtime.generate import GenerationConfig, TokenLogprob
from exactserve.server.engine import Delta, Engine, Finished, RequestHandle
from exactserve.server.tools import CallEvent, ParsedCall, ToolCallParser, ToolFormat, call_id


@dataclass(frozen=True)
class TextOut:
    index: int
    text: str


@dataclass(frozen=True)
class CallOut:
    index: int
    call_index: int
    call_id: str
    call: ParsedCall


@dataclass(frozen=True)
class LogprobsOut:
    index: int
    logprobs: tuple[TokenLogprob, ...]


@dataclass(frozen=True)
class DoneOut:
    """`reason`: "stop", "length", "tool_calls", "cancelled" or "error"."""

    index: int
    reason: str
    finished: Finished
    num_calls: int


Out = TextOut | CallOut | LogprobsOut | DoneOut


@dataclass(frozen=True)
class ToolSetup:
    """What the tool-call parser needs: the format, the offered names and the forced prefix
    (run_choices gets None when no tools were offered or the choice is "none")."""

    family: ToolFormat
    names: frozenset[str]
    prefix: str


def request_key(prompt: Sequence[int], configs: Sequence[GenerationConfig]) -> str:
    """A stable name for a request's content (prompt and settings), used for tool-call ids
    so that a replayed request gets the same ids."""
    digest = hashlib.sha256()
    digest.update(",".join(map(str, prompt)).encode())
    digest.update(repr([c.sampling.seed for c in configs]).encode())
    return digest.hexdigest()[:32]


async def run_choices(
    engine: Engine,
    prompt: list[int],
    configs: Sequence[GenerationConfig],
    eog_ids: frozenset[int],
    tools: ToolSetup | None = None,
    *,
    prompt_logprobs: bool = False,
) -> AsyncIterator[Out]:
    """Events of every choice, merged as they come. Leaving the iteration early (client
    gone) cancels every choice still running; their KV blocks return to the pool."""
    handles = [engine.submit(prompt, c, prompt_logprobs=prompt_logprobs) for c in configs]
    merged: asyncio.Queue[Out | None] = asyncio.Queue()
    key = request_key(prompt, configs)

    async def pump(index: int, handle: RequestHandle, config: GenerationConfig) -> None:
        parser = ToolCallParser(tools.family, tools.names, tools.prefix) if tools else None
        n_calls = 0

        async def emit_text(pieces) -> None:
            nonlocal n_calls
            for piece in pieces:
                if isinstance(piece, CallEvent):
                    await merged.put(CallOut(index, n_calls, call_id(key, n_calls), piece.call))
                    n_calls += 1
                elif piece.text:
                    await merged.put(TextOut(index, piece.text))

        async for event in handle:
            if isinstance(event, Delta):
                if event.logprobs:
                    shown = tuple(lp for lp in event.logprobs if lp.token_id not in eog_ids)
                    if shown:
                        await merged.put(LogprobsOut(index, shown))
                if event.text:
                    if parser is None:
                        await merged.put(TextOut(index, event.text))
                    else:
                        await emit_text(parser.feed(event.text))
            else:
                if parser is not None:
                    await emit_text(parser.finish())
                reason = event.finish_reason
                if n_calls and reason == "stop":
                    reason = "tool_calls"
                await merged.put(DoneOut(index, reason, event, n_calls))
        await merged.put(None)

    tasks = [
        asyncio.create_task(pump(i, h, c))
        for i, (h, c) in enumerate(zip(handles, configs, strict=True))
    ]
    try:
        remaining = len(tasks)
        while remaining:
            item = await merged.get()
            if item is None:
                remaining -= 1
            else:
                yield item
    finally:
        for handle in handles:
            handle.cancel()
        for task in tasks:
            task.cancel()
