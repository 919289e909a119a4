"""Word lists looked up through their rarest characters: a speed device, not a rule.

A substring test of a many-character word scans a 1 KB evidence window at about a
character a nanosecond; a test of one character is a `memchr`, some twenty times faster.
So each word is filed under its rarest character (by `words.RARITY`) and also carries its
second rarest: a word is looked up only when both occur in the text, and a whole group
is skipped when its character is absent. The answers are exactly those of the plain
`word in text` loops: the first present word in list order, or all of them in order.
"""

from __future__ import annotations

from exactserve.toolerr.wide.words import RARITY


def _rank(char: str) -> int:
    found = RARITY.find(char)
    return len(RARITY) if found < 0 else found


class Lexicon:
    """An ordered word list, grouped by each word's rarest character."""

    __slots__ = ("size", "_groups")

    def __init__(self, words: tuple[str, ...]) -> None:
        self.size = len(words)
        groups: dict[str, list[tuple[int, str, str]]] = {}
        for index, word in enumerate(words):
            rare = sorted(set(word), key=lambda char: (_rank(char), char))
            second = rare[1] if len(rare) > 1 else rare[0]
            groups.setdefault(rare[0], []).append((index, word, second))
        self._groups = tuple((char, tuple(members)) for char, members in groups.items())

    def present(self, text: str) -> list[str]:
        """Every word of the list that occurs in `text`, in list order."""
        found = []
        for char, members in self._groups:
            if char in text:
                found.extend(m for m in members if m[2] in text and m[1] in text)
        found.sort()
        return [word for _, word, _ in found]

    def first(self, text: str) -> str | None:
        """The first word of the list that occurs in `text`, or None."""
        best, best_index = None, self.size
        for char, members in self._groups:
            if members[0][0] < best_index and char in text:
                for index, word, second in members:
                    if index >= best_index:
                        break
                    if second in text and word in text:
                        best, best_index = word, index
                        break
        return best
