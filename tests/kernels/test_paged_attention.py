"""kernels.attention.paged_attention against reference.attention.paged_attention, bit for
bit: one launch for a batch mixing prefill, decode and verification queries, keys scattered
over a shared pool of blocks of several sizes, grouped heads, windows and soft-capping."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from kernel_cases import assert_same_bits, dev, host, random_activations

import exactserve.kernels.attention as kernel_attention
from exactserve.kernels.attention import paged_attention
from exactserve.reference.attention import paged_attention as reference_paged_attention

# sequence lengths and each one's query positions: a prefill, a decode step past two
# chunks, a verification of three tokens across a chunk boundary, a short prefill
LENGTHS = [70, 130, 67, 9]
POSITIONS = [list(range(70)), [129], [64, 65, 66], [0, 8]]


def pools(block_size: int, h_kv: int, d: int, seed: int):
    """Reference and kernel pools holding the same block floats, the sequences' blocks in
    shuffled order among spare ones -> (reference pools, kernel pools, block tables)."""
    rng = np.random.default_rng(seed)
    per_seq = [-(-n // block_size) for n in LENGTHS]
    n_blocks = sum(per_seq) + 2
    shape = (n_blocks, h_kv, block_size)
    k_int = rng.integers(-(2**21), 2**21 + 1, (*shape, d))
    v_int = rng.integers(-(2**21), 2**21 + 1, (*shape, d))
    k_exp = rng.integers(-40, -10, shape)
    v_exp = rng.integers(-30, -15, shape)
    reference = (k_int.astype(np.float64), np.ldexp(1.0, k_exp))
    reference += (v_int.astype(np.float64), np.ldexp(1.0, v_exp))
    ours = tuple(dev(a.astype(np.int32)) for a in (k_int, k_exp, v_int, v_exp))
    order = rng.permutation(n_blocks)
    tables = np.zeros((len(LENGTHS), max(per_seq)), dtype=np.int32)
    at = 0
    for s, n in enumerate(per_seq):
        tables[s, :n] = order[at : at + n]
        at += n
    return reference, ours, tables


CASES = {
    # name: (block size, H, H_kv, head size, window, cap)
    "blocks16": (16, 4, 2, 64, None, None),
    "blocks1-window": (1, 3, 1, 32, 40, None),
    "blocks48-softcap": (48, 2, 2, 80, None, 20.0),
    "blocks64-head256": (64, 2, 1, 256, None, None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_paged_attention_matches_reference(name: str) -> None:
    block_size, h, h_kv, d, window, cap = CASES[name]
    ref_pools, our_pools, tables = pools(block_size, h_kv, d, seed=block_size)
    positions = np.concatenate(POSITIONS)
    q = random_activations((len(positions), h, d), seed=d)
    starts = np.cumsum([0, *map(len, POSITIONS)])
    expected = reference_paged_attention(
        q, positions, starts, LENGTHS, tables, *ref_pools, window=window, cap=cap
    )
    actual = paged_attention(
        dev(q), dev(positions), starts, LENGTHS, dev(tables), *our_pools, window=window, cap=cap
    )
    assert_same_bits(actual, expected)


def test_a_batch_is_one_launch_and_its_rows_do_not_depend_on_the_batch(monkeypatch) -> None:
    launches = []
    kernel = kernel_attention._attention_kernel

    class Counting:
        def __getitem__(self, grid):
            launches.append(grid)
            return kernel[grid]

    monkeypatch.setattr(kernel_attention, "_attention_kernel", Counting())
    _, our_pools, tables = pools(16, 2, 32, seed=3)
    positions = np.concatenate(POSITIONS)
    q = dev(random_activations((len(positions), 4, 32), seed=4))
    starts = np.cumsum([0, *map(len, POSITIONS)])
    together = paged_attention(q, dev(positions), starts, LENGTHS, dev(tables), *our_pools)
    assert len(launches) == 1
    for s in range(len(LENGTHS)):  # each sequence alone, in its own launch
        a, b = starts[s], starts[s + 1]
        alone = paged_attention(
            q[a:b], dev(positions[a:b]), [0, b - a], [LENGTHS[s]], dev(tables[s : s + 1]),
            *our_pools,
        )  # fmt: skip
        assert_same_bits(alone, host(together[a:b]))


def test_paged_attention_errors() -> None:
    _, (k, ke, v, ve), tables = pools(16, 2, 32, seed=5)
    q = dev(np.zeros((2, 4, 32), np.float32))
    pos = dev(np.array([0, 1]))
    t = dev(tables[:1])
    with pytest.raises(ValueError, match="query_starts must rise from 0 to 2"):
        paged_attention(q, pos, [0, 1], [20], t, k, ke, v, ve)
    with pytest.raises(
        ValueError, match="block_tables has 9 columns; the longest sequence needs 13"
    ):
        paged_attention(q, pos, [0, 2], [200], t, k, ke, v, ve)
    with pytest.raises(ValueError, match="sequence 0 names a block outside the pool"):
        paged_attention(q, pos, [0, 2], [20], t + 1000, k, ke, v, ve)
    with pytest.raises(ValueError, match=r"query positions of sequence 0 must lie in \[0, 1\)"):
        paged_attention(q, pos, [0, 2], [1], t, k, ke, v, ve)
    two = dev(tables[:2])
    with pytest.raises(ValueError, match=r"query positions of sequence 1 must lie in \[0, 1\)"):
        paged_attention(q, pos, [0, 1, 2], [20, 1], two, k, ke, v, ve)
    with pytest.raises(ValueError, match="sequence 1 names a block outside the pool"):
        paged_attention(q, pos, [0, 1, 2], [20, 20], two + dev(np.array([[0], [99]])), k, ke, v, ve)
    with pytest.raises(ValueError, match="does not fit pools"):
        paged_attention(q[:, :, :16], pos, [0, 2], [20], t, k, ke, v, ve)
    with pytest.raises(ValueError, match="exponents must be int32"):
        paged_attention(q, pos, [0, 2], [20], t, k, ke.to(torch.int64), v, ve)
    with pytest.raises(ValueError, match=r"exponents must be \[n_blocks, H_kv, block_size\]"):
        paged_attention(q, pos, [0, 2], [20], t, k, ke[:, :1], v, ve)
