"""Qwen Code, a real agent, headless against `exactserve serve` on the demo model, checking
the protocol and the tool-error layer end to end, all on 127.0.0.1. Usage:
`python bench/agent_qwen_code.py [--keep DIR] [--fixture PATH] [--timeout S]`.

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
import http.client
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

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
HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


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


class Server:
    """`exactserve serve` on the demo model in a child process, its output in `log_path`."""

    def __init__(self, log_path: Path, *, tool_errors: str = "c3") -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log_path = log_path
        command = [
            sys.executable, "-m", "exactserve.server.cli", "serve",
            "--host", "127.0.0.1", "--port", str(self.port), "--backend", "reference",
            "--alias", MODEL_ALIAS, "--ctx-size", str(CTX_SIZE), "--tool-errors", tool_errors,
        ]  # fmt: skip
        self._log = open(log_path, "wb")
        self.process = subprocess.Popen(
            command, stdout=self._log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )

    def wait_ready(self, timeout: float = 300) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"exactserve serve exited: {self.log_path.read_text()}")
            try:
                conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=5)
                conn.request("GET", "/health")
                if conn.getresponse().status == 200:
                    return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"exactserve serve was not ready after {timeout:.0f} s")

    def stop(self) -> list[str]:
        """Stop the server; its log lines."""
        self.process.terminate()
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._log.close()
        return self.log_path.read_text(errors="replace").splitlines()


@dataclass
class Exchange:
    """One request through the recorder, as the bytes went by (header names lowercased)."""

    method: str
    path: str
    request_headers: dict[str, str]
    request_body: bytes
    status: int = 0
    response_headers: dict[str, str] = field(default_factory=dict)
    response_body: bytes = b""

    def request_json(self) -> dict:
        return json.loads(self.request_body)


class Recorder:
    """An HTTP/1.1 pass-through on loopback to `upstream_port`: relays each response as it
    arrives (chunked) and appends an Exchange to `exchanges`."""

    def __init__(self, upstream_port: int) -> None:
        self.exchanges: list[Exchange] = []
        exchanges = self.exchanges

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def relay(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                sent = {k.lower(): v for k, v in self.headers.items()}
                exchange = Exchange(self.command, self.path, sent, body)
                exchanges.append(exchange)
                headers = {k: v for k, v in sent.items() if k not in HOP_BY_HOP}
                headers["accept-encoding"] = "identity"
                upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=3600)
                upstream.request(self.command, self.path, body=body, headers=headers)
                response = upstream.getresponse()
                exchange.status = response.status
                exchange.response_headers = {k.lower(): v for k, v in response.getheaders()}
                self.send_response(response.status)
                for key, value in response.getheaders():
                    if key.lower() not in HOP_BY_HOP:
                        self.send_header(key, value)
                self.send_header("Transfer-Encoding", "chunked")
                self.end_headers()
                while piece := response.read1(65536):
                    exchange.response_body += piece
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                    self.wfile.flush()
                self.wfile.write(b"0\r\n\r\n")
                upstream.close()

            do_GET = do_POST = relay

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


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


def parse_stream(body: bytes, want_usage: bool) -> tuple[list[dict], list[str]]:
    """The JSON payloads of an OpenAI chat SSE stream, and what is wrong with it."""
    problems: list[str] = []
    payloads: list[dict] = []
    text = body.decode()
    events = [e for e in text.split("\n\n") if e.strip()]
    if not text.endswith("\n\n") or not events or events[-1] != "data: [DONE]":
        problems.append("the stream does not end with data: [DONE] and a blank line")
    for event in events:
        if not event.startswith("data: ") or "\n" in event:
            problems.append(f"not one data line: {event[:120]!r}")
        elif event != "data: [DONE]":
            try:
                payloads.append(json.loads(event[len("data: ") :]))
            except ValueError:
                problems.append(f"not JSON: {event[:120]!r}")
    finishes = []
    for payload in payloads:
        if payload.get("object") != "chat.completion.chunk":
            problems.append(f"not a chat.completion.chunk: {str(payload)[:200]}")
        for choice in payload.get("choices", []):
            if choice.get("finish_reason") is not None:
                finishes.append(choice["index"])
            problems += [
                f"malformed tool-call delta: {call}"
                for call in choice.get("delta", {}).get("tool_calls") or []
                if not _is_whole_call(call)
            ]
    if finishes != [0]:
        problems.append(f"finish_reason given for choices {finishes}, expected once for 0")
    usage = [p for p in payloads if p.get("usage")]
    if want_usage and (len(usage) != 1 or usage[0] is not payloads[-1] or usage[0]["choices"]):
        problems.append("no single final usage chunk with empty choices")
    return payloads, problems


def _is_whole_call(call: dict) -> bool:
    """A streamed call sent whole in one delta, as this server sends them."""
    function = call.get("function") or {}
    try:
        arguments = json.loads(function.get("arguments"))
    except (TypeError, ValueError):
        return False
    named = isinstance(call.get("index"), int) and call.get("id") and function.get("name")
    return bool(named) and call.get("type") == "function" and isinstance(arguments, dict)


def streamed_calls(payloads: list[dict]) -> list[str]:
    return [
        call.get("function", {}).get("name")
        for payload in payloads
        for choice in payload.get("choices", [])
        for call in choice.get("delta", {}).get("tool_calls") or []
    ]


def tool_messages(body: dict) -> list[tuple[int, str]]:
    """(index, text) of each tool message, text parts joined by newlines."""
    found = []
    for index, message in enumerate(body.get("messages", [])):
        if message.get("role") == "tool":
            content = message.get("content") or ""
            if isinstance(content, list):
                content = "\n".join(p.get("text", "") for p in content if isinstance(p, dict))
            found.append((index, content))
    return found


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
    server = Server(workdir / "server.log")
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
