"""The generic tool format, for templates with no tool syntax of their own (Gemma's, or any
template that never reads `tools`), after llama-server's generic format.

The tools are described in the system text: `GENERIC_INSTRUCTION`, then one line of JSON
per tool (`{"name", "description", "parameters"}`). The model answers in plain text, or
with one JSON object `{"tool_call": {"name": ..., "arguments": {...}}}` (several calls:
`{"tool_calls": [{"name": ..., "arguments": {...}}, ...]}`).

The history is rewritten so the template needs no tool support: an assistant message's
calls become that JSON text after its own text (on a new line), with arguments given as a
string inserted verbatim (so arguments that are not valid JSON render as the model wrote
them); a tool result becomes user text "Tool result of <name> (call <id>): <content>".
Then consecutive messages of one role are merged (content joined by a blank line), so
strictly alternating templates accept the conversation. When the template has no system
role, the system text goes to the start of the first user message.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

GENERIC_INSTRUCTION = (
    "You can call tools. To call a tool, reply with only a JSON object of this form:\n"
    '{"tool_call": {"name": "<tool name>", "arguments": {<the arguments as a JSON object>}}}\n'
    'To call several tools at once, reply with {"tool_calls": [<one {"name": ..., '
    '"arguments": ...} object per call>]}.\n'
    "The arguments must follow the tool's JSON schema. If no tool is needed, reply to the "
    "user in plain text. Each tool result comes back in a user message that begins with "
    '"Tool result of".\n'
    "The tools:"
)
MESSAGE_SEPARATOR = "\n\n"


def generic_instruction(tools: Sequence[Mapping[str, Any]]) -> str:
    """The system text that describes `tools` (normalized OpenAI Chat tool dicts)."""
    lines = [GENERIC_INSTRUCTION]
    for tool in tools:
        function = tool["function"]
        described = {
            "name": function["name"],
            "description": function.get("description", ""),
            "parameters": function.get("parameters", {}),
        }
        lines.append(json.dumps(described, ensure_ascii=False))
    return "\n".join(lines)


def prepare_generic(
    messages: Sequence[Mapping[str, Any]],
    tools: Sequence[Mapping[str, Any]] | None,
    has_system_role: bool,
) -> list[dict[str, Any]]:
    """New template messages for the generic format; `tools` None: none are described."""
    names_by_id: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.get("role")
        calls = message.get("tool_calls") or []
        if role == "assistant" and calls:
            entry = {key: value for key, value in message.items() if key != "tool_calls"}
            for call in calls:
                function = call.get("function", call)
                if isinstance(call.get("id"), str):
                    names_by_id[call["id"]] = str(function.get("name"))
            entry["content"] = join_content(message.get("content"), calls_text(calls), "\n")
        elif role == "tool":
            entry = {"role": "user", "content": _tool_result(message, names_by_id)}
        else:
            entry = dict(message)
        if out and out[-1].get("role") == entry.get("role"):
            merged = join_content(out[-1].get("content"), entry.get("content"), MESSAGE_SEPARATOR)
            out[-1] = {**out[-1], "content": merged}
        else:
            out.append(entry)
    if tools:
        _add_system_text(out, generic_instruction(tools))
    if not has_system_role and out and out[0].get("role") == "system":
        _fold_system_into_user(out)
    return out


def calls_text(calls: Sequence[Mapping[str, Any]]) -> str:
    """Calls from a message's `tool_calls` as the JSON text the model writes."""
    items = []
    for call in calls:
        function = call.get("function", call)
        name = json.dumps(str(function.get("name")), ensure_ascii=False)
        arguments = _arguments_text(function.get("arguments"))
        items.append(f'{{"name": {name}, "arguments": {arguments}}}')
    if len(items) == 1:
        return f'{{"tool_call": {items[0]}}}'
    return f'{{"tool_calls": [{", ".join(items)}]}}'


def _arguments_text(arguments: Any) -> str:
    if isinstance(arguments, str):
        return arguments  # verbatim: the model's own text, valid JSON or not
    return json.dumps({} if arguments is None else arguments, ensure_ascii=False)


def _tool_result(message: Mapping[str, Any], names_by_id: Mapping[str, str]) -> Any:
    call_id = message.get("tool_call_id")
    name = names_by_id.get(call_id) if isinstance(call_id, str) else None
    name = name or message.get("name")
    header = "Tool result"
    if name:
        header += f" of {name}"
    if call_id:
        header += f" (call {call_id})"
    return join_content(header + ":", message.get("content"), " ")


def join_content(first: Any, second: Any, separator: str) -> Any:
    """Two message contents (strings, None or lists of parts) as one: a string when both
    are text only, else a list of parts with adjacent text parts joined."""
    if _is_empty(first):
        return second
    if _is_empty(second):
        return first
    if isinstance(first, str) and isinstance(second, str):
        return first + separator + second
    parts = [*_parts(first), {"type": "text", "text": separator}, *_parts(second)]
    joined: list[Any] = []
    for part in parts:
        if _is_text_part(part) and joined and _is_text_part(joined[-1]):
            joined[-1] = {"type": "text", "text": joined[-1]["text"] + part["text"]}
        else:
            joined.append(part)
    if len(joined) == 1 and _is_text_part(joined[0]):
        return joined[0]["text"]
    return joined


def _is_empty(content: Any) -> bool:
    return content is None or content == "" or content == []


def _parts(content: Any) -> list[Any]:
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def _is_text_part(part: Any) -> bool:
    return isinstance(part, Mapping) and part.get("type") == "text" and "text" in part


def _add_system_text(messages: list[dict[str, Any]], text: str) -> None:
    if messages and messages[0].get("role") == "system":
        content = join_content(messages[0].get("content"), text, MESSAGE_SEPARATOR)
        messages[0] = {**messages[0], "content": content}
    else:
        messages.insert(0, {"role": "system", "content": text})


def _fold_system_into_user(messages: list[dict[str, Any]]) -> None:
    system = messages.pop(0)
    if messages and messages[0].get("role") == "user":
        content = join_content(system.get("content"), messages[0].get("content"), MESSAGE_SEPARATOR)
        messages[0] = {**messages[0], "content": content}
    else:
        messages.insert(0, {"role": "user", "content": system.get("content")})
