"""Contract 3.1 and 5: activation rounding, matmul for every weight type, embeddings.
Properties that could fail: exactness bounds, batch and tiling invariance (bitwise),
agreement with float64 arithmetic within the contract's error bound."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType as T

import exactserve.reference.matmul as matmul_module
from exactserve.reference.embedding import embedding_rows_prepared, scale_embeddings
from exactserve.reference.matmul import matmul, prepare_float, prepare_integer
from exactserve.reference.quantize import quantize_activations
from exactserve.reference.quants import QUANT_UNITS, dequantize, to_integer_form
from exactserve.runtime.tiny_model import random_raw_blocks

F32 = np.float32
QUANT_TYPES = sorted(QUANT_UNITS, key=lambda t: t.name)


def quantised_matrix(qtype: T, n: int, k: int, seed: int = 0):
    """(prepared matrix, float64 weights [n, k], raw bytes) of random blocks of `qtype`."""
    unit = QUANT_UNITS[qtype]
    raw = random_raw_blocks(np.random.default_rng(seed), qtype, n * k // unit.block_size, 0.05)
    iw = to_integer_form(raw.reshape(-1), qtype, n, k)
    w = dequantize(raw.reshape(-1), qtype, (k, n)).astype(np.float64)
    return prepare_integer(iw.q, iw.scale, iw.offset, iw.group), w, raw


def activations(m: int, k: int, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)) * np.exp(rng.uniform(-3, 3, (m, 1)))
    x[:, 5] *= 40  # an outlier feature, as real models have
    return x.astype(F32)


def test_activation_rounding_bounds_and_exactness():
    x = activations(7, 256)
    x[2, 64:96] = 0.0
    qa = quantize_activations(x)
    scale = 2.0 ** qa.exponent.astype(np.float64)
    q = qa.values.astype(np.float64).reshape(7, 8, 32) / scale[..., None]
    assert np.array_equal(q, np.round(q))  # integers
    assert np.abs(q).max() <= 2048
    amax = np.abs(q).max(axis=-1)
    nonzero = amax > 0
    assert (amax[nonzero] >= 1024).all()  # the block maximum keeps 11-12 bits
    assert not nonzero[2, 2] and nonzero.sum() == 7 * 8 - 1
    err = np.abs(qa.values - x).reshape(7, 8, 32).max(axis=-1)
    assert (err <= scale / 2).all()


def test_activation_blocks_are_independent():
    x = activations(2, 96)
    y = x.copy()
    y[:, 32:64] *= 1000
    a, b = quantize_activations(x).values, quantize_activations(y).values
    assert np.array_equal(a[:, :32], b[:, :32]) and np.array_equal(a[:, 64:], b[:, 64:])


@pytest.mark.parametrize("qtype", QUANT_TYPES, ids=lambda t: t.name)
def test_matmul_batch_invariance_every_type(qtype):
    k = 512 if QUANT_UNITS[qtype].block_size == 256 else 96
    w, _, _ = quantised_matrix(qtype, 37, k)
    x = activations(9, k)
    full = matmul(x, w)
    for i in (0, 4, 8):
        assert np.array_equal(matmul(x[i : i + 1], w)[0].view(np.uint32), full[i].view(np.uint32))
    assert np.array_equal(matmul(x[3:7], w), full[3:7])


@pytest.mark.parametrize("qtype", QUANT_TYPES, ids=lambda t: t.name)
def test_matmul_close_to_float64(qtype):
    k = 512 if QUANT_UNITS[qtype].block_size == 256 else 96
    w, w64, _ = quantised_matrix(qtype, 21, k)
    x = activations(5, k)
    got = matmul(x, w).astype(np.float64)
    want = x.astype(np.float64) @ w64.T
    # 3.1 rounds each activation by at most 2^-11 of its block maximum; fp32 adds the rest.
    blockmax = np.abs(x).reshape(5, -1, 32).max(axis=-1).repeat(32, axis=1)
    bound = (blockmax * 2.0**-11) @ np.abs(w64).T + 1e-6 * (np.abs(x) @ np.abs(w64).T)
    assert (np.abs(got - want) <= bound).all()


def test_float_weights_are_batch_invariant_and_accurate():
    rng = np.random.default_rng(2)
    w = (rng.standard_normal((19, 64)) * 0.05).astype(np.float16).astype(F32)
    prepared = prepare_float(w)
    q = prepared.q.transpose(2, 0, 1).reshape(19, 64) * prepared.scale.T.repeat(32, axis=1)
    assert np.array_equal(q, w)  # these F16 groups span few binades: converted exactly
    x = activations(6, 64)
    full = matmul(x, prepared)
    assert np.array_equal(matmul(x[2:3], prepared)[0], full[2])
    want = x.astype(np.float64) @ w.astype(np.float64).T
    assert np.abs(full - want).max() <= 2.0**-9 * np.abs(x).max() * np.abs(w).sum(axis=1).max()


def test_matmul_tiling_does_not_change_bits(monkeypatch):
    w, _, _ = quantised_matrix(T.Q4_K, 300, 256)
    x = activations(70, 256)
    want = matmul(x, w)
    monkeypatch.setattr(matmul_module, "ROW_TILE", 3)
    monkeypatch.setattr(matmul_module, "COL_TILE", 7)
    monkeypatch.setattr(matmul_module, "TILE_ELEMENTS", 1000)
    assert np.array_equal(matmul(x, w), want)


def test_matmul_bias_is_one_final_add():
    w, _, _ = quantised_matrix(T.Q8_0, 8, 64)
    x = activations(3, 64)
    bias = np.linspace(-1, 1, 8, dtype=F32)
    assert np.array_equal(matmul(x, w, bias), matmul(x, w) + bias)


def test_matmul_rejects_wrong_width():
    w, _, _ = quantised_matrix(T.Q8_0, 8, 64)
    with pytest.raises(ValueError, match="input has 96 features, weights expect 64"):
        matmul(activations(1, 96), w)


@pytest.mark.parametrize("qtype", [T.Q8_0, T.Q4_K, T.Q6_K, T.Q4_1], ids=lambda t: t.name)
def test_embedding_rows_are_ggml_dequantisation(qtype):
    w, _, raw = quantised_matrix(qtype, 40, 256)
    ids = np.array([0, 39, 7, 7])
    expected = dequantize(raw.reshape(-1), qtype, (256, 40))[ids]
    assert np.array_equal(embedding_rows_prepared(w, ids).view(np.uint32), expected.view(np.uint32))
    scaled = scale_embeddings(expected, float(np.sqrt(F32(256))))
    assert np.array_equal(scaled, expected * F32(16.0))


def test_executor_does_not_change_bits(monkeypatch):
    from concurrent.futures import ThreadPoolExecutor

    w, _, _ = quantised_matrix(T.Q5_1, 700, 96)
    x = activations(130, 96)
    want = matmul(x, w)
    monkeypatch.setattr(matmul_module, "PARALLEL_WORK", 0)
    with ThreadPoolExecutor(3) as pool:
        assert np.array_equal(matmul(x, w, executor=pool), want)
        assert np.array_equal(matmul(x[:1], w, executor=pool), want[:1])
