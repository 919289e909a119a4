"""Device decoders of the non-linear 4-bit types: IQ4_NL (32 weights) and IQ4_XS (256).

Twin of `reference.quants.iquants` (layouts drawn there). Same calling convention as
`kernels.quants.legacy`. The 4-bit index selects an int8 of `KVALUES_IQ4NL`; the table is
held in two int64 constants, eight bytes each, and read by shifting (no memory lookup).
"""

from __future__ import annotations

import triton
import triton.language as tl

from exactserve.kernels.fp import load_f16, load_u8
from exactserve.kernels.quants.legacy import nibble
from exactserve.reference.quants.iquants import KVALUES_IQ4NL


def _pack_bytes(values) -> int:
    """Eight int8 values as the signed int64 whose byte i is values[i] (two's complement)."""
    packed = sum((int(v) & 0xFF) << (8 * i) for i, v in enumerate(values))
    return packed - (1 << 64) if packed >= 1 << 63 else packed


KVALUES_LO = tl.constexpr(_pack_bytes(KVALUES_IQ4NL[:8]))
KVALUES_HI = tl.constexpr(_pack_bytes(KVALUES_IQ4NL[8:]))


@triton.jit
def kvalue(index):
    """KVALUES_IQ4NL[index] as int32, for int32 index in 0..15."""
    shift = ((index % 8) * 8).to(tl.int64)
    lo = (tl.full(index.shape, KVALUES_LO, tl.int64) >> shift) & 255
    hi = (tl.full(index.shape, KVALUES_HI, tl.int64) >> shift) & 255
    byte = tl.where(index < 8, lo, hi).to(tl.int32)
    return (byte ^ 128) - 128


# IQ4_NL, 18 bytes: | d f16 | qs[16] |; index as Q4_0's nibble
@triton.jit
def iq4_nl_q(blk, e):
    return kvalue(nibble(blk + 2, e))


@triton.jit
def iq4_nl_group(blk, g):
    return load_f16(blk), tl.zeros(g.shape, tl.float32)


# IQ4_XS, 136 bytes: | d f16 | scales_h u16 | scales_l[4] | qs[128] |
@triton.jit
def iq4_xs_q(blk, e):
    # run g = e // 32 of 16 bytes at 8 + 16g holds its 32 indices as Q4_0's nibbles
    return kvalue(nibble(blk + 8 + (e // 32) * 16, e % 32))


@triton.jit
def iq4_xs_group(blk, g):
    low = (load_u8(blk + 4 + g // 2) >> ((g % 2) * 4)) & 15
    scales_h = load_u8(blk + 2) | (load_u8(blk + 3) << 8)
    ls = low | (((scales_h >> (2 * g)) & 3) << 4)
    return load_f16(blk) * (ls - 32).to(tl.float32), tl.zeros(g.shape, tl.float32)
