"""Dequantisation and the exact integer form of ggml's tensor types, in NumPy.

Supported: F32, F16, BF16 and the quantised Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K,
Q5_K, Q6_K, IQ4_NL, IQ4_XS (one decoder per type in `legacy`, `kquants`, `iquants`).

Integer form (the precision contract builds on it). Every quantised weight is

    w = scale[g] * q + offset[g]          (offset absent for the types without a "min")

with q an int8 and scale/offset float32 values that are EXACT real products: scale is an fp16
`d` times an integer of at most 7 significant bits (the 4/6-bit sub-scale, Q6_K's int8
sub-scale, or IQ4_XS's `ls - 32`), offset is minus an fp16 `dmin` times a 6-bit (or 4-bit)
integer, or Q4_1/Q5_1's fp16 `m` itself. 11 + 7 significant bits fit fp32's 24, and fp16's
range lies deep inside fp32's, so forming them never rounds.

How ggml's float32 dequantisation rounds (ggml-quants.c `dequantize_row_*`, which gguf-py's
`quants.py` mirrors): it computes `(d * sc) * q - dmin * m` (or `x*d + m`, `x*d`) in float32.
`d * sc` and `dmin * m` are exact (above), and so is `(d * sc) * q`: counting significant
bits of d, sub-scale and q, the widest products are Q6_K (11 + 7 + 5, |q| <= 32) and IQ4_XS
(11 + 5 + 7, |ls - 32| <= 32, |kvalue| <= 127), 23 bits each, within fp32's 24. So the only
rounding in ggml's dequantisation is one round-to-nearest-even, of the final addition of the
offset: w_ggml = fl32(scale * q + offset), exact for the types without an offset. An
FMA-contracted build of ggml gets the same value (the product is exact either way).
`dequantize` computes exactly that: an exact fp32 product, then one fp32 add.

In float64, `scale * q + offset` is always exact: products have at most 23 significant bits,
and for the offset types every term is a multiple of 2^-24 (fp16's smallest step) below
2^28 in magnitude, so the sum is an integer times 2^-24 below 2^53.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from gguf import GGMLQuantizationType

from exactserve.reference.quants.blocks import QuantUnit
from exactserve.reference.quants.iquants import IQ4_NL, IQ4_XS
from exactserve.reference.quants.kquants import Q2_K, Q3_K, Q4_K, Q5_K, Q6_K
from exactserve.reference.quants.legacy import Q4_0, Q4_1, Q5_0, Q5_1, Q8_0

T = GGMLQuantizationType

QUANT_UNITS: dict[GGMLQuantizationType, QuantUnit] = {
    T.Q4_0: Q4_0,
    T.Q4_1: Q4_1,
    T.Q5_0: Q5_0,
    T.Q5_1: Q5_1,
    T.Q8_0: Q8_0,
    T.Q2_K: Q2_K,
    T.Q3_K: Q3_K,
    T.Q4_K: Q4_K,
    T.Q5_K: Q5_K,
    T.Q6_K: Q6_K,
    T.IQ4_NL: IQ4_NL,
    T.IQ4_XS: IQ4_XS,
}

# Float types: one weight per "block", stored little-endian.
FLOAT_TYPE_SIZES: dict[GGMLQuantizationType, int] = {T.F32: 4, T.F16: 2, T.BF16: 2}

SUPPORTED_TYPES: tuple[GGMLQuantizationType, ...] = (*FLOAT_TYPE_SIZES, *QUANT_UNITS)

# Weights decoded per step; bounds the temporaries when a whole model loads.
_CHUNK_WEIGHTS = 1 << 21


class IntegerWeights(NamedTuple):
    """A quantised matrix [n_rows, n_cols] in integer form: w = scale * q + offset, exactly.

    q int8 [n_rows, n_cols]; scale, offset float32 [n_rows, n_cols // group] (offset None for
    types without a min); group weights along a row share one scale and offset.
    """

    q: np.ndarray
    scale: np.ndarray
    offset: np.ndarray | None
    group: int

    def to_float32(self) -> np.ndarray:
        """The weights as float32 [n_rows, n_cols], rounded as ggml rounds them."""
        return _affine(self.q, self.scale, self.offset, self.group)


def supported_type_names() -> str:
    return ", ".join(t.name for t in SUPPORTED_TYPES)


def _as_type(ggml_type: GGMLQuantizationType | int) -> GGMLQuantizationType:
    try:
        qtype = GGMLQuantizationType(int(ggml_type))
    except ValueError:
        raise ValueError(
            f"unknown ggml type {int(ggml_type)}; supported: {supported_type_names()}"
        ) from None
    if qtype not in FLOAT_TYPE_SIZES and qtype not in QUANT_UNITS:
        raise ValueError(
            f"ggml type {qtype.name} is not supported; supported: {supported_type_names()}"
        )
    return qtype


def block_geometry(ggml_type: GGMLQuantizationType | int) -> tuple[int, int]:
    """(weights per block, bytes per block) of a supported type."""
    qtype = _as_type(ggml_type)
    if qtype in FLOAT_TYPE_SIZES:
        return 1, FLOAT_TYPE_SIZES[qtype]
    unit = QUANT_UNITS[qtype]
    return unit.block_size, unit.type_size


def tensor_nbytes(ggml_type: GGMLQuantizationType | int, shape: tuple[int, ...]) -> int:
    """Bytes of a tensor of `shape` (ggml order: shape[0] is the contiguous row length)."""
    block_size, type_size = block_geometry(ggml_type)
    if shape and shape[0] % block_size:
        raise ValueError(
            f"row length {shape[0]} is not a multiple of the {_as_type(ggml_type).name} "
            f"block size {block_size}"
        )
    return int(np.prod(shape, dtype=np.int64)) // block_size * type_size


def _byte_blocks(raw: np.ndarray, qtype: GGMLQuantizationType, n_weights: int) -> np.ndarray:
    block_size, type_size = block_geometry(qtype)
    expected = n_weights // block_size * type_size
    if raw.dtype != np.uint8 or raw.size != expected:
        raise ValueError(
            f"{qtype.name} data for {n_weights} weights must be {expected} uint8 bytes, "
            f"got {raw.size} of {raw.dtype}"
        )
    return raw.reshape(-1, type_size)


def _affine(q: np.ndarray, scale: np.ndarray, offset: np.ndarray | None, group: int) -> np.ndarray:
    """fl32(scale * q + offset) per weight: an exact fp32 product, then one rounded add."""
    shape = q.shape
    grouped = q.reshape(*scale.shape, group).astype(np.float32)
    grouped *= scale[..., None]
    if offset is not None:
        grouped += offset[..., None]
    return grouped.reshape(shape)


def dequantize(
    raw: np.ndarray, ggml_type: GGMLQuantizationType | int, shape: tuple[int, ...]
) -> np.ndarray:
    """float32 weights of a tensor stored as `raw` bytes of `ggml_type`.

    `shape` is in ggml order (shape[0] contiguous); the result has NumPy order, the reversed
    shape. Bit-identical to ggml's own dequantisation (see the module docstring).
    """
    qtype = _as_type(ggml_type)
    n_weights = int(np.prod(shape, dtype=np.int64))
    numpy_shape = tuple(reversed(shape))
    tensor_nbytes(qtype, tuple(shape))
    blocks = _byte_blocks(raw.reshape(-1), qtype, n_weights)
    if qtype == T.F32:
        return blocks.reshape(-1).view("<f4").astype(np.float32).reshape(numpy_shape)
    if qtype == T.F16:
        return blocks.reshape(-1).view("<f2").astype(np.float32).reshape(numpy_shape)
    if qtype == T.BF16:
        # bf16 is the top half of an fp32: widen by a 16-bit shift, no rounding.
        bits = blocks.reshape(-1).view("<u2").astype(np.uint32) << 16
        return bits.view(np.float32).reshape(numpy_shape)
    unit = QUANT_UNITS[qtype]
    out = np.empty(n_weights, dtype=np.float32)
    step = max(1, _CHUNK_WEIGHTS // unit.block_size)
    for start in range(0, blocks.shape[0], step):
        part = unit.unpack(blocks[start : start + step])
        weights = _affine(part.q, part.scale, part.offset, unit.group)
        out[start * unit.block_size : start * unit.block_size + weights.size] = weights.ravel()
    return out.reshape(numpy_shape)


def to_integer_form(
    raw: np.ndarray, ggml_type: GGMLQuantizationType | int, n_rows: int, n_cols: int
) -> IntegerWeights:
    """Integer form of a quantised matrix with `n_rows` rows of `n_cols` contiguous weights.

    Exact: `scale * q + offset` equals every stored weight in real arithmetic. Float types
    have no integer form and raise ValueError.
    """
    qtype = _as_type(ggml_type)
    if qtype not in QUANT_UNITS:
        raise ValueError(f"{qtype.name} is a float type and has no integer form")
    unit = QUANT_UNITS[qtype]
    tensor_nbytes(qtype, (n_cols, n_rows))
    blocks = _byte_blocks(raw.reshape(-1), qtype, n_rows * n_cols)
    groups_per_block = unit.block_size // unit.group
    q = np.empty((blocks.shape[0], unit.block_size), dtype=np.int8)
    scale = np.empty((blocks.shape[0], groups_per_block), dtype=np.float32)
    offset = None
    step = max(1, _CHUNK_WEIGHTS // unit.block_size)
    for start in range(0, blocks.shape[0], step):
        part = unit.unpack(blocks[start : start + step])
        stop = start + part.q.shape[0]
        q[start:stop] = part.q
        scale[start:stop] = part.scale
        if part.offset is not None:
            if offset is None:
                offset = np.empty_like(scale)
            offset[start:stop] = part.offset
    n_groups = n_cols // unit.group
    return IntegerWeights(
        q.reshape(n_rows, n_cols),
        scale.reshape(n_rows, n_groups),
        None if offset is None else offset.reshape(n_rows, n_groups),
        unit.group,
    )
