"""Contract 7.6: attention over a paged cache. A batch of sequences whose keys sit in
scattered blocks of one pool gives each query the bits of `attention` over that sequence's
contiguous keys, whatever the block size, the placement and the rest of the batch."""

from __future__ import annotations

import numpy as np
import pytest

from exactserve.reference.attention import attention, paged_attention
from exactserve.reference.quantize import block_float

F32 = np.float32


def bits(a):
    return np.ascontiguousarray(a, dtype=F32).view(np.uint32)


def sequences(lengths, h_kv=2, d=16, seed=0):
    """Per sequence: contiguous (k_int, k_scale, v_int, v_scale) [H_kv, L, ...]."""
    rng = np.random.default_rng(seed)
    out = []
    for n in lengths:
        kb = block_float(rng.standard_normal((n, h_kv, d)).astype(F32) * F32(2))
        vb = block_float(rng.standard_normal((n, h_kv, d)).astype(F32))
        out.append(
            (kb.integers.transpose(1, 0, 2), kb.scale.T, vb.integers.transpose(1, 0, 2), vb.scale.T)
        )
    return out


def paged(seqs, block_size, seed=1):
    """Scatter the sequences' positions over a shuffled pool (with spare blocks holding
    other finite data) -> (pools, block_tables [n_seq, max_blocks])."""
    rng = np.random.default_rng(seed)
    per_seq = [-(-kv[0].shape[1] // block_size) for kv in seqs]
    n_blocks = sum(per_seq) + 3
    order = rng.permutation(n_blocks)
    h_kv, _, d = seqs[0][0].shape
    dv = seqs[0][2].shape[2]
    pools = [
        rng.integers(-9, 9, (n_blocks, h_kv, block_size, d)).astype(np.float64),
        np.ldexp(1.0, rng.integers(-30, -10, (n_blocks, h_kv, block_size))),
        rng.integers(-9, 9, (n_blocks, h_kv, block_size, dv)).astype(np.float64),
        np.ldexp(1.0, rng.integers(-30, -10, (n_blocks, h_kv, block_size))),
    ]
    tables = np.zeros((len(seqs), max(per_seq)), dtype=np.int32)
    at = 0
    for s, kv in enumerate(seqs):
        for p in range(kv[0].shape[1]):
            block = order[at + p // block_size]
            tables[s, p // block_size] = block
            for pool, a in zip(pools, kv, strict=True):
                pool[block, :, p % block_size] = a[:, p]
        at += per_seq[s]
    return pools, tables


# (sequence lengths, each sequence's query positions)
BATCH = ([70, 130, 67, 9], [list(range(70)), [129], [64, 65, 66], [0, 8]])


@pytest.mark.parametrize("block_size", [1, 16, 48, 64, 128])
@pytest.mark.parametrize("window", [None, 40])
def test_paged_batch_equals_each_sequence_alone(block_size, window):
    lengths, positions = BATCH
    seqs = sequences(lengths)
    pools, tables = paged(seqs, block_size)
    rng = np.random.default_rng(5)
    qs = [rng.standard_normal((len(p), 4, 16)).astype(F32) for p in positions]
    starts = np.cumsum([0, *map(len, positions)])
    out = paged_attention(
        np.concatenate(qs), np.concatenate(positions), starts, lengths, tables, *pools,
        window=window, cap=30.0,
    )  # fmt: skip
    for s, (q, p) in enumerate(zip(qs, positions, strict=True)):
        alone = attention(q, np.array(p), *seqs[s], window=window, cap=30.0)
        assert np.array_equal(bits(out[starts[s] : starts[s + 1]]), bits(alone)), s


def test_a_sequence_without_queries_and_stale_slots_are_harmless():
    seqs = sequences([20, 33])
    pools, tables = paged(seqs, 16)
    q = np.random.default_rng(2).standard_normal((2, 4, 16)).astype(F32)
    out = paged_attention(q, np.array([19, 32]), [0, 0, 2], [20, 33], tables, *pools)
    assert np.array_equal(bits(out), bits(attention(q, [19, 32], *seqs[1])))
    # sequence 1 now claims 40 positions: slots 33..39 of its last block hold other data,
    # but they lie after both queries, so nothing changes
    again = paged_attention(q, np.array([19, 32]), [0, 2], [40], tables[1:], *pools)
    assert np.array_equal(bits(again), bits(out))


def test_paged_attention_errors():
    seqs = sequences([20])
    pools, tables = paged(seqs, 16)
    q = np.zeros((2, 4, 16), F32)
    with pytest.raises(ValueError, match="query_starts must run from 0 to 2"):
        paged_attention(q, [0, 1], [0, 1], [20], tables, *pools)
    with pytest.raises(
        ValueError, match="block_tables has 2 columns; the longest sequence needs 3"
    ):
        paged_attention(q, [0, 1], [0, 2], [40], tables, *pools)
    with pytest.raises(ValueError, match="names a block outside the pool"):
        paged_attention(q, [0, 1], [0, 2], [20], tables + 100, *pools)
    with pytest.raises(ValueError, match="sequence 0 has queries past its length"):
        paged_attention(q, [0, 20], [0, 2], [20], tables, *pools)
    with pytest.raises(ValueError, match=r"block_tables must be \[n_seq, max_blocks\]"):
        paged_attention(q, [0, 1], [0, 2], [20], tables[0], *pools)
