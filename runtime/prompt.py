"""Prompt encoding: render a chat, then tokenize it so message text never becomes control tokens.

The model reads `ChatTemplate.render(...)` exactly. Tokenizing that text with special
tokens recognised everywhere would let a message (a user turn, a tool result, tool-call
arguments) that contains "<|im_end|>" close its turn and forge a new one. So the encoder
learns which characters of the rendered text came from messages, and recognises control
tokens (the tokens `parse_special` switches on: CONTROL and UNKNOWN, llama.cpp's rule;
user-defined tokens such as Gemma's "\\n\\n" are plain text in both modes) only outside
them. How it learns that, most precise first (see `locate_message_text`):

1. spans: the template is rendered again with every message-derived string (content and
   text parts, reasoning, message and tool-call names, tool-call arguments, tool and
   parameter descriptions, document fields) wrapped as `lead-ws OPEN_i core CLOSE_i
   trail-ws` in Unicode private-use characters (the markers sit inside the string's
   outer whitespace, so `trim`/`strip` still work). It is accepted when, with markers
   removed, it equals the plain render byte for byte, the markers pair up, and each span
   holds its string verbatim (or JSON-escaped, as `tojson` writes it).
2. tokens: otherwise (templates that split, slice or compare message text), only each
   control-token occurrence inside any input string is wrapped (transformers'
   `sanitize_control_tokens` idea), which changes nothing for text without one; again
   accepted only if the render is otherwise identical.
3. none: otherwise, if no input string or dict key contains a control token, nothing
   needs protecting; if one does, `PromptError` is raised rather than risk it.

Dict keys are never wrapped (templates look fields up by key); a control token in a key
is refused (`PromptError`).

Tokenization then reproduces llama.cpp's (`llama_tokenize(..., parse_special=true)`):
control tokens found outside the protected ranges become their ids and the text between
them is encoded with `parse_special=False`: the fragments llama.cpp itself forms, so
message text is never split from the template text around it (no "caveat" of llama.cpp's
own input marking, common/jinja/README.md) and for ordinary messages the ids equal
`tokenizer.encode(text, add_special=True, parse_special=True)`. Two differences from
llama.cpp's partition, neither reachable with this engine's vocabularies: control tokens
are matched leftmost-longest rather than one token text at a time (they differ only for
overlapping token texts), and LSTRIP/RSTRIP attributes (phi-3, jina, modern-bert) are not
applied at the cuts.

BOS follows llama.cpp's common/chat.cpp: when the vocabulary adds BOS and the render
already starts with the BOS text, that text is dropped and the tokenizer's BOS used, so
BOS is never doubled (likewise a trailing EOS when the vocabulary adds EOS).
`PromptEncoding.text` is the text the ids spell: BOS text included once when added.

With `continue_final_message` (assistant prefill) every render, marked ones included, is
cut where the final message's text ends (`ChatTemplate.render`), and the checks above
hold for the cut text, so the open message is still plain text. No EOS is appended
then, even by a vocabulary that adds EOS: the model continues from the message's last
character.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from exactserve.runtime.chat_template import ChatTemplate, to_template_data
from exactserve.runtime.errors import PromptError

# Markers come from Supplementary Private Use Area-B; inputs containing any character of
# the area skip straight to rule 3.
_PUA_START, _PUA_END = 0x100000, 0x10FFFF
_MAX_SPANS = 0x4000
_OPEN_BASE = _PUA_START  # OPEN_i = chr(_OPEN_BASE + i)
_CLOSE_BASE = _PUA_START + _MAX_SPANS  # CLOSE_i = chr(_CLOSE_BASE + i)
_TOK_OPEN = chr(_PUA_START + 2 * _MAX_SPANS)
_TOK_CLOSE = chr(_PUA_START + 2 * _MAX_SPANS + 1)

_MARKER_AREA = re.compile(f"[{chr(_PUA_START)}-{chr(_PUA_END)}]")

# Message fields whose string values are wrapped as spans (rule 1).
_SPAN_MESSAGE_FIELDS = ("content", "reasoning_content", "thinking", "reasoning", "name")
_MARKUP_KWARGS = ("bos_token", "eos_token")


class ChatTokenizer(Protocol):
    """What `encode_chat` needs from `runtime.tokenizer.Tokenizer`."""

    bos_id: int | None
    eos_id: int | None
    add_bos: bool  # encode(..., add_special=True) puts BOS first
    add_eos: bool  # ... and EOS last

    def encode(
        self, text: str, *, add_special: bool = True, parse_special: bool = False
    ) -> list[int]: ...

    def token_to_piece(self, token_id: int) -> bytes: ...

    def control_token_texts(self) -> Sequence[str]: ...


@dataclass(frozen=True)
class PromptEncoding:
    """A rendered chat and its token ids.

    `text` is what the model reads (BOS text included once if the tokenizer adds BOS);
    `ids` its tokens; `protected` the [start, end) character ranges of `text` tokenized
    as plain text because they came from messages; `isolation` which rule found them
    ("spans", "tokens" or "none").
    """

    text: str
    ids: list[int]
    protected: tuple[tuple[int, int], ...] = ()
    isolation: str = "spans"


@dataclass(frozen=True)
class MessageLayout:
    """The plain render and which of its character ranges came from messages."""

    text: str
    protected: tuple[tuple[int, int], ...]
    isolation: str


class ControlTokenMatcher:
    """Finds control-token texts in a string, leftmost first, longest at each position."""

    def __init__(self, texts: Iterable[str]) -> None:
        self.texts = frozenset(t for t in texts if t)
        self._lengths = sorted({len(t) for t in self.texts}, reverse=True)
        first_chars = "".join(re.escape(ch) for ch in sorted({t[0] for t in self.texts}))
        self._candidates = re.compile(f"[{first_chars}]" if first_chars else "(?!)")

    def find(self, text: str, start: int = 0, end: int | None = None) -> list[tuple[int, int]]:
        """[start, end) ranges of control tokens in text[start:end], non-overlapping."""
        end = len(text) if end is None else end
        found: list[tuple[int, int]] = []
        pos = start
        while (candidate := self._candidates.search(text, pos, end)) is not None:
            pos = candidate.start()
            length = next(
                (n for n in self._lengths if pos + n <= end and text[pos : pos + n] in self.texts),
                0,
            )
            if length:
                found.append((pos, pos + length))
            pos += max(length, 1)
        return found

    def contains_any(self, text: str) -> bool:
        return bool(self.find(text))


def encode_chat(
    template: ChatTemplate,
    tokenizer: ChatTokenizer,
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool | None = None,
    continue_final_message: bool | str = False,
    **kwargs: Any,
) -> PromptEncoding:
    """One-off `ChatEncoder(template, tokenizer).encode(...)`; see there."""
    return ChatEncoder(template, tokenizer).encode(
        messages,
        tools=tools,
        add_generation_prompt=add_generation_prompt,
        continue_final_message=continue_final_message,
        **kwargs,
    )


class ChatEncoder:
    """Renders and tokenizes chats for one template and tokenizer. Build it once per model
    (collecting a large vocabulary's control tokens takes tens of milliseconds); it holds
    no per-request state and never mutates the template or tokenizer."""

    def __init__(self, template: ChatTemplate, tokenizer: ChatTokenizer) -> None:
        self.template = template
        self.tokenizer = tokenizer
        self.matcher = ControlTokenMatcher(tokenizer.control_token_texts())

    def encode(
        self,
        messages: Sequence[Mapping[str, Any]],
        *,
        tools: Sequence[Mapping[str, Any]] | None = None,
        add_generation_prompt: bool | None = None,
        continue_final_message: bool | str = False,
        **kwargs: Any,
    ) -> PromptEncoding:
        """Render `messages` and tokenize the text; message text stays plain text.

        `add_generation_prompt` defaults to True, or to False when
        `continue_final_message` is set (True, or the field to continue, e.g.
        "reasoning_content"): then the ids end with the final message's own text.
        Extra keywords go to the template (`documents`, `enable_thinking`, ...). Raises
        ValueError and `TemplateError` as `ChatTemplate.render` does, `PromptError` if
        message text containing a control token cannot be located in the render.
        """
        template, tokenizer = self.template, self.tokenizer
        if add_generation_prompt is None:
            add_generation_prompt = not continue_final_message
        layout = locate_message_text(
            template,
            self.matcher,
            messages,
            tools=tools,
            add_generation_prompt=add_generation_prompt,
            continue_final_message=continue_final_message,
            **kwargs,
        )
        text, protected = layout.text, list(layout.protected)
        add_bos = tokenizer.add_bos and tokenizer.bos_id is not None
        add_eos = tokenizer.add_eos and tokenizer.eos_id is not None and not continue_final_message
        prefix_ids = [tokenizer.bos_id] if add_bos else []
        suffix_ids = [tokenizer.eos_id] if add_eos else []
        bos_text, eos_text = template.bos_token, template.eos_token
        if add_bos and bos_text and text.startswith(bos_text):
            if not any(start < len(bos_text) for start, _ in protected):
                text = text[len(bos_text) :]
                protected = [(s - len(bos_text), e - len(bos_text)) for s, e in protected]
        if add_eos and eos_text and text.endswith(eos_text):
            if not any(end > len(text) - len(eos_text) for _, end in protected):
                text = text[: -len(eos_text)]
        ids = prefix_ids + _tokenize(text, protected, self.matcher, tokenizer) + suffix_ids
        lead = (bos_text or _piece(tokenizer, prefix_ids)) if add_bos else ""
        trail = (eos_text or _piece(tokenizer, suffix_ids)) if add_eos else ""
        shifted = tuple((s + len(lead), e + len(lead)) for s, e in protected)
        return PromptEncoding(lead + text + trail, ids, shifted, layout.isolation)


def _tokenize(
    text: str,
    protected: Sequence[tuple[int, int]],
    matcher: ControlTokenMatcher,
    tokenizer: ChatTokenizer,
) -> list[int]:
    # Control tokens in the unprotected gaps split the text into llama.cpp's fragments.
    cuts: list[tuple[int, int]] = []
    pos = 0
    for start, end in [*sorted(protected), (len(text), len(text))]:
        cuts += matcher.find(text, pos, start)
        pos = max(pos, end)
    ids: list[int] = []
    control_ids: dict[str, int] = {}
    pos = 0
    for start, end in cuts:
        if start > pos:
            ids += tokenizer.encode(text[pos:start], add_special=False, parse_special=False)
        token_text = text[start:end]
        if token_text not in control_ids:
            control_ids[token_text] = _control_id(tokenizer, token_text)
        ids.append(control_ids[token_text])
        pos = end
    if pos < len(text):
        ids += tokenizer.encode(text[pos:], add_special=False, parse_special=False)
    return ids


def _piece(tokenizer: ChatTokenizer, ids: Sequence[int]) -> str:
    return b"".join(tokenizer.token_to_piece(i) for i in ids).decode("utf-8", "replace")


def _control_id(tokenizer: ChatTokenizer, token_text: str) -> int:
    ids = tokenizer.encode(token_text, add_special=False, parse_special=True)
    if len(ids) != 1:
        raise PromptError(f"control token {token_text!r} does not encode to one id: {ids}")
    return ids[0]


def locate_message_text(
    template: ChatTemplate,
    matcher: ControlTokenMatcher,
    messages: Sequence[Mapping[str, Any]],
    *,
    tools: Sequence[Mapping[str, Any]] | None = None,
    add_generation_prompt: bool = False,
    continue_final_message: bool | str = False,
    **kwargs: Any,
) -> MessageLayout:
    """Render the chat and find the ranges that came from messages (rules 1-3 above)."""

    def render(msgs: Any, tls: Any, kw: dict[str, Any]) -> str:
        return template.render(
            msgs,
            tools=tls,
            add_generation_prompt=add_generation_prompt,
            continue_final_message=continue_final_message,
            **kw,
        )

    messages = to_template_data(list(messages))
    tools = None if tools is None else to_template_data(list(tools))
    plain = render(messages, tools, kwargs)
    # bos_token/eos_token given as keywords are template markup, not message text.
    data_kwargs = {k: v for k, v in kwargs.items() if k not in _MARKUP_KWARGS}
    inputs = (list(messages), list(tools or []), data_kwargs)
    if _any_key_contains(inputs, matcher):
        raise PromptError(
            "a dict key in the messages, tools or documents contains a control token of "
            "this model; rename it"
        )
    if not _uses_marker_area(plain) and not _uses_marker_area(template.source):
        for with_spans in (True, False):
            marker = _Marker(matcher, with_spans)
            msgs = [marker.message(m) for m in messages]
            tls = None if tools is None else [marker.tool(t) for t in tools]
            kw = {k: v if k in _MARKUP_KWARGS else marker.kwarg(k, v) for k, v in kwargs.items()}
            if marker.overflowed:
                continue
            try:
                marked = render(msgs, tls, kw)
            except Exception:  # the marked render may fail where the plain one did not
                continue
            layout = _parse_marked(marked, marker.originals, plain)
            if layout is not None:
                return layout
    if any(matcher.contains_any(s) for s in _strings(inputs)):
        raise PromptError(
            f"message text contains a control token of this model and chat template "
            f"{template.name!r} transforms message text too much to keep it plain; remove "
            f"the control token from the message"
        )
    return MessageLayout(plain, (), "none")


class _Marker:
    """Wraps input strings in markers; records each span's original core string."""

    def __init__(self, matcher: ControlTokenMatcher, with_spans: bool) -> None:
        self.matcher, self.with_spans = matcher, with_spans
        self.originals: list[str] = []
        self.overflowed = False

    def mark_tokens(self, s: str) -> str:
        out, pos = [], 0
        for start, end in self.matcher.find(s):
            out += [s[pos:start], _TOK_OPEN, s[start:end], _TOK_CLOSE]
            pos = end
        return "".join(out) + s[pos:]

    def span(self, s: str) -> str:
        core = s.strip()
        if not self.with_spans or not core:
            return self.mark_tokens(s)
        if len(self.originals) == _MAX_SPANS:
            self.overflowed = True
            return s
        i = len(self.originals)
        self.originals.append(core)
        lead, trail = s[: len(s) - len(s.lstrip())], s[len(s.rstrip()) :]
        opening, closing = chr(_OPEN_BASE + i), chr(_CLOSE_BASE + i)
        return lead + opening + self.mark_tokens(core) + closing + trail

    def data(self, value: Any, as_span: bool = False) -> Any:
        """Marks every string in `value`: as spans if `as_span`, else control tokens only."""
        if isinstance(value, str):
            return self.span(value) if as_span else self.mark_tokens(value)
        if isinstance(value, Mapping):
            return {k: self.data(v, as_span) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.data(v, as_span) for v in value)
        return value

    def message(self, message: Mapping[str, Any]) -> dict[str, Any]:
        marked = {}
        for key, value in message.items():
            if key in _SPAN_MESSAGE_FIELDS and isinstance(value, str):
                marked[key] = self.span(value)
            elif key == "content" and isinstance(value, list):
                marked[key] = [self._part(part) for part in value]
            elif key == "tool_calls" and isinstance(value, list):
                marked[key] = [self._call(call) for call in value]
            else:
                marked[key] = self.data(value)
        return marked

    def _part(self, part: Any) -> Any:
        if isinstance(part, Mapping) and isinstance(part.get("text"), str):
            return {k: self.span(v) if k == "text" else self.data(v) for k, v in part.items()}
        return self.data(part)

    def _call(self, call: Any) -> Any:
        if not isinstance(call, Mapping):
            return self.data(call)
        marked = {}
        for key, value in call.items():
            if key == "function" and isinstance(value, Mapping):
                marked[key] = self._call(value)
            elif key in ("name", "arguments"):
                marked[key] = self.data(value, as_span=True)
            else:
                marked[key] = self.data(value)
        return marked

    def tool(self, tool: Mapping[str, Any]) -> Any:
        return self._descriptions(tool)

    def _descriptions(self, value: Any) -> Any:
        if isinstance(value, Mapping):
            return {
                k: self.span(v)
                if k == "description" and isinstance(v, str)
                else self._descriptions(v)
                for k, v in value.items()
            }
        if isinstance(value, (list, tuple)):
            return type(value)(self._descriptions(v) for v in value)
        return self.data(value)

    def kwarg(self, key: str, value: Any) -> Any:
        return self.data(value, as_span=key == "documents")


def _parse_marked(marked: str, originals: Sequence[str], plain: str) -> MessageLayout | None:
    """The layout of a marked render, or None if its markers do not check out."""
    pieces: list[str] = []
    protected: list[tuple[int, int]] = []
    size = 0  # length of the unmarked text so far
    span_id, span_start, span_piece = -1, 0, 0
    tok_start = -1
    pos = 0
    for found in _MARKER_AREA.finditer(marked):
        pieces.append(marked[pos : found.start()])
        size += found.start() - pos
        pos = found.end()
        code = ord(found.group())
        if code == ord(_TOK_OPEN) and tok_start < 0:
            tok_start = size
        elif code == ord(_TOK_CLOSE) and tok_start >= 0:
            if span_id < 0:
                protected.append((tok_start, size))
            tok_start = -1
        elif tok_start >= 0:
            return None
        elif _OPEN_BASE <= code < _OPEN_BASE + len(originals) and span_id < 0:
            span_id, span_start, span_piece = code - _OPEN_BASE, size, len(pieces)
        elif code == _CLOSE_BASE + span_id and span_id >= 0:
            held = "".join(pieces[span_piece:])
            core = originals[span_id]
            if held != core and held != json.dumps(core, ensure_ascii=False)[1:-1]:
                return None
            protected.append((span_start, size))
            span_id = -1
        else:
            return None
    if span_id >= 0 or tok_start >= 0:
        return None
    pieces.append(marked[pos:])
    text = "".join(pieces)
    if text != plain:
        return None
    isolation = "spans" if originals else "tokens"
    return MessageLayout(text, tuple(sorted(protected)), isolation)


def _strings(value: Any) -> Iterable[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _strings(v)


def _any_key_contains(value: Any, matcher: ControlTokenMatcher) -> bool:
    if isinstance(value, Mapping):
        return any(
            (isinstance(k, str) and matcher.contains_any(k)) or _any_key_contains(v, matcher)
            for k, v in value.items()
        )
    if isinstance(value, (list, tuple)):
        return any(_any_key_contains(v, matcher) for v in value)
    return False


def _uses_marker_area(text: str) -> bool:
    return _MARKER_AREA.search(text) is not None
