"""The harness around an agent run against `exactserve serve`, all on 127.0.0.1: the server
in a child process, a recording HTTP pass-through between the agent and it, and the checks of
an OpenAI chat SSE stream as this server sends it (bench/agent_qwen_code.py uses them).
"""

from __future__ import annotations

import http.client
import http.server
import json
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

HOP_BY_HOP = {"connection", "keep-alive", "transfer-encoding", "content-length", "host"}


class Server:
    """`exactserve serve` on the demo model (reference backend) in a child process, its output
    in `log_path`."""

    def __init__(self, log_path: Path, *, alias: str, ctx_size: int, tool_errors: str) -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log_path = log_path
        command = [
            sys.executable, "-m", "exactserve.server.cli", "serve",
            "--host", "127.0.0.1", "--port", str(self.port), "--backend", "reference",
            "--alias", alias, "--ctx-size", str(ctx_size), "--tool-errors", tool_errors,
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
                if not is_whole_call(call)
            ]
    if finishes != [0]:
        problems.append(f"finish_reason given for choices {finishes}, expected once for 0")
    usage = [p for p in payloads if p.get("usage")]
    if want_usage and (len(usage) != 1 or usage[0] is not payloads[-1] or usage[0]["choices"]):
        problems.append("no single final usage chunk with empty choices")
    return payloads, problems


def is_whole_call(call: dict) -> bool:
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
