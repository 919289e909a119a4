"""The transformer forward pass (llama, qwen2, qwen3, gemma3) on either backend's `Ops`.

Token-wise work (norms, matmuls, activations) runs on the rows of every sequence in the
batch stacked together; it is batch invariant because each contract op computes a row from
that row alone. Attention runs once per layer for the whole batch over the paged KV cache
(runtime.model.cache): each query reads only its own sequence's blocks. Order per layer
(llama.cpp's graphs, src/models/<arch>.cpp):

    h = rmsnorm(x, attn_norm)
    q, k, v = h Wq [+ bq], h Wk [+ bk], h Wv [+ bv]          (one activation rounding)
    [q, k = rmsnorm per head (q_norm, k_norm)]                  qwen3, gemma3
    q, k = rope(q), rope(k);  q = q * attention_scale
    o = attention(q, cache) Wo;  [o = rmsnorm(o, post_attn_norm)]   gemma3
    x = x + o
    h = rmsnorm(x, ffn_norm)
    f = act(h Wgate) * (h Wup);  d = f Wdown;  [d = rmsnorm(d, post_ffn_norm)]
    x = x + d
    logits = rmsnorm(x, output_norm) Wout  [softcap]
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import numpy as np

from exactserve.reference.fp import F32
from exactserve.runtime.backend import Ops
from exactserve.runtime.config import ModelConfig
from exactserve.runtime.model.cache import KVPool, SequenceCache
from exactserve.runtime.model.rope_tables import RopeTable
from exactserve.runtime.model.weights import LayerWeights, ModelWeights


@dataclass(frozen=True)
class SequenceInput:
    """New tokens of one sequence. They take positions cache.length, cache.length + 1, ...

    `logits`: "last" (the last new token's), "all" (every new token's) or "none".
    """

    cache: SequenceCache
    tokens: Sequence[int] | np.ndarray
    logits: str = "last"


@dataclass(frozen=True)
class _Slices:
    """Where each sequence's rows sit in the stacked batch, and where its keys go."""

    starts: tuple[int, ...]  # also `query_starts` of paged attention, with stops[-1]
    stops: tuple[int, ...]
    positions: np.ndarray  # int64 [n_rows]: absolute positions
    slots: Any  # where each row's key and value go: the KV storage's `index` of pool slots
    seq_lens: np.ndarray  # int64 [n_seq]: positions in each cache once this call's are added
    block_tables: np.ndarray  # int32 [n_seq, max_blocks], zero-padded


def forward(
    config: ModelConfig,
    weights: ModelWeights,
    tables: tuple[RopeTable, RopeTable],
    batch: Sequence[SequenceInput],
    ops: Ops,
    pool: KVPool,
    executor: Executor | None = None,
) -> list[np.ndarray]:
    """Run the new tokens of every sequence; append their keys/values to the caches.

    Returns, per sequence, float32 logits [n, n_vocab] with n = 1, len(tokens) or 0.
    `ops` is the backend that prepared `weights` (runtime.backend) and `pool` the KV pool
    (made by the same backend) every cache must live in; `executor` runs the reference's
    matmul tiles concurrently (no effect on the bits).
    """
    _check_batch(config, batch, pool)
    tokens = np.concatenate([np.asarray(b.tokens, dtype=np.int64) for b in batch])
    slices = _plan(batch, pool.storage)
    starts, stops, positions = slices.starts, slices.stops, slices.positions
    storage = pool.storage

    x = ops.scale_embeddings(weights.embedding.rows(tokens, ops), config.embedding_scale)
    rope = [tuple(map(ops.asarray, tables[0].rows(positions)))]  # (cos, sin): global, local
    rope.append(
        rope[0] if tables[1] is tables[0] else tuple(map(ops.asarray, tables[1].rows(positions)))
    )
    for index, layer in enumerate(weights.layers):
        x = _layer(config, index, layer, rope, storage, slices, x, ops, executor)

    rows = np.concatenate(
        [_logit_rows(b, s, e) for b, s, e in zip(batch, starts, stops, strict=True)]
    )
    logits = np.zeros((0, config.n_vocab), F32)
    if len(rows):
        h = ops.rmsnorm(x[rows], weights.output_norm, config.norm_eps)
        logits = ops.matmul(h, weights.output, executor=executor)
        if config.final_logit_softcap:
            logits = ops.softcap(logits, config.final_logit_softcap)
        logits = ops.to_host(logits)

    for b in batch:
        b.cache.commit(np.asarray(b.tokens, dtype=np.int64))
    out, at = [], 0
    for b, s, e in zip(batch, starts, stops, strict=True):
        n = len(_logit_rows(b, s, e))
        out.append(logits[at : at + n])
        at += n
    return out


def _plan(batch: Sequence[SequenceInput], storage) -> _Slices:
    """Reserve every cache's blocks for its new tokens; lay out the batch's rows."""
    sizes = [len(b.tokens) for b in batch]
    stops = tuple(int(s) for s in np.cumsum(sizes))
    starts = tuple(s - n for s, n in zip(stops, sizes, strict=True))
    for b, n in zip(batch, sizes, strict=True):
        b.cache.reserve(n)
    tables = [b.cache.block_table for b in batch]
    block_tables = np.zeros((len(batch), max(len(t) for t in tables)), dtype=np.int32)
    for row, table in zip(block_tables, tables, strict=True):
        row[: len(table)] = table
    caches = [(b.cache, n) for b, n in zip(batch, sizes, strict=True)]
    return _Slices(
        starts,
        stops,
        np.concatenate([c.length + np.arange(n, dtype=np.int64) for c, n in caches]),
        storage.index(np.concatenate([c.slots(c.length, n) for c, n in caches])),
        np.array([c.length + n for c, n in caches], dtype=np.int64),
        block_tables,
    )


def _layer(config, index, layer: LayerWeights, rope, storage, slices, x, ops, ex):
    """One layer on the stacked rows x [n_rows, n_embd] (the backend's array type)."""
    c = config
    n_rows = x.shape[0]
    h = ops.quantize_activations(ops.rmsnorm(x, layer.attn_norm, c.norm_eps, ex), ex).values
    q = ops.matmul_quantized(h, layer.wq, layer.bq, ex).reshape(n_rows, c.n_heads, c.head_dim)
    k = ops.matmul_quantized(h, layer.wk, layer.bk, ex).reshape(n_rows, c.n_kv_heads, c.head_dim)
    v = ops.matmul_quantized(h, layer.wv, layer.bv, ex).reshape(n_rows, c.n_kv_heads, c.head_dim_v)
    if layer.q_norm is not None:
        q = ops.rmsnorm(q, layer.q_norm, c.norm_eps, ex)
        k = ops.rmsnorm(k, layer.k_norm, c.norm_eps, ex)
    is_local = c.swa_layers[index]
    cos, sin = rope[1 if is_local else 0]
    layout = c.rope.layout.value
    q = ops.apply_rope(q, cos, sin, layout) * F32(c.attention_scale)
    k = ops.apply_rope(k, cos, sin, layout)
    k_bf, v_bf = ops.block_float(k), ops.block_float(v)

    storage.write(index, slices.slots, k_bf, v_bf)
    attn = ops.paged_attention(
        q,
        slices.positions,
        (*slices.starts, slices.stops[-1]),
        slices.seq_lens,
        slices.block_tables,
        *storage.layer(index),
        window=c.sliding_window if is_local else None,
        cap=c.attn_logit_softcap,
        executor=ex,
    )
    o = ops.matmul(attn.reshape(n_rows, c.n_heads * c.head_dim_v), layer.wo, executor=ex)
    if layer.post_attn_norm is not None:
        o = ops.rmsnorm(o, layer.post_attn_norm, c.norm_eps, ex)
    x = x + o

    h = ops.quantize_activations(ops.rmsnorm(x, layer.ffn_norm, c.norm_eps, ex), ex).values
    gate = ops.matmul_quantized(h, layer.w_gate, executor=ex)
    up = ops.matmul_quantized(h, layer.w_up, executor=ex)
    d = ops.matmul(ops.gated(gate, up, c.traits.activation, ex), layer.w_down, executor=ex)
    if layer.post_ffn_norm is not None:
        d = ops.rmsnorm(d, layer.post_ffn_norm, c.norm_eps, ex)
    return x + d


def _logit_rows(item: SequenceInput, start: int, stop: int) -> np.ndarray:
    if item.logits == "all":
        return np.arange(start, stop)
    if item.logits == "last":
        return np.arange(stop - 1, stop)
    return np.arange(0)


def _check_batch(config: ModelConfig, batch: Sequence[SequenceInput], pool: KVPool) -> None:
    if not batch:
        raise ValueError("forward: the batch is empty")
    seen = set()
    for item in batch:
        if item.cache.pool is not pool:
            raise ValueError(
                "forward: a sequence cache belongs to another model; make it with this "
                "model's new_cache()"
            )
        if id(item.cache) in seen:
            raise ValueError("forward: a sequence cache appears twice in one batch")
        seen.add(id(item.cache))
        if len(item.tokens) == 0:
            raise ValueError("forward: a sequence in the batch has no new tokens")
        if item.logits not in ("last", "all", "none"):
            raise ValueError(
                f"forward: logits must be 'last', 'all' or 'none', not {item.logits!r}"
            )
        ids = np.asarray(item.tokens)
        if ids.min() < 0 or ids.max() >= config.n_vocab:
            raise ValueError(
                f"forward: token ids must lie in [0, {config.n_vocab}); "
                f"got {ids.min()}..{ids.max()}"
            )
        if item.cache.length + len(item.tokens) > config.context_length:
            raise ValueError(
                f"forward: {item.cache.length} cached + {len(item.tokens)} new tokens exceed the "
                f"model's context length {config.context_length}"
            )
