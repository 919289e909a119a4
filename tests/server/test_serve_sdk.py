"""`exactserve serve` through the official openai and anthropic SDKs, over real HTTP on
loopback, on a tiny Qwen2 model with the real Qwen2.5 template (hermes tool calls)."""

from __future__ import annotations

import json

import anthropic
import openai
import pytest
from scripted import scripted

pytestmark = pytest.mark.llama_cpp_data

KEY = "sekret"
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather of a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}


@pytest.fixture(scope="module")
def oai(qwen_server):
    return openai.OpenAI(base_url=qwen_server.url + "/v1", api_key=KEY, max_retries=0)


@pytest.fixture(scope="module")
def claude(qwen_server):
    return anthropic.Anthropic(base_url=qwen_server.url, api_key=KEY, max_retries=0)


def test_chat_non_stream_and_stream_give_the_same_text(oai):
    kwargs = dict(model="tiny-qwen", messages=[{"role": "user", "content": "Hello"}], max_tokens=12)
    whole = oai.chat.completions.create(temperature=0, **kwargs)
    choice = whole.choices[0]
    assert choice.finish_reason == "length" and whole.usage.completion_tokens == 12
    assert whole.usage.prompt_tokens > 0 and whole.object == "chat.completion"
    chunks = list(
        oai.chat.completions.create(
            temperature=0, stream=True, stream_options={"include_usage": True}, **kwargs
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == choice.message.content
    assert chunks[-1].usage.completion_tokens == 12 and chunks[-1].choices == []
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == "length" and set(finishes[:-1]) == {None}


def test_chat_logprobs_are_the_contracts_and_stream_equals_whole(oai):
    from exactserve.reference.logprobs import log_softmax  # noqa: F401  (the clause exists)

    kwargs = dict(
        model="tiny-qwen",
        messages=[{"role": "user", "content": "Count"}],
        max_tokens=6,
        temperature=0.9,
        seed=7,
        logprobs=True,
        top_logprobs=3,
    )
    whole = oai.chat.completions.create(**kwargs)
    content = whole.choices[0].logprobs.content
    assert len(content) == 6
    for entry in content:
        assert len(entry.top_logprobs) == 3
        tops = [t.logprob for t in entry.top_logprobs]
        assert tops == sorted(tops, reverse=True) and entry.logprob <= tops[0]
    streamed = []
    for chunk in oai.chat.completions.create(stream=True, **kwargs):
        if chunk.choices and chunk.choices[0].logprobs:
            streamed += chunk.choices[0].logprobs.content
    assert [e.model_dump() for e in streamed] == [e.model_dump() for e in content]


def test_n_choices_each_draw_their_own_seed_stream(oai):
    kwargs = dict(model="tiny-qwen", messages=[{"role": "user", "content": "x"}], max_tokens=8)
    both = oai.chat.completions.create(n=2, seed=5, temperature=1.0, **kwargs)
    first = oai.chat.completions.create(n=1, seed=5, temperature=1.0, **kwargs)
    second = oai.chat.completions.create(n=1, seed=6, temperature=1.0, **kwargs)
    texts = [c.message.content for c in both.choices]
    assert texts == [first.choices[0].message.content, second.choices[0].message.content]
    assert [c.index for c in both.choices] == [0, 1]


def test_a_tool_call_is_parsed_back_with_a_forced_choice(oai, qwen_server):
    forced = {"type": "function", "function": {"name": "get_weather"}}
    kwargs = dict(
        model="tiny-qwen",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[WEATHER],
        tool_choice=forced,
        temperature=0,
        max_tokens=40,
    )
    script = _ids(qwen_server, '{"city": "Paris"}}\n</tool_call><|im_end|>')
    with scripted(qwen_server.engine, script):
        result = oai.chat.completions.create(**kwargs)
        calls = []
        for chunk in oai.chat.completions.create(stream=True, **kwargs):
            calls += chunk.choices[0].delta.tool_calls or [] if chunk.choices else []
    message = result.choices[0].message
    assert result.choices[0].finish_reason == "tool_calls", message
    (call,) = message.tool_calls
    assert call.function.name == "get_weather" and call.id.startswith("call_")
    assert json.loads(call.function.arguments) == {"city": "Paris"}
    assert [(c.function.name, c.function.arguments, c.id) for c in calls] == [
        (call.function.name, call.function.arguments, call.id)
    ]


def test_a_call_the_model_writes_unasked_is_parsed_and_bad_json_stays_text(oai, qwen_server):
    kwargs = dict(
        model="tiny-qwen",
        messages=[{"role": "user", "content": "Weather?"}],
        tools=[WEATHER],
        temperature=0,
        max_tokens=60,
    )
    good = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
    with scripted(qwen_server.engine, _ids(qwen_server, good + "<|im_end|>")):
        message = oai.chat.completions.create(**kwargs).choices[0].message
    assert [c.function.name for c in message.tool_calls] == ["get_weather"]
    bad = '<tool_call>\n{"name": "get_weather", "arguments": {"city": }\n</tool_call>'
    with scripted(qwen_server.engine, _ids(qwen_server, bad + "<|im_end|>")):
        result = oai.chat.completions.create(**kwargs)
    assert result.choices[0].finish_reason == "stop"
    assert result.choices[0].message.content == bad and not result.choices[0].message.tool_calls


def _ids(server, text: str) -> list[int]:
    return server.state.served.tokenizer.encode(text, add_special=False, parse_special=True)


def test_completions_with_echo_and_logprobs(oai):
    result = oai.completions.create(
        model="tiny-qwen", prompt="The sky is", max_tokens=4, temperature=0, echo=True, logprobs=2
    )
    choice = result.choices[0]
    assert choice.text.startswith("The sky is")
    lp = choice.logprobs
    assert lp.token_logprobs[0] is None and all(v is not None for v in lp.token_logprobs[1:])
    assert len(lp.tokens) == result.usage.prompt_tokens + 4
    plain = oai.completions.create(
        model="tiny-qwen", prompt="The sky is", max_tokens=4, temperature=0
    )
    assert choice.text == "The sky is" + plain.choices[0].text


def test_completions_take_token_ids_and_stream(oai):
    ids = [785, 12884, 374]
    whole = oai.completions.create(model="tiny-qwen", prompt=ids, max_tokens=5, temperature=0)
    streamed = list(
        oai.completions.create(
            model="tiny-qwen",
            prompt=ids,
            max_tokens=5,
            temperature=0,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert "".join(c.choices[0].text for c in streamed if c.choices) == whole.choices[0].text
    assert streamed[-1].choices == [] and streamed[-1].usage.completion_tokens == 5
    assert streamed[-1].usage.prompt_tokens == 3


def test_responses_non_stream_and_stream(oai):
    result = oai.responses.create(
        model="tiny-qwen", input="Say hi", max_output_tokens=6, temperature=0
    )
    assert result.status == "incomplete" and result.usage.output_tokens == 6
    events = list(
        oai.responses.create(
            model="tiny-qwen", input="Say hi", max_output_tokens=6, temperature=0, stream=True
        )
    )
    kinds = [e.type for e in events]
    assert kinds[0] == "response.created" and kinds[-1] == "response.incomplete"
    text = "".join(e.delta for e in events if e.type == "response.output_text.delta")
    assert text == result.output_text


def test_responses_function_calls_and_outputs(oai, qwen_server):
    tool = {
        "type": "function",
        "name": "get_weather",
        "parameters": WEATHER["function"]["parameters"],
    }
    history = [
        {"role": "user", "content": "Weather in Paris?"},
        {"type": "function_call", "call_id": "c1", "name": "get_weather",
         "arguments": '{"city":"Paris"}'},
        {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
    ]  # fmt: skip
    with scripted(qwen_server.engine, _ids(qwen_server, '{"city": "Rome"}}\n</tool_call>')):
        result = oai.responses.create(
            model="tiny-qwen",
            input=history,
            tools=[tool],
            tool_choice={"type": "function", "name": "get_weather"},
            max_output_tokens=40,
            temperature=0,
        )
    calls = [item for item in result.output if item.type == "function_call"]
    assert [c.name for c in calls] == ["get_weather"]


def test_anthropic_messages_stream_and_count_tokens(claude):
    kwargs = dict(
        model="tiny-qwen",
        max_tokens=8,
        system="Be brief.",
        messages=[{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
        extra_body={"temperature": 0},
    )
    message = claude.messages.create(**kwargs)
    assert message.stop_reason == "max_tokens" and message.usage.output_tokens == 8
    with claude.messages.stream(**kwargs) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == message.content[0].text == final.content[0].text
    count = claude.messages.count_tokens(
        model="tiny-qwen", system="Be brief.", messages=kwargs["messages"]
    )
    assert count.input_tokens == message.usage.input_tokens + message.usage.cache_read_input_tokens


def test_anthropic_tool_result_with_is_error_goes_through(claude):
    message = claude.messages.create(
        model="tiny-qwen",
        max_tokens=4,
        tools=[{"name": "read_file", "input_schema": {"type": "object", "properties": {}}}],
        messages=[
            {"role": "user", "content": "Read it"},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t1", "name": "read_file", "input": {}}],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "t1",
                        "is_error": True,
                        "content": "Error: ENOENT: no such file or directory",
                    }
                ],
            },
        ],
    )
    assert message.type == "message" and message.usage.output_tokens <= 4


def test_anthropic_tool_use_streamed_and_whole(claude, qwen_server):
    tools = [
        {
            "name": "get_weather",
            "description": "Weather of a city",
            "input_schema": WEATHER["function"]["parameters"],
        }
    ]
    kwargs = dict(
        model="tiny-qwen",
        max_tokens=60,
        tools=tools,
        tool_choice={"type": "tool", "name": "get_weather"},
        messages=[{"role": "user", "content": "Weather in Lima?"}],
    )
    script = _ids(qwen_server, '{"city": "Lima"}}\n</tool_call><|im_end|>')
    with scripted(qwen_server.engine, script):
        whole = claude.messages.create(**kwargs)
        with claude.messages.stream(**kwargs) as stream:
            final = stream.get_final_message()
    assert whole.stop_reason == "tool_use" and final.stop_reason == "tool_use"
    (use,) = [block for block in whole.content if block.type == "tool_use"]
    (streamed,) = [block for block in final.content if block.type == "tool_use"]
    assert (use.name, use.input, use.id) == ("get_weather", {"city": "Lima"}, streamed.id)
    assert streamed.input == {"city": "Lima"}


def test_responses_stream_reports_a_function_call(oai, qwen_server):
    tool = {
        "type": "function",
        "name": "get_weather",
        "parameters": WEATHER["function"]["parameters"],
    }
    script = _ids(qwen_server, '{"city": "Kyiv"}}\n</tool_call><|im_end|>')
    with scripted(qwen_server.engine, script):
        events = list(
            oai.responses.create(
                model="tiny-qwen",
                input="Weather in Kyiv?",
                tools=[tool],
                tool_choice={"type": "function", "name": "get_weather"},
                max_output_tokens=40,
                stream=True,
            )
        )
    done = [e for e in events if e.type == "response.function_call_arguments.done"]
    assert [json.loads(e.arguments) for e in done] == [{"city": "Kyiv"}]
    final = events[-1].response
    assert events[-1].type == "response.completed"
    assert [item.name for item in final.output if item.type == "function_call"] == ["get_weather"]
