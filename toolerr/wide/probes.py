"""Word lists looked up through their rarest characters: a speed device, not a rule.

A substring test of a many-character word scans a 1 KB evidence window at about a
character a nanosecond; a test of one character is a `memchr`, some twenty times faster.
So each word is filed under its rarest character (by `words.RARITY`) and also carries its
second and third rarest: a word is looked up only when all three occur in the text, and a
whole group is skipped when its character is absent. Words that share a marker (`timed
out`, `onnection`) are filed under the marker instead, so that a text without it costs one
scan for the group rather than one for each word. The answers are exactly those of the
plain `word in text` loops: the first present word in list order, or all of them in order.
"""

from __future__ import annotations

from exactserve.toolerr.wide.words import RARITY


def _rank(char: str) -> int:
    return RARITY.find(char)  # -1, the rarest, for a character missing from RARITY


class Lexicon:
    """An ordered word list, grouped by each word's marker or rarest character."""

    __slots__ = ("size", "words", "_groups", "_position")

    def __init__(self, words: tuple[str, ...], markers: tuple[str, ...] = ()) -> None:
        self.size = len(words)
        self.words = words
        self._position: dict[str, int] = {}  # each word's first position
        for index, word in enumerate(words):
            self._position.setdefault(word, index)
        groups: dict[str, list[tuple[int, str, str, str]]] = {}
        for index, word in enumerate(words):
            rare = sorted(set(word), key=lambda char: (_rank(char), char))
            second = rare[1] if len(rare) > 1 else rare[0]
            third = rare[2] if len(rare) > 2 else second
            key = next((marker for marker in markers if marker in word), rare[0])
            groups.setdefault(key, []).append((index, word, second, third))
        # (marker or character, the group's first list position, its words)
        self._groups = tuple(
            (char, members[0][0], tuple(members)) for char, members in groups.items()
        )

    def present(self, text: str) -> list[str]:
        """Every word of the list that occurs in `text`, in list order."""
        return [self.words[index] for index in self.present_at(text)]

    def present_at(self, text: str) -> list[int]:
        """The list positions of every word that occurs in `text`, in list order."""
        found = []
        for char, _, members in self._groups:
            if char in text:
                for index, word, second, third in members:
                    if second in text and third in text and word in text:
                        found.append(index)
        if len(found) > 1:
            found.sort()
        return found

    def first(self, text: str) -> str | None:
        """The first word of the list that occurs in `text`, or None."""
        best, best_index = None, self.size
        for char, low, members in self._groups:
            if low < best_index and char in text:
                for index, word, second, third in members:
                    if index >= best_index:
                        break
                    if second in text and third in text and word in text:
                        best, best_index = word, index
                        break
        return best

    def first_at(self, text: str) -> int:
        """The list position of the first word that occurs in `text`, or the list's size."""
        word = self.first(text)
        return self.size if word is None else self._position[word]
