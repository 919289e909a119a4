"""The paged KV cache's bookkeeping (runtime.model.cache): block allocation, sharing, copy on
write, truncation, release and a full pool. Plain Python over the reference storage."""

from __future__ import annotations

import gc

import numpy as np
import pytest

from exactserve.reference.quantize import BlockFloat
from exactserve.runtime.errors import ExactserveError
from exactserve.runtime.kv_storage import KVShape, ReferenceKVStorage
from exactserve.runtime.model.cache import BlockAllocator, KVCacheFullError, KVPool

SHAPE = KVShape(n_layers=2, n_kv_heads=2, head_dim=4, head_dim_v=3, block_size=4)


def pool(n_blocks: int = 4, max_blocks: int | None = None) -> KVPool:
    return KVPool(ReferenceKVStorage(SHAPE, n_blocks), max_blocks)


def stamp(cache, n: int, value: float) -> None:
    """Write n positions after cache.length whose key integers all equal `value`, commit."""
    cache.reserve(n)
    k = BlockFloat(np.full((n, 2, 4), value), np.full((n, 2), 2.0))
    v = BlockFloat(np.full((n, 2, 3), -value), np.full((n, 2), 0.5))
    slots = cache.slots(cache.length, n)
    for layer in range(SHAPE.n_layers):
        cache.pool.storage.write(layer, slots, k, v)
    cache.commit(np.arange(n))


def keys(cache) -> np.ndarray:
    """Layer 0's key integers [length] (head 0, dim 0) read through the block table."""
    k_int = cache.pool.storage.layer(0)[0]
    slots = cache.slots(0, cache.length)
    return k_int[slots // SHAPE.block_size, 0, slots % SHAPE.block_size, 0]


def test_allocator_hands_out_the_lowest_free_block_and_grows_by_doubling():
    grown = []
    allocator = BlockAllocator(3)
    assert allocator.allocate(2, grown.append) == [0, 1]
    allocator.release([0])
    assert allocator.allocate(3, grown.append) == [0, 2, 3]  # grew 3 -> 6
    assert grown == [6] and allocator.n_blocks == 6 and allocator.n_free == 2
    with pytest.raises(RuntimeError, match="released more often"):
        allocator.release([5])


def test_a_fixed_pool_reports_full_with_a_remedy():
    p = pool(2, max_blocks=2)
    a = p.new_sequence()
    stamp(a, 8, 1.0)  # both blocks
    b = p.new_sequence()
    with pytest.raises(KVCacheFullError, match=r"1 more blocks needed, 0 of 2 free.*release"):
        b.reserve(1)
    assert isinstance(KVCacheFullError("x"), ExactserveError)
    a.release()
    b.reserve(5)
    assert b.block_table == [0, 1] and p.n_blocks_in_use == 2


def test_positions_map_through_the_block_table():
    p = pool()
    a, b = p.new_sequence(), p.new_sequence()
    stamp(a, 3, 1.0)  # block 0
    stamp(b, 6, 2.0)  # blocks 1, 2
    stamp(a, 3, 3.0)  # fills block 0, then block 3
    assert a.block_table == [0, 3] and b.block_table == [1, 2]
    assert list(a.slots(0, 6)) == [0, 1, 2, 3, 12, 13]
    assert list(keys(a)) == [1, 1, 1, 3, 3, 3] and list(keys(b)) == [2] * 6
    assert a.nbytes == 2 * p.storage.bytes_per_block
    # per block: 2 layers x (k 2*4*4 + v 2*4*3 int32 integers; k and v scales 2*4 float64)
    assert p.storage.bytes_per_block == 2 * (4 * (32 + 24) + 8 * (8 + 8))


def test_pool_growth_keeps_what_was_written():
    p = pool(1)
    a = p.new_sequence()
    stamp(a, 3, 5.0)
    stamp(a, 10, 6.0)  # needs 4 blocks: the storage is reallocated
    assert p.storage.n_blocks == 4 and list(keys(a)) == [5] * 3 + [6] * 10


def test_copy_shares_blocks_and_copies_a_partly_filled_one_before_writing():
    p = pool()
    a = p.new_sequence()
    stamp(a, 6, 1.0)  # blocks 0 (full), 1 (2 of 4)
    fork = a.copy(5)
    assert fork.block_table == [0, 1] and p.allocator.refcount(1) == 2
    assert fork.length == 5 and list(fork.tokens) == [0, 1, 2, 3, 4]
    stamp(fork, 2, 7.0)  # position 5 is in the shared block 1: copied to block 2 first
    assert fork.block_table == [0, 2] and p.allocator.refcount(1) == 1
    assert list(keys(fork)) == [1] * 5 + [7] * 2
    assert list(keys(a)) == [1] * 6  # the original is untouched
    stamp(a, 1, 9.0)  # block 1 is a's alone again: written in place
    assert a.block_table == [0, 1] and list(keys(a)) == [1] * 6 + [9]


def test_truncate_releases_whole_blocks_past_the_end():
    p = pool()
    a = p.new_sequence()
    stamp(a, 10, 1.0)  # blocks 0, 1, 2
    a.truncate(5)
    assert a.block_table == [0, 1] and a.length == 5 and len(a.tokens) == 5
    assert p.n_blocks_in_use == 2
    stamp(a, 2, 4.0)
    assert list(keys(a)) == [1] * 5 + [4] * 2
    with pytest.raises(ValueError, match="cannot truncate a cache of length 7 to 8"):
        a.truncate(8)
    with pytest.raises(ValueError, match="cannot copy 8 positions of a cache of length 7"):
        a.copy(8)


def test_release_and_garbage_collection_return_blocks():
    p = pool()
    with p.new_sequence() as a:
        stamp(a, 9, 1.0)
        fork = a.copy()
        assert p.n_blocks_in_use == 3
    assert a.length == 0 and a.block_table == [] and p.n_blocks_in_use == 3  # fork holds them
    del fork
    gc.collect()
    assert p.n_blocks_in_use == 0
    stamp(a, 1, 2.0)  # a released cache is an empty one
    assert a.block_table == [0]
