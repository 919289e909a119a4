"""Loading a GGUF file's tensors into the layouts a backend computes with.

Matrices become whatever `ops.prepare_matrix` makes (the reference: integer-valued float
arrays laid out for the contract's group loop; Triton: the GGUF blocks on the device),
vectors (norm weights, biases) float32 arrays of the backend (`ops.asarray`). Everything is
converted once at load; the memory map is not needed afterwards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from exactserve.reference.matmul import PreparedMatrix
from exactserve.reference.quants import FLOAT_TYPE_SIZES, dequantize
from exactserve.runtime.backend import Ops
from exactserve.runtime.config import ModelConfig
from exactserve.runtime.errors import GGUFError
from exactserve.runtime.gguf_file import GGUFFile
from exactserve.runtime.model.weight_cache import WeightCache

Vector = Any  # float32 [n]: a NumPy array (reference) or a device tensor (Triton)


@dataclass(frozen=True)
class Embedding:
    """The token embedding table: a quantised table in the backend's form (`table`: the
    output matrix when embeddings are tied, else whatever `ops.prepare_embedding` keeps),
    or the float32 values of a float table."""

    table: Any = None
    values: np.ndarray | None = None

    def rows(self, ids: np.ndarray, ops: Ops) -> np.ndarray:
        """Contract 6.3 rows (before any embedding scale), float32 [len(ids), n_embd].
        `ops` is the backend that prepared the table."""
        if self.table is not None:
            return ops.embedding_rows(self.table, ids)
        return self.values[ids]


@dataclass(frozen=True)
class LayerWeights:
    attn_norm: Vector
    wq: PreparedMatrix
    wk: PreparedMatrix
    wv: PreparedMatrix
    wo: PreparedMatrix
    bq: Vector | None
    bk: Vector | None
    bv: Vector | None
    q_norm: Vector | None
    k_norm: Vector | None
    post_attn_norm: Vector | None
    ffn_norm: Vector
    w_gate: PreparedMatrix
    w_up: PreparedMatrix
    w_down: PreparedMatrix
    post_ffn_norm: Vector | None


@dataclass(frozen=True)
class ModelWeights:
    embedding: Embedding
    layers: tuple[LayerWeights, ...]
    output_norm: Vector
    output: PreparedMatrix
    rope_freqs: np.ndarray | None  # llama3 per-frequency divisors, float32 [n_rot / 2]


class _Loader:
    def __init__(self, gguf_file: GGUFFile, ops: Ops, cache: WeightCache | None = None) -> None:
        self.file = gguf_file
        self.ops = ops
        self.cache = cache

    def _memo(self, key: str, convert):
        """What `convert()` makes of a tensor, read from the weight cache when it holds it."""
        if self.cache is None:
            return convert()
        cached = self.cache.get(key)
        return cached if cached is not None else self.cache.put(key, convert())

    def info(self, name: str):
        info = self.file.tensors.get(name)
        if info is None:
            raise GGUFError(f"{self.file.path}: required tensor '{name}' is missing")
        return info

    def vector(self, name: str, length: int) -> Vector:
        """A norm weight or bias, float32, as the backend keeps it (`ops.asarray`)."""
        return self._memo(name, lambda: self.ops.asarray(self.host_vector(name, length)))

    def host_vector(self, name: str, length: int) -> np.ndarray:
        info = self.info(name)
        if info.shape != (length,):
            raise GGUFError(
                f"{self.file.path}: tensor '{name}' has shape {info.shape}; expected ({length},)"
            )
        return dequantize(self.file.raw(name), info.ggml_type, info.shape)

    def optional_vector(self, name: str, length: int) -> Vector | None:
        return self.vector(name, length) if name in self.file.tensors else None

    def float_matrix(self, name: str, n_out: int, n_in: int) -> np.ndarray:
        info = self._check_matrix(name, n_out, n_in)
        return self._memo(
            name + "#values", lambda: dequantize(self.file.raw(name), info.ggml_type, info.shape)
        )

    def matrix(self, name: str, n_out: int, n_in: int) -> PreparedMatrix:
        """A weight matrix in the backend's own prepared form (opaque to the graph)."""
        info = self._check_matrix(name, n_out, n_in)
        return self._memo(
            name, lambda: self.ops.prepare_matrix(self.file.raw(name), info.ggml_type, n_out, n_in)
        )

    def embedding_table(self, name: str, n_vocab: int, n_embd: int) -> Any:
        info = self._check_matrix(name, n_vocab, n_embd)
        return self._memo(
            name + "#table",
            lambda: self.ops.prepare_embedding(
                self.file.raw(name), info.ggml_type, n_vocab, n_embd
            ),
        )

    def is_float(self, name: str) -> bool:
        return self.info(name).ggml_type in FLOAT_TYPE_SIZES

    def _check_matrix(self, name: str, n_out: int, n_in: int):
        info = self.info(name)
        if info.shape != (n_in, n_out):
            raise GGUFError(
                f"{self.file.path}: tensor '{name}' has shape {info.shape}; expected "
                f"({n_in}, {n_out}) for this model's configuration"
            )
        return info


def load_weights(
    gguf_file: GGUFFile, config: ModelConfig, ops: Ops, cache: WeightCache | None = None
) -> ModelWeights:
    """Read and convert every tensor the forward pass uses, matrices into `ops`' form; with
    a `cache`, tensors it holds are read from it and the others are put into it."""
    ld = _Loader(gguf_file, ops, cache)
    c = config
    q_dim, kv_dim, v_dim = (
        c.n_heads * c.head_dim,
        c.n_kv_heads * c.head_dim,
        c.n_kv_heads * c.head_dim_v,
    )
    layers = []
    for i in range(c.n_layers):
        b = f"blk.{i}."
        layers.append(
            LayerWeights(
                attn_norm=ld.vector(b + "attn_norm.weight", c.n_embd),
                wq=ld.matrix(b + "attn_q.weight", q_dim, c.n_embd),
                wk=ld.matrix(b + "attn_k.weight", kv_dim, c.n_embd),
                wv=ld.matrix(b + "attn_v.weight", v_dim, c.n_embd),
                wo=ld.matrix(b + "attn_output.weight", c.n_embd, c.n_heads * c.head_dim_v),
                bq=ld.optional_vector(b + "attn_q.bias", q_dim),
                bk=ld.optional_vector(b + "attn_k.bias", kv_dim),
                bv=ld.optional_vector(b + "attn_v.bias", v_dim),
                q_norm=_if(c.has_qk_norm, ld.vector, b + "attn_q_norm.weight", c.head_dim),
                k_norm=_if(c.has_qk_norm, ld.vector, b + "attn_k_norm.weight", c.head_dim),
                post_attn_norm=_if(
                    c.has_post_norms, ld.vector, b + "post_attention_norm.weight", c.n_embd
                ),
                ffn_norm=ld.vector(b + "ffn_norm.weight", c.n_embd),
                w_gate=ld.matrix(b + "ffn_gate.weight", c.n_ff, c.n_embd),
                w_up=ld.matrix(b + "ffn_up.weight", c.n_ff, c.n_embd),
                w_down=ld.matrix(b + "ffn_down.weight", c.n_embd, c.n_ff),
                post_ffn_norm=_if(
                    c.has_post_norms, ld.vector, b + "post_ffw_norm.weight", c.n_embd
                ),
            )
        )
    embd = "token_embd.weight"
    output_name = embd if c.tied_embeddings else "output.weight"
    output = ld.matrix(output_name, c.n_vocab, c.n_embd)
    if ld.is_float(embd):
        embedding = Embedding(values=ld.float_matrix(embd, c.n_vocab, c.n_embd))
    elif c.tied_embeddings:
        embedding = Embedding(table=output)
    else:
        embedding = Embedding(table=ld.embedding_table(embd, c.n_vocab, c.n_embd))
    rope_freqs = None
    if c.rope.has_freq_factors:
        n_freqs = c.rope.dimension_count // 2
        rope_freqs = ld._memo(
            "rope_freqs.weight", lambda: ld.host_vector("rope_freqs.weight", n_freqs)
        )
    return ModelWeights(
        embedding=embedding,
        layers=tuple(layers),
        output_norm=ld.vector("output_norm.weight", c.n_embd),
        output=output,
        rope_freqs=rope_freqs,
    )


def _if(condition: bool, load, name: str, length: int) -> Vector | None:
    return load(name, length) if condition else None
