"""Which kernel launches the PTX audit (`kernels.audit`) compiles: the launchers are called
on CPU tensors while every Triton kernel is replaced by a recorder, so each recorded launch
carries exactly the arguments a real run passes, and `kernels.audit` specialises it as
Triton's launcher would (integers equal to 1 become constants, multiples of 16 and 16-byte
aligned pointers are marked divisible).

Two sources, both recorded through the real launchers:
- per-op coverage: every weight type on both matmul paths, every row-wise op, attention with
  and without window and cap;
- the model graph (`runtime/model/graph.py`, mirrored op by op in `graph_step`, which cannot
  import the runtime): for a few real model shapes, one layer and the logits at the row
  counts a run produces: decode of 1 sequence (M = 1, which Triton compiles with M as a
  constant), 2, 3 and 5 sequences (every decode M_PAD), and prefill chunks of 9 to 100 rows
  (every prefill BLOCK_M, M a multiple of 16 or not), over the paged KV cache in blocks of 16
  with block tables 1, 3 and 16 blocks wide.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import numpy as np
import torch
import triton
from gguf import GGMLQuantizationType as T

LEVELS = ("smoke", "quick", "full")


@dataclass(frozen=True)
class Launch:
    """One kernel launch as a launcher made it: the JITFunction, its arguments and options."""

    kernel: Any  # triton JITFunction
    args: tuple
    kwargs: dict


class _Recorder:
    """Stands in for a JITFunction: `kernel[grid](...)` records the call instead of running."""

    def __init__(self, kernel: Any, sink: list[Launch]) -> None:
        self.kernel, self.sink = kernel, sink

    def __getitem__(self, grid: Any) -> Callable[..., None]:
        return lambda *args, **kwargs: self.sink.append(Launch(self.kernel, args, kwargs))


@contextmanager
def recording(modules: list[ModuleType]) -> Iterator[list[Launch]]:
    """Replace every Triton kernel named in `modules` by a recorder while the block runs."""
    sink: list[Launch] = []
    saved = []
    for module in modules:
        for name, value in vars(module).items():
            if isinstance(value, triton.runtime.jit.JITFunction):
                saved.append((module, name, value))
                setattr(module, name, _Recorder(value, sink))
    try:
        yield sink
    finally:
        for module, name, value in saved:
            setattr(module, name, value)


@dataclass(frozen=True)
class GraphShape:
    """What a model's graph launches depend on: sizes and the weight type of each matrix."""

    name: str
    n_embd: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    n_ff: int
    n_vocab: int
    qtypes: dict  # role -> GGML type: q, k, v, o, gate, up, down, output
    activation: str = "silu"
    layout: str = "neox"
    qk_norm: bool = False
    has_bias: bool = False
    window: int | None = None


GRAPH_SHAPES = (
    # the demo model: Gemma 3 270M Q4_K_M (Q8_0, Q5_0, Q4_K, Q6_K; tied output; SWA 512)
    GraphShape(
        "gemma3-270m", 640, 4, 1, 256, 2048, 262144,
        {"q": T.Q5_0, "k": T.Q5_0, "v": T.Q8_0, "o": T.Q4_K, "gate": T.Q5_0, "up": T.Q5_0,
         "down": T.Q6_K, "output": T.Q8_0},  # K = 640 rows cannot hold 256-blocks
        activation="gelu_tanh", qk_norm=True, window=512,
    ),
    # a qwen2-style model: bias on Q, K, V; GQA 7:1; head size 64
    GraphShape(
        "qwen2-0.5b", 896, 14, 2, 64, 4864, 151936,
        {"q": T.Q5_0, "k": T.Q5_0, "v": T.Q8_0, "o": T.Q5_0, "gate": T.Q4_0, "up": T.Q4_0,
         "down": T.Q4_K, "output": T.Q8_0},  # K = 896 rows cannot hold 256-blocks
        has_bias=True,
    ),
    # a llama-style model: F16 weights, GQA 4:1, head size 64, normal RoPE layout
    GraphShape(
        "llama-f16", 2048, 32, 8, 64, 5632, 32000,
        {role: T.F16 for role in ("q", "k", "v", "o", "gate", "up", "down", "output")},
        layout="normal",
    ),
)  # fmt: skip
DECODE_ROWS = (1, 2, 3, 5)  # every decode M_PAD (1, 2, 4, 8); M = 1 is a constant
PREFILL_ROWS = (9, 16, 17, 32, 33, 64, 100)  # every prefill BLOCK_M, M % 16 == 0 or not
BLOCK_SIZE = 16  # the engine's KV blocks (runtime.model.cache)
TABLE_WIDTHS = (1, 3, 16)  # block tables of one block, a few, and a multiple of 16


def _weights(shape: GraphShape) -> dict:
    from exactserve.kernels.quants import weight_matrix
    from exactserve.reference.quants import block_geometry

    sizes = {
        "q": (shape.n_heads * shape.head_dim, shape.n_embd),
        "k": (shape.n_kv_heads * shape.head_dim, shape.n_embd),
        "v": (shape.n_kv_heads * shape.head_dim, shape.n_embd),
        "o": (shape.n_embd, shape.n_heads * shape.head_dim),
        "gate": (shape.n_ff, shape.n_embd),
        "up": (shape.n_ff, shape.n_embd),
        "down": (shape.n_embd, shape.n_ff),
        "output": (shape.n_vocab, shape.n_embd),
    }
    weights = {}
    for role, (n_out, n_in) in sizes.items():
        block_size, type_size = block_geometry(shape.qtypes[role])
        raw = np.empty(n_out * n_in // block_size * type_size, dtype=np.uint8)  # never read
        weights[role] = weight_matrix(raw, shape.qtypes[role], n_out, n_in, torch.device("cpu"))
    return weights


def graph_step(shape: GraphShape, weights: dict, n_rows: int, table_width: int) -> None:
    """The launches of `runtime.model.graph` for one layer and the logits of `n_rows` new
    rows of one sequence (same ops, same order, same tensor shapes)."""
    from exactserve.kernels import activations, attention, embedding, logits, matmul, rmsnorm
    from exactserve.kernels import rope as rope_kernels
    from exactserve.kernels.quantize import block_float, quantize_activations

    h, h_kv, d = shape.n_heads, shape.n_kv_heads, shape.head_dim
    norm = torch.ones(shape.n_embd)
    ids = torch.zeros(n_rows, dtype=torch.int64)
    x = embedding.embedding_rows(weights["output"], ids)
    acts = quantize_activations(rmsnorm.rmsnorm(x, norm, 1e-6))
    bias = {r: torch.zeros(weights[r].n_rows) if shape.has_bias else None for r in "qkv"}
    q = matmul.matmul_quantized(acts, weights["q"], bias["q"]).reshape(n_rows, h, d)
    k = matmul.matmul_quantized(acts, weights["k"], bias["k"]).reshape(n_rows, h_kv, d)
    v = matmul.matmul_quantized(acts, weights["v"], bias["v"]).reshape(n_rows, h_kv, d)
    if shape.qk_norm:
        q, k = rmsnorm.rmsnorm(q, torch.ones(d), 1e-6), rmsnorm.rmsnorm(k, torch.ones(d), 1e-6)
    cos = sin = torch.ones((n_rows, d // 2))
    q = rope_kernels.apply_rope(q, cos, sin, shape.layout) * 0.125
    k = rope_kernels.apply_rope(k, cos, sin, shape.layout)
    block_float(k), block_float(v)
    width = max(table_width, triton.cdiv(n_rows, BLOCK_SIZE))
    pool_k = torch.zeros((width + 1, h_kv, BLOCK_SIZE, d), dtype=torch.int32)
    pool_e = torch.zeros((width + 1, h_kv, BLOCK_SIZE), dtype=torch.int32)
    length = max(n_rows, (width - 1) * BLOCK_SIZE + 1)
    positions = torch.arange(length - n_rows, length)
    table = torch.arange(width, dtype=torch.int32)[None, :]
    for window in {None, shape.window}:
        attn = attention.paged_attention(
            q, positions, [0, n_rows], [length], table, pool_k, pool_e, pool_k, pool_e, window
        )
    o = matmul.matmul(attn.reshape(n_rows, h * d), weights["o"])
    if shape.qk_norm:  # gemma3's post-attention and post-FFN norms
        o = rmsnorm.rmsnorm(o, norm, 1e-6)
    acts = quantize_activations(rmsnorm.rmsnorm(x + o, norm, 1e-6))
    gate = matmul.matmul_quantized(acts, weights["gate"])
    up = matmul.matmul_quantized(acts, weights["up"])
    matmul.matmul(activations.gated(gate, up, shape.activation), weights["down"])
    last = rmsnorm.rmsnorm(x[-1:], norm, 1e-6)  # logits of the last row ("last")
    logits.argmax(matmul.matmul(last, weights["output"]))
    matmul.matmul(rmsnorm.rmsnorm(x, norm, 1e-6), weights["output"])  # logits of every row


def _op_coverage(level: str) -> None:
    """Every kernel and weight type, from tiny inputs (the launchers' own variety)."""
    from exactserve.kernels import (
        activations,
        attention,
        logits,
        matmul,
        quantize,
        quants,
        rmsnorm,
        rope,
    )
    from exactserve.kernels.quants import weight_matrix
    from exactserve.reference.quants import QUANT_UNITS, block_geometry

    cpu = torch.device("cpu")
    x = torch.ones((2, 256))
    many = torch.ones((128, 256))  # full-size tiles, so shared-memory use is the real one
    qtypes = {"smoke": [T.Q4_K], "quick": [T.Q8_0, T.Q4_K, T.Q6_K]}.get(level, list(QUANT_UNITS))
    float_types = [] if level == "smoke" else [T.F16, T.F32, T.BF16]
    one_acts = quantize.quantize_activations(x[:1])
    acts = quantize.quantize_activations(x)
    many_acts = quantize.quantize_activations(many)
    eight_acts = quantize.quantize_activations(many[:8])
    for qtype in [*qtypes, *float_types]:
        block_size, type_size = block_geometry(qtype)
        raw = np.zeros(256 * 256 // block_size * type_size, dtype=np.uint8)
        w = weight_matrix(raw, qtype, 256, 256, device=cpu)
        matmul.matmul_quantized(one_acts, w, path="decode")  # M = 1: a constant
        if level != "smoke":
            matmul.matmul_quantized(acts, w, path="decode")
            matmul.matmul_quantized(eight_acts, w, path="decode")  # the widest decode
        matmul.matmul_quantized(many_acts, w, path="prefill")
        if level != "smoke":
            quants.dequantize(w)
            if not w.is_float:
                quants.to_integer_form(w)
    activations.unary(x, "exp")
    rmsnorm.rmsnorm(x, torch.ones(256), 1e-6)
    pool_k = torch.zeros((2, 1, 16, 64), dtype=torch.int32)  # the engine's blocks of 16
    pool_e = torch.zeros((2, 1, 16), dtype=torch.int32)
    table = torch.tensor([[1], [0]], dtype=torch.int32)
    q8 = torch.ones((8, 4, 64))
    attention.paged_attention(
        q8, [*range(7), 0], [0, 7, 8], [7, 1], table, pool_k, pool_e, pool_k, pool_e
    )
    if level == "smoke":
        return
    k = torch.zeros((1, 8, 64), dtype=torch.int32)
    e = torch.zeros((1, 8), dtype=torch.int32)
    quantize.block_float(torch.ones((3, 64)))
    for name in activations.UNARY[1:]:
        activations.unary(x, name)
    for name in activations.ACTIVATION_IDS:
        activations.gated(x, x, name)
    activations.softcap_values(x, 30.0)
    rope_table = torch.ones((2, 32))
    for layout in ("normal", "neox"):
        rope.apply_rope(torch.ones((2, 2, 64)), rope_table, rope_table, layout)
    attention.attention(q8, list(range(8)), k, e, k, e)
    attention.attention(torch.ones((2, 2, 64)), [6, 7], k, e, k, e, 4, 30.0)
    k256 = k.new_zeros((1, 8, 256))
    attention.attention(torch.ones((1, 2, 256)), [7], k256, e, k256, e)
    logits.argmax(torch.ones((2, 100)))


def example_launches(level: str = "full") -> list[Launch]:
    """The launches to audit at `level`: "smoke" (one weight type, M = 1 decode and a
    prefill tile, exp, RMSNorm, paged attention), "quick" (three weight types, every op),
    "full" (every weight type, every op, and the model graph's specialisations for every
    shape in GRAPH_SHAPES). Duplicates are left to `kernels.audit`, which knows Triton's
    specialisation key."""
    from exactserve.kernels import (
        activations,
        attention,
        embedding,
        logits,
        matmul,
        quantize,
        quants,
        rmsnorm,
        rope,
    )

    if level not in LEVELS:
        raise ValueError(f"unknown audit level {level!r}; choose one of {', '.join(LEVELS)}")
    modules = [activations, attention, embedding, logits, matmul, quantize, quants, rmsnorm, rope]
    with recording(modules) as sink:
        _op_coverage(level)
        if level == "full":
            for shape in GRAPH_SHAPES:
                weights = _weights(shape)
                for n_rows in (*DECODE_ROWS, *PREFILL_ROWS):
                    graph_step(shape, weights, n_rows, TABLE_WIDTHS[0])
                for width in TABLE_WIDTHS[1:]:
                    graph_step(shape, weights, 1, width)
        return list(sink)
