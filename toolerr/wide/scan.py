"""Patterns searched by a leading literal: a speed device, not a rule.

Python's regex engine skips ahead quickly only when a pattern opens with a literal
character (a tight loop over the text); a pattern that opens with a class such as `[45]`,
or with `^` under re.MULTILINE, is tried at every character, some five times slower. So:

- `LineStart` tries a `^`-led pattern at the start of the text and then searches it behind
  a literal newline (`\\n(?:pattern)`): the same matches as the MULTILINE search, found by
  the newline;
- a pattern that opens with a class of single characters is written as one pattern per
  character (words.HTTP_STATUS: one for `4..`, one for `5..`).

The answers are those of the plain patterns (tests/toolerr/test_toolerr_wide_speed.py
checks them on every corpus text and its pieces).
"""

from __future__ import annotations

import re


class LineStart:
    """A pattern matched at the start of any line, as `^pattern` under re.MULTILINE.

    The pattern must not match a newline at its start, nor an empty string: then the
    match at a line start is the match after the newline that ends the line before.
    """

    __slots__ = ("plain", "_first", "_rest")

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.plain = re.compile(f"^(?:{pattern})", flags | re.MULTILINE)  # the reference
        self._first = re.compile(pattern, flags | re.MULTILINE)
        self._rest = re.compile(f"\n(?:{pattern})", flags | re.MULTILINE)

    def search(self, text: str) -> tuple[str, int] | None:
        """(the matched text, its end) of the first match at a line start, or None."""
        found = self._first.match(text)
        if found is not None:
            return found.group(0), found.end()
        found = self._rest.search(text)
        return (found.group(0)[1:], found.end()) if found is not None else None

    def findall(self, text: str) -> list:
        """`re.findall` of the pattern at line starts: non-overlapping, in order."""
        found = self._first.match(text)
        rest = self._rest.findall(text, found.end() if found is not None else 0)
        if self._first.groups == 0:  # whole matches: without the newline before each
            rest = [match[1:] for match in rest]
        if found is None:
            return rest
        if self._first.groups == 0:
            head = found.group(0)
        elif self._first.groups == 1:
            head = found.group(1) or ""
        else:
            head = found.groups("")
        return [head, *rest]
