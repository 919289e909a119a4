"""An independent oracle for the model graph (docs/PRECISION.md section 8).

Both backends run runtime/model/graph.py, so an op-order mistake there (the per-head norms
after RoPE instead of before, an extra rounding, a norm in the wrong place) would pass
every backend-vs-backend test. This file implements section 8 again, deliberately plainly:
one token position at a time, a Python loop over layers, keys and values kept in lists,
calling only the reference ops (reference/), never graph.py, the KV cache or the batch
planner. Its logits must equal the engine's bit for bit, for every architecture; a planted
one-ulp reordering in the oracle must break the equality."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T

from exactserve.reference import activations, attention, embedding, matmul, quantize, rmsnorm
from exactserve.reference.quants import IntegerWeights
from exactserve.reference.rope import apply_rope, rope_frequencies, rope_table
from exactserve.runtime.model import load_model

pytestmark = pytest.mark.llama_cpp_data

F32 = np.float32
TOKENS = [2, 17, 404, 9, 1200, 33, 7, 250]


def oracle_logits(model, tokens: list[int], *, planted: bool = False) -> np.ndarray:
    """Section 8 for `tokens` at positions 0..n-1, one row at a time; the logits [n, vocab]."""
    c, w = model.config, model.weights
    n_rot = c.rope.dimension_count
    omega = rope_frequencies(n_rot, c.rope.freq_base, c.rope.freq_scale, w.rope_freqs)
    omega_local = omega
    if c.rope.freq_base_swa is not None:
        omega_local = rope_frequencies(n_rot, c.rope.freq_base_swa, c.rope.freq_scale_swa, None)
    keys = [[] for _ in w.layers]  # per layer: block floats of each position's k and v
    out = []
    for position, token in enumerate(tokens):
        x = _embed(w.embedding, token)  # [1, n_embd]
        if c.embedding_scale is not None:
            x = embedding.scale_embeddings(x, c.embedding_scale)
        for index, layer in enumerate(w.layers):
            x = _layer(c, layer, index, x, position, keys[index], omega, omega_local, planted)
        h = rmsnorm.rmsnorm(x, w.output_norm, c.norm_eps)
        logits = matmul.matmul(h, w.output)
        if c.final_logit_softcap:
            logits = activations.softcap(logits, c.final_logit_softcap)
        out.append(logits[0])
    return np.stack(out)


def _embed(table, token: int) -> np.ndarray:
    ids = np.array([token])
    if table.table is None:
        return table.values[ids]
    if isinstance(table.table, IntegerWeights):
        return embedding.embedding_rows_integer(table.table, ids)
    return embedding.embedding_rows_prepared(table.table, ids)


def _layer(c, layer, index, x, position, cache, omega, omega_local, planted):
    a = quantize.quantize_activations(rmsnorm.rmsnorm(x, layer.attn_norm, c.norm_eps)).values
    q = matmul.matmul_quantized(a, layer.wq, layer.bq).reshape(1, c.n_heads, c.head_dim)
    k = matmul.matmul_quantized(a, layer.wk, layer.bk).reshape(1, c.n_kv_heads, c.head_dim)
    v = matmul.matmul_quantized(a, layer.wv, layer.bv).reshape(1, c.n_kv_heads, c.head_dim_v)
    is_local = c.swa_layers[index]
    cos, sin = rope_table(np.array([position]), omega_local if is_local else omega)
    layout = c.rope.layout.value
    if layer.q_norm is not None and not planted:
        q = rmsnorm.rmsnorm(q, layer.q_norm, c.norm_eps)
        k = rmsnorm.rmsnorm(k, layer.k_norm, c.norm_eps)
    q = apply_rope(q, cos, sin, layout) * F32(c.attention_scale)
    k = apply_rope(k, cos, sin, layout)
    if layer.q_norm is not None and planted:  # the per-head norms after RoPE, not before
        q = rmsnorm.rmsnorm(q, layer.q_norm, c.norm_eps)
        k = rmsnorm.rmsnorm(k, layer.k_norm, c.norm_eps)
    cache.append((quantize.block_float(k[0]), quantize.block_float(v[0])))
    k_int = np.stack([kb.integers for kb, _ in cache], axis=1)  # [H_kv, L, D]
    k_scale = np.stack([kb.scale for kb, _ in cache], axis=1)  # [H_kv, L]
    v_int = np.stack([vb.integers for _, vb in cache], axis=1)
    v_scale = np.stack([vb.scale for _, vb in cache], axis=1)
    window = c.sliding_window if is_local else None
    attn = attention.attention(
        q, np.array([position]), k_int, k_scale, v_int, v_scale, window, c.attn_logit_softcap
    )
    o = matmul.matmul(attn.reshape(1, c.n_heads * c.head_dim_v), layer.wo)
    if layer.post_attn_norm is not None:
        o = rmsnorm.rmsnorm(o, layer.post_attn_norm, c.norm_eps)
    x = x + o
    a = quantize.quantize_activations(rmsnorm.rmsnorm(x, layer.ffn_norm, c.norm_eps)).values
    gate = matmul.matmul_quantized(a, layer.w_gate)
    up = matmul.matmul_quantized(a, layer.w_up)
    d = matmul.matmul(activations.gated(gate, up, c.traits.activation), layer.w_down)
    if layer.post_ffn_norm is not None:
        d = rmsnorm.rmsnorm(d, layer.post_ffn_norm, c.norm_eps)
    return x + d


CASES = [("llama", T.Q8_0, {}), ("llama", T.Q4_K, {"rope_freqs": True}), ("qwen2", T.Q8_0, {}),
         ("qwen3", T.Q6_K, {}), ("gemma3", T.Q8_0, {})]  # fmt: skip


@pytest.mark.parametrize("arch, qtype, options", CASES, ids=[f"{a}-{q.name}" for a, q, _ in CASES])
def test_the_graph_equals_a_plain_reading_of_section_8(tiny_model, arch, qtype, options):
    """The engine as it runs by default (the compiled CPU matmul where one runs here) against
    the oracle on the reference's own NumPy weights."""
    path = tiny_model(arch, qtype, **options)
    model = load_model(path)
    tokens = [t % model.config.n_vocab for t in TOKENS]
    with model.new_cache() as cache:
        engine = model.logits_all(cache, tokens)
    expected = oracle_logits(load_model(path, cpu_matmul="numpy"), tokens)
    assert np.array_equal(engine.view(np.uint32), expected.view(np.uint32))


def test_a_planted_reordering_in_the_oracle_is_caught(tiny_model):
    model = load_model(tiny_model("qwen3", T.Q6_K), cpu_matmul="numpy")
    with model.new_cache() as cache:
        engine = model.logits_all(cache, TOKENS)
    planted = oracle_logits(model, TOKENS, planted=True)
    assert not np.array_equal(engine.view(np.uint32), planted.view(np.uint32))
