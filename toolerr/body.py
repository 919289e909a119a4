"""Helpers the three API converters share: type checks that name the offending field, the
layer's own fields, and writing changed content back into a request body."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from exactserve.toolerr.jsonedit import JsonPath
from exactserve.toolerr.messages import KINDS, Message, Part, ToolDef

# The client's own declaration of a failure's kind (beyond the paper, item 1).
ERROR_KIND = "error_kind"


class RequestError(ValueError):
    """A request the layer cannot read. `param` names the field, as the APIs' `param`."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


def require_list(value: Any, where: str) -> list:
    if not isinstance(value, list):
        raise RequestError(f"{where} must be an array, got {json_type(value)}", where)
    return value


def require_object(value: Any, where: str) -> dict:
    if not isinstance(value, dict):
        raise RequestError(f"{where} must be an object, got {json_type(value)}", where)
    return value


def require_str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise RequestError(f"{where} must be a string, got {json_type(value)}", where)
    return value


def optional_str(container: dict, key: str, where: str) -> str | None:
    value = container.get(key)
    return None if value is None else require_str(value, f"{where}.{key}")


def error_kind(container: dict, where: str) -> str | None:
    """The `error_kind` a client declared on a tool result (null: none), validated."""
    value = container.get(ERROR_KIND)
    if value is None:  # absent, or null: nothing declared
        return None
    if value not in KINDS:
        raise RequestError(
            f"{where}.{ERROR_KIND} must be one of {', '.join(KINDS)}, got {json.dumps(value)}",
            f"{where}.{ERROR_KIND}",
        )
    return value


def annotation_hints(annotations: Any, where: str) -> tuple[bool | None, bool | None]:
    """(readOnlyHint, idempotentHint) from MCP tool annotations; None where absent."""
    require_object(annotations, where)
    hints = []
    for key in ("readOnlyHint", "idempotentHint"):
        value = annotations.get(key)
        if value is not None and not isinstance(value, bool):
            raise RequestError(
                f"{where}.{key} must be true or false, got {json_type(value)}", f"{where}.{key}"
            )
        hints.append(value)
    return hints[0], hints[1]


def normalise_content(
    value: Any, where: str, text_types: frozenset[str]
) -> str | tuple[Part, ...] | None:
    """Content as the internal model holds it: the string, None, or a tuple of parts with
    each text part (any type in `text_types`) as `{"type": "text", "text": ...}`."""
    if value is None or isinstance(value, str):
        return value
    if not isinstance(value, list):
        raise RequestError(
            f"{where} must be a string, an array of content parts or null, got {json_type(value)}",
            where,
        )
    parts = []
    for index, part in enumerate(value):
        part_where = f"{where}[{index}]"
        require_object(part, part_where)
        if part.get("type") in text_types:
            text = require_str(part.get("text"), f"{part_where}.text")
            parts.append({"type": "text", "text": text})
        else:
            parts.append(part)
    return tuple(parts)


def patch_content(
    original: Any,
    content: str | tuple[Part, ...] | None,
    text_types: frozenset[str],
    text_type: str,
) -> Any:
    """`original` content from the body with the internal model's changed `content` written
    back: text changes land in the original parts (keeping their other fields), parts the
    layer added become `{"type": text_type, "text": ...}`."""
    if not isinstance(original, list) or not isinstance(content, tuple):
        return content
    out = []
    for part, new in zip(original, content, strict=False):  # content may be longer
        if part.get("type") in text_types and new["text"] != part.get("text"):
            part = {**part, "text": new["text"]}
        out.append(part)
    out.extend({"type": text_type, "text": new["text"]} for new in content[len(original) :])
    return out


def flat_tools(tools: Any) -> tuple[dict[str, ToolDef], list[JsonPath]]:
    """Tool definitions with a top-level `name` (Anthropic, Responses) by name, and where
    their MCP `annotations` sit; malformed entries are left for the server to reject."""
    found: dict[str, ToolDef] = {}
    paths: list[JsonPath] = []
    if not isinstance(tools, list):
        return found, paths
    for index, tool in enumerate(tools):
        if not isinstance(tool, dict) or not isinstance(tool.get("name"), str):
            continue
        hints: tuple[bool | None, bool | None] = (None, None)
        if "annotations" in tool:
            paths.append(("tools", index, "annotations"))
            hints = annotation_hints(tool["annotations"], f"tools[{index}].annotations")
        found[tool["name"]] = ToolDef(tool["name"], *hints)
    return found, paths


def json_type(value: Any) -> str:
    """The JSON name of a decoded value's type, for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


@dataclass(frozen=True)
class Conversation:
    """A request body read into the internal model.

    messages: the internal message list (the INDEX of the X-Tool-Errors header).
    tools: the tool definitions by name, for retry safety.
    layer_paths: where the layer's own fields sit in the body; they are removed before the
        body goes anywhere else.
    """

    messages: tuple[Message, ...]
    tools: Mapping[str, ToolDef]
    layer_paths: tuple[JsonPath, ...]
