"""The non-linear 4-bit types: IQ4_NL (32-weight blocks) and IQ4_XS (256-weight blocks).

Layouts follow ggml-common.h (`block_iq4_nl`, `block_iq4_xs`) and ggml-quants.c
`dequantize_row_iq4_nl` / `dequantize_row_iq4_xs`. A 4-bit index selects an int8 from the
fixed table `KVALUES_IQ4NL`; that int8 is the integer weight q.
"""

from __future__ import annotations

import numpy as np

from exactserve.reference.quants.blocks import (
    IntegerBlocks,
    QuantUnit,
    fp16_field,
    low_high_nibbles,
    scaled,
)

# ggml-common.h `kvalues_iq4nl`.
KVALUES_IQ4NL = np.array(
    [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113], dtype=np.int8
)


# IQ4_NL, 18 bytes:
#   0      2                                                           18
#   | d f16 | qs[16]: index j = low nibble of qs[j], index 16+j = high nibble |
# weight = d * KVALUES_IQ4NL[index]
def _unpack_iq4_nl(blocks: np.ndarray) -> IntegerBlocks:
    q = KVALUES_IQ4NL[low_high_nibbles(blocks[:, 2:18], 16)]
    return IntegerBlocks(q, fp16_field(blocks, 0), None)


# IQ4_XS, 136 bytes:
#   0      2              4             8                     136
#   | d f16 | scales_h u16 | scales_l[4] | qs[128]             |
# 8 groups of 32 weights; six-bit ls[g] = low: nibble g % 2 (low first) of scales_l[g // 2],
# high 2 bits: bits [2g, 2g + 2) of scales_h. qs: eight runs of 16 bytes, run g holds
# index 32g + l in the low nibble of its byte l and 32g + 16 + l in the high nibble.
# weight = (d * (ls - 32)) * KVALUES_IQ4NL[index]
def _unpack_iq4_xs(blocks: np.ndarray) -> IntegerBlocks:
    scales_l = low_high_nibbles(blocks[:, 4:8], 1)
    scales_h = np.ascontiguousarray(blocks[:, 2:4]).view("<u2")
    shifts = np.arange(0, 16, 2, dtype=np.uint16).reshape(1, 8)
    high = ((scales_h >> shifts) & 3).astype(np.uint8)
    ls = scales_l | (high << 4)
    scale = scaled(fp16_field(blocks, 0), ls.astype(np.int8) - np.int8(32))
    q = KVALUES_IQ4NL[low_high_nibbles(blocks[:, 8:136], 16)]
    return IntegerBlocks(q, scale, None)


IQ4_NL = QuantUnit("IQ4_NL", block_size=32, type_size=18, group=32, unpack=_unpack_iq4_nl)
IQ4_XS = QuantUnit("IQ4_XS", block_size=256, type_size=136, group=32, unpack=_unpack_iq4_xs)
