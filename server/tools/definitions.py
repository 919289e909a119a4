"""Tool definitions from the three request APIs, read into the one shape chat templates expect.

The result is OpenAI Chat's: `{"type": "function", "function": {"name", "description",
"parameters"}}`, with `description` always present ("" when the request has none: Hermes
templates concatenate it unguarded) and `parameters` always a JSON schema object (an empty
object schema when the request has none). Every other key (`strict`, `cache_control`, MCP
`annotations`) is dropped: templates render what they are given, and those keys are not
meant for the model.

Names must match `NAME_PATTERN`: they are written into prompts, forced prefixes and JSON
text without escaping. Anthropic server tools (`type` other than "custom") and OpenAI
built-in tools (`type` other than "function") are rejected, not ignored: this server runs
no tools itself, and a client that asked for web search should hear that it gets none.
"""

from __future__ import annotations

import json
import re
from typing import Any

from exactserve.toolerr.body import RequestError, json_type, require_list, require_object

APIS = ("chat", "messages", "responses")
NAME_PATTERN = re.compile(r"[A-Za-z0-9_.:-]{1,128}")
EMPTY_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}}


def normalize_tools(api: str, tools: Any) -> list[dict[str, Any]]:
    """The request's `tools` (None: none) as new OpenAI Chat tool dicts, in request order.

    `api` is "chat" (OpenAI Chat Completions), "messages" (Anthropic Messages) or
    "responses" (OpenAI Responses). Raises RequestError whose `param` names the bad field
    (e.g. "tools[2].function.name") for a malformed entry, an unsupported tool type, a bad
    or duplicate name, or a schema that is not an object schema. The input is not mutated.
    """
    if api not in APIS:
        raise ValueError(f"api must be one of {', '.join(APIS)}, got {api!r}")
    if tools is None:
        return []
    read = {"chat": _chat_tool, "messages": _anthropic_tool, "responses": _responses_tool}[api]
    out: list[dict[str, Any]] = []
    first_index: dict[str, int] = {}
    for index, tool in enumerate(require_list(tools, "tools")):
        where = f"tools[{index}]"
        name_where, name, description, schema = read(require_object(tool, where), where)
        if name in first_index:
            raise RequestError(
                f"{name_where} {json.dumps(name)} duplicates tools[{first_index[name]}]: "
                f"tool names must be unique",
                name_where,
            )
        first_index[name] = index
        function = {"name": name, "description": description, "parameters": schema}
        out.append({"type": "function", "function": function})
    return out


def tool_names(tools: list[dict[str, Any]]) -> tuple[str, ...]:
    """The names of normalized tools, in order."""
    return tuple(tool["function"]["name"] for tool in tools)


_Read = tuple[str, str, str, dict[str, Any]]  # (name's param, name, description, schema)


def _chat_tool(tool: dict[str, Any], where: str) -> _Read:
    _require_type(tool, where, "function", required=True)
    function = require_object(tool.get("function"), f"{where}.function")
    return _read_fields(function, f"{where}.function", "parameters", schema_required=False)


def _responses_tool(tool: dict[str, Any], where: str) -> _Read:
    _require_type(tool, where, "function", required=True)
    return _read_fields(tool, where, "parameters", schema_required=False)


def _anthropic_tool(tool: dict[str, Any], where: str) -> _Read:
    kind = tool.get("type")
    if kind is not None and kind != "custom":
        raise RequestError(
            f"{where}.type {json.dumps(kind)} is an Anthropic server tool, which this server "
            f'does not run; only custom tools (with "input_schema") are supported',
            f"{where}.type",
        )
    return _read_fields(tool, where, "input_schema", schema_required=True)


def _require_type(tool: dict[str, Any], where: str, expected: str, required: bool) -> None:
    kind = tool.get("type")
    if kind == expected or (kind is None and not required):
        return
    got = json.dumps(kind) if isinstance(kind, str) else json_type(kind)
    raise RequestError(
        f'{where}.type must be "{expected}", got {got}: this server runs no built-in tools',
        f"{where}.type",
    )


def _read_fields(
    container: dict[str, Any], where: str, schema_key: str, schema_required: bool
) -> _Read:
    name_where = f"{where}.name"
    name = container.get("name")
    if not isinstance(name, str):
        raise RequestError(f"{name_where} must be a string, got {json_type(name)}", name_where)
    if not NAME_PATTERN.fullmatch(name):
        raise RequestError(
            f"{name_where} {json.dumps(name)} is not a valid tool name: use 1 to 128 letters, "
            f"digits, '_', '-', '.' or ':'",
            name_where,
        )
    description = container.get("description")
    if description is None:
        description = ""
    elif not isinstance(description, str):
        raise RequestError(
            f"{where}.description must be a string, got {json_type(description)}",
            f"{where}.description",
        )
    schema_where = f"{where}.{schema_key}"
    schema = container.get(schema_key)
    if schema is None:
        if schema_required:
            raise RequestError(f"{schema_where} is required: a JSON schema object", schema_where)
        schema = EMPTY_SCHEMA
    _check_schema(schema, schema_where)
    return name_where, name, description, json.loads(json.dumps(schema))


def _check_schema(schema: Any, where: str) -> None:
    if not isinstance(schema, dict):
        raise RequestError(f"{where} must be a JSON schema object, got {json_type(schema)}", where)
    kind = schema.get("type", "object")
    if kind != "object":
        got = json.dumps(kind, ensure_ascii=False)
        raise RequestError(
            f'{where} must be a schema of "type": "object" (tool arguments are a JSON '
            f"object), got type {got}",
            f"{where}.type",
        )
