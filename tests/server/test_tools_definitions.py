"""server.tools: tool definitions and tool_choice from the three APIs, and call ids."""

from __future__ import annotations

import hashlib

import pytest

from exactserve.server.tools import (
    ToolChoice,
    call_id,
    normalize_tool_choice,
    normalize_tools,
    tool_names,
)
from exactserve.toolerr import RequestError

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
EXPECTED = [
    {
        "type": "function",
        "function": {"name": "get_weather", "description": "Weather.", "parameters": SCHEMA},
    },
    {
        "type": "function",
        "function": {
            "name": "now",
            "description": "",
            "parameters": {"type": "object", "properties": {}},
        },
    },
]


def _raises(call, message: str, param: str | None) -> None:
    with pytest.raises(RequestError) as raised:
        call()
    assert (raised.value.message, raised.value.param) == (message, param)


# --- normalize_tools ---------------------------------------------------------------------


def test_chat_tools_keep_their_shape_and_gain_defaults() -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Weather.",
                "parameters": SCHEMA,
                "strict": True,
            },
        },
        {"type": "function", "function": {"name": "now"}},
    ]
    assert normalize_tools("chat", tools) == EXPECTED
    assert "strict" in tools[0]["function"]  # the input is not mutated


def test_anthropic_tools_become_chat_tools() -> None:
    tools = [
        {
            "name": "get_weather",
            "description": "Weather.",
            "input_schema": SCHEMA,
            "cache_control": {"type": "ephemeral"},
        },
        {"type": "custom", "name": "now", "input_schema": {"type": "object", "properties": {}}},
    ]
    assert normalize_tools("messages", tools) == EXPECTED


def test_responses_tools_become_chat_tools() -> None:
    tools = [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather.",
            "parameters": SCHEMA,
        },
        {"type": "function", "name": "now", "parameters": None, "strict": False},
    ]
    assert normalize_tools("responses", tools) == EXPECTED


def test_no_tools_is_an_empty_list_and_names_come_in_order() -> None:
    assert normalize_tools("chat", None) == []
    assert normalize_tools("messages", []) == []
    assert tool_names(EXPECTED) == ("get_weather", "now")


def test_the_schema_is_copied() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    [tool] = normalize_tools("responses", [{"type": "function", "name": "f", "parameters": schema}])
    tool["function"]["parameters"]["properties"]["a"]["type"] = "number"
    assert schema["properties"]["a"]["type"] == "string"


FN = {"name": "f", "parameters": SCHEMA}


@pytest.mark.parametrize(
    ("api", "tools", "message", "param"),
    [
        ("chat", {"name": "f"}, "tools must be an array, got an object", "tools"),
        ("chat", ["f"], "tools[0] must be an object, got a string", "tools[0]"),
        (
            "chat",
            [{"type": "function", "function": FN}, {"type": "web_search"}],
            'tools[1].type must be "function", got "web_search": this server runs no '
            "built-in tools",
            "tools[1].type",
        ),
        (
            "chat",
            [{"function": FN}],
            'tools[0].type must be "function", got null: this server runs no built-in tools',
            "tools[0].type",
        ),
        (
            "chat",
            [{"type": "function"}],
            "tools[0].function must be an object, got null",
            "tools[0].function",
        ),
        (
            "chat",
            [{"type": "function", "function": FN}, {"type": "function", "function": {}}],
            "tools[1].function.name must be a string, got null",
            "tools[1].function.name",
        ),
        (
            "chat",
            [
                {"type": "function", "function": FN},
                {"type": "function", "function": FN},
                {"type": "function", "function": {"name": "get weather"}},
            ],
            'tools[1].function.name "f" duplicates tools[0]: tool names must be unique',
            "tools[1].function.name",
        ),
        (
            "chat",
            [{"type": "function", "function": {"name": 'get"weather'}}],
            'tools[0].function.name "get\\"weather" is not a valid tool name: use 1 to 128 '
            "letters, digits, '_', '-', '.' or ':'",
            "tools[0].function.name",
        ),
        (
            "chat",
            [{"type": "function", "function": {"name": "f", "description": 3}}],
            "tools[0].function.description must be a string, got a number",
            "tools[0].function.description",
        ),
        (
            "chat",
            [{"type": "function", "function": {"name": "f", "parameters": []}}],
            "tools[0].function.parameters must be a JSON schema object, got an array",
            "tools[0].function.parameters",
        ),
        (
            "chat",
            [{"type": "function", "function": {"name": "f", "parameters": {"type": "string"}}}],
            'tools[0].function.parameters must be a schema of "type": "object" (tool arguments '
            'are a JSON object), got type "string"',
            "tools[0].function.parameters.type",
        ),
        (
            "messages",
            [{"name": "f", "input_schema": SCHEMA}, {"type": "web_search_20250305", "name": "w"}],
            'tools[1].type "web_search_20250305" is an Anthropic server tool, which this '
            'server does not run; only custom tools (with "input_schema") are supported',
            "tools[1].type",
        ),
        (
            "messages",
            [{"name": "f"}],
            "tools[0].input_schema is required: a JSON schema object",
            "tools[0].input_schema",
        ),
        (
            "messages",
            [{"name": "f", "input_schema": SCHEMA}, {"name": "f", "input_schema": SCHEMA}],
            'tools[1].name "f" duplicates tools[0]: tool names must be unique',
            "tools[1].name",
        ),
        (
            "messages",
            [{"name": "", "input_schema": SCHEMA}],
            "tools[0].name \"\" is not a valid tool name: use 1 to 128 letters, digits, '_', "
            "'-', '.' or ':'",
            "tools[0].name",
        ),
        (
            "responses",
            [{"type": "function", "function": FN}],
            "tools[0].name must be a string, got null",
            "tools[0].name",
        ),
        (
            "responses",
            [{"type": "file_search", "vector_store_ids": []}],
            'tools[0].type must be "function", got "file_search": this server runs no '
            "built-in tools",
            "tools[0].type",
        ),
        (
            "responses",
            [{"type": "function", "name": "f", "parameters": {"type": ["object", "null"]}}],
            'tools[0].parameters must be a schema of "type": "object" (tool arguments are a '
            'JSON object), got type ["object", "null"]',
            "tools[0].parameters.type",
        ),
    ],
)
def test_malformed_tools_name_the_field(api, tools, message, param) -> None:
    _raises(lambda: normalize_tools(api, tools), message, param)


def test_an_unknown_api_is_a_programming_error() -> None:
    with pytest.raises(ValueError, match="api must be one of chat, messages, responses"):
        normalize_tools("completions", [])


# --- normalize_tool_choice ---------------------------------------------------------------

NAMES = ("get_weather", "now")


@pytest.mark.parametrize(
    ("api", "value", "expected"),
    [
        ("chat", None, ToolChoice("auto")),
        ("chat", "auto", ToolChoice("auto")),
        ("chat", "none", ToolChoice("none")),
        ("chat", "required", ToolChoice("required")),
        ("chat", {"type": "function", "function": {"name": "now"}}, ToolChoice("named", "now")),
        ("messages", None, ToolChoice("auto")),
        ("messages", {"type": "auto"}, ToolChoice("auto")),
        ("messages", {"type": "any"}, ToolChoice("required")),
        ("messages", {"type": "none"}, ToolChoice("none")),
        ("messages", {"type": "tool", "name": "now"}, ToolChoice("named", "now")),
        (
            "messages",
            {"type": "auto", "disable_parallel_tool_use": True},
            ToolChoice("auto"),
        ),
        ("responses", None, ToolChoice("auto")),
        ("responses", "required", ToolChoice("required")),
        ("responses", "none", ToolChoice("none")),
        (
            "responses",
            {"type": "function", "name": "get_weather"},
            ToolChoice("named", "get_weather"),
        ),
    ],
)
def test_tool_choice_of_each_api(api, value, expected) -> None:
    assert normalize_tool_choice(api, value, NAMES) == expected


@pytest.mark.parametrize(
    ("api", "value"),
    [("chat", None), ("chat", "auto"), ("chat", "none"), ("messages", {"type": "auto"})],
)
def test_without_tools_the_choice_is_none(api, value) -> None:
    assert normalize_tool_choice(api, value, ()) == ToolChoice("none")


@pytest.mark.parametrize(
    ("api", "value", "names", "message", "param"),
    [
        (
            "chat",
            "any",
            NAMES,
            'tool_choice must be "auto", "none", "required" or a function object, got "any"',
            "tool_choice",
        ),
        ("chat", 3, NAMES, "tool_choice must be an object, got a number", "tool_choice"),
        (
            "chat",
            {"type": "tool", "name": "now"},
            NAMES,
            'tool_choice.type must be "function", got "tool"',
            "tool_choice.type",
        ),
        (
            "chat",
            {"type": "function", "name": "now"},
            NAMES,
            "tool_choice.function must be an object, got null",
            "tool_choice.function",
        ),
        (
            "chat",
            {"type": "function", "function": {"name": "later"}},
            NAMES,
            'tool_choice.function.name names the tool "later", which is not in tools '
            "(tools: get_weather, now)",
            "tool_choice.function.name",
        ),
        (
            "chat",
            "required",
            (),
            'tool_choice "required" requires a tool call, but the request has no tools',
            "tool_choice",
        ),
        (
            "chat",
            {"type": "function", "function": {"name": "now"}},
            (),
            'tool_choice.function.name names the tool "now", which is not in tools (tools: none)',
            "tool_choice.function.name",
        ),
        ("messages", "auto", NAMES, "tool_choice must be an object, got a string", "tool_choice"),
        (
            "messages",
            {"type": "required"},
            NAMES,
            'tool_choice.type must be "auto", "any", "tool" or "none", got "required"',
            "tool_choice.type",
        ),
        (
            "messages",
            {"type": "tool"},
            NAMES,
            "tool_choice.name must be a string, got null",
            "tool_choice.name",
        ),
        (
            "messages",
            {"type": "tool", "name": "later"},
            NAMES,
            'tool_choice.name names the tool "later", which is not in tools (tools: '
            "get_weather, now)",
            "tool_choice.name",
        ),
        (
            "messages",
            {"type": "any", "disable_parallel_tool_use": "yes"},
            NAMES,
            "tool_choice.disable_parallel_tool_use must be true or false, got a string",
            "tool_choice.disable_parallel_tool_use",
        ),
        (
            "messages",
            {"type": "any"},
            (),
            'tool_choice {"type": "any"} requires a tool call, but the request has no tools',
            "tool_choice",
        ),
        (
            "responses",
            {"type": "function", "function": {"name": "now"}},
            NAMES,
            "tool_choice.name must be a string, got null",
            "tool_choice.name",
        ),
        (
            "responses",
            {"type": "web_search_preview"},
            NAMES,
            'tool_choice.type must be "function", got "web_search_preview"',
            "tool_choice.type",
        ),
        (
            "responses",
            {"type": "function", "name": "later"},
            NAMES,
            'tool_choice.name names the tool "later", which is not in tools (tools: '
            "get_weather, now)",
            "tool_choice.name",
        ),
    ],
)
def test_bad_tool_choices_name_the_field(api, value, names, message, param) -> None:
    _raises(lambda: normalize_tool_choice(api, value, names), message, param)


def test_tool_choice_is_checked_on_construction() -> None:
    with pytest.raises(ValueError, match="mode must be one of"):
        ToolChoice("any")
    with pytest.raises(ValueError, match="has a name exactly when"):
        ToolChoice("named")
    with pytest.raises(ValueError, match="has a name exactly when"):
        ToolChoice("auto", "now")


# --- call ids ----------------------------------------------------------------------------


def test_call_ids_are_deterministic_and_distinct() -> None:
    digest = hashlib.sha256(b"req-1\x000").hexdigest()
    assert call_id("req-1", 0) == "call_" + digest[:24]
    assert call_id("req-1", 0) == call_id("req-1", 0)
    ids = {call_id(request, index) for request in ("req-1", "req-2") for index in range(3)}
    assert len(ids) == 6
    assert call_id("req-1", 0, prefix="toolu_") == "toolu_" + digest[:24]
    assert len(call_id("x", 7)) == len("call_") + 24
