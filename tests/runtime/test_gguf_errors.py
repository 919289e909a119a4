"""Broken and unsupported GGUF files: one clear error naming the file, the field at fault
and what is supported. Offsets of the parts of a file come from gguf-py's GGUFReader."""

from __future__ import annotations

import re
import struct
from pathlib import Path
from typing import Any

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as T

from exactserve.runtime.config import from_gguf, validate_tensors
from exactserve.runtime.errors import GGUFError, UnsupportedError
from exactserve.runtime.gguf_file import open_gguf

SUPPORTED = (
    "F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS"
)


def write_model(
    path: Path,
    arch: str = "llama",
    drop: str | None = None,
    replace: dict[str, Any] | None = None,
    odd_type: T | None = None,
) -> Path:
    """A small, complete model file; `drop` leaves one key out, `replace` changes values."""
    writer = gguf.GGUFWriter(str(path), arch)
    keys: dict[str, Any] = {
        "general.name": "broken-on-purpose",
        f"{arch}.context_length": 128,
        f"{arch}.embedding_length": 64,
        f"{arch}.block_count": 1,
        f"{arch}.feed_forward_length": 128,
        f"{arch}.attention.head_count": 2,
        f"{arch}.attention.layer_norm_rms_epsilon": 1e-5,
        "tokenizer.ggml.model": "llama",
        "tokenizer.ggml.tokens": ["<unk>", "a", "b"],
    }
    keys.update(replace or {})
    for key, value in keys.items():
        if key == drop:
            continue
        if isinstance(value, list):
            writer.add_array(key, value)
        elif isinstance(value, np.ndarray):
            writer.add_array(key, value.tolist())
        elif isinstance(value, float):
            writer.add_float32(key, value)
        elif isinstance(value, int):
            writer.add_uint32(key, value)
        else:
            writer.add_string(key, value)
    writer.add_tensor("token_embd.weight", np.ones((3, 64), dtype=np.float32))
    if odd_type is None:
        writer.add_tensor("weird_tensor", np.arange(64, dtype=np.float32))
    else:
        n_bytes = gguf.GGML_QUANT_SIZES[odd_type][1]
        data = np.zeros((1, n_bytes), dtype=np.uint8)
        writer.add_tensor("weird_tensor", data, raw_dtype=odd_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.fixture
def model(tmp_path: Path) -> Path:
    return write_model(tmp_path / "model.gguf")


def truncate(path: Path, size: int) -> Path:
    data = path.read_bytes()
    assert size < len(data)
    path.write_bytes(data[:size])
    return path


def test_the_unbroken_file_loads(model: Path) -> None:
    with open_gguf(model) as f:
        validate_tensors(f)
        assert from_gguf(f).n_embd == 64


def test_truncated_header(model: Path) -> None:
    truncate(model, 12)  # inside the u64 tensor count
    with pytest.raises(GGUFError) as info:
        open_gguf(model)
    message = str(info.value)
    assert message.startswith(f"{model}: file is truncated while reading field 'n_tensors'")
    assert "re-download or re-convert it" in message


def test_truncated_metadata(model: Path) -> None:
    field = gguf.GGUFReader(model).fields["general.name"]
    value_start = field.offset + 8 + len("general.name") + 4
    truncate(model, value_start + 3)  # inside the string length of the value
    with pytest.raises(GGUFError) as info:
        open_gguf(model)
    message = str(info.value)
    assert message.startswith(
        f"{model}: file is truncated while reading metadata value of 'general.name'"
    )
    assert "re-download or re-convert it" in message


def test_truncated_tensor_info(model: Path) -> None:
    reader = gguf.GGUFReader(model)
    info_start = reader.tensors[1].field.offset
    assert reader.tensors[1].name == "weird_tensor"
    truncate(model, info_start + 8 + len("weird_tensor") + 2)  # inside n_dims
    with pytest.raises(GGUFError) as info:
        open_gguf(model)
    message = str(info.value)
    assert message.startswith(
        f"{model}: file is truncated while reading tensor info of 'weird_tensor'"
    )


def test_truncated_tensor_data(model: Path) -> None:
    tensor = gguf.GGUFReader(model).tensors[1]
    truncate(model, tensor.data_offset + 3)
    with pytest.raises(GGUFError) as info:
        open_gguf(model)
    start, end = tensor.data_offset, tensor.data_offset + 256
    assert str(info.value) == (
        f"{model}: file is truncated: tensor 'weird_tensor' needs bytes {start}..{end} but "
        f"the file has {start + 3}; re-download or re-convert it"
    )


def test_bad_magic(model: Path) -> None:
    data = bytearray(model.read_bytes())
    data[:4] = b"GGML"
    model.write_bytes(bytes(data))
    with pytest.raises(GGUFError) as info:
        open_gguf(model)
    assert str(info.value).startswith(
        f"{model}: not a GGUF file (magic bytes b'GGML', expected b'GGUF')"
    )


def test_unknown_tensor_type_id(model: Path) -> None:
    data = bytearray(model.read_bytes())
    name = b"weird_tensor"
    type_at = data.index(struct.pack("<Q", len(name)) + name) + 8 + len(name) + 4 + 8
    assert struct.unpack_from("<I", data, type_at)[0] == T.F32
    struct.pack_into("<I", data, type_at, 99)
    model.write_bytes(bytes(data))
    with pytest.raises(GGUFError) as info:
        open_gguf(model)
    assert str(info.value) == (
        f"{model}: tensor 'weird_tensor' has unknown ggml type id 99, perhaps from a newer "
        "llama.cpp; exactserve supports: F32, F16, BF16, Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, "
        "Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS"
    )


def test_unsupported_tensor_type(tmp_path: Path) -> None:
    path = write_model(tmp_path / "iq2.gguf", odd_type=T.IQ2_XXS)
    with open_gguf(path) as f, pytest.raises(UnsupportedError) as info:
        validate_tensors(f)
    assert str(info.value) == (
        f"{path}: tensor 'weird_tensor' has type IQ2_XXS, which exactserve does not support; "
        f"supported types: {SUPPORTED}. Re-quantise the model to one of them"
    )


def test_unsupported_architecture(tmp_path: Path) -> None:
    path = write_model(tmp_path / "gpt2.gguf", arch="gpt2")
    with open_gguf(path) as f, pytest.raises(UnsupportedError) as info:
        from_gguf(f)
    assert str(info.value) == (
        f"{path}: field 'general.architecture' is 'gpt2'; supported architectures: "
        "llama, qwen2, qwen3, gemma3"
    )


@pytest.mark.parametrize(
    "key", ["llama.embedding_length", "llama.block_count", "llama.context_length"]
)
def test_missing_required_key(tmp_path: Path, key: str) -> None:
    path = write_model(tmp_path / "missing.gguf", drop=key)
    with open_gguf(path) as f, pytest.raises(GGUFError) as info:
        from_gguf(f)
    assert str(info.value) == (
        f"{path}: required metadata key '{key}' is missing; the file is incomplete or was "
        "written by a converter exactserve does not know"
    )


def test_missing_architecture(tmp_path: Path) -> None:
    path = write_model(tmp_path / "noarch.gguf")
    data = path.read_bytes().replace(b"general.architecture", b"general.architecturX")
    path.write_bytes(data)
    with open_gguf(path) as f, pytest.raises(GGUFError) as info:
        from_gguf(f)
    assert str(info.value).startswith(
        f"{path}: required metadata key 'general.architecture' is missing"
    )


def test_wrongly_typed_key(tmp_path: Path) -> None:
    path = write_model(tmp_path / "typed.gguf", replace={"llama.block_count": "two"})
    with open_gguf(path) as f, pytest.raises(GGUFError) as info:
        from_gguf(f)
    assert str(info.value) == (
        f"{path}: field 'llama.block_count' is 'two' (str); expected an integer"
    )


def test_per_layer_values_that_differ(tmp_path: Path) -> None:
    path = write_model(
        tmp_path / "layers.gguf",
        replace={"llama.block_count": 2, "llama.attention.head_count": [2, 4]},
    )
    with open_gguf(path) as f, pytest.raises(UnsupportedError) as info:
        from_gguf(f)
    assert str(info.value) == (
        f"{path}: field 'llama.attention.head_count' differs between layers ([2, 4]); "
        "exactserve supports one value for all layers"
    )


def test_unknown_rope_scaling(tmp_path: Path) -> None:
    path = write_model(tmp_path / "rope.gguf", replace={"llama.rope.scaling.type": "dynamic"})
    with open_gguf(path) as f, pytest.raises(UnsupportedError) as info:
        from_gguf(f)
    assert str(info.value) == (
        f"{path}: field 'llama.rope.scaling.type' is 'dynamic'; supported: none, linear, "
        "yarn, longrope"
    )


def test_every_message_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "empty.gguf"
    path.write_bytes(b"")
    with pytest.raises(GGUFError, match=re.escape(str(path))):
        open_gguf(path)
    with pytest.raises(GGUFError, match=re.escape(str(tmp_path / "absent.gguf"))):
        open_gguf(tmp_path / "absent.gguf")
