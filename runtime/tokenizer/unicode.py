"""Code point classification exactly as llama.cpp's src/unicode.cpp does it.

The pre-tokenizers run their patterns on a *collapsed* copy of the text, as llama.cpp
does for its std::regex fallback: every code point below 128 stays itself, every other
code point becomes one stand-in character for its llama.cpp class. Collapsing keeps
positions (one code point in, one out), so match spans index the original text, and
Python's `re` with ASCII semantics then classifies exactly like llama.cpp's tables.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from exactserve.runtime.tokenizer import unicode_data

MAX_CODEPOINTS = 0x110000

# llama.cpp unicode_cpt_flags category bits.
UNDEFINED = 0x01
NUMBER = 0x02
LETTER = 0x04
SEPARATOR = 0x08
ACCENT_MARK = 0x10
PUNCTUATION = 0x20
SYMBOL = 0x40
CONTROL = 0x80

# Collapsed stand-ins for non-ASCII code points (llama.cpp's k_ucat_cpt, plus 0x0B for
# whitespace and 0xD0 for every other category).
COLLAPSED_WHITESPACE = "\x0b"
COLLAPSED_OTHER = "\xd0"
COLLAPSED_BY_CATEGORY = {
    NUMBER: "\xd1",
    LETTER: "\xd2",
    PUNCTUATION: "\xd3",
    ACCENT_MARK: "\xd4",
    SYMBOL: "\xd5",
}


def _ints(table: str) -> list[int]:
    return [int(x, 16) for x in table.split()]


@lru_cache(maxsize=1)
def categories() -> np.ndarray:
    """uint8[0x110000]: llama.cpp's category bit of every code point."""
    flat = _ints(unicode_data.CATEGORY_RANGES)
    starts = np.array(flat[0::2] + [MAX_CODEPOINTS], dtype=np.int64)
    flags = np.array(flat[1::2], dtype=np.uint8)
    return np.repeat(flags, np.diff(starts))


@lru_cache(maxsize=1)
def whitespace() -> frozenset[int]:
    return frozenset(_ints(unicode_data.WHITESPACE))


@lru_cache(maxsize=1)
def lowercase_map() -> dict[int, int]:
    flat = _ints(unicode_data.LOWERCASE)
    return dict(zip(flat[0::2], flat[1::2], strict=True))


@lru_cache(maxsize=1)
def nfd_ranges() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(first, last, nfd) arrays of llama.cpp's single-code-point NFD table."""
    flat = np.array(_ints(unicode_data.NFD_RANGES), dtype=np.int64)
    return flat[0::3], flat[1::3], flat[2::3]


def category(cpt: int) -> int:
    return int(categories()[cpt]) if cpt < MAX_CODEPOINTS else 0


def is_whitespace(cpt: int) -> bool:
    return cpt in whitespace()


def tolower(cpt: int) -> int:
    """llama.cpp's unicode_tolower: the mapped code point, or the code point itself."""
    return lowercase_map().get(cpt, cpt)


def normalize_nfd(cpt: int) -> int:
    """llama.cpp's unicode_cpts_normalize_nfd for one code point (one code point out)."""
    first, last, nfd = nfd_ranges()
    i = int(np.searchsorted(first, cpt, side="right")) - 1
    if i >= 0 and first[i] <= cpt <= last[i]:
        return int(nfd[i])
    return cpt


@lru_cache(maxsize=1)
def collapse_table() -> np.ndarray:
    """uint8[0x110000]: the collapsed stand-in (a Latin-1 code) of every code point."""
    cats = categories()
    table = np.full(MAX_CODEPOINTS, ord(COLLAPSED_OTHER), dtype=np.uint8)
    for flag, code in COLLAPSED_BY_CATEGORY.items():
        table[cats == flag] = ord(code)
    table[np.fromiter(whitespace(), dtype=np.int64)] = ord(COLLAPSED_WHITESPACE)
    table[:128] = np.arange(128, dtype=np.uint8)
    return table


def collapse(text: str) -> str:
    """The collapsed copy of `text` (same length; ASCII unchanged)."""
    if text.isascii():
        return text
    cpts = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return collapse_table()[cpts].tobytes().decode("latin-1")


def non_ascii_positions(text: str) -> np.ndarray:
    """Indices of the code points of `text` above 0x7F, ascending."""
    cpts = np.frombuffer(text.encode("utf-32-le", "surrogatepass"), dtype=np.uint32)
    return np.flatnonzero(cpts > 0x7F)


@lru_cache(maxsize=1)
def wide_whitespace_table() -> dict[int, int]:
    """str.translate table replacing non-ASCII whitespace by 0x0B, as llama.cpp does
    before running a pattern without Unicode categories through std::wregex."""
    return {cpt: 0x0B for cpt in whitespace() if cpt > 0x7F}


@lru_cache(maxsize=1)
def byte_to_unicode() -> tuple[str, ...]:
    """GPT-2 byte-level encoding: byte value -> printable character (unicode_byte_to_utf8)."""
    printable = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    mapping = {b: chr(b) for b in printable}
    n = 0
    for b in range(256):
        if b not in mapping:
            mapping[b] = chr(256 + n)
            n += 1
    return tuple(mapping[b] for b in range(256))


@lru_cache(maxsize=1)
def unicode_to_byte() -> dict[str, int]:
    return {ch: b for b, ch in enumerate(byte_to_unicode())}
