"""Rounding of activations to integers: the two quantisers of the contract (PRECISION.md, 3).

- `quantize_activations` (3.1): matmul inputs, per block of 32 along K aligned to index 0,
  to 12-bit integers times a power of two. Products with int8 weights then sum exactly in
  fp32 (|q_w * q_a| <= 2^7 * 2^11, 32 of them stay below 2^23).
- `block_float` (3.2): attention operands (Q, K, V rows, probabilities), per vector, to
  22-bit integers times a power of two. Products of two such integers are below 2^42, so a
  dot product over up to 2048 of them is exact in float64 whatever the order.

Both pick the power of two from the exponent of the block's largest magnitude, so neither
divides and neither depends on anything outside its own block. A block holding a NaN or an
infinity quantises to zero (3.1 step 2, 3.2 step 1): the integer form has no code for them.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from exactserve.reference.fp import (
    F32,
    F64,
    TINY_F32,
    exponent_f32,
    exponent_f64,
    pow2_f32,
    pow2_f64,
    rint_f32,
    rint_f64,
)

ACT_BLOCK = 32  # contract 3.1: activation block length along K
ACT_BITS = 11  # |q_a| <= 2^11: the block maximum lands in [2^10, 2^11]
BF_BITS = 21  # contract 3.2: |integer| <= 2^21


def is_zero_block(amax: np.ndarray) -> np.ndarray:
    """Blocks that quantise to zero (3.1 step 2, 3.2 step 1), from their float32 `max |x|`
    (NaN when the block holds a NaN): below 2^-100, NaN or infinite."""
    return ~((amax >= TINY_F32) & (amax < F32(np.inf)))


class QuantizedActivations(NamedTuple):
    """Activations [M, K] rounded per 32-block: values = q * 2^exponent, exactly.

    `values` float32 [M, K] holds q * 2^e (exact; what the integer dot products consume),
    `exponent` int32 [M, K // 32] is e per block (0 for all-zero blocks).
    """

    values: np.ndarray
    exponent: np.ndarray


def quantize_activations(x: np.ndarray) -> QuantizedActivations:
    """Contract 3.1. x float32 [M, K], K a multiple of 32."""
    x = np.asarray(x, dtype=F32)
    m, k = x.shape
    if k % ACT_BLOCK:
        raise ValueError(f"activation length {k} is not a multiple of {ACT_BLOCK}")
    blocks = x.reshape(m, k // ACT_BLOCK, ACT_BLOCK)
    amax = np.abs(blocks).max(axis=-1)  # exact; NaN if the block holds a NaN
    is_zero = is_zero_block(amax)
    e = np.where(is_zero, np.int32(0), exponent_f32(amax) - np.int32(ACT_BITS - 1))
    q = rint_f32(blocks * pow2_f32(-e)[..., None])  # exact scaling, then round half to even
    q = np.where(is_zero[..., None], F32(0), q)
    values = (q * pow2_f32(e)[..., None]).reshape(m, k)  # exact
    return QuantizedActivations(values, e.astype(np.int32))


class BlockFloat(NamedTuple):
    """Vectors rounded to `integers * scale`: integers float64 [..., n] with |i| <= 2^21,
    scale float64 [...] a power of two (1.0 for all-zero vectors)."""

    integers: np.ndarray
    scale: np.ndarray


def block_float(v: np.ndarray) -> BlockFloat:
    """Contract 3.2 for float32 vectors along the last axis."""
    v = np.asarray(v, dtype=F32)
    amax = np.abs(v).max(axis=-1)
    is_zero = is_zero_block(amax)
    e = np.where(is_zero, np.int32(0), exponent_f32(amax) - np.int32(BF_BITS - 1))
    integers = rint_f32(v * pow2_f32(-e)[..., None])  # |v * 2^-e| < 2^21: rint_f32 is valid
    integers = np.where(is_zero[..., None], F32(0), integers)
    return BlockFloat(integers.astype(F64), pow2_f64(e))


def block_float_f64(v: np.ndarray) -> BlockFloat:
    """Contract 3.2 for non-negative float64 vectors (the scaled softmax probabilities)."""
    v = np.asarray(v, dtype=F64)
    amax = v.max(axis=-1)
    is_zero = ~(amax > 0)
    e = np.where(is_zero, np.int64(0), exponent_f64(amax) - np.int64(BF_BITS - 1))
    integers = rint_f64(v * pow2_f64(-e)[..., None])
    integers = np.where(is_zero[..., None], F64(0), integers)
    return BlockFloat(integers, pow2_f64(e))
