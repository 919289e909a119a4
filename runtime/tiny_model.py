"""Tiny GGUF models of every supported architecture, written with gguf-py's GGUFWriter: the
test suite's models, and `exactserve check`'s model for the backend comparison.

Weights are random (deterministic in the seed and the tensor name); the vocabulary is REAL:
every `tokenizer.*` key but the chat template is copied from one of llama.cpp's
`models/ggml-vocab-*.gguf` (or from any GGUF file given by path), and the chat template is
a real one from `models/templates/` (or the vocabulary file's own, for a path).
Defaults per architecture:

    llama   vocab llama-spm (SentencePiece, 32000)   template Llama 3.1     untied output
    qwen2   vocab qwen2 (byte-level BPE, 151936)     template Qwen2.5       tied, q/k/v biases
    qwen3   vocab qwen2                              template Qwen3         tied, q/k norms
    gemma3  vocab llama-spm (SPM, as real Gemma 3)   template gemma-2-2b-it tied, q/k + post norms

(The Llama 3.1 and Gemma templates name special tokens the SPM vocabulary lacks; they then
tokenize as plain text. Pass `vocab="llama-bpe"` for a Llama 3 vocabulary.)

Dimensions depend on the block size of the chosen type: 32-weight types (and floats) get
n_embd 64, n_ff 128; the 256-weight K-quants and IQ4_XS get n_embd 256, n_ff 512, so every
layer matrix has whole blocks. A matrix whose row length still does not fit falls back to
Q8_0 (or F16). Token embedding and output are Q8_0 for quantised models and F16 for float
ones (they are the big tensors: vocabulary x n_embd). Norm weights, biases and rope
factors are F32.

Quantised weights: the legacy types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0) are produced by
`gguf.quants.quantize` from normal random data; the K-quants, IQ4 types and the big
embeddings are random raw blocks whose fp16 scale fields are set to finite values sized so
the weights have roughly the intended standard deviation.
"""

from __future__ import annotations

import functools
import hashlib
import math
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import gguf
import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import GGUFValueType as V

from exactserve.runtime.assets import llama_cpp_dir
from exactserve.runtime.gguf_file import open_gguf

ARCHS = ("llama", "qwen2", "qwen3", "gemma3")

DEFAULT_VOCAB = {"llama": "llama-spm", "qwen2": "qwen2", "qwen3": "qwen2", "gemma3": "llama-spm"}
DEFAULT_TEMPLATE = {
    "llama": "meta-llama-Llama-3.1-8B-Instruct",
    "qwen2": "Qwen-Qwen2.5-7B-Instruct",
    "qwen3": "Qwen-Qwen3-0.6B",
    "gemma3": "google-gemma-2-2b-it",
}
LEGACY_TYPES = (T.Q4_0, T.Q4_1, T.Q5_0, T.Q5_1, T.Q8_0)
FLOAT_TYPES = (T.F32, T.F16, T.BF16)
WEIGHT_STD = 0.05

# Random raw blocks: (byte offset of d, divisor, byte offset of the min field or None, ratio).
# divisor ~ RMS of (sub-scale x q) so that d = std / divisor; the min field is set to
# ratio * d (dmin for K-quants; Q4_1/Q5_1 store the offset m itself), which centres weights.
RAW_SCALES = {
    T.Q4_0: (0, 4.6, None, 0.0),
    T.Q4_1: (0, 9.0, 2, -7.5),
    T.Q5_0: (0, 9.2, None, 0.0),
    T.Q5_1: (0, 18.0, 2, -15.5),
    T.Q8_0: (0, 74.0, None, 0.0),
    T.Q2_K: (80, 17.0, 82, 1.5),
    T.Q3_K: (108, 41.0, None, 0.0),
    T.Q4_K: (0, 324.0, 2, 7.5),
    T.Q5_K: (0, 648.0, 2, 15.5),
    T.Q6_K: (208, 1369.0, None, 0.0),
    T.IQ4_NL: (0, 65.0, None, 0.0),
    T.IQ4_XS: (0, 1170.0, None, 0.0),
}


@dataclass(frozen=True)
class Dims:
    n_embd: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    n_ff: int
    n_layers: int = 2
    context_length: int = 512


@dataclass(frozen=True)
class TinySpec:
    """Everything that determines a tiny model file (equal specs give identical bytes)."""

    arch: str
    qtype: T = T.Q8_0  # type of the layer matrices
    seed: int = 0
    vocab: str | None = None  # ggml-vocab-<vocab>.gguf, or a GGUF path; None: DEFAULT_VOCAB
    template: str | None = None  # models/templates/<template>.jinja; None: DEFAULT_TEMPLATE
    # (for a vocabulary given by path: that file's own template, if it has one)
    tied: bool | None = None  # None: untied for llama, tied otherwise
    embedding_type: T | None = None  # None: Q8_0 for quantised models, F16 for float ones
    overrides: tuple[
        tuple[str, T], ...
    ] = ()  # (tensor-name suffix, type), e.g. ("ffn_down.weight", Q6_K)
    rope_freqs: bool = False  # write a llama3 `rope_freqs.weight` (llama only)
    extra_metadata: tuple[tuple[str, Any], ...] = ()  # (key, value) written after the rest

    @property
    def dims(self) -> Dims:
        wide = gguf.GGML_QUANT_SIZES[self.qtype][0] == 256
        n_embd, n_ff = (256, 512) if wide else (64, 128)
        if self.arch in ("llama", "qwen2"):  # head_dim = n_embd / n_heads, no key_length
            return Dims(n_embd, 4, 2, 64, n_ff) if wide else Dims(n_embd, 2, 1, 32, n_ff)
        kv = 1 if self.arch == "gemma3" else 2
        return Dims(n_embd, 4, kv, 128 if wide else 32, n_ff)

    @property
    def is_tied(self) -> bool:
        return self.arch != "llama" if self.tied is None else self.tied

    @property
    def file_name(self) -> str:
        digest = hashlib.sha256(repr(self).encode()).hexdigest()[:12]
        return f"tiny-{self.arch}-{self.qtype.name}-{digest}.gguf"


def vocab_path(name: str) -> Path:
    """llama.cpp's ggml-vocab-<name>.gguf, or `name` itself when it is a .gguf path."""
    if name.endswith(".gguf"):
        return Path(name)
    return llama_cpp_dir() / "models" / f"ggml-vocab-{name}.gguf"


def template_path(name: str) -> Path:
    return llama_cpp_dir() / "models" / "templates" / f"{name}.jinja"


@functools.cache
def vocab_metadata(name: str) -> dict[str, Any]:
    """Metadata of ggml-vocab-<name>.gguf (read once per process)."""
    with open_gguf(vocab_path(name)) as f:
        return dict(f.metadata)


def _rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def random_raw_blocks(rng: np.random.Generator, qtype: T, n_blocks: int, std: float) -> np.ndarray:
    """uint8 [n_blocks, type_size]: random quant bits, finite fp16 scales sized for `std`."""
    type_size = gguf.GGML_QUANT_SIZES[qtype][1]
    blocks = rng.integers(0, 256, size=(n_blocks, type_size), dtype=np.uint8)
    d_at, divisor, min_at, ratio = RAW_SCALES[qtype]
    d = (std / divisor) * rng.uniform(0.5, 1.5, size=n_blocks)
    blocks[:, d_at : d_at + 2] = d.astype("<f2").view(np.uint8).reshape(n_blocks, 2)
    if min_at is not None:
        dmin = (ratio * d).astype("<f2")
        blocks[:, min_at : min_at + 2] = dmin.view(np.uint8).reshape(n_blocks, 2)
    return blocks


def random_tensor(
    rng: np.random.Generator, qtype: T, shape: tuple[int, ...], std: float
) -> np.ndarray:
    """Data for GGUFWriter.add_tensor(raw_dtype=qtype): numpy-order array (rows, bytes/row)."""
    numpy_shape = tuple(reversed(shape))
    if qtype in FLOAT_TYPES or qtype in LEGACY_TYPES and math.prod(shape) <= 1 << 18:
        data = (rng.standard_normal(numpy_shape) * std).astype(np.float32)
        if qtype == T.F32:
            return data
        if qtype == T.F16:
            return data.astype(np.float16)
        return gguf.quants.quantize(data, qtype)
    block_size, type_size = gguf.GGML_QUANT_SIZES[qtype]
    n_blocks = math.prod(shape) // block_size
    raw = random_raw_blocks(rng, qtype, n_blocks, std)
    return raw.reshape(*numpy_shape[:-1], shape[0] // block_size * type_size)


def tensor_plan(spec: TinySpec) -> list[tuple[str, tuple[int, ...], T]]:
    """(name, ggml-order shape, type) of every tensor, in file order."""
    d = spec.dims
    vocab = vocab_metadata(spec.vocab or DEFAULT_VOCAB[spec.arch])
    n_vocab = len(vocab["tokenizer.ggml.tokens"])
    quantised = spec.qtype not in FLOAT_TYPES
    embedding_type = spec.embedding_type or (T.Q8_0 if quantised else T.F16)
    q_dim, kv_dim = d.n_heads * d.head_dim, d.n_kv_heads * d.head_dim
    plan: list[tuple[str, tuple[int, ...], T | None]] = [
        ("token_embd.weight", (d.n_embd, n_vocab), embedding_type),
        ("output_norm.weight", (d.n_embd,), None),
    ]
    if not spec.is_tied:
        plan.append(("output.weight", (d.n_embd, n_vocab), embedding_type))
    if spec.rope_freqs:
        plan.append(("rope_freqs.weight", (d.head_dim // 2,), None))
    for i in range(d.n_layers):
        b = f"blk.{i}."
        plan += [
            (b + "attn_norm.weight", (d.n_embd,), None),
            (b + "attn_q.weight", (d.n_embd, q_dim), spec.qtype),
            (b + "attn_k.weight", (d.n_embd, kv_dim), spec.qtype),
            (b + "attn_v.weight", (d.n_embd, kv_dim), spec.qtype),
            (b + "attn_output.weight", (q_dim, d.n_embd), spec.qtype),
        ]
        if spec.arch == "qwen2":
            plan += [(b + "attn_q.bias", (q_dim,), None), (b + "attn_k.bias", (kv_dim,), None)]
            plan += [(b + "attn_v.bias", (kv_dim,), None)]
        if spec.arch in ("qwen3", "gemma3"):
            plan += [(b + "attn_q_norm.weight", (d.head_dim,), None)]
            plan += [(b + "attn_k_norm.weight", (d.head_dim,), None)]
        if spec.arch == "gemma3":
            plan += [(b + "post_attention_norm.weight", (d.n_embd,), None)]
        plan += [
            (b + "ffn_norm.weight", (d.n_embd,), None),
            (b + "ffn_gate.weight", (d.n_embd, d.n_ff), spec.qtype),
            (b + "ffn_up.weight", (d.n_embd, d.n_ff), spec.qtype),
            (b + "ffn_down.weight", (d.n_ff, d.n_embd), spec.qtype),
        ]
        if spec.arch == "gemma3":
            plan += [(b + "post_ffw_norm.weight", (d.n_embd,), None)]
    return [(name, shape, _resolve_type(spec, name, shape, qtype)) for name, shape, qtype in plan]


def _resolve_type(spec: TinySpec, name: str, shape: tuple[int, ...], qtype: T | None) -> T:
    if qtype is None:
        return T.F32
    for suffix, override in spec.overrides:
        if name.endswith(suffix):
            qtype = override
    if shape[0] % gguf.GGML_QUANT_SIZES[qtype][0] == 0:
        return qtype
    return T.Q8_0 if shape[0] % 32 == 0 else T.F16


def _vector(rng: np.random.Generator, name: str, n: int) -> np.ndarray:
    if name.endswith("norm.weight"):
        return (1.0 + 0.1 * rng.standard_normal(n)).astype(np.float32)
    return (WEIGHT_STD * rng.standard_normal(n)).astype(np.float32)


def llama3_rope_factors(head_dim: int, base: float) -> np.ndarray:
    """convert_hf_to_gguf's llama3 factors: factor 8, low 1, high 4, original context 8192."""
    factor, low, high, old_context = 8.0, 1.0, 4.0, 8192
    freqs = 1.0 / (base ** (np.arange(0, head_dim, 2, dtype=np.float64) / head_dim))
    wavelen = 2 * math.pi / freqs
    smooth = (old_context / wavelen - low) / (high - low)
    mid = 1 / ((1 - smooth) / factor + smooth)
    out = np.where(
        wavelen < old_context / high, 1.0, np.where(wavelen > old_context / low, factor, mid)
    )
    return out.astype(np.float32)


def _copy_tokenizer(writer: gguf.GGUFWriter, vocab: str) -> None:
    """Every `tokenizer.*` key of the vocab file, with the GGUF types llama.cpp writes."""
    for key, value in vocab_metadata(vocab).items():
        if not key.startswith("tokenizer.") or key.startswith("tokenizer.chat_template"):
            continue  # the template is chosen separately
        if isinstance(value, np.ndarray):
            sub = {"int32": V.INT32, "uint32": V.UINT32, "float32": V.FLOAT32, "bool": V.BOOL}
            writer.add_key_value(key, value.tolist(), V.ARRAY, sub[value.dtype.name])
        elif isinstance(value, list):
            writer.add_key_value(key, value, V.ARRAY, V.STRING)
        elif isinstance(value, bool):
            writer.add_bool(key, value)
        elif isinstance(value, int):
            writer.add_uint32(key, value)  # token ids
        elif isinstance(value, str):
            writer.add_string(key, value)
        else:
            raise TypeError(f"{vocab}: cannot copy {key} of type {type(value).__name__}")


def _add_metadata(writer: gguf.GGUFWriter, spec: TinySpec) -> None:
    d, arch = spec.dims, spec.arch
    writer.add_name(f"tiny-{arch}-{spec.qtype.name}")
    writer.add_context_length(d.context_length)
    writer.add_embedding_length(d.n_embd)
    writer.add_block_count(d.n_layers)
    writer.add_feed_forward_length(d.n_ff)
    writer.add_head_count(d.n_heads)
    writer.add_head_count_kv(d.n_kv_heads)
    writer.add_layer_norm_rms_eps(1e-5 if arch == "llama" else 1e-6)
    if arch in ("qwen3", "gemma3"):
        writer.add_key_length(d.head_dim)
        writer.add_value_length(d.head_dim)
    if arch == "llama":
        writer.add_rope_dimension_count(d.head_dim)
        writer.add_rope_freq_base(500000.0 if spec.rope_freqs else 10000.0)
    else:
        writer.add_rope_freq_base(1000000.0)
    if arch == "gemma3":
        writer.add_sliding_window(8)
        writer.add_sliding_window_pattern(2)  # layer 0 local, layer 1 global
    vocab = spec.vocab or DEFAULT_VOCAB[arch]
    _copy_tokenizer(writer, vocab)
    if spec.template is None and vocab.endswith(".gguf"):
        template = vocab_metadata(vocab).get("tokenizer.chat_template")
    else:
        template = template_path(spec.template or DEFAULT_TEMPLATE[arch]).read_text()
    if template is not None:
        writer.add_key_value("tokenizer.chat_template", template, V.STRING)
    for key, value in spec.extra_metadata:
        writer.add_key_value(key, value, _value_type(value), _sub_type(value))


def _value_type(value: Any) -> V:
    if isinstance(value, (list, tuple)):
        return V.ARRAY
    if isinstance(value, bool):
        return V.BOOL
    if isinstance(value, int):
        return V.UINT32
    return V.FLOAT32 if isinstance(value, float) else V.STRING


def _sub_type(value: Any) -> V | None:
    return _value_type(value[0]) if isinstance(value, (list, tuple)) else None


def write_tiny_model(path: Path, spec: TinySpec) -> Path:
    """Write the model described by `spec` to `path` and return `path`."""
    if spec.arch not in ARCHS:
        raise ValueError(f"unknown tiny-model architecture {spec.arch!r}; known: {ARCHS}")
    writer = gguf.GGUFWriter(str(path), spec.arch)
    _add_metadata(writer, spec)
    base = 500000.0 if spec.rope_freqs else 10000.0
    for name, shape, qtype in tensor_plan(spec):
        rng = _rng(spec.seed, name)
        if name == "rope_freqs.weight":
            data = llama3_rope_factors(spec.dims.head_dim, base)
        elif len(shape) == 1:
            data = _vector(rng, name, shape[0])
        else:
            data = random_tensor(rng, qtype, shape, WEIGHT_STD)
        raw_dtype = None if qtype in (T.F32, T.F16) else qtype
        writer.add_tensor(name, data, raw_dtype=raw_dtype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def tiny_spec(arch: str, qtype: T = T.Q8_0, **options: Any) -> TinySpec:
    """A TinySpec, accepting mappings for `overrides` / `extra_metadata` for convenience."""
    for key in ("overrides", "extra_metadata"):
        if isinstance(options.get(key), Mapping):
            options[key] = tuple(options[key].items())
    return TinySpec(arch, qtype, **options)
