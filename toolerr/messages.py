"""The internal message model that all three API shapes convert into.

A conversation is a tuple of `Message` in OpenAI Chat style: role, content (a string, a
tuple of content parts, or None), assistant `tool_calls`, and `tool_call_id` on tool
messages. Text parts are normalised to `{"type": "text", "text": ...}`; other parts (images,
files) are kept as the client sent them. `origin` says where in the request body a message
came from (its meaning belongs to the converter that made it); messages the layer adds have
`origin=None`. Messages are immutable: a rewrite returns new ones.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

Part = dict[str, Any]
Content = str | tuple[Part, ...] | None

# Kinds a failure can have; the first three get guidance, "ambiguous" is never rewritten.
KINDS = ("transient", "fixable", "unrecoverable", "ambiguous")


@dataclass(frozen=True)
class ToolCall:
    """One call in an assistant message.

    `arguments` is what the client sent: the JSON text for Chat Completions and Responses,
    the decoded `input` object for Anthropic. `origin` is the call's position in its source
    (index in `tool_calls`, content block index, or input item index).
    """

    id: str
    name: str
    arguments: str | dict[str, Any]
    origin: int


@dataclass(frozen=True)
class Message:
    role: str
    content: Content
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False
    error_kind: str | None = None
    origin: tuple[Any, ...] | None = None


@dataclass(frozen=True)
class ToolDef:
    """What the layer reads from a tool definition: the MCP retry-safety annotations.

    None means the definition does not say.
    """

    name: str
    read_only: bool | None = None
    idempotent: bool | None = None


def text_of(content: Content) -> str:
    """The text of a message: the string itself, or its text parts joined by a newline."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(part["text"] for part in content if part.get("type") == "text")


def has_content(content: Content) -> bool:
    """False when nothing would remain of a message's content: no text beyond white space
    and no non-text parts."""
    if content is None:
        return False
    if isinstance(content, str):
        return bool(content.strip())
    return any(part.get("type") != "text" or part["text"].strip() for part in content)


def append_text(message: Message, suffix: str, separator: str) -> Message:
    """Append `separator + suffix` to a message's text.

    A string (or None, read as "") gets it at its end; multi-part content gets it at the end
    of its last text part; content with no text part gets a new text part holding `suffix`
    alone, since there is nothing to separate it from.
    """
    content = message.content
    if content is None or isinstance(content, str):
        return replace(message, content=(content or "") + separator + suffix)
    parts = list(content)
    for index in range(len(parts) - 1, -1, -1):
        if parts[index].get("type") == "text":
            parts[index] = {**parts[index], "text": parts[index]["text"] + separator + suffix}
            return replace(message, content=tuple(parts))
    parts.append({"type": "text", "text": suffix})
    return replace(message, content=tuple(parts))


def decode_arguments(arguments: str | dict[str, Any]) -> dict[str, Any] | None:
    """The call's arguments as a JSON object, or None when they are not one."""
    if isinstance(arguments, dict):
        return arguments
    try:
        decoded = json.loads(arguments)
    except ValueError:
        return None
    return decoded if isinstance(decoded, dict) else None


def to_template_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """The conversation as transformers-style message dicts for a chat template.

    Each dict has `role` and `content` (a string, a list of parts, or None); assistant
    messages with calls add `tool_calls: [{id, type: "function", function: {name,
    arguments}}]`, where `arguments` is a dict when it decodes to a JSON object (as chat
    templates expect) and the raw string otherwise; tool messages add `tool_call_id`.
    Returns new dicts; the messages are not mutated.
    """
    rendered = []
    for message in messages:
        content = message.content
        entry: dict[str, Any] = {
            "role": message.role,
            "content": list(content) if isinstance(content, tuple) else content,
        }
        if message.tool_calls:
            entry["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {
                        "name": call.name,
                        "arguments": _template_arguments(call.arguments),
                    },
                }
                for call in message.tool_calls
            ]
        if message.tool_call_id is not None:
            entry["tool_call_id"] = message.tool_call_id
        rendered.append(entry)
    return rendered


def _template_arguments(arguments: str | dict[str, Any]) -> str | dict[str, Any]:
    decoded = decode_arguments(arguments)
    return arguments if decoded is None else decoded
