"""Prefix cache: full KV blocks kept after their sequence ends, found again by their tokens.

A full block is named by a hash chain over the token ids of every position up to its end,

    key_0 = sha256(ROOT || tokens[0:B])     key_i = sha256(key_{i-1} || tokens[iB:(i+1)B])

(token ids as little-endian int64; ROOT names the scheme and the block size B). A stable
hash, never Python's `hash()`, so keys mean the same in every process. On a hit the entry's
parent key and its B token ids are compared with the request's, so a hash collision can
only cost a miss, never a wrong block.

Reuse is exact: a block's keys and values depend only on the tokens up to its end (causal
attention; a key's block float depends on that key alone, contract 7.2), so a cached block
holds the bits a fresh computation would write, and warm and cold requests get the same
logits (docs/PRECISION.md 9). The cache holds one reference to each block it names.
Eviction takes the least recently used block that no sequence holds and that no cached
block continues (a leaf), so every cached chain stays reachable from its root.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

import numpy as np

from exactserve.runtime.model.cache import KVPool, SequenceCache

SCHEME = b"exactserve kv prefix v1"


@dataclass
class _Entry:
    block: int
    parent: bytes  # the previous block's key (the root key for block 0)
    tokens: bytes  # this block's token ids, little-endian int64
    n_children: int = 0  # cached blocks whose parent this is


class PrefixCache:
    """Cached full blocks of one `KVPool`, at most `max_blocks` of them (None: as many as
    the pool can spare; with a fixed pool they are evicted when it needs blocks)."""

    def __init__(self, pool: KVPool, max_blocks: int | None = None) -> None:
        if max_blocks is not None and max_blocks < 0:
            raise ValueError(f"max_blocks must be >= 0, not {max_blocks}")
        self.pool = pool
        self.max_blocks = max_blocks
        self.root = hashlib.sha256(SCHEME + pool.block_size.to_bytes(8, "little")).digest()
        self._entries: OrderedDict[bytes, _Entry] = OrderedDict()  # least recently used first

    def __len__(self) -> int:
        return len(self._entries)

    def blocks(self) -> list[int]:
        """The pool blocks the cache holds a reference to."""
        return [entry.block for entry in self._entries.values()]

    def _blocks(self, tokens: np.ndarray, n_blocks: int):
        """(key, parent key, block token bytes) of the first `n_blocks` full blocks."""
        size = self.pool.block_size
        data = np.ascontiguousarray(tokens[: n_blocks * size], dtype="<i8").tobytes()
        width = 8 * size
        parent = self.root
        for i in range(n_blocks):
            chunk = data[i * width : (i + 1) * width]
            key = hashlib.sha256(parent + chunk).digest()
            yield key, parent, chunk
            parent = key

    def match(self, tokens, limit: int | None = None) -> list[int]:
        """Blocks holding the longest cached prefix of `tokens` made of full blocks, at most
        `limit` positions long (default: all of them); marks them recently used."""
        tokens = np.asarray(tokens, dtype=np.int64)
        limit = len(tokens) if limit is None else min(limit, len(tokens))
        blocks = []
        for key, parent, chunk in self._blocks(tokens, limit // self.pool.block_size):
            entry = self._entries.get(key)
            if entry is None or entry.parent != parent or entry.tokens != chunk:
                break
            self._entries.move_to_end(key)
            blocks.append(entry.block)
        return blocks

    def attach(self, cache: SequenceCache, tokens) -> int:
        """Give the empty `cache` the longest cached prefix of `tokens` that leaves at least
        one token to compute (its logits are the point); returns the positions reused."""
        if cache.pool is not self.pool or cache.length or cache.block_table:
            raise ValueError("attach: the cache must be empty and belong to this pool")
        tokens = np.asarray(tokens, dtype=np.int64)
        blocks = self.match(tokens, len(tokens) - 1)
        cache.adopt(blocks, tokens[: len(blocks) * self.pool.block_size])
        return cache.length

    def insert(self, cache: SequenceCache) -> int:
        """Remember the full blocks of `cache` (its committed positions); returns how many
        were new. A block whose prefix is already cached in another block is not added."""
        added = 0
        n_full = cache.length // self.pool.block_size
        for i, (key, parent, chunk) in enumerate(self._blocks(cache.tokens, n_full)):
            entry = self._entries.get(key)
            if entry is not None:
                if entry.parent != parent or entry.tokens != chunk:
                    break  # a collision: keep the first owner, cache nothing past it
                self._entries.move_to_end(key)
                continue
            block = cache.block_table[i]
            self.pool.allocator.share([block])
            self._entries[key] = _Entry(block, parent, chunk)
            if parent in self._entries:
                self._entries[parent].n_children += 1
            added += 1
        if self.max_blocks is not None and len(self._entries) > self.max_blocks:
            self.evict(len(self._entries) - self.max_blocks)
        return added

    def evict(self, n: int) -> int:
        """Release up to `n` cached blocks (least recently used leaves no sequence holds);
        returns how many were released."""
        released = 0
        while released < n:  # a pass may turn parents into leaves for the next one
            victims = []
            for key, entry in self._entries.items():
                if released + len(victims) == n:
                    break
                if entry.n_children == 0 and self.pool.allocator.refcount(entry.block) == 1:
                    victims.append(key)
            if not victims:
                break
            for key in victims:
                entry = self._entries.pop(key)
                if entry.parent in self._entries:
                    self._entries[entry.parent].n_children -= 1
                self.pool.allocator.release([entry.block])
            released += len(victims)
        return released

    def clear(self) -> None:
        """Release every cached block no sequence holds."""
        self.evict(len(self._entries))
