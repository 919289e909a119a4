"""bench/gpu_check.py's timing pieces: the shapes, the timer, random quantised weights
generated on the device, and a llama-shaped model of them run with the kernels."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch
from gguf import GGMLQuantizationType as T

# exactserve.kernels sets TRITON_INTERPRET=1 without CUDA, before any kernel is defined
from exactserve.kernels.activations import gated
from exactserve.kernels.attention import paged_attention
from exactserve.kernels.embedding import embedding_rows
from exactserve.kernels.logits import argmax
from exactserve.kernels.matmul import matmul, matmul_quantized
from exactserve.kernels.quantize import block_float, quantize_activations
from exactserve.kernels.quants import FP16_FIELDS, WeightMatrix, weight_matrix
from exactserve.kernels.rmsnorm import rmsnorm
from exactserve.kernels.rope import apply_rope
from exactserve.reference.quants import block_geometry
from exactserve.reference.rope import rope_frequencies, rope_table

KV_BLOCK = 16  # positions per KV cache block, the engine's default


@dataclass(frozen=True)
class Shape:
    n_embd: int
    n_ff: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    n_vocab: int
    n_layers: int
    prefill_tokens: int
    decode_tokens: int
    repeats: int


LLAMA3_8B = Shape(4096, 14336, 32, 8, 128, 128256, 32, 512, 32, 10)
SMOKE = Shape(256, 512, 4, 2, 64, 512, 1, 8, 1, 1)
WEIGHT_TYPES = (T.Q8_0, T.Q4_K)
# Random blocks: d = WEIGHT_STD / divisor (divisor ~ RMS of sub-scale x q), dmin = ratio * d.
RANDOM_SCALES = {T.Q8_0: (74.0, 0.0), T.Q4_K: (324.0, 7.5)}
WEIGHT_STD = 0.02


@dataclass
class Row:
    group: str
    name: str
    ms: float
    achieved: str
    of_peak: str


class Timer:
    def __init__(self, device: torch.device, repeats: int) -> None:
        self.is_cuda, self.repeats = device.type == "cuda", repeats

    def sync(self) -> None:
        if self.is_cuda:
            torch.cuda.synchronize()

    def seconds(self, fn: Callable[[], object]) -> float:
        fn()  # compile and warm up
        self.sync()
        start = time.perf_counter()
        for _ in range(self.repeats):
            fn()
        self.sync()
        return (time.perf_counter() - start) / self.repeats


def random_weight(qtype: T, n_rows: int, n_cols: int, device: torch.device, seed: int):
    """A WeightMatrix of random blocks whose fp16 scale fields hold sane positive values."""
    block_size, type_size = block_geometry(qtype)
    n_blocks = n_cols // block_size
    gen = torch.Generator(device=device).manual_seed(seed)
    raw = torch.randint(0, 256, (n_rows, n_blocks, type_size), generator=gen, device=device)
    raw = raw.to(torch.uint8)
    divisor, ratio = RANDOM_SCALES.get(qtype, (100.0, 0.0))
    d = (torch.rand((n_rows, n_blocks), generator=gen, device=device) + 0.5) * (
        WEIGHT_STD / divisor
    )
    for start, value in zip(FP16_FIELDS[qtype], (d, d * ratio), strict=False):
        raw[:, :, start : start + 2] = value.half().view(torch.uint8).reshape(n_rows, n_blocks, 2)
    return weight_matrix(raw.reshape(-1), qtype, n_rows, n_cols, device)


def weight_bytes(w: WeightMatrix) -> int:
    return w.raw.numel()


# ---------------------------------------------------------------------------------- audit


class BenchModel:
    """A llama-shaped model of random weights, run with the kernels on device tensors (the
    benchmark's own minimal graph: no sampling, one sequence, a paged device KV cache whose
    blocks are laid out in shuffled order)."""

    def __init__(self, shape: Shape, qtype: T, device: torch.device) -> None:
        s = shape
        self.shape, self.device = s, device
        q_dim, kv_dim = s.n_heads * s.head_dim, s.n_kv_heads * s.head_dim
        self.layers = [
            {
                "wq": random_weight(qtype, q_dim, s.n_embd, device, 10 * i + 1),
                "wk": random_weight(qtype, kv_dim, s.n_embd, device, 10 * i + 2),
                "wv": random_weight(qtype, kv_dim, s.n_embd, device, 10 * i + 3),
                "wo": random_weight(qtype, s.n_embd, q_dim, device, 10 * i + 4),
                "wg": random_weight(qtype, s.n_ff, s.n_embd, device, 10 * i + 5),
                "wu": random_weight(qtype, s.n_ff, s.n_embd, device, 10 * i + 6),
                "wd": random_weight(qtype, s.n_embd, s.n_ff, device, 10 * i + 7),
            }
            for i in range(s.n_layers)
        ]
        self.embedding = random_weight(qtype, s.n_vocab, s.n_embd, device, 8)
        self.output = random_weight(qtype, s.n_vocab, s.n_embd, device, 9)
        self.norm = torch.ones(s.n_embd, device=device)
        context = s.prefill_tokens + s.decode_tokens
        cos, sin = rope_table(np.arange(context), rope_frequencies(s.head_dim, 500000.0))
        self.cos, self.sin = torch.from_numpy(cos).to(device), torch.from_numpy(sin).to(device)
        n_blocks = -(-context // KV_BLOCK)
        cache_shape = (s.n_layers, n_blocks, s.n_kv_heads, KV_BLOCK, s.head_dim)
        self.k = torch.zeros(cache_shape, dtype=torch.int32, device=device)
        self.v = torch.zeros_like(self.k)
        self.k_exp = torch.zeros(cache_shape[:4], dtype=torch.int32, device=device)
        self.v_exp = torch.zeros_like(self.k_exp)
        self.table = torch.randperm(n_blocks, device=device).to(torch.int32)
        self.scale = float(np.float32(1) / np.sqrt(np.float32(s.head_dim), dtype=np.float32))

    @property
    def nbytes(self) -> int:
        return sum(weight_bytes(w) for layer in self.layers for w in layer.values()) + weight_bytes(
            self.output
        )

    def forward(self, tokens: torch.Tensor, start: int) -> torch.Tensor:
        s, t = self.shape, tokens.numel()
        positions = torch.arange(start, start + t, device=self.device)
        cos, sin = self.cos[start : start + t], self.sin[start : start + t]
        x = embedding_rows(self.embedding, tokens)
        for i, w in enumerate(self.layers):
            a = quantize_activations(rmsnorm(x, self.norm, 1e-5))
            q = matmul_quantized(a, w["wq"]).view(t, s.n_heads, s.head_dim)
            k = matmul_quantized(a, w["wk"]).view(t, s.n_kv_heads, s.head_dim)
            v = matmul_quantized(a, w["wv"]).view(t, s.n_kv_heads, s.head_dim)
            q = apply_rope(q, cos, sin, "normal") * self.scale
            kb, vb = block_float(apply_rope(k, cos, sin, "normal")), block_float(v)
            blocks, slots = self.table[positions // KV_BLOCK], positions % KV_BLOCK
            self.k[i, blocks, :, slots] = kb.integers
            self.v[i, blocks, :, slots] = vb.integers
            self.k_exp[i, blocks, :, slots] = kb.exponent
            self.v_exp[i, blocks, :, slots] = vb.exponent
            kv = (self.k[i], self.k_exp[i], self.v[i], self.v_exp[i])
            o = paged_attention(q, positions, [0, t], [start + t], self.table[None], *kv)
            x = x + matmul(o.reshape(t, -1), w["wo"])
            a = quantize_activations(rmsnorm(x, self.norm, 1e-5))
            f = gated(matmul_quantized(a, w["wg"]), matmul_quantized(a, w["wu"]), "silu")
            x = x + matmul(f, w["wd"])
        logits = matmul(rmsnorm(x[-1:], self.norm, 1e-5), self.output)
        return argmax(logits)


def model_rows(shape: Shape, device: torch.device, timer: Timer, bandwidth: float) -> list[Row]:
    rows = []
    for qtype in WEIGHT_TYPES:
        model = BenchModel(shape, qtype, device)
        prompt = torch.randint(0, shape.n_vocab, (shape.prefill_tokens,), device=device)
        seconds = timer.seconds(lambda m=model, p=prompt: m.forward(p, 0))
        name = f"{shape.n_layers}-layer model {qtype.name} prefill {shape.prefill_tokens}"
        rows.append(
            Row("model", name, 1e3 * seconds, f"{shape.prefill_tokens / seconds:.0f} tok/s", "")
        )
        token = prompt[-1:]

        def decode(m=model, token=token):
            for i in range(shape.decode_tokens):
                m.forward(token, shape.prefill_tokens + i)

        seconds = timer.seconds(decode) / shape.decode_tokens
        rate = model.nbytes / seconds
        name = f"{shape.n_layers}-layer model {qtype.name} decode ({model.nbytes / 1e9:.2f} GB)"
        rows.append(
            Row(
                "model",
                name,
                1e3 * seconds,
                f"{1 / seconds:.1f} tok/s",
                f"{100 * rate / bandwidth:.0f}% copy",
            )
        )
        del model
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return rows
