"""`Model`: a loaded GGUF model on one backend (reference or triton, runtime.backend)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from exactserve.reference.fp import assert_gradual_underflow
from exactserve.runtime.backend import Ops, ReferenceOps, select_ops
from exactserve.runtime.config import ModelConfig, from_gguf, validate_tensors
from exactserve.runtime.cpu.matmul import LANES
from exactserve.runtime.gguf_file import open_gguf
from exactserve.runtime.kv_storage import KVShape
from exactserve.runtime.model.cache import DEFAULT_BLOCK_SIZE, INITIAL_BLOCKS, KVPool, SequenceCache
from exactserve.runtime.model.graph import SequenceInput, forward
from exactserve.runtime.model.prefix_cache import PrefixCache
from exactserve.runtime.model.rope_tables import build_tables
from exactserve.runtime.model.threads import make_executor
from exactserve.runtime.model.weight_cache import WeightCache
from exactserve.runtime.model.weights import ModelWeights, load_weights


class Model:
    """Configuration, converted weights and RoPE tables of one model.

    Owns the paged KV pool its `new_cache()` sequences share (made on first use) and the
    RoPE tables, which only grow (rows never change); all per-sequence state lives in the
    `SequenceCache`s passed in.
    """

    def __init__(
        self,
        config: ModelConfig,
        weights: ModelWeights,
        threads: int = 1,
        ops: Ops | None = None,
        kv_block_size: int = DEFAULT_BLOCK_SIZE,
        kv_blocks: int | None = None,
        prefix_cache_blocks: int = 0,
        context_length: int | None = None,
    ) -> None:
        """`threads`: CPU threads for the reference's matmul tiles (BLAS itself is set to
        one thread, see runtime.model.threads); results are bit-identical for every value.
        `ops`: the backend that prepared `weights` (default: the reference).
        `kv_block_size`: positions per KV cache block; `kv_blocks`: a fixed number of blocks
        allocated up front (None: start small and grow on demand). `prefix_cache_blocks`:
        how many full blocks of finished sequences to keep for reuse by later prompts with
        the same prefix (0: none; runtime.model.prefix_cache). None of these changes a bit.
        `context_length`: serve at most this many positions per sequence (None: the
        model's own context length; larger values are refused)."""
        _check_cache_options(kv_block_size, kv_blocks, prefix_cache_blocks)
        if context_length is not None and not 1 < context_length <= config.context_length:
            raise ValueError(
                f"context_length must be in 2..{config.context_length} (the model's own), "
                f"not {context_length}"
            )
        self._context_length = context_length or config.context_length
        assert_gradual_underflow()
        self.config = config
        self.weights = weights
        self.ops = ops if ops is not None else ReferenceOps()
        self.threads = threads
        self._tables = build_tables(config, weights.rope_freqs)
        self._executor = make_executor(threads)
        self.kv_block_size, self.kv_blocks = kv_block_size, kv_blocks
        self.prefix_cache_blocks = prefix_cache_blocks
        self._kv_pool: KVPool | None = None

    @classmethod
    def load(
        cls,
        path: str | Path,
        progress: Callable[[str], None] | None = None,
        threads: int = 1,
        backend: str | None = None,
        *,
        kv_block_size: int = DEFAULT_BLOCK_SIZE,
        kv_blocks: int | None = None,
        prefix_cache_blocks: int = 0,
        context_length: int | None = None,
        cpu_matmul: str | None = None,
    ) -> Model:
        """Open a GGUF file, check it, convert its weights for the backend (`backend`, else
        $EXACTSERVE_BACKEND, else "reference"; on the reference, `cpu_matmul` chooses its
        matmul, see `ReferenceOps`). `progress` gets short messages; the cache options are
        `Model`'s."""
        _check_cache_options(kv_block_size, kv_blocks, prefix_cache_blocks)
        ops = select_ops(backend, cpu_matmul)
        if progress and getattr(ops, "matmul_variant", None):
            progress(f"CPU matmul: {ops.matmul_variant}")
        cache = None
        if getattr(ops, "kernel", None) is not None:  # the CPU engine's int8 panels
            cache = WeightCache.open(Path(path), f"int8p{LANES}")
        with open_gguf(path) as gguf_file:
            config = from_gguf(gguf_file)
            validate_tensors(gguf_file)
            if progress:
                progress(
                    f"mapping {len(gguf_file.tensors)} converted tensors from {cache.root}"
                    if cache is not None and cache.is_complete
                    else f"converting {len(gguf_file.tensors)} tensors"
                )
            weights = load_weights(gguf_file, config, ops, cache)
        if cache is not None and cache.save() is not None and progress:
            progress(f"saved the converted tensors in {cache.root} for the next load")
        return cls(
            config,
            weights,
            threads,
            ops,
            kv_block_size,
            kv_blocks,
            prefix_cache_blocks,
            context_length,
        )

    @property
    def context_length(self) -> int:
        """Positions a sequence may hold: the model's own context length or less."""
        return self._context_length

    @property
    def kv_pool(self) -> KVPool:
        """The blocks every cache of this model lives in (allocated on first use)."""
        if self._kv_pool is None:
            c = self.config
            shape = KVShape(c.n_layers, c.n_kv_heads, c.head_dim, c.head_dim_v, self.kv_block_size)
            n_blocks = INITIAL_BLOCKS if self.kv_blocks is None else self.kv_blocks
            storage = self.ops.new_kv_storage(shape, n_blocks)
            self._kv_pool = KVPool(storage, max_blocks=self.kv_blocks)
            if self.prefix_cache_blocks:
                pool = self._kv_pool
                pool.prefix_cache = PrefixCache(pool, self.prefix_cache_blocks)
        return self._kv_pool

    def new_cache(self, prompt: Sequence[int] | None = None) -> SequenceCache:
        """A sequence in this model's KV pool: empty, or, when a prefix cache is enabled
        and `prompt` given, already holding the longest cached prefix of `prompt` (at most
        len(prompt) - 1 positions; `cache.length` says how many). Its blocks return to the
        pool when it is released (offered to the prefix cache first) or garbage collected."""
        cache = self.kv_pool.new_sequence()
        if prompt is not None and self.kv_pool.prefix_cache is not None:
            self.kv_pool.prefix_cache.attach(cache, prompt)
        return cache

    def forward_batch(self, batch: Sequence[SequenceInput]) -> list[np.ndarray]:
        """Run every sequence's new tokens in one pass; see `runtime.model.graph.forward`."""
        return forward(
            self.config, self.weights, self._tables, batch, self.ops, self.kv_pool, self._executor
        )

    def forward(self, cache: SequenceCache, tokens: Sequence[int]) -> np.ndarray:
        """Append `tokens` to `cache`; return the float32 logits [n_vocab] of the last one."""
        return self.forward_batch([SequenceInput(cache, tokens, "last")])[0][0]

    def logits_all(self, cache: SequenceCache, tokens: Sequence[int]) -> np.ndarray:
        """Append `tokens` to `cache`; return the logits of every one, float32 [n, n_vocab]."""
        return self.forward_batch([SequenceInput(cache, tokens, "all")])[0]


def _check_cache_options(
    kv_block_size: int, kv_blocks: int | None, prefix_cache_blocks: int
) -> None:
    if kv_block_size < 1 or (kv_blocks is not None and kv_blocks < 1):
        raise ValueError(
            f"kv_block_size ({kv_block_size}) and kv_blocks ({kv_blocks}) must be positive"
        )
    if prefix_cache_blocks < 0:
        raise ValueError(f"prefix_cache_blocks must be >= 0, not {prefix_cache_blocks}")


def load_model(
    path: str | Path,
    progress: Callable[[str], None] | None = None,
    threads: int = 1,
    backend: str | None = None,
    **options: int | str | None,
) -> Model:
    """`Model.load`; `options`: kv_block_size, kv_blocks, prefix_cache_blocks,
    context_length, cpu_matmul."""
    return Model.load(path, progress, threads, backend, **options)
