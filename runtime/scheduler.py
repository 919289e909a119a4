"""Continuous batching: many requests share each forward pass of one model.

Every `step` runs one `forward_batch` holding, for each running request, either its last
sampled token (decode) or the next chunk of its prompt (chunked prefill, at most
`prefill_chunk` tokens), within a budget of `max_batch_tokens` new tokens per step.
Decode steps are served first, then prompt chunks, oldest request first; waiting requests
join, in submission order, as running ones finish (at most `max_running` at once).

Because the contract's logits do not depend on the batch, on how a prompt is chunked, or on
a reused prefix (docs/PRECISION.md 9), and a seeded draw depends only on its logits, seed
and position (docs/SAMPLING.md), every request produces exactly the tokens and text it
would produce alone (`runtime.generate.Generation`), whatever else is scheduled with it;
tests/runtime/test_scheduler.py checks this. The rules after each token (end of
generation, stop strings, max_tokens, context length) are `runtime.generate.TokenStream`'s.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

from exactserve.runtime.generate import (
    Generation,
    GenerationConfig,
    GenerationTokenizer,
    TextDelta,
    TokenLogprob,
    TokenStream,
    token_logprobs,
)
from exactserve.runtime.model import Model, SequenceInput
from exactserve.runtime.speculative import (
    Proposer,
    check_draft_model,
    draft_budget,
    new_proposer,
    verify,
)


class ScheduledRequest:
    """One request in a `Scheduler`. `deltas` grows as text is released; `finish_reason`
    is set ("stop" or "length") when it is done; `generation` holds its token ids (and
    their logprobs when its config asks). `error` is the exception of a forward pass that
    ended it early, `cancelled` says `Scheduler.cancel` ended it (finish_reason stays None
    for both). With `prompt_logprobs`, `prompt_logprobs[i]` is prompt token i's
    TokenLogprob (None for token 0, which has no context)."""

    def __init__(self, generation: Generation, prompt_logprobs: bool = False) -> None:
        self.generation = generation
        self.deltas: list[TextDelta] = []
        self.error: BaseException | None = None
        self.cancelled = False
        self.cache: Any = None
        self.stream: TokenStream | None = None  # set once the prompt is in
        self.proposer: Proposer | None = None  # speculative guesses, if its config asks
        self.guesses: list[int] = []  # those the current pass verifies
        self.prompt_logprobs: list[TokenLogprob | None] | None = [None] if prompt_logprobs else None

    @property
    def is_done(self) -> bool:
        return self.finish_reason is not None or self.error is not None or self.cancelled

    @property
    def finish_reason(self) -> str | None:
        return self.generation.finish_reason

    @property
    def token_ids(self) -> list[int]:
        return self.generation.token_ids

    @property
    def text(self) -> str:
        return "".join(d.text for d in self.deltas)


class Scheduler:
    """Runs submitted requests on `model` in shared batches; see the module docstring."""

    def __init__(
        self,
        model: Model,
        tokenizer: GenerationTokenizer,
        *,
        max_running: int = 8,
        max_batch_tokens: int = 256,
        prefill_chunk: int = 128,
        draft_model: Model | None = None,
    ) -> None:
        """`draft_model`: for requests whose config asks for speculative method "draft"."""
        if min(max_running, max_batch_tokens, prefill_chunk) < 1:
            raise ValueError("max_running, max_batch_tokens and prefill_chunk must be >= 1")
        self.model, self.tokenizer = model, tokenizer
        self.max_running, self.max_batch_tokens = max_running, max_batch_tokens
        self.prefill_chunk = prefill_chunk
        self.draft_model = draft_model
        if draft_model is not None:
            check_draft_model(model, draft_model)
        self.waiting: deque[ScheduledRequest] = deque()
        self.running: list[ScheduledRequest] = []

    def submit(
        self, prompt: Sequence[int], config: GenerationConfig, *, prompt_logprobs: bool = False
    ) -> ScheduledRequest:
        """Queue a request (validated as `Generation` validates it: ValueError for an empty
        prompt or one that fills the context). `prompt_logprobs` also records every prompt
        token's logprob (with config.logprobs top tokens); such a request computes its
        whole prompt, never taking a prefix from the prefix cache."""
        generation = Generation(self.model, self.tokenizer, prompt, config, self.draft_model)
        request = ScheduledRequest(generation, prompt_logprobs)
        if config.max_tokens == 0 and not prompt_logprobs:
            request.generation.finish_reason = "length"
        else:
            self.waiting.append(request)
        return request

    def cancel(self, request: ScheduledRequest) -> None:
        """End `request` now: a waiting one leaves the queue, a running one releases its KV
        blocks at once. Nothing happens to a request that is already done."""
        if request.is_done:
            return
        request.cancelled = True
        if request in self.waiting:
            self.waiting.remove(request)
        elif request in self.running:
            self._retire(request)

    @property
    def has_work(self) -> bool:
        return bool(self.waiting or self.running)

    def run(self) -> None:
        """Step until every submitted request is done."""
        while self.has_work:
            self.step()

    def step(self) -> list[ScheduledRequest]:
        """One forward pass over the running requests' next tokens; returns the requests it
        held. If the pass raises, each request in it ends with that `error` and its cache
        released, and it re-raises; the other running and waiting requests go on."""
        self._admit()
        plan = self._plan()
        if not plan:
            return []
        batch = [SequenceInput(r.cache, tokens, logits) for r, tokens, logits in plan]
        try:
            results = self.model.forward_batch(batch)
        except BaseException as exc:
            for request, _, _ in plan:  # a failed pass leaves no request half-run
                request.error = exc
                self._retire(request)
            raise
        for (request, tokens, logits), out in zip(plan, results, strict=True):
            if request.prompt_logprobs is not None and request.stream is None:
                self._record_prompt_logprobs(request, tokens, out)
            if logits != "none":
                self._accept(request, out)
        return [request for request, _, _ in plan]

    def _retire(self, request: ScheduledRequest) -> None:
        """Release a running request's KV blocks (and its proposer's) and drop it."""
        request.cache.release()
        if request.proposer is not None:
            request.proposer.close()
        self.running.remove(request)

    def _admit(self) -> None:
        while self.waiting and len(self.running) < self.max_running:
            request = self.waiting.popleft()
            g = request.generation
            reuse = request.prompt_logprobs is None
            request.cache = self.model.new_cache(g.prompt if reuse else None)
            g.stats.num_reused_prompt_tokens = request.cache.length
            if g.config.speculative is not None:
                request.proposer = new_proposer(
                    g.config.speculative, self.draft_model, g.config.sampling
                )
            self.running.append(request)

    def _plan(self) -> list[tuple[ScheduledRequest, list[int], str]]:
        """(request, new tokens, logits mode) for this step: decodes, then prompt chunks."""
        budget = self.max_batch_tokens
        plan = []
        for request in self.running:
            if request.stream is not None and budget > 0:
                request.guesses = self._guesses(request, budget - 1)
                mode = "all" if request.guesses else "last"
                plan.append((request, request.token_ids[-1:] + request.guesses, mode))
                budget -= 1 + len(request.guesses)
        for request in self.running:
            if request.stream is None and budget > 0:
                prompt, fed = request.generation.prompt, request.cache.length
                n = min(self.prefill_chunk, budget, len(prompt) - fed)
                chunk = prompt[fed : fed + n]
                is_last = fed + n == len(prompt)
                if request.prompt_logprobs is not None:
                    plan.append((request, chunk, "all"))
                else:
                    plan.append((request, chunk, "last" if is_last else "none"))
                budget -= n
        return plan

    def _record_prompt_logprobs(self, request: ScheduledRequest, chunk: list[int], out) -> None:
        """Row i of a prompt chunk's logits predicts the prompt token after chunk[i]; the
        last prompt position's row predicts the first generated token instead."""
        g = request.generation
        start = request.cache.length - len(chunk)  # the chunk's first position
        following = g.prompt[start + 1 : start + 1 + len(chunk)]
        top_n = g.config.logprobs or 0
        request.prompt_logprobs += token_logprobs(out[: len(following)], following, top_n)
        if len(request.prompt_logprobs) == len(g.prompt) and g.config.max_tokens == 0:
            g.finish_reason = "length"
            self._retire(request)

    def _guesses(self, request: ScheduledRequest, budget: int) -> list[int]:
        """Speculative guesses for this pass (none without a proposer or budget)."""
        spec = request.generation.config.speculative
        if request.proposer is None or budget <= 0:
            return []
        k = min(budget, draft_budget(spec, request.generation))
        return request.proposer.propose(request.stream.context, k) if k else []

    def _accept(self, request: ScheduledRequest, out) -> None:
        """Take a pass's logits rows for `request`: the first token after its prompt, one
        decoded token, or the verification of its speculative guesses."""
        g = request.generation
        if g.finish_reason is not None:  # only its prompt's logprobs were asked for
            return
        if request.cache.length < len(g.prompt):  # a prompt chunk that is not the last
            return
        if request.stream is None:  # the prompt is in: first token
            request.stream = TokenStream(g)
            request.deltas += request.stream.accept(out[-1])
        else:
            g.stats.num_decode_passes += 1
            if request.guesses:
                stream, cache, proposer = request.stream, request.cache, request.proposer
                request.deltas += verify(stream, out, request.guesses, cache, proposer)
            else:
                request.deltas += request.stream.accept(out[-1])
        g.stats.num_generated = len(g.token_ids)
        if g.finish_reason is not None:
            self._retire(request)
