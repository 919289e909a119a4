"""1 MB adversarial tool results through the wide rules, the CLI and the proxy, each in a
bounded time: no pattern of the layer backtracks catastrophically (issue 10)."""

from __future__ import annotations

import json
import time

import pytest
from starlette.testclient import TestClient

from exactserve.server.cli import main
from exactserve.server.proxy import ProxyConfig, create_app
from exactserve.toolerr.forms import Options
from exactserve.toolerr.wide import judge

MB = 1 << 20
BUDGET_S = 5.0  # generous for two slow cores; a linear scan of 1 MB takes milliseconds

# Repetitions aimed at each pattern family: long lines, dotted names, paths with colons,
# unclosed parentheses, digits after HTTP, spaces, exit-code words, JSON that never closes.
ADVERSARIAL = {
    "one-long-line": "a" * MB,
    "dotted-names": "a." * (MB // 2),
    "colons": "x:" * (MB // 2),
    "parens": "(" * MB,
    "http-digits": "HTTP 5" * (MB // 6),
    "spaces": " " * MB,
    "newlines": "\n" * MB,
    "error-words": "Error" * (MB // 5),
    "exit-words": "exit code " * (MB // 10),
    "unclosed-json": '{"error": "' + "e" * MB,
    "deep-json": '{"a":' * (MB // 5),
    "diagnostic-tail": "ls: " + "x" * MB + ": No such file",
    "tab-numbers": " \t1" * (MB // 3),
}


@pytest.mark.parametrize("name", sorted(ADVERSARIAL))
def test_wide_rules_take_bounded_time(name):
    start = time.perf_counter()
    judge(ADVERSARIAL[name], None)
    judge(ADVERSARIAL[name], "is_error")
    assert time.perf_counter() - start < BUDGET_S


def _body(text: str) -> dict:
    return {
        "model": "m",
        "tool_error_rules": "wide",
        "tool_errors": "c1",
        "messages": [
            {"role": "user", "content": "go"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}
                ],
            },
            {"role": "tool", "tool_call_id": "c", "content": text},
        ],
    }


def test_a_1mb_result_through_the_cli(tmp_path, capsys):
    path = tmp_path / "big.json"
    path.write_text(json.dumps(_body("Error: " + "(x." * (MB // 3))))
    start = time.perf_counter()
    assert main(["toolerr", str(path), "--rules", "wide", "--json"]) == 0
    assert time.perf_counter() - start < 4 * BUDGET_S
    assert '"rules":"wide"' in capsys.readouterr().out


def test_a_1mb_result_through_the_proxy():
    # No upstream listens on port 9: the layer runs, then the proxy answers 502.
    app = create_app(ProxyConfig("http://127.0.0.1:9", Options(), timeout_s=5.0))
    body = json.dumps(_body("ConnectionResetError: [Errno 104] " + "a." * (MB // 2)))
    with TestClient(app) as client:
        start = time.perf_counter()
        response = client.post("/v1/chat/completions", content=body)
        assert time.perf_counter() - start < 4 * BUDGET_S
    assert response.status_code == 502
    header = json.loads(response.headers["x-tool-errors"])
    assert (header["rules"], header["changed"]) == ("wide", True)
