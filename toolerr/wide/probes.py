"""Word lists looked up through their rarest characters: a speed device, not a rule.

A substring test of a many-character word scans a 1 KB evidence window at about a
character a nanosecond; a test of one character is a `memchr`, some twenty times faster.
So each word is filed under its rarest character (by `words.RARITY`) and also carries its
second and third rarest: a word is looked up only when all three occur in the text, and a
whole group is skipped when its character is absent. Words that share a marker (`timed
out`, `onnection`) are filed under the marker instead, so that a text without it costs one
scan for the group rather than one for each word. The answers are exactly those of the
plain `word in text` loops: the first present word in list order, or all of them in order.

A marker of several characters costs a substring scan (about twenty times a `memchr`), and
the tiers of one classification share markers (`not `, `denied`, `timed out`): a caller may
pass one `seen` dict to every lookup of a text, so that each marker is scanned once. A word
under a marker carries its own two rarest characters, and the marker is scanned only once
some word's two occur (a word can occur only where its characters and its marker do, so a
marker left unscanned could have given no word: `_TIMEOUT`, `::ERR_` and `invalid_` mostly
cost two `memchr`s instead of a scan).
"""

from __future__ import annotations

from exactserve.toolerr.wide.words import RARITY


def _rank(char: str) -> int:
    return RARITY.find(char)  # -1, the rarest, for a character missing from RARITY


class Lexicon:
    """An ordered word list, grouped by each word's marker or rarest character."""

    __slots__ = ("size", "words", "_groups", "_marked", "_lettered", "_position")

    def __init__(self, words: tuple[str, ...], markers: tuple[str, ...] = ()) -> None:
        self.size = len(words)
        self.words = words
        self._position: dict[str, int] = {}  # each word's first position
        for index, word in enumerate(words):
            self._position.setdefault(word, index)
        groups: dict[str, list[tuple[int, str, str, str]]] = {}
        for index, word in enumerate(words):
            rare = sorted(set(word), key=lambda char: (_rank(char), char))
            key = next((marker for marker in markers if marker in word), rare[0])
            # a word under its rarest character carries the next two; one under a marker,
            # its own two rarest (the marker is scanned only when they occur: see below)
            low = 1 if key == rare[0] else 0
            second = rare[low] if len(rare) > low else rare[0]
            third = rare[low + 1] if len(rare) > low + 1 else second
            groups.setdefault(key, []).append((index, word, second, third))
        # (marker or character, the group's first list position, its words)
        self._groups = tuple(
            (char, members[0][0], tuple(members)) for char, members in groups.items()
        )
        # The groups under a marker, as (marker, its first list position, its words, a shorter
        # marker inside it: when that one is known absent, so is this one), and those under
        # a character.
        marked = [
            (key, low, members, next((m for m in markers if m != key and m in key), None))
            for key, low, members in self._groups
            if len(key) > 1
        ]
        # inner markers first, so that an outer one may be ruled out without a scan (the
        # answers do not depend on the order of the groups, only on their list positions)
        self._marked = tuple(sorted(marked, key=lambda group: group[3] is not None))
        self._lettered = tuple(group for group in self._groups if len(group[0]) == 1)

    def present(self, text: str) -> list[str]:
        """Every word of the list that occurs in `text`, in list order."""
        return [self.words[index] for index in self.present_at(text)]

    def present_at(self, text: str, seen: dict[str, bool] | None = None) -> list[int]:
        """The list positions of every word that occurs in `text`, in list order. `seen`
        (marker -> present in `text`) is read and filled."""
        found = []
        if seen is None:
            seen = {}
        for marker, _, members, inner in self._marked:
            hit = seen.get(marker)
            if hit is False:
                continue
            for index, word, second, third in members:
                if second in text and third in text:
                    if hit is None:  # (scanned once a word's characters occur)
                        hit = seen[marker] = _has_marker(text, marker, inner, seen)
                        if not hit:
                            break
                    if word in text:
                        found.append(index)
        for char, _, members in self._lettered:
            if char in text:
                for index, word, second, third in members:
                    if second in text and third in text and word in text:
                        found.append(index)
        if len(found) > 1:
            found.sort()
        return found

    def first(self, text: str, seen: dict[str, bool] | None = None) -> str | None:
        """The first word of the list that occurs in `text`, or None. `seen` (marker ->
        present in `text`) is read and filled."""
        best, best_index = None, self.size
        if seen is None:
            seen = {}
        for marker, low, members, inner in self._marked:
            if low >= best_index:
                continue
            hit = seen.get(marker)
            if hit is False:
                continue
            for index, word, second, third in members:
                if index >= best_index:
                    break
                if second in text and third in text:
                    if hit is None:  # (scanned once a word's characters occur)
                        hit = seen[marker] = _has_marker(text, marker, inner, seen)
                        if not hit:
                            break
                    if word in text:
                        best, best_index = word, index
                        break
        for char, low, members in self._lettered:
            if low < best_index and char in text:
                for index, word, second, third in members:
                    if index >= best_index:
                        break
                    if second in text and third in text and word in text:
                        best, best_index = word, index
                        break
        return best

    def first_at(self, text: str, seen: dict[str, bool] | None = None) -> int:
        """The list position of the first word that occurs in `text`, or the list's size."""
        word = self.first(text, seen)
        return self.size if word is None else self._position[word]


def _has_marker(text: str, marker: str, inner: str | None, seen: dict[str, bool]) -> bool:
    """Whether `marker` occurs in `text`; not when a marker inside it is known absent."""
    return (inner is None or seen.get(inner) is not False) and marker in text
