"""Key/value storage of the paged cache, in the form each backend's attention reads.

Both backends lay every layer out as blocks of positions (runtime.model.cache):

    k_int [n_blocks, H_kv, block_size, D]    v_int [n_blocks, H_kv, block_size, Dv]
    k_*   [n_blocks, H_kv, block_size]       v_*   [n_blocks, H_kv, block_size]

as the block floats of contract 3.2. The reference keeps the integers (|i| <= 2^21) as int32
and the power-of-two scales as float64 NumPy arrays; attention widens the integers to
float64 when it multiplies them (`reference.attention.paged_attention`), exactly, so the
cache costs half the memory of float64 integers. The Triton backend keeps int32
integers and int32 exponents in torch tensors on its device (`kernels.attention`), so the
cache never crosses between host and device. A slot never written holds zeros; a released
one keeps finite stale values, which attention never reads as visible (contract 7.1).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from exactserve.reference.quantize import BlockFloat


@dataclass(frozen=True)
class KVShape:
    """What one block holds: every layer's keys and values for `block_size` positions."""

    n_layers: int
    n_kv_heads: int
    head_dim: int
    head_dim_v: int
    block_size: int


class _BlockStorage:
    """Four arrays per layer, blocks first; subclasses say how they are made and written."""

    def __init__(self, shape: KVShape, n_blocks: int) -> None:
        self.shape, self.block_size, self.n_blocks = shape, shape.block_size, 0
        self._layers: list[list[Any]] = [[] for _ in range(shape.n_layers)]
        self.grow(n_blocks)

    def _new(self, n_blocks: int) -> list[Any]:
        raise NotImplementedError

    def _parts(self, bf: Any) -> tuple[Any, Any]:
        """(integers [n, H_kv, D], scales or exponents [n, H_kv]) of a backend block float."""
        raise NotImplementedError

    def index(self, slots: np.ndarray) -> tuple[Any, Any, Any]:
        """The array index of pool slots [n] (block * block_size + offset) in this storage's
        array type: compute it once and pass it to `write` for every layer."""
        blocks, offsets = np.divmod(np.asarray(slots, dtype=np.int64), self.block_size)
        return blocks, slice(None), offsets

    def write(self, layer: int, slots: Any, k: Any, v: Any) -> None:
        """Store the keys and values of `layer` at pool `slots` ([n] int, or `index(slots)`):
        `k`, `v` are this backend's block floats of n rows."""
        at = slots if isinstance(slots, tuple) else self.index(slots)
        for target, value in zip(
            self._layers[layer], (*self._parts(k), *self._parts(v)), strict=True
        ):
            target[at] = value

    def grow(self, n_blocks: int) -> None:
        """Room for `n_blocks` blocks; blocks already held keep their contents and ids."""
        for index, old in enumerate(self._layers):
            arrays = self._new(n_blocks)
            for new, a in zip(arrays, old, strict=False):
                new[: self.n_blocks] = a
            self._layers[index] = arrays
        self.n_blocks = n_blocks

    @property
    def bytes_per_block(self) -> int:
        return sum(a[0].nbytes for layer in self._layers for a in layer)

    def copy_blocks(self, src: list[int], dst: list[int]) -> None:
        for arrays in self._layers:
            for a in arrays:
                a[dst] = a[src]

    def layer(self, layer: int) -> tuple[Any, Any, Any, Any]:
        """(k integers, k scales or exponents, v integers, v scales or exponents) of every
        block: the arrays themselves, for attention to read in place."""
        k_int, k_e, v_int, v_e = self._layers[layer]
        return k_int, k_e, v_int, v_e


class ReferenceKVStorage(_BlockStorage):
    """int32 integers and float64 power-of-two scales (reference.quantize.BlockFloat's
    float64 integers are stored exactly: |i| <= 2^21)."""

    def _new(self, n_blocks: int) -> list[np.ndarray]:
        s = self.shape
        h, b = s.n_kv_heads, s.block_size
        return [
            np.zeros((n_blocks, h, b, s.head_dim), dtype=np.int32),
            np.ones((n_blocks, h, b)),
            np.zeros((n_blocks, h, b, s.head_dim_v), dtype=np.int32),
            np.ones((n_blocks, h, b)),
        ]

    def _parts(self, bf: BlockFloat) -> tuple[np.ndarray, np.ndarray]:
        return bf.integers, bf.scale


class TritonKVStorage(_BlockStorage):
    """int32 integers and int32 exponents (kernels.quantize.BlockFloat) on `device`."""

    def __init__(self, shape: KVShape, n_blocks: int, device: Any) -> None:
        self.device = device
        super().__init__(shape, n_blocks)

    def _new(self, n_blocks: int) -> list[Any]:
        import torch

        s = self.shape
        h, b = s.n_kv_heads, s.block_size

        def zeros(*dims: int):
            return torch.zeros(dims, dtype=torch.int32, device=self.device)

        return [
            zeros(n_blocks, h, b, s.head_dim),
            zeros(n_blocks, h, b),
            zeros(n_blocks, h, b, s.head_dim_v),
            zeros(n_blocks, h, b),
        ]

    def _parts(self, bf: Any) -> tuple[Any, Any]:
        return bf.integers, bf.exponent  # kernels.quantize.BlockFloat, on the device

    def index(self, slots: np.ndarray) -> tuple[Any, Any, Any]:
        import torch

        blocks, everything, offsets = super().index(slots)
        to_device = torch.from_numpy
        return to_device(blocks).to(self.device), everything, to_device(offsets).to(self.device)
