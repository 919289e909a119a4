"""Kernels of y = x @ W^T for quantised weights (docs/PRECISION.md, 5.1-5.2, 5.4), decoded
from their GGUF blocks in the kernel. Launched by `kernels.matmul`.

Per output element, groups of 16 or 32 along K in ascending order (contract 5.2):

    isum = sum_k q_w * q_a                    exact int32 (|isum| <= 2^23)
    t    = fl(scale * fl(isum) * 2^e_a)       isum -> fp32 and * 2^e_a are exact
    [t   = fl(t + fl(offset * psum * 2^e_a))] types with a min; psum = sum_k q_a, exact
    acc  = fl(acc + t)                        acc starts at +0.0
    [y   = fl(acc + bias)]                    contract 5.4

Two kernels, the same bits (tested against each other and the reference):
- prefill: tiles [BLOCK_M, BLOCK_N]; isum by int8 `tl.dot` with int32 accumulation. The
  12-bit q_a is split into two int8 limbs, q_a = 64 * hi + lo with lo in [0, 63], so
  isum = 64 * dot(hi, q_w) + dot(lo, q_w). Types with 16-weight groups run one dot per
  group, with the other half of the 32-column activation block zeroed (int8 dots need
  K >= 32 on NVIDIA).
- decode (few rows): each program owns BLOCK_N output features for every row, so each
  weight byte is read once per call. A step decodes SPAN weights per row; isum by int32
  products and an integer `tl.sum` (exact in any order); the span's group terms are formed
  together and added to acc one group at a time, in ascending order.
Neither splits K, and no tile depends on M along K.
"""

from __future__ import annotations

import triton
import triton.language as tl

from exactserve.kernels.fp import pow2_f32
from exactserve.kernels.quants.unpack import unpack_group, unpack_q


@triton.jit
def int8_limb_dot(a, q):
    """Exact sum_k a[m, k] * q[k, n] for int32 a in [-2048, 2048] and int8 q: two int8
    `tl.dot`s with int32 accumulation over the limbs a = 64 * (a >> 6) + (a & 63)."""
    hi = (a >> 6).to(tl.int8)
    lo = (a & 63).to(tl.int8)
    return tl.dot(hi, q, out_dtype=tl.int32) * 64 + tl.dot(lo, q, out_dtype=tl.int32)


@triton.jit
def add_group_term(acc, isum, psum, a_scale, scale, offset, HAS_OFFSET: tl.constexpr):
    """acc + t for one group (contract 5.2 steps 2-4). acc, isum [R, C]; psum, a_scale
    (= 2^e_a) [R]; scale, offset [C]."""
    t = scale[None, :] * (isum.to(tl.float32) * a_scale[:, None])
    if HAS_OFFSET:
        t = t + offset[None, :] * (psum.to(tl.float32) * a_scale)[:, None]
    return acc + t


@triton.jit
def group_of(QTYPE: tl.constexpr, blk, g, BLOCK_N: tl.constexpr):
    """(scale, offset) [BLOCK_N] of group g (a scalar) of the blocks at `blk` [BLOCK_N]."""
    return unpack_group(QTYPE, blk, tl.zeros([BLOCK_N], tl.int32) + g)


@triton.jit
def _prefill_kernel(
    aq_ptr, ae_ptr, w_ptr, bias_ptr, y_ptr, M, N, K,
    stride_am, stride_em, stride_wn, stride_ym,
    QTYPE: tl.constexpr, BLOCK_SIZE: tl.constexpr, TYPE_SIZE: tl.constexpr,
    GROUP: tl.constexpr, HAS_OFFSET: tl.constexpr, HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, 32)
    rows_m = tl.minimum(offs_m, M - 1).to(tl.int64)  # clamped: every load in bounds
    w_rows = w_ptr + tl.minimum(offs_n, N - 1).to(tl.int64) * stride_wn
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for b in range(0, K // 32):  # activation blocks, ascending (contract 5.2)
        k0 = b * 32
        a = tl.load(aq_ptr + rows_m[:, None] * stride_am + k0 + offs_k[None, :]).to(tl.int32)
        a_scale = pow2_f32(tl.load(ae_ptr + rows_m * stride_em + b))
        blk = w_rows + (k0 // BLOCK_SIZE) * TYPE_SIZE
        e0 = k0 % BLOCK_SIZE
        q = unpack_q(QTYPE, blk[None, :], e0 + offs_k[:, None]).to(tl.int8)  # [32, BLOCK_N]
        if GROUP == 32:
            scale, offset = group_of(QTYPE, blk, e0 // 32, BLOCK_N)
            isum = int8_limb_dot(a, q)
            acc = add_group_term(acc, isum, tl.sum(a, axis=1), a_scale, scale, offset, HAS_OFFSET)
        else:
            is_first = (offs_k < 16)[None, :]
            a0 = tl.where(is_first, a, 0)
            scale, offset = group_of(QTYPE, blk, e0 // 16, BLOCK_N)
            isum = int8_limb_dot(a0, q)
            acc = add_group_term(acc, isum, tl.sum(a0, axis=1), a_scale, scale, offset, HAS_OFFSET)
            a1 = tl.where(is_first, 0, a)
            scale, offset = group_of(QTYPE, blk, e0 // 16 + 1, BLOCK_N)
            isum = int8_limb_dot(a1, q)
            acc = add_group_term(acc, isum, tl.sum(a1, axis=1), a_scale, scale, offset, HAS_OFFSET)
    if HAS_BIAS:
        acc = acc + tl.load(bias_ptr + tl.minimum(offs_n, N - 1))[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :], acc, mask=mask)


@triton.jit
def column(t, g, N_GROUPS: tl.constexpr):
    """t[:, :, g] of t [R, C, N_GROUPS], exactly: a sum of t[..., g] and +0.0s (a -0.0 comes
    out as +0.0, which the accumulator cannot tell apart: acc starts at +0.0 and a rounded
    sum is -0.0 only if both operands are, so acc is never -0.0 and acc + (+-0.0) = acc)."""
    is_g = tl.arange(0, N_GROUPS)[None, None, :] == g
    return tl.sum(tl.where(is_g, t, 0.0), axis=2)


@triton.jit
def _decode_kernel(
    aq_ptr, ae_ptr, w_ptr, bias_ptr, y_ptr, M, N, K,
    stride_am, stride_em, stride_wn, stride_ym,
    QTYPE: tl.constexpr, BLOCK_SIZE: tl.constexpr, TYPE_SIZE: tl.constexpr,
    GROUP: tl.constexpr, HAS_OFFSET: tl.constexpr, HAS_BIAS: tl.constexpr,
    M_PAD: tl.constexpr, BLOCK_N: tl.constexpr, SPAN: tl.constexpr,
):  # fmt: skip
    # Each step decodes SPAN weights (a multiple of 32) of BLOCK_N rows; the
    # span's groups are added to acc one at a time, in order. Weights past K (the last
    # span of a row) meet zero activations: their terms are +-0.0 and change no bit.
    pid_n = tl.program_id(0)
    N_GROUPS: tl.constexpr = SPAN // GROUP
    offs_m = tl.arange(0, M_PAD)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_e = tl.arange(0, SPAN)
    offs_g = tl.arange(0, N_GROUPS)
    rows_m = tl.minimum(offs_m, M - 1).to(tl.int64)
    w_rows = w_ptr + tl.minimum(offs_n, N - 1).to(tl.int64) * stride_wn
    acc = tl.zeros([M_PAD, BLOCK_N], tl.float32)
    for k0 in range(0, K, SPAN):
        ks = tl.minimum(k0 + offs_e, K - 1)  # clamped weight columns [SPAN]
        a = tl.load(
            aq_ptr + rows_m[:, None] * stride_am + k0 + offs_e[None, :],
            mask=(k0 + offs_e < K)[None, :],
            other=0,
        ).to(tl.int32)  # [M_PAD, SPAN]
        kg = tl.minimum(k0 + offs_g * GROUP, K - 1)  # first column of each group
        e_a = tl.load(ae_ptr + rows_m[:, None] * stride_em + kg[None, :] // 32)
        a_scale = pow2_f32(e_a)  # [M_PAD, N_GROUPS]: 2^e_a of each group's block
        q = unpack_q(
            QTYPE,
            w_rows[:, None] + (ks // BLOCK_SIZE * TYPE_SIZE)[None, :],
            (ks % BLOCK_SIZE)[None, :],
        )  # [BLOCK_N, SPAN]
        products = a[:, None, :] * q[None, :, :]  # [M_PAD, BLOCK_N, SPAN], exact
        isum = tl.sum(tl.reshape(products, (M_PAD, BLOCK_N, N_GROUPS, GROUP)), axis=3)
        scale, offset = unpack_group(
            QTYPE,
            w_rows[:, None] + (kg // BLOCK_SIZE * TYPE_SIZE)[None, :],
            ((kg % BLOCK_SIZE) // GROUP)[None, :],
        )  # [BLOCK_N, N_GROUPS]
        t = scale[None, :, :] * (isum.to(tl.float32) * a_scale[:, None, :])
        if HAS_OFFSET:
            psum = tl.sum(tl.reshape(a, (M_PAD, N_GROUPS, GROUP)), axis=2)
            t = t + offset[None, :, :] * (psum.to(tl.float32) * a_scale)[:, None, :]
        for g in tl.static_range(N_GROUPS):
            acc = acc + column(t, g, N_GROUPS)
    if HAS_BIAS:
        acc = acc + tl.load(bias_ptr + tl.minimum(offs_n, N - 1))[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :], acc, mask=mask)
