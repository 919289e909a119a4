"""Remove object members from JSON, keeping every other byte of the text as it was.

The layer strips its own request fields (`tool_errors`, `error_kind`, tool `annotations`)
before a body goes upstream. Re-serialising the whole body would change white space,
escapes and number spellings the client chose; cutting the members out of the text keeps
the rest byte for byte. A path is a tuple of object keys and array indices leading to the
member to delete, e.g. `("messages", 3, "error_kind")`; every member with the final key in
that object is removed (JSON decoders keep the last of duplicate keys, so all must go).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from json.decoder import scanstring
from typing import Any, NamedTuple

JsonPath = tuple[str | int, ...]

_DECODER = json.JSONDecoder()
_WHITE_SPACE = re.compile(r"[ \t\n\r]*")
_DELETE = object()


class _Member(NamedTuple):
    key: str
    start: int  # index of the key's opening quote
    value_start: int
    value_end: int  # one past the value's last character


def delete_in_text(text: str, paths: Iterable[JsonPath]) -> str:
    """`text` (valid JSON) without the members at `paths`; paths that lead nowhere are
    ignored."""
    trie = _trie(paths)
    if not trie:
        return text
    cuts: list[tuple[int, int]] = []
    _collect_cuts(text, _skip(text, 0), trie, cuts)
    for start, end in sorted(cuts, reverse=True):
        text = text[:start] + text[end:]
    return text


def delete_in_object(value: Any, paths: Iterable[JsonPath]) -> Any:
    """A copy of decoded JSON `value` without the members at `paths`; containers off the
    paths are shared, not copied."""
    return _delete_in_value(value, _trie(paths))


def _trie(paths: Iterable[JsonPath]) -> dict:
    root: dict = {}
    for path in paths:
        if not path or not isinstance(path[-1], str):
            raise ValueError(f"a path must end with an object key, got {path!r}")
        node = root
        for step in path[:-1]:
            child = node.setdefault(step, {})
            if child is _DELETE:
                break
            node = child
        else:
            node[path[-1]] = _DELETE
    return root


def _delete_in_value(value: Any, trie: dict) -> Any:
    if isinstance(value, dict):
        out = {k: v for k, v in value.items() if trie.get(k) is not _DELETE}
        for key, sub in trie.items():
            if isinstance(key, str) and sub is not _DELETE and key in out:
                out[key] = _delete_in_value(out[key], sub)
        return out
    if isinstance(value, list):
        out_list = list(value)
        for key, sub in trie.items():
            if isinstance(key, int) and sub is not _DELETE and 0 <= key < len(out_list):
                out_list[key] = _delete_in_value(out_list[key], sub)
        return out_list
    return value


def _skip(text: str, index: int) -> int:
    return _WHITE_SPACE.match(text, index).end()


def _value_end(text: str, index: int) -> int:
    return _DECODER.raw_decode(text, index)[1]


def _collect_cuts(text: str, index: int, trie: dict, cuts: list[tuple[int, int]]) -> None:
    if text[index] == "{":
        members = _members(text, index)
        doomed = [i for i, m in enumerate(members) if trie.get(m.key) is _DELETE]
        cuts.extend(_member_cuts(members, doomed))
        # Descend into the last member of each key: that is the one a decoder keeps.
        last_of = {m.key: m for m in members}
        for key, sub in trie.items():
            if isinstance(key, str) and sub is not _DELETE and key in last_of:
                _collect_cuts(text, last_of[key].value_start, sub, cuts)
    elif text[index] == "[":
        elements = _elements(text, index)
        for key, sub in trie.items():
            if isinstance(key, int) and sub is not _DELETE and 0 <= key < len(elements):
                _collect_cuts(text, elements[key], sub, cuts)


def _members(text: str, index: int) -> list[_Member]:
    """The members of the object whose `{` is at `index`."""
    members: list[_Member] = []
    index = _skip(text, index + 1)
    if text[index] == "}":
        return members
    while True:
        key, after_key = scanstring(text, index + 1)
        value_start = _skip(text, _skip(text, after_key) + 1)  # past the ':'
        value_end = _value_end(text, value_start)
        members.append(_Member(key, index, value_start, value_end))
        index = _skip(text, value_end)
        if text[index] == "}":
            return members
        index = _skip(text, index + 1)  # past the ','


def _elements(text: str, index: int) -> list[int]:
    """The start index of each element of the array whose `[` is at `index`."""
    starts: list[int] = []
    index = _skip(text, index + 1)
    if text[index] == "]":
        return starts
    while True:
        starts.append(index)
        index = _skip(text, _value_end(text, index))
        if text[index] == "]":
            return starts
        index = _skip(text, index + 1)


def _member_cuts(members: list[_Member], doomed: list[int]) -> list[tuple[int, int]]:
    """Text ranges that remove the members at indices `doomed` with their commas.

    A run of doomed members followed by a kept one is cut up to that member's key; a run
    that ends the object is cut from the end of the kept member before it, taking the comma
    that preceded the run; when every member goes, the members themselves are cut.
    """
    cuts = []
    doomed_set = set(doomed)
    index = 0
    while index < len(members):
        if index not in doomed_set:
            index += 1
            continue
        first = index
        while index < len(members) and index in doomed_set:
            index += 1
        if index < len(members):
            cuts.append((members[first].start, members[index].start))
        elif first > 0:
            cuts.append((members[first - 1].value_end, members[-1].value_end))
        else:
            cuts.append((members[0].start, members[-1].value_end))
    return cuts
