"""Model configuration: frozen dataclasses built from a GGUF file's metadata by `from_gguf`.

Every metadata key string lives in `Key`; per-architecture behaviour lives in `ARCHITECTURES`.
Defaults and derived values follow llama.cpp (src/llama-model.cpp `load_hparams`,
src/models/<arch>.cpp `load_arch_hparams`, `llama_model_rope_type`), so a file means here
what it means to llama.cpp:

- head_dim = `attention.key_length`, else n_embd / n_heads; n_kv_heads defaults to n_heads;
  rope dimension count defaults to head_dim; rope freq_base defaults to 10000.
- rope layout: llama "normal" (adjacent pairs), qwen2/qwen3/gemma3 "neox" (halves).
- rope scaling: `rope.scaling.type` defaults to "linear" ("none" here when no factor is
  given either: the same no-op); freq_scale = 1 / factor, or 1 without a factor or for
  "none". llama3-style scaling has no metadata: the converter stores per-frequency factors
  as the `rope_freqs.weight` tensor.
- gemma3: sliding-window layers only when `attention.sliding_window` > 0; the pattern is the
  `attention.sliding_window_pattern` array, else its integer period (default 6): layer i is
  local iff i % period < period - 1 (every 6th layer is global). Local layers use
  `rope.freq_base_swa` (default 10000) and no frequency scaling. Attention scale
  1/sqrt(head_dim), except the 62-layer (27B) model: 1/sqrt(n_embd / n_heads). Embeddings
  are scaled by sqrt(n_embd); final logits soft-capped only if `final_logit_softcapping` is
  given. Gemma's RMSNorm "1 + w" is already folded into the stored norm weights.
- llama/qwen2/qwen3 ignore sliding-window keys (as llama.cpp does) and scale attention by
  1/sqrt(head_dim).

Float constants derived here (attention and embedding scales) are float32 values computed
as llama.cpp computes them (`1.0f / sqrtf(float(n))`, `sqrtf(float(n))`), held as Python
floats that are exactly those float32 values.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

import numpy as np

from exactserve.reference.quants import SUPPORTED_TYPES, supported_type_names
from exactserve.runtime.errors import GGUFError, UnsupportedError
from exactserve.runtime.gguf_file import GGUFFile


class Key:
    """GGUF metadata keys; "{arch}" stands for the value of `general.architecture`."""

    ARCHITECTURE = "general.architecture"
    NAME = "general.name"
    FILE_TYPE = "general.file_type"
    VOCAB_SIZE = "{arch}.vocab_size"
    CONTEXT_LENGTH = "{arch}.context_length"
    EMBEDDING_LENGTH = "{arch}.embedding_length"
    BLOCK_COUNT = "{arch}.block_count"
    FEED_FORWARD_LENGTH = "{arch}.feed_forward_length"
    FINAL_LOGIT_SOFTCAPPING = "{arch}.final_logit_softcapping"
    HEAD_COUNT = "{arch}.attention.head_count"
    HEAD_COUNT_KV = "{arch}.attention.head_count_kv"
    KEY_LENGTH = "{arch}.attention.key_length"
    VALUE_LENGTH = "{arch}.attention.value_length"
    RMS_EPS = "{arch}.attention.layer_norm_rms_epsilon"
    SLIDING_WINDOW = "{arch}.attention.sliding_window"
    SLIDING_WINDOW_PATTERN = "{arch}.attention.sliding_window_pattern"
    ROPE_DIMENSION_COUNT = "{arch}.rope.dimension_count"
    ROPE_FREQ_BASE = "{arch}.rope.freq_base"
    ROPE_FREQ_BASE_SWA = "{arch}.rope.freq_base_swa"
    ROPE_SCALING_TYPE = "{arch}.rope.scaling.type"
    ROPE_SCALING_FACTOR = "{arch}.rope.scaling.factor"
    ROPE_SCALE_LINEAR = "{arch}.rope.scale_linear"  # older name of the scaling factor
    ROPE_SCALING_ATTN_FACTOR = "{arch}.rope.scaling.attn_factor"
    ROPE_SCALING_ORIG_CTX_LEN = "{arch}.rope.scaling.original_context_length"
    YARN_EXT_FACTOR = "{arch}.rope.scaling.yarn_ext_factor"
    YARN_ATTN_FACTOR = "{arch}.rope.scaling.yarn_attn_factor"
    YARN_BETA_FAST = "{arch}.rope.scaling.yarn_beta_fast"
    YARN_BETA_SLOW = "{arch}.rope.scaling.yarn_beta_slow"
    YARN_LOG_MUL = "{arch}.rope.scaling.yarn_log_multiplier"
    TOKENIZER_MODEL = "tokenizer.ggml.model"
    TOKENIZER_PRE = "tokenizer.ggml.pre"
    TOKENS = "tokenizer.ggml.tokens"
    BOS_ID = "tokenizer.ggml.bos_token_id"
    EOS_ID = "tokenizer.ggml.eos_token_id"
    CHAT_TEMPLATE = "tokenizer.chat_template"


class RopeLayout(enum.Enum):
    """Which elements RoPE rotates together (llama.cpp LLAMA_ROPE_TYPE_NORM / _NEOX)."""

    NORMAL = "normal"  # pairs (2i, 2i + 1)
    NEOX = "neox"  # pairs (i, i + n_rot / 2)


@dataclass(frozen=True)
class ArchTraits:
    """What an architecture's graph does beyond what its metadata says."""

    rope_layout: RopeLayout
    activation: str  # "silu" (SwiGLU) or "gelu_tanh" (GeGLU)
    has_qk_norm: bool  # RMSNorm on each head of Q and K before RoPE
    has_post_norms: bool  # RMSNorm after attention and after the FFN (before the residual add)
    scales_embeddings: bool  # token embeddings multiplied by sqrt(n_embd)
    uses_sliding_window: bool
    default_swa_period: int = 0


ARCHITECTURES: dict[str, ArchTraits] = {
    "llama": ArchTraits(RopeLayout.NORMAL, "silu", False, False, False, False),
    "qwen2": ArchTraits(RopeLayout.NEOX, "silu", False, False, False, False),
    "qwen3": ArchTraits(RopeLayout.NEOX, "silu", True, False, False, False),
    "gemma3": ArchTraits(RopeLayout.NEOX, "gelu_tanh", True, True, True, True, 6),
}


@dataclass(frozen=True)
class YarnConfig:
    """YaRN parameters as stored (llama.cpp defaults when absent); derivation is RoPE's job."""

    ext_factor: float | None  # None: llama.cpp uses 1.0 for YaRN scaling
    attn_factor: float
    beta_fast: float
    beta_slow: float
    log_multiplier: float


@dataclass(frozen=True)
class RopeConfig:
    """Rotary position embedding settings of the global (full-attention) layers and local ones."""

    layout: RopeLayout
    dimension_count: int  # n_rot: leading elements of each head that are rotated
    freq_base: float
    freq_scale: float  # positions are multiplied by this (1 / scaling factor)
    scaling_type: str  # "none", "linear", "yarn" or "longrope"
    scaling_factor: float | None
    original_context_length: int
    attn_factor: float  # `rope.scaling.attn_factor`, multiplies YaRN's attention factor
    yarn: YarnConfig | None  # set when scaling_type is "yarn"
    has_freq_factors: bool  # a `rope_freqs.weight` tensor divides the frequencies (llama3)
    freq_base_swa: float | None  # sliding-window layers' base; None without such layers
    freq_scale_swa: float  # sliding-window layers' frequency scale (always 1 in llama.cpp)


@dataclass(frozen=True)
class VocabConfig:
    """Summary of the tokenizer metadata (the tokenizer itself reads the full vocabulary)."""

    model: str | None  # tokenizer.ggml.model: "llama" (SentencePiece), "gpt2" (BPE), ...
    pre: str | None  # pre-tokenizer name
    n_tokens: int
    bos_id: int | None
    eos_id: int | None
    has_chat_template: bool


@dataclass(frozen=True)
class ModelConfig:
    """Everything the forward pass needs to know about a model's shape and arithmetic."""

    arch: str
    name: str | None
    n_layers: int
    n_embd: int
    n_heads: int
    n_kv_heads: int
    head_dim: int  # key/query head size (`attention.key_length`)
    head_dim_v: int  # value head size (`attention.value_length`)
    n_ff: int
    n_vocab: int
    context_length: int
    norm_eps: float
    rope: RopeConfig
    sliding_window: int | None  # window of the local layers; None: every layer is global
    swa_layers: tuple[bool, ...]  # per layer: True = sliding-window (local) attention
    attention_scale: float  # multiplies Q.K (float32 value)
    attn_logit_softcap: float | None
    final_logit_softcap: float | None
    embedding_scale: float | None  # multiplies token embeddings (float32 value)
    tied_embeddings: bool  # no output.weight: logits use token_embd.weight
    has_qkv_bias: bool
    traits: ArchTraits
    vocab: VocabConfig

    @property
    def has_qk_norm(self) -> bool:
        return self.traits.has_qk_norm

    @property
    def has_post_norms(self) -> bool:
        return self.traits.has_post_norms


class _Metadata:
    """Typed access to a file's metadata with errors naming the file and the key."""

    _MISSING = object()

    def __init__(self, gguf_file: GGUFFile, arch: str) -> None:
        self.path, self.values, self.arch = gguf_file.path, gguf_file.metadata, arch

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        name = key.format(arch=self.arch)
        if name in self.values:
            return self.values[name]
        if default is self._MISSING:
            raise GGUFError(
                f"{self.path}: required metadata key '{name}' is missing; the file is "
                "incomplete or was written by a converter exactserve does not know"
            )
        return default

    def get_int(self, key: str, default: Any = _MISSING) -> Any:
        value = self.raw(key, default)
        if value is default and default is not self._MISSING:
            return value
        if isinstance(value, np.ndarray) and value.ndim == 1 and value.size:
            if np.issubdtype(value.dtype, np.integer) and (value == value[0]).all():
                return int(value[0])
            raise UnsupportedError(
                f"{self.path}: field '{key.format(arch=self.arch)}' differs between layers "
                f"({value.tolist()}); exactserve supports one value for all layers"
            )
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._wrong_type(key, value, "an integer")
        return value

    def get_float(self, key: str, default: Any = _MISSING) -> Any:
        value = self.raw(key, default)
        if value is default and default is not self._MISSING:
            return value
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self._wrong_type(key, value, "a number")
        return float(value)

    def get_str(self, key: str, default: Any = _MISSING) -> Any:
        value = self.raw(key, default)
        if value is not default and not isinstance(value, str):
            raise self._wrong_type(key, value, "a string")
        return value

    def _wrong_type(self, key: str, value: Any, expected: str) -> GGUFError:
        return GGUFError(
            f"{self.path}: field '{key.format(arch=self.arch)}' is {value!r} "
            f"({type(value).__name__}); expected {expected}"
        )


def _f32_sqrt(n: int) -> np.float32:
    return np.sqrt(np.float32(n))


def architecture_of(gguf_file: GGUFFile) -> str:
    """`general.architecture`, checked against the supported list."""
    arch = gguf_file.metadata.get(Key.ARCHITECTURE)
    if arch is None:
        raise GGUFError(
            f"{gguf_file.path}: required metadata key '{Key.ARCHITECTURE}' is missing; "
            "the file is incomplete or was written by a converter exactserve does not know"
        )
    if arch not in ARCHITECTURES:
        raise UnsupportedError(
            f"{gguf_file.path}: field '{Key.ARCHITECTURE}' is {arch!r}; supported "
            f"architectures: {', '.join(ARCHITECTURES)}"
        )
    return arch


def from_gguf(gguf_file: GGUFFile) -> ModelConfig:
    """The configuration of the model in `gguf_file` (metadata and tensor names only)."""
    arch = architecture_of(gguf_file)
    traits = ARCHITECTURES[arch]
    md = _Metadata(gguf_file, arch)
    n_layers = md.get_int(Key.BLOCK_COUNT)
    n_embd = md.get_int(Key.EMBEDDING_LENGTH)
    n_heads = md.get_int(Key.HEAD_COUNT)
    head_dim = md.get_int(Key.KEY_LENGTH, n_embd // n_heads)
    vocab = _vocab(gguf_file, md)
    sliding_window, swa_layers = _sliding_window(md, traits, n_layers)
    if arch == "gemma3" and n_layers == 62:
        attention_scale = np.float32(1) / _f32_sqrt(n_embd // n_heads)
    else:
        attention_scale = np.float32(1) / _f32_sqrt(head_dim)
    final_softcap = md.get_float(Key.FINAL_LOGIT_SOFTCAPPING, 0.0) if arch == "gemma3" else 0.0
    tensors = gguf_file.tensors
    return ModelConfig(
        arch=arch,
        name=md.get_str(Key.NAME, None),
        n_layers=n_layers,
        n_embd=n_embd,
        n_heads=n_heads,
        n_kv_heads=md.get_int(Key.HEAD_COUNT_KV, n_heads),
        head_dim=head_dim,
        head_dim_v=md.get_int(Key.VALUE_LENGTH, n_embd // n_heads),
        n_ff=md.get_int(Key.FEED_FORWARD_LENGTH),
        n_vocab=vocab.n_tokens,
        context_length=md.get_int(Key.CONTEXT_LENGTH),
        norm_eps=md.get_float(Key.RMS_EPS),
        rope=_rope(gguf_file, md, traits, head_dim, any(swa_layers)),
        sliding_window=sliding_window,
        swa_layers=swa_layers,
        attention_scale=float(attention_scale),
        attn_logit_softcap=None,
        final_logit_softcap=final_softcap or None,
        embedding_scale=float(_f32_sqrt(n_embd)) if traits.scales_embeddings else None,
        tied_embeddings="output.weight" not in tensors,
        has_qkv_bias="blk.0.attn_q.bias" in tensors,
        traits=traits,
        vocab=vocab,
    )


def _vocab(gguf_file: GGUFFile, md: _Metadata) -> VocabConfig:
    tokens = md.raw(Key.TOKENS, None)
    if tokens is not None:
        n_tokens = len(tokens)
    else:
        n_tokens = md.get_int(Key.VOCAB_SIZE, None)
        embd = gguf_file.tensors.get("token_embd.weight")
        if n_tokens is None and embd is not None and len(embd.shape) == 2:
            n_tokens = embd.shape[1]
        if n_tokens is None:
            md.raw(Key.TOKENS)  # raises: names the missing key
    return VocabConfig(
        model=md.get_str(Key.TOKENIZER_MODEL, None),
        pre=md.get_str(Key.TOKENIZER_PRE, None),
        n_tokens=n_tokens,
        bos_id=md.get_int(Key.BOS_ID, None),
        eos_id=md.get_int(Key.EOS_ID, None),
        has_chat_template=Key.CHAT_TEMPLATE in gguf_file.metadata,
    )


def _sliding_window(
    md: _Metadata, traits: ArchTraits, n_layers: int
) -> tuple[int | None, tuple[bool, ...]]:
    window = md.get_int(Key.SLIDING_WINDOW, 0) if traits.uses_sliding_window else 0
    if window <= 0:
        return None, (False,) * n_layers
    pattern = md.raw(Key.SLIDING_WINDOW_PATTERN, traits.default_swa_period)
    if isinstance(pattern, np.ndarray):
        if pattern.shape != (n_layers,):
            raise GGUFError(
                f"{md.path}: field '{Key.SLIDING_WINDOW_PATTERN.format(arch=md.arch)}' has "
                f"{pattern.size} entries; expected one per layer ({n_layers})"
            )
        return window, tuple(bool(x) for x in pattern)
    period = md.get_int(Key.SLIDING_WINDOW_PATTERN, traits.default_swa_period)
    # llama.cpp `set_swa_pattern(period)`: period 0 makes every layer local.
    return window, tuple(period == 0 or i % period < period - 1 for i in range(n_layers))


def _rope(
    gguf_file: GGUFFile, md: _Metadata, traits: ArchTraits, head_dim: int, has_swa: bool
) -> RopeConfig:
    factor = md.get_float(Key.ROPE_SCALING_FACTOR, None)
    if factor is None:
        factor = md.get_float(Key.ROPE_SCALE_LINEAR, None)
    factor = factor or None  # llama.cpp treats 0 as "not given"
    # llama.cpp's default type is "linear", a no-op without a factor: call that "none".
    scaling_type = md.get_str(Key.ROPE_SCALING_TYPE, "none" if factor is None else "linear")
    if scaling_type not in ("none", "linear", "yarn", "longrope"):
        raise UnsupportedError(
            f"{gguf_file.path}: field '{Key.ROPE_SCALING_TYPE.format(arch=md.arch)}' is "
            f"{scaling_type!r}; supported: none, linear, yarn, longrope"
        )
    # llama.cpp: freq_scale = 1.0f / factor, in float32
    no_scaling = factor is None or scaling_type == "none"
    freq_scale = np.float32(1) if no_scaling else np.float32(1) / np.float32(factor)
    dimension_count = md.get_int(Key.ROPE_DIMENSION_COUNT, head_dim)
    if md.arch == "llama" and dimension_count != head_dim:
        raise UnsupportedError(
            f"{gguf_file.path}: field '{Key.ROPE_DIMENSION_COUNT.format(arch=md.arch)}' is "
            f"{dimension_count}; llama models must rotate the whole head ({head_dim})"
        )
    yarn = None
    if scaling_type == "yarn":
        yarn = YarnConfig(
            ext_factor=md.get_float(Key.YARN_EXT_FACTOR, None),
            attn_factor=md.get_float(Key.YARN_ATTN_FACTOR, 1.0),
            beta_fast=md.get_float(Key.YARN_BETA_FAST, 32.0),
            beta_slow=md.get_float(Key.YARN_BETA_SLOW, 1.0),
            log_multiplier=md.get_float(Key.YARN_LOG_MUL, 0.0),
        )
    return RopeConfig(
        layout=traits.rope_layout,
        dimension_count=dimension_count,
        freq_base=md.get_float(Key.ROPE_FREQ_BASE, 10000.0),
        freq_scale=float(freq_scale),
        scaling_type=scaling_type,
        scaling_factor=factor,
        original_context_length=md.get_int(
            Key.ROPE_SCALING_ORIG_CTX_LEN, md.get_int(Key.CONTEXT_LENGTH)
        ),
        attn_factor=md.get_float(Key.ROPE_SCALING_ATTN_FACTOR, 1.0),
        yarn=yarn,
        has_freq_factors="rope_freqs.weight" in gguf_file.tensors,
        freq_base_swa=md.get_float(Key.ROPE_FREQ_BASE_SWA, 10000.0) if has_swa else None,
        freq_scale_swa=1.0,
    )


def validate_tensors(gguf_file: GGUFFile) -> None:
    """Raise UnsupportedError naming the first tensor whose type exactserve cannot compute."""
    for info in gguf_file.tensors.values():
        if info.ggml_type not in SUPPORTED_TYPES:
            raise UnsupportedError(
                f"{gguf_file.path}: tensor '{info.name}' has type {info.ggml_type.name}, "
                f"which exactserve does not support; supported types: "
                f"{supported_type_names()}. Re-quantise the model to one of them"
            )
