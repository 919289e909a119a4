"""Rewrite the decision step of a conversation so the model reads its failures in one form.

Only failures in tool messages after the last assistant message (the decision step) are
touched, and only those whose kind is not ambiguous. Forms: `off` leaves the conversation
alone; `c1` appends guidance to each failed tool message; `c2` removes each failed call and
its result and restates them as notes in the last user message (or a new one); `c3` keeps
everything and adds the notes to the first user message after the failed exchange (or a new
one right after it); `c4` removes as `c2` and always adds a new user message.
A conversation with nothing to rewrite is returned as the very same tuple.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace

from exactserve.toolerr.detect import RULES, Failure
from exactserve.toolerr.messages import (
    Message,
    ToolCall,
    ToolDef,
    append_text,
    decode_arguments,
    has_content,
    text_of,
)

FORMS = ("off", "c1", "c2", "c3", "c4")

GUIDANCE = {
    "transient": "This is a temporary failure. Retrying the same call is expected to succeed.",
    "fixable": (
        "This call cannot succeed as written. The error says what to change; "
        "call the tool again with the corrected value."
    ),
    "unrecoverable": (
        "This cannot be fixed by retrying or by changing the arguments. "
        "Tell the user what happened."
    ),
}

# Replaces the transient guidance for a tool that is not known to be safe to repeat
# (beyond the paper, item 2).
CHECK_BEFORE_RETRY = (
    "This looks like a temporary failure, but the last attempt may have taken effect "
    "before it failed. Check whether it did before calling the tool again."
)

NOTE = "Note from the tool runtime: the last attempt called {name} with {arguments} and it failed with: {error}"  # noqa: E501


@dataclass(frozen=True)
class Options:
    """How the layer rewrites; the server's defaults, `form` overridable per request.

    check_before_retry: replace the transient guidance by CHECK_BEFORE_RETRY for tools not
        known to be safe to repeat (see `is_retry_unsafe`).
    retry_safe_tools: the server's allow-list of tools safe to repeat; None when not given.
    quote_errors: restate the error in a note as a JSON string literal of at most
        `quote_max_chars` characters instead of verbatim.
    rules: the detection rule set, `paper` (the paper's frozen rules) or `wide`;
        overridable per request by `tool_error_rules`.
    """

    form: str = "off"
    check_before_retry: bool = False
    retry_safe_tools: frozenset[str] | None = None
    quote_errors: bool = False
    quote_max_chars: int = 2000
    rules: str = "paper"

    def __post_init__(self) -> None:
        if self.form not in FORMS:
            raise ValueError(f"form must be one of {', '.join(FORMS)}, got {self.form!r}")
        if self.rules not in RULES:
            raise ValueError(f"rules must be one of {', '.join(RULES)}, got {self.rules!r}")
        if self.quote_max_chars < 1:
            raise ValueError(f"quote_max_chars must be at least 1, got {self.quote_max_chars}")


def rewrite(
    messages: tuple[Message, ...],
    failures: tuple[Failure, ...],
    form: str,
    options: Options,
    tools: Mapping[str, ToolDef],
) -> tuple[Message, ...]:
    """The conversation as the model should read it under `form`.

    Returns `messages` itself when there is nothing to rewrite; otherwise a new tuple whose
    untouched messages are the same objects and whose added user message has origin None.
    """
    if form == "off":
        return messages
    last_assistant = max((i for i, m in enumerate(messages) if m.role == "assistant"), default=-1)
    calls = {c.id: c for c in messages[last_assistant].tool_calls} if last_assistant >= 0 else {}
    targets = [
        f
        for f in failures
        if f.message > last_assistant and f.kind in GUIDANCE and messages[f.message].role == "tool"
    ]
    if form != "c1":
        # A note names the call and the call is removed: both need the call itself.
        targets = [f for f in targets if messages[f.message].tool_call_id in calls]
    if not targets:
        return messages
    guidance = {
        f.message: _guidance(f.kind, calls.get(messages[f.message].tool_call_id), tools, options)
        for f in targets
    }
    if form == "c1":
        out = list(messages)
        for f in targets:
            out[f.message] = append_text(messages[f.message], guidance[f.message], "\n")
        return tuple(out)
    notes = "\n\n".join(
        format_note(calls[messages[f.message].tool_call_id], messages[f.message], options)
        + "\n\n"
        + guidance[f.message]
        for f in targets
    )
    if form == "c3":
        return _add_after_exchange(messages, last_assistant, notes)
    out = _remove_failed(messages, last_assistant, {f.message for f in targets})
    if form == "c2" and out and out[-1].role == "user":
        out[-1] = append_text(out[-1], notes, "\n\n")
    else:
        out.append(Message(role="user", content=notes))
    return tuple(out)


def is_retry_unsafe(name: str | None, tools: Mapping[str, ToolDef], options: Options) -> bool:
    """Whether the check-first sentence replaces the transient guidance for tool `name`.

    With `check_before_retry` on, a tool is unsafe to repeat unless it is on the allow-list
    or its MCP annotations set `readOnlyHint` or `idempotentHint` to true; it is treated as
    unsafe when its annotations set either of them to false, or when the server has an
    allow-list (which it is not on). A tool about which nothing is known keeps the plain
    transient guidance.
    """
    if not options.check_before_retry:
        return False
    allow_list = options.retry_safe_tools
    if allow_list is not None and name in allow_list:
        return False
    tool = tools.get(name) if name is not None else None
    if tool is not None:
        if tool.read_only is True or tool.idempotent is True:
            return False
        if tool.read_only is False or tool.idempotent is False:
            return True
    return allow_list is not None


def format_arguments(arguments: str | dict) -> str:
    """`key=value, ...` in the call's order, each value compact JSON; `no arguments` for an
    empty object or empty text; the raw text when it is not a JSON object."""
    if isinstance(arguments, str) and not arguments.strip():
        return "no arguments"
    decoded = decode_arguments(arguments)
    if decoded is None:
        return arguments if isinstance(arguments, str) else _compact(arguments)
    if not decoded:
        return "no arguments"
    return ", ".join(f"{key}={_compact(value)}" for key, value in decoded.items())


def format_note(call: ToolCall, tool_message: Message, options: Options) -> str:
    """The note restating one failed call, without its guidance."""
    error = text_of(tool_message.content)
    if options.quote_errors:
        error = quote_error(error, options.quote_max_chars)
    return NOTE.format(name=call.name, arguments=format_arguments(call.arguments), error=error)


def quote_error(error: str, max_chars: int) -> str:
    """The error as a JSON string literal, cut to `max_chars` characters with a marker
    saying how much was cut (beyond the paper, item 3)."""
    quoted = json.dumps(error[:max_chars], ensure_ascii=False)
    if len(error) <= max_chars:
        return quoted
    return f"{quoted} (truncated to the first {max_chars} of {len(error)} characters)"


def _compact(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _guidance(
    kind: str, call: ToolCall | None, tools: Mapping[str, ToolDef], options: Options
) -> str:
    name = call.name if call is not None else None
    if kind == "transient" and is_retry_unsafe(name, tools, options):
        return CHECK_BEFORE_RETRY
    return GUIDANCE[kind]


def _remove_failed(
    messages: tuple[Message, ...], last_assistant: int, failed: set[int]
) -> list[Message]:
    """Drop the failed tool messages and their calls; drop the assistant message when
    neither content nor calls remain."""
    failed_ids = {messages[i].tool_call_id for i in failed}
    out = []
    for index, message in enumerate(messages):
        if index in failed:
            continue
        if index == last_assistant:
            kept = tuple(c for c in message.tool_calls if c.id not in failed_ids)
            if not kept and not has_content(message.content):
                continue
            if kept != message.tool_calls:
                message = replace(message, tool_calls=kept)
        out.append(message)
    return out


def _add_after_exchange(
    messages: tuple[Message, ...], last_assistant: int, notes: str
) -> tuple[Message, ...]:
    """C3: the exchange ends at the last tool message of the decision step."""
    end = max(i for i in range(last_assistant + 1, len(messages)) if messages[i].role == "tool")
    out = list(messages)
    for index in range(end + 1, len(messages)):
        if messages[index].role == "user":
            out[index] = append_text(messages[index], notes, "\n\n")
            return tuple(out)
    out.insert(end + 1, Message(role="user", content=notes))
    return tuple(out)
