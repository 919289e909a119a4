"""OpenAI Responses request bodies <-> the internal model.

Internal messages and their origins:
- `instructions` (a string) -> a system message, `("instructions",)`;
- `input` as a string -> one user message, `("input",)`;
- a message item (`type: "message"`, or no type and a `role`) -> a message `("item", k)`;
- a `function_call_output` item -> a tool message `("item", k)`;
- an assistant message item and the `function_call` items that follow it (or consecutive
  `function_call` items alone) -> one assistant message `("items", (k, ...))`, with the
  `reasoning` items just before them, which belong to the same output; a call's origin is
  its item index.
Other item types stay in the body untouched and have no internal message.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from exactserve.toolerr.body import (
    ERROR_KIND,
    Conversation,
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

TEXT_TYPES = frozenset({"input_text", "output_text", "text"})


def parse(body: dict[str, Any]) -> Conversation:
    """Read a Responses body. Raises RequestError naming the first bad field."""
    messages: list[Message] = []
    layer_paths: list[JsonPath] = []
    if isinstance(body.get("instructions"), str):
        messages.append(Message("system", body["instructions"], origin=("instructions",)))
    items = body.get("input")
    if isinstance(items, str):
        messages.append(Message("user", items, origin=("input",)))
    elif items is not None:
        _read_items(require_list(items, "input"), messages, layer_paths)
    tools, tool_paths = flat_tools(body.get("tools"))
    return Conversation(tuple(messages), tools, tuple(layer_paths + tool_paths))


def _read_items(items: list, messages: list[Message], layer_paths: list[JsonPath]) -> None:
    group: int | None = None  # index of the assistant message still taking items
    reasoning: list[int] = []
    for k, item in enumerate(items):
        where = f"input[{k}]"
        require_object(item, where)
        kind, role = item.get("type"), item.get("role")
        if kind == "reasoning":
            reasoning.append(k)
        elif kind == "function_call":
            call = ToolCall(
                id=require_str(item.get("call_id"), f"{where}.call_id"),
                name=require_str(item.get("name"), f"{where}.name"),
                arguments=require_str(item.get("arguments", ""), f"{where}.arguments"),
                origin=k,
            )
            if group is None:
                messages.append(Message("assistant", None, origin=("items", ())))
                group = len(messages) - 1
            owner = messages[group]
            owned = owner.origin[1] + tuple(reasoning) + (k,)
            messages[group] = replace(
                owner, tool_calls=owner.tool_calls + (call,), origin=("items", owned)
            )
            reasoning = []
        elif kind == "message" or (kind is None and role is not None):
            role = require_str(role, f"{where}.role")
            content = normalise_content(item.get("content"), f"{where}.content", TEXT_TYPES)
            if role == "assistant":
                origin = ("items", tuple(reasoning) + (k,))
                messages.append(Message("assistant", content, origin=origin))
                group = len(messages) - 1
            else:
                messages.append(Message(role, content, origin=("item", k)))
                group = None
            reasoning = []
        elif kind == "function_call_output":
            if ERROR_KIND in item:
                layer_paths.append(("input", k, ERROR_KIND))
            messages.append(
                Message(
                    role="tool",
                    content=normalise_content(item.get("output"), f"{where}.output", TEXT_TYPES),
                    tool_call_id=require_str(item.get("call_id"), f"{where}.call_id"),
                    is_error=item.get("is_error") is True,
                    error_kind=error_kind(item, where),
                    origin=("item", k),
                )
            )
            group = None
            reasoning = []


def rebuild(body: dict[str, Any], old: Conversation, new: tuple[Message, ...]) -> dict[str, Any]:
    """`body` with its input items rebuilt from `new`, a rewrite of `old.messages`.

    Items of removed messages and calls are dropped (with the reasoning items of a dropped
    assistant output); other items keep every field and their place. A user message the
    layer added goes right after the items of the message before it, or at the end of the
    input when it is the last message.
    """
    items = body["input"]
    before = {m.origin: m for m in old.messages}
    owned = {k for m in old.messages for k in _items_of(m)}
    kept: dict[int, dict] = {}
    after_item: dict[int, list[dict]] = {}
    last_item = -1  # the last kept item of the previous internal message
    for position, message in enumerate(new):
        origin = message.origin
        if origin is None:
            added = {"role": message.role, "content": message.content}
            anchor = len(items) - 1 if position == len(new) - 1 else last_item
            after_item.setdefault(anchor, []).append(added)
            continue
        was = before[origin]
        if origin[0] == "item":
            k = origin[1]
            item = items[k]
            if message.content != was.content:
                key = "output" if item.get("type") == "function_call_output" else "content"
                patched = patch_content(item.get(key), message.content, TEXT_TYPES, "input_text")
                item = {**item, key: patched}
            kept[k] = item
            last_item = k
        elif origin[0] == "items":
            removed = {c.origin for c in was.tool_calls} - {c.origin for c in message.tool_calls}
            for k in origin[1]:
                if k not in removed:
                    kept[k] = items[k]
                    last_item = k
    out = list(after_item.get(-1, []))
    for k, item in enumerate(items):
        if k not in owned or k in kept:
            out.append(kept.get(k, item))
        out.extend(after_item.get(k, []))
    return {**body, "input": out}


def _items_of(message: Message) -> tuple[int, ...]:
    if message.origin is None or message.origin[0] not in ("item", "items"):
        return ()
    return (message.origin[1],) if message.origin[0] == "item" else message.origin[1]
