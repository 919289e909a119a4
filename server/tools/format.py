"""A model's tool format: which family its chat template speaks, how to prepare a request's
messages and tools for that template, and the forced prefix of a required call.

Families:
- "hermes" (Qwen2.5, Qwen3, QwQ, Hermes 2/3, Granite 4, the built-in ChatML and Gemma
  templates): the template renders `tools`; calls are `<tool_call>\\n{"name": ...,
  "arguments": {...}}\\n</tool_call>` blocks, possibly after text.
- "llama3" (Llama 3.1/3.2/3.3): the template renders `tools`; a call is a JSON object
  `{"name": ..., "parameters": {...}}`, optionally after `<|python_tag|>`, several
  separated by ";".
- "generic" (everything else, including templates that never read `tools` and tool
  syntaxes this server does not parse, such as Qwen3-Coder's XML): see `generic.py`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from exactserve.runtime.chat_template import ChatTemplate, parse_tool_call_arguments
from exactserve.runtime.errors import TemplateError
from exactserve.server.tools.choice import ToolChoice
from exactserve.server.tools.generic import prepare_generic

FAMILIES = ("hermes", "llama3", "generic")

# Hermes: the template describes or writes the call as `{"name": ...` JSON, in a
# <tool_call> block (Qwen writes the quotes escaped inside a Jinja string).
_HERMES_EXAMPLE = re.compile(r'\{\\?"name\\?": <function-name>')
_HERMES_CALL = re.compile(r'<tool_call>(?:\\n|\n)?\{\\?"name\\?":')
_LLAMA3_MARKERS = ("<|python_tag|>", "ipython")
_LLAMA3_CALL = '"parameters": '
_SYSTEM_PROBE = "exactserve system role probe 7f3a"


def detect_family(source: str) -> str:
    """The tool family of a chat template, from its source text."""
    if "<tool_call>" in source and (_HERMES_EXAMPLE.search(source) or _HERMES_CALL.search(source)):
        return "hermes"
    if any(marker in source for marker in _LLAMA3_MARKERS) and _LLAMA3_CALL in source:
        return "llama3"
    return "generic"


@dataclass(frozen=True)
class ToolFormat:
    """How one model's template takes tools. Built once per model; immutable.

    `has_system_role` is False for templates that reject or drop a system message
    (Gemma 2's); the generic format then puts its system text in the first user message.
    """

    family: str
    has_system_role: bool = True

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"tool family must be one of {', '.join(FAMILIES)}: {self.family!r}")

    @classmethod
    def for_template(cls, template: ChatTemplate) -> ToolFormat:
        """The format of `template`: its family from the source and, for the generic family,
        whether it renders a system message (tried once, as llama.cpp probes templates;
        the other families' templates all do)."""
        family = detect_family(template.source)
        return cls(family, family != "generic" or _renders_system(template))

    def prepare(
        self,
        messages: Sequence[Mapping[str, Any]],
        tools: Sequence[Mapping[str, Any]] | None,
        choice: ToolChoice,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]] | None]:
        """(messages, tools) to pass to `ChatTemplate.render` for one request.

        `messages` are template messages as `toolerr.messages.to_template_messages` makes
        them; `tools` are normalized tools (`normalize_tools`). The returned tools are None
        for the generic family and for choice "none" (then no tools are rendered). The
        inputs are not mutated.
        - hermes: tool-call arguments that are JSON object text are decoded (templates
          `tojson` them), None content becomes "".
        - llama3: as hermes; besides, an assistant message's text and each of its calls
          become separate assistant messages (Llama 3 templates drop the text and reject
          two calls in one message), each call followed by its results when every result
          that follows names one of the calls by `tool_call_id`.
        - generic: see `generic.py`.
        """
        shown = list(tools) if tools and choice.mode != "none" else None
        if self.family == "generic":
            return prepare_generic(messages, shown, self.has_system_role), None
        prepared = [_with_text_content(m) for m in parse_tool_call_arguments(messages)]
        if self.family == "llama3":
            prepared = _one_call_per_message(prepared)
        return prepared, shown

    def forced_prefix(self, choice: ToolChoice) -> str:
        """Text to append right after the generation prompt so the model must write a call:
        up to the name for "required", up to the arguments for "named"; "" otherwise. Pass
        it to `ToolCallParser` as its `prefix`."""
        if choice.mode not in ("required", "named"):
            return ""
        opening = {
            "hermes": ('<tool_call>\n{"name": ', ', "arguments": '),
            "llama3": ('{"name": ', ', "parameters": '),
            "generic": ('{"tool_call": {"name": ', ', "arguments": '),
        }[self.family]
        if choice.mode == "required":
            return opening[0] + '"'
        return opening[0] + json.dumps(choice.name) + opening[1]


def _renders_system(template: ChatTemplate) -> bool:
    probe = [{"role": "system", "content": _SYSTEM_PROBE}, {"role": "user", "content": "Hi"}]
    try:
        return _SYSTEM_PROBE in template.render(probe, add_generation_prompt=True)
    except TemplateError:
        return False


def _with_text_content(message: dict[str, Any]) -> dict[str, Any]:
    if message.get("content") is None:
        return {**message, "content": ""}
    return message


def _one_call_per_message(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        calls = message.get("tool_calls") or []
        index += 1
        if message.get("role") != "assistant" or not calls:
            out.append(message)
            continue
        results = []
        while index < len(messages) and messages[index].get("role") == "tool":
            results.append(messages[index])
            index += 1
        if message.get("content"):
            out.append({key: value for key, value in message.items() if key != "tool_calls"})
        ids = [call.get("id") for call in calls]
        is_paired = len(set(ids)) == len(ids) and all(
            result.get("tool_call_id") in ids for result in results
        )
        for call in calls:
            out.append({"role": "assistant", "content": "", "tool_calls": [call]})
            if is_paired:
                out.extend(r for r in results if r.get("tool_call_id") == call.get("id"))
        if not is_paired:
            out.extend(results)
    return out
