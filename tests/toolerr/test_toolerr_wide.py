# ruff: noqa: E501
"""The wide rule set: per-family cases drawn from the corpus (tests/toolerr/corpus, each
record with its provenance), the classification precedence, and the X-Tool-Errors fields.
Expected kinds are the corpus labels, given by the labelling guide before the rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exactserve.toolerr.body import RequestError
from exactserve.toolerr.detect import detect
from exactserve.toolerr.forms import Options
from exactserve.toolerr.messages import Message
from exactserve.toolerr.request import process
from exactserve.toolerr.wide import classify_wide, judge

CORPUS = Path(__file__).parent / "corpus"
RECORDS = {
    r["id"]: r
    for split in ("dev", "test")
    for r in map(json.loads, (CORPUS / f"{split}.jsonl").read_text("utf-8").splitlines())
}

# (corpus id, wide rule, kind): one or more positives per family.
POSITIVES = [
    # shell results with exit codes, in agents' wrappers
    ("codex-45917", "wide-exit", "ambiguous"),
    ("pip-enospc-streamlit1", "wide-exit", "unrecoverable"),
    # Claude Code results flagged is_error
    ("claude-12115", "is_error", "ambiguous"),
    ("claude-tendril604", "is_error", "unrecoverable"),
    ("claude-10117", "is_error", "fixable"),
    # Python tracebacks and exception lines, not only at the start
    ("swe-agent-011", "wide-line", "fixable"),
    ("pip-readtimeout-hcq6", "wide-line", "transient"),
    ("compose-enospc-1052", "wide-line", "unrecoverable"),
    ("sqlite-locked-minet867", "wide-line", "transient"),
    # Rust compiler, npm, pip, git
    ("rust-koans58", "wide-line", "fixable"),
    ("npm-econnreset-8015", "wide-line", "transient"),
    ("npm-eacces-7684", "wide-line", "unrecoverable"),
    ("pip-conbench815", "wide-line", "transient"),
    ("git-publickey-cloudtunes46", "wide-line", "unrecoverable"),
    ("git-denied-shopify109", "wide-line", "unrecoverable"),
    # HTTP clients and API bodies
    ("httpx-3017-readtimeout", "wide-line", "transient"),
    ("nginx-502-kairos10", "wide-http", "transient"),
    ("gh-ratelimit-archive54", "wide-line", "transient"),
    ("openai-quota-nextchat3123", "wide-json", "unrecoverable"),
    ("openai-quota-gptcommit84", "wide-line", "unrecoverable"),
    # MCP and JSON-RPC
    ("mcp-timeout-xhs120", "wide-line", "ambiguous"),
    ("mcp-router-57", "wide-json", "ambiguous"),
    # file-system errors
    ("swe-agent-064", "wide-diagnostic", "fixable"),
    ("bash-permission-39438", "wide-diagnostic", "fixable"),
    ("codex-12867-agent", "wide-diagnostic", "unrecoverable"),
    # edit and patch tools
    ("gemini-18370", "wide-line", "fixable"),
    ("opencode-1348", "wide-line", "fixable"),
    ("swe-agent-014", "wide-phrase", "fixable"),
    ("xum-2732-a", "wide-phrase", "fixable"),
    # test runners
    ("pytest-doc-getting-started-135", "wide-tests", "fixable"),
    # a command's own timeout
    ("swe-agent-063", "wide-phrase", "ambiguous"),
]

# Successes that mention errors: none may be detected.
NEGATIVES = [
    "swe-agent-013",  # a source file view with `raise AttributeError(`
    "swe-agent-017",  # "Script completed successfully, no errors."
    "file-gemini-cli-yaml-1",  # YAML with timeout keys
    "file-aider-py-6",  # aider/exceptions.py
    "file-cli-md-1",  # npm docs
    "pytest-doc-markers-107",  # a passing test run
    "nginx-log-apisix2792",  # a log file with "[error] ... Connection refused"
    "codex-8104-ps",  # stderr warning, then the command's output
]


def _wide(record: dict) -> tuple[str, str] | None:
    message = Message(
        role="tool", content=record["text"], tool_call_id="c", is_error=record["is_error"]
    )
    failures = detect((message,), "", "wide")
    return (failures[0].rule, failures[0].kind) if failures else None


@pytest.mark.parametrize(("record_id", "rule", "kind"), POSITIVES, ids=[p[0] for p in POSITIVES])
def test_failure_families(record_id, rule, kind):
    record = RECORDS[record_id]
    assert record["label"] == kind, "the case must agree with the corpus label"
    assert _wide(record) == (rule, kind)


@pytest.mark.parametrize("record_id", NEGATIVES)
def test_successes_that_mention_errors_are_not_failures(record_id):
    record = RECORDS[record_id]
    assert record["label"] == "success"
    assert _wide(record) is None


# Precedence: constructed texts, each isolating one pair of competing signals.
@pytest.mark.parametrize(
    ("text", "kind", "evidence"),
    [
        (
            "HTTP 403 Forbidden: The user doesn't want to proceed with this tool use.",
            "unrecoverable",
            'denial "doesn\'t want to proceed"',
        ),
        (
            "429 Too Many Requests: You exceeded your current quota, please check your plan and billing details.",
            "unrecoverable",
            "quota 'exceeded your current quota'",
        ),
        (
            '403 {"message": "API rate limit exceeded for 1.2.3.4."}',
            "transient",
            "rate limit 'ate limit exceeded'",
        ),
        (
            "Error: command timed out after 120000 milliseconds (Connection reset by peer)",
            "ambiguous",
            "own timeout 'command timed out'",
        ),
        ("HTTP 404 Not Found", "fixable", "HTTP 404"),
        ("HTTP 410 Gone", "fixable", "HTTP 410"),
        ("HTTP 401 Unauthorized", "unrecoverable", "HTTP 401"),
        ("HTTP 503 Service Unavailable", "transient", "HTTP 503"),
        ("HTTP 500 Internal Server Error", "ambiguous", "HTTP 500"),
        (
            "HTTP 503 Service Unavailable, then HTTP 401 Unauthorized",
            "ambiguous",
            "HTTP 401,503 disagree",
        ),
        (
            "fatal: unable to access 'https://x/': Could not resolve host: x",
            "ambiguous",
            "conditions 'Could not resolve host'",
        ),
        ("connect ECONNREFUSED 127.0.0.1:5432", "ambiguous", "conditions 'ECONNREFUSED'"),
        ("read ECONNRESET", "transient", "condition 'ECONNRESET'"),
        ("bash: ./run.sh: Permission denied", "fixable", "condition './... Permission denied'"),
        (
            "Error: EACCES: permission denied, mkdir '/usr/local/lib/node_modules'",
            "unrecoverable",
            "condition 'Permission denied on a system path'",
        ),
        (
            "Error: EACCES: permission denied, open 'notes.txt'",
            "ambiguous",
            "conditions 'Permission denied'",
        ),
        ("cat: x.txt: No such file or directory", "fixable", "condition 'No such file'"),
        (
            "OSError: [Errno 28] No space left on device",
            "unrecoverable",
            "condition 'No space left on device'",
        ),
        ("TypeError: f() got an unexpected keyword argument 'q'", "fixable", "exception TypeError"),
        ("httpx.ReadTimeout: timed out", "transient", "exception ReadTimeout"),
        ("Error: 401 Unauthorized and an invalid params", "unrecoverable", "HTTP 401"),
        (
            "Error: Unauthorized; validation error",
            "ambiguous",
            "words 'Unauthorized' and 'validation error' disagree",
        ),
        ("Error: something broke", "ambiguous", "no evidence of a kind"),
    ],
)
def test_precedence(text, kind, evidence):
    assert classify_wide(text) == (kind, evidence)


@pytest.mark.parametrize(
    "text",
    [
        "Exit code: 0\nWall time: 1 seconds\nOutput:\nError: this line is only printed",
        '{"error": null, "data": []}',
        '{"exit_code": 0, "stdout": "Traceback (most recent call last):"}',
        "Command: ls\nDirectory: (root)\nStdout: errors.ts\nStderr: (empty)\nError: (none)\nExit Code: 0\nSignal: (none)\nBackground PIDs: (none)\nProcess Group PGID: 1",
        "# Troubleshooting\n\nError: EADDRINUSE means the port is taken.",
        "read_timeout: 10\nretries: 3",
    ],
)
def test_structure_says_success_before_the_words(text):
    assert judge(text, None) is None


def test_exit_codes_and_signals_decide_detection():
    assert judge("Exit code 2\nmake: *** [all] Error 2", None)[:2] == ("wide-exit", "ambiguous")
    assert judge("Output: x\nExited with code 1", None)[0] == "wide-exit"
    assert judge('{"exit_code": 1, "stderr": "ls: x: No such file or directory"}', None)[:2] == (
        "wide-exit",
        "fixable",
    )
    verdict = judge("Command: sleep 9\nStdout: (empty)\nExit Code: (none)\nSignal: 15", None)
    assert verdict == ("wide-signal", "ambiguous", "signal 15; signal 15")


CHAT = {
    "model": "m",
    "messages": [
        {"role": "user", "content": "Build it."},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"cmd":"cargo build"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": RECORDS["rust-mach2"]["text"]},
    ],
}


def test_the_request_field_selects_the_rules_and_the_header_reports_them():
    paper = process(CHAT, "chat", "", Options(form="c1"))
    assert paper.header == '{"form":"c1","changed":false,"failures":[]}'
    wide = process({**CHAT, "tool_error_rules": "wide"}, "chat", "", Options(form="c1"))
    assert wide.header == (
        '{"form":"c1","rules":"wide","changed":true,"failures":[{"message":2,"kind":"fixable",'
        '"rule":"wide-line","evidence":"line \'error[E0425]\'; words \'error[E\'"}]}'
    )
    assert "tool_error_rules" not in wide.body
    assert wide.body["messages"][2]["content"].endswith(
        "call the tool again with the corrected value."
    )


def test_the_server_option_is_the_default_and_the_field_overrides_it():
    assert process(CHAT, "chat", "", Options(rules="wide")).rules == "wide"
    named = process({**CHAT, "tool_error_rules": "paper"}, "chat", "", Options(rules="wide"))
    assert named.header == '{"form":"off","rules":"paper","changed":false,"failures":[]}'
    received = json.dumps({**CHAT, "tool_error_rules": "paper"}).encode()
    assert b"tool_error_rules" not in named.forward_bytes(received)


@pytest.mark.parametrize("value", ["broad", None, 1])
def test_a_bad_rules_value_is_a_request_error(value):
    with pytest.raises(RequestError) as caught:
        process({**CHAT, "tool_error_rules": value}, "chat", "", Options())
    assert caught.value.param == "tool_error_rules"
    assert (
        caught.value.message
        == f"tool_error_rules must be one of paper, wide, got {json.dumps(value)}"
    )


def test_options_validate_the_rules():
    with pytest.raises(ValueError, match="rules must be one of paper, wide, got 'all'"):
        Options(rules="all")


def test_paper_mode_is_unchanged_by_the_wide_rules():
    # The same conversation under the default options and an explicit paper rule set
    # detects the same failures; only a named rule set adds the "rules" key.
    body = {
        **CHAT,
        "messages": [
            *CHAT["messages"][:2],
            {"role": "tool", "tool_call_id": "c1", "content": "Error: 503 Service Unavailable"},
        ],
    }
    default = process(body, "chat", "", Options(form="c3"))
    named = process({**body, "tool_error_rules": "paper"}, "chat", "", Options(form="c3"))
    assert default.failures == named.failures
    assert (
        default.header
        == '{"form":"c3","changed":true,"failures":[{"message":2,"kind":"transient","rule":"generic"}]}'
    )
    assert named.header == default.header.replace('"form":"c3"', '"form":"c3","rules":"paper"')
    assert default.body == named.body
