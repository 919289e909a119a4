"""Qwen Code, a real agent, against `exactserve serve`.

The `agent` test runs bench/agent_qwen_code.py's session: Qwen Code (npm, pinned, cached)
headless against the server on the demo model with --tool-errors c3, two turns, checking
status codes, SSE streams, tool calls and results, and X-Tool-Errors. It takes a few
minutes on two cores and needs Node.js and npm (and the registry once): `pytest -m agent`.

The fixture tests run by default: they replay the request Qwen Code really sent after its
tools failed (tests/server/fixtures/, captured by the script's --fixture option) through
the tool-error layer, without npm or a model.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench import agent_qwen_code as script
from exactserve.toolerr.forms import Options
from exactserve.toolerr.messages import text_of
from exactserve.toolerr.request import process

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "qwen_code_0.24.4_failed_tools.json"


@pytest.mark.agent
@pytest.mark.real_model
def test_qwen_code_session_against_exactserve(tmp_path):
    if shutil.which("node") is None or shutil.which("npm") is None:
        pytest.skip("Qwen Code needs Node.js and npm")
    report, exchanges = script.run_session(tmp_path / "run", timeout=1800)
    evidence = "\n".join(report.seen + report.problems)
    assert report.problems == [], evidence
    assert report.passed
    second = [e for e in exchanges if e.path == script.CHAT_PATH][1]
    failures = json.loads(second.response_headers["x-tool-errors"])["failures"]
    assert [(f["rule"], f["kind"]) for f in failures] == [
        ("qwen-notfound", "ambiguous"),
        ("qwen-error", "fixable"),
    ], evidence


def _fixture() -> dict:
    return json.loads(FIXTURE.read_text())


def test_fixture_is_a_real_qwen_code_request():
    fixture = _fixture()
    assert fixture["provenance"]["agent"].startswith("Qwen Code 0.24.4")
    assert fixture["request_headers"]["user-agent"].startswith("QwenCode/0.24.4 ")
    body = fixture["request_body"]
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    tools = [m for m in body["messages"] if m["role"] == "tool"]
    assert [part["type"] for m in tools for part in m["content"]] == ["text", "text"]
    assert fixture["status"] == 200


def test_captured_failures_are_detected_under_the_qwen_code_rules():
    fixture = _fixture()
    agent = fixture["request_headers"]["user-agent"]
    outcome = process(fixture["request_body"], "chat", agent, Options(form="c3"))
    assert outcome.header == fixture["x_tool_errors"]
    assert json.loads(outcome.header) == {
        "form": "c3",
        "changed": True,
        "failures": [
            {"message": 3, "kind": "ambiguous", "rule": "qwen-notfound"},
            {"message": 4, "kind": "fixable", "rule": "qwen-error"},
        ],
    }


def test_c3_tells_the_model_which_edit_failed():
    fixture = _fixture()
    agent = fixture["request_headers"]["user-agent"]
    outcome = process(fixture["request_body"], "chat", agent, Options(form="c3"))
    edit_result = fixture["request_body"]["messages"][4]["content"][0]["text"]
    notes = [text_of(m.content) for m in outcome.messages if m.role == "user"]
    notes = [text for text in notes if "Note from the tool runtime" in text]
    assert len(notes) == 1
    assert "the last attempt called edit with file_path=" in notes[0]
    assert f"it failed with: {edit_result}\n\nThis call cannot succeed as written." in notes[0]
    assert "missing.txt and it failed" not in notes[0]  # the ambiguous one is not rewritten


def test_without_the_qwen_code_user_agent_the_texts_are_not_failures():
    fixture = _fixture()
    outcome = process(fixture["request_body"], "chat", "curl/8.5.0", Options(form="c3"))
    assert json.loads(outcome.header) == {"form": "c3", "changed": False, "failures": []}
