"""Decide whether a tool message is a failure, and by which rule.

Rules fire in a fixed order and the first one wins: a client's own `error_kind` (rule
`client`), then the explicit flags every client may use (`is_error`, `cline`, `opencode`,
`mcp-iserror`), then either the rules of the agent named in the request's User-Agent or, for
any other client, the `generic` rule. For a known agent no other text rule applies.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from exactserve.toolerr.classify import classify
from exactserve.toolerr.messages import Message, text_of
from exactserve.toolerr.wide import judge

# The rule sets: the paper's frozen rules (the default), and the opt-in wide rules.
RULES = ("paper", "wide")

INTEGER = re.compile(r"-?[0-9]+")
CODEX_PROCESS_EXITED = re.compile(r"Process exited with code (-?[0-9]+)")
CODEX_EXIT_CODE = re.compile(r"Exit code: (-?[0-9]+)")
OPENCODE_EXITED = re.compile(r"Exited with code (-?[0-9]+)")

# How a generic failure begins, after leading white space. The exception-name branch is a
# name of letters, digits, `_` and `.` ending in Error/Exception/Timeout/timeout, then `:`
# or `(`. The JSON branch needs an object or a non-empty string after `{"error":`, so a
# null, false or empty error field is not a failure.
GENERIC_START = re.compile(
    r"Error:|ERROR:|error:|Error executing tool|MCP error -"
    r"|An error occurred while running the tool"
    r"|Traceback \(most recent call last\):"
    r"|[A-Za-z0-9_.]*(?:Error|Exception|Timeout|timeout)[:(]"
    r"|HTTP Error|HTTP 4|HTTP 5"
    r"|[0-9]{3} Client Error:|[0-9]{3} Server Error:"
    r"|Client error '|Server error '"
    r'|\{"error": *(?:\{|"[^"])'
)


@dataclass(frozen=True)
class Failure:
    """A failed tool message: `message` indexes the internal message list. `evidence`
    (wide rules only) names the matched rule and words behind the decision."""

    message: int
    kind: str
    rule: str
    evidence: str | None = None


def detect(
    messages: tuple[Message, ...], user_agent: str, rules: str = "paper"
) -> tuple[Failure, ...]:
    """Every failed tool message of the conversation, in message order, under the rule
    set `rules` (`paper` or `wide`)."""
    if rules not in RULES:
        raise ValueError(f"rules must be one of {', '.join(RULES)}, got {rules!r}")
    failures = []
    # the wide rules read the name of the call each result answers (a file reader's result
    # is not put to their learned detector)
    names = {c.id: c.name for m in messages for c in m.tool_calls} if rules == "wide" else {}
    for index, message in enumerate(messages):
        if message.role != "tool":
            continue
        if message.error_kind is not None:
            failures.append(Failure(index, message.error_kind, "client"))
            continue
        text = text_of(message.content)
        if rules == "wide":
            tool = names.get(message.tool_call_id or "", "")
            verdict = judge(text, explicit_rule(text, message.is_error), tool)
            if verdict is not None:
                failures.append(Failure(index, verdict.kind, verdict.rule, verdict.evidence))
            continue
        rule = detect_rule(text, message.is_error, user_agent)
        if rule is not None:
            failures.append(Failure(index, classify(text, rule), rule))
    return tuple(failures)


def detect_rule(text: str, is_error: bool, user_agent: str) -> str | None:
    """The name of the first paper rule that says `text` is a failure, or None."""
    explicit = explicit_rule(text, is_error)
    if explicit is not None:
        return explicit
    for marker, agent_rules in AGENT_RULES:
        if marker in user_agent:
            return agent_rules(text)
    return "generic" if GENERIC_START.match(text.lstrip()) else None


def explicit_rule(text: str, is_error: bool) -> str | None:
    """The explicit flag every client may use (both rule sets), or None."""
    if is_error:
        return "is_error"
    if text.startswith('{"query":') and _json_object(text).get("success", True) is False:
        return "cline"
    if text.startswith('{"error":{"type":"tool.execution",'):
        return "opencode"
    if text.lstrip().startswith("{") and _is_error_inside(_json_object(text)):
        return "mcp-iserror"
    return None


def _json_object(text: str) -> dict[str, Any]:
    """`text` decoded when it is a JSON object, else an empty dict."""
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than Python allows
        return {}
    return decoded if isinstance(decoded, dict) else {}


def _is_error_inside(value: Any) -> bool:
    try:
        return _has_true_is_error(value)
    except RecursionError:
        return False


def _has_true_is_error(value: Any) -> bool:
    """Whether any object inside `value` carries `"isError": true`."""
    if isinstance(value, dict):
        if value.get("isError") is True:
            return True
        return any(_has_true_is_error(item) for item in value.values())
    if isinstance(value, list):
        return any(_has_true_is_error(item) for item in value)
    return False


def _is_nonzero(number: str) -> bool:
    return int(number) != 0


def _last_line_value(text: str, label: str) -> str | None:
    """What follows `label` on the last line that begins with it, stripped."""
    lines = [line for line in text.splitlines() if line.startswith(label)]
    return lines[-1][len(label) :].strip() if lines else None


def _qwen(text: str) -> str | None:
    if text.startswith("File not found:"):
        return "qwen-notfound"
    if text.startswith("Command:"):
        exit_code = _last_line_value(text, "Exit Code:")
        if exit_code is not None and INTEGER.fullmatch(exit_code) and _is_nonzero(exit_code):
            return "qwen-exit"
        error = _last_line_value(text, "Error:")
        if error is not None and error != "(none)":
            return "qwen-exit"
    if text.startswith("Error") or (text.startswith("File") and "has not been read" in text):
        return "qwen-error"
    return None


def _codex(text: str) -> str | None:
    exited = CODEX_PROCESS_EXITED.search(text)
    if exited and _is_nonzero(exited.group(1)):
        return "codex-exit"
    begins = CODEX_EXIT_CODE.match(text)
    if begins and _is_nonzero(begins.group(1)):
        return "codex-exit"
    if "command timed out" in text:
        return "codex-timeout"
    if "apply_patch verification failed" in text:
        return "codex-patch"
    return None


def _kilo(text: str) -> str | None:
    if text.startswith("File not found:"):
        return "kilo-notfound"
    if text.startswith("Unknown: FileSystem."):
        return "kilo-fs"
    if text.startswith("oldString"):
        return "kilo-usage"
    return None


def _opencode(text: str) -> str | None:
    lines = text.rstrip().splitlines()
    last = OPENCODE_EXITED.fullmatch(lines[-1].strip()) if lines else None
    return "opencode-exit" if last and _is_nonzero(last.group(1)) else None


# (substring of the User-Agent, that agent's rules), tried in this order.
AGENT_RULES: tuple[tuple[str, Callable[[str], str | None]], ...] = (
    ("QwenCode/", _qwen),
    ("codex", _codex),
    ("Kilo-Code/", _kilo),
    ("opencode/", _opencode),
)
