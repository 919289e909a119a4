"""Pre-tokenizer splits, worked out by hand from llama.cpp's hand-written splitters
(unicode_regex_split_custom_* in src/unicode.cpp) and its std::regex path."""

from __future__ import annotations

import pytest

from exactserve.runtime.tokenizer.pretokenize import (
    PreTokenizer,
    collapse_regex,
    ecmascript_to_python,
)

CASES = [
    ("GPT2", "Hello world's", ["Hello", " world", "'s"]),
    # A whitespace run before a word keeps its last character for the word's space slot.
    ("GPT2", "a   b", ["a", "  ", " b"]),
    # Only " " can prefix a word; other whitespace (U+3000) splits off on its own.
    ("GPT2", "a\u3000\u3000b", ["a", "\u3000", "\u3000", "b"]),
    ("GPT2", "a  ", ["a", "  "]),
    ("GPT2", "x'RE", ["x", "'", "RE"]),  # gpt-2's contractions are case-sensitive
    ("LLAMA3", "x'RE", ["x", "'RE"]),
    ("LLAMA3", "12345", ["123", "45"]),
    ("LLAMA3", "Hello\n\n  world", ["Hello", "\n\n", " ", " world"]),
    ("LLAMA3", "a.\n\nb", ["a", ".\n\n", "b"]),
    ("QWEN2", "12345", ["1", "2", "3", "4", "5"]),
    # Qwen2 letter runs stop at an accent mark; Qwen3.5 runs take it in.
    ("QWEN2", "e\u0301x", ["e", "\u0301x"]),
    ("QWEN35", "e\u0301x", ["e\u0301x"]),
    # Default BPE: punctuation runs, then the GPT-2 split, then digit runs, then triples.
    ("DEFAULT", "Hi!! 12345", ["Hi", "!!", " ", "123", "45"]),
    # Gemma 4: runs of newlines and runs of everything else.
    ("GEMMA4", "a b\n\nc", ["a b", "\n\n", "c"]),
]


@pytest.mark.parametrize(("pre_type", "text", "words"), CASES)
def test_split(pre_type: str, text: str, words: list[str]) -> None:
    assert PreTokenizer(pre_type).split(text) == words


def test_split_keeps_non_ascii_words_intact() -> None:
    text = "naïve café, 東京 123\u00a0x"
    words = PreTokenizer("LLAMA3").split(text)
    assert "".join(words) == text
    assert words == ["naïve", " café", ",", " 東京", " ", "123", "\u00a0x"]


def test_collapse_regex_translates_categories_like_llama_cpp() -> None:
    assert collapse_regex("\\p{N}+") == "[\xd10-9]+"
    assert collapse_regex("[^\\s\\p{L}]") == "[^\\s\xd2A-Za-z]"
    assert collapse_regex("\\p{Lu}") == "[\xd2A-Za-z]"


def test_ecmascript_anchors_and_dot() -> None:
    assert ecmascript_to_python("\\s+$") == "\\s+\\Z"
    assert ecmascript_to_python("[$.]a.") == "[$.]a[^\\n\\r]"
    assert ecmascript_to_python("\\$\\.") == "\\$\\."
