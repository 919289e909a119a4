"""Anthropic Messages request bodies <-> the internal model.

Internal messages and their origins:
- the top-level `system` (string or text blocks) -> a system message, `("system",)`;
- a message whose content is a string, an assistant message, or an empty block list ->
  one message, `("message", m)`; an assistant's text blocks become its content parts, its
  `tool_use` blocks its calls (origin: block index); other blocks (thinking) stay in the
  body only;
- a user message with blocks -> each `tool_result` block becomes a tool message
  `("block", m, b)` keeping `is_error`, and each run of other blocks (text after the results,
  images) a user message `("run", m, (b, ...))`.
"""

from __future__ import annotations

from typing import Any

from exactserve.toolerr.body import (
    ERROR_KIND,
    Conversation,
    RequestError,
    error_kind,
    flat_tools,
    normalise_content,
    patch_content,
    require_list,
    require_object,
    require_str,
)
from exactserve.toolerr.jsonedit import JsonPath
from exactserve.toolerr.messages import Message, ToolCall

TEXT_TYPES = frozenset({"text"})


def parse(body: dict[str, Any]) -> Conversation:
    """Read a Messages body. Raises RequestError naming the first bad field."""
    if "messages" not in body:
        raise RequestError("messages is required: an array of message objects", "messages")
    layer_paths: list[JsonPath] = []
    messages: list[Message] = []
    if body.get("system") is not None:
        system = normalise_content(body["system"], "system", TEXT_TYPES)
        messages.append(Message(role="system", content=system, origin=("system",)))
    for m, raw in enumerate(require_list(body["messages"], "messages")):
        where = f"messages[{m}]"
        require_object(raw, where)
        role = require_str(raw.get("role"), f"{where}.role")
        content = raw.get("content")
        if isinstance(content, list) and content and role == "user":
            messages.extend(_split_user(content, m, where, layer_paths))
        elif isinstance(content, list) and role == "assistant":
            messages.append(_assistant(content, m, where))
        else:
            content = normalise_content(content, f"{where}.content", TEXT_TYPES)
            messages.append(Message(role=role, content=content, origin=("message", m)))
    tools, tool_paths = flat_tools(body.get("tools"))
    return Conversation(tuple(messages), tools, tuple(layer_paths + tool_paths))


def rebuild(body: dict[str, Any], old: Conversation, new: tuple[Message, ...]) -> dict[str, Any]:
    """`body` with its messages rebuilt from `new`, a rewrite of `old.messages`.

    Surviving blocks keep every field; a message left with no blocks is dropped. A user
    message the layer added right after a tool result becomes a text block after that
    `tool_result` (where Anthropic wants a turn's text), otherwise a new user message.
    Assistant content is never rewritten by the forms, only its calls removed.
    """
    originals = body["messages"]
    before = {m.origin: m for m in old.messages}
    whole: dict[int, dict] = {}
    blocks: dict[int, dict[int, list[dict]]] = {}
    after_message: dict[int, list[dict]] = {}
    for position, message in enumerate(new):
        origin = message.origin
        if origin is None:
            previous = new[position - 1].origin if position else None
            if previous is not None and previous[0] == "block":
                text_block = {"type": "text", "text": message.content}
                blocks[previous[1]][previous[2]].append(text_block)
            else:
                anchor = previous[1] if previous is not None and previous[0] != "system" else -1
                added = {"role": message.role, "content": message.content}
                after_message.setdefault(anchor, []).append(added)
            continue
        if origin[0] == "system":
            continue
        was, m = before[origin], origin[1]
        raw = originals[m]
        if origin[0] == "message":
            whole[m] = _rebuilt_message(raw, was, message)
        elif origin[0] == "block":
            block = raw["content"][origin[2]]
            if message.content != was.content:
                patched = patch_content(block.get("content"), message.content, TEXT_TYPES, "text")
                block = {**block, "content": patched}
            blocks.setdefault(m, {})[origin[2]] = [block]
        else:
            indices = origin[2]
            run = [raw["content"][b] for b in indices]
            if message.content != was.content:
                run = patch_content(run, message.content, TEXT_TYPES, "text")
            slots = blocks.setdefault(m, {})
            for b, block in zip(indices, run, strict=False):
                slots[b] = [block]
            slots[indices[-1]].extend(run[len(indices) :])
    out = list(after_message.get(-1, []))
    for m, raw in enumerate(originals):
        if m in whole:
            out.append(whole[m])
        elif m in blocks:
            content = [block for b in sorted(blocks[m]) for block in blocks[m][b]]
            out.append({**raw, "content": content})
        else:
            continue
        out.extend(after_message.get(m, []))
    return {**body, "messages": out}


def _split_user(content: list, m: int, where: str, layer_paths: list[JsonPath]) -> list[Message]:
    messages: list[Message] = []
    run: list[int] = []

    def flush() -> None:
        if run:
            parts = [content[b] for b in run]
            normalised = normalise_content(parts, f"{where}.content", TEXT_TYPES)
            messages.append(Message(role="user", content=normalised, origin=("run", m, tuple(run))))
            run.clear()

    for b, block in enumerate(content):
        block_where = f"{where}.content[{b}]"
        require_object(block, block_where)
        if block.get("type") != "tool_result":
            run.append(b)
            continue
        flush()
        if ERROR_KIND in block:
            layer_paths.append(("messages", m, "content", b, ERROR_KIND))
        messages.append(
            Message(
                role="tool",
                content=normalise_content(
                    block.get("content"), f"{block_where}.content", TEXT_TYPES
                ),
                tool_call_id=require_str(block.get("tool_use_id"), f"{block_where}.tool_use_id"),
                is_error=block.get("is_error") is True,
                error_kind=error_kind(block, block_where),
                origin=("block", m, b),
            )
        )
    flush()
    return messages


def _assistant(content: list, m: int, where: str) -> Message:
    texts = []
    calls = []
    for b, block in enumerate(content):
        block_where = f"{where}.content[{b}]"
        require_object(block, block_where)
        if block.get("type") == "text":
            text = require_str(block.get("text"), f"{block_where}.text")
            texts.append({"type": "text", "text": text})
        elif block.get("type") == "tool_use":
            arguments = block.get("input", {})
            if not isinstance(arguments, (dict, str)):
                raise RequestError(f"{block_where}.input must be an object", f"{block_where}.input")
            calls.append(
                ToolCall(
                    id=require_str(block.get("id"), f"{block_where}.id"),
                    name=require_str(block.get("name"), f"{block_where}.name"),
                    arguments=arguments,
                    origin=b,
                )
            )
    return Message(
        role="assistant",
        content=tuple(texts) if texts else None,
        tool_calls=tuple(calls),
        origin=("message", m),
    )


def _rebuilt_message(raw: dict, was: Message, message: Message) -> dict:
    if message == was:
        return raw
    raw = dict(raw)
    if message.content != was.content:
        raw["content"] = patch_content(raw.get("content"), message.content, TEXT_TYPES, "text")
    if message.tool_calls != was.tool_calls:
        removed = {c.origin for c in was.tool_calls} - {c.origin for c in message.tool_calls}
        raw["content"] = [block for b, block in enumerate(raw["content"]) if b not in removed]
    return raw
