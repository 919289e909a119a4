"""The tool-error layer in the server's chat-rendering path: under each form C1-C4 the token
ids the engine receives are exactly those of the form's rewritten conversation rendered by
the template; the client's body is never mutated; X-Tool-Errors reports every detection;
the server option is the default and the request field overrides it."""

from __future__ import annotations

import copy
import json

import httpx
import pytest

from exactserve.server.render import render_chat
from exactserve.toolerr.forms import Options
from exactserve.toolerr.request import process

pytestmark = pytest.mark.llama_cpp_data

AUTH = {"Authorization": "Bearer sekret"}
FAILING = {
    "model": "tiny-qwen",
    "max_tokens": 1,
    "messages": [
        {"role": "user", "content": "List the files"},
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


def _received_prompts(engine):
    """Record the prompt of every request the engine is given (the bridge's boundary)."""
    prompts = []
    submit = engine.submit

    def recording(prompt, config, **kwargs):
        prompts.append(list(prompt))
        return submit(prompt, config, **kwargs)

    engine.submit = recording
    return prompts


@pytest.mark.parametrize("form", ["c1", "c2", "c3", "c4"])
def test_each_form_changes_the_ids_exactly_as_its_rewritten_conversation(qwen_server, form):
    served = qwen_server.state.served
    sent = copy.deepcopy(FAILING) | {"tool_errors": form}
    before = json.dumps(sent, sort_keys=True)
    prompts = _received_prompts(qwen_server.engine)
    try:
        with httpx.Client(base_url=qwen_server.url, timeout=60) as client:
            response = client.post("/v1/chat/completions", json=sent, headers=AUTH)
            plain = client.post(
                "/v1/chat/completions", json=FAILING | {"tool_errors": "off"}, headers=AUTH
            )
    finally:
        del qwen_server.engine.submit
    assert response.status_code == 200 and plain.status_code == 200
    report = json.loads(response.headers["x-tool-errors"])
    assert report["form"] == form and report["changed"] is True
    assert [f["message"] for f in report["failures"]] == [2]
    assert json.loads(plain.headers["x-tool-errors"])["changed"] is False
    # what the form says the model should read, rendered by the template on its own
    rewritten = process(sent, "chat", "", Options()).body
    assert rewritten["messages"] != FAILING["messages"]
    expected = render_chat(served, "chat", rewritten, "").ids
    original = render_chat(served, "chat", FAILING, "").ids
    assert prompts == [expected, original] and expected != original
    assert json.dumps(sent, sort_keys=True) == before  # the client's body is untouched


def test_the_server_option_is_the_default_and_the_request_overrides_it(qwen_path):
    from live_server import LiveServer

    server = LiveServer(qwen_path, toolerr=Options(form="c3"), alias="tiny-qwen")
    try:
        with httpx.Client(base_url=server.url, timeout=60) as client:
            by_default = client.post("/v1/chat/completions", json=FAILING)
            overridden = client.post("/v1/chat/completions", json=FAILING | {"tool_errors": "off"})
            bad = client.post("/v1/chat/completions", json=FAILING | {"tool_errors": "c9"})
            anthropic = client.post(
                "/v1/messages/count_tokens",
                json={
                    "messages": [
                        {"role": "user", "content": "go"},
                        {
                            "role": "assistant",
                            "content": [{"type": "tool_use", "id": "t", "name": "ls", "input": {}}],
                        },
                        {
                            "role": "user",
                            "content": [
                                {
                                    "type": "tool_result",
                                    "tool_use_id": "t",
                                    "content": "Error: EPERM",
                                }
                            ],
                        },
                    ],
                },
            )
    finally:
        server.close()
    assert json.loads(by_default.headers["x-tool-errors"])["form"] == "c3"
    assert json.loads(overridden.headers["x-tool-errors"])["form"] == "off"
    assert bad.status_code == 400 and bad.json()["error"]["param"] == "tool_errors"
    assert json.loads(anthropic.headers["x-tool-errors"])["changed"] is True
