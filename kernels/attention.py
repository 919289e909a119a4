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
Keys and values come as the cache stores them: int32 integers [H_kv, L, D] and int32
exponents [H_kv, L] (`kernels.quantize.block_float`). No split-KV.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from kernels import INTERPRETED
from kernels.activations import exp, softcap
from kernels.fp import exponent_f64, pow2_f64, rint_f64, tree_sum
from kernels.quantize import block_float
from reference.attention import KV_CHUNK
from reference.quantize import BF_BITS

# Static tiles: rows per program, and the head-size pieces of the Q.K and P.V dots (they
# bound float64 operands on chip: a [64, 64] float64 tile is 32 KiB). Bits never depend on
# them.
BLOCK_M = 32 if INTERPRETED else 16
BLOCK_D = 64
BLOCK_DV = 256 if INTERPRETED else 64
LOG2_CHUNK = KV_CHUNK.bit_length() - 1


@triton.jit
def _attention_kernel(
    q_ptr, qe_ptr, pos_ptr, k_ptr, ke_ptr, v_ptr, ve_ptr, o_ptr,
    n_rows, n_keys, window, cap,
    stride_qt, stride_qh, stride_qet, stride_kh, stride_kl, stride_keh,
    stride_vh, stride_vl, stride_veh, stride_ot, stride_oh,
    GROUP: tl.constexpr, D: tl.constexpr, DV: tl.constexpr,
    D_PAD: tl.constexpr, BLOCK_D: tl.constexpr, BLOCK_DV: tl.constexpr,
    HAS_WINDOW: tl.constexpr, HAS_CAP: tl.constexpr,
    BITS: tl.constexpr, CHUNK: tl.constexpr, LOG2_CHUNK: tl.constexpr, BLOCK_M: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0)
    kv_head = tl.program_id(1)
    pid_dv = tl.program_id(2)
    offs_r = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    is_row = offs_r < n_rows
    query = tl.minimum(offs_r, n_rows - 1) // GROUP
    head = kv_head * GROUP + offs_r % GROUP
    pos = tl.load(pos_ptr + query)
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
    k_base = k_ptr + kv_head.to(tl.int64) * stride_kh
    v_base = v_ptr + kv_head.to(tl.int64) * stride_vh
    m = tl.full([BLOCK_M], float("-inf"), tl.float32)
    denom = tl.zeros([BLOCK_M], tl.float32)
    acc = tl.zeros([BLOCK_M, BLOCK_DV], tl.float32)
    for c in range(first_key // CHUNK, pos_hi // CHUNK + 1):
        keys = c * CHUNK + offs_j
        in_cache = keys < n_keys
        e_k = tl.load(ke_ptr + kv_head * stride_keh + keys, mask=in_cache, other=0)
        exact = tl.zeros([BLOCK_M, CHUNK], tl.float64)
        for d0 in tl.static_range(0, D_PAD, BLOCK_D):
            dims = d0 + offs_d
            q_int = tl.load(q_rows + dims[None, :], mask=dims[None, :] < D, other=0)
            k_at = k_base + keys[:, None].to(tl.int64) * stride_kl + dims[None, :]
            k_int = tl.load(k_at, mask=in_cache[:, None] & (dims[None, :] < D), other=0)
            exact += tl.dot(q_int.to(tl.float64), tl.trans(k_int.to(tl.float64)))  # exact
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

        e_v = tl.load(ve_ptr + kv_head * stride_veh + keys, mask=in_cache, other=0)
        p_scaled = p.to(tl.float64) * pow2_f64(e_v)[None, :]  # exact
        p_max = tl.max(p_scaled, axis=1)
        p_zero = ~(p_max > 0)
        e_p = tl.where(p_zero, 0, exponent_f64(p_max) - (BITS - 1))
        p_int = rint_f64(p_scaled * pow2_f64(-e_p)[:, None])
        p_int = tl.where(p_zero[:, None], 0.0, p_int)
        v_at = v_base + keys[:, None].to(tl.int64) * stride_vl + offs_dv[None, :]
        v_int = tl.load(v_at, mask=in_cache[:, None] & (offs_dv[None, :] < DV), other=0)
        pv_exact = tl.dot(p_int, v_int.to(tl.float64)) + 0.0
        pv = (pv_exact * pow2_f64(e_p)[:, None]).to(tl.float32)

        denom = denom * alpha + denom_chunk
        acc = acc * alpha[:, None] + pv
        m = m_new
    out = tl.div_rn(acc, denom[:, None])
    o_at = query[:, None].to(tl.int64) * stride_ot + head[:, None] * stride_oh + offs_dv[None, :]
    tl.store(o_ptr + o_at, out, mask=is_row[:, None] & (offs_dv[None, :] < DV))


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
    """Contract 7 for one sequence -> float32 [T, H, Dv].

    q float32 [T, H, D] (RoPE and the attention scale applied); q_positions int [T], each
    < L; keys/values for positions 0..L-1 as block floats: k_int int32 [H_kv, L, D],
    k_exponent int32 [H_kv, L], v_int int32 [H_kv, L, Dv], v_exponent int32 [H_kv, L]
    (last axes contiguous; views into a larger cache are fine). H a multiple of H_kv.
    """
    t, h, d = q.shape
    h_kv, length, dv = v_int.shape
    if h % h_kv or tuple(k_int.shape) != (h_kv, length, d):
        raise ValueError(f"attention: q {tuple(q.shape)} does not fit keys {tuple(k_int.shape)}")
    if q.dtype != torch.float32 or k_int.dtype != torch.int32 or v_int.dtype != torch.int32:
        raise ValueError("attention: q must be float32, keys and values int32 block floats")
    if k_exponent.shape != (h_kv, length) or v_exponent.shape != (h_kv, length):
        raise ValueError("attention: exponents must be [H_kv, L]")
    if (
        k_int.stride(2) != 1
        or v_int.stride(2) != 1
        or k_exponent.stride(1) != 1
        or v_exponent.stride(1) != 1
    ):
        raise ValueError(
            "attention: the last axis of keys, values and exponents must be contiguous"
        )
    positions = torch.as_tensor(q_positions).to(device=q.device, dtype=torch.int32).contiguous()
    if t and (int(positions.min()) < 0 or int(positions.max()) >= length):
        raise ValueError(f"attention: query positions must lie in [0, {length})")
    qbf = block_float(q)  # contract 7.2: Q per token and head, as the reference rounds it
    out = torch.empty((t, h, dv), dtype=torch.float32, device=q.device)
    group = h // h_kv
    n_rows = t * group
    if n_rows == 0:
        return out
    d_pad = max(16, triton.next_power_of_2(d))
    block_dv = min(BLOCK_DV, max(16, triton.next_power_of_2(dv)))
    block_m = min(BLOCK_M, max(16, triton.next_power_of_2(n_rows)))
    grid = (triton.cdiv(n_rows, block_m), h_kv, triton.cdiv(dv, block_dv))
    _attention_kernel[grid](
        qbf.integers, qbf.exponent, positions, k_int, k_exponent, v_int, v_exponent, out,
        n_rows, length, 0 if window is None else int(window),
        1.0 if cap is None else float(torch.tensor(cap, dtype=torch.float32)),
        qbf.integers.stride(0), qbf.integers.stride(1), qbf.exponent.stride(0),
        k_int.stride(0), k_int.stride(1), k_exponent.stride(0),
        v_int.stride(0), v_int.stride(1), v_exponent.stride(0), out.stride(0), out.stride(1),
        GROUP=group, D=d, DV=dv, D_PAD=d_pad, BLOCK_D=min(BLOCK_D, d_pad), BLOCK_DV=block_dv,
        HAS_WINDOW=window is not None, HAS_CAP=cap is not None, BITS=BF_BITS, CHUNK=KV_CHUNK,
        LOG2_CHUNK=LOG2_CHUNK, BLOCK_M=block_m, enable_fp_fusion=False,
        num_stages=2 if d_pad <= 128 else 1,  # bounds shared memory (123 / 57 KiB at 256)
    )  # fmt: skip
    return out
