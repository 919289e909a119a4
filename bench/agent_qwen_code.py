"""Qwen Code, a real agent, headless against `exactserve serve` on the demo model, checking
the protocol and the tool-error layer end to end, all on 127.0.0.1. Usage:
`python -m bench.agent_qwen_code [--keep DIR] [--fixture PATH] [--timeout S]`.

Installs @qwen-code/qwen-code@QWEN_CODE_VERSION with npm once into $EXACTSERVE_CACHE/agents/
(default ~/.cache/exactserve/agents/), starts `exactserve serve --tool-errors c3` behind a
recording pass-through, and runs `qwen` headless against it with a private HOME (settings:
no auto-update, telemetry, skills or auto-memory; only read_file and edit eager; greedy,
MAX_TOKENS, stop at END_MARKER; no request or stream-idle timeouts, for slow CPU prefill).

A 270M base model ignores Qwen Code's system prompt but copies the start of its context, so
`--system-prompt` is two calls in the Hermes syntax of the demo model's template, then
END_MARKER. The server parses two real calls, Qwen Code runs them and both fail: read_file
of a missing file (`File not found:`, rule qwen-notfound, ambiguous) and edit of a file not
read yet (`File ... has not been read`, rule qwen-error, fixable). Its second request
carries both results, c3 rewrites the fixable one, and `--max-session-turns 2` ends the
session (exit status 53).

Checked: each request has a QwenCode/ User-Agent and gets 200 with a well-formed SSE stream
(JSON chunks, whole tool-call deltas, one finish_reason, the usage chunk asked for, [DONE]
last); request 1 carries the tools and answer 1 streams both calls; request 2 carries both
failures, and its X-Tool-Errors says c3, changed, with both rules; the server logged each
header; Qwen Code reported no API error. Prints what it saw and PASS (exit 0) or FAIL.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from .agent_harness import Exchange, Recorder, Server, parse_stream, streamed_calls, tool_messages

QWEN_CODE_PACKAGE = "@qwen-code/qwen-code"
QWEN_CODE_VERSION = "0.24.4"
MODEL_ALIAS = "exactserve-demo"
CTX_SIZE = 8192
MAX_TOKENS = 256
# The system prompt ends its calls with this line and the requests stop there, so the turn
# ends right after the calls: Qwen Code refuses an edit whose turn ended by length.
END_MARKER = "END_OF_CALLS"
CHAT_PATH = "/v1/chat/completions"
PROMPT = "Read missing.txt, then change alpha to beta in notes.txt."
QWEN_OK_EXITS = (0, 53)  # 53: --max-session-turns ended the session


def install_qwen_code() -> Path:
    """The `qwen` executable of the pinned version, installed with npm on first use."""
    cache = os.environ.get("EXACTSERVE_CACHE") or Path.home() / ".cache" / "exactserve"
    prefix = Path(cache) / "agents" / f"qwen-code-{QWEN_CODE_VERSION}"
    qwen = prefix / "node_modules" / ".bin" / "qwen"
    if not qwen.exists():
        if shutil.which("npm") is None:
            raise RuntimeError("npm is not installed; Qwen Code needs Node.js 20+ and npm")
        prefix.mkdir(parents=True, exist_ok=True)
        package = f"{QWEN_CODE_PACKAGE}@{QWEN_CODE_VERSION}"
        npm = ["npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund", package]
        subprocess.run(npm, check=True)
    version = subprocess.run(
        [str(qwen), "--version"], capture_output=True, text=True, timeout=120, check=True
    ).stdout.strip()
    if version != QWEN_CODE_VERSION:
        raise RuntimeError(f"{qwen} is version {version}, expected {QWEN_CODE_VERSION}")
    return qwen


def tool_call_text(name: str, arguments: dict) -> str:
    """One call in the Hermes syntax the demo model's built-in template describes."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def qwen_settings() -> dict:
    """~/.qwen/settings.json for the run: nothing leaves loopback, small requests, greedy."""
    generation = {
        "timeout": 3_600_000,
        "streamIdleTimeoutMs": 0,
        "maxRetries": 0,
        "contextWindowSize": CTX_SIZE,
        "samplingParams": {"temperature": 0, "max_tokens": MAX_TOKENS, "stop": [END_MARKER]},
    }
    return {
        "general": {"enableAutoUpdate": False},
        "privacy": {"usageStatisticsEnabled": False},
        "telemetry": {"enabled": False},
        "memory": {"enableManagedAutoMemory": False, "enableManagedAutoDream": False},
        "skills": {"disabledLevels": ["project", "user", "extension", "bundled"]},
        "tools": {
            "core": ["read_file", "edit"],
            "eager": ["read_file", "edit"],
            "useRipgrep": False,
        },
        "model": {"generationConfig": generation},
    }


@dataclass
class AgentRun:
    returncode: int
    stdout: str
    stderr: str
    events: list[dict]


def run_qwen(qwen: Path, base_url: str, work: Path, home: Path, timeout: float) -> AgentRun:
    """Qwen Code, headless, in `work` with HOME=`home` (its settings written there)."""
    (home / ".qwen").mkdir(parents=True, exist_ok=True)
    (home / ".qwen" / "settings.json").write_text(json.dumps(qwen_settings(), indent=1))
    edit = {"file_path": str(work / "notes.txt"), "old_string": "alpha", "new_string": "beta"}
    read = {"file_path": str(work / "missing.txt")}
    calls = [tool_call_text("read_file", read), tool_call_text("edit", edit), END_MARKER]
    command = [
        str(qwen), "--auth-type", "openai", "--openai-base-url", base_url,
        "--openai-api-key", "sk-local", "--model", MODEL_ALIAS,
        "--system-prompt", "\n".join(calls), "--approval-mode", "auto-edit",
        "--max-session-turns", "2", "--output-format", "stream-json", PROMPT,
    ]  # fmt: skip
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OPENAI_", "QWEN_", "DASHSCOPE_")) and not k.lower().endswith("proxy")
    }
    env.update({"HOME": str(home), "NO_PROXY": "127.0.0.1", "NO_COLOR": "1"})
    done = subprocess.run(
        command, cwd=work, env=env, capture_output=True, text=True, timeout=timeout
    )
    events = [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    return AgentRun(done.returncode, done.stdout, done.stderr, events)


@dataclass
class Report:
    seen: list[str]
    problems: list[str]

    @property
    def passed(self) -> bool:
        return not self.problems


def check(exchanges: list[Exchange], server_log: list[str], agent: AgentRun) -> Report:
    """Everything the module docstring lists as checked."""
    report = Report([], [])
    seen, problems = report.seen, report.problems
    chats = [e for e in exchanges if e.method == "POST" and e.path == CHAT_PATH]
    others = [f"{e.method} {e.path} -> {e.status}" for e in exchanges if e not in chats]
    seen.append(f"qwen exit status {agent.returncode}; {len(chats)} chat requests; other {others}")
    if agent.returncode not in QWEN_OK_EXITS:
        problems.append(f"qwen exited with {agent.returncode}: {agent.stderr[-2000:]}")
    if "API Error" in agent.stdout + agent.stderr:
        problems.append("qwen reported an API error")
    if any(e.status != 200 for e in exchanges):
        problems.append(f"not 200: {[(e.path, e.status) for e in exchanges if e.status != 200]}")
    if len(chats) != 2:
        problems.append(f"expected 2 chat requests (two turns), got {len(chats)}")
    for number, exchange in enumerate(chats, 1):
        user_agent = exchange.request_headers.get("user-agent", "")
        body = exchange.request_json()
        want_usage = bool((body.get("stream_options") or {}).get("include_usage"))
        payloads, stream_problems = parse_stream(exchange.response_body, want_usage)
        header = exchange.response_headers.get("x-tool-errors")
        seen.append(
            f"request {number}: User-Agent {user_agent!r}, stream={body.get('stream')}, "
            f"{len(body.get('messages', []))} messages, tools "
            f"{[t['function']['name'] for t in body.get('tools', [])]}, "
            f"max_tokens={body.get('max_tokens')}; answer {exchange.status}, {len(payloads)} "
            f"chunks, streamed calls {streamed_calls(payloads)}; X-Tool-Errors {header}"
        )
        if not user_agent.startswith("QwenCode/"):
            problems.append(f"request {number}: User-Agent {user_agent!r} is not QwenCode/")
        if body.get("stream") is not True:
            problems.append(f"request {number} is not streamed")
        problems += [f"answer {number}: {p}" for p in stream_problems]
        if not header:
            problems.append(f"answer {number}: no X-Tool-Errors header")
    if len(chats) == 2:
        _check_turns(chats[0], chats[1], report)
    logged = [
        line.split("X-Tool-Errors: ", 1)[1] for line in server_log if "X-Tool-Errors: " in line
    ]
    seen.append(f"server log: {len(logged)} X-Tool-Errors lines")
    if logged != [e.response_headers.get("x-tool-errors") for e in chats]:
        problems.append(f"the server logged {logged}, not the headers sent")
    results = [
        block
        for event in agent.events
        if event.get("type") == "user"
        for block in event.get("message", {}).get("content", [])
        if isinstance(block, dict) and block.get("type") == "tool_result"
    ]
    seen.append(
        "qwen tool results: "
        + "; ".join(f"is_error={b.get('is_error')} {str(b.get('content'))[:80]!r}" for b in results)
    )
    if not any(b.get("is_error") for b in results):
        problems.append("qwen ran no tool that failed")
    return report


def _check_turns(first: Exchange, second: Exchange, report: Report) -> None:
    problems = report.problems
    names = {t["function"]["name"] for t in first.request_json().get("tools", [])}
    if not {"read_file", "edit"} <= names:
        problems.append(f"request 1 lacks the read_file and edit tools: {sorted(names)}")
    called = streamed_calls(parse_stream(first.response_body, False)[0])
    if called != ["read_file", "edit"]:
        problems.append(f"answer 1 streamed calls {called}, expected read_file and edit")
    results = tool_messages(second.request_json())
    report.seen.append(
        "request 2 tool messages: " + "; ".join(f"[{i}] {t[:100]!r}" for i, t in results)
    )
    expected = set()
    for index, text in results:
        if text.startswith("File not found:"):
            expected.add((index, "qwen-notfound", "ambiguous"))
        elif text.startswith("File ") and "has not been read" in text:
            expected.add((index, "qwen-error", "fixable"))
    if {rule for _, rule, _ in expected} != {"qwen-notfound", "qwen-error"}:
        problems.append("request 2 lacks a 'File not found:' or a 'File ... has not been read'")
    try:
        header = json.loads(second.response_headers.get("x-tool-errors") or "")
    except ValueError:
        problems.append("answer 2: X-Tool-Errors is not JSON")
        return
    found = {(f["message"], f["rule"], f["kind"]) for f in header.get("failures", [])}
    if header.get("form") != "c3" or header.get("changed") is not True or found != expected:
        problems.append(f"answer 2: X-Tool-Errors {header}, expected c3, changed, {expected}")


def write_fixture(exchange: Exchange, path: Path) -> None:
    """Save a captured request (the one carrying the failed results) with its provenance,
    for tests that replay Qwen Code's real format without npm or a model."""
    node = subprocess.run(["node", "--version"], capture_output=True, text=True).stdout.strip()
    dropped = ("authorization", "host", "content-length")
    fixture = {
        "provenance": {
            "agent": f"Qwen Code {QWEN_CODE_VERSION} (npm {QWEN_CODE_PACKAGE})",
            "node": node,
            "captured": time.strftime("%Y-%m-%d"),
            "how": (
                "bench/agent_qwen_code.py --fixture: Qwen Code's 2nd request (after read_file "
                "of a missing file and edit of an unread file failed) as the pass-through in "
                "front of `exactserve serve --tool-errors c3` got it, less the headers "
                f"{', '.join(dropped)}; x_tool_errors: the server's answer header"
            ),
        },
        "request_headers": {k: v for k, v in exchange.request_headers.items() if k not in dropped},
        "request_body": exchange.request_json(),
        "status": exchange.status,
        "x_tool_errors": exchange.response_headers.get("x-tool-errors"),
    }
    path.write_text(json.dumps(fixture, indent=1, ensure_ascii=False) + "\n")


def run_session(workdir: Path, *, timeout: float = 1800) -> tuple[Report, list[Exchange]]:
    """Install (cached), serve, run the agent, check; logs and exchanges go to `workdir`."""
    qwen = install_qwen_code()
    # The model copies the calls' paths token by token: a short path, the same on every
    # run, keeps the prompt and so the copy the same.
    work = Path(tempfile.gettempdir()) / f"exactserve-qc-{os.getuid()}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    (work / "notes.txt").write_text("alpha\n")
    workdir.mkdir(parents=True, exist_ok=True)
    server = Server(workdir / "server.log", alias=MODEL_ALIAS, ctx_size=CTX_SIZE, tool_errors="c3")
    recorder = None
    try:
        server.wait_ready()
        recorder = Recorder(server.port)
        base_url = f"http://127.0.0.1:{recorder.port}/v1"
        agent = run_qwen(qwen, base_url, work, workdir / "home", timeout)
    finally:
        if recorder is not None:
            recorder.stop()
        server_log = server.stop()
        shutil.rmtree(work, ignore_errors=True)
    (workdir / "qwen.stdout.jsonl").write_text(agent.stdout)
    (workdir / "qwen.stderr.txt").write_text(agent.stderr)
    exchanges = json.dumps(
        [asdict(e) for e in recorder.exchanges], indent=1, default=lambda b: b.decode()
    )
    (workdir / "exchanges.json").write_text(exchanges)
    return check(recorder.exchanges, server_log, agent), recorder.exchanges


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--keep", type=Path, help="keep the run's files (exchanges, logs) here")
    parser.add_argument("--fixture", type=Path, help="on PASS, save the second request here")
    parser.add_argument("--timeout", type=float, default=1800, help="agent timeout, seconds")
    args = parser.parse_args(argv)
    if args.keep and args.keep.exists() and any(args.keep.iterdir()):
        parser.error(f"--keep {args.keep}: the folder must be empty or absent")
    workdir = args.keep or Path(tempfile.mkdtemp(prefix="exactserve-qwen-code-"))
    started = time.perf_counter()
    try:
        report, exchanges = run_session(workdir, timeout=args.timeout)
        if args.fixture and report.passed:
            write_fixture([e for e in exchanges if e.path == CHAT_PATH][1], args.fixture)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    print(f"Qwen Code {QWEN_CODE_VERSION} against exactserve serve, c3 on the demo model")
    for line in report.seen:
        print(f"  seen: {line}")
    for line in report.problems:
        print(f"  problem: {line}")
    print(f"{'PASS' if report.passed else 'FAIL'} ({time.perf_counter() - started:.0f} s)")
    return 0 if report.passed else 1


if __name__ == "__main__":
    sys.exit(main())
