"""The engine loop: one thread owns the model and its scheduler; HTTP handlers talk to it
through a thread-safe bridge.

    engine = Engine(model, tokenizer, max_running=8)
    engine.start()
    handle = engine.submit(prompt_ids, GenerationConfig(...))   # from the event loop
    async for event in handle:                                   # Delta ..., then Finished
        ...
    handle.cancel()                                              # e.g. the client went away

The thread sleeps on a condition while there is nothing to do (no busy-wait). Each of its
iterations takes the submissions and cancellations that arrived, runs one
`Scheduler.step`, and hands every request's new text, tokens and logprobs to that request's
asyncio queue with `loop.call_soon_threadsafe`. Cancellation happens at the next step
boundary and releases the request's KV blocks there. A forward pass that raises ends only
the requests in that pass (each gets a `Finished` with the error); the loop goes on.

Routes never touch the model: they submit token ids and read events. A test can drive the
engine without a socket.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass

from exactserve.runtime.generate import GenerationConfig, TokenLogprob
from exactserve.runtime.model import Model
from exactserve.runtime.scheduler import ScheduledRequest, Scheduler

log = logging.getLogger("exactserve.engine")


@dataclass(frozen=True)
class Delta:
    """Text released by one step, the tokens generated since the last Delta and, when
    asked for, their logprobs (one per token)."""

    text: str
    token_ids: tuple[int, ...]
    logprobs: tuple[TokenLogprob, ...]


@dataclass(frozen=True)
class Finished:
    """The request's last event. `finish_reason` is "stop", "length", "cancelled" or
    "error" (then `error` says what failed)."""

    finish_reason: str
    num_prompt_tokens: int
    num_cached_tokens: int
    num_generated: int
    prompt_logprobs: tuple[TokenLogprob | None, ...] | None = None
    error: str | None = None
    stop_string: str | None = None  # the stop string that ended it, if one did


Event = Delta | Finished


class EngineStopped(RuntimeError):
    """The engine is shutting down and takes no more requests."""


class RequestHandle:
    """One submitted request, as its HTTP handler sees it: an async iterator of events.
    Owned by the handler; the engine thread only ever calls `_push` through the loop."""

    def __init__(self, engine: Engine, request_id: int, loop: asyncio.AbstractEventLoop):
        self.engine = engine
        self.id = request_id
        self.loop = loop
        self.queue: asyncio.Queue[Event] = asyncio.Queue()
        self.finished: Finished | None = None

    def cancel(self) -> None:
        """Ask the engine to end this request; harmless once it has finished."""
        if self.finished is None:
            self.engine._cancel(self)

    def __aiter__(self) -> AsyncIterator[Event]:
        return self._events()

    async def _events(self) -> AsyncIterator[Event]:
        while True:
            event = await self.queue.get()
            if isinstance(event, Finished):
                self.finished = event
            yield event
            if isinstance(event, Finished):
                return

    def _push(self, event: Event) -> None:
        """Engine thread -> event loop. A closed loop (server shut down) drops it."""
        try:
            self.loop.call_soon_threadsafe(self.queue.put_nowait, event)
        except RuntimeError:
            pass


@dataclass
class _Live:
    """Engine-thread bookkeeping of one running handle: how much has been handed over."""

    handle: RequestHandle
    request: ScheduledRequest
    n_deltas: int = 0
    n_tokens: int = 0


class Engine:
    """Owns `model` and a `Scheduler` over it, run by one thread (`start`)."""

    def __init__(
        self,
        model: Model,
        tokenizer,
        *,
        max_running: int = 8,
        max_batch_tokens: int = 256,
        prefill_chunk: int = 128,
        draft_model: Model | None = None,
    ) -> None:
        """`draft_model`: the proposer for requests decoding with speculative "draft"."""
        self.model = model
        self.tokenizer = tokenizer
        self.scheduler = Scheduler(
            model,
            tokenizer,
            max_running=max_running,
            max_batch_tokens=max_batch_tokens,
            prefill_chunk=prefill_chunk,
            draft_model=draft_model,
        )
        self._cond = threading.Condition()
        self._inbox: list[tuple[str, RequestHandle, tuple]] = []
        self._live: dict[int, _Live] = {}
        self._ids = itertools.count(1)
        self._stopping = False
        self._thread: threading.Thread | None = None
        self.counters = EngineCounters()
        self._snapshot = self._take_snapshot()

    # -- called from the event loop ---------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="exactserve-engine", daemon=True)
        self._thread.start()

    def submit(
        self,
        prompt: Sequence[int],
        config: GenerationConfig,
        *,
        prompt_logprobs: bool = False,
    ) -> RequestHandle:
        """Queue a request from a coroutine; its events arrive on the returned handle.
        Raises EngineStopped during shutdown. Validation errors of the prompt (empty, too
        long) arrive as a Finished event with finish_reason "error"; callers check lengths
        first to answer 400."""
        loop = asyncio.get_running_loop()
        handle = RequestHandle(self, next(self._ids), loop)
        with self._cond:
            if self._stopping:
                raise EngineStopped("the server is shutting down")
            self._inbox.append(("submit", handle, (list(prompt), config, prompt_logprobs)))
            self._cond.notify()
        return handle

    def _cancel(self, handle: RequestHandle) -> None:
        with self._cond:
            self._inbox.append(("cancel", handle, ()))
            self._cond.notify()

    def stop(self, timeout: float | None = 10.0) -> None:
        """End every request (each gets Finished "cancelled") and the thread."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join(timeout)

    @property
    def is_running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    # -- the engine thread ------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cond:
                while not (self._inbox or self.scheduler.has_work or self._stopping):
                    self._cond.wait()
                inbox, self._inbox = self._inbox, []
                stopping = self._stopping
            for kind, handle, args in inbox:
                if kind == "submit":
                    self._admit(handle, *args)
                else:
                    self._cancel_now(handle)
            if stopping:
                for live in list(self._live.values()):
                    self._cancel_now(live.handle)
                return
            try:
                if self.scheduler.has_work:
                    self._step()
                self._snapshot = self._take_snapshot()
            except Exception as exc:  # a bug outside the forward pass: end, never hang
                log.exception("the engine loop failed; its requests end with an error")
                self._fail_all(exc)

    def _fail_all(self, exc: Exception) -> None:
        """End every live request with `exc` (each gets Finished "error") and keep going."""
        for live in list(self._live.values()):
            self.scheduler.cancel(live.request)  # releases its blocks
            live.request.cancelled, live.request.error = False, exc
            self._publish(live)

    def _admit(
        self, handle: RequestHandle, prompt: list[int], config, prompt_logprobs: bool
    ) -> None:
        try:
            request = self.scheduler.submit(prompt, config, prompt_logprobs=prompt_logprobs)
        except ValueError as exc:
            handle._push(Finished("error", len(prompt), 0, 0, error=str(exc)))
            return
        self.counters.requests += 1
        self.counters.prompt_tokens += len(prompt)
        self._live[handle.id] = _Live(handle, request)
        self._publish(self._live[handle.id])

    def _cancel_now(self, handle: RequestHandle) -> None:
        live = self._live.get(handle.id)
        if live is None:
            return
        self.scheduler.cancel(live.request)
        self._publish(live)

    def _step(self) -> None:
        try:
            self.scheduler.step()
        except Exception as exc:
            if not any(live.request.error is exc for live in self._live.values()):
                raise  # not a failed forward pass: the loop's handler ends every request
            log.exception("a forward pass failed; the requests in it end with an error")
            self.counters.failed_passes += 1
        self.counters.steps += 1
        for live in list(self._live.values()):
            self._publish(live)

    def _publish(self, live: _Live) -> None:
        """Hand over what `live.request` produced since the last call; Finished when done."""
        request, g = live.request, live.request.generation
        new_deltas = request.deltas[live.n_deltas :]
        new_tokens = g.token_ids[live.n_tokens :]
        if new_deltas or new_tokens:
            logprobs = tuple(g.logprobs[live.n_tokens :]) if g.config.logprobs is not None else ()
            text = "".join(d.text for d in new_deltas)
            live.handle._push(Delta(text, tuple(new_tokens), logprobs))
            self.counters.generated_tokens += len(new_tokens)
            live.n_deltas, live.n_tokens = len(request.deltas), len(g.token_ids)
        if not request.is_done:
            return
        if request.error is not None:
            reason, error = "error", f"{type(request.error).__name__}: {request.error}"
        elif request.cancelled:
            reason, error = "cancelled", None
            self.counters.cancelled += 1
        else:
            reason, error = request.finish_reason, None
        prompt_logprobs = (
            tuple(request.prompt_logprobs) if request.prompt_logprobs is not None else None
        )
        live.handle._push(
            Finished(
                reason,
                len(g.prompt),
                g.stats.num_reused_prompt_tokens,
                len(g.token_ids),
                prompt_logprobs,
                error,
                g.stop_string,
            )
        )
        self.counters.cached_tokens += g.stats.num_reused_prompt_tokens
        self.counters.draft_tokens += g.stats.num_draft_tokens
        self.counters.accepted_draft_tokens += g.stats.num_accepted_draft_tokens
        del self._live[live.handle.id]

    # -- state for /metrics -----------------------------------------------------------------

    def snapshot(self) -> EngineSnapshot:
        """Queue and pool sizes as of the engine thread's last iteration; any thread may
        read it (the engine thread replaces it whole, never mutates it)."""
        return self._snapshot

    def _take_snapshot(self) -> EngineSnapshot:
        """Engine thread only: the prefix cache and pool change under any other reader."""
        pool = self.model.kv_pool
        cache = pool.prefix_cache
        cached_only = 0
        if cache is not None:
            refs = pool.allocator.refcount
            cached_only = sum(1 for block in cache.blocks() if refs(block) == 1)
        return EngineSnapshot(
            waiting=len(self.scheduler.waiting),
            running=len(self.scheduler.running),
            kv_blocks_total=pool.allocator.n_blocks,
            kv_blocks_free=pool.allocator.n_free,
            kv_blocks_cached=cached_only,
        )


@dataclass
class EngineCounters:
    """Monotonic counts for /metrics, written by the engine thread only."""

    requests: int = 0
    prompt_tokens: int = 0
    generated_tokens: int = 0
    cached_tokens: int = 0  # prompt tokens taken from the prefix cache
    cancelled: int = 0
    draft_tokens: int = 0  # speculative guesses verified
    accepted_draft_tokens: int = 0  # of those, equal to the target's own choice
    steps: int = 0
    failed_passes: int = 0


@dataclass(frozen=True)
class EngineSnapshot:
    waiting: int
    running: int
    kv_blocks_total: int
    kv_blocks_free: int
    kv_blocks_cached: int  # held only by the prefix cache, reusable by later prompts

    @property
    def kv_blocks_used(self) -> int:
        """Blocks held by requests (in use and not merely cached)."""
        return self.kv_blocks_total - self.kv_blocks_free - self.kv_blocks_cached
