"""Built-in fallback templates (runtime/templates/*.jinja): their formats, written out by
hand from the model families' documented formats, and agreement with the official
templates where those formats coincide (Gemma 2 for Gemma turns, Qwen2.5 for ChatML
with a system message)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import exactserve.runtime.chat_template as chat_template_module
from exactserve.runtime.assets import llama_cpp_dir
from exactserve.runtime.chat_template import ChatTemplate
from exactserve.runtime.errors import TemplateError

TEMPLATES_DIR = Path(chat_template_module.__file__).parent / "templates"

TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}
TOOL_JSON = json.dumps(TOOL)
CALL = {
    "id": "c1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": {"city": "Paris"}},
}
TOOL_CHAT = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "  Weather in Paris?  "},
    {"role": "assistant", "content": None, "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "18C"},
    {"role": "tool", "tool_call_id": "c1", "content": " sunny "},
    {"role": "user", "content": "thanks"},
]
PLAIN_CHAT = [
    {"role": "user", "content": "Hi "},
    {"role": "assistant", "content": "Hello."},
    {"role": "user", "content": [{"type": "text", "text": "Joke"}, {"type": "text", "text": "?"}]},
]
CALL_FORMAT = (
    '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
)


def builtin(filename: str, bos: str, eos: str) -> ChatTemplate:
    source = (TEMPLATES_DIR / filename).read_text(encoding="utf-8")
    return ChatTemplate(source, bos_token=bos, eos_token=eos, name=filename)


GEMMA = builtin("gemma3.jinja", "<bos>", "<eos>")
CHATML = builtin("chatml.jinja", "<|endoftext|>", "<|im_end|>")
LLAMA3 = builtin("llama3.jinja", "<|begin_of_text|>", "<|eot_id|>")
LLAMA2 = builtin("llama2.jinja", "<s>", "</s>")


def test_gemma_plain() -> None:
    assert GEMMA.render(PLAIN_CHAT, add_generation_prompt=True) == (
        "<bos><start_of_turn>user\nHi<end_of_turn>\n"
        "<start_of_turn>model\nHello.<end_of_turn>\n"
        "<start_of_turn>user\nJoke?<end_of_turn>\n"
        "<start_of_turn>model\n"
    )


def test_gemma_system_tools_calls_and_results() -> None:
    assert GEMMA.render(TOOL_CHAT, tools=[TOOL], add_generation_prompt=False) == (
        "<bos><start_of_turn>user\nBe brief.\n\n"
        "You have access to the following functions. To call a function, reply with a JSON "
        f"object inside <tool_call></tool_call> tags:\n{CALL_FORMAT}\n\n"
        f"<tools>\n{TOOL_JSON}\n</tools>\n\n"
        "Weather in Paris?<end_of_turn>\n"
        "<start_of_turn>model\n"
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>'
        "<end_of_turn>\n"
        "<start_of_turn>user\n<tool_response>\n18C\n</tool_response>\n"
        "<tool_response>\nsunny\n</tool_response><end_of_turn>\n"
        "<start_of_turn>user\nthanks<end_of_turn>\n"
    )


def test_chatml_plain_has_no_default_system() -> None:
    assert CHATML.render(PLAIN_CHAT, add_generation_prompt=True) == (
        "<|im_start|>user\nHi <|im_end|>\n"
        "<|im_start|>assistant\nHello.<|im_end|>\n"
        "<|im_start|>user\nJoke?<|im_end|>\n"
        "<|im_start|>assistant\n"
    )


def test_chatml_string_arguments_are_written_verbatim() -> None:
    call = {"function": {"name": "f", "arguments": '{"a": 1}'}}
    chat = [{"role": "user", "content": "x"}, {"role": "assistant", "tool_calls": [call]}]
    assert CHATML.render(chat) == (
        "<|im_start|>user\nx<|im_end|>\n"
        '<|im_start|>assistant\n<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n'
        "</tool_call><|im_end|>\n"
    )


def test_llama3_plain_and_tools() -> None:
    assert LLAMA3.render(PLAIN_CHAT, add_generation_prompt=True) == (
        "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nHi<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\nHello.<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nJoke?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
    )
    assert LLAMA3.render(TOOL_CHAT[:4], tools=[TOOL]) == (
        "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nBe brief.\n\n"
        "You have access to the following functions. To call a function, respond with JSON "
        'in the format {"name": function name, "parameters": dictionary of argument name and '
        "its value}. Do not use variables.\n\n"
        f"{json.dumps(TOOL, indent=4)}<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\nWeather in Paris?<|eot_id|>"
        "<|start_header_id|>assistant<|end_header_id|>\n\n"
        '{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>'
        "<|start_header_id|>ipython<|end_header_id|>\n\n18C<|eot_id|>"
    )


def test_llama2_plain_and_tool_result() -> None:
    assert LLAMA2.render([{"role": "system", "content": "Be brief."}, *PLAIN_CHAT]) == (
        "<s>[INST] <<SYS>>\nBe brief.\n<</SYS>>\n\nHi [/INST] Hello. </s><s>[INST] Joke? [/INST]"
    )
    assert LLAMA2.render(TOOL_CHAT[1:5]) == (
        "<s>[INST] Weather in Paris? [/INST] "
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call> </s>'
        "<s>[INST] <tool_response>\n18C\n</tool_response>\n"
        "<tool_response>\nsunny\n</tool_response> [/INST]"
    )


@pytest.mark.parametrize("template", [GEMMA, CHATML, LLAMA3, LLAMA2], ids=lambda t: t.name)
def test_builtins_reject_images_and_unknown_roles(template: ChatTemplate) -> None:
    image = [{"role": "user", "content": [{"type": "image", "url": "x"}]}]
    with pytest.raises(TemplateError, match="supports only text content parts, got image"):
        template.render(image)
    with pytest.raises(TemplateError, match="does not know the role narrator"):
        template.render([{"role": "user", "content": "a"}, {"role": "narrator", "content": "b"}])


def _official(name: str) -> str:
    path = llama_cpp_dir() / "models" / "templates" / f"{name}.jinja"
    return path.read_text(encoding="utf-8")


@pytest.mark.llama_cpp_data
@pytest.mark.parametrize("gen", [False, True])
def test_gemma_builtin_matches_official_gemma2_turns(gen: bool) -> None:
    official = ChatTemplate(_official("google-gemma-2-2b-it"), bos_token="<bos>")
    chat = [
        {"role": "user", "content": "\n Hi there \n"},
        {"role": "assistant", "content": " Hello. "},
        {"role": "user", "content": "Bye"},
    ]
    assert GEMMA.render(chat, add_generation_prompt=gen) == official.render(
        chat, add_generation_prompt=gen
    )


QWEN_CASES = {
    "system": (TOOL_CHAT[:2], None),
    "system_multi_turn": ([TOOL_CHAT[0], *PLAIN_CHAT[:2], {"role": "user", "content": "?"}], None),
    "tools": (TOOL_CHAT[:2], [TOOL]),
    "tool_calls_and_results": (TOOL_CHAT, [TOOL]),
    "tool_call_with_text": (
        [*TOOL_CHAT[:2], {"role": "assistant", "content": "Checking.", "tool_calls": [CALL]}],
        [TOOL],
    ),
}


@pytest.mark.llama_cpp_data
@pytest.mark.parametrize("gen", [False, True])
@pytest.mark.parametrize("case", QWEN_CASES)
def test_chatml_builtin_matches_official_qwen25_with_a_system_message(case: str, gen: bool) -> None:
    official = ChatTemplate(_official("Qwen-Qwen2.5-7B-Instruct"))
    messages, tools = QWEN_CASES[case]
    assert CHATML.render(messages, tools=tools, add_generation_prompt=gen) == official.render(
        messages, tools=tools, add_generation_prompt=gen
    )
