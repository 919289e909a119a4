"""The legacy 32-weight block types: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0.

Layouts follow ggml-common.h (`block_q4_0` ...) and ggml-quants.c `dequantize_row_*`. All
multi-byte fields are little-endian. Weight j of a block is numbered 0..31.
"""

from __future__ import annotations

import numpy as np

from exactserve.reference.quants.blocks import (
    IntegerBlocks,
    QuantUnit,
    fp16_field,
    low_high_nibbles,
)


def _high_bits(blocks: np.ndarray, start: int) -> np.ndarray:
    """The 32-bit little-endian `qh` at byte `start`: bit j is bit 4 of weight j, as [n, 32]."""
    qh = np.ascontiguousarray(blocks[:, start : start + 4])
    return np.unpackbits(qh, axis=1, bitorder="little")


# Q4_0, 18 bytes:
#   0      2                                                          18
#   | d f16 | qs[16]: weight j = low nibble of qs[j], weight 16+j = high nibble |
# weight = d * (nibble - 8)
def _unpack_q4_0(blocks: np.ndarray) -> IntegerBlocks:
    q = low_high_nibbles(blocks[:, 2:18], 16).astype(np.int8) - np.int8(8)
    return IntegerBlocks(q, fp16_field(blocks, 0), None)


# Q4_1, 20 bytes:
#   0      2      4                           20
#   | d f16 | m f16 | qs[16] (nibbles as Q4_0) |
# weight = d * nibble + m
def _unpack_q4_1(blocks: np.ndarray) -> IntegerBlocks:
    q = low_high_nibbles(blocks[:, 4:20], 16).astype(np.int8)
    return IntegerBlocks(q, fp16_field(blocks, 0), fp16_field(blocks, 2))


# Q5_0, 22 bytes:
#   0      2            6                           22
#   | d f16 | qh u32 LE  | qs[16] (nibbles as Q4_0) |
# 5-bit value of weight j = nibble | (bit j of qh) << 4; weight = d * (value - 16)
def _unpack_q5_0(blocks: np.ndarray) -> IntegerBlocks:
    low = low_high_nibbles(blocks[:, 6:22], 16)
    q = (low | (_high_bits(blocks, 2) << 4)).astype(np.int8) - np.int8(16)
    return IntegerBlocks(q, fp16_field(blocks, 0), None)


# Q5_1, 24 bytes:
#   0      2      4            8                           24
#   | d f16 | m f16 | qh u32 LE  | qs[16] (nibbles as Q4_0) |
# weight = d * (nibble | (bit j of qh) << 4) + m
def _unpack_q5_1(blocks: np.ndarray) -> IntegerBlocks:
    low = low_high_nibbles(blocks[:, 8:24], 16)
    q = (low | (_high_bits(blocks, 4) << 4)).astype(np.int8)
    return IntegerBlocks(q, fp16_field(blocks, 0), fp16_field(blocks, 2))


# Q8_0, 34 bytes:
#   0      2                     34
#   | d f16 | qs[32] int8 weights |
# weight = d * qs[j]
def _unpack_q8_0(blocks: np.ndarray) -> IntegerBlocks:
    q = np.ascontiguousarray(blocks[:, 2:34]).view(np.int8)
    return IntegerBlocks(q, fp16_field(blocks, 0), None)


Q4_0 = QuantUnit("Q4_0", block_size=32, type_size=18, group=32, unpack=_unpack_q4_0)
Q4_1 = QuantUnit("Q4_1", block_size=32, type_size=20, group=32, unpack=_unpack_q4_1)
Q5_0 = QuantUnit("Q5_0", block_size=32, type_size=22, group=32, unpack=_unpack_q5_0)
Q5_1 = QuantUnit("Q5_1", block_size=32, type_size=24, group=32, unpack=_unpack_q5_1)
Q8_0 = QuantUnit("Q8_0", block_size=32, type_size=34, group=32, unpack=_unpack_q8_0)
