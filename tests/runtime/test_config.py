"""ModelConfig from GGUF metadata: llama.cpp's defaults and per-architecture rules."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as T

from exactserve.runtime.config import ARCHITECTURES, Key, RopeLayout, from_gguf
from exactserve.runtime.gguf_file import open_gguf


def f32(x: float) -> float:
    """x rounded once to float32, as a Python float."""
    return float(np.float32(x))


def write_metadata(path: Path, arch: str, values: dict[str, Any], tensors=("token_embd",)) -> Path:
    """A file with the given keys ("{arch}" expanded) and tiny placeholder tensors."""
    writer = gguf.GGUFWriter(str(path), arch)
    base = {
        "{arch}.context_length": 4096,
        "{arch}.embedding_length": 512,
        "{arch}.block_count": 4,
        "{arch}.feed_forward_length": 1024,
        "{arch}.attention.head_count": 8,
        "{arch}.attention.layer_norm_rms_epsilon": 1e-6,
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.tokens": ["a", "b", "c", "d"],
    }
    for key, value in {**base, **values}.items():
        key = key.format(arch=arch)
        if value is None:
            continue
        if isinstance(value, list):
            writer.add_array(key, value)
        elif isinstance(value, bool):
            writer.add_bool(key, value)
        elif isinstance(value, float):
            writer.add_float32(key, value)
        elif isinstance(value, int):
            writer.add_uint32(key, value)
        else:
            writer.add_string(key, value)
    for name in tensors:
        writer.add_tensor(f"{name}.weight", np.zeros(4, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def config_of(tmp_path: Path, arch: str, values: dict[str, Any] | None = None, **kw: Any):
    path = write_metadata(tmp_path / f"{arch}.gguf", arch, values or {}, **kw)
    with open_gguf(path) as f:
        return from_gguf(f)


def test_key_strings_are_ggufs_own() -> None:
    keys = gguf.Keys
    pairs = {
        Key.ARCHITECTURE: keys.General.ARCHITECTURE,
        Key.NAME: keys.General.NAME,
        Key.VOCAB_SIZE: keys.LLM.VOCAB_SIZE,
        Key.CONTEXT_LENGTH: keys.LLM.CONTEXT_LENGTH,
        Key.EMBEDDING_LENGTH: keys.LLM.EMBEDDING_LENGTH,
        Key.BLOCK_COUNT: keys.LLM.BLOCK_COUNT,
        Key.FEED_FORWARD_LENGTH: keys.LLM.FEED_FORWARD_LENGTH,
        Key.FINAL_LOGIT_SOFTCAPPING: keys.LLM.FINAL_LOGIT_SOFTCAPPING,
        Key.HEAD_COUNT: keys.Attention.HEAD_COUNT,
        Key.HEAD_COUNT_KV: keys.Attention.HEAD_COUNT_KV,
        Key.KEY_LENGTH: keys.Attention.KEY_LENGTH,
        Key.VALUE_LENGTH: keys.Attention.VALUE_LENGTH,
        Key.RMS_EPS: keys.Attention.LAYERNORM_RMS_EPS,
        Key.SLIDING_WINDOW: keys.Attention.SLIDING_WINDOW,
        Key.SLIDING_WINDOW_PATTERN: keys.Attention.SLIDING_WINDOW_PATTERN,
        Key.ROPE_DIMENSION_COUNT: keys.Rope.DIMENSION_COUNT,
        Key.ROPE_FREQ_BASE: keys.Rope.FREQ_BASE,
        Key.ROPE_FREQ_BASE_SWA: keys.Rope.FREQ_BASE_SWA,
        Key.ROPE_SCALING_TYPE: keys.Rope.SCALING_TYPE,
        Key.ROPE_SCALING_FACTOR: keys.Rope.SCALING_FACTOR,
        Key.ROPE_SCALING_ATTN_FACTOR: keys.Rope.SCALING_ATTN_FACTOR,
        Key.ROPE_SCALING_ORIG_CTX_LEN: keys.Rope.SCALING_ORIG_CTX_LEN,
        Key.YARN_EXT_FACTOR: keys.Rope.SCALING_YARN_EXT_FACTOR,
        Key.YARN_ATTN_FACTOR: keys.Rope.SCALING_YARN_ATTN_FACTOR,
        Key.YARN_BETA_FAST: keys.Rope.SCALING_YARN_BETA_FAST,
        Key.YARN_BETA_SLOW: keys.Rope.SCALING_YARN_BETA_SLOW,
        Key.YARN_LOG_MUL: keys.Rope.SCALING_YARN_LOG_MUL,
        Key.TOKENIZER_MODEL: keys.Tokenizer.MODEL,
        Key.TOKENIZER_PRE: keys.Tokenizer.PRE,
        Key.TOKENS: keys.Tokenizer.LIST,
        Key.BOS_ID: keys.Tokenizer.BOS_ID,
        Key.EOS_ID: keys.Tokenizer.EOS_ID,
        Key.CHAT_TEMPLATE: keys.Tokenizer.CHAT_TEMPLATE,
    }
    for ours, theirs in pairs.items():
        assert ours == theirs


def test_rope_layouts_follow_llama_cpp() -> None:
    layouts = {arch: traits.rope_layout for arch, traits in ARCHITECTURES.items()}
    assert layouts == {
        "llama": RopeLayout.NORMAL,
        "qwen2": RopeLayout.NEOX,
        "qwen3": RopeLayout.NEOX,
        "gemma3": RopeLayout.NEOX,
    }


def test_llama_defaults(tmp_path: Path) -> None:
    c = config_of(tmp_path, "llama", tensors=("token_embd", "output"))
    assert (c.n_layers, c.n_embd, c.n_ff, c.context_length) == (4, 512, 1024, 4096)
    assert (c.n_heads, c.n_kv_heads, c.head_dim, c.head_dim_v) == (8, 8, 64, 64)
    assert c.n_vocab == 4 and c.norm_eps == f32(1e-6)
    assert c.rope.dimension_count == 64 and c.rope.freq_base == 10000.0
    assert (c.rope.scaling_type, c.rope.freq_scale, c.rope.yarn) == ("none", 1.0, None)
    assert c.rope.original_context_length == 4096
    assert not c.rope.has_freq_factors and c.rope.freq_base_swa is None
    assert c.attention_scale == 0.125
    assert c.sliding_window is None and c.swa_layers == (False,) * 4
    assert c.embedding_scale is None and c.final_logit_softcap is None
    assert not c.tied_embeddings and not c.has_qkv_bias
    assert not c.has_qk_norm and not c.has_post_norms
    assert c.traits.activation == "silu"


def test_llama3_rope_factors_and_gqa(tmp_path: Path) -> None:
    values = {"{arch}.attention.head_count_kv": 2, "{arch}.rope.freq_base": 500000.0}
    c = config_of(tmp_path, "llama", values, tensors=("token_embd", "rope_freqs"))
    assert c.n_kv_heads == 2 and c.rope.freq_base == 500000.0
    assert c.rope.has_freq_factors and c.tied_embeddings


def test_linear_rope_scaling(tmp_path: Path) -> None:
    c = config_of(tmp_path, "qwen2", {"{arch}.rope.scaling.factor": 3.0})
    assert c.rope.scaling_type == "linear" and c.rope.scaling_factor == 3.0
    assert c.rope.freq_scale == f32(1 / 3)


def test_yarn_fields(tmp_path: Path) -> None:
    values = {
        "{arch}.rope.scaling.type": "yarn",
        "{arch}.rope.scaling.factor": 4.0,
        "{arch}.rope.scaling.original_context_length": 32768,
        "{arch}.rope.scaling.yarn_beta_fast": 16.0,
        "{arch}.rope.scaling.attn_factor": 0.5,
    }
    c = config_of(tmp_path, "qwen3", values)
    assert c.rope.scaling_type == "yarn" and c.rope.freq_scale == 0.25
    assert c.rope.original_context_length == 32768 and c.rope.attn_factor == 0.5
    yarn = c.rope.yarn
    assert yarn is not None
    assert (yarn.ext_factor, yarn.attn_factor, yarn.beta_fast, yarn.beta_slow) == (
        None,
        1.0,
        16.0,
        1.0,
    )
    assert yarn.log_multiplier == 0.0


def test_qwen_traits(tmp_path: Path) -> None:
    qwen2 = config_of(tmp_path, "qwen2", tensors=("token_embd", "blk.0.attn_q"))
    assert qwen2.has_qkv_bias is False  # a weight, not a bias
    assert qwen2.traits.activation == "silu" and not qwen2.has_qk_norm
    qwen3 = config_of(tmp_path, "qwen3", {"{arch}.attention.key_length": 128})
    assert qwen3.head_dim == 128 and qwen3.head_dim_v == 64
    assert qwen3.has_qk_norm and not qwen3.has_post_norms
    assert qwen3.attention_scale == f32(1 / math.sqrt(128))
    assert qwen3.rope.dimension_count == 128


def test_qwen2_bias_detection(tmp_path: Path) -> None:
    writer = gguf.GGUFWriter(str(tmp_path / "q.gguf"), "qwen2")
    for key, value in {
        "qwen2.context_length": 64,
        "qwen2.embedding_length": 64,
        "qwen2.block_count": 1,
        "qwen2.feed_forward_length": 64,
        "qwen2.attention.head_count": 2,
    }.items():
        writer.add_uint32(key, value)
    writer.add_float32("qwen2.attention.layer_norm_rms_epsilon", 1e-6)
    writer.add_array("tokenizer.ggml.tokens", ["a"])
    writer.add_tensor("blk.0.attn_q.bias", np.zeros(64, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with open_gguf(tmp_path / "q.gguf") as f:
        c = from_gguf(f)
    assert c.has_qkv_bias and c.vocab.model is None


GEMMA = {"{arch}.attention.key_length": 256, "{arch}.attention.value_length": 256}


@pytest.mark.parametrize(
    "values,window,pattern",
    [
        ({}, None, (False,) * 4),
        ({"{arch}.attention.sliding_window": 0}, None, (False,) * 4),
        ({"{arch}.attention.sliding_window": 512}, 512, (True,) * 4),
        ({"{arch}.attention.sliding_window": 64, "{arch}.block_count": 13}, 64,
         (True,) * 5 + (False,) + (True,) * 5 + (False, True)),
        ({"{arch}.attention.sliding_window": 64, "{arch}.attention.sliding_window_pattern": 2},
         64, (True, False, True, False)),
        ({"{arch}.attention.sliding_window": 64, "{arch}.attention.sliding_window_pattern": 0},
         64, (True,) * 4),
        ({"{arch}.attention.sliding_window": 64,
          "{arch}.attention.sliding_window_pattern": [False, True, True, False]},
         64, (False, True, True, False)),
    ],
)  # fmt: skip
def test_gemma3_sliding_window_pattern(tmp_path: Path, values, window, pattern) -> None:
    c = config_of(tmp_path, "gemma3", {**GEMMA, **values})
    assert c.sliding_window == window
    assert c.swa_layers == pattern
    assert c.rope.freq_base_swa == (10000.0 if any(pattern) else None)


def test_gemma3_fields(tmp_path: Path) -> None:
    values = {
        **GEMMA,
        "{arch}.attention.sliding_window": 64,
        "{arch}.rope.freq_base_swa": 20000.0,
        "{arch}.final_logit_softcapping": 30.0,
        "{arch}.rope.scaling.type": "linear",
        "{arch}.rope.scaling.factor": 8.0,
    }
    c = config_of(tmp_path, "gemma3", values)
    assert c.rope.freq_base_swa == 20000.0 and c.rope.freq_scale_swa == 1.0
    assert c.rope.freq_scale == 0.125
    assert c.final_logit_softcap == 30.0 and c.attn_logit_softcap is None
    assert c.attention_scale == 1 / 16
    assert c.embedding_scale == f32(math.sqrt(512))
    assert c.traits.activation == "gelu_tanh"
    assert c.has_qk_norm and c.has_post_norms and c.tied_embeddings


def test_gemma3_27b_attention_scale(tmp_path: Path) -> None:
    # llama.cpp: the 62-layer model scales by 1/sqrt(n_embd / n_head) (query_pre_attn_scalar)
    values = {**GEMMA, "{arch}.block_count": 62, "{arch}.embedding_length": 5376,
              "{arch}.attention.head_count": 32}  # fmt: skip
    c = config_of(tmp_path, "gemma3", values)
    assert c.attention_scale == f32(1 / math.sqrt(168))
    assert config_of(tmp_path, "gemma3", GEMMA).attention_scale == 1 / 16


def test_final_softcap_is_gemma_only(tmp_path: Path) -> None:
    c = config_of(tmp_path, "llama", {"{arch}.final_logit_softcapping": 30.0})
    assert c.final_logit_softcap is None


@pytest.mark.llama_cpp_data
def test_tiny_models_with_extra_metadata(tiny_model) -> None:
    path = tiny_model("llama", T.Q4_0, rope_freqs=True)
    with open_gguf(path) as f:
        c = from_gguf(f)
    assert c.rope.has_freq_factors and c.rope.freq_base == 500000.0
    assert c.rope.layout is RopeLayout.NORMAL


@pytest.mark.real_model
def test_demo_model_config() -> None:
    """Gemma 3 270M. Expected values were read with gguf.GGUFReader from the pinned file and
    from the model's published architecture (query_pre_attn_scalar 256, every 6th layer
    global, local rope base 10000)."""
    from exactserve.runtime.assets import demo_model_path

    with open_gguf(demo_model_path()) as f:
        c = from_gguf(f)
    assert (c.arch, c.name) == ("gemma3", "Gemma 3 270m")
    assert (c.n_layers, c.n_embd, c.n_ff, c.n_vocab) == (18, 640, 2048, 262144)
    assert (c.n_heads, c.n_kv_heads, c.head_dim, c.head_dim_v) == (4, 1, 256, 256)
    assert c.context_length == 32768 and c.norm_eps == f32(1e-6)
    assert c.rope.layout is RopeLayout.NEOX and c.rope.dimension_count == 256
    assert (c.rope.freq_base, c.rope.freq_base_swa, c.rope.freq_scale) == (1e6, 1e4, 1.0)
    assert c.sliding_window == 512
    assert [i for i, local in enumerate(c.swa_layers) if not local] == [5, 11, 17]
    assert c.attention_scale == 1 / 16
    assert c.embedding_scale == f32(math.sqrt(640))
    assert c.final_logit_softcap is None and c.tied_embeddings
    assert c.vocab.model == "llama" and c.vocab.pre == "default"
    assert (c.vocab.bos_id, c.vocab.eos_id, c.vocab.has_chat_template) == (2, 1, False)
