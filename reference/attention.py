"""Attention of the contract (docs/PRECISION.md, 7): one algorithm for prefill, decode and
verification, over KV chunks of 64 positions aligned to position 0.

For a query at position i, key j is visible iff j <= i and (no window or i - j < window).
The chunks holding at least one visible key are visited in ascending order with state
(m, denom, acc) = (-inf, +0, +0):

    s_j   = fl32(S_j * 2^(e_q + e_k))      S_j = sum_d Qi_d * Ki_jd, exact (block floats 3.2)
    [s_j  = cap * tanh(s_j / cap)]         optional soft-capping (4.6)
    m'    = max(m, max_j s_j)              over the chunk's visible keys
    alpha = exp(m - m')                    exp(-inf) = +0
    p_j   = exp(s_j - m'), 0 for invisible keys
    denom = fl(denom * alpha) + tree_sum(p)    tree over the chunk's 64 slots (2.3)
    P'_j  = p_j * 2^(e_v,j)                exact in float64; block float over the chunk
    acc_d = fl(acc_d * alpha) + fl32(2^e_p * sum_j Pi_j * Vi_jd)   inner sum exact
    out_d = acc_d / denom

Every quantity depends only on the query, its position and the keys at visible positions,
never on which other queries share the call, so prefill, chunked prefill and decode agree.
This implementation also runs the invisible chunks inside a query tile's range; they are
exact no-ops (alpha = 1, nothing added; or, before the first visible chunk, the state stays
at zero), as PRECISION.md 7.4 shows.

`paged_attention` runs a batch of sequences whose keys live in the blocks of a paged cache
(7.6); it gathers each sequence's blocks and runs `attention` on them.
"""

from __future__ import annotations

from concurrent.futures import Executor

import numpy as np

from exactserve.reference.activations import exp, softcap
from exactserve.reference.fp import F32, F64, tree_sum
from exactserve.reference.quantize import block_float, block_float_f64

KV_CHUNK = 64
QUERY_TILE = 128  # queries per step; any value gives the same bits (queries are independent)


def attention(
    q: np.ndarray,
    q_positions: np.ndarray,
    k_int: np.ndarray,
    k_scale: np.ndarray,
    v_int: np.ndarray,
    v_scale: np.ndarray,
    window: int | None = None,
    cap: float | None = None,
    executor: Executor | None = None,
) -> np.ndarray:
    """Contract 7 for one sequence.

    q float32 [T, H, D] (RoPE and the attention scale applied), q_positions int [T];
    keys/values as block floats (contract 3.2) for positions 0..L-1: k_int float64 or int32
    [H_kv, L, D], k_scale float64 [H_kv, L], v_int float64 or int32 [H_kv, L, Dv], v_scale
    [H_kv, L]; H a multiple of H_kv (query head h reads KV head h // (H / H_kv)).
    L may exceed the last query position (a cache's capacity): later slots are never
    visible but must hold finite values. Returns float32 [T, H, Dv].
    """
    t, h, d = q.shape
    h_kv, length, dv = v_int.shape
    if h % h_kv or k_int.shape != (h_kv, length, d):
        raise ValueError(f"attention: q {q.shape} does not fit keys {k_int.shape}")
    q_positions = np.asarray(q_positions, dtype=np.int64)
    if t and (q_positions.min() < 0 or q_positions.max() >= length):
        raise ValueError(f"attention: query positions must lie in [0, {length})")
    out = np.empty((t, h, dv), dtype=F32)
    qbf = block_float(q)

    def run(start: int) -> None:
        stop = min(t, start + QUERY_TILE)
        out[start:stop] = _tile(
            qbf.integers[start:stop],
            qbf.scale[start:stop],
            q_positions[start:stop],
            (k_int, k_scale, v_int, v_scale),
            window,
            cap,
        )

    starts = range(0, t, QUERY_TILE)
    if executor is None or len(starts) < 2:
        for start in starts:
            run(start)
    else:  # the last tiles see the most keys: hand those out first
        futures = [executor.submit(run, start) for start in reversed(starts[1:])]
        run(0)
        for future in futures:
            future.result()
    return out


def paged_attention(
    q: np.ndarray,
    q_positions: np.ndarray,
    query_starts: np.ndarray,
    seq_lens: np.ndarray,
    block_tables: np.ndarray,
    k_int: np.ndarray,
    k_scale: np.ndarray,
    v_int: np.ndarray,
    v_scale: np.ndarray,
    window: int | None = None,
    cap: float | None = None,
    executor: Executor | None = None,
) -> np.ndarray:
    """Contract 7 for a batch of sequences whose keys live in a paged cache (7.6).

    Sequence s owns queries query_starts[s]:query_starts[s+1] of q float32 [T, H, D] (at
    q_positions int [T], each < seq_lens[s]) and the keys of positions 0..seq_lens[s]-1:
    position p sits in block block_tables[s, p // B], slot p % B. Pools, B = block size:
    k_int float64 or int32 [n_blocks, H_kv, B, D], k_scale [n_blocks, H_kv, B], v_int
    [n_blocks, H_kv, B, Dv], v_scale [n_blocks, H_kv, B]. Returns float32 [T, H, Dv]. `executor`:
    as in `attention`.

    The paging is storage only: each sequence's blocks are gathered in table order into
    the contiguous layout of `attention`, so a query's bits do not depend on which blocks
    hold its keys, nor on the other sequences of the batch.
    """
    t, h, _ = q.shape
    n_blocks, h_kv, size, dv = v_int.shape
    q_positions = np.asarray(q_positions, dtype=np.int64)
    query_starts = np.asarray(query_starts, dtype=np.int64)
    seq_lens = np.asarray(seq_lens, dtype=np.int64)
    block_tables = np.asarray(block_tables, dtype=np.int64)
    n_seq = len(seq_lens)
    if query_starts.shape != (n_seq + 1,) or query_starts[0] != 0 or query_starts[-1] != t:
        raise ValueError(f"paged_attention: query_starts must run from 0 to {t}, one per sequence")
    if np.any(np.diff(query_starts) < 0):
        raise ValueError("paged_attention: query_starts must not decrease")
    needed_per_seq = -(-seq_lens // size)
    needed = needed_per_seq.max(initial=0)
    if block_tables.ndim != 2 or len(block_tables) != n_seq:
        raise ValueError("paged_attention: block_tables must be [n_seq, max_blocks]")
    if needed > block_tables.shape[1]:
        raise ValueError(
            f"paged_attention: block_tables has {block_tables.shape[1]} columns; "
            f"the longest sequence needs {int(needed)} blocks"
        )
    out = np.empty((t, h, dv), dtype=F32)
    for s in range(n_seq):
        a, b = query_starts[s], query_starts[s + 1]
        if a == b:
            continue
        table = block_tables[s, : needed_per_seq[s]]
        if table.min() < 0 or table.max() >= n_blocks:
            raise ValueError(f"paged_attention: sequence {s} names a block outside the pool")
        if q_positions[a:b].max() >= seq_lens[s]:
            raise ValueError(f"paged_attention: sequence {s} has queries past its length")
        out[a:b] = attention(
            q[a:b],
            q_positions[a:b],
            _gather(k_int, table),
            _gather(k_scale, table),
            _gather(v_int, table),
            _gather(v_scale, table),
            window,
            cap,
            executor,
        )
    return out


def _gather(pool: np.ndarray, table: np.ndarray) -> np.ndarray:
    """Blocks `table` of pool [n_blocks, H_kv, B, ...] -> float64 [H_kv, len(table) * B, ...]
    (int32 integers are widened exactly on the way)."""
    blocks = pool[table]  # a copy: [nb, H_kv, B, ...]
    nb, h_kv, size = blocks.shape[:3]
    out = np.empty((h_kv, nb, size, *blocks.shape[3:]), dtype=F64)
    out[...] = blocks.swapaxes(0, 1)
    return out.reshape(h_kv, nb * size, *blocks.shape[3:])


def _tile(q_int, q_scale, pos, kv, window, cap) -> np.ndarray:
    k_int, k_scale, v_int, v_scale = kv
    t, h, d = q_int.shape
    h_kv, length, dv = v_int.shape
    group = h // h_kv
    first = 0 if window is None else max(0, pos.min() - window + 1)  # first visible key
    c_lo, c_hi = first // KV_CHUNK, pos.max() // KV_CHUNK
    n_chunks = c_hi - c_lo + 1
    k0 = c_lo * KV_CHUNK
    k1 = min(length, (c_hi + 1) * KV_CHUNK)
    width = n_chunks * KV_CHUNK

    # Rows of the [H_kv, group * t] layout: query head kv * group + g, query index r.
    qi = q_int.transpose(1, 0, 2).reshape(h_kv, group * t, d)
    qs = q_scale.T.reshape(h_kv, group * t)
    ki = _pad_keys(k_int[:, k0:k1], width).astype(F64, copy=False)  # [H_kv, width, D], exact
    ks = _pad_keys(k_scale[:, k0:k1, None], width)[..., 0]
    exact = np.matmul(qi, ki.transpose(0, 2, 1)) + F64(0.0)  # exact integers, zero is +0
    s = ((exact * qs[:, :, None]) * ks[:, None, :]).astype(F32)  # exact scaling, one rounding
    if cap is not None:
        s = softcap(s, cap)

    keys = k0 + np.arange(width)
    visible = keys[None, :] <= pos[:, None]
    if window is not None:
        visible &= pos[:, None] - keys[None, :] < window
    visible = np.broadcast_to(visible[None], (group, t, width)).reshape(1, group * t, width)

    shape = (h_kv, group * t, n_chunks, KV_CHUNK)
    s = np.where(visible, s, F32(-np.inf)).reshape(shape)
    vis = np.broadcast_to(visible.reshape(1, group * t, n_chunks, KV_CHUNK), shape)
    m_run = np.maximum.accumulate(s.max(axis=-1), axis=-1)  # running max, exact
    m_prev = np.concatenate([np.full((*shape[:2], 1), -np.inf, F32), m_run[..., :-1]], axis=-1)
    started = m_run > F32(-np.inf)
    with np.errstate(invalid="ignore"):
        alpha = exp(np.where(started, m_prev - m_run, F32(0.0)))
        p = np.where(vis, exp(s - m_run[..., None]), F32(0.0))
    denom_chunk = tree_sum(p)  # [H_kv, group * t, C]

    vs = _pad_keys(v_scale[:, k0:k1, None], width)[..., 0].reshape(h_kv, 1, n_chunks, KV_CHUNK)
    pbf = block_float_f64(p.astype(F64) * vs)  # P' exact, then block float per chunk
    vi = _pad_keys(v_int[:, k0:k1], width).astype(F64, copy=False)  # exact: |i| <= 2^21
    vi = vi.reshape(h_kv, n_chunks, KV_CHUNK, dv)
    pi = pbf.integers.transpose(0, 2, 1, 3)  # [H_kv, C, group * t, 64]
    pv_exact = np.matmul(pi, vi) + F64(0.0)  # [H_kv, C, group * t, Dv], exact
    pv = (pv_exact * pbf.scale.transpose(0, 2, 1)[..., None]).astype(F32)

    denom = np.zeros((h_kv, group * t), dtype=F32)
    acc = np.zeros((h_kv, group * t, dv), dtype=F32)
    for c in range(n_chunks):
        denom, acc = online_update(denom, acc, alpha[..., c], denom_chunk[..., c], pv[:, c])
    out = acc / denom[..., None]
    return out.reshape(h_kv * group, t, dv).transpose(1, 0, 2)


def online_update(denom, acc, alpha, denom_chunk, pv):
    """Contract 7.3 steps 5 and 7: denom = fl(denom * alpha) + denom_chunk,
    acc = fl(acc * alpha) + pv."""
    return denom * alpha + denom_chunk, acc * alpha[..., None] + pv


def _pad_keys(a: np.ndarray, width: int) -> np.ndarray:
    """Zero-pad axis 1 of `a` to `width` (keys past the cache end are never visible)."""
    if a.shape[1] == width:
        return a
    pad = np.zeros((a.shape[0], width - a.shape[1], *a.shape[2:]), dtype=a.dtype)
    return np.concatenate([a, pad], axis=1)
