"""Single-request generation: prompt -> prefill -> decode with a KV cache -> sampler ->
streaming detokenisation -> stop on end-of-generation, max tokens or a stop string.

`Generation` is an iterator of `TextDelta`s; once exhausted, `finish_reason`,
`token_ids` and `stats` describe the run. Each draw passes the full context (prompt then
generated tokens) to `reference.sampling.sample_token`, so the draw's position is the new
token's absolute position and penalties see the prompt, as docs/SAMPLING.md specifies.

Stop strings are matched on the decoded text. Text that could still be the start of a
stop string is held back until it cannot, so a stop string never reaches the caller, even
when it spans several tokens; the text before it does.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from exactserve.reference.sampling import SamplingParams, sample_token
from exactserve.runtime.speculative import (
    SpeculativeConfig,
    check_draft_model,
    draft_budget,
    new_proposer,
    verify,
)


class CausalLM(Protocol):
    """What generation needs from a model (runtime.model)."""

    @property
    def context_length(self) -> int: ...

    def new_cache(self, prompt: Sequence[int] | None = None) -> AbstractContextManager[Any]:
        """A cache for `prompt`: empty, or already holding a reused prefix of it (its
        `length` says how much). Leaving its `with` block releases it."""
        ...

    def forward(self, cache: object, tokens: Sequence[int]) -> np.ndarray:
        """Appends `tokens` to `cache`; returns the float32 logits of the last one."""
        ...

    def logits_all(self, cache: object, tokens: Sequence[int]) -> np.ndarray:
        """Appends `tokens` to `cache`; returns the logits of every one [n, n_vocab]."""
        ...


class StreamDecoder(Protocol):
    def feed(self, token_id: int) -> str: ...

    def flush(self) -> str: ...


class GenerationTokenizer(Protocol):
    """What generation needs from runtime.tokenizer.Tokenizer."""

    @property
    def eog_ids(self) -> frozenset[int] | set[int]: ...

    def stream_decoder(self) -> StreamDecoder: ...


MAX_TOP_LOGPROBS = 20


@dataclass(frozen=True)
class GenerationConfig:
    """`logprobs`: None records none; n records each generated token's log-probability and
    the n most likely tokens at its position (docs/SAMPLING.md, log-probabilities).
    `speculative`: decode speculatively (runtime.speculative); the output is the same."""

    max_tokens: int = 128
    sampling: SamplingParams = field(default_factory=SamplingParams)
    stop: tuple[str, ...] = ()
    ignore_eog: bool = False
    logprobs: int | None = None
    speculative: SpeculativeConfig | None = None

    def __post_init__(self) -> None:
        if self.max_tokens < 0:
            raise ValueError(f"max_tokens must be >= 0, got {self.max_tokens}")
        if any(not s for s in self.stop):
            raise ValueError("stop strings must be non-empty")
        if self.logprobs is not None and not 0 <= self.logprobs <= MAX_TOP_LOGPROBS:
            raise ValueError(f"logprobs must be in 0..{MAX_TOP_LOGPROBS}, got {self.logprobs}")


@dataclass(frozen=True)
class TokenLogprob:
    """A token's log-probability under the model's own distribution at its position (the
    raw logits: before bias, penalties, temperature and truncation), and the `top` most
    likely tokens there as (token id, log-probability), most likely first."""

    token_id: int
    logprob: float
    top: tuple[tuple[int, float], ...] = ()


def token_logprobs(logits: np.ndarray, tokens: Sequence[int], top_n: int) -> list[TokenLogprob]:
    """TokenLogprob of `tokens[i]` under `logits[i]` (float32 [len(tokens), n_vocab])."""
    from exactserve.reference.logprobs import log_softmax, top_logprobs

    out = []
    for row, token in zip(log_softmax(logits), tokens, strict=True):
        top = tuple(top_logprobs(row, top_n)) if top_n else ()
        out.append(TokenLogprob(int(token), float(row[token]), top))
    return out


@dataclass(frozen=True)
class TextDelta:
    """New text to show; `token_id` is the token whose decoding released it (or None)."""

    text: str
    token_id: int | None


@dataclass
class GenerationStats:
    num_prompt_tokens: int = 0
    num_reused_prompt_tokens: int = 0  # taken from the prefix cache, not computed
    prefill_seconds: float = 0.0
    num_generated: int = 0
    decode_seconds: float = 0.0  # from the first generated token to the last
    num_decode_passes: int = 0  # target forward passes after the prefill
    num_draft_tokens: int = 0  # speculative guesses verified
    num_accepted_draft_tokens: int = 0  # guesses equal to the target's own choice

    @property
    def acceptance_rate(self) -> float:
        """Share of speculative guesses the target accepted (0 without speculation)."""
        return (
            self.num_accepted_draft_tokens / self.num_draft_tokens if self.num_draft_tokens else 0.0
        )

    @property
    def tokens_per_pass(self) -> float:
        """Generated tokens per decode forward pass (1 without speculation)."""
        steps = self.num_generated - 1  # the first token comes from the prefill
        return steps / self.num_decode_passes if self.num_decode_passes else 0.0

    @property
    def prefill_tokens_per_second(self) -> float:
        """Computed prompt tokens per second (reused ones took no time)."""
        computed = self.num_prompt_tokens - self.num_reused_prompt_tokens
        return computed / self.prefill_seconds if self.prefill_seconds else 0.0

    @property
    def decode_tokens_per_second(self) -> float:
        steps = self.num_generated - 1  # the first token comes from the prefill's logits
        return steps / self.decode_seconds if steps > 0 and self.decode_seconds else 0.0


class StopMatcher:
    """Finds stop strings in streamed text; holds back what could begin one."""

    def __init__(self, stop: Sequence[str]) -> None:
        self.stop = tuple(stop)
        self.pending = ""
        self.matched: str | None = None  # the stop string found, once one is

    def push(self, text: str) -> tuple[str, bool]:
        """Adds text; returns (text safe to emit, whether a stop string was found)."""
        self.pending += text
        hits = [(i, s) for s in self.stop if (i := self.pending.find(s)) >= 0]
        if hits:
            at, self.matched = min(hits)
            emit, self.pending = self.pending[:at], ""
            return emit, True
        keep = self._held_back_length()
        emit = self.pending[: len(self.pending) - keep]
        self.pending = self.pending[len(self.pending) - keep :]
        return emit, False

    def flush(self) -> str:
        emit, self.pending = self.pending, ""
        return emit

    def _held_back_length(self) -> int:
        """Length of the longest suffix of pending that is a proper prefix of a stop string."""
        longest = 0
        for s in self.stop:
            for n in range(min(len(s) - 1, len(self.pending)), longest, -1):
                if self.pending.endswith(s[:n]):
                    longest = n
                    break
        return longest


class Generation:
    """One request's generation; iterate it for text. Owns its KV cache (released when the
    iteration ends, or is abandoned and closed), reads the model."""

    def __init__(
        self,
        model: CausalLM,
        tokenizer: GenerationTokenizer,
        prompt: Sequence[int],
        config: GenerationConfig,
        draft_model: Any | None = None,
    ) -> None:
        """`draft_model`: the proposer's model when config.speculative.method is "draft"."""
        if not prompt:
            raise ValueError("the prompt must hold at least one token")
        if len(prompt) >= model.context_length:
            raise ValueError(
                f"the prompt has {len(prompt)} tokens; the model's context holds "
                f"{model.context_length}, leaving no room to generate"
            )
        self.model, self.tokenizer, self.config = model, tokenizer, config
        self.draft_model = draft_model
        if config.speculative is not None and config.speculative.method == "draft":
            if draft_model is None:
                raise ValueError("speculative decoding with method 'draft' needs a draft model")
            check_draft_model(model, draft_model)
        self.prompt = list(prompt)
        self.token_ids: list[int] = []
        self.logprobs: list[TokenLogprob] = []  # one per token id when config.logprobs is set
        self.finish_reason: str | None = None  # "stop" (EOG or stop string) or "length"
        self.stop_string: str | None = None  # the stop string that ended it, if one did
        # called with every logits row a token is sampled from (conformance checks)
        self.logits_observer: Callable[[np.ndarray], None] | None = None
        self.stats = GenerationStats(num_prompt_tokens=len(self.prompt))

    def __iter__(self) -> Iterator[TextDelta]:
        if self.config.max_tokens == 0:
            self.finish_reason = "length"
            return
        with self.model.new_cache(self.prompt) as cache:
            yield from self._run(cache)

    def _run(self, cache: Any) -> Iterator[TextDelta]:
        self.stats.num_reused_prompt_tokens = reused = cache.length
        started = time.perf_counter()
        logits = self.model.forward(cache, self.prompt[reused:])
        self.stats.prefill_seconds = time.perf_counter() - started
        stream = TokenStream(self)
        spec = self.config.speculative
        proposer = (
            new_proposer(spec, self.draft_model, self.config.sampling) if spec is not None else None
        )
        try:
            deltas = stream.accept(logits)
            first_token_at = time.perf_counter()
            while True:
                self.stats.decode_seconds = time.perf_counter() - first_token_at
                self.stats.num_generated = len(self.token_ids)
                yield from deltas
                if self.finish_reason is not None:
                    return
                guesses = []
                if proposer is not None:
                    guesses = proposer.propose(stream.context, draft_budget(spec, self))
                self.stats.num_decode_passes += 1
                if guesses:
                    rows = self.model.logits_all(cache, self.token_ids[-1:] + guesses)
                    deltas = verify(stream, rows, guesses, cache, proposer)
                else:
                    deltas = stream.accept(self.model.forward(cache, self.token_ids[-1:]))
        finally:
            if proposer is not None:
                proposer.close()


class TokenStream:
    """Turns one request's successive logits into tokens and text: samples (the draw's
    position is the new token's absolute position), records the token on `generation`,
    and applies end-of-generation, stop strings, max_tokens and the context length. The
    one place these rules live: `Generation` and `runtime.scheduler` both drive it."""

    def __init__(self, generation: Generation) -> None:
        self.generation = generation
        self.context = list(generation.prompt)
        self._eog = frozenset(generation.tokenizer.eog_ids)
        self._decoder = generation.tokenizer.stream_decoder()
        self._stops = StopMatcher(generation.config.stop)

    def accept(self, logits: np.ndarray) -> list[TextDelta]:
        """Sample the next token from `logits` [n_vocab]; return the text it releases. When
        the request is done, sets `generation.finish_reason` (text held back included)."""
        g, config = self.generation, self.generation.config
        if g.logits_observer is not None:
            g.logits_observer(logits)
        token = sample_token(logits, config.sampling, self.context)
        g.token_ids.append(token)
        if config.logprobs is not None:
            g.logprobs += token_logprobs(logits[None], [token], config.logprobs)
        self.context.append(token)
        if token in self._eog and not config.ignore_eog:
            g.finish_reason = "stop"
            return self._flush()
        text, stopped = self._stops.push(self._decoder.feed(token))
        deltas = [TextDelta(text, token)] if text else []
        if stopped:
            g.finish_reason, g.stop_string = "stop", self._stops.matched
        elif len(g.token_ids) >= config.max_tokens or len(self.context) >= (g.model.context_length):
            g.finish_reason = "length"
            deltas += self._flush()
        return deltas

    def _flush(self) -> list[TextDelta]:
        text, stopped = self._stops.push(self._decoder.flush())
        text += "" if stopped else self._stops.flush()
        if stopped:
            self.generation.finish_reason = "stop"
            self.generation.stop_string = self._stops.matched
        return [TextDelta(text, None)] if text else []


def generate_text(
    model: CausalLM,
    tokenizer: GenerationTokenizer,
    prompt: Sequence[int],
    config: GenerationConfig,
) -> tuple[str, Generation]:
    """Runs a generation to the end; returns its whole text and the finished Generation."""
    generation = Generation(model, tokenizer, prompt, config)
    text = "".join(delta.text for delta in generation)
    return text, generation
