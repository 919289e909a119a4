"""`exactserve serve` as a user runs it: progress while loading, one line with the URL,
/health 503 until the model is ready, Ctrl-C ends in-flight streams and exits cleanly
without a traceback, and bad options exit with status 2 and one clear line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time

import httpx
import pytest
from live_server import free_port
from starlette.testclient import TestClient

from exactserve.server.app import ServerState, create_app

pytestmark = pytest.mark.llama_cpp_data


def test_health_is_503_and_requests_get_503_while_loading():
    client = TestClient(create_app(ServerState()))
    assert client.get("/health").status_code == 503
    response = client.post("/v1/chat/completions", json={"messages": []})
    assert response.status_code == 503 and "still loading" in response.json()["error"]["message"]
    response = client.post("/v1/messages", json={})
    assert response.json()["type"] == "error" and response.status_code == 503


def test_serve_loads_prints_the_url_and_stops_cleanly_on_ctrl_c(qwen_path):
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "exactserve", "serve", str(qwen_path), "--port", str(port)]
        + ["--alias", "tiny", "--backend", "reference"],
        stderr=subprocess.PIPE,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert process.poll() is None, process.stderr.read()
            try:
                if httpx.get(url + "/health").status_code == 200:
                    break
            except httpx.TransportError:
                pass
            assert time.monotonic() < deadline, "the server did not become healthy"
            time.sleep(0.1)
        body = {
            "model": "tiny",
            "messages": [{"role": "user", "content": "Talk"}],
            "max_tokens": 400,
            "stream": True,
            "ignore_eos": True,
        }
        lines: list[str] = []
        started = threading.Event()

        def stream() -> None:
            with httpx.stream("POST", url + "/v1/chat/completions", json=body, timeout=60) as r:
                for line in r.iter_lines():
                    lines.append(line)
                    if len(lines) > 4:
                        started.set()

        reader = threading.Thread(target=stream)
        reader.start()
        assert started.wait(60), lines
        process.send_signal(signal.SIGINT)
        reader.join(timeout=30)
        assert not reader.is_alive(), "the open stream did not end on Ctrl-C"
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
    stderr = process.stderr.read()
    assert "Traceback" not in stderr, stderr
    assert f"loading {qwen_path.name}:" in stderr
    assert "converting" in stderr or "mapping" in stderr  # mapping: from the weight cache
    assert f"serving tiny at {url}/v1 (backend reference" in stderr
    payloads = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
    assert payloads[-1].get("error") or payloads[-1]["choices"][0]["finish_reason"]
    assert len(payloads) < 400  # it ended early, not by running to max_tokens


@pytest.mark.parametrize(
    "argv, message",
    [
        (["/no/such/model.gguf"], "no such model file"),
        (["MODEL", "--ctx-size", "0"], "--ctx-size must be positive"),
        (["MODEL", "--max-running", "0"], "--max-running must be at least 1"),
        (["MODEL", "--threads", "0"], "argument --threads: must be at least 1, not 0"),
        (["MODEL", "--chat-template-file", "/no/such.jinja"], "no such chat template file"),
    ],
)
def test_bad_options_exit_2_with_one_clear_line(qwen_path, argv, message):
    argv = [str(qwen_path) if a == "MODEL" else a for a in argv]
    run = subprocess.run(
        [sys.executable, "-m", "exactserve", "serve", *argv, "--port", str(free_port())],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert run.returncode == 2, run.stderr
    assert message in run.stderr and "Traceback" not in run.stderr


def test_a_stopped_engine_answers_503_not_500(qwen_path):
    from live_server import LiveServer

    server = LiveServer(qwen_path)
    try:
        server.engine.stop()
        with httpx.Client(base_url=server.url) as client:
            body = {"messages": [{"role": "user", "content": "x"}], "max_tokens": 1}
            response = client.post("/v1/chat/completions", json=body)
            assert response.status_code == 503
            assert "shutting down" in response.json()["error"]["message"]
            assert client.get("/health").status_code == 503
    finally:
        server.close()
