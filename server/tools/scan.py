"""Lexing for the tool-call parser: openers and closers matched on partial text, and the end
of a JSON object found over text that arrives in pieces.

Each answers with a `Scan`: MATCH, FAIL, or PARTIAL ("not yet": the text seen so far could
still go either way), so the parser holds back exactly what might become a call.
"""

from __future__ import annotations

from enum import Enum
from typing import NamedTuple


class Status(Enum):
    MATCH = "match"
    PARTIAL = "partial"
    FAIL = "fail"


class Scan(NamedTuple):
    """A lexing result. `index`: for MATCH, the position the function documents; for FAIL
    of an object, the offending character; otherwise 0."""

    status: Status
    index: int = 0


PARTIAL = Scan(Status.PARTIAL)
FAIL = Scan(Status.FAIL)

# An opener: a sequence of steps, each a tuple of alternative literals ("" makes the step
# optional). White space may come between steps. The "{" literal starts the JSON object.
Opener = tuple[tuple[str, ...], ...]

_WHITESPACE = " \t\n\r"
# Characters JSON allows outside strings: structure, white space, numbers, true/false/null.
_JSON_OUTSIDE_STRINGS = frozenset('{}[],:"' + _WHITESPACE + "+-.0123456789eEtrufalsn")


def match_opener(text: str, opener: Opener) -> Scan:
    """MATCH with the index of the JSON object's "{" when `text` starts with `opener`;
    PARTIAL when `text` is a proper prefix of a match; FAIL otherwise."""
    return _match(text, opener, 0, 0, None)


def _match(text: str, opener: Opener, step: int, pos: int, brace: int | None) -> Scan:
    if step == len(opener):
        assert brace is not None, "an opener must contain the '{' step"
        return Scan(Status.MATCH, brace)
    best = FAIL
    for literal in opener[step]:
        if not literal:
            result = _match(text, opener, step + 1, pos, brace)
        else:
            start = skip_whitespace(text, pos) if step else pos
            if text.startswith(literal, start):
                found = start if literal == "{" else brace
                result = _match(text, opener, step + 1, start + len(literal), found)
            elif literal.startswith(text[start:]):  # the text ends inside the literal
                result = PARTIAL
            else:
                result = FAIL
        if result.status is Status.MATCH:
            return result
        if result.status is Status.PARTIAL:
            best = PARTIAL
    return best


def match_literal(text: str, pos: int, literal: str) -> Scan:
    """MATCH with the index just after `literal` when it follows `pos` (after white space);
    PARTIAL when the text ends before it could; FAIL otherwise."""
    start = skip_whitespace(text, pos)
    if text.startswith(literal, start):
        return Scan(Status.MATCH, start + len(literal))
    return PARTIAL if literal.startswith(text[start:]) else FAIL


def skip_whitespace(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WHITESPACE:
        pos += 1
    return pos


class ObjectScanner:
    """Finds the end of the JSON object that starts at a "{", over text given in pieces.

    Tracks nesting depth (braces and brackets alike), strings and escapes; it does not
    validate (the parser decodes the finished object). Fails early at a character JSON
    never has outside a string, so a broken call does not hold back the text after it.
    Mutable: one scanner per object; `position` is where the next `scan` resumes.
    """

    def __init__(self, start: int) -> None:
        self.position = start
        self._depth = 0
        self._is_in_string = False
        self._is_escaped = False

    def scan(self, text: str) -> Scan:
        """Continue over `text[position:]` (`text` grows between calls). MATCH with the
        index just after the closing brace; PARTIAL to wait for more; FAIL with the index
        of a character JSON does not allow there."""
        for index in range(self.position, len(text)):
            char = text[index]
            if self._is_in_string:
                if self._is_escaped:
                    self._is_escaped = False
                elif char == "\\":
                    self._is_escaped = True
                elif char == '"':
                    self._is_in_string = False
            elif char == '"':
                self._is_in_string = True
            elif char in "{[":
                self._depth += 1
            elif char in "}]":
                self._depth -= 1
                if self._depth == 0:
                    self.position = index + 1
                    return Scan(Status.MATCH, index + 1)
            elif char not in _JSON_OUTSIDE_STRINGS:
                self.position = index
                return Scan(Status.FAIL, index)
        self.position = len(text)
        return PARTIAL
