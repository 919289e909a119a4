"""The K-quant super-block types (256 weights): Q2_K, Q3_K, Q4_K, Q5_K, Q6_K.

Layouts follow ggml-common.h (`block_q2_K` ...) and ggml-quants.c `dequantize_row_*`. fp16
fields are little-endian. Weight e of a super-block is numbered 0..255; "plane p of byte l"
means bits [w*p, w*p + w) of that byte for a field w bits wide (see `bit_planes`).
"""

from __future__ import annotations

import numpy as np

from exactserve.reference.quants.blocks import (
    IntegerBlocks,
    QuantUnit,
    bit_planes,
    fp16_field,
    low_high_nibbles,
    scaled,
)


def _per_half(fields: np.ndarray, width: int, n_planes: int) -> np.ndarray:
    """`bit_planes` applied to each 128-weight half of a super-block separately."""
    n = fields.shape[0]
    return bit_planes(fields.reshape(2 * n, -1), width, n_planes).reshape(n, -1)


# Q2_K, 84 bytes:
#   0            16          80      82         84
#   | scales[16] | qs[64]    | d f16 | dmin f16 |
# scales[g] (group g = 16 weights e // 16): low nibble = sc, high nibble = m.
# qs: 2-bit values; weight h*128 + p*32 + l is plane p of qs[h*32 + l] (half h = 0, 1).
# weight = (d * sc) * q - (dmin * m)
def _unpack_q2_k(blocks: np.ndarray) -> IntegerBlocks:
    sub = blocks[:, 0:16]
    q = _per_half(blocks[:, 16:80], 2, 4).astype(np.int8)
    scale = scaled(fp16_field(blocks, 80), sub & 0x0F)
    offset = -scaled(fp16_field(blocks, 82), sub >> 4)
    return IntegerBlocks(q, scale, offset)


# Q3_K, 110 bytes:
#   0            32          96           108     110
#   | hmask[32]  | qs[64]    | scales[12] | d f16 |
# qs: low 2 bits, numbered as Q2_K; hmask: weight p*32 + l is plane p (1 bit) of hmask[l].
# q = low - (4 if the hmask bit is 0 else 0), in -4..3.
# scales: 16 six-bit values s[g], one per group g of 16 weights (e // 16):
#   low 4 bits of s[g]:  g < 8: low nibble of scales[g];  g >= 8: high nibble of scales[g - 8]
#   high 2 bits of s[g]: plane g // 4 (2 bits wide) of scales[8 + g % 4]
# weight = (d * (s - 32)) * q
def _unpack_q3_k(blocks: np.ndarray) -> IntegerBlocks:
    low = _per_half(blocks[:, 32:96], 2, 4)
    high = bit_planes(blocks[:, 0:32], 1, 8)
    q = low.astype(np.int8) - np.int8(4) + (high << 2).astype(np.int8)
    packed = blocks[:, 96:108]
    nibbles = np.concatenate([packed[:, 0:8] & 0x0F, packed[:, 0:8] >> 4], axis=1)
    s = nibbles | (bit_planes(packed[:, 8:12], 2, 4) << 4)
    scale = scaled(fp16_field(blocks, 108), s.astype(np.int8) - np.int8(32))
    return IntegerBlocks(q, scale, None)


def _scale_min_k4(packed: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Eight six-bit (sc, m) pairs from the 12-byte `scales` of Q4_K and Q5_K.

    Bytes b[0..11] (ggml `get_scale_min_k4`), j = 0..3:
        sc[j]   = b[j] & 63                      m[j]   = b[j+4] & 63
        sc[j+4] = (b[j+8] & 15) | (b[j] >> 6) << 4   m[j+4] = (b[j+8] >> 4) | (b[j+4] >> 6) << 4
    """
    b0, b1, b2 = packed[:, 0:4], packed[:, 4:8], packed[:, 8:12]
    sc = np.concatenate([b0 & 63, (b2 & 0x0F) | ((b0 >> 6) << 4)], axis=1)
    m = np.concatenate([b1 & 63, (b2 >> 4) | ((b1 >> 6) << 4)], axis=1)
    return sc, m


# Q4_K, 144 bytes:
#   0      2         4            16                 144
#   | d f16 | dmin f16 | scales[12] | qs[128]          |
# groups of 32 weights; (sc, m) per group from `scales` (see _scale_min_k4).
# qs: four runs of 32 bytes; run r holds weight 64r + l in its low nibble, 64r + 32 + l high.
# weight = (d * sc) * q - (dmin * m)
def _unpack_q4_k(blocks: np.ndarray) -> IntegerBlocks:
    sc, m = _scale_min_k4(blocks[:, 4:16])
    q = low_high_nibbles(blocks[:, 16:144], 32).astype(np.int8)
    scale = scaled(fp16_field(blocks, 0), sc)
    offset = -scaled(fp16_field(blocks, 2), m)
    return IntegerBlocks(q, scale, offset)


# Q5_K, 176 bytes:
#   0      2         4            16         48                176
#   | d f16 | dmin f16 | scales[12] | qh[32]   | qs[128]         |
# low 4 bits in qs as Q4_K; bit 4 of weight p*32 + l is plane p (1 bit) of qh[l].
# weight = (d * sc) * q - (dmin * m)
def _unpack_q5_k(blocks: np.ndarray) -> IntegerBlocks:
    sc, m = _scale_min_k4(blocks[:, 4:16])
    low = low_high_nibbles(blocks[:, 48:176], 32)
    q = (low | (bit_planes(blocks[:, 16:48], 1, 8) << 4)).astype(np.int8)
    scale = scaled(fp16_field(blocks, 0), sc)
    offset = -scaled(fp16_field(blocks, 2), m)
    return IntegerBlocks(q, scale, offset)


# Q6_K, 210 bytes:
#   0             128         192               208     210
#   | ql[128]     | qh[64]    | scales[16] int8 | d f16 |
# Half h (weights 128h..128h+127) uses ql[64h..64h+63] and qh[32h..32h+31]:
#   low 4 bits: weight 128h + l from the low nibble of ql[64h + l], 128h + 64 + l from its
#   high nibble (l = 0..63); high 2 bits: weight 128h + p*32 + l is plane p of qh[32h + l].
# groups of 16 weights; weight = (d * scales[g]) * (q6 - 32)
def _unpack_q6_k(blocks: np.ndarray) -> IntegerBlocks:
    n = blocks.shape[0]
    low = low_high_nibbles(blocks[:, 0:128].reshape(2 * n, 64), 64).reshape(n, 256)
    high = _per_half(blocks[:, 128:192], 2, 4)
    q = (low | (high << 4)).astype(np.int8) - np.int8(32)
    sub = np.ascontiguousarray(blocks[:, 192:208]).view(np.int8)
    return IntegerBlocks(q, scaled(fp16_field(blocks, 208), sub), None)


Q2_K = QuantUnit("Q2_K", block_size=256, type_size=84, group=16, unpack=_unpack_q2_k)
Q3_K = QuantUnit("Q3_K", block_size=256, type_size=110, group=16, unpack=_unpack_q3_k)
Q4_K = QuantUnit("Q4_K", block_size=256, type_size=144, group=32, unpack=_unpack_q4_k)
Q5_K = QuantUnit("Q5_K", block_size=256, type_size=176, group=32, unpack=_unpack_q5_k)
Q6_K = QuantUnit("Q6_K", block_size=256, type_size=210, group=16, unpack=_unpack_q6_k)
