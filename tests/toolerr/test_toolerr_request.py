# ruff: noqa: E501
"""The layer on whole request bodies: selection by `tool_errors`, invariance, the layer's
fields stripped byte for byte, request errors, API detection, template messages, and the
purity of toolerr/ (standard library only)."""

from __future__ import annotations

import ast
import json
import sys
from pathlib import Path

import pytest

from exactserve.toolerr.body import RequestError
from exactserve.toolerr.forms import FORMS, Options
from exactserve.toolerr.jsonedit import delete_in_object, delete_in_text
from exactserve.toolerr.messages import to_template_messages
from exactserve.toolerr.request import detect_api, process

ROOT = Path(__file__).resolve().parents[2]

CHAT_FAIL = {
    "model": "m",
    "messages": [
        {"role": "user", "content": "Hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "ls", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": "Error: EPERM"},
    ],
}


# --- selection ---


def test_the_request_field_overrides_the_server_option():
    body = {**CHAT_FAIL, "tool_errors": "off"}
    assert (
        process(body, "chat", "", Options(form="c4")).header
        == '{"form":"off","changed":false,"failures":[{"message":2,"kind":"unrecoverable","rule":"generic"}]}'
    )
    body = {**CHAT_FAIL, "tool_errors": "c1"}
    outcome = process(body, "chat", "", Options())
    assert outcome.form == "c1" and outcome.changed
    assert "tool_errors" not in outcome.body


@pytest.mark.parametrize(
    ("value", "shown"),
    [("c5", '"c5"'), ("C3", '"C3"'), (3, "3"), (None, "null"), (["c3"], '["c3"]')],
)
def test_a_bad_tool_errors_value_names_the_field_and_the_allowed_values(value, shown):
    with pytest.raises(RequestError) as caught:
        process({**CHAT_FAIL, "tool_errors": value}, "chat", "", Options())
    assert caught.value.message == f"tool_errors must be one of off, c1, c2, c3, c4, got {shown}"
    assert caught.value.param == "tool_errors"


@pytest.mark.parametrize("api", ["chat", "messages", "responses"])
def test_tool_errors_selects_the_form_on_all_three_shapes(api):
    bodies = {
        "chat": CHAT_FAIL,
        "messages": {
            "messages": [
                {"role": "user", "content": "Hi"},
                {
                    "role": "assistant",
                    "content": [{"type": "tool_use", "id": "c", "name": "ls", "input": {}}],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "tool_result", "tool_use_id": "c", "content": "Error: EPERM"}
                    ],
                },
            ]
        },
        "responses": {
            "input": [
                {"role": "user", "content": "Hi"},
                {"type": "function_call", "call_id": "c", "name": "ls", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "c", "output": "Error: EPERM"},
            ]
        },
    }
    outcome = process({**bodies[api], "tool_errors": "c4"}, api, "", Options())
    assert (
        outcome.header
        == '{"form":"c4","changed":true,"failures":[{"message":2,"kind":"unrecoverable","rule":"generic"}]}'
    )
    assert "tool_errors" not in outcome.body


# --- invariance ---

NO_REWRITE_TEXT = (
    '{ "model" : "m",\n  "messages": [{"role":"user","content":"caf\\u00e9 \\ud83d\\ude00 1.50e1"},'
    '{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"ls","arguments":"{}"}}]},'
    '{"role":"tool","tool_call_id":"c","content":"Error: ENOENT"}],\n  "temperature": 1.0e0 }'
)


@pytest.mark.parametrize("form", FORMS)
def test_no_rewritable_failure_forwards_the_very_bytes_received(form):
    received = NO_REWRITE_TEXT.encode()
    body = json.loads(received)
    on = process(body, "chat", "", Options(form=form))
    off = process(body, "chat", "", Options())
    assert (
        on.header
        == f'{{"form":"{form}","changed":false,"failures":[{{"message":2,"kind":"ambiguous","rule":"generic"}}]}}'
    )
    assert on.forward_bytes(received) is received
    assert on.messages is on.conversation.messages
    assert json.dumps(to_template_messages(on.messages)) == json.dumps(
        to_template_messages(off.messages)
    )


def test_only_the_layer_fields_are_cut_from_the_bytes():
    received = (
        b'{"tool_errors" : "c3",  "model":"m", "messages":[{"role":"user","content":"x  y"},'
        b'{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"ls","arguments":"{}"}}]},'
        b'{"role":"tool","tool_call_id":"c","content":"fine","error_kind":null}],'
        b'"tools":[{"type":"function","function":{"name":"ls","annotations":{"readOnlyHint":true}}}] }'
    )
    outcome = process(json.loads(received), "chat", "", Options())
    assert outcome.forward_bytes(received) == (
        b'{"model":"m", "messages":[{"role":"user","content":"x  y"},'
        b'{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"ls","arguments":"{}"}}]},'
        b'{"role":"tool","tool_call_id":"c","content":"fine"}],'
        b'"tools":[{"type":"function","function":{"name":"ls"}}] }'
    )


def test_a_rewritten_body_is_serialised_with_unicode_kept():
    received = json.dumps({**CHAT_FAIL, "metadata": {"note": "naïve"}}).encode()
    outcome = process(json.loads(received), "chat", "", Options(form="c1"))
    forwarded = outcome.forward_bytes(received)
    assert json.loads(forwarded) == outcome.body
    assert "naïve".encode() in forwarded


# --- jsonedit ---


@pytest.mark.parametrize(
    ("text", "paths", "expected"),
    [
        ('{"a":1,"b":2}', [("a",)], '{"b":2}'),
        ('{"a":1,"b":2}', [("b",)], '{"a":1}'),
        ('{"a":1}', [("a",)], "{}"),
        ('{ "a" : 1 , "b" : 2 , "c" : 3 }', [("b",)], '{ "a" : 1 , "c" : 3 }'),
        ('{ "a" : 1 , "b" : 2 , "c" : 3 }', [("b",), ("c",)], '{ "a" : 1 }'),
        ('{ "a" : 1 , "b" : 2 , "c" : 3 }', [("a",), ("b",)], '{ "c" : 3 }'),
        ('{"a":1,"a":2,"b":3}', [("a",)], '{"b":3}'),
        (
            '{"x":[{"k":1,"e":"\\"}"},{"e":2}]}',
            [("x", 0, "e"), ("x", 1, "e")],
            '{"x":[{"k":1},{}]}',
        ),
        ('{"x":[{"k":1}]}', [("x", 5, "k"), ("y", "z")], '{"x":[{"k":1}]}'),
        ('{"x":{"y":{"z":1,"w":[1,{"q":2}]}}}', [("x", "y", "w")], '{"x":{"y":{"z":1}}}'),
        ('{"a":{"b":1},"a":{"b":2,"c":3}}', [("a", "b")], '{"a":{"b":1},"a":{"c":3}}'),
    ],
)
def test_delete_in_text(text, paths, expected):
    assert delete_in_text(text, paths) == expected
    assert json.loads(expected) == delete_in_object(json.loads(text), paths)


def test_delete_in_object_shares_untouched_containers():
    value = {"keep": [1, 2], "x": [{"e": 1, "k": 2}]}
    out = delete_in_object(value, [("x", 0, "e")])
    assert out == {"keep": [1, 2], "x": [{"k": 2}]}
    assert out["keep"] is value["keep"] and value["x"][0] == {"e": 1, "k": 2}


# --- request errors, in the words a user can act on ---


@pytest.mark.parametrize(
    ("api", "body", "message"),
    [
        ("chat", {"model": "m"}, "messages is required: an array of message objects"),
        ("chat", {"messages": {"role": "user"}}, "messages must be an array, got an object"),
        ("chat", {"messages": ["hi"]}, "messages[0] must be an object, got a string"),
        ("chat", {"messages": [{"content": "hi"}]}, "messages[0].role must be a string, got null"),
        (
            "chat",
            {"messages": [{"role": "user", "content": 5}]},
            "messages[0].content must be a string, an array of content parts or null, got a number",
        ),
        (
            "chat",
            {"messages": [{"role": "user", "content": [{"type": "text", "text": None}]}]},
            "messages[0].content[0].text must be a string, got null",
        ),
        (
            "chat",
            {
                "messages": [
                    {
                        "role": "assistant",
                        "tool_calls": [{"id": "c", "function": {"name": "f", "arguments": 3}}],
                    }
                ]
            },
            "messages[0].tool_calls[0].function.arguments must be a string, got a number",
        ),
        (
            "chat",
            {"messages": [{"role": "tool", "tool_call_id": 7, "content": "x"}]},
            "messages[0].tool_call_id must be a string, got a number",
        ),
        (
            "messages",
            {"messages": [{"role": "user", "content": [{"type": "tool_result", "content": "x"}]}]},
            "messages[0].content[0].tool_use_id must be a string, got null",
        ),
        (
            "messages",
            {"system": 1, "messages": []},
            "system must be a string, an array of content parts or null, got a number",
        ),
        ("responses", {"input": 5}, "input must be an array, got a number"),
        (
            "responses",
            {"input": [{"type": "function_call", "name": "f", "arguments": "{}"}]},
            "input[0].call_id must be a string, got null",
        ),
        (
            "responses",
            {"input": [{"type": "function_call_output", "call_id": "c", "output": {"x": 1}}]},
            "input[0].output must be a string, an array of content parts or null, got an object",
        ),
    ],
)
def test_request_errors(api, body, message):
    with pytest.raises(RequestError) as caught:
        process(body, api, "", Options())
    assert caught.value.message == message


def test_unknown_item_types_and_roles_pass_through():
    body = {
        "input": [
            {"type": "item_reference", "id": "x"},
            {"type": "web_search_call", "id": "w"},
            {"role": "developer", "content": "be brief"},
        ]
    }
    outcome = process(body, "responses", "", Options(form="c3"))
    assert [m.role for m in outcome.messages] == ["developer"]
    assert outcome.body is body


# --- API detection (for `exactserve toolerr`) ---


@pytest.mark.parametrize(
    ("body", "api"),
    [
        ({"input": "hi"}, "responses"),
        ({"input": [], "instructions": "x"}, "responses"),
        ({"messages": [], "system": "x"}, "messages"),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t"}]}
                ]
            },
            "messages",
        ),
        (
            {
                "messages": [
                    {
                        "role": "assistant",
                        "content": [{"type": "tool_use", "id": "t", "name": "f", "input": {}}],
                    }
                ]
            },
            "messages",
        ),
        (
            {"messages": [{"role": "user", "content": [{"type": "image", "source": {}}]}]},
            "messages",
        ),
        (
            {
                "messages": [
                    {"role": "system", "content": "x"},
                    {"role": "tool", "tool_call_id": "c", "content": "x"},
                ]
            },
            "chat",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}
                ]
            },
            "chat",
        ),
        ({"messages": [{"role": "user", "content": "plain"}]}, "chat"),
    ],
)
def test_detect_api(body, api):
    assert detect_api(body) == api


# --- the template messages the chat renderer consumes ---


def test_template_messages_from_each_shape():
    anthropic = {
        "system": [{"type": "text", "text": "S"}],
        "messages": [
            {"role": "user", "content": "Q"},
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "t", "signature": "s"},
                    {"type": "text", "text": "A"},
                    {"type": "tool_use", "id": "t1", "name": "f", "input": {"b": 1, "a": [2]}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "content": [{"type": "text", "text": "R"}],
                    },
                    {"type": "text", "text": "more"},
                ],
            },
        ],
    }
    assert to_template_messages(process(anthropic, "messages", "", Options()).messages) == [
        {"role": "system", "content": [{"type": "text", "text": "S"}]},
        {"role": "user", "content": "Q"},
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "A"}],
            "tool_calls": [
                {
                    "id": "t1",
                    "type": "function",
                    "function": {"name": "f", "arguments": {"b": 1, "a": [2]}},
                }
            ],
        },
        {"role": "tool", "content": [{"type": "text", "text": "R"}], "tool_call_id": "t1"},
        {"role": "user", "content": [{"type": "text", "text": "more"}]},
    ]
    responses = {
        "instructions": "S",
        "input": [
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Q"},
                    {"type": "input_image", "image_url": "u"},
                ],
            },
            {"type": "function_call", "call_id": "c", "name": "f", "arguments": "not json"},
            {"type": "function_call_output", "call_id": "c", "output": "R"},
        ],
    }
    assert to_template_messages(process(responses, "responses", "", Options()).messages) == [
        {"role": "system", "content": "S"},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Q"}, {"type": "input_image", "image_url": "u"}],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "f", "arguments": "not json"}}
            ],
        },
        {"role": "tool", "content": "R", "tool_call_id": "c"},
    ]


# --- purity ---


def test_toolerr_imports_only_the_standard_library_and_itself():
    stdlib = set(sys.stdlib_module_names) | {"__future__"}
    for path in sorted((ROOT / "toolerr").glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                assert node.level == 0, f"{path.name}: relative import"
                names = [node.module or ""]
            else:
                continue
            for name in names:
                top = name.split(".")[0]
                is_toolerr = name == "exactserve.toolerr" or name.startswith("exactserve.toolerr.")
                assert top in stdlib or is_toolerr, f"{path.name} imports {name}"
                assert top not in {"server", "runtime", "socket", "http", "urllib", "asyncio"}, (
                    f"{path.name} imports {name}"
                )
