"""The tool-error recovery layer: pure functions on chat messages (standard library only).

Read a request body into the internal model (`process` does every step), detect failed
tool results (`detect`), classify them (`classify`), rewrite the decision step in one of
the forms (`rewrite`), and report what happened (`Outcome.header`, the X-Tool-Errors
value). Detection runs the paper's rules or, opt-in, the `wide` rules (`toolerr.wide`);
`toolerr.evaluate` measures either on a labelled corpus. It changes what the model reads,
never what tools do. See docs/TOOLERR.md.
"""

from __future__ import annotations

from exactserve.toolerr.body import Conversation, RequestError
from exactserve.toolerr.classify import classify
from exactserve.toolerr.detect import RULES, Failure, detect, detect_rule
from exactserve.toolerr.forms import CHECK_BEFORE_RETRY, FORMS, GUIDANCE, Options, rewrite
from exactserve.toolerr.messages import (
    KINDS,
    Message,
    ToolCall,
    ToolDef,
    text_of,
    to_template_messages,
)
from exactserve.toolerr.report import HEADER, header_value, log_line
from exactserve.toolerr.request import (
    APIS,
    TOOL_ERROR_RULES,
    TOOL_ERRORS,
    Outcome,
    detect_api,
    process,
    select_form,
    select_rules,
)

__all__ = [
    "APIS",
    "CHECK_BEFORE_RETRY",
    "FORMS",
    "GUIDANCE",
    "HEADER",
    "KINDS",
    "RULES",
    "TOOL_ERRORS",
    "TOOL_ERROR_RULES",
    "Conversation",
    "Failure",
    "Message",
    "Options",
    "Outcome",
    "RequestError",
    "ToolCall",
    "ToolDef",
    "classify",
    "detect",
    "detect_api",
    "detect_rule",
    "header_value",
    "log_line",
    "process",
    "rewrite",
    "select_form",
    "select_rules",
    "text_of",
    "to_template_messages",
]
