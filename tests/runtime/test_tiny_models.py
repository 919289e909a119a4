"""The tiny-model writer: files reopen with our reader, and our reader, our config and
gguf-py's GGUFReader agree on them."""

from __future__ import annotations

import hashlib
from pathlib import Path

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as T

from exactserve.reference.quants import SUPPORTED_TYPES
from exactserve.runtime.config import from_gguf, validate_tensors
from exactserve.runtime.gguf_file import open_gguf
from exactserve.runtime.tiny_model import (
    DEFAULT_TEMPLATE,
    DEFAULT_VOCAB,
    WEIGHT_STD,
    template_path,
    tensor_plan,
    tiny_spec,
    vocab_path,
    write_tiny_model,
)

pytestmark = pytest.mark.llama_cpp_data

ARCH_QTYPES = [
    ("llama", T.Q8_0),
    ("qwen2", T.Q4_K),
    ("qwen3", T.F16),
    ("gemma3", T.Q4_0),
]


@pytest.mark.parametrize("arch,qtype", ARCH_QTYPES, ids=lambda x: getattr(x, "name", x))
def test_config_matches_the_spec(tiny_model, arch: str, qtype: T) -> None:
    spec = tiny_spec(arch, qtype)
    with open_gguf(tiny_model(arch, qtype)) as f:
        validate_tensors(f)
        config = from_gguf(f)
        dims = spec.dims
        assert config.arch == arch
        assert config.name == f"tiny-{arch}-{qtype.name}"
        assert (config.n_layers, config.n_embd, config.n_ff) == (2, dims.n_embd, dims.n_ff)
        assert (config.n_heads, config.n_kv_heads) == (dims.n_heads, dims.n_kv_heads)
        assert config.head_dim == config.head_dim_v == dims.head_dim
        assert config.context_length == 512
        assert config.tied_embeddings == (arch != "llama")
        assert config.has_qkv_bias == (arch == "qwen2")
        assert config.has_qk_norm == (arch in ("qwen3", "gemma3"))
        assert config.has_post_norms == (arch == "gemma3")
        assert config.rope.dimension_count == dims.head_dim
        assert config.vocab.has_chat_template
        assert config.swa_layers == ((True, False) if arch == "gemma3" else (False, False))
        assert config.sliding_window == (8 if arch == "gemma3" else None)
        vocab = open_gguf(vocab_path(DEFAULT_VOCAB[arch])).metadata
        assert config.n_vocab == len(vocab["tokenizer.ggml.tokens"])
        assert config.vocab.model == vocab["tokenizer.ggml.model"]
        assert config.vocab.bos_id == vocab["tokenizer.ggml.bos_token_id"]
        assert config.vocab.eos_id == vocab["tokenizer.ggml.eos_token_id"]
        names = [(name, info.shape, info.ggml_type) for name, info in f.tensors.items()]
        assert names == tensor_plan(spec)


@pytest.mark.parametrize("arch", ["llama", "qwen2", "qwen3", "gemma3"])
def test_vocabulary_and_template_are_copied_exactly(tiny_model, arch: str) -> None:
    with open_gguf(tiny_model(arch)) as f, open_gguf(vocab_path(DEFAULT_VOCAB[arch])) as v:
        ours = {k: x for k, x in f.metadata.items() if k.startswith("tokenizer.")}
        theirs = {k: x for k, x in v.metadata.items() if k.startswith("tokenizer.")}
        template = ours.pop("tokenizer.chat_template")
        theirs.pop("tokenizer.chat_template", None)
        assert template == template_path(DEFAULT_TEMPLATE[arch]).read_text()
        assert sorted(ours) == sorted(theirs)
        for key, value in theirs.items():
            if isinstance(value, np.ndarray):
                assert ours[key].dtype == value.dtype, key
                np.testing.assert_array_equal(ours[key], value)
            else:
                assert ours[key] == value, key


def _gguf_reader_value(field: gguf.ReaderField):
    value = field.contents()
    return value.tolist() if isinstance(value, np.ndarray) else value


@pytest.mark.parametrize(
    "arch,qtype", [("gemma3", T.Q5_K), ("llama", T.Q5_1)], ids=["gemma3-Q5_K", "llama-Q5_1"]
)
def test_gguf_reader_agrees(tiny_model, arch: str, qtype: T) -> None:
    path = tiny_model(arch, qtype, rope_freqs=arch == "llama")
    reader = gguf.GGUFReader(path)
    with open_gguf(path) as f:
        fields = {k: x for k, x in reader.fields.items() if not k.startswith("GGUF.")}
        assert list(fields) == list(f.metadata)
        for key, field in fields.items():
            ours = f.metadata[key]
            ours = ours.tolist() if isinstance(ours, np.ndarray) else ours
            assert ours == _gguf_reader_value(field), key
        assert [t.name for t in reader.tensors] == list(f.tensors)
        for t in reader.tensors:
            info = f.tensors[t.name]
            assert info.ggml_type == t.tensor_type
            assert info.shape == tuple(int(n) for n in t.shape)
            assert info.offset == t.data_offset and info.nbytes == t.n_bytes
        config = from_gguf(f)
        arch_key = reader.fields["general.architecture"].contents()
        assert config.arch == arch_key == arch
        assert config.n_embd == reader.fields[f"{arch}.embedding_length"].contents()
        assert config.n_layers == reader.fields[f"{arch}.block_count"].contents()
        assert config.n_heads == reader.fields[f"{arch}.attention.head_count"].contents()
        assert config.n_kv_heads == reader.fields[f"{arch}.attention.head_count_kv"].contents()
        assert config.n_vocab == len(reader.fields["tokenizer.ggml.tokens"].data)
        assert config.rope.freq_base == reader.fields[f"{arch}.rope.freq_base"].contents()
        assert config.rope.has_freq_factors == (arch == "llama")


@pytest.mark.parametrize("qtype", SUPPORTED_TYPES, ids=lambda t: t.name)
def test_every_type_gives_sane_finite_weights(tiny_model, qtype: T) -> None:
    with open_gguf(tiny_model("gemma3", qtype)) as f:
        validate_tensors(f)
        from_gguf(f)
        matrix = f.tensors["blk.0.ffn_down.weight"]
        assert matrix.ggml_type == qtype
        rows = matrix.n_elements // matrix.shape[0]
        weights = gguf.quants.dequantize(f.raw(matrix.name).reshape(rows, -1), qtype)
        weights = np.asarray(weights, dtype=np.float32)
        assert np.isfinite(weights).all()
        assert 0.5 * WEIGHT_STD < weights.std() < 2 * WEIGHT_STD
        assert abs(weights.mean()) < 0.2 * WEIGHT_STD


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_deterministic_in_the_seed(tmp_path: Path) -> None:
    spec = tiny_spec("gemma3", T.Q4_K, seed=3)
    first = write_tiny_model(tmp_path / "a.gguf", spec)
    second = write_tiny_model(tmp_path / "b.gguf", spec)
    other = write_tiny_model(tmp_path / "c.gguf", tiny_spec("gemma3", T.Q4_K, seed=4))
    assert _sha256(first) == _sha256(second)
    assert _sha256(first) != _sha256(other)
    assert first.stat().st_size == other.stat().st_size


def test_overrides_and_fallbacks(tiny_model) -> None:
    path = tiny_model("qwen3", T.Q4_0, overrides={"ffn_down.weight": T.Q6_K}, tied=False)
    with open_gguf(path) as f:
        # ffn_down rows are n_ff = 128 weights: no whole Q6_K block, so Q8_0 is used.
        assert f.tensors["blk.1.ffn_down.weight"].ggml_type == T.Q8_0
        assert f.tensors["blk.1.ffn_up.weight"].ggml_type == T.Q4_0
        assert f.tensors["output.weight"].ggml_type == T.Q8_0
        assert not from_gguf(f).tied_embeddings
