"""The contract's promise at the model level (docs/PRECISION.md, 9): the logits of every
position are bit-identical whether the prompt is prefilled at once, token by token or in
chunks of 1, 7, 64 and 333 tokens, and whether another sequence shares the batch. Plus the
negative control: a planted batch-size-dependent rounding change must be caught."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T

import exactserve.reference.matmul as matmul_module
from exactserve.runtime.model import SequenceInput, load_model

pytestmark = pytest.mark.llama_cpp_data

N_TOKENS = 400  # longer than the biggest chunk (333) and than several 64-key chunks


def prompt(model, seed: int, n: int = N_TOKENS) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, model.config.n_vocab, n)


def bits(logits: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(logits, dtype=np.float32).view(np.uint32)


def first_difference(model, tokens, whole, chunk, neighbour=None) -> int | None:
    """Feed `tokens` in chunks of `chunk` (each batched with a chunk of `neighbour`, another
    sequence at other positions, when given) and compare every position's logits with
    `whole`; return the first position whose bits differ, or None."""
    mine, theirs = model.new_cache(), model.new_cache()
    other_chunk = chunk // 2 + 3
    for i, start in enumerate(range(0, len(tokens), chunk)):
        batch = [SequenceInput(mine, tokens[start : start + chunk], "all")]
        if neighbour is not None and theirs.length + other_chunk <= len(neighbour):
            part = neighbour[theirs.length : theirs.length + other_chunk]
            batch.insert(i % 2, SequenceInput(theirs, part, "last"))  # before or after
        results = model.forward_batch(batch)
        got = bits(results[batch.index(next(b for b in batch if b.cache is mine))])
        want = whole[start : start + chunk]
        if not np.array_equal(got, want):
            rows = np.nonzero((got != want).any(axis=1))[0]
            return start + int(rows[0])
    return None


# Every model gets a 32000-token vocabulary: the tokenizer plays no part here, and the
# logits of 400 positions over Qwen's 151936 tokens would dominate the test's time.
MODELS = {
    "llama-Q4_K": ("llama", T.Q4_K, {}),
    "qwen2-Q8_0": ("qwen2", T.Q8_0, {}),
    "qwen3-Q5_0": ("qwen3", T.Q5_0, {"overrides": {"ffn_down.weight": T.Q6_K}}),
    "gemma3-Q5_0": ("gemma3", T.Q5_0, {"overrides": {"attn_output.weight": T.Q4_K}}),
}
VOCAB = "llama-spm"


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from exactserve.runtime.tiny_model import tiny_spec, write_tiny_model

    root = tmp_path_factory.mktemp("invariance")
    loaded = {}
    for name, (arch, qtype, options) in MODELS.items():
        spec = tiny_spec(arch, qtype, vocab=VOCAB, **options)
        path = write_tiny_model(root / spec.file_name, spec)
        loaded[name] = load_model(path)
        if name == "qwen2-Q8_0":  # the reference's own NumPy matmul, for the planted bug
            loaded[name + "/numpy"] = load_model(path, cpu_matmul="numpy")
    return loaded


@pytest.mark.parametrize("name", sorted(MODELS))
def test_logits_identical_under_any_split_and_batch(models, name):
    model = models[name]
    tokens = prompt(model, 0)
    whole = bits(model.logits_all(model.new_cache(), tokens))
    assert len(np.unique(whole[:, 0])) > N_TOKENS // 2  # positions really differ
    for chunk in (1, 7, 64, 333):
        assert first_difference(model, tokens, whole, chunk) is None, f"chunks of {chunk}"
    other = prompt(model, 1, 300)
    for chunk in (7, 333):
        assert first_difference(model, tokens, whole, chunk, other) is None, f"batched, {chunk}"


def test_prefix_from_a_copied_cache_and_truncation(models):
    model = models["gemma3-Q5_0"]
    tokens = prompt(model, 2, 150)
    whole = bits(model.logits_all(model.new_cache(), tokens))
    cache = model.new_cache()
    model.logits_all(cache, tokens[:100])
    fork = cache.copy(90)  # prefix reuse
    assert np.array_equal(bits(model.logits_all(fork, tokens[90:150])), whole[90:])
    model.logits_all(cache, tokens[100:120])
    cache.truncate(110)  # speculative rollback
    assert np.array_equal(bits(model.logits_all(cache, tokens[110:150])), whole[110:])


def test_kv_block_size_and_placement_do_not_change_bits(models):
    """The paged cache is storage only (contract 7.6): blocks of 1, 48 or 64 positions, and
    a pool fragmented by a neighbour that grows in step and by released sequences, give the
    logits of the default layout."""
    from exactserve.runtime.model import Model

    base = models["gemma3-Q5_0"]  # sliding-window layers: the window's start moves per block
    tokens = prompt(base, 4, 150)
    whole = bits(base.logits_all(base.new_cache(), tokens))
    for block_size in (1, 48, 64):
        model = Model(base.config, base.weights, kv_block_size=block_size)
        assert first_difference(model, tokens, whole, 7) is None, f"blocks of {block_size}"

    model = Model(base.config, base.weights, kv_block_size=8)
    spare = [model.new_cache() for _ in range(3)]
    for i, cache in enumerate(spare):
        model.forward(cache, tokens[: 9 + i])
    spare[1].release()  # a hole in the pool
    mine, theirs = model.new_cache(), model.new_cache()
    got = []
    for start in range(0, 150, 5):  # interleaved: the two sequences' blocks alternate
        if start == 100:
            spare[0].release()  # later blocks come from the start of the pool
        out = model.forward_batch(
            [SequenceInput(theirs, tokens[start : start + 5][::-1]),
             SequenceInput(mine, tokens[start : start + 5], "all")]
        )  # fmt: skip
        got.append(out[1])
    assert np.any(np.diff(mine.block_table) < 0)  # really scattered
    assert np.array_equal(bits(np.concatenate(got)), whole)


def test_a_full_fixed_pool_fails_cleanly(models):
    from exactserve.runtime.model import Model
    from exactserve.runtime.model.cache import KVCacheFullError

    base = models["qwen2-Q8_0"]
    model = Model(base.config, base.weights, kv_block_size=16, kv_blocks=4)
    a, b = model.new_cache(), model.new_cache()
    model.forward(a, prompt(model, 5, 40))  # 3 blocks
    with pytest.raises(KVCacheFullError, match="the KV cache is full"):
        model.forward(b, prompt(model, 6, 20))  # 2 more blocks: only 1 left
    assert b.length == 0 and a.length == 40
    a.release()
    tokens = prompt(model, 6, 20)
    assert np.array_equal(
        bits(model.forward(b, tokens)), bits(base.forward(base.new_cache(), tokens))
    )


def _batch_dependent_group_loop(original):
    """The contract's group loop for one-row calls; for more rows, each group's scale multiply
    is fused into the accumulation, as an FMA would do it (one rounding instead of two)."""

    def group_loop(grouped, psums, w, c0, cols):
        if grouped.shape[1] == 1:
            return original(grouped, psums, w, c0, cols)
        q = w.q[:, :, c0 : c0 + cols].astype(np.float64)
        exact = np.matmul(grouped.astype(np.float64), q) * w.scale[:, None, c0 : c0 + cols]
        acc = np.zeros(exact.shape[1:], dtype=np.float32)
        for g in range(len(exact)):
            acc = (acc + exact[g]).astype(np.float32)  # fl(acc + scale * isum), one rounding
        return acc

    return group_loop


def test_negative_control_batch_dependent_rounding_is_caught(models, monkeypatch):
    model = models["qwen2-Q8_0/numpy"]  # the plant is in the NumPy path's group loop
    tokens = prompt(model, 3, 80)
    whole = bits(model.logits_all(model.new_cache(), tokens))
    monkeypatch.setattr(
        matmul_module, "_group_loop", _batch_dependent_group_loop(matmul_module._group_loop)
    )
    planted = bits(model.logits_all(model.new_cache(), tokens))
    assert not np.array_equal(planted, whole)  # the plant changes prefill...
    assert first_difference(model, tokens, planted, 1) is not None  # ...so the suite fails
