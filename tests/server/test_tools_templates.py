"""server.tools: families detected from real chat templates, and conversations with tools,
calls and results prepared for them and rendered through ChatTemplate.

Real templates come from llama.cpp's models/templates (marked `llama_cpp_data`); the
built-in templates ship with the runtime.
"""

from __future__ import annotations

import copy
import json
from datetime import datetime
from pathlib import Path

import pytest

from exactserve.runtime import chat_template
from exactserve.runtime.chat_template import ChatTemplate
from exactserve.runtime.errors import TemplateError
from exactserve.server.tools import (
    ParsedCall,
    ToolChoice,
    ToolFormat,
    detect_family,
    normalize_tools,
    parse_tool_calls,
)
from exactserve.toolerr import Message, ToolCall, to_template_messages

DATA = pytest.mark.llama_cpp_data
FIXED_NOW = datetime(2025, 3, 14, 9, 26, 53)
TOKENS = {"llama": ("<|begin_of_text|>", "<|eot_id|>"), "gemma": ("<bos>", "<eos>")}
TOOLS = normalize_tools(
    "chat",
    [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "Get the current weather in a city.",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string", "description": "City name"}},
                    "required": ["city"],
                },
            },
        }
    ],
)
NAMES = ("get_weather",)
AUTO = ToolChoice("auto")
BROKEN_ARGS = '{"city": "Ly'  # what a model wrote once: not valid JSON


def _conversation(second_arguments: str = '{"city": "Lyon"}') -> list[dict]:
    calls = (
        ToolCall("c1", "get_weather", '{"city": "Paris"}', 0),
        ToolCall("c2", "get_weather", second_arguments, 1),
    )
    return to_template_messages(
        (
            Message("system", "You are terse."),
            Message("user", "Weather in Paris and Lyon?"),
            Message("assistant", "Checking both.", calls),
            Message("tool", "18C", tool_call_id="c1"),
            Message("tool", "21C", tool_call_id="c2"),
        )
    )


def _real(name: str) -> ChatTemplate:
    from exactserve.runtime.assets import llama_cpp_dir

    source = (llama_cpp_dir() / "models" / "templates" / f"{name}.jinja").read_text()
    bos, eos = next((v for k, v in TOKENS.items() if k in name.lower()), ("<s>", "</s>"))
    return ChatTemplate(source, bos_token=bos, eos_token=eos, name=name, clock=lambda: FIXED_NOW)


def _builtin(filename: str) -> ChatTemplate:
    source = (Path(chat_template.__file__).parent / "templates" / filename).read_text()
    return ChatTemplate(source, bos_token="<bos>", name=filename, clock=lambda: FIXED_NOW)


def _render(template: ChatTemplate, fmt: ToolFormat, messages, choice=AUTO) -> str:
    prepared, shown = fmt.prepare(messages, TOOLS, choice)
    return template.render(prepared, tools=shown, add_generation_prompt=True)


def _in_order(text: str, *parts: str) -> bool:
    positions = [text.find(part) for part in parts]
    return -1 not in positions and positions == sorted(positions)


# --- detection -----------------------------------------------------------------------------


@DATA
@pytest.mark.parametrize(
    ("name", "family"),
    [
        ("Qwen-Qwen2.5-7B-Instruct", "hermes"),
        ("Qwen-Qwen3-0.6B", "hermes"),
        ("Qwen-QwQ-32B", "hermes"),
        ("NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use", "hermes"),
        ("NousResearch-Hermes-3-Llama-3.1-8B-tool_use", "hermes"),
        ("ibm-granite-granite-4.0", "hermes"),
        ("meta-llama-Llama-3.1-8B-Instruct", "llama3"),
        ("meta-llama-Llama-3.2-3B-Instruct", "llama3"),
        ("meta-llama-Llama-3.3-70B-Instruct", "llama3"),
        ("google-gemma-2-2b-it", "generic"),  # no tool syntax
        ("microsoft-Phi-3.5-mini-instruct", "generic"),
        ("Qwen3-Coder", "generic"),  # <tool_call> with XML inside: not parsed here
        ("Qwen3.5-4B", "generic"),
        ("GLM-4.6", "generic"),
        ("meetkai-functionary-medium-v3.1", "generic"),  # ipython, but <function=...>
        ("mistralai-Mistral-Nemo-Instruct-2407", "generic"),
        ("google-gemma-4-31B-it", "generic"),
    ],
)
def test_family_of_real_templates(name: str, family: str) -> None:
    assert detect_family(_real(name).source) == family


@pytest.mark.parametrize(
    ("filename", "family"),
    [
        ("chatml.jinja", "hermes"),
        ("gemma3.jinja", "hermes"),  # the built-in Gemma template writes <tool_call> blocks
        ("llama3.jinja", "llama3"),
        ("llama2.jinja", "hermes"),
    ],
)
def test_family_of_builtin_templates(filename: str, family: str) -> None:
    assert detect_family(_builtin(filename).source) == family


def test_a_template_that_never_reads_tools_is_generic() -> None:
    source = "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}"
    assert ToolFormat.for_template(ChatTemplate(source)) == ToolFormat("generic", True)


@DATA
def test_the_system_role_is_probed_for_generic_templates() -> None:
    assert ToolFormat.for_template(_real("google-gemma-2-2b-it")) == ToolFormat("generic", False)
    assert ToolFormat.for_template(_real("Qwen-Qwen3-0.6B")) == ToolFormat("hermes", True)
    with pytest.raises(ValueError, match="tool family must be one of hermes, llama3, generic"):
        ToolFormat("mistral")


# --- hermes and llama3: the template renders the tools ---------------------------------------

HERMES_TEMPLATES = [
    pytest.param(_builtin, "chatml.jinja", id="builtin-chatml"),
    pytest.param(_builtin, "gemma3.jinja", id="builtin-gemma3"),
    pytest.param(_real, "Qwen-Qwen2.5-7B-Instruct", marks=DATA, id="qwen2.5"),
    pytest.param(_real, "Qwen-Qwen3-0.6B", marks=DATA, id="qwen3"),
    pytest.param(_real, "NousResearch-Hermes-3-Llama-3.1-8B-tool_use", marks=DATA, id="hermes3"),
]
LLAMA3_TEMPLATES = [
    pytest.param(_builtin, "llama3.jinja", id="builtin-llama3"),
    pytest.param(_real, "meta-llama-Llama-3.1-8B-Instruct", marks=DATA, id="llama3.1"),
    pytest.param(_real, "meta-llama-Llama-3.2-3B-Instruct", marks=DATA, id="llama3.2"),
    pytest.param(_real, "meta-llama-Llama-3.3-70B-Instruct", marks=DATA, id="llama3.3"),
]


@pytest.mark.parametrize(("load", "name"), HERMES_TEMPLATES)
def test_hermes_templates_render_tools_calls_and_results(load, name) -> None:
    template = load(name)
    fmt = ToolFormat.for_template(template)
    assert fmt.family == "hermes"
    text = _render(template, fmt, _conversation())
    assert "Get the current weather in a city." in text and '"City name"' in text
    assert _in_order(
        text,
        "Weather in Paris and Lyon?",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Lyon"}}\n</tool_call>',
        "<tool_response>\n18C\n</tool_response>",
        "<tool_response>\n21C\n</tool_response>",
    )


@pytest.mark.parametrize(("load", "name"), LLAMA3_TEMPLATES)
def test_llama3_templates_get_one_call_per_message_each_before_its_result(load, name) -> None:
    template = load(name)
    fmt = ToolFormat.for_template(template)
    assert fmt.family == "llama3"
    text = _render(template, fmt, _conversation())
    assert '"description": "Get the current weather in a city."' in text
    assert _in_order(
        text,
        "Weather in Paris and Lyon?",
        "Checking both.",
        '{"name": "get_weather", "parameters": {"city": "Paris"}}',
        "18C",
        '{"name": "get_weather", "parameters": {"city": "Lyon"}}',
        "21C",
    )


@DATA
def test_llama3_templates_reject_the_unprepared_conversation() -> None:
    template = _real("meta-llama-Llama-3.1-8B-Instruct")
    with pytest.raises(TemplateError, match="only supports single tool-calls"):
        template.render(_conversation(), tools=TOOLS, add_generation_prompt=True)


def test_llama3_results_stay_in_order_when_they_do_not_name_the_calls() -> None:
    messages = _conversation()
    messages[3] = {**messages[3], "tool_call_id": "other"}
    prepared, _ = ToolFormat("llama3").prepare(messages, TOOLS, AUTO)
    roles = [(m["role"], m.get("tool_call_id")) for m in prepared]
    assert roles == [
        ("system", None),
        ("user", None),
        ("assistant", None),
        ("assistant", None),
        ("assistant", None),
        ("tool", "other"),
        ("tool", "c2"),
    ]


@pytest.mark.parametrize(("load", "name"), HERMES_TEMPLATES + LLAMA3_TEMPLATES)
def test_choice_none_renders_no_tools_but_keeps_the_history(load, name) -> None:
    template = load(name)
    fmt = ToolFormat.for_template(template)
    prepared, shown = fmt.prepare(_conversation(), TOOLS, ToolChoice("none"))
    assert shown is None
    if "Hermes-3" in name:  # its tool_use variant always iterates tools: use it with tools
        with pytest.raises(TemplateError, match="NoneType"):
            template.render(prepared, tools=shown, add_generation_prompt=True)
        return
    text = template.render(prepared, tools=shown, add_generation_prompt=True)
    assert "Get the current weather in a city." not in text
    assert "21C" in text and '"city": "Lyon"' in text


@pytest.mark.parametrize(("load", "name"), HERMES_TEMPLATES + LLAMA3_TEMPLATES)
def test_history_arguments_that_are_not_json_render_as_written(load, name) -> None:
    template = load(name)
    text = _render(template, ToolFormat.for_template(template), _conversation(BROKEN_ARGS))
    # Templates that `tojson` every argument (Qwen2.5, Llama 3.x) quote the string.
    assert BROKEN_ARGS in text or json.dumps(BROKEN_ARGS) in text


def test_prepare_does_not_mutate_its_input() -> None:
    messages = _conversation()
    before = copy.deepcopy(messages)
    for family in ("hermes", "llama3", "generic"):
        ToolFormat(family).prepare(messages, TOOLS, AUTO)
    assert messages == before


# --- generic: the tools are described in the system text -------------------------------------

GEMMA3_GENERIC = (
    "<bos><start_of_turn>user\n"
    "You are terse.\n\n"
    "You can call tools. To call a tool, reply with only a JSON object of this form:\n"
    '{"tool_call": {"name": "<tool name>", "arguments": {<the arguments as a JSON object>}}}\n'
    'To call several tools at once, reply with {"tool_calls": [<one {"name": ..., '
    '"arguments": ...} object per call>]}.\n'
    "The arguments must follow the tool's JSON schema. If no tool is needed, reply to the "
    'user in plain text. Each tool result comes back in a user message that begins with "Tool '
    'result of".\n'
    "The tools:\n"
    '{"name": "get_weather", "description": "Get the current weather in a city.", '
    '"parameters": {"type": "object", "properties": {"city": {"type": "string", '
    '"description": "City name"}}, "required": ["city"]}}\n\n'
    "Weather in Paris and Lyon?<end_of_turn>\n"
    "<start_of_turn>model\n"
    "Checking both.\n"
    '{"tool_calls": [{"name": "get_weather", "arguments": {"city": "Paris"}}, '
    '{"name": "get_weather", "arguments": {"city": "Ly}]}<end_of_turn>\n'
    "<start_of_turn>user\n"
    "Tool result of get_weather (call c1): 18C\n\n"
    "Tool result of get_weather (call c2): 21C<end_of_turn>\n"
    "<start_of_turn>model\n"
)


def test_generic_on_the_gemma3_template_renders_exactly() -> None:
    text = _render(_builtin("gemma3.jinja"), ToolFormat("generic"), _conversation(BROKEN_ARGS))
    assert text == GEMMA3_GENERIC


@DATA
def test_generic_makes_a_strictly_alternating_template_accept_the_conversation() -> None:
    template = _real("google-gemma-2-2b-it")
    with pytest.raises(TemplateError, match="System role not supported"):
        template.render(_conversation(), add_generation_prompt=True)
    fmt = ToolFormat.for_template(template)
    text = _render(template, fmt, _conversation())
    assert text.startswith("<bos><start_of_turn>user\nYou are terse.\n\nYou can call tools.")
    assert _in_order(
        text,
        "Weather in Paris and Lyon?<end_of_turn>\n<start_of_turn>model\nChecking both.\n",
        '{"name": "get_weather", "arguments": {"city": "Lyon"}}]}<end_of_turn>\n',
        "<start_of_turn>user\nTool result of get_weather (call c1): 18C\n\n",
        "Tool result of get_weather (call c2): 21C<end_of_turn>\n<start_of_turn>model\n",
    )


def test_generic_tool_results_name_what_they_can_and_merge_into_one_user_turn() -> None:
    messages = [
        {"role": "user", "content": "Go."},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": {}}}
        ]},
        {"role": "tool", "tool_call_id": "a", "content": [{"type": "text", "text": "sunny"}]},
        {"role": "tool", "name": "clock", "content": "noon"},
        {"role": "tool", "content": None},
        {"role": "user", "content": "Thanks."},
    ]  # fmt: skip
    prepared, shown = ToolFormat("generic").prepare(messages, TOOLS, ToolChoice("none"))
    assert shown is None
    assert prepared == [
        {"role": "user", "content": "Go."},
        {
            "role": "assistant",
            "content": '{"tool_call": {"name": "get_weather", "arguments": {}}}',
        },
        {
            "role": "user",
            "content": "Tool result of get_weather (call a): sunny\n\n"
            "Tool result of clock: noon\n\nTool result:\n\nThanks.",
        },
    ]


def test_generic_keeps_non_text_parts() -> None:
    image = {"type": "image_url", "image_url": {"url": "data:,"}}
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "Look."}, image]},
        {"role": "user", "content": "Well?"},
    ]
    prepared, _ = ToolFormat("generic").prepare(messages, None, AUTO)
    well = {"type": "text", "text": "\n\nWell?"}
    assert prepared == [
        {"role": "user", "content": [{"type": "text", "text": "Look."}, image, well]}
    ]


# --- round trip: what a template writes as the model's call parses back ----------------------


def _assistant_bodies(text: str, start: str, end: str) -> list[str]:
    return [chunk.split(end, 1)[0] for chunk in text.split(start)[1:] if end in chunk]


PARIS = ParsedCall("get_weather", '{"city":"Paris"}')
LYON = ParsedCall("get_weather", '{"city":"Lyon"}')


@pytest.mark.parametrize(("load", "name"), HERMES_TEMPLATES)
def test_hermes_history_calls_parse_back(load, name) -> None:
    template = load(name)
    fmt = ToolFormat.for_template(template)
    text = _render(template, fmt, _conversation())
    start = "<start_of_turn>model\n" if "gemma" in name else "<|im_start|>assistant"
    end = "<end_of_turn>" if "gemma" in name else "<|im_end|>"
    [body] = _assistant_bodies(text, start, end)
    content, calls = parse_tool_calls(fmt, body, NAMES)
    assert calls == [PARIS, LYON]
    assert content in ("", "Checking both.", "\nChecking both.")  # Hermes 3 drops the text


@pytest.mark.parametrize(("load", "name"), LLAMA3_TEMPLATES)
def test_llama3_history_calls_parse_back(load, name) -> None:
    template = load(name)
    fmt = ToolFormat.for_template(template)
    text = _render(template, fmt, _conversation())
    start = "<|start_header_id|>assistant<|end_header_id|>\n\n"
    bodies = _assistant_bodies(text, start, "<|eot_id|>")
    parsed = [parse_tool_calls(fmt, body, NAMES) for body in bodies]
    assert parsed == [("Checking both.", []), ("", [PARIS]), ("", [LYON])]


def test_generic_history_calls_parse_back() -> None:
    template = _builtin("gemma3.jinja")
    fmt = ToolFormat("generic")
    text = _render(template, fmt, _conversation())
    [body] = _assistant_bodies(text, "<start_of_turn>model\n", "<end_of_turn>")
    assert parse_tool_calls(fmt, body, NAMES) == ("Checking both.", [PARIS, LYON])
