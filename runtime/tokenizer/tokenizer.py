"""The tokenizer: llama_tokenize / llama_token_to_piece / llama_detokenize in Python,
token for token and byte for byte what llama.cpp produces for the same GGUF vocabulary.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from exactserve.runtime.errors import UnsupportedError
from exactserve.runtime.tokenizer import unicode as uni
from exactserve.runtime.tokenizer.bpe import BPE
from exactserve.runtime.tokenizer.special import SpecialPartitioner
from exactserve.runtime.tokenizer.spm import SPACE, SPM
from exactserve.runtime.tokenizer.stream import StreamDecoder
from exactserve.runtime.tokenizer.vocab import (
    ATTR_BYTE,
    ATTR_CONTROL,
    ATTR_NORMAL,
    ATTR_UNKNOWN,
    ATTR_USER_DEFINED,
    Vocab,
    load_vocab,
)
from exactserve.runtime.tokenizer.wpm import WPM

_RENDERED_AS_TEXT = ATTR_UNKNOWN | ATTR_CONTROL | ATTR_USER_DEFINED
_SPACE_BEFORE_PUNCT = re.compile(rb" (?=[?!.,])")
_SPACE_BEFORE_CONTRACTION = re.compile(rb" (?='(?:s|m|re|ve))")


class Tokenizer:
    """Encodes and decodes text for one GGUF vocabulary. Immutable apart from internal
    caches; safe to share between threads."""

    def __init__(self, vocab: Vocab) -> None:
        self.vocab = vocab
        self._partitioner = SpecialPartitioner(vocab)
        if vocab.type == "SPM":
            self._engine: SPM | BPE | WPM = SPM(vocab)
        elif vocab.type == "BPE":
            self._engine = BPE(vocab)
        else:
            self._engine = WPM(vocab)
        self._pieces: dict[int, bytes] = {}

    @classmethod
    def from_metadata(cls, metadata: Mapping[str, Any]) -> Tokenizer:
        """Build from GGUF metadata (as `GGUFFile.metadata` holds it)."""
        return cls(load_vocab(metadata))

    @classmethod
    def from_gguf(cls, gguf_file: Any) -> Tokenizer:
        """Build from a GGUF file: a path, or an open `runtime.gguf_file.GGUFFile`."""
        if isinstance(gguf_file, (str, Path)):
            from exactserve.runtime.gguf_file import open_gguf

            with open_gguf(gguf_file) as opened:
                return cls.from_metadata(opened.metadata)
        return cls.from_metadata(gguf_file.metadata)

    # -- vocabulary facts ---------------------------------------------------------------

    @property
    def vocab_size(self) -> int:
        return self.vocab.num_tokens

    @property
    def bos_id(self) -> int | None:
        return self.vocab.ids["bos"]

    @property
    def eos_id(self) -> int | None:
        return self.vocab.ids["eos"]

    @property
    def eot_id(self) -> int | None:
        return self.vocab.ids["eot"]

    @property
    def unk_id(self) -> int | None:
        return self.vocab.ids["unk"]

    @property
    def pad_id(self) -> int | None:
        return self.vocab.ids["pad"]

    @property
    def eog_ids(self) -> frozenset[int]:
        """Tokens that end generation (llama.cpp's special_eog_ids: eos, eot, eom, ...)."""
        return self.vocab.eog_ids

    @property
    def add_bos(self) -> bool:
        return self.vocab.add_bos

    @property
    def add_eos(self) -> bool:
        return self.vocab.add_eos

    def is_eog(self, token_id: int) -> bool:
        return token_id in self.vocab.eog_ids

    def is_control(self, token_id: int) -> bool:
        return bool(self._attr(token_id) & ATTR_CONTROL)

    def is_special(self, token_id: int) -> bool:
        """Control, user-defined or unknown: the tokens the special partition knows."""
        return bool(self._attr(token_id) & _RENDERED_AS_TEXT)

    def token_text(self, token_id: int) -> str:
        """The token's text as stored in the vocabulary (e.g. "▁the", "Ġthe", "<0x0A>")."""
        self._attr(token_id)
        return self.vocab.tokens[token_id]

    def control_token_texts(self) -> list[str]:
        """Texts that only `parse_special=True` turns into tokens (control and unknown
        tokens), longest first."""
        return [
            self.vocab.tokens[i]
            for i in self.vocab.special_ids
            if self.vocab.attr(i) & (ATTR_CONTROL | ATTR_UNKNOWN)
        ]

    # -- encoding -----------------------------------------------------------------------

    def encode(
        self, text: str, *, add_special: bool = True, parse_special: bool = False
    ) -> list[int]:
        """llama_tokenize(text, add_special, parse_special). `add_special` adds BOS/EOS as
        the vocabulary asks (WordPiece: CLS and SEP); `parse_special` lets control-token
        texts in `text` become those tokens (user-defined tokens always do)."""
        vocab = self.vocab
        out: list[int] = []
        fragments = self._partitioner.partition(text, parse_special)
        if vocab.type == "WPM":
            if add_special:
                out.append(self._required("bos"))
            for fragment in fragments:
                out += self._engine.tokenize(fragment) if isinstance(fragment, str) else [fragment]
            if add_special:
                out.append(self._required("sep"))
            return out
        if add_special and vocab.add_bos:
            out.append(self._required("bos"))
        is_prev_special = True  # SPM: a space prefix goes before the first raw fragment
        for fragment in fragments:
            if isinstance(fragment, int):
                out.append(fragment)
                is_prev_special = True
                continue
            if vocab.type == "SPM":
                if vocab.add_space_prefix and is_prev_special:
                    fragment = " " + fragment
                fragment = fragment.replace(" ", SPACE)
            elif vocab.escape_whitespaces:
                fragment = fragment.replace(" ", SPACE)
            out += self._engine.tokenize(fragment)
            is_prev_special = False
        if add_special and vocab.add_eos:
            out.append(self._required("eos"))
        return out

    def _required(self, name: str) -> int:
        token_id = self.vocab.ids[name]
        if token_id is None:
            raise UnsupportedError(
                f"the vocabulary asks for a {name.upper()} token but defines none; "
                "encode with add_special=False"
            )
        return token_id

    # -- decoding -----------------------------------------------------------------------

    def _attr(self, token_id: int) -> int:
        if not 0 <= token_id < self.vocab.num_tokens:
            raise ValueError(
                f"token id {token_id} is outside the vocabulary [0, {self.vocab_size})"
            )
        return self.vocab.attr(token_id)

    def token_to_piece(self, token_id: int, *, special: bool = True, lstrip: int = 0) -> bytes:
        """llama_token_to_piece: the bytes this token stands for. Control and unknown
        tokens render as their text when `special`, as nothing otherwise; `lstrip` drops
        up to that many leading spaces."""
        attr = self._attr(token_id)
        if not special and attr & (ATTR_UNKNOWN | ATTR_CONTROL):
            return b""
        piece = self._pieces.get(token_id)
        if piece is None:
            piece = self._pieces[token_id] = self._render(token_id, attr)
        for _ in range(lstrip):
            if not piece.startswith(b" "):
                break
            piece = piece[1:]
        return piece

    def _render(self, token_id: int, attr: int) -> bytes:
        """llama.cpp's token_to_piece with special=true (its piece cache)."""
        vocab = self.vocab
        text = vocab.tokens[token_id]
        if attr & _RENDERED_AS_TEXT:
            return text.encode("utf-8", "surrogateescape")
        if attr & ATTR_NORMAL:
            if vocab.type != "BPE" or vocab.escape_whitespaces:
                return text.replace(SPACE, " ").encode("utf-8", "surrogateescape")
            return _decode_byte_level(text)
        if attr & ATTR_BYTE and vocab.type in ("SPM", "BPE"):
            return bytes([int(text[3:5], 16)])
        return b""

    def detokenize(
        self, ids: Iterable[int], *, remove_special: bool = False, unparse_special: bool = True
    ) -> bytes:
        """llama_detokenize: the pieces joined, with the first piece's space prefix removed
        (SPM), BOS/EOS dropped when `remove_special`, and BPE's clean-up of spaces before
        punctuation and contractions."""
        vocab = self.vocab
        ids = list(ids)
        remove_space = vocab.add_space_prefix
        if remove_special and vocab.add_bos and ids and ids[0] == vocab.ids["bos"]:
            remove_space = False
            ids = ids[1:]
        if remove_special and vocab.add_eos and ids and ids[-1] == vocab.ids["eos"]:
            ids = ids[:-1]
        parts = []
        for token_id in ids:
            parts.append(
                self.token_to_piece(token_id, special=unparse_special, lstrip=int(remove_space))
            )
            remove_space = False
        data = b"".join(parts)
        return _clean_spaces(data) if vocab.clean_spaces else data

    def decode(self, ids: Iterable[int], *, skip_special: bool = False) -> str:
        """The text of `ids` (llama_detokenize, remove_special=False), invalid UTF-8
        replaced by U+FFFD. Control tokens render as their text unless `skip_special`."""
        data = self.detokenize(ids, remove_special=False, unparse_special=not skip_special)
        return data.decode("utf-8", errors="replace")

    def pieces(self, ids: Iterable[int]) -> list[str]:
        """Each token's piece (special tokens as their text), as UTF-8 with bytes that do not
        form a whole character shown as \\xNN escapes."""
        return [
            self.token_to_piece(i, special=True).decode("utf-8", "backslashreplace") for i in ids
        ]

    def stream_decoder(self, *, skip_special: bool = True) -> StreamDecoder:
        """A decoder for generated tokens, one at a time. Each token contributes its piece
        (llama-server's streaming: no space-prefix removal, no clean-up); control tokens
        contribute nothing unless `skip_special=False`."""
        return StreamDecoder(lambda i: self.token_to_piece(i, special=not skip_special))


def _decode_byte_level(text: str) -> bytes:
    """llama_decode_text: GPT-2 byte-level characters back to bytes."""
    to_byte = uni.unicode_to_byte()
    out = bytearray()
    for ch in text:
        byte = to_byte.get(ch)
        if byte is not None:
            out.append(byte)
            continue
        if 0xDC80 <= ord(ch) <= 0xDCFF:
            ch = "\ufffd"  # an invalid byte in the vocabulary reads as U+FFFD in llama.cpp
        utf8 = ch.encode("utf-8", "surrogatepass")
        out += b"[UNK_BYTE_0x" + utf8.hex().encode() + text.encode("utf-8", "surrogateescape")
        out += b"]"
    return bytes(out)


def _clean_spaces(data: bytes) -> bytes:
    """llama_detokenize's clean_spaces passes, in its order."""
    data = _SPACE_BEFORE_PUNCT.sub(b"", data)
    if b" ' " in data:
        data = _strip_lone_apostrophes(data)
    return _SPACE_BEFORE_CONTRACTION.sub(b"", data)


def _strip_lone_apostrophes(data: bytes) -> bytes:
    """Second pass: " ' " becomes "'"; the character after such a group is not treated
    as preceded by a space (llama.cpp overwrites that space with NUL and skips it)."""
    out = bytearray(data[:1])
    i, n = 1, len(data)
    prev = data[0] if n else 0
    while i < n:
        x = data[i]
        if x == 0x27 and i + 1 < n and prev == 0x20 and data[i + 1] == 0x20:
            out.pop()
            out.append(x)
            prev = 0  # the skipped space reads as NUL
            i += 2
            continue
        out.append(x)
        prev = x
        i += 1
    return bytes(out)
