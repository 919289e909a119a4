"""Paged KV cache: a pool of fixed-size blocks shared by every sequence of one model.

A sequence's position p lives in block `block_table[p // block_size]`, slot
`p % block_size`. Blocks are reference counted, so `SequenceCache.copy` shares a prefix
without copying it, and a shared block is copied before it is written (copy on write).
Which block holds a position never changes a bit of the logits: attention reads keys
through the block table in the contract's 64-position chunks, aligned to absolute
positions (docs/PRECISION.md 7.6).

The bookkeeping here is plain Python; the key/value arrays themselves belong to the
backend (`Ops.new_kv_storage`, runtime.kv_storage), in the form its attention reads.
"""

from __future__ import annotations

import heapq
import weakref

import numpy as np

from exactserve.runtime.errors import ExactserveError

DEFAULT_BLOCK_SIZE = 16  # positions per block
INITIAL_BLOCKS = 16


class KVCacheFullError(ExactserveError, MemoryError):
    """Every block of a fixed-size KV pool is in use."""


class BlockAllocator:
    """Reference-counted block ids 0..n_blocks-1; the lowest free id is handed out first,
    so a given sequence of calls always lays the cache out the same way.

    `max_blocks` None lets the pool grow (doubling); an int fixes its ceiling.
    """

    def __init__(self, n_blocks: int, max_blocks: int | None = None) -> None:
        if n_blocks < 1 or (max_blocks is not None and max_blocks < n_blocks):
            raise ValueError(f"bad block counts: {n_blocks} initial, {max_blocks} at most")
        self.n_blocks = n_blocks
        self.max_blocks = max_blocks
        self._free = list(range(n_blocks))  # a heap
        self._refs = [0] * n_blocks

    @property
    def n_free(self) -> int:
        return len(self._free)

    def refcount(self, block: int) -> int:
        return self._refs[block]

    def allocate(self, n: int, grow) -> list[int]:
        """`n` fresh blocks (refcount 1). `grow(new_n_blocks)` is called first when the free
        list is short and the ceiling allows; raises KVCacheFullError otherwise."""
        if n > len(self._free):
            needed = self.n_blocks - len(self._free) + n
            if self.max_blocks is not None and needed > self.max_blocks:
                raise KVCacheFullError(
                    f"the KV cache is full: {n} more blocks needed, {len(self._free)} of "
                    f"{self.max_blocks} free; release finished sequences "
                    "(SequenceCache.release) or allow more blocks (kv_blocks)"
                )
            new_total = max(needed, 2 * self.n_blocks)
            if self.max_blocks is not None:
                new_total = min(new_total, self.max_blocks)
            grow(new_total)
            for block in range(self.n_blocks, new_total):
                heapq.heappush(self._free, block)
            self._refs.extend([0] * (new_total - self.n_blocks))
            self.n_blocks = new_total
        blocks = [heapq.heappop(self._free) for _ in range(n)]
        for block in blocks:
            self._refs[block] = 1
        return blocks

    def share(self, blocks: list[int]) -> None:
        for block in blocks:
            self._refs[block] += 1

    def release(self, blocks: list[int]) -> None:
        for block in blocks:
            self._refs[block] -= 1
            if self._refs[block] == 0:
                heapq.heappush(self._free, block)
            elif self._refs[block] < 0:
                raise RuntimeError(f"KV block {block} released more often than it was held")


class KVPool:
    """The blocks of one model's KV cache: an allocator plus the backend's storage.

    `storage` (runtime.kv_storage) holds every layer's keys and values for `n_blocks`
    blocks of `block_size` positions; it is grown in step with the allocator.
    """

    def __init__(self, storage, max_blocks: int | None = None) -> None:
        self.storage = storage
        self.block_size = storage.block_size
        self.allocator = BlockAllocator(storage.n_blocks, max_blocks)
        self.prefix_cache = None  # a runtime.model.prefix_cache.PrefixCache, if enabled

    def new_sequence(self) -> SequenceCache:
        return SequenceCache(self)

    def allocate(self, n: int) -> list[int]:
        """`n` fresh blocks: free ones, then new ones while the pool may grow, then blocks
        the prefix cache gives up."""
        allocator = self.allocator
        short = n - allocator.n_free
        if short > 0 and allocator.max_blocks is not None and self.prefix_cache is not None:
            beyond_growth = short - (allocator.max_blocks - allocator.n_blocks)
            if beyond_growth > 0:
                self.prefix_cache.evict(beyond_growth)
        return allocator.allocate(n, self.storage.grow)

    @property
    def n_blocks_in_use(self) -> int:
        return self.allocator.n_blocks - self.allocator.n_free


class SequenceCache:
    """One sequence's view of a `KVPool`: its block table, length and token ids.

    `forward` reserves blocks, writes keys/values and commits tokens. `length` counts
    committed positions; `truncate` drops a tail (rejected speculative tokens), `copy` forks
    a prefix sharing its blocks, `release` hands every block back (also done when the
    object is garbage collected; `with cache:` releases on exit).
    """

    def __init__(self, pool: KVPool) -> None:
        self.pool = pool
        self.length = 0
        self.tokens = np.zeros(0, dtype=np.int64)
        self.block_table: list[int] = []  # mutated in place: the finalizer holds it
        self._finalizer = weakref.finalize(self, pool.allocator.release, self.block_table)

    def __enter__(self) -> SequenceCache:
        return self

    def __exit__(self, *exc) -> None:
        self.release()

    def reserve(self, n_new: int) -> None:
        """Own writable blocks for positions length..length+n_new-1: allocate missing blocks
        and copy a shared partly filled block first (copy on write)."""
        size = self.pool.block_size
        last = self.length // size
        if self.length % size and self.pool.allocator.refcount(self.block_table[last]) > 1:
            (fresh,) = self.pool.allocate(1)
            self.pool.storage.copy_blocks([self.block_table[last]], [fresh])
            self.pool.allocator.release([self.block_table[last]])
            self.block_table[last] = fresh
        missing = -(-(self.length + n_new) // size) - len(self.block_table)
        if missing > 0:
            self.block_table.extend(self.pool.allocate(missing))

    def slots(self, start: int, n: int) -> np.ndarray:
        """Pool slots (block * block_size + offset) of positions start..start+n-1, int64."""
        size = self.pool.block_size
        positions = np.arange(start, start + n, dtype=np.int64)
        table = np.asarray(self.block_table, dtype=np.int64)
        return table[positions // size] * size + positions % size

    def commit(self, tokens: np.ndarray) -> None:
        """Mark the positions just written for `tokens` as part of the sequence."""
        self.tokens = np.concatenate([self.tokens, np.asarray(tokens, dtype=np.int64)])
        self.length += len(tokens)

    def truncate(self, length: int) -> None:
        """Forget every position from `length` on; blocks wholly past it are released."""
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot truncate a cache of length {self.length} to {length}")
        self._keep_blocks(-(-length // self.pool.block_size))
        self.length = length
        self.tokens = self.tokens[:length]

    def copy(self, length: int | None = None) -> SequenceCache:
        """A cache holding the first `length` positions (default: all), sharing their blocks;
        either side's later writes go to blocks of its own."""
        length = self.length if length is None else length
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot copy {length} positions of a cache of length {self.length}")
        twin = SequenceCache(self.pool)
        twin.adopt(self.block_table[: -(-length // self.pool.block_size)], self.tokens[:length])
        return twin

    def adopt(self, blocks: list[int], tokens: np.ndarray) -> None:
        """Take `blocks` (shared, not copied) as the cache of `tokens`, positions 0..n-1;
        the cache must be empty. `copy` and the prefix cache start sequences this way."""
        if self.length or self.block_table:
            raise ValueError("only an empty cache can adopt a prefix")
        self.pool.allocator.share(blocks)
        self.block_table.extend(blocks)
        self.length = len(tokens)
        self.tokens = np.array(tokens, dtype=np.int64)

    def release(self) -> None:
        """Hand every block back to the pool; the cache is empty (and usable) afterwards.
        With a prefix cache, its full blocks are offered to it first."""
        if self.pool.prefix_cache is not None:
            self.pool.prefix_cache.insert(self)
        self._keep_blocks(0)
        self.length = 0
        self.tokens = self.tokens[:0]

    def _keep_blocks(self, n: int) -> None:
        dropped = self.block_table[n:]
        del self.block_table[n:]
        self.pool.allocator.release(dropped)

    @property
    def nbytes(self) -> int:
        """Bytes of the pool's blocks this sequence holds (shared blocks counted in full)."""
        return len(self.block_table) * self.pool.storage.bytes_per_block
