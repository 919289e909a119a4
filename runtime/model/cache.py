"""Per-sequence KV cache of the reference backend.

Keys and values are stored as the block floats the attention contract consumes (contract
3.2: integers with |i| <= 2^21 held in float64, one power-of-two scale per position and KV
head), so a cached position is bit-identical to one computed afresh: rounding a key depends
only on that key. Position p of a sequence is slot p; sliding-window layers keep every
position too (the window is a mask, contract 7.1).
"""

from __future__ import annotations

import numpy as np

INITIAL_CAPACITY = 64
CAPACITY_STEP = 64  # the attention KV chunk: views can end on a chunk boundary without copies


class SequenceCache:
    """Keys/values of one sequence for every layer, plus the token ids they came from.

    Owned by one sequence at a time; `forward` appends to it. `length` counts committed
    positions; `truncate` drops a tail (rejected speculative tokens), `copy` forks a prefix.
    """

    def __init__(self, n_layers: int, n_kv_heads: int, head_dim: int, head_dim_v: int) -> None:
        self.n_layers, self.n_kv_heads = n_layers, n_kv_heads
        self.head_dim, self.head_dim_v = head_dim, head_dim_v
        self.length = 0
        self.tokens = np.zeros(0, dtype=np.int64)
        self._capacity = 0
        self._k_int: list[np.ndarray] = []
        self._k_scale: list[np.ndarray] = []
        self._v_int: list[np.ndarray] = []
        self._v_scale: list[np.ndarray] = []
        self._grow(INITIAL_CAPACITY)

    def _grow(self, capacity: int) -> None:
        h, n = self.n_kv_heads, self.length
        new = []
        for width, old in ((self.head_dim, self._k_int), (self.head_dim_v, self._v_int)):
            arrays = [np.zeros((h, capacity, width)) for _ in range(self.n_layers)]
            for a, b in zip(arrays, old, strict=False):
                a[:, :n] = b[:, :n]
            new.append(arrays)
        scales = []
        for old in (self._k_scale, self._v_scale):
            arrays = [np.ones((h, capacity)) for _ in range(self.n_layers)]
            for a, b in zip(arrays, old, strict=False):
                a[:, :n] = b[:, :n]
            scales.append(arrays)
        self._k_int, self._v_int = new
        self._k_scale, self._v_scale = scales
        self._capacity = capacity

    def reserve(self, n_new: int) -> None:
        """Make room for `n_new` positions after `length`."""
        needed = self.length + n_new
        if needed > self._capacity:
            capacity = max(needed, 2 * self._capacity)
            self._grow(-(-capacity // CAPACITY_STEP) * CAPACITY_STEP)

    def write(self, layer: int, start: int, k, v) -> None:
        """Store block floats for positions start..start+n-1 of `layer`.

        k, v: `reference.quantize.BlockFloat` with integers [n, H_kv, D] and scale [n, H_kv].
        """
        stop = start + k.integers.shape[0]
        if stop > self._capacity:
            raise ValueError("SequenceCache.write past the reserved capacity; call reserve")
        self._k_int[layer][:, start:stop] = k.integers.transpose(1, 0, 2)
        self._k_scale[layer][:, start:stop] = k.scale.T
        self._v_int[layer][:, start:stop] = v.integers.transpose(1, 0, 2)
        self._v_scale[layer][:, start:stop] = v.scale.T

    def view(self, layer: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(k_int, k_scale, v_int, v_scale) of every slot (views, not copies). Slots past
        the written positions hold zeros or stale finite values; attention never sees them
        (contract 7.1: a query sees only positions up to its own)."""
        return self._k_int[layer], self._k_scale[layer], self._v_int[layer], self._v_scale[layer]

    def commit(self, tokens: np.ndarray) -> None:
        """Mark the positions just written for `tokens` as part of the sequence."""
        self.tokens = np.concatenate([self.tokens, np.asarray(tokens, dtype=np.int64)])
        self.length += len(tokens)

    def truncate(self, length: int) -> None:
        """Forget every position from `length` on."""
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot truncate a cache of length {self.length} to {length}")
        self.length = length
        self.tokens = self.tokens[:length]

    def copy(self, length: int | None = None) -> SequenceCache:
        """An independent cache holding the first `length` positions (default: all)."""
        length = self.length if length is None else length
        if not 0 <= length <= self.length:
            raise ValueError(f"cannot copy {length} positions of a cache of length {self.length}")
        twin = SequenceCache(self.n_layers, self.n_kv_heads, self.head_dim, self.head_dim_v)
        twin.reserve(length)
        for layer in range(self.n_layers):
            twin._k_int[layer][:, :length] = self._k_int[layer][:, :length]
            twin._k_scale[layer][:, :length] = self._k_scale[layer][:, :length]
            twin._v_int[layer][:, :length] = self._v_int[layer][:, :length]
            twin._v_scale[layer][:, :length] = self._v_scale[layer][:, :length]
        twin.length = length
        twin.tokens = self.tokens[:length].copy()
        return twin

    @property
    def nbytes(self) -> int:
        arrays = self._k_int + self._k_scale + self._v_int + self._v_scale
        return sum(a.nbytes for a in arrays)
