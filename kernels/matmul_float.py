"""Kernels of y = x @ W^T for float weights (F32, F16, BF16; docs/PRECISION.md, 5.3).

Each 32-group of a weight row is rounded in the kernel, as the reference does at load:
e_w = exponent(max |w|) - 20 (+0 groups with max < 2^-100 become zero, e_w = 0),
q_w = rint(w * 2^-e_w), |q_w| <= 2^21. Then contract 5.2 with no offset:

    isum = sum_k q_w * q_a                         exact in float64 (|isum| <= 2^37)
    acc  = fl32(acc + fl32(isum * 2^(e_a + e_w)))  the product is exact in float64

prefill: isum by a float64 `tl.dot` of integer-valued operands (every partial sum is an
integer below 2^53, so any order and FMA are exact). decode: float64 products and `tl.sum`
(exact for the same reason). Launched by `kernels.matmul`.
"""

from __future__ import annotations

import triton
import triton.language as tl

from exactserve.kernels.fp import (
    INF_BITS,
    TINY_BITS,
    abs_bits,
    end_operand_search,
    load_float,
    pow2_f32,
    pow2_f64,
    rint_f32,
)
from exactserve.reference import matmul as ref

FLOAT_BITS = tl.constexpr(ref.FLOAT_BITS)  # |q_w| <= 2^21


@triton.jit
def float_group(w, AXIS: tl.constexpr):
    """Contract 5.3 for weights w with the 32-group along AXIS: (q_w float64, e_w int32).
    Groups below 2^-100 or holding a NaN become zero, as in the reference; the max is an
    integer max of the bits (a float `tl.max` drops NaN on a GPU)."""
    amax_bits = tl.max(abs_bits(w), axis=AXIS)
    is_zero = (amax_bits < TINY_BITS) | (amax_bits > INF_BITS)
    e = tl.where(is_zero, 0, (amax_bits >> 23) - 127 - (FLOAT_BITS - 1))
    q = rint_f32(w * tl.expand_dims(pow2_f32(-e), AXIS))
    q = tl.where(tl.expand_dims(is_zero, AXIS), 0.0, q)
    return q.to(tl.float64), e


@triton.jit
def _float_prefill_kernel(
    aq_ptr, ae_ptr, w_ptr, bias_ptr, y_ptr, M, N, K,
    stride_am, stride_em, stride_wn, stride_ym,
    ELEMENT_BYTES: tl.constexpr, IS_BF16: tl.constexpr, HAS_BIAS: tl.constexpr,
    BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, 32)
    rows_m = tl.minimum(offs_m, M - 1).to(tl.int64)
    w_rows = w_ptr + tl.minimum(offs_n, N - 1).to(tl.int64) * stride_wn
    acc = tl.zeros([BLOCK_M, BLOCK_N], tl.float32)
    for b in range(0, K // 32):
        k0 = b * 32
        a = tl.load(aq_ptr + rows_m[:, None] * stride_am + k0 + offs_k[None, :]).to(tl.int32)
        a = end_operand_search(a).to(tl.float64)  # int16 and byte loads: see the helper
        e_a = tl.load(ae_ptr + rows_m * stride_em + b)
        w = load_float(
            w_rows[None, :] + (k0 + offs_k[:, None]) * ELEMENT_BYTES, ELEMENT_BYTES, IS_BF16
        )
        w = end_operand_search(w.to(tl.int32, bitcast=True)).to(tl.float32, bitcast=True)
        q, e_w = float_group(w, 0)  # [32, BLOCK_N], [BLOCK_N]
        isum = tl.dot(a, q, input_precision="ieee")  # float64, exact
        t = (isum * pow2_f64(e_a[:, None] + e_w[None, :])).to(tl.float32)
        acc = acc + t
    if HAS_BIAS:
        acc = acc + tl.load(bias_ptr + tl.minimum(offs_n, N - 1))[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :], acc, mask=mask)


@triton.jit
def _float_decode_kernel(
    aq_ptr, ae_ptr, w_ptr, bias_ptr, y_ptr, M, N, K,
    stride_am, stride_em, stride_wn, stride_ym,
    ELEMENT_BYTES: tl.constexpr, IS_BF16: tl.constexpr, HAS_BIAS: tl.constexpr,
    M_PAD: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    pid_n = tl.program_id(0)
    offs_m = tl.arange(0, M_PAD)
    offs_n = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    offs_k = tl.arange(0, 32)
    rows_m = tl.minimum(offs_m, M - 1).to(tl.int64)
    w_rows = w_ptr + tl.minimum(offs_n, N - 1).to(tl.int64) * stride_wn
    acc = tl.zeros([M_PAD, BLOCK_N], tl.float32)
    for b in range(0, K // 32):
        k0 = b * 32
        a = tl.load(aq_ptr + rows_m[:, None] * stride_am + k0 + offs_k[None, :]).to(tl.float64)
        e_a = tl.load(ae_ptr + rows_m * stride_em + b)
        w = load_float(
            w_rows[:, None] + (k0 + offs_k[None, :]) * ELEMENT_BYTES, ELEMENT_BYTES, IS_BF16
        )
        q, e_w = float_group(w, 1)  # [BLOCK_N, 32], [BLOCK_N]
        isum = tl.sum(a[:, None, :] * q[None, :, :], axis=2)  # float64, exact
        t = (isum * pow2_f64(e_a[:, None] + e_w[None, :])).to(tl.float32)
        acc = acc + t
    if HAS_BIAS:
        acc = acc + tl.load(bias_ptr + tl.minimum(offs_n, N - 1))[None, :]
    mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(y_ptr + offs_m[:, None].to(tl.int64) * stride_ym + offs_n[None, :], acc, mask=mask)
