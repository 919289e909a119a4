"""`Model`: a loaded GGUF model on one backend (reference or triton, runtime.backend)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from reference.fp import assert_gradual_underflow
from runtime.backend import Ops, ReferenceOps, select_ops
from runtime.config import ModelConfig, from_gguf, validate_tensors
from runtime.gguf_file import open_gguf
from runtime.model.cache import SequenceCache
from runtime.model.graph import SequenceInput, forward
from runtime.model.rope_tables import build_tables
from runtime.model.threads import make_executor
from runtime.model.weights import ModelWeights, load_weights


class Model:
    """Configuration, converted weights and RoPE tables of one model.

    Stateless between calls except for the RoPE tables, which only grow (rows never change);
    all per-sequence state lives in the `SequenceCache`s passed in.
    """

    def __init__(
        self,
        config: ModelConfig,
        weights: ModelWeights,
        threads: int = 1,
        ops: Ops | None = None,
    ) -> None:
        """`threads`: CPU threads for the reference's matmul tiles (BLAS itself is set to
        one thread, see runtime.model.threads); results are bit-identical for every value.
        `ops`: the backend that prepared `weights` (default: the reference)."""
        assert_gradual_underflow()
        self.config = config
        self.weights = weights
        self.ops = ops if ops is not None else ReferenceOps()
        self.threads = threads
        self._tables = build_tables(config, weights.rope_freqs)
        self._executor = make_executor(threads)

    @classmethod
    def load(
        cls,
        path: str | Path,
        progress: Callable[[str], None] | None = None,
        threads: int = 1,
        backend: str | None = None,
    ) -> Model:
        """Open a GGUF file, check it, convert its weights for the backend (`backend`, else
        $EXACTSERVE_BACKEND, else "reference"). `progress` gets short messages."""
        ops = select_ops(backend)
        with open_gguf(path) as gguf_file:
            config = from_gguf(gguf_file)
            validate_tensors(gguf_file)
            if progress:
                progress(f"converting {len(gguf_file.tensors)} tensors")
            weights = load_weights(gguf_file, config, ops)
        return cls(config, weights, threads, ops)

    @property
    def context_length(self) -> int:
        return self.config.context_length

    def new_cache(self) -> SequenceCache:
        c = self.config
        return SequenceCache(c.n_layers, c.n_kv_heads, c.head_dim, c.head_dim_v)

    def forward_batch(self, batch: Sequence[SequenceInput]) -> list[np.ndarray]:
        """Run every sequence's new tokens in one pass; see `runtime.model.graph.forward`."""
        return forward(self.config, self.weights, self._tables, batch, self.ops, self._executor)

    def forward(self, cache: SequenceCache, tokens: Sequence[int]) -> np.ndarray:
        """Append `tokens` to `cache`; return the float32 logits [n_vocab] of the last one."""
        return self.forward_batch([SequenceInput(cache, tokens, "last")])[0][0]

    def logits_all(self, cache: SequenceCache, tokens: Sequence[int]) -> np.ndarray:
        """Append `tokens` to `cache`; return the logits of every one, float32 [n, n_vocab]."""
        return self.forward_batch([SequenceInput(cache, tokens, "all")])[0]


def load_model(
    path: str | Path,
    progress: Callable[[str], None] | None = None,
    threads: int = 1,
    backend: str | None = None,
) -> Model:
    """`Model.load`."""
    return Model.load(path, progress, threads, backend)
