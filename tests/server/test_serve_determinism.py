"""Determinism over the wire: a greedy request and a seeded sampled request return
byte-identical text and logprobs alone, while 7 other different requests run beside them
(staggered), and with a cold or warm prefix cache. And cancellation: streaming clients that
disconnect at random points leave the KV pool as it was (read from /metrics)."""

from __future__ import annotations

import asyncio
import random
import re
import time

import httpx
import pytest

pytestmark = pytest.mark.llama_cpp_data

HEADERS = {"Authorization": "Bearer sekret"}
GREEDY = {"temperature": 0}
SEEDED = {"temperature": 0.9, "top_p": 0.95, "seed": 1234}


def _body(content: str, sampling: dict, max_tokens: int = 10) -> dict:
    return {
        "model": "tiny-qwen",
        "messages": [{"role": "user", "content": content}],
        "max_tokens": max_tokens,
        "logprobs": True,
        "top_logprobs": 2,
        **sampling,
    }


async def _post(client: httpx.AsyncClient, body: dict, delay: float = 0.0) -> bytes:
    await asyncio.sleep(delay)
    response = await client.post("/v1/chat/completions", json=body, headers=HEADERS)
    assert response.status_code == 200, response.text
    choice = response.json()["choices"][0]
    # byte-identical: the text and the logprobs exactly as serialised
    return (choice["message"]["content"] + "\x00").encode() + httpx.Response(
        200, json=choice["logprobs"]
    ).content


async def _alone_and_crowded(url: str, needle: dict) -> tuple[bytes, list[bytes]]:
    async with httpx.AsyncClient(base_url=url, timeout=300) as client:
        alone = await _post(client, needle)
        rng = random.Random(3)
        others = [
            _body(f"other request {i} " + "words " * rng.randrange(1, 40), SEEDED | {"seed": i})
            for i in range(7)
        ]
        crowded = []
        for position in (0, 3, 7):  # where the needle arrives among the others
            tasks = [_post(client, other, delay=0.01 * i) for i, other in enumerate(others)]
            tasks.insert(position, _post(client, needle, delay=0.01 * position))
            results = await asyncio.gather(*tasks)
            crowded.append(results[position])
    return alone, crowded


@pytest.mark.parametrize("sampling", [GREEDY, SEEDED], ids=["greedy", "seeded"])
def test_same_bytes_alone_and_among_seven_others(qwen_server, sampling):
    needle = _body("The needle request, with a prompt of its own.", sampling)
    alone, crowded = asyncio.run(_alone_and_crowded(qwen_server.url, needle))
    assert crowded == [alone] * 3


def test_same_bytes_with_a_cold_and_a_warm_prefix_cache(qwen_path):
    from live_server import LiveServer

    server = LiveServer(qwen_path, alias="tiny-qwen", api_key="sekret", prefix_cache_blocks=64)
    try:
        system = "You are a careful assistant. " * 12  # several full 16-token blocks
        body = _body("q", SEEDED)
        body["messages"].insert(0, {"role": "system", "content": system})

        async def run() -> list[tuple[bytes, int]]:
            out = []
            async with httpx.AsyncClient(base_url=server.url, timeout=300) as client:
                for _ in range(2):
                    response = await client.post("/v1/chat/completions", json=body, headers=HEADERS)
                    data = response.json()
                    cached = data["usage"]["prompt_tokens_details"]["cached_tokens"]
                    out.append((response.content.split(b'"choices"')[1], cached))
            return out

        (cold, n_cold), (warm, n_warm) = asyncio.run(run())
        assert n_cold == 0 and n_warm >= 64
        assert _strip_ids(cold) == _strip_ids(warm)
    finally:
        server.close()


def _strip_ids(payload: bytes) -> bytes:
    """The choices and usage without the cache figure, which is the point of the test."""
    return re.sub(rb'"cached_tokens":\d+', b"", payload)


def _metric(text: str, name: str) -> float:
    match = re.search(rf"^{name} (\S+)$", text, re.M)
    assert match, name
    return float(match.group(1))


@pytest.mark.parametrize("prefix_cache_blocks", [0, 64])
def test_disconnecting_streams_return_every_block(qwen_path, prefix_cache_blocks):
    from live_server import LiveServer

    server = LiveServer(
        qwen_path, api_key="sekret", alias="tiny-qwen", prefix_cache_blocks=prefix_cache_blocks
    )

    async def client_that_leaves(client: httpx.AsyncClient, i: int, rng: random.Random):
        body = _body(f"stream {i} " + "text " * rng.randrange(1, 60), SEEDED, max_tokens=300)
        body["stream"] = True
        leave_after = rng.randrange(0, 12)
        async with client.stream(
            "POST", "/v1/chat/completions", json=body, headers=HEADERS
        ) as response:
            seen = 0
            async for _ in response.aiter_lines():
                seen += 1
                if seen > leave_after:
                    break  # closing the stream mid-way disconnects

    async def run() -> tuple[str, str]:
        async with httpx.AsyncClient(base_url=server.url, timeout=300) as client:
            before = (await client.get("/metrics", headers=HEADERS)).text
            rng = random.Random(11)
            await asyncio.gather(*(client_that_leaves(client, i, rng) for i in range(20)))
            for _ in range(200):  # the engine releases at its next step boundary
                after = (await client.get("/metrics", headers=HEADERS)).text
                if _metric(after, "exactserve_requests_running") == 0 and (
                    _metric(after, "exactserve_requests_waiting") == 0
                ):
                    break
                await asyncio.sleep(0.05)
            return before, after

    try:
        before, after = asyncio.run(run())
        assert _metric(before, "exactserve_kv_blocks_used") == 0
        assert _metric(after, "exactserve_kv_blocks_used") == 0
        assert _metric(after, "exactserve_requests_running") == 0
        assert _metric(after, "exactserve_requests_cancelled_total") == 20  # all left early
        if not prefix_cache_blocks:
            assert _metric(after, "exactserve_kv_blocks_free") == _metric(
                after, "exactserve_kv_blocks_total"
            )
    finally:
        server.close()


def test_logprobs_are_exactly_the_contracts_log_softmax_of_the_logits(qwen_server, qwen_path):
    """Recompute outside the server: the model's logits for the prompt and each generated
    token, the contract's log_softmax, and compare every returned value bit for bit."""
    import numpy as np

    from exactserve.reference.logprobs import log_softmax, top_logprobs
    from exactserve.runtime.model import load_model

    body = _body("Score these tokens", GREEDY, max_tokens=4)
    with httpx.Client(base_url=qwen_server.url, timeout=120) as client:
        data = client.post("/v1/chat/completions", json=body, headers=HEADERS).json()
        prompt = client.post("/tokenize", json=body, headers=HEADERS).json()["tokens"]
    entries = data["choices"][0]["logprobs"]["content"]
    model = load_model(qwen_path)
    tokenizer = qwen_server.state.served.tokenizer
    cache = model.new_cache()
    logits = model.forward(cache, prompt)
    for entry in entries:
        expected = log_softmax(logits)
        token = int(np.argmax(logits))  # greedy
        assert entry["bytes"] == list(tokenizer.token_to_piece(token))
        assert np.float32(entry["logprob"]) == expected[token]
        assert float(np.float32(entry["logprob"])) == entry["logprob"]  # exact in JSON
        top = [(t["bytes"], t["logprob"]) for t in entry["top_logprobs"]]
        want = [(list(tokenizer.token_to_piece(t)), v) for t, v in top_logprobs(expected, 2)]
        assert top == want
        logits = model.forward(cache, [token])


def test_a_non_streamed_request_whose_client_leaves_is_cancelled(qwen_path):
    from live_server import LiveServer

    server = LiveServer(qwen_path, prefix_cache_blocks=0)
    body = _body("a long answer please", SEEDED, max_tokens=400)
    body.pop("model")
    body["ignore_eos"] = True
    try:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(server.url + "/v1/chat/completions", json=body, timeout=0.5)
        for _ in range(200):
            metrics = httpx.get(server.url + "/metrics").text
            if _metric(metrics, "exactserve_requests_cancelled_total") == 1:
                break
            time.sleep(0.05)
        assert _metric(metrics, "exactserve_requests_cancelled_total") == 1
        assert _metric(metrics, "exactserve_generated_tokens_total") < 400
        assert _metric(metrics, "exactserve_kv_blocks_used") == 0
    finally:
        server.close()


@pytest.mark.parametrize(
    "sampling", [GREEDY, SEEDED | {"top_k": 2}], ids=["greedy", "seeded"]
)  # top_k 2: a random tiny model then repeats itself, so prompt lookup finds matches
def test_a_speculative_server_returns_the_same_bytes(qwen_server, qwen_path, sampling):
    from live_server import LiveServer

    from exactserve.runtime.speculative import SpeculativeConfig

    repetitive = "def f(x):\n    return x + 1\n" * 6
    needle = _body(repetitive, sampling, max_tokens=24) | {"ignore_eos": True}
    plain = asyncio.run(_alone(qwen_server.url, needle))
    server = LiveServer(
        qwen_path, alias="tiny-qwen", api_key="sekret", speculative=SpeculativeConfig("ngram", 4)
    )
    try:
        fast = asyncio.run(_alone(server.url, needle))
        counters = server.engine.counters
    finally:
        server.close()
    assert fast == plain
    assert counters.generated_tokens == 24
    assert counters.draft_tokens > 0  # it really decoded speculatively


async def _alone(url: str, body: dict) -> bytes:
    async with httpx.AsyncClient(base_url=url, timeout=300) as client:
        return await _post(client, body)
