"""Attention of the contract (docs/PRECISION.md, 7), twin of `reference.attention`: one
kernel for prefill, decode and multi-token verification, over KV chunks of 64 positions
aligned to position 0.

A program owns BLOCK_M rows of one KV head and BLOCK_DV output columns; row r is query
r // GROUP of the call and query head kv_head * GROUP + r % GROUP (grouped- and multi-query
attention share the keys). It visits the chunks from the first one any of its rows can see
to the last, in ascending order, with per-row state (m, denom, acc) and the reference's
masking, so chunks a row cannot see leave its state bit-identical (contract 7.4). Per
chunk (7.3):

    S    = Qi . Ki                 float64 `tl.dot`s of 22-bit integers, BLOCK_D columns at a
                                   time: exact (3.2), so the pieces add exactly
    s    = fl32(S * 2^eq * 2^ek)   [softcap]; invisible keys -> -inf
    m'   = max(m, max s);  alpha = exp(m - m') (1 while nothing was visible yet)
    p    = exp(s - m') on visible keys, else +0;  denom = fl(denom * alpha) + tree_sum(p)
    P'   = p * 2^ev (float64, exact) -> block float (Pi, 2^ep)
    acc  = fl(acc * alpha) + fl32(2^ep * (Pi . Vi))     exact float64 dot
    out  = acc / denom             div_rn

Programs that share rows but own different output columns recompute the same scores bit
for bit; the column split only bounds the tiles held on chip (head sizes up to 256).
No split-KV.

Paged cache (7.6): one launch covers every sequence of a batch. A program's rows belong to
one sequence (the launcher cuts each sequence's rows into tiles); key position p of
sequence s is read from block block_tables[s, p // BLOCK_SIZE], slot p % BLOCK_SIZE.
Keys and values come as runtime.kv_storage stores them: int32 integers [n_blocks, H_kv,
BLOCK_SIZE, D] and int32 exponents [n_blocks, H_kv, BLOCK_SIZE]
(`kernels.quantize.block_float`). Which block holds a key never enters the arithmetic.
`attention` is the one-sequence form over a contiguous cache [H_kv, L, D]: the same kernel,
reading it as blocks of 64 positions.
"""

from __future__ import annotations

from itertools import pairwise
from typing import NamedTuple

import torch
import triton
import triton.language as tl

from exactserve.kernels import INTERPRETED
from exactserve.kernels.activations import exp, softcap
from exactserve.kernels.fp import exponent_f64, pow2_f64, rint_f64, tree_sum
from exactserve.kernels.quantize import block_float
from exactserve.reference.attention import KV_CHUNK
from exactserve.reference.quantize import BF_BITS

# Static tiles: rows per program, and the head-size pieces of the Q.K and P.V dots (they
# bound float64 operands on chip: a [64, 64] float64 tile is 32 KiB). Bits never depend on
# them.
BLOCK_M = 32 if INTERPRETED else 16
BLOCK_D = 64
BLOCK_DV = 256 if INTERPRETED else 64
LOG2_CHUNK = KV_CHUNK.bit_length() - 1


@triton.jit
def _attention_kernel(
    q_ptr, qe_ptr, pos_ptr, tile_seq_ptr, tile_row_ptr, qstart_ptr, seqlen_ptr, table_ptr,
    k_ptr, ke_ptr, v_ptr, ve_ptr, o_ptr,
    window, cap,
    stride_qt, stride_qh, stride_qet, stride_tab,
    stride_kb, stride_kh, stride_kl, stride_keb, stride_keh,
    stride_vb, stride_vh, stride_vl, stride_veb, stride_veh, stride_ot, stride_oh,
    GROUP: tl.constexpr, D: tl.constexpr, DV: tl.constexpr,
    D_PAD: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
    HAS_WINDOW: tl.constexpr, HAS_CAP: tl.constexpr, BLOCK_SIZE: tl.constexpr,
    BITS: tl.constexpr, CHUNK: tl.constexpr, LOG2_CHUNK: tl.constexpr, BLOCK_M: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0)
    kv_head = tl.program_id(1)
    pid_dv = tl.program_id(2)
    seq = tl.load(tile_seq_ptr + pid_m)
    row_end = tl.load(qstart_ptr + seq + 1) * GROUP  # the sequence's rows end here
    offs_r = tl.load(tile_row_ptr + pid_m) + tl.arange(0, BLOCK_M)
    is_row = offs_r < row_end
    query = tl.minimum(offs_r, row_end - 1) // GROUP
    head = kv_head * GROUP + offs_r % GROUP
    pos = tl.load(pos_ptr + query)
    n_keys = tl.load(seqlen_ptr + seq)
    table = table_ptr + seq.to(tl.int64) * stride_tab
    offs_d = tl.arange(0, BLOCK_D)
    offs_dv = pid_dv * BLOCK_DV + tl.arange(0, BLOCK_DV)
    offs_j = tl.arange(0, CHUNK)

    # Q rows as block floats (3.2), rounded by the launcher: integers int32, exponent e_q
    q_rows = q_ptr + query[:, None].to(tl.int64) * stride_qt + head[:, None] * stride_qh
    q_scale = pow2_f64(tl.load(qe_ptr + query * stride_qet + head))

    # first visible key: 0, or the window's start for the earliest query of the tile
    first_key = 0
    if HAS_WINDOW:
        pos_lo = tl.min(tl.where(is_row, pos, n_keys), axis=0)
        first_key = tl.maximum(pos_lo - window + 1, 0)
    pos_hi = tl.max(tl.where(is_row, pos, 0), axis=0)
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    denom = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float32)
    for c in range(first_key // CHUNK, pos_hi // CHUNK + 1):
        keys = c * CHUNK + offs_j
        in_cache = keys < n_keys
        # where each key lives: block (from the table) and slot (int64 offsets)
        block = tl.load(table + keys // BLOCK_SIZE, mask=in_cache, other=0).to(tl.int64)
        slot = (keys % BLOCK_SIZE).to(tl.int64)
        k_rows = k_ptr + block * stride_kb + kv_head * stride_kh + slot * stride_kl
        k_slots = block * stride_keb + kv_head * stride_keh + slot
        e_k = tl.load(ke_ptr + k_slots, mask=in_cache, other=0)
        exact = tl.zeros([BLOCK_M, CHUNK], tl.float64)
        for d0 in tl.static_range(0, D_PAD, BLOCK_D):
            dims = d0 + offs_d
            q_int = tl.load(q_rows + dims[None, :], mask=dims[None, :] < D, other=0)
            k_at = k_rows[:, None] + dims[None, :]
            k_int = tl.load(k_at, mask=in_cache[:, None] & (dims[None, :] < D), other=0)
            q_f64, k_f64 = q_int.to(tl.float64), tl.trans(k_int.to(tl.float64))
            exact += tl.dot(q_f64, k_f64, input_precision="ieee")  # exact
        exact = exact + 0.0  # an exact zero is +0
        s = ((exact * q_scale[:, None]) * pow2_f64(e_k)[None, :]).to(tl.float32)
        if HAS_CAP:
            s = softcap(s, cap)
        visible = (keys[None, :] <= pos[:, None]) & in_cache[None, :]
        if HAS_WINDOW:
            visible = visible & (pos[:, None] - keys[None, :] < window)
        s = tl.where(visible, s, float("-inf"))
        m_new = tl.maximum(m, tl.max(s, axis=1))
        is_started = m_new > float("-inf")
        # 1 while nothing was visible (m = m' = -inf), computed without forming -inf - -inf
        alpha = exp(tl.where(is_started, m, 0.0) - tl.where(is_started, m_new, 0.0))
        # exp only of visible scores (s - m' there); -inf - (-inf) is never formed
        p = tl.where(
            visible, exp(tl.where(visible, s, 0.0) - tl.where(visible, m_new[:, None], 0.0)), 0.0
        )
        denom_chunk = tree_sum(p, LOG2_CHUNK)

        v_slots = block * stride_veb + kv_head * stride_veh + slot
        e_v = tl.load(ve_ptr + v_slots, mask=in_cache, other=0)
        p_scaled = p.to(tl.float64) * pow2_f64(e_v)[None, :]  # exact
        p_max = tl.max(p_scaled, axis=1)
        p_zero = ~(p_max > 0)
        e_p = tl.where(p_zero, 0, exponent_f64(p_max) - (BITS - 1))
        p_int = rint_f64(p_scaled * pow2_f64(-e_p)[:, None])
        p_int = tl.where(p_zero[:, None], 0.0, p_int)
        v_rows = v_ptr + block * stride_vb + kv_head * stride_vh + slot * stride_vl
        v_at = v_rows[:, None] + offs_dv[None, :]
        v_int = tl.load(v_at, mask=in_cache[:, None] & (offs_dv[None, :] < DV), other=0)
        pv_exact = tl.dot(p_int, v_int.to(tl.float64), input_precision="ieee") + 0.0
        pv = (pv_exact * pow2_f64(e_p)[:, None]).to(tl.float32)

        denom = denom * alpha + denom_chunk
        acc = acc * alpha[:, None] + pv
        m = m_new
    out = tl.div_rn(acc, denom[:, None])
    o_at = query[:, None].to(tl.int64) * stride_ot + head[:, None] * stride_oh + offs_dv[None, :]
    tl.store(o_ptr + o_at, out, mask=is_row[:, None] & (offs_dv[None, :] < DV))


class _Pool(NamedTuple):
    """A layer's keys and values as blocks: tensors plus the strides that address them.

    strides: (block, head, slot) of the integers; (block, head) of the exponents, whose
    slot stride is 1."""

    k_int: torch.Tensor
    k_exponent: torch.Tensor
    v_int: torch.Tensor
    v_exponent: torch.Tensor
    block_size: int
    k_strides: tuple[int, int, int]
    ke_strides: tuple[int, int]
    v_strides: tuple[int, int, int]
    ve_strides: tuple[int, int]


def attention(
    q: torch.Tensor,
    q_positions: torch.Tensor,
    k_int: torch.Tensor,
    k_exponent: torch.Tensor,
    v_int: torch.Tensor,
    v_exponent: torch.Tensor,
    window: int | None = None,
    cap: float | None = None,
) -> torch.Tensor:
    """Contract 7 for one sequence over a contiguous cache -> float32 [T, H, Dv].

    q float32 [T, H, D] (RoPE and the attention scale applied); q_positions int [T], each
    < L; keys/values for positions 0..L-1 as block floats: k_int int32 [H_kv, L, D],
    k_exponent int32 [H_kv, L], v_int int32 [H_kv, L, Dv], v_exponent int32 [H_kv, L]
    (last axes contiguous; views into a larger cache are fine). H a multiple of H_kv.
    """
    t, h, d = q.shape
    h_kv, length, dv = v_int.shape
    if h % h_kv or tuple(k_int.shape) != (h_kv, length, d):
        raise ValueError(f"attention: q {tuple(q.shape)} does not fit keys {tuple(k_int.shape)}")
    if k_exponent.shape != (h_kv, length) or v_exponent.shape != (h_kv, length):
        raise ValueError("attention: exponents must be [H_kv, L]")
    _check_dtypes(q, k_int, k_exponent, v_int, v_exponent)
    # position p is block p // 64, slot p % 64 of a pool whose block stride is 64 rows
    pool = _Pool(
        k_int, k_exponent, v_int, v_exponent, KV_CHUNK,
        (KV_CHUNK * k_int.stride(1), k_int.stride(0), k_int.stride(1)),
        (KV_CHUNK * k_exponent.stride(1), k_exponent.stride(0)),
        (KV_CHUNK * v_int.stride(1), v_int.stride(0), v_int.stride(1)),
        (KV_CHUNK * v_exponent.stride(1), v_exponent.stride(0)),
    )  # fmt: skip
    table = torch.arange(triton.cdiv(length, KV_CHUNK), dtype=torch.int32, device=q.device)
    return _launch(q, q_positions, [0, t], [length], table[None, :], pool, window, cap, "attention")


def paged_attention(
    q: torch.Tensor,
    q_positions: torch.Tensor,
    query_starts,
    seq_lens,
    block_tables: torch.Tensor,
    k_int: torch.Tensor,
    k_exponent: torch.Tensor,
    v_int: torch.Tensor,
    v_exponent: torch.Tensor,
    window: int | None = None,
    cap: float | None = None,
) -> torch.Tensor:
    """Contract 7 for a batch of sequences over a paged cache, in one launch ->
    float32 [T, H, Dv]. Twin of `reference.attention.paged_attention`.

    Sequence s owns queries query_starts[s]:query_starts[s+1] (host ints) of q float32
    [T, H, D], at q_positions [T] each < seq_lens[s] (host ints), and reads key position p
    from block block_tables[s, p // B] (int [n_seq, max_blocks]) of the pools k_int int32
    [n_blocks, H_kv, B, D], k_exponent int32 [n_blocks, H_kv, B], v_int int32 [n_blocks,
    H_kv, B, Dv], v_exponent int32 [n_blocks, H_kv, B] (last axes contiguous).
    """
    n_blocks, h_kv, size, d = k_int.shape
    if tuple(v_int.shape[:3]) != (n_blocks, h_kv, size) or q.shape[-1] != d or q.shape[1] % h_kv:
        raise ValueError(
            f"paged_attention: q {tuple(q.shape)} does not fit pools {tuple(k_int.shape)}, "
            f"{tuple(v_int.shape)}"
        )
    if k_exponent.shape != (n_blocks, h_kv, size) or v_exponent.shape != (n_blocks, h_kv, size):
        raise ValueError("paged_attention: exponents must be [n_blocks, H_kv, block_size]")
    _check_dtypes(q, k_int, k_exponent, v_int, v_exponent)
    query_starts = [int(a) for a in query_starts]
    seq_lens = [int(n) for n in seq_lens]
    if (
        len(query_starts) != len(seq_lens) + 1
        or query_starts[0] != 0
        or query_starts[-1] != q.shape[0]
        or any(b < a for a, b in pairwise(query_starts))
    ):
        raise ValueError(
            f"paged_attention: query_starts must rise from 0 to {q.shape[0]}, one per sequence"
        )
    block_tables = torch.as_tensor(block_tables).to(device=q.device, dtype=torch.int32)
    needed = max((triton.cdiv(n, size) for n in seq_lens), default=0)
    if block_tables.dim() != 2 or tuple(block_tables.shape[:1]) != (len(seq_lens),):
        raise ValueError("paged_attention: block_tables must be [n_seq, max_blocks]")
    if block_tables.shape[1] < needed:
        raise ValueError(
            f"paged_attention: block_tables has {block_tables.shape[1]} columns; "
            f"the longest sequence needs {int(needed)} blocks"
        )
    # every block a sequence uses lies in the pool (one device sync for the whole batch)
    lens = torch.tensor(seq_lens, device=q.device)
    columns = torch.arange(block_tables.shape[1], device=q.device)
    is_used = columns[None, :] * size < lens[:, None]
    is_bad = is_used & ((block_tables < 0) | (block_tables >= n_blocks))
    if bool(is_bad.any()):
        s = int(is_bad.any(dim=1).nonzero()[0])
        raise ValueError(f"paged_attention: sequence {s} names a block outside the pool")
    pool = _Pool(
        k_int, k_exponent, v_int, v_exponent, size,
        (k_int.stride(0), k_int.stride(1), k_int.stride(2)),
        (k_exponent.stride(0), k_exponent.stride(1)),
        (v_int.stride(0), v_int.stride(1), v_int.stride(2)),
        (v_exponent.stride(0), v_exponent.stride(1)),
    )  # fmt: skip
    return _launch(
        q, q_positions, query_starts, seq_lens, block_tables, pool, window, cap, "paged_attention"
    )


def _check_dtypes(q, k_int, k_exponent, v_int, v_exponent) -> None:
    if q.dtype != torch.float32 or k_int.dtype != torch.int32 or v_int.dtype != torch.int32:
        raise ValueError("attention: q must be float32, keys and values int32 block floats")
    if k_exponent.dtype != torch.int32 or v_exponent.dtype != torch.int32:
        raise ValueError("attention: exponents must be int32")
    if (
        k_int.stride(-1) != 1
        or v_int.stride(-1) != 1
        or k_exponent.stride(-1) != 1
        or v_exponent.stride(-1) != 1
    ):
        raise ValueError(
            "attention: the last axis of keys, values and exponents must be contiguous"
        )


def _launch(q, q_positions, query_starts, seq_lens, block_tables, pool: _Pool, window, cap, name):
    t, h, d = q.shape
    h_kv, dv = pool.v_int.shape[-3], pool.v_int.shape[-1]
    positions = torch.as_tensor(q_positions).to(device=q.device, dtype=torch.int32).contiguous()
    if positions.shape != (t,):
        raise ValueError(f"{name}: q_positions must be [{t}]")
    # each query lies in its sequence (one device sync for the whole batch)
    counts = torch.tensor([b - a for a, b in pairwise(query_starts)], device=q.device)
    owner = torch.repeat_interleave(torch.arange(len(seq_lens), device=q.device), counts)
    lens = torch.tensor(seq_lens, dtype=torch.int32, device=q.device)[owner]
    is_bad = (positions < 0) | (positions >= lens)
    if bool(is_bad.any()):
        s = int(owner[is_bad.nonzero()[0]])
        raise ValueError(f"{name}: query positions of sequence {s} must lie in [0, {seq_lens[s]})")
    qbf = block_float(q)  # contract 7.2: Q per token and head, as the reference rounds it
    out = torch.empty((t, h, dv), dtype=torch.float32, device=q.device)
    group = h // h_kv
    most_rows = max(b - a for a, b in pairwise(query_starts)) * group
    if most_rows == 0:
        return out
    d_pad = max(16, triton.next_power_of_2(d))
    block_dv = min(BLOCK_DV, max(16, triton.next_power_of_2(dv)))
    block_m = min(BLOCK_M, max(16, triton.next_power_of_2(most_rows)))
    # row tiles: each lies inside one sequence's rows [start * GROUP, stop * GROUP)
    tile_seq, tile_row = [], []
    for s, (a, b) in enumerate(pairwise(query_starts)):
        rows = range(a * group, b * group, block_m)
        tile_seq += [s] * len(rows)
        tile_row += list(rows)
    tiles = torch.tensor([tile_seq, tile_row], dtype=torch.int32).to(q.device)
    meta = torch.tensor([query_starts, [*seq_lens, 0]], dtype=torch.int32).to(q.device)
    block_tables = block_tables.contiguous()
    grid = (len(tile_seq), h_kv, triton.cdiv(dv, block_dv))
    _attention_kernel[grid](
        qbf.integers, qbf.exponent, positions, tiles[0], tiles[1], meta[0], meta[1],
        block_tables, pool.k_int, pool.k_exponent, pool.v_int, pool.v_exponent, out,
        0 if window is None else int(window),
        1.0 if cap is None else float(torch.tensor(cap, dtype=torch.float32)),
        qbf.integers.stride(0), qbf.integers.stride(1), qbf.exponent.stride(0),
        block_tables.stride(0), *pool.k_strides, *pool.ke_strides,
        *pool.v_strides, *pool.ve_strides, out.stride(0), out.stride(1),
        GROUP=group, D=d, DV=dv, D_PAD=d_pad, BLOCK_D=min(BLOCK_D, d_pad), BLOCK_DV=block_dv,
        HAS_WINDOW=window is not None, HAS_CAP=cap is not None, BLOCK_SIZE=pool.block_size,
        BITS=BF_BITS, CHUNK=KV_CHUNK, LOG2_CHUNK=LOG2_CHUNK, BLOCK_M=block_m,
        enable_fp_fusion=False,
        num_stages=2 if d_pad <= 128 else 1,  # bounds shared memory (123 / 57 KiB at 256)
    )  # fmt: skip
    return out
