"""Lexing for the tool-call parser: openers matched on partial text, and the end of a JSON
object found over text that arrives in pieces.

Both answer "not yet" (PARTIAL) while the text seen so far could still go either way, so
the parser holds back exactly what might become a call.
"""

from __future__ import annotations

PARTIAL = -1
FAIL = -2

# An opener: a sequence of steps, each a tuple of alternative literals ("" makes the step
# optional). White space may come between steps. The "{" literal starts the JSON object.
Opener = tuple[tuple[str, ...], ...]

_WHITESPACE = " \t\n\r"
# Characters JSON allows outside strings: structure, white space, numbers, true/false/null.
_JSON_OUTSIDE_STRINGS = frozenset('{}[],:"' + _WHITESPACE + "+-.0123456789eEtrufalsn")


def match_opener(text: str, opener: Opener) -> int:
    """Where the JSON object's "{" is when `text` starts with `opener`; PARTIAL when `text`
    is a proper prefix of some match (it might still become one); FAIL otherwise."""
    return _match(text, opener, 0, 0, FAIL)


def _match(text: str, opener: Opener, step: int, pos: int, brace: int) -> int:
    if step == len(opener):
        return brace
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
        if result >= 0:
            return result
        if result == PARTIAL:
            best = PARTIAL
    return best


def skip_whitespace(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _WHITESPACE:
        pos += 1
    return pos


class ObjectScanner:
    """Finds the end of the JSON object that starts at a "{", over text given in pieces.

    Tracks nesting depth (braces and brackets alike), strings and escapes; it does not
    validate (the parser decodes the finished object). Fails early at a character JSON
    never has outside a string, so a broken call does not hold back the text after it.
    Mutable: one scanner per object.
    """

    def __init__(self) -> None:
        self._depth = 0
        self._is_in_string = False
        self._is_escaped = False

    def scan(self, text: str, start: int) -> tuple[int, int]:
        """Continue over `text[start:]` (`text` grows between calls; `start` is where the
        previous call stopped). Returns (index just after the closing brace, 0), or
        (PARTIAL, len(text)) to wait for more, or (FAIL, index of the bad character)."""
        for index in range(start, len(text)):
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
                    return index + 1, 0
            elif char not in _JSON_OUTSIDE_STRINGS:
                return FAIL, index
        return PARTIAL, len(text)


def match_literal(text: str, pos: int, literal: str) -> int:
    """The index just after `literal` when it follows `pos` (after white space); PARTIAL
    when the text ends before it could; FAIL otherwise."""
    start = skip_whitespace(text, pos)
    if text.startswith(literal, start):
        return start + len(literal)
    return PARTIAL if literal.startswith(text[start:]) else FAIL
