# ruff: noqa: E501
"""Form cases: every form (off, c1..c4) on single and several failures, with a user or a
tool message last, multi-part content, and all three API shapes. Every expected body and
header below was written by hand from issue 5's text (docs/TOOLERR.md), never produced by
the code under test."""

from __future__ import annotations

import pytest

from exactserve.toolerr import anthropic_api, chat_api, responses_api
from exactserve.toolerr.forms import Options
from exactserve.toolerr.messages import text_of
from exactserve.toolerr.request import process

G_T = "This is a temporary failure. Retrying the same call is expected to succeed."
G_F = "This call cannot succeed as written. The error says what to change; call the tool again with the corrected value."
G_U = "This cannot be fixed by retrying or by changing the arguments. Tell the user what happened."
P = "Note from the tool runtime: the last attempt called "

# fmt: off
SYS = {"role": "system", "content": "You are a coding agent."}

# --- A: Chat Completions, one fixable failure, tool message last ---
USER_A = {"role": "user", "content": "Make the tests pass."}
ASSIST_A = {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "edit_file", "arguments": '{"path": "app.py", "old": "x = 1", "new": "x = 2"}'}}]}
TOOL_A = {"role": "tool", "tool_call_id": "call_1", "content": "Error: old did not match any text in app.py"}
NOTE_A = P + 'edit_file with path="app.py", old="x = 1", new="x = 2" and it failed with: Error: old did not match any text in app.py\n\n' + G_F
A = {
    "api": "chat",
    "body": {"model": "m", "messages": [SYS, USER_A, ASSIST_A, TOOL_A], "temperature": 0.2},
    "failures": '[{"message":3,"kind":"fixable","rule":"generic"}]',
    "c1": {"model": "m", "messages": [SYS, USER_A, ASSIST_A, {"role": "tool", "tool_call_id": "call_1", "content": "Error: old did not match any text in app.py\n" + G_F}], "temperature": 0.2},
    "c2": {"model": "m", "messages": [SYS, {"role": "user", "content": "Make the tests pass.\n\n" + NOTE_A}], "temperature": 0.2},
    "c3": {"model": "m", "messages": [SYS, USER_A, ASSIST_A, TOOL_A, {"role": "user", "content": NOTE_A}], "temperature": 0.2},
    "c4": {"model": "m", "messages": [SYS, USER_A, {"role": "user", "content": NOTE_A}], "temperature": 0.2},
}

# --- B: Chat Completions, one transient failure, user message last ---
ASSIST_B = {"role": "assistant", "content": None, "tool_calls": [{"id": "call_7", "type": "function", "function": {"name": "fetch_url", "arguments": '{"url":"https://example.com/data.json"}'}}]}
TOOL_B = {"role": "tool", "tool_call_id": "call_7", "content": "Error: 503 Service Unavailable"}
LAST_B = {"role": "user", "content": "Please hurry."}
NOTE_B = P + 'fetch_url with url="https://example.com/data.json" and it failed with: Error: 503 Service Unavailable\n\n' + G_T
B = {
    "api": "chat",
    "body": {"model": "m", "messages": [SYS, USER_A, ASSIST_B, TOOL_B, LAST_B]},
    "failures": '[{"message":3,"kind":"transient","rule":"generic"}]',
    "c1": {"model": "m", "messages": [SYS, USER_A, ASSIST_B, {"role": "tool", "tool_call_id": "call_7", "content": "Error: 503 Service Unavailable\n" + G_T}, LAST_B]},
    "c2": {"model": "m", "messages": [SYS, USER_A, {"role": "user", "content": "Please hurry.\n\n" + NOTE_B}]},
    "c3": {"model": "m", "messages": [SYS, USER_A, ASSIST_B, TOOL_B, {"role": "user", "content": "Please hurry.\n\n" + NOTE_B}]},
    "c4": {"model": "m", "messages": [SYS, USER_A, LAST_B, {"role": "user", "content": NOTE_B}]},
}

# --- C: Chat Completions, three parallel calls, two failures, assistant text kept ---
USER_C = {"role": "user", "content": "Compare the files with the page."}
CALL_A = {"id": "call_a", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"a.txt"}'}}
CALL_B = {"id": "call_b", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"b.txt"}'}}
CALL_C = {"id": "call_c", "type": "function", "function": {"name": "fetch_url", "arguments": '{"url":"https://example.com/x","timeout":5}'}}
ASSIST_C = {"role": "assistant", "content": "I will read a.txt and b.txt and fetch the page.", "tool_calls": [CALL_A, CALL_B, CALL_C]}
TOOL_CA = {"role": "tool", "tool_call_id": "call_a", "content": "alpha"}
TOOL_CB = {"role": "tool", "tool_call_id": "call_b", "content": "Error: EACCES: permission denied, open 'b.txt'"}
TOOL_CC = {"role": "tool", "tool_call_id": "call_c", "content": "httpx.ReadTimeout: timed out"}
NOTES_C = (
    P + "read_file with path=\"b.txt\" and it failed with: Error: EACCES: permission denied, open 'b.txt'\n\n" + G_U
    + "\n\n"
    + P + 'fetch_url with url="https://example.com/x", timeout=5 and it failed with: httpx.ReadTimeout: timed out\n\n' + G_T
)
C = {
    "api": "chat",
    "body": {"model": "m", "messages": [USER_C, ASSIST_C, TOOL_CA, TOOL_CB, TOOL_CC]},
    "failures": '[{"message":3,"kind":"unrecoverable","rule":"generic"},{"message":4,"kind":"transient","rule":"generic"}]',
    "c1": {"model": "m", "messages": [USER_C, ASSIST_C, TOOL_CA, {"role": "tool", "tool_call_id": "call_b", "content": "Error: EACCES: permission denied, open 'b.txt'\n" + G_U}, {"role": "tool", "tool_call_id": "call_c", "content": "httpx.ReadTimeout: timed out\n" + G_T}]},
    "c2": {"model": "m", "messages": [USER_C, {"role": "assistant", "content": "I will read a.txt and b.txt and fetch the page.", "tool_calls": [CALL_A]}, TOOL_CA, {"role": "user", "content": NOTES_C}]},
    "c3": {"model": "m", "messages": [USER_C, ASSIST_C, TOOL_CA, TOOL_CB, TOOL_CC, {"role": "user", "content": NOTES_C}]},
    "c4": {"model": "m", "messages": [USER_C, {"role": "assistant", "content": "I will read a.txt and b.txt and fetch the page.", "tool_calls": [CALL_A]}, TOOL_CA, {"role": "user", "content": NOTES_C}]},
}

# --- D: Chat Completions, multi-part content everywhere, call without arguments ---
USER_D0 = {"role": "user", "content": [{"type": "text", "text": "Summarise the page."}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]}
ASSIST_D = {"role": "assistant", "content": "", "tool_calls": [{"id": "call_p", "type": "function", "function": {"name": "get_page", "arguments": "{}"}}]}
TOOL_D = {"role": "tool", "tool_call_id": "call_p", "content": [{"type": "text", "text": "Error: Too Many Requests"}, {"type": "text", "text": "Retry-After: 30"}]}
USER_D3 = {"role": "user", "content": [{"type": "text", "text": "Use the cached copy if needed."}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,BBBB"}}]}
NOTE_D = P + "get_page with no arguments and it failed with: Error: Too Many Requests\nRetry-After: 30\n\n" + G_T
USER_D3_NOTED = {"role": "user", "content": [{"type": "text", "text": "Use the cached copy if needed.\n\n" + NOTE_D}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,BBBB"}}]}
D = {
    "api": "chat",
    "body": {"model": "m", "messages": [USER_D0, ASSIST_D, TOOL_D, USER_D3]},
    "failures": '[{"message":2,"kind":"transient","rule":"generic"}]',
    "c1": {"model": "m", "messages": [USER_D0, ASSIST_D, {"role": "tool", "tool_call_id": "call_p", "content": [{"type": "text", "text": "Error: Too Many Requests"}, {"type": "text", "text": "Retry-After: 30\n" + G_T}]}, USER_D3]},
    "c2": {"model": "m", "messages": [USER_D0, USER_D3_NOTED]},
    "c3": {"model": "m", "messages": [USER_D0, ASSIST_D, TOOL_D, USER_D3_NOTED]},
    "c4": {"model": "m", "messages": [USER_D0, USER_D3, {"role": "user", "content": NOTE_D}]},
}

# --- E: Anthropic Messages, one is_error result, tool result last ---
E0 = {"role": "user", "content": "Deploy the site."}
E1 = {"role": "assistant", "content": [{"type": "text", "text": "Running the deploy script."}, {"type": "tool_use", "id": "toolu_01", "name": "run", "input": {"cmd": "./deploy.sh", "env": "prod"}}]}
RES_E = {"type": "tool_result", "tool_use_id": "toolu_01", "is_error": True, "content": "Upload failed: ECONNRESET"}
NOTE_E = P + 'run with cmd="./deploy.sh", env="prod" and it failed with: Upload failed: ECONNRESET\n\n' + G_T
E1_TEXT_ONLY = {"role": "assistant", "content": [{"type": "text", "text": "Running the deploy script."}]}
E = {
    "api": "messages",
    "body": {"model": "claude-x", "max_tokens": 1024, "system": "You are a coding agent.", "messages": [E0, E1, {"role": "user", "content": [RES_E]}]},
    "failures": '[{"message":3,"kind":"transient","rule":"is_error"}]',
    "c1": {"model": "claude-x", "max_tokens": 1024, "system": "You are a coding agent.", "messages": [E0, E1, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_01", "is_error": True, "content": "Upload failed: ECONNRESET\n" + G_T}]}]},
    "c2": {"model": "claude-x", "max_tokens": 1024, "system": "You are a coding agent.", "messages": [E0, E1_TEXT_ONLY, {"role": "user", "content": NOTE_E}]},
    "c3": {"model": "claude-x", "max_tokens": 1024, "system": "You are a coding agent.", "messages": [E0, E1, {"role": "user", "content": [RES_E, {"type": "text", "text": NOTE_E}]}]},
    "c4": {"model": "claude-x", "max_tokens": 1024, "system": "You are a coding agent.", "messages": [E0, E1_TEXT_ONLY, {"role": "user", "content": NOTE_E}]},
}

# --- F: Anthropic Messages, two failures, the user's text after the results ---
F0 = {"role": "user", "content": [{"type": "text", "text": "Update both configs.", "cache_control": {"type": "ephemeral"}}]}
F1 = {"role": "assistant", "content": [{"type": "thinking", "thinking": "Two writes.", "signature": "sig1"}, {"type": "tool_use", "id": "toolu_a", "name": "write_file", "input": {"path": "/etc/app.conf", "text": "debug=true"}}, {"type": "tool_use", "id": "toolu_b", "name": "write_file", "input": {"path": "conf/local.conf", "text": ""}}]}
RES_FA = {"type": "tool_result", "tool_use_id": "toolu_a", "content": [{"type": "text", "text": "Error: EACCES: permission denied, open '/etc/app.conf'"}]}
RES_FB = {"type": "tool_result", "tool_use_id": "toolu_b", "content": "Error: text must not be empty"}
TEXT_F = {"type": "text", "text": "Skip the system one if it is locked."}
NOTES_F = (
    P + "write_file with path=\"/etc/app.conf\", text=\"debug=true\" and it failed with: Error: EACCES: permission denied, open '/etc/app.conf'\n\n" + G_U
    + "\n\n"
    + P + 'write_file with path="conf/local.conf", text="" and it failed with: Error: text must not be empty\n\n' + G_F
)
TEXT_F_NOTED = {"type": "text", "text": "Skip the system one if it is locked.\n\n" + NOTES_F}
F = {
    "api": "messages",
    "body": {"model": "claude-x", "max_tokens": 1024, "messages": [F0, F1, {"role": "user", "content": [RES_FA, RES_FB, TEXT_F]}]},
    "failures": '[{"message":2,"kind":"unrecoverable","rule":"generic"},{"message":3,"kind":"fixable","rule":"generic"}]',
    "c1": {"model": "claude-x", "max_tokens": 1024, "messages": [F0, F1, {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": [{"type": "text", "text": "Error: EACCES: permission denied, open '/etc/app.conf'\n" + G_U}]}, {"type": "tool_result", "tool_use_id": "toolu_b", "content": "Error: text must not be empty\n" + G_F}, TEXT_F]}]},
    "c2": {"model": "claude-x", "max_tokens": 1024, "messages": [F0, {"role": "user", "content": [TEXT_F_NOTED]}]},
    "c3": {"model": "claude-x", "max_tokens": 1024, "messages": [F0, F1, {"role": "user", "content": [RES_FA, RES_FB, TEXT_F_NOTED]}]},
    "c4": {"model": "claude-x", "max_tokens": 1024, "messages": [F0, {"role": "user", "content": [TEXT_F]}, {"role": "user", "content": NOTES_F}]},
}

# --- G: OpenAI Responses, one failure after a reasoning item, tool output last ---
G0 = {"role": "user", "content": [{"type": "input_text", "text": "List the open issues."}]}
G1 = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAA"}
G2 = {"type": "function_call", "id": "fc_1", "call_id": "call_9", "name": "list_issues", "arguments": '{"repo":"acme/app","state":"open"}'}
G3 = {"type": "function_call_output", "call_id": "call_9", "output": "401 Client Error: Unauthorized for url: https://api.github.com/repos/acme/app/issues"}
NOTE_G = P + 'list_issues with repo="acme/app", state="open" and it failed with: 401 Client Error: Unauthorized for url: https://api.github.com/repos/acme/app/issues\n\n' + G_U
G = {
    "api": "responses",
    "body": {"model": "gpt-x", "instructions": "You are a coding agent.", "input": [G0, G1, G2, G3], "store": False},
    "failures": '[{"message":3,"kind":"unrecoverable","rule":"generic"}]',
    "c1": {"model": "gpt-x", "instructions": "You are a coding agent.", "input": [G0, G1, G2, {"type": "function_call_output", "call_id": "call_9", "output": "401 Client Error: Unauthorized for url: https://api.github.com/repos/acme/app/issues\n" + G_U}], "store": False},
    "c2": {"model": "gpt-x", "instructions": "You are a coding agent.", "input": [{"role": "user", "content": [{"type": "input_text", "text": "List the open issues.\n\n" + NOTE_G}]}], "store": False},
    "c3": {"model": "gpt-x", "instructions": "You are a coding agent.", "input": [G0, G1, G2, G3, {"role": "user", "content": NOTE_G}], "store": False},
    "c4": {"model": "gpt-x", "instructions": "You are a coding agent.", "input": [G0, {"role": "user", "content": NOTE_G}], "store": False},
}

# --- H: OpenAI Responses, two failures, assistant message item kept, user last ---
H0 = {"type": "message", "role": "user", "content": "Fetch both pages."}
H1 = {"type": "message", "role": "assistant", "id": "msg_1", "status": "completed", "content": [{"type": "output_text", "text": "Fetching them now.", "annotations": []}]}
H2 = {"type": "function_call", "call_id": "call_p1", "name": "fetch", "arguments": '{"url":"https://example.com/1"}'}
H3 = {"type": "function_call", "call_id": "call_p2", "name": "fetch", "arguments": "not json"}
H4 = {"type": "function_call_output", "call_id": "call_p1", "output": "Error: connect ECONNREFUSED 93.184.216.34:443"}
H5 = {"type": "function_call_output", "call_id": "call_p2", "output": [{"type": "input_text", "text": "Error: Invalid arguments: expected a JSON object"}]}
H6 = {"type": "message", "role": "user", "content": "Go on."}
NOTES_H = (
    P + 'fetch with url="https://example.com/1" and it failed with: Error: connect ECONNREFUSED 93.184.216.34:443\n\n' + G_T
    + "\n\n"
    + P + "fetch with not json and it failed with: Error: Invalid arguments: expected a JSON object\n\n" + G_F
)
H6_NOTED = {"type": "message", "role": "user", "content": "Go on.\n\n" + NOTES_H}
H = {
    "api": "responses",
    "body": {"model": "gpt-x", "input": [H0, H1, H2, H3, H4, H5, H6]},
    "failures": '[{"message":2,"kind":"transient","rule":"generic"},{"message":3,"kind":"fixable","rule":"generic"}]',
    "c1": {"model": "gpt-x", "input": [H0, H1, H2, H3, {"type": "function_call_output", "call_id": "call_p1", "output": "Error: connect ECONNREFUSED 93.184.216.34:443\n" + G_T}, {"type": "function_call_output", "call_id": "call_p2", "output": [{"type": "input_text", "text": "Error: Invalid arguments: expected a JSON object\n" + G_F}]}, H6]},
    "c2": {"model": "gpt-x", "input": [H0, H1, H6_NOTED]},
    "c3": {"model": "gpt-x", "input": [H0, H1, H2, H3, H4, H5, H6_NOTED]},
    "c4": {"model": "gpt-x", "input": [H0, H1, H6, {"role": "user", "content": NOTES_H}]},
}

# --- J: nothing rewritable: an older failure and an ambiguous one at the decision step ---
J_BODY = {"model": "m", "messages": [
    {"role": "user", "content": "Check the logs."},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"/var/log/app.log"}'}}]},
    {"role": "tool", "tool_call_id": "call_1", "content": "Error: EACCES: permission denied"},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "call_2", "type": "function", "function": {"name": "read_file", "arguments": '{"path":"logs/app.log"}'}}]},
    {"role": "tool", "tool_call_id": "call_2", "content": "Error: ENOENT: no such file or directory"},
]}
J = {
    "api": "chat",
    "body": J_BODY,
    "failures": '[{"message":2,"kind":"unrecoverable","rule":"generic"},{"message":4,"kind":"ambiguous","rule":"generic"}]',
    "c1": None, "c2": None, "c3": None, "c4": None,
}

# --- K: the failed result names no call of the last assistant message ---
K_BODY = {"model": "m", "messages": [
    {"role": "user", "content": "Run it."},
    {"role": "assistant", "content": None, "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "run", "arguments": "{}"}}]},
    {"role": "tool", "tool_call_id": "call_999", "content": "Error: Too Many Requests"},
]}
K = {
    "api": "chat",
    "body": K_BODY,
    "failures": '[{"message":2,"kind":"transient","rule":"generic"}]',
    "c1": {"model": "m", "messages": [K_BODY["messages"][0], K_BODY["messages"][1], {"role": "tool", "tool_call_id": "call_999", "content": "Error: Too Many Requests\n" + G_T}]},
    "c2": None, "c3": None, "c4": None,
}
# fmt: on

SCENARIOS = {"A": A, "B": B, "C": C, "D": D, "E": E, "F": F, "G": G, "H": H, "J": J, "K": K}
FORM_CASES = [(name, form) for name in SCENARIOS for form in ("off", "c1", "c2", "c3", "c4")]
CONVERTERS = {"chat": chat_api, "messages": anthropic_api, "responses": responses_api}


def _summary(messages):
    return [
        (m.role, text_of(m.content), m.tool_call_id, [c.id for c in m.tool_calls]) for m in messages
    ]


@pytest.mark.parametrize(("name", "form"), FORM_CASES, ids=[f"{n}-{f}" for n, f in FORM_CASES])
def test_form_case(name, form):
    scenario = SCENARIOS[name]
    body = scenario["body"]
    outcome = process(body, scenario["api"], "", Options(form=form))
    expected = scenario.get(form)
    changed = expected is not None
    assert (
        outcome.header
        == f'{{"form":"{form}","changed":{"true" if changed else "false"},"failures":{scenario["failures"]}}}'
    )
    assert outcome.changed is changed
    if not changed:
        assert outcome.body is body
        assert outcome.messages is outcome.conversation.messages
        return
    assert outcome.body == expected
    # The rebuilt body, read back, says what the rewritten internal list says.
    again = CONVERTERS[scenario["api"]].parse(outcome.body)
    assert _summary(again.messages) == _summary(outcome.messages)


def test_there_are_enough_form_cases():
    assert len(FORM_CASES) >= 49


def test_request_bodies_are_not_mutated():
    import copy

    for scenario in SCENARIOS.values():
        before = copy.deepcopy(scenario["body"])
        for form in ("c1", "c2", "c3", "c4"):
            process(scenario["body"], scenario["api"], "", Options(form=form))
        assert scenario["body"] == before
