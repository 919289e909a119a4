"""Tool calling for the chat path: pure functions, no HTTP and no model.

One request goes through it like this:

    tools = normalize_tools(api, body.get("tools"))            # OpenAI Chat shape
    choice = normalize_tool_choice(api, body.get("tool_choice"), tool_names(tools))
    fmt = ToolFormat.for_template(template)                    # once per model
    messages, shown = fmt.prepare(to_template_messages(conversation), tools, choice)
    prompt = template.render(messages, tools=shown, add_generation_prompt=True)
    prefix = fmt.forced_prefix(choice)                         # "" unless a call is forced
    parser = ToolCallParser(fmt, tool_names(tools), prefix)
    for piece in generate(prompt + prefix):                    # streamed output text
        events = parser.feed(piece)                            # TextEvent | CallEvent
    events = parser.finish()

A `CallEvent` carries a `ParsedCall(name, arguments)`, `arguments` being compact JSON
object text; the server numbers calls in order and ids them with `call_id(request_id,
index)`. Model output never raises: what is not a call is text (see `parser.py`).
Request errors raise `toolerr.RequestError(message, param)`, which the server answers
with a 400.

Modules: `definitions` (tools of the three APIs), `choice` (tool_choice), `format`
(families, detection, prepare, forced prefixes), `generic` (the generic format's text),
`calls` (calls, events, ids), `scan` (lexing), `parser` (the streaming parser).
"""

from __future__ import annotations

from exactserve.server.tools.calls import (
    CallEvent,
    Event,
    ParsedCall,
    TextEvent,
    call_id,
)
from exactserve.server.tools.choice import ToolChoice, normalize_tool_choice
from exactserve.server.tools.definitions import normalize_tools, tool_names
from exactserve.server.tools.format import FAMILIES, ToolFormat, detect_family
from exactserve.server.tools.generic import GENERIC_INSTRUCTION, generic_instruction
from exactserve.server.tools.parser import ToolCallParser, parse_tool_calls

__all__ = [
    "FAMILIES",
    "GENERIC_INSTRUCTION",
    "CallEvent",
    "Event",
    "ParsedCall",
    "TextEvent",
    "ToolCallParser",
    "ToolChoice",
    "ToolFormat",
    "call_id",
    "detect_family",
    "generic_instruction",
    "normalize_tool_choice",
    "normalize_tools",
    "parse_tool_calls",
    "tool_names",
]
