"""`tool_choice` from the three request APIs, read into one `ToolChoice`.

OpenAI Chat: "auto" | "none" | "required" | {"type": "function", "function": {"name"}}.
Anthropic Messages: {"type": "auto" | "any" | "tool" | "none", "name" (with "tool"),
"disable_parallel_tool_use"}; "any" is "required", "tool" is "named".
`disable_parallel_tool_use` is validated and not enforced: the parser returns every call
the model writes. OpenAI Responses: "auto" | "none" | "required" |
{"type": "function", "name"}.

An absent (null) choice is "auto". A request without tools gets mode "none" whatever it
asked, except that "required" or a named tool is an error: there is nothing to call.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from exactserve.toolerr.body import RequestError, json_type, require_object

MODES = ("auto", "none", "required", "named")
_STRING_MODES = ("auto", "none", "required")
_ANTHROPIC_MODES = {"auto": "auto", "any": "required", "tool": "named", "none": "none"}


@dataclass(frozen=True)
class ToolChoice:
    """What the model may do with the tools: `mode` "auto" (call or answer), "none" (the
    tools are not shown), "required" (must call some tool), "named" (must call `name`)."""

    mode: str
    name: str | None = None

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"ToolChoice mode must be one of {', '.join(MODES)}: {self.mode!r}")
        if (self.mode == "named") != (self.name is not None):
            raise ValueError("ToolChoice has a name exactly when its mode is 'named'")


AUTO = ToolChoice("auto")
NONE = ToolChoice("none")


def normalize_tool_choice(api: str, tool_choice: Any, tool_names: Collection[str]) -> ToolChoice:
    """The request's `tool_choice` for `api` ("chat", "messages", "responses"), checked
    against the names of its tools. Raises RequestError (param "tool_choice" or the field
    inside it) for an unknown value, a name that is not a tool, or a choice that needs
    tools when there are none."""
    if tool_choice is None:
        choice = AUTO
    elif api == "chat":
        choice = _openai(tool_choice, nested=True)
    elif api == "responses":
        choice = _openai(tool_choice, nested=False)
    elif api == "messages":
        choice = _anthropic(tool_choice)
    else:
        raise ValueError(f"api must be one of chat, messages, responses, got {api!r}")
    if choice.mode == "named" and choice.name not in tool_names:
        where = _name_param(api)
        known = ", ".join(tool_names) or "none"
        raise RequestError(
            f"{where} names the tool {json.dumps(choice.name)}, which is not in tools "
            f"(tools: {known})",
            where,
        )
    if not tool_names:
        if choice.mode == "required":
            raise RequestError(
                f"tool_choice {_spelled(tool_choice)} requires a tool call, but the "
                f"request has no tools",
                "tool_choice",
            )
        return NONE
    return choice


def _openai(value: Any, nested: bool) -> ToolChoice:
    if isinstance(value, str):
        if value not in _STRING_MODES:
            raise RequestError(
                f'tool_choice must be "auto", "none", "required" or a function object, got '
                f"{json.dumps(value)}",
                "tool_choice",
            )
        return ToolChoice(value)
    require_object(value, "tool_choice")
    kind = value.get("type")
    if kind != "function":
        got = json.dumps(kind) if isinstance(kind, str) else json_type(kind)
        raise RequestError(f'tool_choice.type must be "function", got {got}', "tool_choice.type")
    if nested:
        function = require_object(value.get("function"), "tool_choice.function")
        return ToolChoice("named", _name(function.get("name"), "tool_choice.function.name"))
    return ToolChoice("named", _name(value.get("name"), "tool_choice.name"))


def _anthropic(value: Any) -> ToolChoice:
    require_object(value, "tool_choice")
    kind = value.get("type")
    if kind not in _ANTHROPIC_MODES:
        got = json.dumps(kind) if isinstance(kind, str) else json_type(kind)
        raise RequestError(
            f'tool_choice.type must be "auto", "any", "tool" or "none", got {got}',
            "tool_choice.type",
        )
    parallel = value.get("disable_parallel_tool_use")
    if parallel is not None and not isinstance(parallel, bool):
        raise RequestError(
            f"tool_choice.disable_parallel_tool_use must be true or false, got "
            f"{json_type(parallel)}",
            "tool_choice.disable_parallel_tool_use",
        )
    mode = _ANTHROPIC_MODES[kind]
    if mode == "named":
        return ToolChoice("named", _name(value.get("name"), "tool_choice.name"))
    return ToolChoice(mode)


def _name(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise RequestError(f"{where} must be a string, got {json_type(value)}", where)
    return value


def _name_param(api: str) -> str:
    return "tool_choice.function.name" if api == "chat" else "tool_choice.name"


def _spelled(value: Any) -> str:
    """How the request spelled a choice that needs tools, for the error message."""
    if isinstance(value, str):
        return json.dumps(value)
    return f'{{"type": {json.dumps(value.get("type"))}}}'
