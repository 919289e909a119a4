"""A line pattern matched through the alternatives its first character allows: a speed
device, not a rule.

The report-line pattern (lexicons.REPORT_LINE) is an alternation of some two hundred
shapes, and `match` tries each in turn at the line's start: about a microsecond a line,
though most alternatives fail on the line's first character. `FirstChar` reads, once, which
characters each alternative can begin with (from the parsed pattern: literals, classes,
optional and repeated parts, lookarounds read as letting anything through), and matches a
line against only the alternatives its first character allows, in their order. An
alternation answers with its first alternative that matches, so the answer is the full
pattern's (tests/toolerr/test_toolerr_wide_round6.py checks it on every corpus line and its
pieces). Where the reading is unsure (an unknown construct, a flag), it lets every character
through: slower, never different.
"""

from __future__ import annotations

import re
from collections.abc import Callable

try:  # CPython's parser of regular expressions (the `re` module's own)
    from re import _constants as _c
    from re import _parser
except ImportError:  # pragma: no cover - another interpreter: no dispatch, same answers
    _parser = _c = None

_Starts = Callable[[str], bool]
MAX_CHARS = 4096  # first characters remembered; others are looked up again each time


def _anything(char: str) -> bool:
    return True


def _category(code: object) -> _Starts:
    """The characters of a class escape (`\\d`, `\\w`, `\\s`), generously: a superset is safe."""
    name = str(code)
    if "NOT" in name:
        return _anything
    if "DIGIT" in name:
        return str.isdecimal
    if "WORD" in name:
        return lambda char: char.isalnum() or char == "_"
    if "SPACE" in name:
        return str.isspace
    return _anything


def _charset(items: list) -> _Starts:
    singles: set[str] = set()
    tests: list[_Starts] = []
    for op, av in items:
        if op is _c.LITERAL:
            singles.add(chr(av))
        elif op is _c.RANGE:
            low, high = av
            tests.append(lambda char, low=low, high=high: low <= ord(char) <= high)
        elif op is _c.CATEGORY:
            tests.append(_category(av))
        else:  # NEGATE and anything else: every character may pass
            return _anything
    return lambda char: char in singles or any(test(char) for test in tests)


def _starts(items) -> tuple[_Starts, bool]:
    """(which first characters a parsed sequence may begin with, whether it may match empty)."""
    tests: list[_Starts] = []
    for op, av in items:
        if op is _c.LITERAL:
            tests.append(chr(av).__eq__)
            nullable = False
        elif op is _c.IN:
            tests.append(_charset(av))
            nullable = False
        elif op in (_c.AT, _c.ASSERT, _c.ASSERT_NOT):
            continue  # zero width: what follows decides (lookarounds read generously)
        elif op is _c.SUBPATTERN:
            group, add_flags, del_flags, pattern = av
            if add_flags or del_flags:
                return _anything, True
            test, nullable = _starts(pattern)
            tests.append(test)
        elif op is _c.ATOMIC_GROUP:
            test, nullable = _starts(av)
            tests.append(test)
        elif op is _c.BRANCH:
            branches = [_starts(branch) for branch in av[1]]
            tests.extend(test for test, _ in branches)
            nullable = any(empty for _, empty in branches)
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
            low, _, pattern = av
            test, nullable = _starts(pattern)
            tests.append(test)
            nullable = nullable or low == 0
        else:  # ANY, NOT_LITERAL, group references, ...: anything
            return _anything, True
        if not nullable:
            break
    else:
        return _anything, True  # the whole sequence may match empty: anything may follow
    return (lambda char: any(test(char) for test in tests)), False


def _collect_non_ascii(items, chars: set[str], ranges: list[tuple[int, int]]) -> None:
    """The non-ASCII literals and the ranges reaching past ASCII anywhere in a parsed pattern:
    any other non-ASCII character is told apart by its classes only (digit, word, space)."""
    for op, av in items:
        if op in (_c.LITERAL, _c.NOT_LITERAL) and av >= 128:
            chars.add(chr(av))
        elif op is _c.IN:
            for inner_op, inner_av in av:
                if inner_op is _c.LITERAL and inner_av >= 128:
                    chars.add(chr(inner_av))
                elif inner_op is _c.RANGE and inner_av[1] >= 128:
                    ranges.append(inner_av)
        elif op is _c.SUBPATTERN:
            _collect_non_ascii(av[-1], chars, ranges)
        elif op is _c.BRANCH:
            for branch in av[1]:
                _collect_non_ascii(branch, chars, ranges)
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
            _collect_non_ascii(av[2], chars, ranges)
        elif op in (_c.ASSERT, _c.ASSERT_NOT):
            _collect_non_ascii(av[1], chars, ranges)
        elif op is _c.ATOMIC_GROUP:
            _collect_non_ascii(av, chars, ranges)


def _structure(pattern: str, start: int = 0):
    """(index, character, depth after it) of each character of a pattern's source from
    `start` that is not escaped and not inside a character class (`[|]`, `[]|]`, `[^]|]`),
    `depth` counting the groups open."""
    depth, index, in_class = 0, start, False
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if in_class:
            in_class = char != "]" or pattern[index - 1] == "["  # `[]...]` keeps a `]`
        elif char == "[":
            in_class = True
            if pattern.startswith("[^]", index) or pattern.startswith("[]", index):
                index += 1 + (pattern[index + 1] == "^")
        else:
            depth += (char == "(") - (char == ")")
            yield index, char, depth
        index += 1


def split_alternatives(pattern: str) -> list[str]:
    """The top-level alternatives of a pattern's source (`a|(b|c)|[|]` -> `a`, `(b|c)`,
    `[|]`)."""
    parts, start = [], 0
    for index, char, depth in _structure(pattern):
        if char == "|" and depth == 0:
            parts.append(pattern[start:index])
            start = index + 1
    parts.append(pattern[start:])
    return parts


def _group_end(pattern: str, start: int) -> int:
    """The index of the `)` that closes the group opened at `pattern[start]`."""
    return next(
        (index for index, char, depth in _structure(pattern, start) if char == ")" and not depth),
        -1,
    )


def distribute(alternative: str) -> list[str]:
    """An alternative as alternatives that open with fewer characters, matching the same and
    tried in the same order: one group `(?:B1|B2)` as `B1`, `B2`; an optional group before
    the rest, `(?:P1|P2)?REST`, as `P1(?:REST)`, `P2(?:REST)` and the alternatives of `REST`.
    Any other alternative is returned as it is (a lazy `??` or possessive `?+` too)."""
    if not alternative.startswith("(?:"):
        return [alternative]
    end = _group_end(alternative, 0)
    if end == len(alternative) - 1:
        inner = split_alternatives(alternative[3:end])
        return [part for branch in inner for part in distribute(branch)]
    if end == -1 or alternative[end + 1 : end + 2] != "?" or alternative[end + 2 : end + 3] in "?+":
        return [alternative]
    rest = alternative[end + 2 :]
    prefixes = split_alternatives(alternative[3:end])
    return [f"{prefix}(?:{rest})" for prefix in prefixes] + distribute(rest)


class FirstChar:
    """`prefix? (alternative | alternative | ...)` matched at a line's start, as the full
    pattern's `match`, through the alternatives the line's first character allows. A line
    whose first character may begin `prefix` (an optional part before every alternative) is
    matched by the full pattern."""

    __slots__ = (
        *("full", "_alternatives", "_starts", "_prefix_starts"),
        *("_by_char", "_by_choice", "_by_class", "_special", "_ranges"),
    )

    def __init__(self, prefix: str, alternatives: list[str]) -> None:
        body = "|".join(alternatives)
        self.full = re.compile(f"(?:{prefix})?(?:{body})" if prefix else f"(?:{body})")
        alternatives = [part for alternative in alternatives for part in distribute(alternative)]
        self._alternatives = alternatives
        # each first character's bound `match`; the patterns built, by the alternatives
        # chosen (characters share a few choices; none chosen: `(?!)`, which never matches)
        self._by_char: dict[str, Callable[[str], re.Match | None]] = {"": self.full.match}
        self._by_choice: dict[tuple[int, ...], Callable[[str], re.Match | None]] = {}
        # a non-ASCII first character that no literal or range names: by its classes
        self._by_class: dict[tuple[bool, bool, bool], Callable[[str], re.Match | None]] = {}
        self._special: set[str] = set()
        self._ranges: list[tuple[int, int]] = []
        if _parser is None:
            self._starts = [_anything for _ in alternatives]
            self._prefix_starts = _anything
            return
        parsed = [_parser.parse(a) for a in alternatives]
        self._starts = [_starts(p)[0] for p in parsed]
        self._prefix_starts = _starts(_parser.parse(prefix))[0] if prefix else lambda c: False
        for p in (*parsed, *([_parser.parse(prefix)] if prefix else [])):
            _collect_non_ascii(p, self._special, self._ranges)

    def match(self, line: str) -> re.Match | None:
        try:
            return self._by_char[line[:1]](line)
        except KeyError:
            match = self._match_for(line[:1])
            if len(self._by_char) < MAX_CHARS:  # (a bound on what odd texts can add)
                self._by_char[line[:1]] = match
            return match(line)

    def _match_for(self, char: str) -> Callable[[str], re.Match | None]:
        """The bound `match` of the pattern of the alternatives `char` allows."""
        code = ord(char) if char else 0
        if code < 128 or char in self._special or any(a <= code <= b for a, b in self._ranges):
            return self._build(char)
        # every test of such a character is one of its classes' (or lets all through)
        key = (char.isdecimal(), char.isalnum() or char == "_", char.isspace())
        if key not in self._by_class:
            self._by_class[key] = self._build(char)
        return self._by_class[key]

    def _build(self, char: str) -> Callable[[str], re.Match | None]:
        if self._prefix_starts(char):
            return self.full.match
        chosen = tuple(i for i, starts in enumerate(self._starts) if starts(char))
        if chosen not in self._by_choice:
            body = "|".join(self._alternatives[i] for i in chosen) if chosen else "(?!)"
            self._by_choice[chosen] = re.compile(f"(?:{body})").match
        return self._by_choice[chosen]
