"""kernels.attention against reference.attention, bit for bit: prefill, decode and
multi-token verification; grouped- and multi-query heads; sliding windows; soft-capping;
head sizes that are not powers of two and up to 256; caches longer than a chunk."""

from __future__ import annotations

import numpy as np
import pytest
from kernel_cases import (
    assert_same_bits,
    dev,
    host,
    random_activations,
)

from exactserve.kernels.attention import attention
from exactserve.kernels.quantize import block_float
from exactserve.reference.attention import attention as reference_attention
from exactserve.reference.quantize import block_float as reference_block_float


def cache(length: int, h_kv: int, d: int, seed: int):
    """(reference operands, kernel operands) of random keys and values for 0..length-1."""
    k = random_activations((length, h_kv, d), seed)
    v = random_activations((length, h_kv, d), seed + 1)
    kb, vb = reference_block_float(k), reference_block_float(v)
    ref = (kb.integers.transpose(1, 0, 2), kb.scale.T, vb.integers.transpose(1, 0, 2), vb.scale.T)
    kt, vt = block_float(dev(k)), block_float(dev(v))
    ours = (
        kt.integers.permute(1, 0, 2).contiguous(), kt.exponent.T.contiguous(),
        vt.integers.permute(1, 0, 2).contiguous(), vt.exponent.T.contiguous(),
    )  # fmt: skip
    return ref, ours


CASES = {
    # name: (cache length, query positions, H, H_kv, head size, window, cap)
    "prefill": (70, list(range(70)), 4, 2, 64, None, None),
    "decode": (130, [129], 4, 1, 64, None, None),
    "verify": (67, [64, 65, 66], 2, 2, 80, None, None),
    "window": (150, [3, 70, 140, 149], 3, 1, 32, 40, None),
    "softcap": (20, list(range(20)), 2, 1, 48, None, 20.0),
    "head256": (9, [0, 8], 2, 1, 256, None, None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_attention_matches_reference(name: str) -> None:
    length, positions, h, h_kv, d, window, cap = CASES[name]
    ref_kv, our_kv = cache(length, h_kv, d, seed=length)
    q = random_activations((len(positions), h, d), seed=d) * np.float32(0.3)
    expected = reference_attention(q, np.array(positions), *ref_kv, window=window, cap=cap)
    actual = attention(dev(q), dev(np.array(positions)), *our_kv, window=window, cap=cap)
    assert_same_bits(actual, expected)


def test_cache_views_and_query_order_do_not_matter() -> None:
    """Queries computed one per call on a cache view equal the same queries in one call."""
    _, (k, ke, v, ve) = cache(100, 2, 64, seed=3)
    q = dev(random_activations((5, 4, 64), seed=4))
    positions = dev(np.array([99, 10, 64, 63, 0]))
    together = attention(q, positions, k, ke, v, ve)
    for i, p in enumerate(positions.tolist()):
        n = p + 1
        alone = attention(q[i : i + 1], [p], k[:, :n], ke[:, :n], v[:, :n], ve[:, :n])
        assert_same_bits(alone, host(together[i : i + 1]))


def test_small_tiles_give_the_same_bits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Split Q.K and P.V into several head-size pieces and rows into several tiles (the GPU
    table splits head sizes above 64): the bits must not change."""
    import exactserve.kernels.attention as ka

    length, positions, h, h_kv, d, window, cap = CASES["verify"]
    ref_kv, our_kv = cache(length, h_kv, d, seed=length)
    q = dev(random_activations((len(positions), h, d), seed=d))
    wide = attention(q, dev(np.array(positions)), *our_kv)
    monkeypatch.setattr(ka, "BLOCK_M", 2)
    monkeypatch.setattr(ka, "BLOCK_D", 16)
    monkeypatch.setattr(ka, "BLOCK_DV", 32)
    narrow = attention(q, dev(np.array(positions)), *our_kv)
    assert_same_bits(narrow, host(wide))
    expected = reference_attention(host(q), np.array(positions), *ref_kv)
    assert_same_bits(narrow, expected)
