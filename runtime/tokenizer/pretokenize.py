"""Pre-tokenizers for byte-level BPE: split text into words exactly as llama.cpp's
unicode_regex_split (src/unicode.cpp) does.

llama.cpp applies a vocabulary's regexes one after another, each refining the pieces the
previous one produced. A regex whose exact string llama.cpp recognises runs through a
hand-written splitter (GPT-2, Llama 3, Qwen2, Qwen3.5, newline runs); any other runs
through std::regex (ECMAScript) on a collapsed copy of the text when it uses Unicode
categories, or on the code points (non-ASCII whitespace replaced by 0x0B) when it does not.
Unmatched stretches between std::regex matches become pieces of their own.

We mirror that split for split. The hand-written splitters are expressed as `re` patterns
over the collapsed text (see unicode.py); llama.cpp's tables give every code point a
category, so each splitter branch is exactly one alternative, in the same order. The
std::regex path is translated the way llama.cpp translates it, then run by `re` with
ASCII classes (\\s, \\d, \\w as the C locale has them).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from exactserve.runtime.errors import UnsupportedError
from exactserve.runtime.tokenizer import unicode as uni
from exactserve.runtime.tokenizer.pre_types import PATTERNS

# Collapsed-text classes (ASCII as itself, non-ASCII as its stand-in; see unicode.py).
_WS = "\\t-\\r "  # C isspace: \t \n \v \f \r and space; non-ASCII whitespace is \x0b
_L = "A-Za-z" + uni.COLLAPSED_BY_CATEGORY[uni.LETTER]
_N = "0-9" + uni.COLLAPSED_BY_CATEGORY[uni.NUMBER]
_M = uni.COLLAPSED_BY_CATEGORY[uni.ACCENT_MARK]
_CONTRACTIONS_CI = "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
# "\s+(?!\S)" then "\s+": a whitespace run before a non-space keeps its last character
# for the next piece, unless the run is that one character.
_WS_TAIL = f"[{_WS}]+(?![^{_WS}])|[{_WS}]+"

# unicode_regex_split_custom_gpt2, for
# 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)
_GPT2 = f"'s|'t|'re|'ve|'m|'ll|'d| ?[{_L}]+| ?[{_N}]+| ?[^{_WS}{_L}{_N}]+|{_WS_TAIL}"
# unicode_regex_split_custom_llama3 (and qwen2 with \p{N} instead of \p{N}{1,3}). The
# splitter lowercases with llama.cpp's table, which maps no non-ASCII code point to one
# of "strmvlde", so the explicit [sS]-style classes are exact.
_LLAMA3 = (
    f"{_CONTRACTIONS_CI}|[^\\r\\n{_L}{_N}]?[{_L}]+|[{_N}]{{1,3}}"
    f"| ?[^{_WS}{_L}{_N}]+[\\r\\n]*|[{_WS}]*[\\r\\n]+|{_WS_TAIL}"
)
_QWEN2 = (
    f"{_CONTRACTIONS_CI}|[^\\r\\n{_L}{_N}]?[{_L}]+|[{_N}]"
    f"| ?[^{_WS}{_L}{_N}]+[\\r\\n]*|[{_WS}]*[\\r\\n]+|{_WS_TAIL}"
)
# unicode_regex_split_custom_qwen35: letter runs also take accent marks (\p{M}).
_QWEN35 = (
    f"{_CONTRACTIONS_CI}|[^\\r\\n{_L}{_N}]?[{_L}{_M}]+|[{_N}]"
    f"| ?[^{_WS}{_L}{_M}{_N}]+[\\r\\n]*|[{_WS}]*[\\r\\n]+|{_WS_TAIL}"
)

_P = "\\p"
# The regex strings llama.cpp's unicode_regex_split_custom dispatches on, mapped to the
# equivalent collapsed-text pattern ("newlines" runs on the original text).
_CUSTOM: dict[str, tuple[str, bool]] = {
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)": (_GPT2, True),
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
    "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+": (_LLAMA3, True),
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+": (_LLAMA3, True),
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+": (_QWEN2, True),
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?"
    "[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+": (
        _QWEN35,
        True,
    ),
    "[^\\n]+|[\\n]+": ("[^\\n]+|[\\n]+", False),
}
# Custom splitters llama.cpp has that we do not reproduce.
_UNSUPPORTED_CUSTOM = {
    "\\p{Han}+": "kimi-k2",
    "\\p{AFMoE_digits}": "afmoe",
    "\\d{1,3}(?=(?:\\d{3})*\\b)": "tiny_aya",
}

# llama.cpp's k_ucat_enum / k_ucat_map: a Unicode category in a collapsed regex becomes
# its stand-in character plus the ASCII members of the category.
_CATEGORY_OF = {
    "\\p{N}": uni.NUMBER,
    "\\p{L}": uni.LETTER,
    "\\p{P}": uni.PUNCTUATION,
    "\\p{M}": uni.ACCENT_MARK,
    "\\p{S}": uni.SYMBOL,
    "\\p{Lu}": uni.LETTER,
    "\\p{Ll}": uni.LETTER,
    "\\p{Lt}": uni.LETTER,
    "\\p{Lm}": uni.LETTER,
    "\\p{Lo}": uni.LETTER,
}
_ASCII_MEMBERS = {
    uni.NUMBER: "0-9",
    uni.LETTER: "A-Za-z",
    uni.PUNCTUATION: "!-#%-*,-/:-;?-@\\[-\\]_\\{\\}",
    uni.ACCENT_MARK: "",
    uni.SYMBOL: "\\$\\+<->^`\\|\\~",
}


def collapse_regex(expr: str) -> str:
    """llama.cpp's rewrite of a regex with \\p{..} categories for the collapsed text."""
    out: list[str] = []
    inside = False
    i = 0
    while i < len(expr):
        ch = expr[i]
        if ch == "[" and (i == 0 or expr[i - 1] != "\\"):
            out.append("[")
            inside = True
        elif inside and ch == "]" and expr[i - 1] != "\\":
            out.append("]")
            inside = False
        elif ch == "\\" and i + 3 < len(expr) and expr[i + 1 : i + 3] == "p{":
            close = expr.find("}", i + 3)
            cat = _CATEGORY_OF.get(expr[i : close + 1]) if 0 <= close <= i + 10 else None
            if cat is None:
                out.append(ch)
            else:
                members = uni.COLLAPSED_BY_CATEGORY[cat] + _ASCII_MEMBERS[cat]
                out.append(members if inside else f"[{members}]")
                i = close
        else:
            out.append(ch)
        i += 1
    return "".join(out)


def ecmascript_to_python(expr: str) -> str:
    """Rewrite the ECMAScript constructs whose meaning differs in Python's `re`: `$` is
    the end of the input only, `.` excludes \\r as well as \\n."""
    out: list[str] = []
    inside = False
    i = 0
    while i < len(expr):
        ch = expr[i]
        if ch == "\\" and i + 1 < len(expr):
            out.append(expr[i : i + 2])
            i += 2
            continue
        if ch == "[" and not inside:
            inside = True
        elif ch == "]" and inside:
            inside = False
        elif ch == "$" and not inside:
            ch = "\\Z"
        elif ch == "." and not inside:
            ch = "[^\\n\\r]"
        out.append(ch)
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class _Step:
    """One regex of a pre-tokenizer: how to run it and whether it leaves gaps."""

    pattern: re.Pattern[str]
    text_form: str  # "collapsed", "wide" (non-ASCII whitespace -> 0x0B) or "raw"
    is_custom: bool  # hand-written splitter: every code point lands in a match


def _compile_step(expr: str) -> _Step:
    if expr in _UNSUPPORTED_CUSTOM:
        raise UnsupportedError(
            f"the {_UNSUPPORTED_CUSTOM[expr]!r} pre-tokenizer uses a llama.cpp splitter "
            "that exactserve does not implement"
        )
    if expr in _CUSTOM:
        pattern, collapsed = _CUSTOM[expr]
        return _Step(re.compile(pattern, re.DOTALL), "collapsed" if collapsed else "raw", True)
    if any(name in expr for name in _CATEGORY_OF):
        if not expr.isascii():
            raise UnsupportedError(
                "pre-tokenizer regex mixes Unicode categories and non-ASCII characters, "
                f"which llama.cpp rejects: {expr!r}"
            )
        python_expr = ecmascript_to_python(collapse_regex(expr))
        return _Step(re.compile(python_expr, re.ASCII), "collapsed", False)
    return _Step(re.compile(ecmascript_to_python(expr), re.ASCII), "wide", False)


class PreTokenizer:
    """Splits a text fragment into words (code point spans) for one pre-tokenizer type."""

    def __init__(self, pre_type: str) -> None:
        if pre_type not in PATTERNS:
            raise UnsupportedError(f"unknown pre-tokenizer type {pre_type!r}")
        exprs, self.byte_encode = PATTERNS[pre_type]
        self.pre_type = pre_type
        self._steps = tuple(_compile_step(expr) for expr in exprs)

    def split(self, text: str) -> list[str]:
        """The words of `text`, in order; their concatenation is `text`."""
        if not text:
            return []
        forms: dict[str, str] = {"raw": text}
        if len(self._steps) == 1 and self._steps[0].is_custom:
            # Fast path: one hand-written splitter covers the whole text with matches.
            step = self._steps[0]
            subject = self._form(step, text, forms)
            words = step.pattern.findall(subject)
            if subject is not text:
                _restore_non_ascii(words, text)
            return words
        pieces = [(0, len(text))]
        for step in self._steps:
            pieces = list(self._refine(step, self._form(step, text, forms), pieces))
        return [text[a:b] for a, b in pieces]

    @staticmethod
    def _form(step: _Step, text: str, forms: dict[str, str]) -> str:
        if step.text_form not in forms:
            if step.text_form == "collapsed":
                forms["collapsed"] = uni.collapse(text)
            else:
                forms["wide"] = text.translate(uni.wide_whitespace_table())
        return forms[step.text_form]

    @staticmethod
    def _refine(
        step: _Step, subject: str, pieces: Iterable[tuple[int, int]]
    ) -> Iterable[tuple[int, int]]:
        """unicode_regex_split_stl: matches become pieces, and so does each unmatched
        stretch between them. Each piece is searched on its own, as a std::regex_iterator
        over the sub-range (so `$` and lookaheads see the piece's end)."""
        for start, end in pieces:
            sub = subject[start:end]
            pos = 0
            for match in step.pattern.finditer(sub):
                a, b = match.span()
                if a > pos:
                    yield start + pos, start + a
                if b > a:
                    yield start + a, start + b
                pos = b
            if pos < len(sub):
                yield start + pos, end


def _restore_non_ascii(words: list[str], text: str) -> None:
    """Replace, in place, the words of a collapsed text that hold a non-ASCII code point
    by the same span of the original text (the others are already equal to it)."""
    ends = np.cumsum(np.fromiter(map(len, words), dtype=np.int64, count=len(words)))
    for i in np.unique(np.searchsorted(ends, uni.non_ascii_positions(text), side="right")):
        end = int(ends[i])
        words[i] = text[end - len(words[i]) : end]


def byte_encode(word: str) -> str:
    """GPT-2 byte-level encoding of a word (unicode_byte_encoding_process)."""
    table = uni.byte_to_unicode()
    return "".join([table[b] for b in word.encode("utf-8", "surrogatepass")])
