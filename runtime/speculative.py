"""Speculative decoding that changes no bit (docs/SAMPLING.md, speculative decoding).

A proposer guesses the next k tokens; one forward pass of the target model computes the
logits of the last token and of every guess (`logits="all"`). Because the contract's logits
do not depend on how many positions a pass holds (docs/PRECISION.md 9), row i holds exactly
the logits plain decoding would compute at that position, given that the guesses before it
are the tokens plain decoding chose. `accept_verified` then makes the target's own choice
at each row in order (TokenStream: greedy, or the seeded draw keyed by (seed, position)) and
keeps going only while that choice equals the guess. So the output (tokens, text, logprobs)
is plain decoding's, bit for bit, whatever the proposer guesses; a good proposer only makes
it faster. Rejected positions are cut from the cache before anything can read them.

Proposers (`Proposer`): `NgramProposer` (prompt lookup: the tokens that followed the most
recent earlier occurrence of the context's last n-gram, no second model) and
`DraftModelProposer` (greedy tokens of a small model with the same vocabulary, with a KV
cache of its own that is rolled back in step).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from exactserve.reference.sampling import SamplingParams, sample_token

SPECULATIVE_METHODS = ("ngram", "draft")
MAX_DRAFT_TOKENS = 16


@dataclass(frozen=True)
class SpeculativeConfig:
    """`method` "ngram" or "draft"; `draft_tokens` guesses per pass (k); `max_ngram` the
    longest n-gram prompt lookup matches."""

    method: str = "ngram"
    draft_tokens: int = 4
    max_ngram: int = 3

    def __post_init__(self) -> None:
        if self.method not in SPECULATIVE_METHODS:
            raise ValueError(
                f"speculative method must be one of {', '.join(SPECULATIVE_METHODS)}, "
                f"got {self.method!r}"
            )
        if not 1 <= self.draft_tokens <= MAX_DRAFT_TOKENS:
            raise ValueError(
                f"draft_tokens must be in 1..{MAX_DRAFT_TOKENS}, got {self.draft_tokens}"
            )
        if self.max_ngram < 1:
            raise ValueError(f"max_ngram must be >= 1, got {self.max_ngram}")


class Proposer(Protocol):
    def propose(self, context: Sequence[int], k: int) -> list[int]:
        """Up to `k` guesses for the tokens after `context` (possibly none)."""
        ...

    def rollback(self, length: int) -> None:
        """The first `length` tokens of the last context are verified; forget the rest."""
        ...

    def close(self) -> None: ...


class NgramProposer:
    """Prompt lookup: find the context's last n tokens (n = max_ngram down to 1) earlier in
    the context and propose what followed their most recent earlier occurrence."""

    def __init__(self, max_ngram: int = 3) -> None:
        self.max_ngram = max_ngram

    def propose(self, context: Sequence[int], k: int) -> list[int]:
        tokens = np.asarray(context, dtype=np.int64)
        n_tokens = len(tokens)
        for n in range(min(self.max_ngram, n_tokens - 1), 0, -1):
            tail = tokens[n_tokens - n :]
            windows = np.lib.stride_tricks.sliding_window_view(tokens[: n_tokens - 1], n)
            hits = np.flatnonzero((windows == tail).all(axis=1))
            if len(hits):
                start = int(hits[-1]) + n
                return [int(t) for t in tokens[start : start + k]]
        return []

    def rollback(self, length: int) -> None:
        pass

    def close(self) -> None:
        pass


class DraftModelProposer:
    """Guesses of a draft model sharing the target's vocabulary, drawn with the request's
    own sampling parameters and (seed, position) keys, so a draft that agrees with the
    target guesses exactly what the target will choose. Its cache holds a prefix of the
    context; `propose` feeds what is missing, then k steps."""

    def __init__(self, draft_model: Any, sampling: SamplingParams) -> None:
        self.model = draft_model
        self.sampling = sampling
        self.cache = draft_model.new_cache()

    def propose(self, context: Sequence[int], k: int) -> list[int]:
        k = min(k, self.model.context_length - len(context) - 1)
        if k <= 0:
            return []
        cache = self.cache
        known = cache.length
        if list(cache.tokens[:known]) != list(context[:known]):
            cache.truncate(0)
            known = 0
        if known == len(context):  # keep one token to feed, for its logits
            cache.truncate(known - 1)
            known -= 1
        logits = self.model.forward(cache, list(context[known:]))
        guesses: list[int] = []
        for step in range(k):
            token = sample_token(logits, self.sampling, [*context, *guesses])
            guesses.append(token)
            if step + 1 < k:
                logits = self.model.forward(cache, [token])
        return guesses

    def rollback(self, length: int) -> None:
        if self.cache.length > length:
            self.cache.truncate(length)

    def close(self) -> None:
        self.cache.release()


def new_proposer(
    config: SpeculativeConfig, draft_model: Any | None, sampling: SamplingParams
) -> Proposer:
    if config.method == "draft":
        if draft_model is None:
            raise ValueError("speculative method 'draft' needs a draft model")
        return DraftModelProposer(draft_model, sampling)
    return NgramProposer(config.max_ngram)


def check_draft_model(target: Any, draft: Any) -> None:
    """A draft model must share the target's vocabulary size (token ids mean the same)."""
    if draft.config.n_vocab != target.config.n_vocab:
        raise ValueError(
            f"the draft model's vocabulary has {draft.config.n_vocab} tokens, the target's "
            f"{target.config.n_vocab}: a draft model must share the target's vocabulary"
        )


def draft_budget(config: SpeculativeConfig, generation: Any) -> int:
    """How many guesses a pass may verify: k, less near max_tokens or the context end
    (the pass yields at most guesses + 1 tokens)."""
    g = generation
    left = g.config.max_tokens - len(g.token_ids) - 1
    room = g.model.context_length - len(g.prompt) - len(g.token_ids) - 1
    return max(0, min(config.draft_tokens, left, room))


def verify(stream: Any, rows: np.ndarray, guesses: Sequence[int], cache: Any, proposer: Any):
    """Accept what the target's logits `rows` confirm (row i: the position after the i-th
    fed token, the last sampled token being fed first), cut every unverified position from
    the target's `cache` and the proposer, and count the pass in the generation's stats.
    Returns the released text deltas; the accepted tokens are on the generation."""
    g = stream.generation
    deltas, matched = [], 0
    for i, row in enumerate(rows):
        deltas += stream.accept(row)
        if g.finish_reason is not None or i == len(guesses) or g.token_ids[-1] != guesses[i]:
            break
        matched += 1
    verified = len(stream.context) - 1  # the newest token is fed by the next pass
    cache.truncate(verified)
    proposer.rollback(verified)
    g.stats.num_draft_tokens += len(guesses)
    g.stats.num_accepted_draft_tokens += matched
    return deltas
