"""The contract's two quantisers (docs/PRECISION.md, 3), twin of `reference.quantize`.

- `quantize_activations` (3.1): per 32-block along K, 12-bit integers q (int16, |q| <= 2048)
  and the block's power-of-two exponent e: values = q * 2^e. The matmul kernels consume q
  and e directly (the reference consumes the float32 values; same real numbers).
- `block_float` (3.2): per vector along the last axis, 22-bit integers (int32) and one
  exponent: values = i * 2^e. Keys and values are cached in this form.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
import triton
import triton.language as tl

from exactserve.kernels.fp import INF_BITS, TINY_BITS, abs_bits, pow2_f32, rint_f32
from exactserve.reference.quantize import ACT_BITS, ACT_BLOCK, BF_BITS

ACT_ROW_TILE = 16
ACT_COL_TILE = 256  # a multiple of ACT_BLOCK; any value gives the same bits
BF_ROW_TILE = 16


class QuantizedActivations(NamedTuple):
    """Activations [M, K] rounded per 32-block (contract 3.1): value = q * 2^exponent.

    q int16 [M, K] (|q| <= 2048), exponent int32 [M, K // 32] (0 for all-zero blocks).
    """

    q: torch.Tensor
    exponent: torch.Tensor


@triton.jit
def block_exponent(amax_bits, BITS: tl.constexpr):
    """From the bits of a block's max |x| (an integer max of `abs_bits`): the exponent e
    with amax * 2^-e in [2^(BITS-1), 2^BITS), and whether the block quantises to zero
    (amax < 2^-100, or the block holds a NaN or an infinity): contract 3.1 steps 2-3,
    3.2 steps 1-2. Integer operations only, so NaN takes the same path on every backend."""
    is_zero = (amax_bits < TINY_BITS) | (amax_bits >= INF_BITS)
    e = tl.where(is_zero, 0, (amax_bits >> 23) - 127 - (BITS - 1))
    return e, is_zero


@triton.jit
def _quantize_activations_kernel(
    x_ptr, q_ptr, e_ptr, n_rows, n_cols, stride_xm, stride_qm, stride_em,
    BITS: tl.constexpr, BLOCK: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_K: tl.constexpr,
):  # fmt: skip
    pid_m = tl.program_id(0)
    pid_k = tl.program_id(1)
    N_BLOCKS: tl.constexpr = BLOCK_K // BLOCK
    offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_k = pid_k * BLOCK_K + tl.arange(0, BLOCK_K)
    mask = (offs_m[:, None] < n_rows) & (offs_k[None, :] < n_cols)
    rows = offs_m[:, None].to(tl.int64)
    x = tl.load(x_ptr + rows * stride_xm + offs_k[None, :], mask=mask, other=0.0)
    x = tl.reshape(x, (BLOCK_M, N_BLOCKS, BLOCK))
    e, is_zero = block_exponent(tl.max(abs_bits(x), axis=2), BITS)  # integer max: exact
    q = rint_f32(x * pow2_f32(-e)[:, :, None])  # exact scaling, then round half to even
    q = tl.where(is_zero[:, :, None], 0.0, q)
    tl.store(
        q_ptr + rows * stride_qm + offs_k[None, :],
        tl.reshape(q, (BLOCK_M, BLOCK_K)).to(tl.int16),
        mask=mask,
    )
    offs_b = pid_k * N_BLOCKS + tl.arange(0, N_BLOCKS)
    e_mask = (offs_m[:, None] < n_rows) & (offs_b[None, :] < n_cols // BLOCK)
    tl.store(e_ptr + rows * stride_em + offs_b[None, :], e, mask=e_mask)


def quantize_activations(x: torch.Tensor) -> QuantizedActivations:
    """Contract 3.1. x float32 [M, K], K a multiple of 32."""
    if x.dtype != torch.float32 or x.dim() != 2:
        raise ValueError(
            f"quantize_activations: need float32 [M, K], got {x.dtype} {tuple(x.shape)}"
        )
    m, k = x.shape
    if k % ACT_BLOCK:
        raise ValueError(f"activation length {k} is not a multiple of {ACT_BLOCK}")
    x = x.contiguous()
    q = torch.empty((m, k), dtype=torch.int16, device=x.device)
    e = torch.empty((m, k // ACT_BLOCK), dtype=torch.int32, device=x.device)
    if m:
        block_k = min(ACT_COL_TILE, triton.next_power_of_2(k))
        grid = (triton.cdiv(m, ACT_ROW_TILE), triton.cdiv(k, block_k))
        _quantize_activations_kernel[grid](
            x, q, e, m, k, x.stride(0), q.stride(0), e.stride(0),
            BITS=ACT_BITS, BLOCK=ACT_BLOCK, BLOCK_M=ACT_ROW_TILE, BLOCK_K=block_k,
            enable_fp_fusion=False,
        )  # fmt: skip
    return QuantizedActivations(q, e)


class BlockFloat(NamedTuple):
    """Vectors as integers * 2^exponent (contract 3.2): integers int32 [..., n] with
    |i| <= 2^21, exponent int32 [...] (0 for all-zero vectors)."""

    integers: torch.Tensor
    exponent: torch.Tensor


@triton.jit
def _block_float_kernel(
    v_ptr, i_ptr, e_ptr, n_rows, n_cols,
    BITS: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_N: tl.constexpr,
):  # fmt: skip
    pid = tl.program_id(0)
    offs_r = pid * BLOCK_R + tl.arange(0, BLOCK_R)
    offs_n = tl.arange(0, BLOCK_N)
    mask = (offs_r[:, None] < n_rows) & (offs_n[None, :] < n_cols)
    at = offs_r[:, None].to(tl.int64) * n_cols + offs_n[None, :]
    v = tl.load(v_ptr + at, mask=mask, other=0.0)
    e, is_zero = block_exponent(tl.max(abs_bits(v), axis=1), BITS)
    integers = rint_f32(v * pow2_f32(-e)[:, None])  # |v * 2^-e| < 2^21: rint_f32 is valid
    integers = tl.where(is_zero[:, None], 0.0, integers)
    tl.store(i_ptr + at, integers.to(tl.int32), mask=mask)
    tl.store(e_ptr + offs_r, e, mask=offs_r < n_rows)


def block_float(v: torch.Tensor) -> BlockFloat:
    """Contract 3.2 for float32 vectors along the last axis of v [..., n]."""
    if v.dtype != torch.float32:
        raise ValueError(f"block_float: need float32, got {v.dtype}")
    v = v.contiguous()
    n = v.shape[-1]
    rows = v.numel() // max(n, 1)
    integers = torch.empty(v.shape, dtype=torch.int32, device=v.device)
    exponent = torch.empty(v.shape[:-1], dtype=torch.int32, device=v.device)
    if rows:
        grid = (triton.cdiv(rows, BF_ROW_TILE),)
        _block_float_kernel[grid](
            v, integers, exponent, rows, n,
            BITS=BF_BITS, BLOCK_R=BF_ROW_TILE, BLOCK_N=triton.next_power_of_2(n),
            enable_fp_fusion=False,
        )  # fmt: skip
    return BlockFloat(integers, exponent)
