"""Floating-point primitives of the precision contract (docs/PRECISION.md, section 2).

Every function here performs only correctly rounded IEEE-754 operations (add, subtract,
multiply, divide, conversions) or exact ones (comparisons, max, bit manipulation, scaling by
a power of two within range), in an order fixed by the contract. NumPy's float32 elementwise
ufuncs are IEEE single operations and never fuse a multiply into an add, so each line below
is one rounding step of the contract.
"""

from __future__ import annotations

import numpy as np

F32 = np.float32
F64 = np.float64

# rint by the "magic number" trick: for |v| < 2^22 (fp32) or 2^51 (fp64), (v + M) - M rounds
# v to the nearest integer, ties to even, with two correctly rounded additions (contract 2.2).
MAGIC_F32 = F32(12582912.0)  # 1.5 * 2^23, 0x4B400000
MAGIC_F64 = F64(6755399441055744.0)  # 1.5 * 2^52

# Activation blocks whose largest magnitude is below this quantise to zero (contract 3.1): it
# keeps every power of two the contract forms inside the normal fp32 range.
TINY_F32 = F32(2.0**-100)


def rint_f32(v: np.ndarray) -> np.ndarray:
    """Round float32 values with |v| < 2^22 to integers, ties to even (contract 2.2)."""
    v = np.asarray(v, dtype=F32)
    return (v + MAGIC_F32) - MAGIC_F32


def rint_f64(v: np.ndarray) -> np.ndarray:
    """Round float64 values with |v| < 2^51 to integers, ties to even (contract 2.2)."""
    v = np.asarray(v, dtype=F64)
    return (v + MAGIC_F64) - MAGIC_F64


def pow2_f32(k: np.ndarray) -> np.ndarray:
    """2^k as float32 for integer k in [-126, 127], built from its exponent bits (exact)."""
    k = np.asarray(k, dtype=np.int32)
    return ((k + np.int32(127)) << np.int32(23)).view(F32)


def pow2_f64(k: np.ndarray) -> np.ndarray:
    """2^k as float64 for integer k in [-1022, 1023], built from its exponent bits (exact)."""
    k = np.asarray(k, dtype=np.int64)
    return ((k + np.int64(1023)) << np.int64(52)).view(F64)


def exponent_f32(v: np.ndarray) -> np.ndarray:
    """floor(log2(v)) as int32 for normal positive float32 v: the unbiased exponent field."""
    bits = np.asarray(v, dtype=F32).view(np.int32)
    return ((bits >> np.int32(23)) & np.int32(0xFF)) - np.int32(127)


def exponent_f64(v: np.ndarray) -> np.ndarray:
    """floor(log2(v)) as int64 for normal positive float64 v: the unbiased exponent field."""
    bits = np.asarray(v, dtype=F64).view(np.int64)
    return ((bits >> np.int64(52)) & np.int64(0x7FF)) - np.int64(1023)


def tree_sum(x: np.ndarray) -> np.ndarray:
    """Sum float32 `x` over its last axis with the contract's tree (contract 2.3).

    The axis is padded with +0.0 to the next power of two n; then, while n > 1, element i of
    the next level is level[2i] + level[2i + 1] (adjacent pairs, each one fp32 addition).
    Equivalent to Triton's `reshape(..., n // 2, 2)` + `split` + add, repeated.
    """
    x = np.asarray(x, dtype=F32)
    n = x.shape[-1]
    if n == 0:
        return np.zeros(x.shape[:-1], dtype=F32)
    width = 1 << (n - 1).bit_length()
    if width != n:
        pad = np.zeros((*x.shape[:-1], width - n), dtype=F32)
        x = np.concatenate([x, pad], axis=-1)
    while x.shape[-1] > 1:
        x = x[..., 0::2] + x[..., 1::2]
    return x[..., 0]


def assert_gradual_underflow() -> None:
    """Raise if this process flushes float32 subnormals to zero (a fast-math library can set
    FTZ/DAZ for the whole process); the contract assumes IEEE gradual underflow."""
    tiny = np.array([2.0**-126], dtype=F32)
    if not (tiny * F32(0.5))[0] > 0 or not (np.array([1e-45], dtype=F32) > 0)[0]:
        raise RuntimeError(
            "float32 subnormals are flushed to zero in this process (FTZ/DAZ set, probably "
            "by a library built with fast-math); exactserve's arithmetic would not match its "
            "contract. Import exactserve before that library or rebuild it without fast-math"
        )
