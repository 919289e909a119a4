# ruff: noqa: E501
"""`exactserve proxy` end to end: the official openai and anthropic SDKs and raw httpx talk
to the proxy over real HTTP; the proxy forwards over real HTTP to a recording upstream
started here (uvicorn on 127.0.0.1, ephemeral ports) that keeps every request it got and
answers with canned JSON and SSE in OpenAI and Anthropic shapes. Every wait is bounded."""

from __future__ import annotations

import json
import logging

import anthropic
import httpx
import openai
import pytest
from proxy_upstream import (
    ANTHROPIC_EVENTS,
    CHAT_COMPLETION,
    CHAT_EVENTS,
    G_T,
    G_U,
    RESPONSE_OBJECT,
    TIMEOUT,
    P,
    SentBodies,
)

CHAT_MESSAGES = [
    {"role": "user", "content": "Fetch the page."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "fetch", "arguments": '{"url":"https://example.com"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": "Error: 503 Service Unavailable"},
]
CHAT_NOTE = (
    P
    + 'fetch with url="https://example.com" and it failed with: Error: 503 Service Unavailable\n\n'
    + G_T
)
CHAT_HEADER_C3 = (
    '{"form":"c3","changed":true,"failures":[{"message":2,"kind":"transient","rule":"generic"}]}'
)


def test_openai_sdk_non_streaming_rewrite(proxy, recorder, caplog):
    sent = SentBodies()
    with httpx.Client(event_hooks={"request": [sent]}, timeout=TIMEOUT) as http_client:
        client = openai.OpenAI(
            base_url=proxy + "/v1", api_key="sk-test", max_retries=0, http_client=http_client
        )
        with caplog.at_level(logging.INFO, logger="exactserve.toolerr"):
            raw = client.chat.completions.with_raw_response.create(
                model="m", messages=CHAT_MESSAGES, temperature=0, extra_body={"tool_errors": "c3"}
            )
    assert raw.status_code == 200
    assert raw.headers["x-tool-errors"] == CHAT_HEADER_C3
    assert raw.headers["x-upstream"] == "yes"
    assert raw.parse().choices[0].message.content == "Done."
    [(method, target, headers, body)] = recorder.received
    assert (method, target) == ("POST", "/v1/chat/completions")
    assert headers["authorization"] == "Bearer sk-test"
    assert headers["user-agent"].startswith("OpenAI/Python")
    assert json.loads(body) == {
        "model": "m",
        "temperature": 0,
        "messages": [*CHAT_MESSAGES, {"role": "user", "content": CHAT_NOTE}],
    }
    assert f"X-Tool-Errors: {CHAT_HEADER_C3}" in caplog.messages


def test_openai_sdk_streaming_is_forwarded_unchanged(proxy, recorder):
    sent = SentBodies()
    with httpx.Client(event_hooks={"request": [sent]}, timeout=TIMEOUT) as http_client:
        client = openai.OpenAI(
            base_url=proxy + "/v1", api_key="sk-test", max_retries=0, http_client=http_client
        )
        with client.chat.completions.with_streaming_response.create(
            model="m", messages=CHAT_MESSAGES, stream=True
        ) as response:
            assert (
                response.headers["x-tool-errors"]
                == '{"form":"off","changed":false,"failures":[{"message":2,"kind":"transient","rule":"generic"}]}'
            )
            assert response.headers["content-type"].startswith("text/event-stream")
            deltas = [chunk.choices[0].delta.content for chunk in response.parse()]
    assert deltas == ["", "Hel", "lo", None]
    [(_, _, _, body)] = recorder.received
    assert body == sent.bodies[0]  # layer off, no layer field: the very bytes the SDK sent


def test_anthropic_sdk_non_streaming_rewrite(proxy, recorder):
    client = anthropic.Anthropic(
        base_url=proxy, api_key="sk-ant-test", max_retries=0, timeout=TIMEOUT
    )
    messages = [
        {"role": "user", "content": "Deploy."},
        {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": "toolu_1", "name": "deploy", "input": {"env": "prod"}}
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "is_error": True,
                    "content": "EACCES: /srv is read-only",
                }
            ],
        },
    ]
    raw = client.messages.with_raw_response.create(
        model="claude-x", max_tokens=64, messages=messages, extra_body={"tool_errors": "c4"}
    )
    assert (
        raw.headers["x-tool-errors"]
        == '{"form":"c4","changed":true,"failures":[{"message":2,"kind":"unrecoverable","rule":"is_error"}]}'
    )
    assert raw.parse().content[0].text == "Done."
    [(method, target, headers, body)] = recorder.received
    assert (method, target) == ("POST", "/v1/messages")
    assert headers["authorization"] == "Bearer sk-ant-test"
    assert headers["anthropic-version"] == client.default_headers["anthropic-version"]
    assert headers["user-agent"].startswith("Anthropic/Python")
    assert json.loads(body) == {
        "model": "claude-x",
        "max_tokens": 64,
        "messages": [
            {"role": "user", "content": "Deploy."},
            {
                "role": "user",
                "content": P
                + 'deploy with env="prod" and it failed with: EACCES: /srv is read-only\n\n'
                + G_U,
            },
        ],
    }


def test_anthropic_sdk_streaming_with_the_server_default_form(proxy_c3, recorder):
    client = anthropic.Anthropic(
        base_url=proxy_c3, api_key="sk-ant-test", max_retries=0, timeout=TIMEOUT
    )
    messages = [
        {"role": "user", "content": "Pay the invoice."},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Paying."},
                {"type": "tool_use", "id": "toolu_9", "name": "pay", "input": {"invoice": 42}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_9", "content": "Error: ETIMEDOUT"}
            ],
        },
    ]
    tools = [
        {
            "name": "pay",
            "input_schema": {"type": "object"},
            "annotations": {"idempotentHint": False},
        }
    ]
    with client.messages.with_streaming_response.create(
        model="claude-x", max_tokens=64, messages=messages, tools=tools, stream=True
    ) as response:
        assert (
            response.headers["x-tool-errors"]
            == '{"form":"c3","changed":true,"failures":[{"message":2,"kind":"transient","rule":"generic"}]}'
        )
        events = [event.type for event in response.parse()]
    assert events == [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    [(_, _, _, body)] = recorder.received
    check = "This looks like a temporary failure, but the last attempt may have taken effect before it failed. Check whether it did before calling the tool again."
    assert json.loads(body) == {
        "model": "claude-x",
        "max_tokens": 64,
        "stream": True,
        "tools": [{"name": "pay", "input_schema": {"type": "object"}}],
        "messages": [
            messages[0],
            messages[1],
            {
                "role": "user",
                "content": [
                    messages[2]["content"][0],
                    {
                        "type": "text",
                        "text": P
                        + "pay with invoice=42 and it failed with: Error: ETIMEDOUT\n\n"
                        + check,
                    },
                ],
            },
        ],
    }


@pytest.mark.parametrize(
    ("path", "events"), [("/v1/chat/completions", CHAT_EVENTS), ("/v1/messages", ANTHROPIC_EVENTS)]
)
def test_sse_chunks_arrive_intact_and_before_the_stream_ends(proxy, recorder, path, events):
    body = {
        "model": "m",
        "max_tokens": 8,
        "stream": True,
        "messages": [{"role": "user", "content": "hi"}],
    }
    with httpx.Client(timeout=TIMEOUT) as client:
        with client.stream(
            "POST", proxy + path, json=body, headers={"x-test-mode": "gated"}
        ) as response:
            assert response.status_code == 200
            assert response.headers["cache-control"] == "no-cache"
            chunks = response.iter_raw()
            first = next(chunks)
            # The upstream holds the rest until the gate opens: the first event came through
            # on its own, not buffered until the end.
            assert first == events[0]
            recorder.gate.set()
            rest = b"".join(chunks)
    assert first + rest == b"".join(events)


def test_client_disconnect_closes_the_upstream_stream(proxy, recorder):
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    with httpx.Client(timeout=TIMEOUT) as client:
        with client.stream(
            "POST", proxy + "/v1/chat/completions", json=body, headers={"x-test-mode": "endless"}
        ) as response:
            assert next(response.iter_raw()) == CHAT_EVENTS[1]
    assert recorder.stream_closed.wait(TIMEOUT), "the upstream stream was left open"


def test_unchanged_bodies_are_forwarded_byte_for_byte(proxy_c3, recorder):
    # Odd spacing, escapes and number spellings: re-serialising would change them. The
    # failure is ambiguous (ENOENT), so even with c3 on nothing is rewritten.
    received = (
        b'{ "model" : "m",  "messages": [{"role":"user","content":"caf\\u00e9 \\ud83d\\ude00"},'
        b'{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"ls","arguments":"{}"}}]},'
        b'{"role":"tool","tool_call_id":"c","content":"Error: ENOENT"}], "temperature": 1.50E0 }'
    )
    with httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(
            proxy_c3 + "/v1/chat/completions",
            content=received,
            headers={"content-type": "application/json"},
        )
    assert response.status_code == 200
    assert (
        response.headers["x-tool-errors"]
        == '{"form":"c3","changed":false,"failures":[{"message":2,"kind":"ambiguous","rule":"generic"}]}'
    )
    assert response.json() == CHAT_COMPLETION
    assert recorder.received[0][3] == received


def test_layer_fields_are_cut_out_and_nothing_else_changes(proxy, recorder):
    received = b'{"model":"m" , "tool_errors":"c2", "messages":[{"role":"user","content":"x  y"},{"role":"tool","tool_call_id":"q","content":"ok","error_kind":null}]}'
    with httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(proxy + "/chat/completions", content=received)
    assert response.headers["x-tool-errors"] == '{"form":"c2","changed":false,"failures":[]}'
    assert recorder.received[0][1] == "/chat/completions"
    assert (
        recorder.received[0][3]
        == b'{"model":"m" , "messages":[{"role":"user","content":"x  y"},{"role":"tool","tool_call_id":"q","content":"ok"}]}'
    )


def test_responses_requests_are_rewritten_in_their_own_shape(proxy, recorder):
    body = {
        "model": "gpt-x",
        "tool_errors": "c1",
        "input": [
            {"role": "user", "content": "Run it."},
            {"type": "function_call", "call_id": "c1", "name": "run", "arguments": "{}"},
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": "Error: 503 Service Unavailable",
            },
        ],
    }
    with httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(proxy + "/v1/responses", json=body)
    assert response.json() == RESPONSE_OBJECT
    assert (
        response.headers["x-tool-errors"]
        == '{"form":"c1","changed":true,"failures":[{"message":2,"kind":"transient","rule":"generic"}]}'
    )
    assert json.loads(recorder.received[0][3]) == {
        "model": "gpt-x",
        "input": [
            {"role": "user", "content": "Run it."},
            {"type": "function_call", "call_id": "c1", "name": "run", "arguments": "{}"},
            {
                "type": "function_call_output",
                "call_id": "c1",
                "output": "Error: 503 Service Unavailable\n" + G_T,
            },
        ],
    }


def test_agent_rules_use_the_forwarded_user_agent(proxy, recorder):
    body = {
        "model": "m",
        "tool_errors": "c1",
        "messages": [
            {"role": "user", "content": "Open it."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c",
                        "type": "function",
                        "function": {"name": "read_file", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c", "content": "Error: EACCES"},
        ],
    }
    with httpx.Client(timeout=TIMEOUT) as client:
        response = client.post(
            proxy + "/v1/chat/completions", json=body, headers={"user-agent": "codex_cli_rs/0.42.0"}
        )
    assert response.headers["x-tool-errors"] == '{"form":"c1","changed":false,"failures":[]}'
    assert recorder.received[0][2]["user-agent"] == "codex_cli_rs/0.42.0"
