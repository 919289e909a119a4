"""The one chat-rendering path: a request body of any chat API -> the token ids the model
reads. Generation, token counting (`/v1/messages/count_tokens`), `/tokenize` with messages
and `/apply-template` all call `render_chat`, so a client counting tokens sees exactly what
the model reads.

    body --toolerr.request.process--> internal messages (rewritten when a form applies)
         --to_template_messages, text parts joined--> template messages
         --ToolFormat.prepare--> messages and tools as this template family expects
         --ChatEncoder.encode--> text and ids (message text is plain text, never control
                                 tokens), + the forced tool-call prefix when tool_choice
                                 requires a call

The body the client sent is never mutated: toolerr returns new messages and every step
here copies.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from exactserve.runtime.errors import ExactserveError, TemplateError
from exactserve.server.served import ServedModel
from exactserve.server.tools import ToolChoice, normalize_tool_choice, normalize_tools
from exactserve.toolerr.body import RequestError
from exactserve.toolerr.messages import to_template_messages
from exactserve.toolerr.request import Outcome, process

CHAT_ROLES = {
    "chat": {"system", "developer", "user", "assistant", "tool"},
    "messages": {"system", "user", "assistant", "tool"},
    "responses": {"system", "developer", "user", "assistant", "tool"},
}


@dataclass(frozen=True)
class RenderedChat:
    """A chat request ready to generate: `ids` (prompt, forced prefix included), `text` (the
    rendered prompt), the tool-error layer's `outcome` (for the X-Tool-Errors header), and
    what the tool-call parser needs: tool names, the choice and the forced `prefix`."""

    ids: list[int]
    text: str
    outcome: Outcome
    tool_names: frozenset[str]
    tool_choice: ToolChoice
    prefix: str


def render_chat(
    served: ServedModel,
    api: str,
    body: dict[str, Any],
    user_agent: str,
    *,
    continue_final: bool = False,
    add_generation_prompt: bool = True,
    template_kwargs: dict[str, Any] | None = None,
) -> RenderedChat:
    """Render a chat body of shape `api` ("chat", "messages" or "responses"). Raises
    RequestError (400) for anything the client can fix, the template's own message
    included."""
    outcome = process(body, api, user_agent, served.toolerr)
    if not outcome.messages:
        raise RequestError("the conversation is empty: send at least one message", "messages")
    messages = [
        _plain(entry, api, message.origin)
        for entry, message in zip(
            to_template_messages(outcome.messages), outcome.messages, strict=True
        )
    ]
    tools = normalize_tools(api, body.get("tools"))
    names = frozenset(tool["function"]["name"] for tool in tools)
    choice = normalize_tool_choice(api, body.get("tool_choice"), names)
    fmt = served.tool_format
    template_messages, template_tools = fmt.prepare(messages, tools, choice)
    if continue_final and template_messages[-1]["role"] != "assistant":
        continue_final = False
    try:
        encoding = served.encoder.encode(
            template_messages,
            tools=template_tools,
            add_generation_prompt=add_generation_prompt and not continue_final,
            continue_final_message=continue_final,
            **(template_kwargs or {}),
        )
    except TemplateError as exc:
        raise RequestError(str(exc)) from exc
    except ExactserveError as exc:
        raise RequestError(f"the conversation cannot be rendered: {exc}") from exc
    except (ValueError, TypeError) as exc:
        raise RequestError(f"the conversation cannot be rendered: {exc}") from exc
    prefix = "" if continue_final else fmt.forced_prefix(choice)
    ids = list(encoding.ids)
    if prefix:
        ids += served.tokenizer.encode(prefix, add_special=False, parse_special=True)
    return RenderedChat(ids, encoding.text + prefix, outcome, names, choice, prefix)


def _plain(message: dict[str, Any], api: str, origin: tuple | None) -> dict[str, Any]:
    """A template message with its text parts joined into one string (chat templates read
    `content` as a string), after checking its role; non-text parts are refused."""
    where = _where(origin)
    role = message.get("role")
    if role not in CHAT_ROLES[api]:
        allowed = ", ".join(sorted(CHAT_ROLES[api]))
        raise RequestError(f"{where}.role {role!r} is not one of {allowed}", f"{where}.role")
    if role == "developer":
        message = {**message, "role": "system"}
    content = message.get("content")
    if isinstance(content, list):
        texts = []
        for j, part in enumerate(content):
            if part.get("type") != "text":
                raise RequestError(
                    f"{where}.content[{j}] is a {part.get('type')!r} part; this server "
                    "serves text-only models, send text parts only",
                    f"{where}.content",
                )
            texts.append(part["text"])
        message = {**message, "content": "\n".join(texts)}
    return message


def _where(origin: tuple | None) -> str:
    """Where in the body an internal message came from (toolerr's origins), as a path."""
    if not origin:
        return "messages"
    kind = origin[0]
    if kind in ("system", "instructions", "input"):
        return kind
    if kind == "item":
        return f"input[{origin[1]}]"
    if kind == "items":
        return f"input[{origin[1][-1]}]" if origin[1] else "input"
    if kind == "block":
        return f"messages[{origin[1]}].content[{origin[2]}]"
    return f"messages[{origin[1]}]"
