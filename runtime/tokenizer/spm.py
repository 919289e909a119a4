"""SentencePiece-style BPE as llama.cpp's llm_tokenizer_spm_session (src/llama-vocab.cpp).

The fragment (spaces already escaped to U+2581 "▁") is split into characters; adjacent
pairs whose concatenation is a token are merged, always the pair whose token has the
highest score first (the leftmost on ties); characters left over that are not tokens
become their UTF-8 bytes' <0xXX> tokens.

llama.cpp runs this over the whole fragment. We cut the fragment into chunks and cache
each chunk's tokens, which is exact under one condition we check against the vocabulary:
we cut only before a "▁" whose preceding character c is neither "▁" nor a character that
precedes "▁" inside some token. Then no token spans a cut, so no merge ever crosses it;
each chunk's merges are decided by its own pairs only, and the order in which chunks are
interleaved in llama.cpp's single queue cannot change any chunk's result.

llama.cpp reads tokenizer.ggml.remove_extra_whitespaces but applies it only to UGM (T5)
vocabularies; SentencePiece-style tokenization keeps every space, and so does this one.
"""

from __future__ import annotations

import heapq
import re
from itertools import chain

import numpy as np

from exactserve.runtime.errors import UnsupportedError
from exactserve.runtime.tokenizer.memo import Memo
from exactserve.runtime.tokenizer.vocab import Vocab

SPACE = "\u2581"
_SHORT_CHUNK = 48  # longer chunks merge through a priority queue (O(n log n))
_NO_TOKEN = float("-inf")


def _joining_chars(tokens: list[str]) -> set[str]:
    """Characters c (other than ▁) such that some token contains c followed by ▁."""
    # Joined with NUL, a NUL read as the preceding character may be the separator; keep it
    # only if a token really contains NUL followed by ▁.
    parts = "\0".join(tokens).split(SPACE)
    found = {part[-1] for part in parts[:-1] if part}
    if "\0" in found and "\0" + SPACE not in "\n".join(tokens):
        found.discard("\0")
    return found


class SPM:
    """Tokenizes escaped raw-text fragments. Owns a chunk cache."""

    def __init__(self, vocab: Vocab) -> None:
        self.vocab = vocab
        joining = "".join(sorted(_joining_chars(vocab.tokens)))
        if joining:
            body = f"(?:[^{SPACE}{re.escape(joining)}]|[{re.escape(joining)}]{SPACE}*)*"
        else:
            body = f"[^{SPACE}]*"
        self._chunk = re.compile(f"{SPACE}*{body}")
        self._cache = Memo(self._tokenize_chunk)
        self._scores: list[float] = vocab.scores.tolist()
        # The list-based merge uses -inf to mean "not a token".
        self._scores_are_finite = bool(np.isfinite(vocab.scores).all())

    def tokenize(self, text: str) -> list[int]:
        chunks = filter(None, self._chunk.findall(text))
        return list(chain.from_iterable(map(self._cache.__getitem__, chunks)))

    def _tokenize_chunk(self, text: str) -> list[int]:
        symbols = self._merge(list(text))
        token_to_id = self.vocab.token_to_id
        out: list[int] = []
        for symbol in symbols:
            token = token_to_id.get(symbol)
            if token is not None:
                out.append(token)
            else:
                # Merged symbols are always tokens, so this is a single character;
                # llama.cpp's rev_merge lookup cannot find it and falls back to bytes.
                out += self._byte_tokens(symbol)
        return out

    def _merge(self, symbols: list[str]) -> list[str]:
        """llama.cpp's work queue always takes, among the current adjacent pairs whose
        concatenation is a token, the one of highest score, leftmost on ties."""
        if len(symbols) > _SHORT_CHUNK or not self._scores_are_finite:
            return self._merge_queue(symbols)
        get = self.vocab.token_to_id.get
        scores = self._scores

        def score(a: str, b: str) -> float:
            token = get(a + b)
            return _NO_TOKEN if token is None else scores[token]

        pair_scores = [score(a, b) for a, b in zip(symbols, symbols[1:], strict=False)]
        while pair_scores:
            best = max(pair_scores)
            if best == _NO_TOKEN:
                break
            i = pair_scores.index(best)
            symbols[i : i + 2] = [symbols[i] + symbols[i + 1]]
            del pair_scores[i]
            if i > 0:
                pair_scores[i - 1] = score(symbols[i - 1], symbols[i])
            if i < len(pair_scores):
                pair_scores[i] = score(symbols[i], symbols[i + 1])
        return symbols

    def _merge_queue(self, symbols: list[str]) -> list[str]:
        """The same merges with llama.cpp's priority queue (for long chunks)."""
        token_to_id = self.vocab.token_to_id
        scores = self._scores
        n = len(symbols)
        nxt = list(range(1, n + 1))
        nxt[-1] = -1
        prv = list(range(-1, n - 1))
        # Entries (-score, left, right, merged text): the highest score pops first, then
        # the lowest left index.
        heap: list[tuple[float, int, int, str]] = []

        def push(left: int, right: int) -> None:
            merged = symbols[left] + symbols[right]
            token = token_to_id.get(merged)
            if token is not None:
                heapq.heappush(heap, (-scores[token], left, right, merged))

        for i in range(n - 1):
            push(i, i + 1)
        while heap:
            _, left, right, merged = heapq.heappop(heap)
            # Stale if either side is gone or has grown since the entry was queued (sizes
            # only grow, so an equal total length means both are unchanged).
            if not symbols[left] or not symbols[right]:
                continue
            if len(symbols[left]) + len(symbols[right]) != len(merged):
                continue
            symbols[left] = merged
            symbols[right] = ""
            after = nxt[right]
            nxt[left] = after
            if after >= 0:
                prv[after] = left
            if prv[left] >= 0:
                push(prv[left], left)
            if after >= 0:
                push(left, after)
        return [s for s in symbols if s]

    def _byte_tokens(self, char: str) -> list[int]:
        out = []
        for byte in char.encode("utf-8", "surrogatepass"):
            token = self.vocab.byte_token(byte)
            if token is None:
                raise UnsupportedError(
                    f"the vocabulary has no token for byte 0x{byte:02X} (of {char!r}) and "
                    "no <0xXX> byte tokens; llama.cpp fails on this input too"
                )
            out.append(token)
        return out
