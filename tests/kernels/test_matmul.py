"""kernels.matmul against reference.matmul, bit for bit, for every weight type, both
kernel paths, odd shapes, and bias."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from gguf import GGMLQuantizationType as T
from kernel_cases import (
    FLOAT_TYPES,
    QUANT_TYPES,
    assert_same_bits,
    dev,
    host,
    random_activations,
    random_blocks,
)

import exactserve.reference.quants as rq
from exactserve.kernels.matmul import DECODE_MAX_ROWS, matmul, matmul_quantized
from exactserve.kernels.quantize import quantize_activations
from exactserve.kernels.quants import quant_layout, weight_matrix
from exactserve.reference.matmul import matmul as reference_matmul
from exactserve.reference.matmul import prepare_float, prepare_integer


def random_matrix(qtype: T, n: int, k: int, seed: int):
    """(raw bytes, reference PreparedMatrix) of a random [n, k] matrix of `qtype`."""
    if qtype in FLOAT_TYPES:
        w = random_activations((n, k), seed) * np.float32(0.05)
        w[0, :32] = 0.0  # a zero group
        w[1, 32:64] *= np.float32(2.0**-30)  # a tiny group; a wide range within groups:
        w[:, 3] *= np.float32(2.0**12)
        raw = float_bytes(w, qtype)
        return raw, prepare_float(rq.dequantize(raw, qtype, (k, n)))
    layout = quant_layout(qtype)
    raw = random_blocks(qtype, n * k // layout.block_size, seed, wide=False).reshape(-1)
    iw = rq.to_integer_form(raw, qtype, n, k)
    return raw, prepare_integer(iw.q, iw.scale, iw.offset, iw.group)


def float_bytes(w: np.ndarray, qtype: T) -> np.ndarray:
    """Little-endian bytes of float32 w stored as F32, F16 or BF16 (BF16 by truncation)."""
    if qtype == T.F16:
        return w.astype("<f2").view(np.uint8).reshape(-1)
    if qtype == T.BF16:
        return (w.view(np.uint32) >> np.uint32(16)).astype("<u2").view(np.uint8).reshape(-1)
    return w.astype("<f4").view(np.uint8).reshape(-1)


def k_for(qtype: T) -> int:
    return 256 if qtype in QUANT_TYPES and quant_layout(qtype).block_size == 256 else 96


@pytest.mark.parametrize("qtype", QUANT_TYPES + FLOAT_TYPES, ids=lambda t: t.name)
def test_both_paths_match_reference(qtype: T) -> None:
    n, k = 45, k_for(qtype)  # 45: not a multiple of any tile
    raw, prepared = random_matrix(qtype, n, k, seed=int(qtype))
    w = weight_matrix(raw, qtype, n, k)
    for m in (1, 3):
        x = random_activations((m, k), seed=m + int(qtype))
        expected = reference_matmul(x, prepared)
        acts = quantize_activations(dev(x))
        for path in ("decode", "prefill"):
            assert_same_bits(matmul_quantized(acts, w, path=path), expected)


@pytest.mark.parametrize("qtype", [T.Q4_K, T.Q6_K, T.Q5_1, T.F16], ids=lambda t: t.name)
def test_many_rows_with_bias(qtype: T) -> None:
    m, n, k = 37, 20, k_for(qtype)  # 37 rows: two prefill row tiles, the second partial
    raw, prepared = random_matrix(qtype, n, k, seed=11)
    bias = random_activations((n,), seed=5)
    x = random_activations((m, k), seed=7)
    x[3] = 0.0  # an all-zero row: every block quantises to zero
    expected = reference_matmul(x, prepared, bias)
    actual = matmul(dev(x), weight_matrix(raw, qtype, n, k), dev(bias))
    assert_same_bits(actual, expected)


@pytest.mark.parametrize("qtype", FLOAT_TYPES, ids=lambda t: t.name)
def test_float_weight_groups_holding_nan_become_zero(qtype: T) -> None:
    """Contract 5.3: a 32-group holding a NaN becomes zero, in the kernels as in the
    reference (their max is an integer max of the bits: a float max drops NaN on a GPU)."""
    n, k = 20, 96
    w = random_activations((n, k), seed=4) * np.float32(0.05)
    w[2, 40] = np.nan
    w[5, :32] = np.float32(-np.nan)
    w[5, 70] = np.nan
    raw = float_bytes(w, qtype)
    prepared = prepare_float(rq.dequantize(raw, qtype, (k, n)))
    x = random_activations((3, k), seed=6)
    expected = reference_matmul(x, prepared)
    assert np.isfinite(expected).all()
    acts = quantize_activations(dev(x))
    for path in ("decode", "prefill"):
        assert_same_bits(
            matmul_quantized(acts, weight_matrix(raw, qtype, n, k), path=path), expected
        )


def test_rows_are_batch_invariant() -> None:
    """Row r of a many-row call equals the same row computed alone (decode path)."""
    raw, _ = random_matrix(T.Q4_0, 16, 64, seed=2)
    w = weight_matrix(raw, T.Q4_0, 16, 64)
    x = dev(random_activations((DECODE_MAX_ROWS + 3, 64), seed=3))
    together = matmul(x, w)
    alone = torch.cat([matmul(x[r : r + 1], w) for r in range(x.shape[0])])
    assert_same_bits(together, host(alone))


def test_mismatched_width_is_rejected() -> None:
    raw, _ = random_matrix(T.Q8_0, 4, 64, seed=1)
    w = weight_matrix(raw, T.Q8_0, 4, 64)
    with pytest.raises(ValueError, match="matmul: input has 32 features, weights expect 64"):
        matmul(torch.zeros((1, 32)), w)


def test_gpu_tiles_give_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    """The GPU's tile table (smaller tiles than the interpreter's) gives the same bits."""
    import exactserve.kernels.matmul as km

    raw, prepared = random_matrix(T.Q2_K, 70, 256, seed=8)
    w = weight_matrix(raw, T.Q2_K, 70, 256)
    x = random_activations((20, 256), seed=9)
    monkeypatch.setattr(km, "TILES", (16, 32, 32, 32))
    actual = matmul(dev(x), w, path="prefill")
    assert_same_bits(actual, reference_matmul(x, prepared))
    assert_same_bits(matmul(dev(x[:5]), w, path="decode"), host(actual[:5]))
