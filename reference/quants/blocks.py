"""Shared pieces of the block decoders: the integer form of a run of blocks and bit helpers.

Every quantised ggml type stores a weight as a small integer times a per-group scale, plus a
per-group offset for the "min" types. A decoder ("unit", one per type) turns an array of raw
blocks `uint8 [n_blocks, type_size]` into that integer form without any rounding:

    q      int8    [n_blocks, block_size]
    scale  float32 [n_blocks, block_size // group]
    offset float32 [n_blocks, block_size // group] or None

so that weight = scale * q + offset holds in real arithmetic (see `reference.quants` for why
no rounding happens forming `scale` and `offset`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np


class IntegerBlocks(NamedTuple):
    """Integer form of `n_blocks` consecutive blocks of one quantised type."""

    q: np.ndarray
    scale: np.ndarray
    offset: np.ndarray | None


def fp16_field(blocks: np.ndarray, start: int) -> np.ndarray:
    """The little-endian fp16 at byte `start` of every block, as float32 [n_blocks, 1].

    fp16 -> fp32 conversion is exact (every fp16 value, subnormals included, is an fp32 value).
    """
    return np.ascontiguousarray(blocks[:, start : start + 2]).view("<f2").astype(np.float32)


def low_high_nibbles(qs: np.ndarray, run: int) -> np.ndarray:
    """Split bytes [n, k] into nibbles [n, 2k], run by run.

    Each run of `run` bytes yields `run` low nibbles followed by `run` high nibbles, the
    order in which ggml's 4-bit types number their weights.
    """
    n = qs.shape[0]
    runs = qs.reshape(n, -1, 1, run)
    return np.concatenate([runs & 0x0F, runs >> 4], axis=2).reshape(n, -1)


def bit_planes(bits: np.ndarray, width: int, n_planes: int) -> np.ndarray:
    """Fields of `width` bits [n, n_planes * k] from bytes [n, k], plane by plane.

    Weight p * k + l is field p of byte l, i.e. bits [width*p, width*p + width) of bits[:, l].
    Q2_K/Q3_K/Q6_K low bits and Q3_K/Q5_K high bits are numbered this way.
    """
    n, k = bits.shape
    shifts = (np.arange(n_planes, dtype=np.uint8) * width).reshape(1, n_planes, 1)
    mask = np.uint8((1 << width) - 1)
    return ((bits.reshape(n, 1, k) >> shifts) & mask).reshape(n, n_planes * k)


def scaled(factor: np.ndarray, integers: np.ndarray) -> np.ndarray:
    """`factor * integers` in float32, for a factor that is an fp16 value.

    Exact: an fp16 significand has 11 bits and every integer here has at most 7, so the
    product has at most 18 significant bits and lies far inside fp32's exponent range.
    """
    return factor * integers.astype(np.float32)


class QuantUnit(NamedTuple):
    """One quantised ggml type: its block geometry and its decoder to integer form."""

    name: str
    block_size: int  # weights per block
    type_size: int  # bytes per block
    group: int  # weights sharing one scale (and offset)
    unpack: Callable[[np.ndarray], IntegerBlocks]
