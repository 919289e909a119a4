# ruff: noqa: E501
"""`exactserve toolerr FILE.json`: detections and each form's conversation, printed. The
expected output is written by hand from the documented format (docs/TOOLERR.md)."""

from __future__ import annotations

import json

from exactserve.server.cli import main

BODY = {
    "model": "m",
    "tool_errors": "c3",
    "messages": [
        {"role": "user", "content": "Hi"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "ls", "arguments": '{"dir":"/root"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "Error: EACCES"},
    ],
}
U = "This cannot be fixed by retrying or by changing the arguments. Tell the user what happened."
NOTE = 'Note from the tool runtime: the last attempt called ls with dir="/root" and it failed with: Error: EACCES'
FAILURES = '[{"message":2,"kind":"unrecoverable","rule":"generic"}]'

EXPECTED = f"""API: OpenAI Chat Completions (guessed; --api overrides)
User-Agent: (none)
Detections:
  [2] tool result for ls (call c1): kind unrecoverable, rule generic

=== form off: unchanged ===
X-Tool-Errors: {{"form":"off","changed":false,"failures":{FAILURES}}}
[0] user
    Hi
[1] assistant
    -> ls({{"dir":"/root"}}) (call c1)
[2] tool (call c1)
    Error: EACCES

=== form c1: rewritten ===
X-Tool-Errors: {{"form":"c1","changed":true,"failures":{FAILURES}}}
[0] user
    Hi
[1] assistant
    -> ls({{"dir":"/root"}}) (call c1)
[2] tool (call c1)
    Error: EACCES
    {U}

=== form c2: rewritten ===
X-Tool-Errors: {{"form":"c2","changed":true,"failures":{FAILURES}}}
[0] user
    Hi

    {NOTE}

    {U}

=== form c3: rewritten ===
X-Tool-Errors: {{"form":"c3","changed":true,"failures":{FAILURES}}}
[0] user
    Hi
[1] assistant
    -> ls({{"dir":"/root"}}) (call c1)
[2] tool (call c1)
    Error: EACCES
[3] user (added by the layer)
    {NOTE}

    {U}

=== form c4: rewritten ===
X-Tool-Errors: {{"form":"c4","changed":true,"failures":{FAILURES}}}
[0] user
    Hi
[1] user (added by the layer)
    {NOTE}

    {U}
"""


def test_prints_detections_and_every_form(tmp_path, capsys):
    path = tmp_path / "body.json"
    path.write_text(json.dumps(BODY))
    assert main(["toolerr", str(path)]) == 0
    assert capsys.readouterr().out == EXPECTED


def test_json_prints_each_forwarded_body(tmp_path, capsys):
    path = tmp_path / "body.json"
    path.write_text(json.dumps(BODY))
    assert (
        main(["toolerr", str(path), "--json", "--api", "chat", "--user-agent", "codex_cli_rs/0.42"])
        == 0
    )
    out = capsys.readouterr().out
    # Under Codex's rules "Error: EACCES" is not a failure: nothing is rewritten.
    assert out.startswith(
        "API: OpenAI Chat Completions (from --api)\nUser-Agent: codex_cli_rs/0.42\nDetections:\n  none\n\n=== form off: unchanged ===\n"
    )
    unchanged = json.dumps(
        {k: v for k, v in BODY.items() if k != "tool_errors"}, ensure_ascii=False, indent=2
    )
    assert out.count(unchanged) == 5


def test_errors_are_one_line_and_exit_status_2(tmp_path, capsys):
    missing = tmp_path / "missing.json"
    assert main(["toolerr", str(missing)]) == 2
    assert "No such file or directory" in capsys.readouterr().err
    bad = tmp_path / "bad.json"
    bad.write_text("{nope")
    assert main(["toolerr", str(bad)]) == 2
    assert (
        capsys.readouterr().err
        == f"exactserve toolerr: error: {bad}: Expecting property name enclosed in double quotes: line 1 column 2 (char 1)\n"
    )
    bad.write_text(json.dumps({**BODY, "tool_errors": "c9"}))
    assert main(["toolerr", str(bad)]) == 2
    assert (
        capsys.readouterr().err
        == f'exactserve toolerr: error: {bad}: tool_errors must be one of off, c1, c2, c3, c4, got "c9"\n'
    )
