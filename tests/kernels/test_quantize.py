"""kernels.quantize against reference.quantize: the same integers and exponents."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from kernel_cases import (
    assert_same_bits,
    dev,
    host,
    random_activations,
)

import exactserve.reference.quantize as rq
from exactserve.kernels.quantize import block_float, quantize_activations


def special_rows(k: int) -> np.ndarray:
    """Rows that probe the edges: all zero, below 2^-100, exact ties (x.5 after scaling),
    a block maximum that rounds up to 2^11, negative zero, huge and subnormal values."""
    rows = np.zeros((6, k), dtype=np.float32)
    rows[1, :] = np.float32(2.0**-101)
    rows[2, :] = (np.arange(k, dtype=np.float32) - k / 2) * np.float32(0.5) * np.float32(2.0**-3)
    rows[2, 0] = np.float32(1023.75)  # max of its block; others become ties at scale 2^0
    rows[3, 0], rows[3, 1] = np.float32(2047.75), np.float32(-0.0)  # rint(2047.75) = 2048
    rows[4, :] = np.float32(3.0e29) * np.cos(np.arange(k, dtype=np.float32))
    rows[5, :] = np.float32(1e-40) * (np.arange(k, dtype=np.float32) - 7)
    return rows


@pytest.mark.parametrize("m,k", [(1, 32), (3, 96), (19, 288)])
def test_quantize_activations_matches_reference(m: int, k: int) -> None:
    x = np.concatenate([random_activations((m, k), seed=m * k), special_rows(k)])
    expected = rq.quantize_activations(x)
    actual = quantize_activations(dev(x))
    assert actual.q.dtype == torch.int16 and actual.exponent.dtype == torch.int32
    np.testing.assert_array_equal(host(actual.exponent), expected.exponent)
    scale = np.repeat(np.ldexp(np.float32(1.0), host(actual.exponent)), 32, axis=1)
    values = host(actual.q).astype(np.float32) * scale.astype(np.float32)  # exact
    assert_same_bits(values, expected.values)
    assert np.abs(host(actual.q)).max() == 2048  # the rounding-up edge was reached


@pytest.mark.parametrize("shape", [(5, 64), (3, 2, 80), (2, 256)])
def test_block_float_matches_reference(shape: tuple[int, ...]) -> None:
    v = random_activations(shape, seed=sum(shape))
    v.reshape(-1, shape[-1])[0] = 0.0
    expected = rq.block_float(v)
    actual = block_float(dev(v))
    np.testing.assert_array_equal(host(actual.integers).astype(np.float64), expected.integers)
    scale = np.ldexp(1.0, host(actual.exponent).astype(np.int64))
    np.testing.assert_array_equal(scale, expected.scale)


def nonfinite_rows(k: int) -> np.ndarray:
    """Blocks holding NaN, +inf or -inf next to ordinary, huge and tiny values, at the start,
    middle and end of a block; other blocks of the same rows stay finite."""
    rows = random_activations((6, k), seed=k + 1)
    rows[0, 0] = np.nan
    rows[1, 31] = np.inf
    rows[2, 17] = -np.inf
    rows[3, 3], rows[3, 4] = np.inf, np.nan
    rows[4, :32] = np.float32(3.0e38)
    rows[4, 5] = np.float32(-np.nan)  # a NaN beside values near the float32 maximum
    rows[5, :32] = np.float32(1e-40)
    rows[5, 9] = np.nan  # a NaN in a block that would be zero anyway
    return rows


@pytest.mark.parametrize("k", [32, 96])
def test_nonfinite_blocks_quantise_to_zero_as_the_reference(k: int) -> None:
    """Contract 3.1 step 2: a block holding a NaN or an infinity becomes q = 0, e = 0, on
    the reference and the kernel alike (a float max would drop the NaN on a GPU)."""
    x = nonfinite_rows(k)
    expected = rq.quantize_activations(x)
    assert not expected.values[:, :32].any() and not expected.exponent[:, 0].any()
    assert np.isfinite(expected.values).all()
    actual = quantize_activations(dev(x))
    np.testing.assert_array_equal(host(actual.exponent), expected.exponent)
    np.testing.assert_array_equal(host(actual.q)[:, :32], 0)
    scale = np.repeat(np.ldexp(np.float32(1.0), host(actual.exponent)), 32, axis=1)
    assert_same_bits(host(actual.q).astype(np.float32) * scale, expected.values)


def test_nonfinite_vectors_block_float_to_zero_as_the_reference() -> None:
    """Contract 3.2 step 1: the same for attention operands, per vector."""
    v = nonfinite_rows(64)
    expected = rq.block_float(v)
    assert not expected.integers.any() and (expected.scale == 1).all()
    actual = block_float(dev(v))
    np.testing.assert_array_equal(host(actual.integers).astype(np.float64), expected.integers)
    np.testing.assert_array_equal(np.ldexp(1.0, host(actual.exponent)), expected.scale)


def test_quantize_rejects_ragged_rows() -> None:
    with pytest.raises(ValueError, match="activation length 40 is not a multiple of 32"):
        quantize_activations(torch.zeros((2, 40)))
