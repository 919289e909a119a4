"""runtime.scheduler: requests batched together, prompts chunked, prefixes reused, arrivals
staggered; every request must give exactly the tokens, text, finish reason and logits bits
of every step it gives alone (runtime.generate), because the contract's logits do not
depend on any of that. A planted batch-dependent one-ulp change must be caught."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T

from exactserve.reference.sampling import SamplingParams
from exactserve.runtime.generate import Generation, GenerationConfig, generate_text
from exactserve.runtime.model import Model, load_model
from exactserve.runtime.scheduler import Scheduler
from exactserve.runtime.tokenizer import Tokenizer

pytestmark = pytest.mark.llama_cpp_data

PROMPT_LENGTHS = [5, 40, 90, 17, 3, 130, 40]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from exactserve.runtime.tiny_model import tiny_spec, write_tiny_model

    spec = tiny_spec("gemma3", T.Q8_0, vocab="llama-spm")  # sliding-window layers
    path = write_tiny_model(tmp_path_factory.mktemp("scheduler") / spec.file_name, spec)
    model, tokenizer = load_model(path), Tokenizer.from_gguf(path)
    rng = np.random.default_rng(0)
    prompts = [list(rng.integers(3, model.config.n_vocab, n)) for n in PROMPT_LENGTHS]
    prompts[6][:32] = prompts[5][:32]  # a shared prefix, for the prefix cache
    configs = [
        GenerationConfig(max_tokens=12, sampling=SamplingParams(temperature=0)),
        GenerationConfig(max_tokens=9, sampling=SamplingParams(temperature=0.8, seed=1)),
        GenerationConfig(max_tokens=7, sampling=SamplingParams(top_k=40, seed=2)),
        GenerationConfig(max_tokens=0),
        GenerationConfig(max_tokens=10, sampling=SamplingParams(min_p=0.05, seed=3)),
        GenerationConfig(max_tokens=8, sampling=SamplingParams(temperature=0), ignore_eog=True),
        GenerationConfig(max_tokens=6, sampling=SamplingParams(repeat_penalty=1.3, seed=4)),
    ]
    alone = [generate_text(model, tokenizer, p, c) for p, c in zip(prompts, configs, strict=True)]
    # a stop string the first request really meets: its text must end early
    text = alone[0][0]
    stop = GenerationConfig(
        max_tokens=12, sampling=SamplingParams(temperature=0), stop=(text[3:5],)
    )
    prompts.append(prompts[0])
    configs.append(stop)
    alone.append(generate_text(model, tokenizer, prompts[0], stop))
    assert alone[-1][1].finish_reason == "stop" and len(alone[-1][0]) < len(text)
    return model, tokenizer, prompts, configs, alone


def outcome(text: str, generation) -> tuple:
    return generation.token_ids, generation.finish_reason, text


@pytest.mark.parametrize(
    "max_running, max_batch_tokens, prefill_chunk",
    [(1, 1000, 1000), (3, 16, 7), (8, 64, 64), (8, 9, 4)],
)
def test_every_request_gets_what_it_gets_alone(setup, max_running, max_batch_tokens, prefill_chunk):
    model, tokenizer, prompts, configs, alone = setup
    sizes = []
    forward_batch = model.forward_batch

    def recording(batch):
        sizes.append(len(batch))
        return forward_batch(batch)

    model.forward_batch = recording
    try:
        scheduler = Scheduler(
            model, tokenizer, max_running=max_running, max_batch_tokens=max_batch_tokens,
            prefill_chunk=prefill_chunk,
        )  # fmt: skip
        requests = [scheduler.submit(p, c) for p, c in zip(prompts[:4], configs[:4], strict=True)]
        for _ in range(3):  # the rest arrive while the first ones run
            scheduler.step()
        requests += [scheduler.submit(p, c) for p, c in zip(prompts[4:], configs[4:], strict=True)]
        scheduler.run()
    finally:
        del model.forward_batch
    for i, request in enumerate(requests):
        assert outcome(request.text, request.generation) == outcome(*alone[i]), f"request {i}"
    assert (max(sizes) > 1) == (max_running > 1)  # really batched when allowed
    assert model.kv_pool.n_blocks_in_use == 0  # every cache released


def test_prefix_reuse_inside_the_scheduler(setup):
    base, tokenizer, prompts, configs, alone = setup
    model = Model(base.config, base.weights, prefix_cache_blocks=64)
    scheduler = Scheduler(model, tokenizer, max_running=1)  # one at a time: later ones reuse
    requests = [scheduler.submit(p, c) for p, c in zip(prompts, configs, strict=True)]
    scheduler.run()
    for i, request in enumerate(requests):
        assert outcome(request.text, request.generation) == outcome(*alone[i]), f"request {i}"
    reused = [r.generation.stats.num_reused_prompt_tokens for r in requests]
    # 6 shares 32 tokens (two blocks) with 5; 7 repeats 0, whose 5 tokens fill no block
    assert reused == [0, 0, 0, 0, 0, 0, 32, 0]


def test_a_failed_pass_ends_the_running_requests_and_frees_their_blocks(setup):
    base, tokenizer, prompts, configs, alone = setup
    model = Model(base.config, base.weights)
    scheduler = Scheduler(model, tokenizer, max_running=2)
    first = [scheduler.submit(p, c) for p, c in zip(prompts[:3], configs[:3], strict=True)]
    scheduler.step()
    model.forward_batch = lambda batch: (_ for _ in ()).throw(MemoryError("device full"))
    with pytest.raises(MemoryError, match="device full"):
        scheduler.step()
    del model.forward_batch
    assert [type(r.error) for r in first] == [MemoryError, MemoryError, type(None)]
    assert model.kv_pool.n_blocks_in_use == 0 and not scheduler.running
    scheduler.run()  # the waiting request still runs, and as it would alone
    assert outcome(first[2].text, first[2].generation) == outcome(*alone[2])


def test_bad_settings_and_requests_fail_clearly(setup):
    model, tokenizer, *_ = setup
    with pytest.raises(ValueError, match="must be >= 1"):
        Scheduler(model, tokenizer, prefill_chunk=0)
    scheduler = Scheduler(model, tokenizer)
    with pytest.raises(ValueError, match="at least one token"):
        scheduler.submit([], GenerationConfig())
    with pytest.raises(ValueError, match="leaving no room to generate"):
        scheduler.submit([1] * model.context_length, GenerationConfig())
    assert not scheduler.has_work


def _rows_of_every_step(model, tokenizer, prompts, configs, scheduled: bool):
    """Each request's logits rows, in the order its tokens were sampled, as uint32 bits."""
    rows = []
    if scheduled:
        scheduler = Scheduler(
            model, tokenizer, max_running=8, max_batch_tokens=48, prefill_chunk=16
        )
        generations = [
            scheduler.submit(p, c).generation for p, c in zip(prompts, configs, strict=True)
        ]
    else:
        generations = [
            Generation(model, tokenizer, p, c) for p, c in zip(prompts, configs, strict=True)
        ]
    for g in generations:
        rows.append([])
        g.logits_observer = lambda logits, out=rows[-1]: out.append(logits.view(np.uint32).copy())
    if scheduled:
        scheduler.run()
    else:
        for g in generations:
            for _ in g:
                pass
    return [g.token_ids for g in generations], rows


def test_every_step_has_the_bits_it_has_alone_and_a_planted_ulp_is_caught(setup):
    base, tokenizer, prompts, configs, _ = setup
    model = Model(base.config, base.weights)
    alone = _rows_of_every_step(model, tokenizer, prompts, configs, scheduled=False)
    together = _rows_of_every_step(model, tokenizer, prompts, configs, scheduled=True)
    assert together[0] == alone[0]
    for i, (a, b) in enumerate(zip(alone[1], together[1], strict=True)):
        assert len(a) == len(b) and all(np.array_equal(x, y) for x, y in zip(a, b, strict=True)), i

    forward_batch = model.forward_batch

    def batch_dependent(batch):  # one ulp up whenever a pass holds several sequences
        out = forward_batch(batch)
        return [np.nextafter(o, np.float32(np.inf)) for o in out] if len(batch) > 1 else out

    model.forward_batch = batch_dependent
    planted = _rows_of_every_step(model, tokenizer, prompts, configs, scheduled=True)
    assert any(
        not np.array_equal(x, y)
        for a, b in zip(alone[1], planted[1], strict=True)
        for x, y in zip(a, b, strict=False)
    )
