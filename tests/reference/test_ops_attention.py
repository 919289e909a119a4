"""Contract 7: attention. Invariance under how queries are grouped into calls and tiles,
causality and windows (bitwise), agreement with float64 softmax attention."""

from __future__ import annotations

import numpy as np
import pytest

import exactserve.reference.attention as attention_module
from exactserve.reference.attention import attention
from exactserve.reference.quantize import block_float

F32 = np.float32


def make(t=200, h=4, h_kv=2, d=32, seed=0):
    rng = np.random.default_rng(seed)
    q = (rng.standard_normal((t, h, d)) * 1.5).astype(F32)
    k = (rng.standard_normal((t, h_kv, d)) * 1.5).astype(F32)
    v = rng.standard_normal((t, h_kv, d)).astype(F32)
    return q, k, v


def cache(k, v):
    kb, vb = block_float(k), block_float(v)
    return kb.integers.transpose(1, 0, 2), kb.scale.T, vb.integers.transpose(1, 0, 2), vb.scale.T


def bits(a):
    return np.ascontiguousarray(a, dtype=F32).view(np.uint32)


@pytest.mark.parametrize("window", [None, 50, 64, 1])
def test_split_calls_give_identical_bits(window):
    q, k, v = make()
    kv = cache(k, v)
    pos = np.arange(200)
    full = attention(q, pos, *kv, window=window)
    for splits in ([1, 7, 64, 128], [133], list(range(1, 200, 13))):
        edges = [0, *splits, 200]
        parts = [
            attention(q[a:b], pos[a:b], *kv, window=window)
            for a, b in zip(edges, edges[1:], strict=False)
        ]
        assert np.array_equal(bits(np.concatenate(parts)), bits(full))


def test_decode_sees_only_its_prefix():
    """A query's output ignores keys after it, even when the cache already holds them."""
    q, k, v = make()
    pos = np.array([70])
    short = attention(q[70:71], pos, *cache(k[:71], v[:71]))
    k2, v2 = k.copy(), v.copy()
    k2[71:] *= 7
    v2[71:] = -v2[71:]
    assert np.array_equal(bits(attention(q[70:71], pos, *cache(k2, v2))), bits(short))


def test_keys_outside_the_window_are_ignored():
    q, k, v = make()
    pos = np.array([150, 199])
    want = attention(q[[150, 199]], pos, *cache(k, v), window=40)
    k2 = k.copy()
    k2[:110] = 100.0  # every key before position 150 - 40 + 1 = 111
    assert np.array_equal(bits(attention(q[[150, 199]], pos, *cache(k2, v), window=40)), bits(want))


@pytest.mark.parametrize("tile", [1, 5, 333])
def test_query_tile_does_not_change_bits(tile, monkeypatch):
    q, k, v = make()
    kv = cache(k, v)
    pos = np.arange(200)
    want = attention(q, pos, *kv, window=77)
    monkeypatch.setattr(attention_module, "QUERY_TILE", tile)
    assert np.array_equal(bits(attention(q, pos, *kv, window=77)), bits(want))


def float64_attention(q, k, v, pos, window=None, group=2):
    out = np.zeros(q.shape[:2] + (v.shape[-1],))
    for r, p in enumerate(pos):
        lo = 0 if window is None else max(0, p - window + 1)
        for h in range(q.shape[1]):
            s = k[lo : p + 1, h // group].astype(np.float64) @ q[r, h].astype(np.float64)
            w = np.exp(s - s.max())
            out[r, h] = (w / w.sum()) @ v[lo : p + 1, h // group]
    return out


@pytest.mark.parametrize("window", [None, 30])
def test_close_to_float64(window):
    q, k, v = make()
    pos = np.array([0, 1, 63, 64, 100, 199])
    got = attention(q[pos], pos, *cache(k, v), window=window)
    want = float64_attention(q[pos], k, v, pos, window)
    assert np.abs(got - want).max() < 2e-5


def test_multi_query_and_head_sizes():
    q, k, v = make(t=70, h=8, h_kv=1, d=256, seed=3)
    q *= F32(1 / 16)  # the attention scale of a 256-wide head
    pos = np.arange(70)
    got = attention(q, pos, *cache(k, v))
    want = float64_attention(q, k, v, pos, group=8)
    assert np.abs(got - want).max() < 2e-5


def test_soft_capping_bounds_scores():
    q, k, v = make(t=10)
    q *= 50  # huge scores: without a cap the softmax is one-hot
    pos = np.arange(10)
    capped = attention(q, pos, *cache(k, v), cap=1.0)
    plain = attention(q, pos, *cache(k, v))
    # With |scores| <= 1 no key's weight can exceed e^2 times another's.
    assert not np.array_equal(capped, plain)
    assert np.abs(capped).max() <= np.abs(v).max()


def test_rejects_mismatched_shapes():
    q, k, v = make(t=5, h=3, h_kv=2)
    with pytest.raises(ValueError, match="does not fit keys"):
        attention(q, np.arange(5), *cache(k, v))
