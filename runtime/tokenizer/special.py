"""Special-token partition, as llama.cpp's tokenizer_st_partition (src/llama-vocab.cpp).

Before any tokenizer runs, the text is cut at occurrences of special token texts: the
special tokens are taken one at a time, longest text first, and each one's leftmost
non-overlapping occurrences are cut out of every raw-text fragment left by the previous
ones. Control and unknown tokens take part only with parse_special; user-defined tokens
always do. A token marked LSTRIP/RSTRIP also eats the ASCII whitespace beside it.

Only tokens that occur in the text can cut it, so we first find those (with a regex of
special-text prefixes and a trie of the texts), then run llama.cpp's loop over just them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from itertools import islice

from exactserve.runtime.tokenizer.vocab import (
    ATTR_CONTROL,
    ATTR_LSTRIP,
    ATTR_RSTRIP,
    ATTR_UNKNOWN,
    Vocab,
)

_C_SPACE = " \t\n\v\f\r"  # isspace() in the C locale
_END = ""  # trie key marking that a token ends at this node
_PREFIX_DEPTH = 4  # the prefix regex looks this many characters into a special text
_PLACEHOLDERS = (0xF0000, 0xFFFFE)  # Supplementary Private Use Area-A


def _prefix_regex(node: dict, depth: int) -> str:
    """A regex matching, at a position, the special-text prefix of at most `depth`
    characters that starts there, stopping early at the first complete special text."""
    if _END in node or depth == 0:
        return ""
    alternatives = [re.escape(ch) + _prefix_regex(child, depth - 1) for ch, child in node.items()]
    return "(?:" + "|".join(alternatives) + ")"


@dataclass(frozen=True)
class _Matcher:
    order: dict[int, int]  # token id -> rank in llama.cpp's cache_special_tokens order
    trie: dict
    pattern: re.Pattern[str] | None


class SpecialPartitioner:
    """Owns per-mode (parse_special or not) tries of the special texts, built on first use."""

    def __init__(self, vocab: Vocab) -> None:
        self.vocab = vocab
        self._matchers: dict[bool, _Matcher] = {}

    def _matcher(self, parse_special: bool) -> _Matcher:
        matcher = self._matchers.get(parse_special)
        if matcher is None:
            vocab = self.vocab
            ids = [
                i
                for i in vocab.special_ids
                if parse_special or not vocab.attr(i) & (ATTR_CONTROL | ATTR_UNKNOWN)
            ]
            trie: dict = {}
            for i in ids:
                node = trie
                for ch in vocab.tokens[i]:
                    node = node.setdefault(ch, {})
                node.setdefault(_END, []).append(i)
            pattern = re.compile(_prefix_regex(trie, _PREFIX_DEPTH), re.DOTALL) if ids else None
            matcher = _Matcher({i: rank for rank, i in enumerate(ids)}, trie, pattern)
            self._matchers[parse_special] = matcher
        return matcher

    def _present(self, text: str, matcher: _Matcher) -> list[int]:
        """The special tokens whose text occurs in `text`, in partition order.

        Every occurrence of a special text T starts either where the prefix regex matched
        (and T extends that match) or inside a match (and T extends a suffix of it). So we
        walk the trie along every suffix of every distinct match, collecting the texts
        met on the way (they occur: they lie inside the match), and from where a suffix
        ends, extend it one character at a time while the extension still occurs in
        `text` (an extension that does not occur cannot lead to a text that does).
        """
        found: set[int] = set()
        explored: set[str] = set()
        for match in set(matcher.pattern.findall(text)):
            for k in range(len(match)):
                node = matcher.trie
                for ch in match[k:]:
                    node = node.get(ch)
                    if node is None:
                        break
                    found.update(node.get(_END, ()))
                else:
                    stack = [(match[k:], node)]
                    while stack:
                        prefix, node = stack.pop()
                        if prefix in explored:
                            continue
                        explored.add(prefix)
                        for ch, child in node.items():
                            if ch != _END and prefix + ch in text:
                                found.update(child.get(_END, ()))
                                stack.append((prefix + ch, child))
        return sorted(found, key=matcher.order.__getitem__)

    def partition(self, text: str, parse_special: bool) -> list[str | int]:
        """`text` as raw-text fragments (str) and special tokens (int ids), in order."""
        fragments: list[str | int] = [text] if text else []
        matcher = self._matcher(parse_special)
        if not fragments or matcher.pattern is None:
            return fragments
        present = self._present(text, matcher)
        if not present:
            return fragments
        if not any(self.vocab.attr(i) & (ATTR_LSTRIP | ATTR_RSTRIP) for i in present):
            return self._partition_by_replacing(text, present)
        for token_id in present:
            token = self.vocab.tokens[token_id]
            attr = self.vocab.attr(token_id)
            result: list[str | int] = []
            for fragment in fragments:
                if isinstance(fragment, int) or token not in fragment:
                    result.append(fragment)
                else:
                    result += _cut(fragment, token, token_id, attr)
            fragments = result
        return fragments

    def _partition_by_replacing(self, text: str, present: list[int]) -> list[str | int]:
        """The same partition when no token strips whitespace: each token's occurrences are
        replaced, leftmost first and non-overlapping, by a private-use character found
        neither in the text nor in any special text, so later tokens cannot match across
        an earlier cut; the placeholders are then turned back into token ids."""
        tokens = self.vocab.tokens
        used = set(text).union(*(tokens[i] for i in present))
        free = (ch for ch in map(chr, range(*_PLACEHOLDERS)) if ch not in used)
        placeholders = list(islice(free, len(present)))
        if len(placeholders) < len(present):
            raise ValueError("text uses too many private-use characters to partition it")
        for token_id, placeholder in zip(present, placeholders, strict=True):
            text = text.replace(tokens[token_id], placeholder)
        id_of = dict(zip(placeholders, present, strict=True))
        pieces = re.split("([" + "".join(placeholders) + "])", text)
        out: list[str | int] = []
        for i, piece in enumerate(pieces):
            if i % 2:
                out.append(id_of[piece])
            elif piece:
                out.append(piece)
        return out


def _cut(fragment: str, token: str, token_id: int, attr: int) -> list[str | int]:
    """Cut every leftmost non-overlapping occurrence of `token` out of `fragment`."""
    out: list[str | int] = []
    rest = fragment
    while True:
        at = rest.find(token)
        if at < 0:
            out.append(rest)
            return out
        left = rest[:at]
        if attr & ATTR_LSTRIP:
            left = left.rstrip(_C_SPACE)
        if left:
            out.append(left)
        out.append(token_id)
        rest = rest[at + len(token) :]
        if attr & ATTR_RSTRIP:
            rest = rest.lstrip(_C_SPACE)
        if not rest:
            return out
