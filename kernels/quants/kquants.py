"""Device decoders of the K-quant super-blocks (256 weights): Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.

Twin of `reference.quants.kquants` (layouts drawn there, from ggml-common.h). Same calling
convention as `kernels.quants.legacy`: `<type>_q(blk, e)` for weight e in 0..255 and
`<type>_group(blk, g)` -> (scale, offset) for group g (16 or 32 weights).
Scales are the exact products the reference forms: d * sub-scale, -(dmin * m).
"""

from __future__ import annotations

import triton
import triton.language as tl

from exactserve.kernels.fp import load_f16, load_u8, neg_f32


@triton.jit
def two_bit_plane(qs, e):
    """Weight e of 2-bit fields numbered per 128-weight half h: weight h*128 + p*32 + l is
    plane p (bits 2p, 2p+1) of qs[h*32 + l] (Q2_K, Q3_K low bits)."""
    r = e % 128
    return (load_u8(qs + (e // 128) * 32 + r % 32) >> ((r // 32) * 2)) & 3


@triton.jit
def bit_plane(bits, e):
    """Weight p*32 + l is bit p of bits[l] (Q3_K hmask, Q5_K qh)."""
    return (load_u8(bits + e % 32) >> (e // 32)) & 1


@triton.jit
def nibble_runs_64(qs, e):
    """Four runs of 32 bytes: weight 64r + l (l < 32) is the low nibble of qs[32r + l],
    64r + 32 + l its high nibble (Q4_K, Q5_K)."""
    return (load_u8(qs + (e // 64) * 32 + e % 32) >> (((e // 32) % 2) * 4)) & 15


@triton.jit
def scale_min_k4(packed, g):
    """Six-bit (sc, m) of group g (0..7) from the 12 `scales` bytes b of Q4_K/Q5_K
    (ggml `get_scale_min_k4`); j = g % 4:
        g < 4: sc = b[j] & 63,                     m = b[j+4] & 63
        g >= 4: sc = (b[j+8] & 15) | (b[j] >> 6) << 4, m = (b[j+8] >> 4) | (b[j+4] >> 6) << 4
    """
    j = g % 4
    b0 = load_u8(packed + j)
    b1 = load_u8(packed + 4 + j)
    b2 = load_u8(packed + 8 + j)
    is_low = g < 4
    sc = tl.where(is_low, b0 & 63, (b2 & 15) | ((b0 >> 6) << 4))
    m = tl.where(is_low, b1 & 63, (b2 >> 4) | ((b1 >> 6) << 4))
    return sc, m


# Q2_K, 84 bytes: | scales[16] | qs[64] | d f16 | dmin f16 |
@triton.jit
def q2_k_q(blk, e):
    return two_bit_plane(blk + 16, e)


@triton.jit
def q2_k_group(blk, g):
    sub = load_u8(blk + g)
    scale = load_f16(blk + 80) * (sub & 15).to(tl.float32)
    offset = neg_f32(load_f16(blk + 82) * (sub >> 4).to(tl.float32))
    return scale, offset


# Q3_K, 110 bytes: | hmask[32] | qs[64] | scales[12] | d f16 |; q = low - 4 + 4 * hmask bit
@triton.jit
def q3_k_q(blk, e):
    return two_bit_plane(blk + 32, e) - 4 + (bit_plane(blk, e) << 2)


@triton.jit
def q3_k_group(blk, g):
    # s[g]: low 4 bits = nibble g // 8 of scales[g % 8]; high 2 bits = plane g // 4 of
    # scales[8 + g % 4]
    low = (load_u8(blk + 96 + g % 8) >> ((g // 8) * 4)) & 15
    high = (load_u8(blk + 104 + g % 4) >> ((g // 4) * 2)) & 3
    s = low | (high << 4)
    return load_f16(blk + 108) * (s - 32).to(tl.float32), tl.zeros(g.shape, tl.float32)


# Q4_K, 144 bytes: | d f16 | dmin f16 | scales[12] | qs[128] |
@triton.jit
def q4_k_q(blk, e):
    return nibble_runs_64(blk + 16, e)


@triton.jit
def q4_k_group(blk, g):
    sc, m = scale_min_k4(blk + 4, g)
    scale = load_f16(blk) * sc.to(tl.float32)
    offset = neg_f32(load_f16(blk + 2) * m.to(tl.float32))
    return scale, offset


# Q5_K, 176 bytes: | d f16 | dmin f16 | scales[12] | qh[32] | qs[128] |
@triton.jit
def q5_k_q(blk, e):
    return nibble_runs_64(blk + 48, e) | (bit_plane(blk + 16, e) << 4)


@triton.jit
def q5_k_group(blk, g):
    return q4_k_group(blk, g)


# Q6_K, 210 bytes: | ql[128] | qh[64] | scales[16] int8 | d f16 |; q = q6 - 32
@triton.jit
def q6_k_q(blk, e):
    h = e // 128
    r = e % 128
    low = (load_u8(blk + h * 64 + r % 64) >> ((r // 64) * 4)) & 15
    high = (load_u8(blk + 128 + h * 32 + r % 32) >> ((r // 32) * 2)) & 3
    return (low | (high << 4)) - 32


@triton.jit
def q6_k_group(blk, g):
    sub = (load_u8(blk + 192 + g) ^ 128) - 128  # int8 sub-scale
    return load_f16(blk + 208) * sub.to(tl.float32), tl.zeros(g.shape, tl.float32)
