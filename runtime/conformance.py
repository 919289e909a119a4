"""The precision contract's promises, checked on this machine (`exactserve check`).

Each check runs the real model and compares float32 logits by their bits (never a
tolerance): a needle request alone against the same request in batches of other requests
at random positions; a prompt prefilled whole against chunked; cold against warm prefix
cache; plain against speculative decoding; the reference backend against Triton. A
negative control plants a batch-dependent one-ulp change and must be caught by the same
comparison, so a check that cannot fail would show.

`logits_digest` hashes the logits of fixed prompts and positions, so two machines (or a
machine and the pinned values in the repository) can compare bits without sharing files.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from exactserve.reference import CONTRACT_VERSION
from exactserve.reference.sampling import SamplingParams
from exactserve.runtime.generate import Generation, GenerationConfig
from exactserve.runtime.model import Model, SequenceInput
from exactserve.runtime.speculative import SpeculativeConfig

TEXTS = (
    "The precision contract fixes every floating-point operation and its order, so the "
    "same request gives the same logits on every machine.",
    "def area(width, height):\n    return width * height\n\n"
    "def area(width, height):\n    return width * height\n\ndef area(",
    "Water boils at a temperature of",
)
DIGEST_DECODE_STEPS = 3


@dataclass(frozen=True)
class CheckResult:
    name: str
    passed: bool
    compared: str  # what was compared, in words
    seconds: float
    detail: str = ""  # the first difference, when it failed


class Mismatch(Exception):
    """Two logits rows that should be identical differ."""


def same_bits(expected: np.ndarray, got: np.ndarray, what: str) -> None:
    """Raise Mismatch naming `what` and the first differing position unless bit-equal."""
    a = np.ascontiguousarray(expected, dtype=np.float32).view(np.uint32)
    b = np.ascontiguousarray(got, dtype=np.float32).view(np.uint32)
    if a.shape != b.shape:
        raise Mismatch(f"{what}: shapes {a.shape} and {b.shape} differ")
    diff = np.argwhere(a != b)
    if len(diff):
        where = tuple(int(i) for i in diff[0])
        raise Mismatch(
            f"{what}: {len(diff)} values differ, first at {where}: "
            f"{a.view(np.float32)[where]!r} vs {b.view(np.float32)[where]!r}"
        )


def prompts(tokenizer) -> list[list[int]]:
    return [tokenizer.encode(text, add_special=True) for text in TEXTS]


def _alone(model: Model, tokens: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """All prefill rows of `tokens` in a fresh cache, then one greedy decode row."""
    with model.new_cache() as cache:
        rows = model.logits_all(cache, tokens)
        decode = model.forward(cache, [int(np.argmax(rows[-1]))])
    return rows, decode


def check_batch(model: Model, needle: list[int], sizes: list[int], rng: random.Random) -> str:
    """The needle's prefill rows and first decode row in batches of `size` others."""
    rows, decode = _alone(model, needle)
    for size in sizes:
        others = [
            [rng.randrange(3, model.config.n_vocab) for _ in range(rng.randrange(1, 64))]
            for _ in range(size)
        ]
        position = rng.randrange(size + 1)
        prompts_ = others[:position] + [needle] + others[position:]
        caches = [model.new_cache() for _ in prompts_]
        try:
            batch = [
                SequenceInput(c, p, "all" if i == position else "last")
                for i, (c, p) in enumerate(zip(caches, prompts_, strict=True))
            ]
            out = model.forward_batch(batch)
            same_bits(rows, out[position], f"prefill among {size} others at position {position}")
            following = [[int(np.argmax(o[-1]))] for o in out]
            batch = [SequenceInput(c, t, "last") for c, t in zip(caches, following, strict=True)]
            out = model.forward_batch(batch)
            same_bits(decode, out[position][0], f"decode among {size} others")
        finally:
            for cache in caches:
                cache.release()
    return f"needle of {len(needle)} tokens, prefill + decode, batches of {sizes} others"


def check_chunks(model: Model, needle: list[int], chunk_sizes: list[int]) -> str:
    rows, _ = _alone(model, needle)
    for size in chunk_sizes:
        with model.new_cache() as cache:
            parts = [
                model.logits_all(cache, needle[i : i + size]) for i in range(0, len(needle), size)
            ]
        same_bits(rows, np.concatenate(parts), f"chunks of {size}")
    return f"{len(needle)} tokens whole vs chunks of {chunk_sizes}"


def check_prefix_cache(model: Model, shared: list[int], suffixes: list[list[int]]) -> str:
    """Cold vs warm for the same prompt, and a shared prefix with diverging suffixes."""
    cached = Model(model.config, model.weights, ops=model.ops, prefix_cache_blocks=64)
    for k, suffix in enumerate(suffixes):
        prompt = shared + suffix
        cold, _ = _alone(model, prompt)
        for attempt in ("first", "second"):
            with cached.new_cache(prompt) as cache:
                reused = cache.length
                rows = cached.logits_all(cache, prompt[reused:])
            if attempt == "second" and k == 0 and reused == 0:
                raise Mismatch("the prefix cache reused nothing: the check would be vacuous")
            same_bits(cold[reused:], rows, f"suffix {k}, {attempt} run ({reused} reused)")
    return f"{len(shared)}-token prefix, {len(suffixes)} suffixes, cold vs warm"


def check_speculative(
    model: Model, tokenizer, prompt: list[int], n_tokens: int, draft: Model | None
) -> str:
    """Token ids and every sampled-from logits row, plain vs speculative."""
    samplings = [SamplingParams(temperature=0), SamplingParams(temperature=0.7, seed=5)]
    methods = [("ngram", None)] + ([("draft", draft)] if draft is not None else [])
    accepted = 0
    for sampling in samplings:
        plain = _generate(model, tokenizer, prompt, n_tokens, sampling, None, None)
        for method, draft_model in methods:
            spec = SpeculativeConfig(method, 4)
            fast = _generate(model, tokenizer, prompt, n_tokens, sampling, spec, draft_model)
            if fast[0] != plain[0]:
                raise Mismatch(f"{method}: token ids {fast[0]} vs plain {plain[0]}")
            for i, (a, b) in enumerate(zip(plain[1], fast[1], strict=True)):
                same_bits(a, b, f"{method}, generated token {i}")
            accepted += fast[2]
    if not accepted:
        raise Mismatch("no guess was ever accepted: the check would be vacuous")
    names = " and ".join(m for m, _ in methods)
    return f"{n_tokens} tokens greedy and seeded, plain vs {names} ({accepted} guesses accepted)"


def _generate(model, tokenizer, prompt, n_tokens, sampling, spec, draft):
    config = GenerationConfig(
        max_tokens=n_tokens, sampling=sampling, ignore_eog=True, speculative=spec
    )
    generation = Generation(model, tokenizer, prompt, config, draft)
    rows: list[np.ndarray] = []
    generation.logits_observer = lambda logits: rows.append(np.array(logits, copy=True))
    for _ in generation:
        pass
    return generation.token_ids, rows, generation.stats.num_accepted_draft_tokens


def check_backends(reference: Model, triton: Model, tokens: list[int]) -> str:
    """Prefill rows and one decode row, reference vs Triton."""
    return _same_model_bits(reference, triton, tokens, "reference", triton.ops.name)


def check_cpu_matmul(compiled: Model, numpy_path: Model, tokens: list[int]) -> str:
    """Prefill rows and one decode row: the CPU engine's compiled matmul (runtime/cpu) vs
    the reference's own NumPy matmul, on this CPU."""
    return _same_model_bits(compiled, numpy_path, tokens, compiled.ops.matmul_variant, "numpy")


def _same_model_bits(a: Model, b: Model, tokens: list[int], name_a: str, name_b: str) -> str:
    rows, decode = _alone(a, tokens)
    other_rows, other_decode = _alone(b, tokens)
    same_bits(rows, other_rows, f"prefill, {name_a} vs {name_b}")
    same_bits(decode, other_decode, f"decode, {name_a} vs {name_b}")
    return f"{len(tokens)}-token prefill + decode, {name_a} vs {name_b}"


@dataclass
class _PlantedBatchDependence:
    """A model whose logits change by one ulp whenever a pass holds more than one sequence:
    the kind of batch-dependent reduction the contract forbids."""

    model: Model

    def __getattr__(self, name: str):
        return getattr(self.model, name)

    def forward_batch(self, batch):
        out = self.model.forward_batch(batch)
        if len(batch) > 1:
            out = [np.nextafter(o, np.float32(np.inf)) for o in out]
        return out

    def forward(self, cache, tokens):
        return self.forward_batch([SequenceInput(cache, tokens, "last")])[0][0]

    def logits_all(self, cache, tokens):
        return self.forward_batch([SequenceInput(cache, tokens, "all")])[0]


def check_negative_control(model: Model, needle: list[int], rng: random.Random) -> str:
    try:
        check_batch(_PlantedBatchDependence(model), needle, [2], rng)
    except Mismatch as exc:
        return f"a planted one-ulp batch dependence was detected ({exc})"
    raise Mismatch("a planted one-ulp batch dependence was NOT detected: the checks are blind")


def run_checks(
    model: Model,
    tokenizer,
    *,
    quick: bool,
    triton_pair: tuple[Model, Model, list[int]] | None,
    draft: Model | None = None,
    numpy_model: Model | None = None,
    progress: Callable[[str], None] | None = None,
) -> Iterator[CheckResult]:
    """Run every check in turn, yielding each result as it is known. `numpy_model`: the
    same file on the reference's NumPy matmul, for the CPU matmul row."""
    rng = random.Random(20261201)
    texts = prompts(tokenizer)
    needle = texts[0]
    plan: list[tuple[str, Callable[[], str]]] = [
        ("batch invariance", lambda: check_batch(model, needle, _sizes(quick), rng)),
        ("chunked prefill", lambda: check_chunks(model, needle, [1, 7, 64, len(needle)])),
        (
            "prefix cache",
            lambda: check_prefix_cache(model, texts[1] * 2, [texts[2], texts[0][1:9]]),
        ),
        (
            "speculative decoding",
            lambda: check_speculative(model, tokenizer, texts[1], 8 if quick else 24, draft),
        ),
    ]
    if numpy_model is not None:
        plan.append(("CPU matmul", lambda: check_cpu_matmul(model, numpy_model, needle)))
    if triton_pair is not None:
        plan.append(("backends", lambda: check_backends(*triton_pair)))
    plan.append(("negative control", lambda: check_negative_control(model, needle, rng)))
    for name, check in plan:
        if progress:
            progress(name)
        started = time.perf_counter()
        try:
            compared, passed, detail = check(), True, ""
        except Mismatch as exc:
            compared, passed, detail = "", False, str(exc)
        yield CheckResult(name, passed, compared, time.perf_counter() - started, detail)


def _sizes(quick: bool) -> list[int]:
    return [1, 3, 8] if quick else list(range(1, 9))


def logits_digest(model: Model, tokenizer, model_path: Path, model_sha256: str) -> dict:
    """SHA-256 over the float32 bits of the prefill rows and DIGEST_DECODE_STEPS greedy
    decode rows of every fixed prompt, with what decides them: the contract version, the
    model file's SHA-256 and the backend (the digest itself is backend-independent)."""
    total = hashlib.sha256()
    per_prompt = []
    for tokens in prompts(tokenizer):
        digest = hashlib.sha256()
        with model.new_cache() as cache:
            rows = model.logits_all(cache, tokens)
            digest.update(np.ascontiguousarray(rows, dtype=np.float32).tobytes())
            last = rows[-1]
            for _ in range(DIGEST_DECODE_STEPS):
                last = model.forward(cache, [int(np.argmax(last))])
                digest.update(np.ascontiguousarray(last, dtype=np.float32).tobytes())
        per_prompt.append(digest.hexdigest())
        total.update(digest.digest())
    return {
        "contract": CONTRACT_VERSION,
        "model": Path(model_path).name,
        "model_sha256": model_sha256,
        "backend": model.ops.name,
        "prompts": [len(t) for t in prompts(tokenizer)],
        "decode_steps": DIGEST_DECODE_STEPS,
        "per_prompt": per_prompt,
        "digest": total.hexdigest(),
    }
