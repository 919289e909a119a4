"""ChatTemplate: the jinja environment transformers uses, input preparation, errors, GGUF."""

from __future__ import annotations

import dataclasses
import json
import logging
from datetime import datetime
from pathlib import Path

import numpy as np
import pytest
from gguf import GGUFWriter

from exactserve.runtime.chat_template import (
    ChatTemplate,
    TemplateError,
    builtin_template_file,
    parse_tool_call_arguments,
    template_names,
)
from exactserve.runtime.errors import ExactserveError
from exactserve.runtime.gguf_file import open_gguf

USER = [{"role": "user", "content": "hi"}]


def render(source: str, messages: list | None = None, **kwargs: object) -> str:
    return ChatTemplate(source, name="t").render(USER if messages is None else messages, **kwargs)


@pytest.mark.parametrize(
    ("expression", "value", "expected"),
    [
        ("x | tojson", {"b": "é<&>'", "a": [1, 2.5]}, '{"b": "é<&>\'", "a": [1, 2.5]}'),
        ("x | tojson(indent=2)", {"a": [1]}, '{\n  "a": [\n    1\n  ]\n}'),
        ("x | tojson(separators=(',', ':'))", {"a": 1, "b": 2}, '{"a":1,"b":2}'),
        ("x | tojson(sort_keys=True)", {"b": 1, "a": 2}, '{"a": 2, "b": 1}'),
        ("x | tojson(ensure_ascii=True)", "é", '"\\u00e9"'),
        ("x | tojson", None, "null"),
    ],
)
def test_tojson_is_json_dumps_without_html_escaping(
    expression: str, value: object, expected: str
) -> None:
    assert render("{{ " + expression + " }}", x=value) == expected


def test_trim_and_lstrip_blocks() -> None:
    source = "A\n  {% if true %}\n  B\n  {% endif %}\nC"
    assert render(source) == "A\n  B\nC"


def test_loop_controls() -> None:
    source = "{% for i in range(9) %}{% if i == 1 %}{% continue %}{% endif %}"
    source += "{% if i == 4 %}{% break %}{% endif %}{{ i }}{% endfor %}"
    assert render(source) == "023"


def test_generation_tag_renders_its_body_and_keeps_sets_inside() -> None:
    source = "{% set x = 'out' %}{% generation %}{% set x = 'in' %}[{{ x }}]"
    source += "{% endgeneration %}{{ x }}"
    assert render(source) == "[in]out"


def test_raise_exception_gives_template_error_with_name_and_message() -> None:
    template = ChatTemplate("{{ raise_exception('System role not supported') }}", name="gemma")
    with pytest.raises(TemplateError) as raised:
        template.render(USER)
    assert str(raised.value) == "chat template 'gemma' raised: System role not supported"
    assert isinstance(raised.value, ExactserveError)


def test_runtime_failure_gives_template_error() -> None:
    template = ChatTemplate("{{ messages[0].content + 1 }}", name="broken")
    with pytest.raises(TemplateError) as raised:
        template.render(USER)
    assert str(raised.value).startswith("chat template 'broken' failed to render: TypeError: ")


def test_syntax_error_gives_template_error_at_construction() -> None:
    with pytest.raises(TemplateError) as raised:
        ChatTemplate("line one\n{% if %}", name="bad")
    message = str(raised.value)
    assert message.startswith("chat template 'bad' does not compile: ")
    assert message.endswith("(line 2)")


@pytest.mark.parametrize(
    "source",
    [
        "{{ ''.__class__.__mro__ }}",
        "{% set ns = namespace(_hidden=1) %}",
        "{% set ns = namespace(a=1) %}{% set ns._b = 2 %}",
        "{% set l = [] %}{{ l.append(1) }}",
        "{{ dict.__call__.__globals__ }}",
    ],
)
def test_sandbox_refuses(source: str) -> None:
    with pytest.raises(TemplateError):
        render(source)


def test_sandbox_hides_dunder_attributes() -> None:
    assert render("[{{ messages.__class__ }}]") == "[]"


def test_dict_global_builds_dicts() -> None:
    assert render("{{ dict(a=1) | tojson }}{{ dict.fromkeys(['k']) | tojson }}") == (
        '{"a": 1}{"k": null}'
    )


def test_strftime_now_reads_the_clock() -> None:
    template = ChatTemplate(
        "{{ strftime_now('%d %b %Y %H:%M') }}", clock=lambda: datetime(2024, 7, 26, 8, 5)
    )
    assert template.render(USER) == "26 Jul 2024 08:05"


def test_variables_bos_eos_generation_prompt_and_extra_kwargs() -> None:
    source = "{{ bos_token }}|{{ eos_token }}|{{ add_generation_prompt }}|{{ enable_thinking }}"
    template = ChatTemplate(source, bos_token="<s>", eos_token="</s>")
    assert template.render(USER, enable_thinking=False) == "<s>|</s>|False|False"
    assert template.render(USER, add_generation_prompt=True, bos_token="B") == "B|</s>|True|"


def test_none_valued_keys_are_dropped() -> None:
    messages = [{"role": "assistant", "content": None, "tool_calls": [{"name": None}]}]
    source = "{{ 'content' in messages[0] }} {{ messages[0].tool_calls | tojson }}"
    # Only the message's own keys are dropped, as transformers does.
    assert render(source, messages) == 'False [{"name": null}]'


@pytest.mark.parametrize("field", ["thinking", "reasoning", "reasoning_content"])
def test_reasoning_is_aliased(field: str) -> None:
    messages = [{"role": "assistant", "content": "4", field: "2+2"}]
    source = "{{ messages[0].reasoning_content }}/{{ messages[0].thinking }}"
    assert render(source, messages) == "2+2/2+2"


@dataclasses.dataclass
class _Point:
    x: int


def test_inputs_are_rebuilt_from_plain_data() -> None:
    messages = [{"role": "user", "content": "hi", "n": np.int64(3), "p": _Point(2), "o": object()}]
    source = "{{ messages[0].n + 1 }} {{ messages[0].p.x }} {{ messages[0].o }}"
    assert render(source, messages) == "4 2 <object>"


def test_tools_and_documents_are_passed_as_given() -> None:
    tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}, {"name": "g"}]
    documents = [{"title": "T", "text": "body"}]
    source = "{{ tools | tojson }}|{{ documents | tojson }}|{{ tools[0].function.name }}"
    expected = json.dumps(tools) + "|" + json.dumps(documents) + "|f"
    assert render(source, tools=tools, documents=documents) == expected
    assert render("{{ tools is none }}{{ documents is none }}") == "TrueTrue"


def test_tools_must_be_dicts() -> None:
    with pytest.raises(TypeError):
        render("x", tools=[print])


def test_string_arguments_reach_the_template_unparsed() -> None:
    call = {"function": {"name": "f", "arguments": '{"a": 1}'}}
    messages = [{"role": "assistant", "tool_calls": [call]}]
    source = "{{ messages[0].tool_calls[0].function.arguments | tojson }}"
    assert render(source, messages) == json.dumps('{"a": 1}')


def test_parse_tool_call_arguments() -> None:
    messages = [
        {"role": "user", "content": "x"},
        {
            "role": "assistant",
            "tool_calls": [
                {"type": "function", "function": {"name": "f", "arguments": '{"a": [1]}'}},
                {"function": {"name": "g", "arguments": "{not json"}},
                {"function": {"name": "h", "arguments": "[1, 2]"}},
                {"name": "flat", "arguments": '{"b": "c"}'},
                {"function": {"name": "k", "arguments": {"d": 1}}},
            ],
        },
    ]
    snapshot = json.dumps(messages)
    parsed = parse_tool_call_arguments(messages)
    calls = parsed[1]["tool_calls"]
    assert calls[0] == {"type": "function", "function": {"name": "f", "arguments": {"a": [1]}}}
    assert calls[1]["function"]["arguments"] == "{not json"
    assert calls[2]["function"]["arguments"] == "[1, 2]"
    assert calls[3] == {"name": "flat", "arguments": {"b": "c"}}
    assert calls[4]["function"]["arguments"] == {"d": 1}
    assert parsed[0] == messages[0]
    assert json.dumps(messages) == snapshot


# --- GGUF loading and built-in fallbacks ---------------------------------------------


def _write_gguf(path: Path, arch: str, tokens: list[str], templates: object = None) -> Path:
    writer = GGUFWriter(str(path), arch)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_bos_token_id(0)
    writer.add_eos_token_id(1)
    if templates is not None:
        writer.add_chat_template(templates)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def test_from_gguf_reads_default_and_named_templates(tmp_path: Path) -> None:
    templates = [
        {"name": "default", "template": "D{{ bos_token }}{{ eos_token }}"},
        {"name": "tool_use", "template": "T{{ tools | length }}"},
    ]
    path = _write_gguf(tmp_path / "m.gguf", "qwen2", ["<B>", "<E>", "x"], templates)
    gguf_file = open_gguf(path)
    assert template_names(gguf_file) == ("default", "tool_use")
    default = ChatTemplate.from_gguf(gguf_file, "qwen2")
    assert (default.name, default.bos_token, default.eos_token) == ("default", "<B>", "<E>")
    assert default.render(USER) == "D<B><E>"
    tool_use = ChatTemplate.from_gguf(gguf_file, "qwen2", name="tool_use")
    assert tool_use.render(USER, tools=[{}, {}]) == "T2"
    with pytest.raises(TemplateError) as raised:
        ChatTemplate.from_gguf(gguf_file, "qwen2", name="rag")
    assert str(raised.value).endswith("no chat template named 'rag'; it has default, tool_use")


@pytest.mark.parametrize(
    ("arch", "tokens", "expected_file"),
    [
        ("gemma3", ["<bos>", "<eos>"], "gemma3.jinja"),
        ("qwen2", ["<|endoftext|>", "<|im_end|>"], "chatml.jinja"),
        ("qwen3", ["<|endoftext|>", "<|im_end|>"], "chatml.jinja"),
        ("llama", ["<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>"], "llama3.jinja"),
        ("llama", ["<s>", "</s>"], "llama2.jinja"),
    ],
)
def test_fallback_is_logged_once_per_model(
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    arch: str,
    tokens: list[str],
    expected_file: str,
) -> None:
    gguf_file = open_gguf(_write_gguf(tmp_path / "m.gguf", arch, tokens))
    assert template_names(gguf_file) == ()
    with caplog.at_level(logging.INFO, logger="exactserve"):
        template = ChatTemplate.from_gguf(gguf_file, arch)
        for _ in range(3):
            template.render(USER, add_generation_prompt=True)
    records = [r for r in caplog.records if r.name == "exactserve"]
    assert len(records) == 1
    assert records[0].levelno == logging.WARNING
    assert expected_file in records[0].getMessage()
    assert str(gguf_file.path) in records[0].getMessage()
    assert template.name == f"builtin:{expected_file}"
    assert (template.bos_token, template.eos_token) == (tokens[0], tokens[1])
    assert builtin_template_file(arch, tokens) == expected_file


def test_unknown_architecture_without_template_is_an_error(tmp_path: Path) -> None:
    gguf_file = open_gguf(_write_gguf(tmp_path / "m.gguf", "mamba", ["a", "b"]))
    with pytest.raises(TemplateError) as raised:
        ChatTemplate.from_gguf(gguf_file, "mamba")
    assert "no built-in template for architecture 'mamba'" in str(raised.value)


@pytest.mark.real_model
def test_demo_model_falls_back_to_builtin_gemma(caplog: pytest.LogCaptureFixture) -> None:
    from exactserve.runtime.assets import demo_model_path

    gguf_file = open_gguf(demo_model_path())
    with caplog.at_level(logging.INFO, logger="exactserve"):
        template = ChatTemplate.from_gguf(gguf_file, gguf_file.metadata["general.architecture"])
    assert template.name == "builtin:gemma3.jinja"
    assert len([r for r in caplog.records if r.name == "exactserve"]) == 1
    assert template.render(USER, add_generation_prompt=True) == (
        "<bos><start_of_turn>user\nhi<end_of_turn>\n<start_of_turn>model\n"
    )
