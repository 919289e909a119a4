"""Device decoders of the legacy 32-weight block types: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0.

Twin of `reference.quants.legacy`; layouts from ggml-common.h (drawn there too). For each
type, `<type>_q(blk, e)` gives the integer weight q (int32) of weight e (0..31) of the block
starting at byte pointer `blk`, and `<type>_group(blk, g)` its group's (scale, offset) as
float32 (offset +0.0 for types without a min; callers skip it). `blk` and `e` (or `g`)
broadcast together; every pointer must be in bounds (callers clamp, then mask stores).
"""

from __future__ import annotations

import triton
import triton.language as tl

from exactserve.kernels.fp import load_f16, load_u8


@triton.jit
def nibble(qs, e):
    """Weight e of a 32-weight nibble run at `qs`: low nibble of qs[e % 16] for e < 16, high
    nibble for e >= 16 (ggml's `qs[j] & 0xF`, `qs[j] >> 4`)."""
    return (load_u8(qs + e % 16) >> ((e // 16) * 4)) & 15


@triton.jit
def high_bit(qh, e):
    """Bit e of the little-endian 32-bit `qh` at byte pointer `qh` (Q5_0, Q5_1)."""
    return (load_u8(qh + e // 8) >> (e % 8)) & 1


# Q4_0, 18 bytes: | d f16 | qs[16] |; q = nibble - 8
@triton.jit
def q4_0_q(blk, e):
    return nibble(blk + 2, e) - 8


@triton.jit
def q4_0_group(blk, g):
    return load_f16(blk), tl.zeros(g.shape, tl.float32)


# Q4_1, 20 bytes: | d f16 | m f16 | qs[16] |; q = nibble, offset = m
@triton.jit
def q4_1_q(blk, e):
    return nibble(blk + 4, e)


@triton.jit
def q4_1_group(blk, g):
    return load_f16(blk), load_f16(blk + 2)


# Q5_0, 22 bytes: | d f16 | qh u32 | qs[16] |; q = (nibble | bit e of qh << 4) - 16
@triton.jit
def q5_0_q(blk, e):
    return (nibble(blk + 6, e) | (high_bit(blk + 2, e) << 4)) - 16


@triton.jit
def q5_0_group(blk, g):
    return load_f16(blk), tl.zeros(g.shape, tl.float32)


# Q5_1, 24 bytes: | d f16 | m f16 | qh u32 | qs[16] |; q = nibble | bit e of qh << 4
@triton.jit
def q5_1_q(blk, e):
    return nibble(blk + 8, e) | (high_bit(blk + 4, e) << 4)


@triton.jit
def q5_1_group(blk, g):
    return load_f16(blk), load_f16(blk + 2)


# Q8_0, 34 bytes: | d f16 | qs[32] int8 |; q = qs[e]
@triton.jit
def q8_0_q(blk, e):
    return (load_u8(blk + 2 + e) ^ 128) - 128


@triton.jit
def q8_0_group(blk, g):
    return load_f16(blk), tl.zeros(g.shape, tl.float32)
