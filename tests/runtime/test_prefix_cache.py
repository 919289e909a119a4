"""The prefix cache (runtime.model.prefix_cache): which blocks it keeps and finds, that a hash
collision cannot hand out a wrong block, eviction, and that warm requests get the logits of
cold ones bit for bit."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T

import exactserve.runtime.model.prefix_cache as prefix_module
from exactserve.reference.quantize import BlockFloat
from exactserve.runtime.kv_storage import KVShape, ReferenceKVStorage
from exactserve.runtime.model.cache import KVPool
from exactserve.runtime.model.prefix_cache import PrefixCache

SHAPE = KVShape(n_layers=1, n_kv_heads=1, head_dim=2, head_dim_v=2, block_size=4)


def setup(n_blocks: int = 8, max_blocks: int | None = None, cached: int | None = None):
    pool = KVPool(ReferenceKVStorage(SHAPE, n_blocks), max_blocks)
    pool.prefix_cache = PrefixCache(pool, cached)
    return pool, pool.prefix_cache


def run(pool, tokens):
    """A finished sequence over `tokens` (keys: the token ids), released into the cache."""
    cache = pool.new_sequence()
    cache.reserve(len(tokens))
    k = BlockFloat(
        np.repeat(np.asarray(tokens, float)[:, None, None], 2, axis=2), np.ones((len(tokens), 1))
    )
    pool.storage.write(0, cache.slots(0, len(tokens)), k, k)
    cache.commit(np.asarray(tokens))
    blocks = list(cache.block_table)
    cache.release()
    return blocks


def test_full_blocks_are_kept_on_release_and_found_by_prefix():
    pool, prefix = setup()
    blocks = run(pool, range(10))  # blocks of 0-3, 4-7 full; 8-9 partial
    assert len(prefix) == 2 and pool.n_blocks_in_use == 2
    assert prefix.match(range(12)) == blocks[:2]
    assert prefix.match([0, 1, 2, 3, 9, 9, 9, 9]) == blocks[:1]
    assert prefix.match([7, 1, 2, 3, 4, 5, 6, 7]) == []  # block 0 differs
    assert prefix.match(range(7)) == blocks[:1]  # only full blocks of the request count


def test_attach_shares_the_prefix_and_leaves_a_token_to_compute():
    pool, prefix = setup()
    blocks = run(pool, range(8))
    cache = pool.new_sequence()
    assert prefix.attach(cache, list(range(8))) == 4  # 8 would leave nothing to compute
    assert cache.block_table == blocks[:1] and list(cache.tokens) == [0, 1, 2, 3]
    assert pool.allocator.refcount(blocks[0]) == 2
    assert prefix.attach(pool.new_sequence(), list(range(9))) == 8
    with pytest.raises(ValueError, match="must be empty"):
        prefix.attach(cache, list(range(9)))


def test_a_block_continuing_a_different_prefix_is_a_different_block():
    pool, prefix = setup()
    run(pool, [1, 1, 1, 1, 5, 6, 7, 8])
    run(pool, [2, 2, 2, 2, 5, 6, 7, 8])  # the same second block after another first one
    assert len(prefix) == 4
    assert len(prefix.match([2, 2, 2, 2, 5, 6, 7, 8, 0])) == 2


def test_a_hash_collision_costs_a_miss_never_a_wrong_block(monkeypatch):
    class Constant:
        def __init__(self, data: bytes) -> None:
            pass

        def digest(self) -> bytes:
            return b"\0" * 32

    monkeypatch.setattr(prefix_module.hashlib, "sha256", Constant)
    pool, prefix = setup()
    run(pool, [1, 2, 3, 4])
    assert prefix.match([9, 9, 9, 9, 0]) == []  # same key, other tokens: verified, missed
    run(pool, [9, 9, 9, 9])
    assert len(prefix) == 1 and prefix.match([1, 2, 3, 4, 0]) != []


def test_eviction_takes_least_recently_used_leaves_not_in_use():
    pool, prefix = setup(cached=3)
    a = run(pool, range(8))  # a0 -> a1
    b = run(pool, [9] * 4)  # b0
    prefix.match(range(8))  # a's chain is now the most recently used
    c = run(pool, [5] * 4)  # a fourth block: evict one leaf, b0 (a0 is not a leaf)
    assert prefix.match([9] * 5) == [] and prefix.match(range(9)) == a
    assert prefix.match([5] * 5) == c and pool.n_blocks_in_use == 3
    held = pool.new_sequence()
    prefix.attach(held, [5] * 5)  # c0 is in use: not evictable
    assert prefix.evict(10) == 2 and prefix.match([5] * 5) == c  # a1, then a0
    assert len(prefix) == 1 and pool.n_blocks_in_use == 1 and b[0] != c[0]


def test_a_fixed_pool_takes_blocks_back_from_the_cache():
    pool, prefix = setup(n_blocks=4, max_blocks=4)
    run(pool, range(16))  # four cached blocks fill the pool
    assert pool.n_blocks_in_use == 4
    cache = pool.new_sequence()
    cache.reserve(8)  # two blocks: the cache gives up its two least recent leaves
    assert pool.n_blocks_in_use == 4 and len(prefix) == 2
    assert len(prefix.match(range(16))) == 2


@pytest.fixture(scope="module")
def gemma(tmp_path_factory):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from exactserve.runtime.tiny_model import tiny_spec, write_tiny_model

    spec = tiny_spec("gemma3", T.Q5_0, vocab="llama-spm")
    return write_tiny_model(tmp_path_factory.mktemp("prefix") / spec.file_name, spec)


def bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32).view(np.uint32)


@pytest.mark.llama_cpp_data
def test_warm_requests_get_the_logits_of_cold_ones(gemma):
    """Sliding-window layers included: a reused block must hold exactly what a fresh
    computation writes."""
    from exactserve.runtime.model import load_model

    model = load_model(gemma, prefix_cache_blocks=64, kv_block_size=8)
    rng = np.random.default_rng(0)
    system = rng.integers(0, model.config.n_vocab, 70)
    first = np.concatenate([system, rng.integers(0, model.config.n_vocab, 30)])
    second = np.concatenate([system, rng.integers(0, model.config.n_vocab, 25)])
    cold = [bits(model.logits_all(model.new_cache(), p)) for p in (first, second)]
    model.kv_pool.prefix_cache.clear()

    with model.new_cache(first) as cache:
        assert cache.length == 0  # nothing cached yet
        model.forward(cache, first)
    for prompt, want in zip((first, second), cold, strict=True):
        with model.new_cache(prompt) as cache:
            reused = cache.length
            got = bits(model.logits_all(cache, prompt[reused:]))
        assert np.array_equal(got, want[reused:])
        assert reused == (99 // 8) * 8 if prompt is first else reused == 64


@pytest.mark.llama_cpp_data
def test_generation_reuses_the_prompt_prefix(gemma):
    from exactserve.runtime.generate import GenerationConfig, generate_text
    from exactserve.runtime.model import load_model
    from exactserve.runtime.tokenizer import Tokenizer

    model = load_model(gemma, prefix_cache_blocks=64)
    tokenizer = Tokenizer.from_gguf(gemma)
    prompt = tokenizer.encode("a fairly long prompt that spans blocks " * 4, add_special=True)
    config = GenerationConfig(max_tokens=6)
    text, first = generate_text(model, tokenizer, prompt, config)
    again, second = generate_text(model, tokenizer, prompt, config)
    assert first.stats.num_reused_prompt_tokens == 0
    assert second.stats.num_reused_prompt_tokens == (len(prompt) - 1) // 16 * 16 > 0
    assert (again, second.token_ids) == (text, first.token_ids)
