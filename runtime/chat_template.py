"""Chat templates rendered exactly as transformers' `apply_chat_template` renders them.

A GGUF file carries its chat template as Jinja source under `tokenizer.chat_template`
(named variants under `tokenizer.chat_template.<name>`, e.g. `tool_use`). Templates are
untrusted code, so they run in jinja2's `ImmutableSandboxedEnvironment`, configured as
transformers configures it (transformers/utils/chat_template_utils.py, version 5.x):
`trim_blocks`, `lstrip_blocks`, the `loopcontrols` extension, a `{% generation %}` tag
(rendered as its body), `tojson` as `json.dumps(x, ensure_ascii=False, indent=None,
separators=None, sort_keys=False)`, `raise_exception`, `strftime_now`, a `dict` that
cannot be subclassed from inside and a `namespace` that rejects underscore attributes.

Inputs are prepared as `apply_chat_template` prepares them: in each message the keys
whose value is None are dropped (OpenAI clients send `content: null` next to
`tool_calls`), everything is rebuilt from plain JSON types (other objects become a
placeholder such as "<ndarray>"), reasoning given as `thinking` or `reasoning` is also
exposed as `reasoning_content` (and `reasoning_content` as `thinking`), and the template
variables are `messages`, `tools`, `documents`, `add_generation_prompt`, `bos_token`,
`eos_token` and any extra keyword (e.g. `enable_thinking`), which overrides the others.

Tools are passed as given: JSON-schema dicts, in the OpenAI form
`{"type": "function", "function": {...}}` or bare. Assistant `tool_calls[*].function.
arguments` are passed as given too: transformers does not parse a JSON string, so a
template that iterates `arguments|items` fails on one. `parse_tool_call_arguments` is the
separate, opt-in normalisation a server can apply first.

`continue_final_message` (assistant prefill) leaves the final message open, as
transformers does: "CONTINUE_FINAL_MESSAGE_TAG " is appended to the text being continued
(the field's string, or the last block with a "text" key when it is a list; a reasoning
field tags every alias equal to it), the template renders, and the text is cut where the
tag lands, with the whitespace before it removed when the template trimmed the tag's own
trailing space. Misuse by the caller (with `add_generation_prompt`, an empty
conversation, a final message without the field or without text) raises ValueError; a
template that never names the field, or does not reproduce the final message verbatim,
raises TemplateError.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import jinja2
import jinja2.ext
import jinja2.nodes
import jinja2.utils
import numpy as np
from jinja2.sandbox import ImmutableSandboxedEnvironment

from exactserve.runtime.errors import TemplateError

logger = logging.getLogger("exactserve")

KEY_TEMPLATE = "tokenizer.chat_template"
KEY_TOKENS = "tokenizer.ggml.tokens"
KEY_BOS_ID = "tokenizer.ggml.bos_token_id"
KEY_EOS_ID = "tokenizer.ggml.eos_token_id"

# Built-in templates (runtime/templates/) for GGUF files that carry none, by architecture.
_BUILTIN_BY_ARCH = {
    "gemma": "gemma3.jinja",
    "gemma2": "gemma3.jinja",
    "gemma3": "gemma3.jinja",
    "qwen2": "chatml.jinja",
    "qwen3": "chatml.jinja",
    "llama": "llama3.jinja",  # llama2.jinja when the vocab lacks <|start_header_id|>
}
_LLAMA3_MARKER = "<|start_header_id|>"
_TEMPLATES_DIR = Path(__file__).parent / "templates"  # package data

# Names under which a message's reasoning arrives; templates read `reasoning_content`,
# gpt-oss templates read `thinking`.
_REASONING_FIELDS = ("reasoning_content", "thinking", "reasoning")

# transformers' marker for `continue_final_message`, kept verbatim: templates that inspect
# message text (trim, endswith, split) then see exactly what they see under transformers.
_CONTINUE_TAG = "CONTINUE_FINAL_MESSAGE_TAG "


class _GenerationTag(jinja2.ext.Extension):
    """`{% generation %}...{% endgeneration %}` renders its body (assistant-mask marker)."""

    tags = {"generation"}

    def parse(self, parser: Any) -> jinja2.nodes.Node:
        # A call block, as transformers builds it, so `set` inside stays inside.
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        call = self.call_method("_render_body")
        return jinja2.nodes.CallBlock(call, [], [], body).set_lineno(lineno)

    def _render_body(self, caller: Callable[[], str]) -> str:
        return caller()


class _TemplateDict:
    """`dict(...)` and `dict.fromkeys(...)` for templates, without exposing the dict type."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict:
        return dict(*args, **kwargs)

    def fromkeys(self, *args: Any, **kwargs: Any) -> dict:
        return dict.fromkeys(*args, **kwargs)


class _TemplateNamespace(jinja2.utils.Namespace):
    """A jinja `namespace` that refuses underscore-prefixed attribute names."""

    def __init__(*args: Any, **kwargs: Any) -> None:  # noqa: N805 - jinja's signature trick
        self, args = args[0], args[1:]
        attrs = dict(*args, **kwargs)
        for name in attrs:
            _TemplateNamespace._check_name(name)
        jinja2.utils.Namespace.__init__(self, attrs)

    def __setitem__(self, name: str, value: Any) -> None:
        _TemplateNamespace._check_name(name)
        jinja2.utils.Namespace.__setitem__(self, name, value)

    @staticmethod
    def _check_name(name: Any) -> None:
        if isinstance(name, str) and name.startswith("_"):
            raise jinja2.exceptions.SecurityError(
                f"chat templates cannot store underscore-prefixed attributes on a namespace: "
                f"{name!r}"
            )


class _RaisedByTemplate(jinja2.exceptions.TemplateError):
    """What `raise_exception(message)` raises inside a template."""


def _raise_exception(message: str) -> None:
    raise _RaisedByTemplate(message)


def _tojson(
    value: Any,
    ensure_ascii: bool = False,
    indent: int | None = None,
    separators: tuple[str, str] | None = None,
    sort_keys: bool = False,
) -> str:
    # Replaces jinja's own filter, which HTML-escapes <, >, & and ' and sorts keys.
    return json.dumps(
        value, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys
    )


def _make_environment(clock: Callable[[], datetime]) -> ImmutableSandboxedEnvironment:
    env = ImmutableSandboxedEnvironment(
        trim_blocks=True,
        lstrip_blocks=True,
        extensions=[_GenerationTag, jinja2.ext.loopcontrols],
    )
    env.filters["tojson"] = _tojson
    env.globals["raise_exception"] = _raise_exception
    env.globals["strftime_now"] = lambda fmt: clock().strftime(fmt)
    env.globals["dict"] = _TemplateDict()
    env.globals["namespace"] = _TemplateNamespace
    return env


def to_template_data(value: Any) -> Any:
    """Rebuild `value` from plain JSON types, as transformers does before rendering.

    Exact str/int/float/bool/None pass through; subclasses are cut back to the base type;
    mappings, lists and tuples are rebuilt; NumPy scalars become Python scalars;
    dataclasses and pydantic models become dicts; anything else becomes "<TypeName>".
    """
    if value is None or type(value) in (str, int, float, bool):
        return value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, Mapping):
        return {to_template_data(k): to_template_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [to_template_data(item) for item in value]
    if isinstance(value, tuple):
        return tuple(to_template_data(item) for item in value)
    if isinstance(value, np.generic):
        return to_template_data(value.item())
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = dataclasses.fields(value)
        return {f.name: to_template_data(getattr(value, f.name)) for f in fields}
    if callable(getattr(value, "model_dump", None)):
        return to_template_data(value.model_dump())
    return f"<{type(value).__name__}>"


def prepare_messages(messages: Sequence[Any]) -> list[dict]:
    """Messages as the template sees them: None-valued keys dropped, plain data, aliases."""
    prepared = []
    for message in to_template_data(list(messages)):
        if not isinstance(message, dict):
            raise TypeError(f"chat messages must be dicts, got {message!r}")
        message = {key: value for key, value in message.items() if value is not None}
        reasoning = next((message[k] for k in _REASONING_FIELDS if k in message), None)
        if reasoning is not None:
            message = {"thinking": reasoning, **message, "reasoning_content": reasoning}
        prepared.append(message)
    return prepared


def parse_tool_call_arguments(messages: Sequence[Mapping[str, Any]]) -> list[dict]:
    """Copy of `messages` with tool-call `arguments` given as JSON strings parsed to objects.

    Opt-in normalisation, not applied by `ChatTemplate.render` (transformers does not
    apply it). Some templates (Qwen3-Coder, Qwen3.5) iterate `arguments|items` and fail on
    a string; others (Llama 3.1, Qwen2.5) `tojson` it and would double-encode a string.
    OpenAI clients send strings. Only a string that parses to a JSON object is replaced;
    anything else (invalid JSON, a JSON array) is kept verbatim so the model sees what it
    produced. Both `{"function": {"arguments": ...}}` and flat `{"arguments": ...}` tool
    calls are handled. The input is not mutated.
    """
    result = []
    for message in messages:
        message = dict(message)
        calls = message.get("tool_calls")
        if isinstance(calls, list):
            message["tool_calls"] = [_parse_call_arguments(call) for call in calls]
        result.append(message)
    return result


def _parse_call_arguments(call: Any) -> Any:
    if not isinstance(call, Mapping):
        return call
    call = dict(call)
    if isinstance(call.get("function"), Mapping):
        call["function"] = _parse_call_arguments(call["function"])
    arguments = call.get("arguments")
    if isinstance(arguments, str):
        try:
            parsed = json.loads(arguments)
        except ValueError:
            parsed = None
        if isinstance(parsed, dict):
            call["arguments"] = parsed
    return call


class ChatTemplate:
    """One compiled chat template and the token strings it is rendered with.

    Immutable after construction; `render` may be called concurrently. `clock` supplies
    the time for `strftime_now` (tests pin it).
    """

    def __init__(
        self,
        source: str,
        *,
        bos_token: str = "",
        eos_token: str = "",
        name: str = "default",
        clock: Callable[[], datetime] = datetime.now,
    ) -> None:
        self.source = source
        self.bos_token = bos_token
        self.eos_token = eos_token
        self.name = name
        try:
            self._compiled = _make_environment(clock).from_string(source)
        except jinja2.exceptions.TemplateSyntaxError as exc:
            raise TemplateError(
                f"chat template {name!r} does not compile: {exc.message} (line {exc.lineno})"
            ) from exc

    def __repr__(self) -> str:
        return f"ChatTemplate(name={self.name!r}, {len(self.source)} chars)"

    def render(
        self,
        messages: Sequence[Any],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        documents: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool = False,
        continue_final_message: bool | str = False,
        **kwargs: Any,
    ) -> str:
        """The prompt text for `messages`, byte for byte what transformers renders.

        Extra keywords become template variables (e.g. `enable_thinking=False`) and
        override `bos_token`/`eos_token`. `continue_final_message=True` leaves the final
        message's `content` open for the model to continue; a field name (e.g.
        "reasoning_content") continues that field instead. Raises ValueError when
        `continue_final_message` is combined with `add_generation_prompt` (as
        `apply_chat_template` does), the conversation is empty, or the final message has
        no text to continue; `TemplateError` when the template raises, never names the
        field, or does not reproduce the final message verbatim.
        """
        if tools is not None and not all(isinstance(tool, Mapping) for tool in tools):
            raise TypeError("tools must be JSON-schema dicts")
        if documents is not None and not all(isinstance(doc, Mapping) for doc in documents):
            raise TypeError("documents must be dicts, e.g. with 'title' and 'text' keys")
        prepared = prepare_messages(messages)
        field = _continue_field(continue_final_message, add_generation_prompt, prepared)
        continued = self._tag_final_message(prepared, field) if field else None
        variables = {"bos_token": self.bos_token, "eos_token": self.eos_token}
        variables.update(to_template_data(kwargs))
        try:
            text = self._compiled.render(
                messages=prepared,
                tools=to_template_data(list(tools) if tools is not None else None),
                documents=to_template_data(list(documents) if documents is not None else None),
                add_generation_prompt=add_generation_prompt,
                **variables,
            )
        except _RaisedByTemplate as exc:
            raise TemplateError(f"chat template {self.name!r} raised: {exc.message}") from exc
        except Exception as exc:  # the template is foreign code; any failure is its failure
            raise TemplateError(
                f"chat template {self.name!r} failed to render: {type(exc).__name__}: {exc}"
            ) from exc
        return text if continued is None else self._cut_at_tag(text, continued)

    def _tag_final_message(self, messages: list[dict], field: str) -> str:
        """Append the tag to the text of `field` in the final message (in place, on the
        prepared copy); returns that text as it was."""
        final = messages[-1]
        value = final.get(field)
        if value is None:
            raise ValueError(
                f"continue_final_message is set but the final message has no {field!r} to "
                f"continue; add it or pass continue_final_message=False"
            )
        fields = [field]
        if field in _REASONING_FIELDS:  # aliases of one reasoning: tag each copy
            fields = [name for name in _REASONING_FIELDS if final.get(name) == value]
        if not any(name in self.source for name in fields):
            raise TemplateError(
                f"chat template {self.name!r} never reads {field!r}, so "
                f"continue_final_message={field!r} cannot continue it"
            )
        if isinstance(value, (list, tuple)):
            block = next((b for b in reversed(value) if _is_text_block(b)), None)
            if block is None:
                raise ValueError(
                    "continue_final_message is set but no content block of the final message "
                    "has a 'text' to continue"
                )
            text = _text_to_continue(block["text"])
            block["text"] = text + _CONTINUE_TAG
            return text
        text = _text_to_continue(value)
        for name in fields:
            final[name] = text + _CONTINUE_TAG
        return text

    def _cut_at_tag(self, text: str, continued: str) -> str:
        """The render up to the tag: the open final message."""
        marker = _CONTINUE_TAG.rstrip()
        if continued.strip() not in text or marker not in text:
            raise TemplateError(
                f"chat template {self.name!r} does not reproduce the final message verbatim "
                f"(it drops or rewrites part of it), so it cannot be continued: "
                f"{continued.strip()[:200]!r}"
            )
        cut = text.rindex(marker)
        if text.startswith(_CONTINUE_TAG, cut):
            return text[:cut]
        return text[:cut].rstrip()  # the template trimmed the text, so trim before the tag

    @classmethod
    def from_gguf(cls, gguf_file: Any, arch: str, *, name: str = "default") -> ChatTemplate:
        """The template stored in `gguf_file` (a `runtime.gguf_file.GGUFFile`).

        `name="default"` reads `tokenizer.chat_template`; another name reads
        `tokenizer.chat_template.<name>`. A file without a default template gets the
        built-in template for `arch` (logged once, here, at WARNING).
        """
        metadata = gguf_file.metadata
        tokens = metadata.get(KEY_TOKENS, [])
        bos_token = _token_text(tokens, metadata.get(KEY_BOS_ID))
        eos_token = _token_text(tokens, metadata.get(KEY_EOS_ID))
        key = KEY_TEMPLATE if name == "default" else f"{KEY_TEMPLATE}.{name}"
        source = metadata.get(key)
        if isinstance(source, str) and source:
            return cls(source, bos_token=bos_token, eos_token=eos_token, name=name)
        if name != "default":
            raise TemplateError(
                f"{gguf_file.path}: no chat template named {name!r}; it has "
                f"{', '.join(template_names(gguf_file)) or 'none'}"
            )
        filename = builtin_template_file(arch, tokens)
        source = (_TEMPLATES_DIR / filename).read_text(encoding="utf-8")
        template = cls(source, bos_token=bos_token, eos_token=eos_token, name=f"builtin:{filename}")
        logger.warning(
            "%s has no chat template (%s); using the built-in %s template %s",
            gguf_file.path,
            KEY_TEMPLATE,
            arch,
            filename,
        )
        return template


def template_names(gguf_file: Any) -> tuple[str, ...]:
    """Names of the chat templates in `gguf_file`: "default" first if present, then named."""
    metadata = gguf_file.metadata
    names = ["default"] if metadata.get(KEY_TEMPLATE) else []
    prefix = KEY_TEMPLATE + "."
    names += [key[len(prefix) :] for key in metadata if key.startswith(prefix)]
    return tuple(names)


def builtin_template_file(arch: str, tokens: Sequence[str]) -> str:
    """File name under runtime/templates/ of the built-in template for `arch`."""
    filename = _BUILTIN_BY_ARCH.get(arch)
    if filename is None:
        known = ", ".join(sorted(_BUILTIN_BY_ARCH))
        raise TemplateError(
            f"the model has no chat template and exactserve has no built-in template for "
            f"architecture {arch!r} (built-in: {known}); pass a template explicitly"
        )
    if arch == "llama" and _LLAMA3_MARKER not in tokens:
        return "llama2.jinja"
    return filename


def _continue_field(
    continue_final_message: bool | str, add_generation_prompt: bool, messages: Sequence[Any]
) -> str | None:
    """The field `continue_final_message` continues, or None when it is off."""
    if not isinstance(continue_final_message, (bool, str)):
        raise TypeError(
            f"continue_final_message must be a bool or a field name, got "
            f"{type(continue_final_message).__name__}"
        )
    if not continue_final_message:
        return None
    if add_generation_prompt:
        raise ValueError(
            "continue_final_message and add_generation_prompt are not compatible: use "
            "continue_final_message to let the model continue the final message, "
            "add_generation_prompt to open a new assistant message"
        )
    if not messages:
        raise ValueError("continue_final_message is set but the conversation is empty")
    return "content" if continue_final_message is True else continue_final_message


def _is_text_block(block: Any) -> bool:
    # transformers tests `"text" in block`: a string or list block without "text" in it is
    # skipped, one with it cannot be indexed by "text" (transformers fails too).
    if isinstance(block, Mapping):
        return "text" in block
    if isinstance(block, (str, list, tuple)) and "text" not in block:
        return False
    raise ValueError(
        f"continue_final_message is set but a content block of the final message is not a "
        f"dict: {block!r}"
    )


def _text_to_continue(value: Any) -> str:
    if not isinstance(value, str):
        raise ValueError(
            f"continue_final_message is set but the text to continue is a "
            f"{type(value).__name__}, not a string"
        )
    return value


def _token_text(tokens: Sequence[str], token_id: Any) -> str:
    if token_id is None or not 0 <= int(token_id) < len(tokens):
        return ""
    return tokens[int(token_id)]
