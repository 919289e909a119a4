"""Byte-level BPE as llama.cpp's llm_tokenizer_bpe_session (src/llama-vocab.cpp).

A fragment is split into words by the pre-tokenizer; each word is byte-encoded (GPT-2
style) unless the vocabulary uses raw UTF-8 (Gemma 4), split into characters, and merged
pairwise, always the adjacent pair of lowest merge rank first (the leftmost on ties). A
word's tokens depend on nothing but the word, so they are cached per word.
"""

from __future__ import annotations

import heapq
from itertools import chain

from exactserve.runtime.tokenizer.memo import Memo
from exactserve.runtime.tokenizer.pretokenize import PreTokenizer, byte_encode
from exactserve.runtime.tokenizer.vocab import Vocab

_SHORT_WORD = 48  # longer words merge through a priority queue (O(n log n))
_NO_RANK = 1 << 62  # larger than any merge rank


class BPE:
    """Tokenizes raw-text fragments. Owns a word cache; safe to share between threads
    (a race at worst computes a word twice)."""

    def __init__(self, vocab: Vocab) -> None:
        self.vocab = vocab
        self.pre = PreTokenizer(vocab.pre_type)
        self._is_gemma4 = vocab.pre_type == "GEMMA4"
        self._cache = Memo(self._word)

    def tokenize(self, text: str) -> list[int]:
        """Token ids of one raw-text fragment (whitespace already escaped if the
        vocabulary escapes it)."""
        return list(chain.from_iterable(map(self._cache.__getitem__, self.pre.split(text))))

    def _word(self, raw_word: str) -> list[int]:
        vocab = self.vocab
        word = byte_encode(raw_word) if self.pre.byte_encode else raw_word
        whole = vocab.token_to_id.get(word)
        if whole is not None and (
            vocab.ignore_merges or (self._is_gemma4 and not word.strip("\n"))
        ):
            return [whole]
        out: list[int] = []
        for piece in self._merge(list(word)):
            found = vocab.token_to_id.get(piece)
            if found is not None:
                out.append(found)
            else:
                out += self._bytes_fallback(piece)
        return out

    def _merge(self, symbols: list[str]) -> list[str]:
        """Merge one word's symbols: llama.cpp's work queue always takes, among the current
        adjacent pairs that have a merge rank, the one of lowest (rank, position)."""
        if len(symbols) > _SHORT_WORD:
            return self._merge_queue(symbols)
        ranks = self.vocab.merge_ranks
        pair_ranks = [
            ranks.get(a + " " + b, _NO_RANK) for a, b in zip(symbols, symbols[1:], strict=False)
        ]
        while pair_ranks:
            best = min(pair_ranks)
            if best == _NO_RANK:
                break
            i = pair_ranks.index(best)  # the leftmost pair of that rank
            symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]
            del pair_ranks[i]
            if i > 0:
                pair_ranks[i - 1] = ranks.get(symbols[i - 1] + " " + symbols[i], _NO_RANK)
            if i < len(pair_ranks):
                pair_ranks[i] = ranks.get(symbols[i] + " " + symbols[i + 1], _NO_RANK)
        return symbols

    def _merge_queue(self, symbols: list[str]) -> list[str]:
        """The same merges with llama.cpp's priority queue (for long words): pop the bigram
        of lowest (rank, left index); skip it if either side changed since it was queued."""
        ranks = self.vocab.merge_ranks
        n = len(symbols)
        nxt = list(range(1, n + 1))
        nxt[-1] = -1
        prv = list(range(-1, n - 1))
        heap = []
        for i in range(n - 1):
            rank = ranks.get(symbols[i] + " " + symbols[i + 1])
            if rank is not None:
                heap.append((rank, i, i + 1, symbols[i] + symbols[i + 1]))
        heapq.heapify(heap)
        while heap:
            _, left, right, merged = heapq.heappop(heap)
            if not symbols[left] or not symbols[right] or symbols[left] + symbols[right] != merged:
                continue
            symbols[left] = merged
            symbols[right] = ""
            after = nxt[right]
            nxt[left] = after
            if after >= 0:
                prv[after] = left
            before = prv[left]
            if before >= 0:
                rank = ranks.get(symbols[before] + " " + merged)
                if rank is not None:
                    heapq.heappush(heap, (rank, before, left, symbols[before] + merged))
            if after >= 0:
                rank = ranks.get(merged + " " + symbols[after])
                if rank is not None:
                    heapq.heappush(heap, (rank, left, after, merged + symbols[after]))
        return [s for s in symbols if s]

    def _bytes_fallback(self, piece: str) -> list[int]:
        """A merged symbol that is not a token: one token per UTF-8 byte of its text, if
        the vocabulary has one (a one-byte text, or <0xXX> without byte encoding); bytes
        without a token are dropped, as llama.cpp drops them."""
        lookup = self.vocab.token_to_id.get
        out = []
        for byte in piece.encode("utf-8", "surrogateescape"):
            if not self.pre.byte_encode:
                found = lookup(f"<0x{byte:02X}>")
            else:
                # A lone byte >= 0x80 is invalid UTF-8; a vocabulary holding it as a token
                # text reads back (gguf_file) as the surrogate escape of that byte.
                found = lookup(chr(byte) if byte < 0x80 else chr(0xDC00 + byte))
            if found is not None:
                out.append(found)
        return out
