"""OpenAI Chat Completions request bodies <-> the internal model.

The internal list is the `messages` array one to one; a message's origin is
`("message", index)` and a call's origin its index in `tool_calls`. Tool definitions may
carry MCP `annotations` on the tool or on its `function` object.
"""

from __future__ import annotations

from typing import Any

from exactserve.toolerr.body import (
    ERROR_KIND,
    Conversation,
    RequestError,
    annotation_hints,
    error_kind,
    normalise_content,
    optional_str,
    patch_content,
    require_list,
    require_object,
    require_str,
)
from exactserve.toolerr.jsonedit import JsonPath
from exactserve.toolerr.messages import Message, ToolCall, ToolDef

TEXT_TYPES = frozenset({"text"})


def parse(body: dict[str, Any]) -> Conversation:
    """Read a Chat Completions body. Raises RequestError naming the first bad field."""
    if "messages" not in body:
        raise RequestError("messages is required: an array of message objects", "messages")
    layer_paths: list[JsonPath] = []
    messages = []
    for index, raw in enumerate(require_list(body["messages"], "messages")):
        where = f"messages[{index}]"
        require_object(raw, where)
        role = require_str(raw.get("role"), f"{where}.role")
        content = normalise_content(raw.get("content"), f"{where}.content", TEXT_TYPES)
        kind = None
        if role == "tool":
            kind = error_kind(raw, where)
        if ERROR_KIND in raw:
            layer_paths.append(("messages", index, ERROR_KIND))
        messages.append(
            Message(
                role=role,
                content=content,
                tool_calls=_tool_calls(raw, where),
                tool_call_id=optional_str(raw, "tool_call_id", where),
                is_error=raw.get("is_error") is True,
                error_kind=kind,
                origin=("message", index),
            )
        )
    tools, tool_paths = _tools(body.get("tools"))
    return Conversation(tuple(messages), tools, tuple(layer_paths + tool_paths))


def rebuild(body: dict[str, Any], old: Conversation, new: tuple[Message, ...]) -> dict[str, Any]:
    """`body` with its messages replaced by `new`, a rewrite of `old.messages`.

    Messages keep every field the layer did not change; an assistant message that loses
    all its calls loses its `tool_calls` key. `body` is not mutated.
    """
    originals = body["messages"]
    before = {m.origin: m for m in old.messages}
    out = []
    for message in new:
        if message.origin is None:
            out.append({"role": message.role, "content": message.content})
            continue
        was = before[message.origin]
        raw = originals[message.origin[1]]
        if message.content != was.content or message.tool_calls != was.tool_calls:
            raw = dict(raw)
            if message.content != was.content:
                raw["content"] = patch_content(
                    raw.get("content"), message.content, TEXT_TYPES, "text"
                )
            if message.tool_calls != was.tool_calls:
                kept = {call.origin for call in message.tool_calls}
                calls = [c for i, c in enumerate(raw["tool_calls"]) if i in kept]
                if calls:
                    raw["tool_calls"] = calls
                else:
                    del raw["tool_calls"]
        out.append(raw)
    return {**body, "messages": out}


def _tool_calls(raw: dict[str, Any], where: str) -> tuple[ToolCall, ...]:
    if raw.get("tool_calls") is None:
        return ()
    calls = []
    for index, call in enumerate(require_list(raw["tool_calls"], f"{where}.tool_calls")):
        call_where = f"{where}.tool_calls[{index}]"
        require_object(call, call_where)
        function = require_object(call.get("function"), f"{call_where}.function")
        arguments = function.get("arguments", "")
        if not isinstance(arguments, dict):
            arguments = require_str(arguments, f"{call_where}.function.arguments")
        calls.append(
            ToolCall(
                id=require_str(call.get("id"), f"{call_where}.id"),
                name=require_str(function.get("name"), f"{call_where}.function.name"),
                arguments=arguments,
                origin=index,
            )
        )
    return tuple(calls)


def _tools(tools: Any) -> tuple[dict[str, ToolDef], list[JsonPath]]:
    """Definitions by name, and where their annotations sit; malformed entries are left
    for the server to reject."""
    found: dict[str, ToolDef] = {}
    paths: list[JsonPath] = []
    if not isinstance(tools, list):
        return found, paths
    for index, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            continue
        hints: tuple[bool | None, bool | None] = (None, None)
        for path, holder, where in (
            (("tools", index, "annotations"), tool, f"tools[{index}].annotations"),
            (
                ("tools", index, "function", "annotations"),
                function,
                f"tools[{index}].function.annotations",
            ),
        ):
            if "annotations" in holder:
                paths.append(path)
                hints = annotation_hints(holder["annotations"], where)
        found[function["name"]] = ToolDef(function["name"], *hints)
    return found, paths
