"""The GGUF reader against gguf-py's writer and reader (llama.cpp's own Python package)."""

from __future__ import annotations

import numpy as np
import pytest
from gguf import GGMLQuantizationType, GGUFReader, GGUFWriter

from exactserve.runtime.errors import GGUFError
from exactserve.runtime.gguf_file import open_gguf


def _write(path, alignment: int | None = None) -> dict[str, np.ndarray]:
    writer = GGUFWriter(str(path), "llama")
    if alignment is not None:
        writer.data_alignment = alignment
        writer.add_uint32("general.alignment", alignment)
    writer.add_uint8("t.u8", 250)
    writer.add_int8("t.i8", -7)
    writer.add_uint16("t.u16", 65000)
    writer.add_int16("t.i16", -30000)
    writer.add_uint32("t.u32", 4_000_000_000)
    writer.add_int32("t.i32", -2_000_000_000)
    writer.add_float32("t.f32", 0.1)
    writer.add_uint64("t.u64", 2**63 + 5)
    writer.add_int64("t.i64", -(2**62))
    writer.add_float64("t.f64", 0.1)
    writer.add_bool("t.bool", True)
    writer.add_string("t.str", "héllo ▁wörld")
    writer.add_array("t.strs", ["a", "", "ß▁", "<0x0A>"])
    writer.add_array("t.ints", [1, -2, 3])
    writer.add_array("t.floats", [0.5, -1.25])
    rng = np.random.default_rng(0)
    tensors = {
        "a": rng.standard_normal((3, 5)).astype(np.float32),
        "b": rng.standard_normal((7,)).astype(np.float16),
        "c": rng.integers(0, 255, (2, 34), dtype=np.uint8),  # one 34-byte Q8_0 block per row
    }
    writer.add_tensor("a", tensors["a"])
    writer.add_tensor("b", tensors["b"])
    writer.add_tensor("c", tensors["c"], raw_dtype=GGMLQuantizationType.Q8_0)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return tensors


@pytest.mark.parametrize("alignment", [None, 64])
def test_metadata_and_tensors_round_trip(tmp_path, alignment):
    path = tmp_path / "t.gguf"
    tensors = _write(path, alignment)
    with open_gguf(path) as f:
        md = f.metadata
        assert md["general.architecture"] == "llama"
        assert (md["t.u8"], md["t.i8"], md["t.u16"], md["t.i16"]) == (250, -7, 65000, -30000)
        assert (md["t.u32"], md["t.i32"]) == (4_000_000_000, -2_000_000_000)
        assert md["t.f32"] == float(np.float32(0.1))
        assert (md["t.u64"], md["t.i64"], md["t.f64"]) == (2**63 + 5, -(2**62), 0.1)
        assert md["t.bool"] is True
        assert md["t.str"] == "héllo ▁wörld"
        assert md["t.strs"] == ["a", "", "ß▁", "<0x0A>"]
        assert md["t.ints"].tolist() == [1, -2, 3]
        assert md["t.floats"].tolist() == [0.5, -1.25]
        assert f.alignment == (alignment or 32)
        assert list(f.tensors) == ["a", "b", "c"]
        a, b, c = (f.tensors[n] for n in "abc")
        assert (a.shape, a.ggml_type) == ((5, 3), GGMLQuantizationType.F32)
        assert (b.shape, b.ggml_type) == ((7,), GGMLQuantizationType.F16)
        assert (c.shape, c.ggml_type, c.nbytes) == ((32, 2), GGMLQuantizationType.Q8_0, 68)
        assert f.raw("a").tobytes() == tensors["a"].tobytes()
        assert f.raw("b").tobytes() == tensors["b"].tobytes()
        assert f.raw("c").tobytes() == tensors["c"].tobytes()
        oracle = GGUFReader(path)
        for t in oracle.tensors:
            assert f.tensors[t.name].offset == t.data_offset
            assert f.raw(t.name).tobytes() == t.data.tobytes()


def test_raw_is_a_view_of_the_map_not_a_copy(tmp_path):
    path = tmp_path / "t.gguf"
    _write(path)
    with open_gguf(path) as f:
        view = f.raw("a")
        assert not view.flags.owndata and not view.flags.writeable


def test_unknown_tensor_name(tmp_path):
    path = tmp_path / "t.gguf"
    _write(path)
    with open_gguf(path) as f, pytest.raises(GGUFError, match=r"t\.gguf: no tensor named 'zz'"):
        f.raw("zz")


def test_missing_file_and_empty_file(tmp_path):
    with pytest.raises(GGUFError, match=r"nope\.gguf: cannot open model file"):
        open_gguf(tmp_path / "nope.gguf")
    (tmp_path / "empty.gguf").write_bytes(b"")
    with pytest.raises(GGUFError, match=r"empty\.gguf: file is empty"):
        open_gguf(tmp_path / "empty.gguf")


def test_unsupported_version(tmp_path):
    path = tmp_path / "t.gguf"
    _write(path)
    data = bytearray(path.read_bytes())
    data[4:8] = (1).to_bytes(4, "little")
    path.write_bytes(bytes(data))
    with pytest.raises(GGUFError, match=r"field 'version' is 1; supported GGUF versions are 2, 3"):
        open_gguf(path)
