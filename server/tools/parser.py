"""Tool calls read out of a model's output text as it streams.

Where a call may start (a candidate):
- hermes: at any `<tool_call>`; the block is the tag, a JSON object, `</tool_call>`.
- llama3: a JSON object at the start of the output or of a line, or right after
  `<|python_tag|>` anywhere; after a call, also after a ";". Its first key must be "name"
  or "type".
- generic: a JSON object at the start of the output or of a line, whose only key is
  "tool_call" or "tool_calls".
The object's end is found by nesting (strings and escapes respected, so braces and
`</tool_call>` inside strings are content), then it is decoded and read as calls
(`calls.call_from_object`: a known tool name and an arguments object).

Text is emitted as soon as it cannot be part of a candidate; only a possible candidate is
held back, plus trailing white space (it is dropped when a call follows). White space
between text and a call, and between calls, is dropped; other text is kept verbatim.

Fallback: a candidate that turns out not to be a call (an opener that does not match, a
character JSON never has outside a string, JSON that does not decode, an unknown tool
name, extra keys, a missing `</tool_call>`, or an unterminated candidate at `finish`) is
emitted as text, verbatim, up to where it failed; scanning resumes there. Never raises on
model output. Feeding text in any chunking gives the same text and calls.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from exactserve.server.tools.calls import (
    CallEvent,
    Event,
    ParsedCall,
    TextEvent,
    call_from_object,
    decode_json,
)
from exactserve.server.tools.format import ToolFormat
from exactserve.server.tools.scan import ObjectScanner, Opener, Status, match_literal, match_opener

HERMES_OPEN = "<tool_call>"
HERMES_CLOSE = "</tool_call>"
PYTHON_TAG = "<|python_tag|>"
_START_CHARS = {"hermes": "<", "llama3": "<{;", "generic": "{"}
_HERMES_OPENER: Opener = ((HERMES_OPEN,), ("{",))
_GENERIC_OPENER: Opener = (("{",), ('"tool_call"', '"tool_calls"'), (":",))
_LLAMA3_BODY: Opener = (("{",), ('"name"', '"type"'), (":",))


@dataclass
class _Candidate:
    """A possible call at the start of the parser's buffer (indexes into the buffer)."""

    opener: Opener
    scanner: ObjectScanner | None = None  # set once the opener matched, at the "{"
    brace: int = 0  # where the JSON object starts (valid once `scanner` is set)
    end: int | None = None  # just after the object, once it closed


class ToolCallParser:
    """Streaming parser of one response. Mutable; not thread-safe.

    `tool_names`: the request's tools (a call to any other name stays text). `prefix`: the
    forced prefix appended to the prompt (`ToolFormat.forced_prefix`), read as output the
    model already wrote; it is never emitted as text.
    """

    def __init__(self, fmt: ToolFormat, tool_names: Collection[str], prefix: str = "") -> None:
        self._family = fmt.family
        self._names = frozenset(tool_names)
        self._hidden_end = len(prefix)  # stream offsets below this are never text
        self._buffer = ""  # undecided input; a candidate, when there is one, starts at [0]
        self._offset = 0  # stream offset of _buffer[0]
        self._pending_space = ""  # white space after the last text, held back
        self._is_fresh = True  # no text yet since the start or the last call
        self._num_calls = 0
        self._candidate: _Candidate | None = None
        self._events: list[Event] = []
        self._is_finished = False
        self._push(prefix, final=False)

    def feed(self, text: str) -> list[Event]:
        """Events that `text`, the next piece of output, completes (possibly none)."""
        if self._is_finished:
            raise RuntimeError("ToolCallParser.feed after finish")
        self._push(text, final=False)
        return self._take_events()

    def finish(self) -> list[Event]:
        """The remaining events at the end of the output: an unfinished candidate and held
        white space come out as text."""
        if self._is_finished:
            raise RuntimeError("ToolCallParser.finish called twice")
        self._is_finished = True
        self._push("", final=True)
        if self._pending_space:
            self._events.append(TextEvent(self._pending_space))
            self._pending_space = ""
        return self._take_events()

    def _push(self, text: str, final: bool) -> None:
        self._buffer += text
        while self._buffer:
            if self._candidate is None:
                progressed = self._scan_text()
            else:
                progressed = self._advance_candidate(final)
            if not progressed:
                break

    def _scan_text(self) -> bool:
        """Emit text up to the next candidate; True when one starts at the buffer's head."""
        buffer, start = self._buffer, 0
        for index, char in enumerate(buffer):
            if char not in _START_CHARS[self._family]:
                continue
            self._emit(buffer[start:index], self._offset + start)
            start = index
            opener = self._opener()
            if opener is not None:
                self._consume(index)
                self._candidate = _Candidate(opener)
                return True
        self._emit(buffer[start:], self._offset + start)
        self._consume(len(buffer))
        return False

    def _opener(self) -> Opener | None:
        """What a candidate must start with here, or None when none can start here."""
        if self._family == "hermes":
            return _HERMES_OPENER
        at_line_start = self._is_fresh or "\n" in self._pending_space
        if self._family == "generic":
            return _GENERIC_OPENER if at_line_start else None
        leads = (PYTHON_TAG,)
        if at_line_start:
            leads += ("",)
        if self._is_fresh and self._num_calls:
            leads += (";",)
        return (leads, *_LLAMA3_BODY)

    def _advance_candidate(self, final: bool) -> bool:
        """Move the candidate on; False when it needs more text."""
        candidate, buffer = self._candidate, self._buffer
        assert candidate is not None
        if candidate.scanner is None:
            opened = match_opener(buffer, candidate.opener)
            if opened.status is Status.FAIL:
                return self._reject(1)
            if opened.status is Status.PARTIAL:
                return self._reject(len(buffer)) if final else False
            candidate.brace = opened.index
            candidate.scanner = ObjectScanner(opened.index)
        if candidate.end is None:
            closed = candidate.scanner.scan(buffer)
            if closed.status is Status.FAIL:
                return self._reject(closed.index)
            if closed.status is Status.PARTIAL:
                return self._reject(len(buffer)) if final else False
            candidate.end = closed.index
        stop = candidate.end
        if self._family == "hermes":
            tag = match_literal(buffer, candidate.end, HERMES_CLOSE)
            if tag.status is Status.FAIL:
                return self._reject(candidate.end)
            if tag.status is Status.PARTIAL:
                return self._reject(len(buffer)) if final else False
            stop = tag.index
        calls = self._read_calls(buffer[candidate.brace : candidate.end])
        if calls is None:
            return self._reject(stop)
        self._pending_space = ""  # white space before a call is dropped
        self._events.extend(CallEvent(call) for call in calls)
        self._num_calls += len(calls)
        self._is_fresh = True
        self._candidate = None
        self._consume(stop)
        return True

    def _read_calls(self, text: str) -> list[ParsedCall] | None:
        obj = decode_json(text)
        if self._family != "generic":
            call = call_from_object(obj, self._names, allow_type=self._family == "llama3")
            return None if call is None else [call]
        if not isinstance(obj, dict) or len(obj) != 1:
            return None
        if "tool_call" in obj:
            items = [obj["tool_call"]]
        elif isinstance(obj.get("tool_calls"), list) and obj["tool_calls"]:
            items = obj["tool_calls"]
        else:
            return None
        calls = []
        for item in items:
            call = call_from_object(item, self._names)
            if call is None:
                return None  # one bad call makes the whole object text
            calls.append(call)
        return calls

    def _reject(self, length: int) -> bool:
        """The candidate is not a call: its first `length` characters are text."""
        self._candidate = None
        self._emit(self._buffer[:length], self._offset)
        self._consume(length)
        return True

    def _emit(self, text: str, offset: int) -> None:
        """Output `text`, which starts at stream `offset`, as text (minus any hidden prefix)."""
        if offset < self._hidden_end:
            text = text[self._hidden_end - offset :]
        if self._is_fresh and self._num_calls:
            text = text.lstrip()  # white space after a call is dropped
        body = text.rstrip()
        if body:
            self._events.append(TextEvent(self._pending_space + body))
            self._pending_space = text[len(body) :]
            self._is_fresh = False
        else:
            self._pending_space += text

    def _consume(self, length: int) -> None:
        self._buffer = self._buffer[length:]
        self._offset += length

    def _take_events(self) -> list[Event]:
        events: list[Event] = []
        for event in self._events:
            if isinstance(event, TextEvent) and events and isinstance(events[-1], TextEvent):
                events[-1] = TextEvent(events[-1].text + event.text)
            else:
                events.append(event)
        self._events = []
        return events


def parse_tool_calls(
    fmt: ToolFormat, text: str, tool_names: Collection[str], prefix: str = ""
) -> tuple[str, list[ParsedCall]]:
    """(content text, calls) of a whole output `text` (what the model wrote after
    `prefix`); the same as feeding `text` to a `ToolCallParser` in one piece."""
    parser = ToolCallParser(fmt, tool_names, prefix)
    events = parser.feed(text) + parser.finish()
    content = "".join(event.text for event in events if isinstance(event, TextEvent))
    calls = [event.call for event in events if isinstance(event, CallEvent)]
    return content, calls
