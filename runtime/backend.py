"""Which implementation of the precision contract's ops the model graph calls.

    EXACTSERVE_BACKEND=reference   the NumPy reference (default)
    EXACTSERVE_BACKEND=triton      the Triton kernels: on CUDA, or on a machine without CUDA
                                   under the Triton interpreter (`kernels` sets
                                   TRITON_INTERPRET=1 before any kernel is defined)

Both backends expose one interface, `Ops`, with the reference's signatures. Arrays are the
backend's own: NumPy for the reference, torch tensors on the kernels' device for Triton, so
a forward pass on a GPU keeps its activations, weights and KV cache there. The model graph
touches them only through the ops and the operators both array types share (`+` and `*` of
float32, `reshape`, row indexing), which are single IEEE operations on either. NumPy data
from the host (token ids, RoPE rows, norm weights) enters through `asarray` or the ops
themselves; logits leave through `to_host`. Every op of one backend gives the same bits as
the other's (tests/kernels), so the graph's logits do not depend on the choice.
"""

from __future__ import annotations

import os
from typing import Any, NamedTuple, Protocol

import numpy as np
from gguf import GGMLQuantizationType

from exactserve.reference import activations, attention, embedding, matmul, quantize, rmsnorm, rope
from exactserve.reference.quants import (
    FLOAT_TYPE_SIZES,
    IntegerWeights,
    dequantize,
    to_integer_form,
)
from exactserve.runtime.cpu import matmul as cpu_matmul
from exactserve.runtime.errors import UnsupportedError
from exactserve.runtime.kv_storage import KVShape, ReferenceKVStorage, TritonKVStorage

BACKEND_ENV = "EXACTSERVE_BACKEND"
BACKENDS = ("reference", "triton")


class Ops(Protocol):
    """The contract's ops as the model graph calls them (signatures of the reference).
    `executor`: the model's CPU tile pool (`runtime.model.threads`), which the reference
    uses to share rows, tiles or panels out; the bits never depend on it."""

    name: str

    def asarray(self, x: np.ndarray) -> Any: ...
    def to_host(self, x: Any) -> np.ndarray: ...
    def prepare_matrix(
        self, raw: np.ndarray, ggml_type: GGMLQuantizationType, n_out: int, n_in: int
    ) -> Any: ...
    def prepare_embedding(
        self, raw: np.ndarray, ggml_type: GGMLQuantizationType, n_vocab: int, n_embd: int
    ) -> Any: ...
    def embedding_rows(self, table: Any, ids: np.ndarray) -> np.ndarray: ...
    def quantize_activations(self, x: np.ndarray, executor=None) -> Any: ...
    def matmul_quantized(self, acts: Any, w: Any, bias=None, executor=None) -> np.ndarray: ...
    def matmul(self, x: np.ndarray, w: Any, bias=None, executor=None) -> np.ndarray: ...
    def rmsnorm(
        self, x: np.ndarray, weight: np.ndarray, eps: float, executor=None
    ) -> np.ndarray: ...
    def apply_rope(
        self, x: np.ndarray, cos: np.ndarray, sin: np.ndarray, layout: str
    ) -> np.ndarray: ...
    def block_float(self, v: np.ndarray) -> quantize.BlockFloat: ...
    def new_kv_storage(self, shape: KVShape, n_blocks: int) -> Any: ...
    def paged_attention(
        self,
        q,
        q_positions,
        query_starts,
        seq_lens,
        block_tables,
        *kv,
        window=None,
        cap=None,
        executor=None,
    ) -> np.ndarray: ...
    def gated(
        self, gate: np.ndarray, up: np.ndarray, activation: str, executor=None
    ) -> np.ndarray: ...
    def softcap(self, x: np.ndarray, cap: float) -> np.ndarray: ...
    def scale_embeddings(self, rows: np.ndarray, scale: float | None) -> np.ndarray: ...


def backend_name(requested: str | None = None) -> str:
    """`requested`, else $EXACTSERVE_BACKEND, else "reference"; validated."""
    name = (requested or os.environ.get(BACKEND_ENV) or "reference").strip().lower()
    if name not in BACKENDS:
        raise UnsupportedError(
            f"unknown backend {name!r} (from {'the argument' if requested else BACKEND_ENV}); "
            f"choose one of: {', '.join(BACKENDS)}"
        )
    return name


def select_ops(requested: str | None = None, cpu_matmul: str | None = None) -> Ops:
    """The ops of the chosen backend (`cpu_matmul`: the reference's, see `ReferenceOps`).
    Importing the Triton one loads torch and triton."""
    if backend_name(requested) == "triton":
        return TritonOps()
    return ReferenceOps(cpu_matmul)


class ReferenceOps:
    """The CPU engine: the NumPy reference, with the integer sums of its quantised matmuls in
    a compiled loop on int8 weights when one runs here (runtime/cpu; the same bits, a quarter
    of the memory traffic). `cpu_matmul` ("auto", "numpy" or a variant; default
    $EXACTSERVE_CPU_MATMUL, else "auto") chooses; `matmul_variant` says what was chosen."""

    name = "reference"

    def __init__(self, cpu_matmul: str | None = None) -> None:
        from exactserve.runtime.cpu.build import select_kernel

        self.kernel = select_kernel(cpu_matmul)
        self.matmul_variant = "numpy" if self.kernel is None else self.kernel.variant

    def prepare_matrix(self, raw, ggml_type, n_out, n_in):
        if ggml_type in FLOAT_TYPE_SIZES:
            return matmul.prepare_float(dequantize(raw, ggml_type, (n_in, n_out)))
        iw = to_integer_form(raw, ggml_type, n_out, n_in)
        if self.kernel is not None:
            return cpu_matmul.pack(iw)
        return matmul.prepare_integer(iw.q, iw.scale, iw.offset, iw.group)

    def prepare_embedding(self, raw, ggml_type, n_vocab, n_embd) -> IntegerWeights:
        """An untied quantised table stays in its compact int8 integer form."""
        return to_integer_form(raw, ggml_type, n_vocab, n_embd)

    def new_kv_storage(self, shape: KVShape, n_blocks: int) -> ReferenceKVStorage:
        return ReferenceKVStorage(shape, n_blocks)

    def embedding_rows(self, table, ids):
        if isinstance(table, cpu_matmul.PackedMatrix):  # tied: the output matrix
            table = cpu_matmul.unpack_rows(table, ids)
            ids = np.arange(len(ids))
        if isinstance(table, IntegerWeights):
            return embedding.embedding_rows_integer(table, ids)
        return embedding.embedding_rows_prepared(table, ids)  # tied: the output matrix

    def quantize_activations(self, x, executor=None):
        if self.kernel is None:
            return _by_rows(quantize.quantize_activations, executor, x)
        kernel = self.kernel
        return RoundedActivations(_by_rows(lambda r: cpu_matmul.quantize(r, kernel), executor, x))

    def matmul_quantized(self, acts, w, bias=None, executor=None):
        if isinstance(w, cpu_matmul.PackedMatrix):
            return cpu_matmul.matmul_quantized(acts, w, self.kernel, bias, executor)
        if isinstance(acts, cpu_matmul.CpuActivations):
            acts = acts.values
        return matmul.matmul_quantized(acts, w, bias, executor)

    def matmul(self, x, w, bias=None, executor=None):
        rounded = self.quantize_activations(x, executor).values
        return self.matmul_quantized(rounded, w, bias, executor)

    def rmsnorm(self, x, weight, eps, executor=None):
        return _by_rows(lambda rows: rmsnorm.rmsnorm(rows, weight, eps), executor, x)

    def gated(self, gate, up, activation, executor=None):
        if self.kernel is None:
            fn = lambda g, u: activations.gated(g, u, activation)  # noqa: E731
        else:
            fn = lambda g, u: cpu_matmul.gated(g, u, activation, self.kernel)  # noqa: E731
        return _by_rows(fn, executor, gate, up)

    asarray = staticmethod(np.asarray)
    to_host = staticmethod(np.asarray)
    apply_rope = staticmethod(rope.apply_rope)
    block_float = staticmethod(quantize.block_float)
    paged_attention = staticmethod(attention.paged_attention)
    softcap = staticmethod(activations.softcap)
    scale_embeddings = staticmethod(embedding.scale_embeddings)


ROW_SPLIT = 64  # rows below which a row-wise op runs on one thread (handing off costs ~0.1 ms)


def _by_rows(fn, executor, *arrays):
    """fn(*arrays) for a row-wise fn (each output row depends on the same input rows only),
    the rows shared out over the executor's threads; arrays, or NamedTuples of arrays, are
    joined back in order. The bits are fn's: no row sees another."""
    n_rows = len(arrays[0])
    threads = getattr(executor, "threads", 1)
    if threads <= 1 or n_rows < ROW_SPLIT:
        return fn(*arrays)
    step = -(-n_rows // threads)
    bounds = [(a, min(a + step, n_rows)) for a in range(0, n_rows, step)]
    futures = [executor.submit(fn, *(x[a:b] for x in arrays)) for a, b in bounds[1:]]
    parts = [fn(*(x[: bounds[0][1]] for x in arrays))] + [f.result() for f in futures]
    if isinstance(parts[0], tuple):
        return type(parts[0])(*(np.concatenate(field) for field in zip(*parts, strict=True)))
    return np.concatenate(parts)


class RoundedActivations(NamedTuple):
    """What `quantize_activations` returns where `.values` is not the reference's float32
    array: the Triton kernels' form, or the CPU kernel's (`runtime.cpu.matmul.CpuActivations`)."""

    values: Any


class TritonOps:
    """The Triton kernels behind the reference's signatures. Activations stay on the
    kernels' device between ops (torch tensors); NumPy inputs are moved there, and only
    `to_host` brings a result back."""

    name = "triton"

    def __init__(self) -> None:
        from exactserve import (
            kernels,  # sets TRITON_INTERPRET=1 on a machine without CUDA, before any kernel
        )
        from exactserve.kernels.device import default_device

        self.interpreted = kernels.INTERPRETED
        self.device = default_device()

    def _in(self, x: Any, dtype: Any = np.float32):
        """x on the device: tensors as they are, NumPy arrays converted to `dtype`."""
        import torch

        if isinstance(x, torch.Tensor):
            return x
        return torch.from_numpy(np.ascontiguousarray(x, dtype=dtype)).to(self.device)

    asarray = _in

    @staticmethod
    def to_host(x: Any) -> np.ndarray:
        return x.detach().cpu().numpy() if hasattr(x, "detach") else np.asarray(x)

    def prepare_matrix(self, raw, ggml_type, n_out, n_in):
        from exactserve.kernels.quants import weight_matrix

        return weight_matrix(raw, ggml_type, n_out, n_in, self.device)

    def prepare_embedding(self, raw, ggml_type, n_vocab, n_embd):
        return self.prepare_matrix(raw, ggml_type, n_vocab, n_embd)

    def embedding_rows(self, table, ids):
        from exactserve.kernels.embedding import embedding_rows

        return embedding_rows(table, self._in(ids, np.int64))

    def quantize_activations(self, x, executor=None):
        from exactserve.kernels.quantize import quantize_activations

        return RoundedActivations(quantize_activations(self._in(x)))

    def matmul_quantized(self, acts, w, bias=None, executor=None):
        """`executor` (the reference's CPU thread pool) has no role on this backend."""
        from exactserve.kernels.matmul import matmul_quantized

        return matmul_quantized(acts, w, None if bias is None else self._in(bias))

    def matmul(self, x, w, bias=None, executor=None):
        return self.matmul_quantized(self.quantize_activations(x).values, w, bias)

    def rmsnorm(self, x, weight, eps, executor=None):
        from exactserve.kernels.rmsnorm import rmsnorm

        return rmsnorm(self._in(x), self._in(weight), eps)

    def apply_rope(self, x, cos, sin, layout):
        from exactserve.kernels.rope import apply_rope

        return apply_rope(self._in(x), self._in(cos), self._in(sin), layout)

    def block_float(self, v):
        """`kernels.quantize.BlockFloat`: int32 integers and exponents, as the cache keeps
        them (`TritonKVStorage.write`)."""
        from exactserve.kernels.quantize import block_float

        return block_float(self._in(v))

    def new_kv_storage(self, shape: KVShape, n_blocks: int) -> TritonKVStorage:
        return TritonKVStorage(shape, n_blocks, self.device)

    def paged_attention(
        self,
        q,
        q_positions,
        query_starts,
        seq_lens,
        block_tables,
        *kv,
        window=None,
        cap=None,
        executor=None,
    ):
        """`kv`: the tensors of a `TritonKVStorage` layer, read where they are."""
        from exactserve.kernels.attention import paged_attention

        return paged_attention(
            self._in(q),
            self._in(q_positions, np.int64),
            query_starts,
            seq_lens,
            self._in(block_tables, np.int32),
            *kv,
            window=window,
            cap=cap,
        )

    def gated(self, gate, up, activation, executor=None):
        from exactserve.kernels.activations import gated

        return gated(self._in(gate), self._in(up), activation)

    def softcap(self, x, cap):
        from exactserve.kernels.activations import softcap_values

        return softcap_values(self._in(x), cap)

    def scale_embeddings(self, rows, scale):
        """Contract 6.3: one fp32 multiply (the scale is a float32 value), as the reference."""
        rows = self._in(rows)
        return rows if scale is None else rows * float(np.float32(scale))
