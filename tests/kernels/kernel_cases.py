"""Random inputs shared by the kernel conformance tests (bit patterns, not tolerances)."""

from __future__ import annotations

import gguf
import numpy as np
import torch
from gguf import GGMLQuantizationType as T

from exactserve.kernels.device import default_device
from exactserve.reference.quants import QUANT_UNITS

# Byte offsets of each quantised type's fp16 fields (d, and dmin/m when present),
# from ggml-common.h.
FP16_FIELDS = {
    T.Q4_0: (0,), T.Q4_1: (0, 2), T.Q5_0: (0,), T.Q5_1: (0, 2), T.Q8_0: (0,),
    T.Q2_K: (80, 82), T.Q3_K: (108,), T.Q4_K: (0, 2), T.Q5_K: (0, 2), T.Q6_K: (208,),
    T.IQ4_NL: (0,), T.IQ4_XS: (0,),
}  # fmt: skip
QUANT_TYPES = list(QUANT_UNITS)
FLOAT_TYPES = [T.F32, T.F16, T.BF16]


def random_fp16_bits(rng: np.random.Generator, n: int, wide: bool) -> np.ndarray:
    """n finite fp16 bit patterns: any finite value (subnormals included) if `wide`, else
    magnitudes in [2^-14, 2^-6) (weights of a sensible size)."""
    bits = rng.integers(0, 1 << 16, size=n, dtype=np.uint32)
    low, high = (0, 31) if wide else (1, 9)
    exponent = rng.integers(low, high, size=n, dtype=np.uint32)
    return ((bits & 0x83FF) | (exponent << 10)).astype(np.uint16)


def random_blocks(qtype: T, n_blocks: int, seed: int, wide: bool = True) -> np.ndarray:
    """uint8 [n_blocks, type_size]: random bytes with finite fp16 scale fields."""
    rng = np.random.default_rng(seed)
    _, type_size = gguf.GGML_QUANT_SIZES[qtype]
    blocks = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    for start in FP16_FIELDS[qtype]:
        bits = random_fp16_bits(rng, n_blocks, wide).astype("<u2")
        blocks[:, start : start + 2] = bits.view(np.uint8).reshape(n_blocks, 2)
    return blocks


def random_float_bytes(qtype: T, n: int, seed: int) -> np.ndarray:
    """Raw little-endian bytes of n finite F32/F16/BF16 values of every binade."""
    rng = np.random.default_rng(seed)
    if qtype == T.F16:
        return random_fp16_bits(rng, n, True).astype("<u2").view(np.uint8)
    bits = rng.integers(0, 1 << 32, size=n, dtype=np.uint64).astype(np.uint32)
    exponent = rng.integers(0, 255, size=n, dtype=np.uint32)  # 255 = Inf/NaN, excluded
    bits = (bits & np.uint32(0x807FFFFF)) | (exponent << np.uint32(23))
    if qtype == T.BF16:
        return (bits >> np.uint32(16)).astype("<u2").view(np.uint8)
    return bits.astype("<u4").view(np.uint8)


def random_activations(shape: tuple[int, ...], seed: int) -> np.ndarray:
    """float32 values of mixed magnitudes (normal data, scaled rows, exact zeros, ties)."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape).astype(np.float32)
    x *= np.float32(2.0) ** rng.integers(-8, 8, size=shape[:-1] + (1,)).astype(np.float32)
    x[rng.random(shape) < 0.05] = 0.0
    return x


CANONICAL_NAN = np.uint32(0x7FC00000)


def dev(x: np.ndarray | torch.Tensor) -> torch.Tensor:
    """x on the kernels' device (CUDA on a GPU, the CPU under the interpreter)."""
    if isinstance(x, np.ndarray):
        x = torch.from_numpy(np.ascontiguousarray(x))
    return x.to(default_device())


def host(t: torch.Tensor) -> np.ndarray:
    return t.detach().cpu().numpy()


def f32_bits(x: np.ndarray | torch.Tensor) -> np.ndarray:
    """uint32 view of float32 values for exact comparison, signed zeros included. Every NaN
    maps to one pattern: IEEE 754 leaves the sign and payload of a NaN result open, and
    NumPy and GPUs choose differently (NaN only arises outside the contract's domain)."""
    if isinstance(x, torch.Tensor):
        x = x.detach().cpu().numpy()
    x = np.ascontiguousarray(x, dtype=np.float32)
    return np.where(np.isnan(x), CANONICAL_NAN, x.view(np.uint32))


def assert_same_bits(actual: np.ndarray | torch.Tensor, expected: np.ndarray) -> None:
    a, e = f32_bits(actual), f32_bits(expected)
    assert a.shape == e.shape, f"shape {a.shape} != {e.shape}"
    if not np.array_equal(a, e):
        where = np.argwhere(a != e)
        first = tuple(where[0])
        raise AssertionError(
            f"{len(where)} of {a.size} values differ in their bits; first at {first}: "
            f"{a[first]:#010x} != {e[first]:#010x}"
        )
