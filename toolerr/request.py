"""The layer on one request body: read it, detect, rewrite, and say what to send on.

`process` is what a server calls for a chat-style request (OpenAI Chat Completions
`chat`, Anthropic Messages `messages`, OpenAI Responses `responses`). The request field
`tool_errors` selects the form and `tool_error_rules` the rule set, each overriding the
server's option; they and the other fields only the layer reads (`error_kind`, tool
`annotations`) never go further.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from exactserve.toolerr import anthropic_api, chat_api, responses_api
from exactserve.toolerr.body import Conversation, RequestError
from exactserve.toolerr.detect import RULES, Failure, detect
from exactserve.toolerr.forms import FORMS, Options, rewrite
from exactserve.toolerr.jsonedit import JsonPath, delete_in_object, delete_in_text
from exactserve.toolerr.messages import Message
from exactserve.toolerr.report import header_value

APIS = ("chat", "messages", "responses")
TOOL_ERRORS = "tool_errors"
TOOL_ERROR_RULES = "tool_error_rules"

_CONVERTERS = {"chat": chat_api, "messages": anthropic_api, "responses": responses_api}

# Content block types only Anthropic bodies use (Chat parts are text, image_url,
# input_audio, file, refusal).
_ANTHROPIC_BLOCKS = frozenset(
    {"tool_use", "tool_result", "thinking", "redacted_thinking", "image", "document"}
)


@dataclass(frozen=True)
class Outcome:
    """What the layer made of one request.

    conversation: the body as received, in the internal model.
    messages: what the model should read; the very tuple `conversation.messages` when
        nothing was rewritten.
    body: what goes upstream or to rendering: the received body without the layer's
        fields, rewritten when `changed`. The received body is never mutated.
    """

    api: str
    form: str
    conversation: Conversation
    failures: tuple[Failure, ...]
    messages: tuple[Message, ...]
    changed: bool
    layer_paths: tuple[JsonPath, ...]
    body: dict[str, Any]
    rules: str = "paper"
    rules_named: bool = False

    @property
    def header(self) -> str:
        """The X-Tool-Errors header value; it names the rule set when it is `wide` or the
        request named one (`rules_named`)."""
        shown = self.rules if self.rules != "paper" or self.rules_named else None
        return header_value(self.form, self.changed, self.failures, shown)

    def forward_bytes(self, received: bytes) -> bytes:
        """The body to forward, given the exact bytes received (UTF-8 JSON).

        Unchanged: the received bytes themselves. Only layer fields to strip: the received
        text with those members cut out, every other byte kept. Rewritten: the new body
        serialised.
        """
        if self.changed:
            try:
                return json.dumps(self.body, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate from a \ud800-style escape
                return json.dumps(self.body).encode("ascii")
        if not self.layer_paths:
            return received
        return delete_in_text(received.decode("utf-8"), self.layer_paths).encode("utf-8")


def process(body: dict[str, Any], api: str, user_agent: str, options: Options) -> Outcome:
    """Run the layer on a decoded request body of shape `api`.

    Raises RequestError (a ValueError) naming the field when the body cannot be read or
    `tool_errors` / `tool_error_rules` / `error_kind` has a value outside its allowed set.
    """
    if api not in _CONVERTERS:
        raise ValueError(f"api must be one of {', '.join(APIS)}, got {api!r}")
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    form = select_form(body, options.form)
    rules = select_rules(body, options.rules)
    converter = _CONVERTERS[api]
    conversation = converter.parse(body)
    failures = detect(conversation.messages, user_agent, rules)
    messages = rewrite(conversation.messages, failures, form, options, conversation.tools)
    changed = messages is not conversation.messages
    layer_paths = tuple((key,) for key in (TOOL_ERRORS, TOOL_ERROR_RULES) if key in body)
    layer_paths += conversation.layer_paths
    clean = delete_in_object(body, layer_paths) if layer_paths else body
    if changed:
        clean = converter.rebuild(clean, conversation, messages)
    return Outcome(
        api,
        form,
        conversation,
        failures,
        messages,
        changed,
        layer_paths,
        clean,
        rules,
        TOOL_ERROR_RULES in body,
    )


def select_form(body: dict[str, Any], default: str) -> str:
    """The request's `tool_errors` when present, else the server's `default`."""
    if TOOL_ERRORS not in body:
        return default
    value = body[TOOL_ERRORS]
    if value not in FORMS:
        raise RequestError(
            f"{TOOL_ERRORS} must be one of {', '.join(FORMS)}, got {json.dumps(value)}",
            TOOL_ERRORS,
        )
    return value


def select_rules(body: dict[str, Any], default: str) -> str:
    """The request's `tool_error_rules` when present, else the server's `default`."""
    if TOOL_ERROR_RULES not in body:
        return default
    value = body[TOOL_ERROR_RULES]
    if value not in RULES:
        raise RequestError(
            f"{TOOL_ERROR_RULES} must be one of {', '.join(RULES)}, got {json.dumps(value)}",
            TOOL_ERROR_RULES,
        )
    return value


def detect_api(body: dict[str, Any]) -> str:
    """Guess a body's API shape: `responses` when it has `input` and no `messages`;
    `messages` (Anthropic) when it has a top-level `system` or a content block of a type
    only Anthropic uses (tool_use, tool_result, thinking, redacted_thinking, image,
    document); `chat` otherwise. A body with only plain text messages reads the same
    either way."""
    if "messages" not in body and "input" in body:
        return "responses"
    if "system" in body:
        return "messages"
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else ():
        content = message.get("content") if isinstance(message, dict) else None
        for block in content if isinstance(content, list) else ():
            if isinstance(block, dict) and block.get("type") in _ANTHROPIC_BLOCKS:
                return "messages"
    return "chat"
