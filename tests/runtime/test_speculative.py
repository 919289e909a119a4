"""Speculative decoding changes no bit: for greedy and seeded sampling, on tiny models of
every architecture, with prompt lookup and with a draft model, the generated token ids and
the logits behind every one of them are exactly plain decoding's, alone and inside the
scheduler beside plain requests. Planted bugs (accepting a guess the target did not choose,
sampling from the wrong row) must be caught by the same comparison."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T

import exactserve.runtime.generate as generate_module
import exactserve.runtime.scheduler as scheduler_module
from exactserve.reference.sampling import SamplingParams
from exactserve.runtime.generate import Generation, GenerationConfig
from exactserve.runtime.model import load_model
from exactserve.runtime.scheduler import Scheduler
from exactserve.runtime.speculative import NgramProposer, SpeculativeConfig
from exactserve.runtime.tokenizer import Tokenizer

pytestmark = pytest.mark.llama_cpp_data

ARCHS = ["llama", "qwen2", "qwen3", "gemma3"]
SAMPLINGS = {
    "greedy": SamplingParams(temperature=0),
    "seeded": SamplingParams(temperature=0.7, top_k=5, seed=3),
}


def _prompt(model, seed: int = 0) -> list[int]:
    """A repetitive prompt (code-editing-like), so prompt lookup finds matches."""
    rng = np.random.default_rng(seed)
    pattern = [int(t) for t in rng.integers(3, model.config.n_vocab, 9)]
    return pattern * 4 + pattern[:3]


def _run(model, tokenizer, prompt, config, draft=None):
    """(generation, text, the bits of every logits row a token was sampled from)."""
    generation = Generation(model, tokenizer, prompt, config, draft)
    rows = _observe(generation)
    text = "".join(d.text for d in generation)
    return generation, text, rows


def _observe(generation) -> list[np.ndarray]:
    rows: list[np.ndarray] = []
    generation.logits_observer = lambda logits: rows.append(logits.view(np.uint32).copy())
    return rows


def _same(a, b) -> bool:
    (ga, ta, ra), (gb, tb, rb) = a, b
    return (
        ga.token_ids == gb.token_ids
        and ta == tb
        and len(ra) == len(rb)
        and all(np.array_equal(x, y) for x, y in zip(ra, rb, strict=True))
    )


@pytest.fixture(scope="module", params=ARCHS)
def tiny(request, tiny_model):
    path = tiny_model(request.param, T.Q8_0)
    return load_model(path), Tokenizer.from_gguf(path), path


@pytest.mark.parametrize("sampling", list(SAMPLINGS), ids=list(SAMPLINGS))
def test_prompt_lookup_gives_plain_decodings_bits(tiny, sampling):
    model, tokenizer, _ = tiny
    prompt = _prompt(model)
    base = GenerationConfig(max_tokens=24, sampling=SAMPLINGS[sampling], ignore_eog=True)
    plain = _run(model, tokenizer, prompt, base)
    spec = GenerationConfig(**{**base.__dict__, "speculative": SpeculativeConfig("ngram", 4)})
    fast = _run(model, tokenizer, prompt, spec)
    assert _same(plain, fast)
    stats = fast[0].stats
    assert stats.num_draft_tokens > 0  # speculation really ran
    assert stats.num_decode_passes + 1 <= len(fast[0].token_ids)


@pytest.mark.parametrize("sampling", list(SAMPLINGS), ids=list(SAMPLINGS))
def test_a_draft_model_gives_plain_decodings_bits(tiny, tiny_model, sampling):
    model, tokenizer, path = tiny
    arch = path.name.split("-")[1]
    other = load_model(tiny_model(arch, T.Q8_0, seed=7))  # same vocabulary, other weights
    prompt = _prompt(model, seed=1)
    base = GenerationConfig(max_tokens=16, sampling=SAMPLINGS[sampling], ignore_eog=True)
    plain = _run(model, tokenizer, prompt, base)
    spec = GenerationConfig(**{**base.__dict__, "speculative": SpeculativeConfig("draft", 3)})
    for draft in (model, other):  # a perfect draft (all accepted) and a poor one
        fast = _run(model, tokenizer, prompt, spec, draft)
        assert _same(plain, fast)
        assert fast[0].stats.num_draft_tokens > 0
    perfect = _run(model, tokenizer, prompt, spec, model)[0].stats
    assert perfect.acceptance_rate == 1.0 and perfect.tokens_per_pass > 3


def test_mixed_speculative_and_plain_requests_in_one_scheduler(tiny):
    model, tokenizer, _ = tiny
    prompts = [_prompt(model, seed) for seed in range(4)]
    configs = [
        GenerationConfig(
            max_tokens=14,
            sampling=SAMPLINGS["seeded" if i % 2 else "greedy"],
            ignore_eog=True,
            speculative=SpeculativeConfig("ngram", 1 + i) if i != 2 else None,
        )
        for i in range(4)
    ]
    alone = []
    for prompt, config in zip(prompts, configs, strict=True):
        plain = GenerationConfig(**{**config.__dict__, "speculative": None})
        alone.append(_run(model, tokenizer, prompt, plain))
    scheduler = Scheduler(model, tokenizer, max_running=4, max_batch_tokens=64)
    requests = [scheduler.submit(p, c) for p, c in zip(prompts, configs, strict=True)]
    rows = [_observe(request.generation) for request in requests]
    scheduler.run()
    for i, request in enumerate(requests):
        together = (request.generation, request.text, rows[i])
        assert _same(alone[i], together), f"request {i}"
    assert sum(r.generation.stats.num_draft_tokens for r in requests) > 0


def _accept_every_guess(stream, rows, guesses, cache, proposer):
    """Planted bug: take the guesses without checking them against the target's choice."""
    g = stream.generation
    deltas = stream.accept(rows[0])
    for guess in guesses:
        if g.finish_reason is not None:
            break
        g.token_ids[-1:] = [g.token_ids[-1]]
        g.token_ids.append(guess)
        stream.context.append(guess)
    cache.truncate(len(stream.context) - 1)
    proposer.rollback(len(stream.context) - 1)
    return deltas


def _sample_from_the_wrong_row(stream, rows, guesses, cache, proposer):
    """Planted bug: row i + 1 for position i (one position late)."""
    from exactserve.runtime.speculative import verify

    return verify(stream, np.roll(rows, -1, axis=0), guesses, cache, proposer)


@pytest.mark.parametrize("bug", [_accept_every_guess, _sample_from_the_wrong_row])
def test_planted_bugs_are_caught(tiny_model, bug, monkeypatch):
    path = tiny_model("qwen2", T.Q8_0)
    model, tokenizer = load_model(path), Tokenizer.from_gguf(path)
    prompt = _prompt(model)
    base = GenerationConfig(max_tokens=24, sampling=SAMPLINGS["seeded"], ignore_eog=True)
    plain = _run(model, tokenizer, prompt, base)
    spec = GenerationConfig(**{**base.__dict__, "speculative": SpeculativeConfig("ngram", 4)})
    monkeypatch.setattr(generate_module, "verify", bug)
    monkeypatch.setattr(scheduler_module, "verify", bug)
    broken = _run(model, tokenizer, prompt, spec)
    assert not _same(plain, broken)


def test_prompt_lookup_proposes_what_followed_the_last_match():
    proposer = NgramProposer(max_ngram=3)
    assert proposer.propose([1, 2, 3, 4, 5, 1, 2, 3], 2) == [4, 5]
    assert proposer.propose([7, 1, 9, 1], 3) == [9, 1]  # 1-gram; stops at the context end
    assert proposer.propose([1, 2, 3], 4) == []
    assert proposer.propose([5, 6, 5, 6, 7, 5, 6], 1) == [7]  # the most recent occurrence


def test_bad_speculative_settings_fail_clearly(tiny_model):
    with pytest.raises(ValueError, match="must be one of ngram, draft"):
        SpeculativeConfig("magic")
    with pytest.raises(ValueError, match="draft_tokens must be in 1..16"):
        SpeculativeConfig("ngram", 0)
    llama = load_model(tiny_model("llama", T.Q8_0))
    qwen = load_model(tiny_model("qwen2", T.Q8_0))
    with pytest.raises(ValueError, match="must share the target's vocabulary"):
        Scheduler(qwen, None, draft_model=llama)
    config = GenerationConfig(speculative=SpeculativeConfig("draft"))
    with pytest.raises(ValueError, match="needs a draft model"):
        Generation(qwen, None, [1, 2], config)
