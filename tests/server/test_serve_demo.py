"""The real demo model (Gemma 3 270M) through `exactserve serve`: a greedy chat request
returns exactly the tokens and text the runtime generates alone for the same prompt ids,
and an Anthropic request for the same conversation renders the same prompt."""

from __future__ import annotations

import httpx
import pytest

from exactserve.reference.sampling import SamplingParams
from exactserve.runtime.assets import demo_model_path
from exactserve.runtime.generate import GenerationConfig, generate_text
from exactserve.runtime.model import load_model

pytestmark = pytest.mark.real_model


def test_demo_model_served_equals_the_runtime_alone():
    from live_server import LiveServer

    path = demo_model_path()
    server = LiveServer(path, alias="demo")
    messages = [{"role": "user", "content": "Name the three primary colors."}]
    try:
        with httpx.Client(base_url=server.url, timeout=600) as client:
            body = {"model": "demo", "messages": messages, "max_tokens": 12, "temperature": 0}
            chat = client.post("/v1/chat/completions", json=body).json()
            ids = client.post("/tokenize", json={"messages": messages}).json()["tokens"]
            count = client.post(
                "/v1/messages/count_tokens", json={"model": "demo", "messages": messages}
            ).json()
        tokenizer = server.state.served.tokenizer
    finally:
        server.close()
    assert count["input_tokens"] == len(ids) == chat["usage"]["prompt_tokens"]
    config = GenerationConfig(max_tokens=12, sampling=SamplingParams(temperature=0))
    text, generation = generate_text(load_model(path), tokenizer, ids, config)
    assert chat["choices"][0]["message"]["content"] == text
    assert chat["usage"]["completion_tokens"] == len(generation.token_ids)
    assert (
        chat["choices"][0]["finish_reason"]
        == {"stop": "stop", "length": "length"}[generation.finish_reason]
    )
