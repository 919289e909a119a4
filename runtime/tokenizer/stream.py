"""Streaming detokenization that never emits half a UTF-8 character.

A byte-fallback tokenizer spells a character it has no token for as one token per UTF-8
byte (<0xE2><0x82><0xAC> for "€"); a byte-level BPE token can end inside a character. The
decoder keeps the trailing bytes of an unfinished character until the rest arrives, so
every string it returns is whole characters, and the concatenation of everything it
returns equals the one-shot UTF-8 decoding (errors replaced by U+FFFD) of all the pieces.
"""

from __future__ import annotations

import codecs
from collections.abc import Callable


class StreamDecoder:
    """Turns token ids into text incrementally. Owns its byte buffer; not thread-safe."""

    def __init__(self, token_to_piece: Callable[[int], bytes]) -> None:
        self._piece = token_to_piece
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def feed(self, token_id: int) -> str:
        """The text completed by this token (possibly empty)."""
        return self._decoder.decode(self._piece(token_id))

    def feed_bytes(self, data: bytes) -> str:
        return self._decoder.decode(data)

    def flush(self) -> str:
        """Whatever is still buffered; an unfinished character becomes U+FFFD. The decoder
        is empty (and reusable) afterwards."""
        text = self._decoder.decode(b"", final=True)
        self._decoder.reset()
        return text
