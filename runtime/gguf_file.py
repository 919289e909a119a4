"""GGUF file reading: header, metadata and tensor directory, with tensor data memory-mapped.

Format (little-endian; https://github.com/ggml-org/ggml/blob/master/docs/gguf.md):

    magic "GGUF" | version u32 | n_tensors u64 | n_kv u64
    n_kv x  (key: string, value_type: u32, value)
    n_tensors x (name: string, n_dims: u32, ne: u64[n_dims], ggml_type: u32, offset: u64)
    padding to `general.alignment` (default 32) | tensor data

    string = length u64 | UTF-8 bytes;  array = elem_type u32 | count u64 | elements

Nothing but the header and metadata is read eagerly; `GGUFFile.raw` returns zero-copy
views of the memory map, so opening a multi-GB model costs no RAM for its tensors.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

from exactserve.reference.quants import supported_type_names
from exactserve.runtime.errors import GGUFError

GGUF_MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)
DEFAULT_ALIGNMENT = 32

# GGUF value type id -> (struct format, numpy dtype) for fixed-size scalars.
_SCALARS: dict[int, tuple[str, np.dtype]] = {
    0: ("<B", np.dtype("<u1")),
    1: ("<b", np.dtype("<i1")),
    2: ("<H", np.dtype("<u2")),
    3: ("<h", np.dtype("<i2")),
    4: ("<I", np.dtype("<u4")),
    5: ("<i", np.dtype("<i4")),
    6: ("<f", np.dtype("<f4")),
    7: ("<?", np.dtype("?")),
    10: ("<Q", np.dtype("<u8")),
    11: ("<q", np.dtype("<i8")),
    12: ("<d", np.dtype("<f8")),
}
_STRING, _ARRAY = 8, 9


@dataclass(frozen=True)
class TensorInfo:
    """One tensor's directory entry. `shape` is in ggml order: shape[0] (ne0) is contiguous."""

    name: str
    ggml_type: GGMLQuantizationType
    shape: tuple[int, ...]
    offset: int  # absolute byte offset in the file
    nbytes: int

    @property
    def n_elements(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64))


class _Cursor:
    """Bounds-checked little-endian reader over the mapped bytes."""

    def __init__(self, buf: memoryview, path: Path) -> None:
        self.buf, self.pos, self.path = buf, 0, path
        self.what = "header"

    def need(self, n: int) -> None:
        if n < 0 or self.pos + n > len(self.buf):
            raise GGUFError(
                f"{self.path}: file is truncated while reading {self.what} at byte {self.pos} "
                f"(needs {n} more bytes, file has {len(self.buf)}); re-download or re-convert it"
            )

    def scalar(self, fmt: str) -> Any:
        size = struct.calcsize(fmt)
        self.need(size)
        (value,) = struct.unpack_from(fmt, self.buf, self.pos)
        self.pos += size
        return value

    def string(self) -> str:
        n = self.scalar("<Q")
        self.need(n)
        raw = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            # llama.cpp keeps invalid bytes; vocabularies of byte-level models can hold them.
            return raw.decode("utf-8", errors="surrogateescape")

    def value(self, vtype: int) -> Any:
        if vtype in _SCALARS:
            value = self.scalar(_SCALARS[vtype][0])
            return bool(value) if vtype == 7 else value
        if vtype == _STRING:
            return self.string()
        if vtype == _ARRAY:
            etype = self.scalar("<I")
            count = self.scalar("<Q")
            if etype in _SCALARS:
                dtype = _SCALARS[etype][1]
                self.need(count * dtype.itemsize)
                arr = np.frombuffer(self.buf, dtype=dtype, count=count, offset=self.pos).copy()
                self.pos += count * dtype.itemsize
                return arr
            if etype == _STRING:
                return self._string_array(count)
            return [self.value(etype) for _ in range(count)]
        raise GGUFError(
            f"{self.path}: unknown metadata value type {vtype} in {self.what}; "
            f"known types are 0-12 (GGUF v3)"
        )

    def _string_array(self, count: int) -> list[str]:
        out: list[str] = []
        buf, pos, end = self.buf, self.pos, len(self.buf)
        unpack = struct.Struct("<Q").unpack_from
        for _ in range(count):
            if pos + 8 > end:
                self.pos = pos
                self.need(8)
            (n,) = unpack(buf, pos)
            pos += 8
            if pos + n > end:
                self.pos = pos
                self.need(n)
            raw = bytes(buf[pos : pos + n])
            pos += n
            try:
                out.append(raw.decode("utf-8"))
            except UnicodeDecodeError:
                out.append(raw.decode("utf-8", errors="surrogateescape"))
        self.pos = pos
        return out


class GGUFFile:
    """An open GGUF file. Owns the memory map; close it (or use `with`) to release it.

    `metadata` maps keys to Python values: strings -> str, integers -> int, floats -> float,
    bool -> bool, numeric arrays -> 1-D numpy arrays of the stored dtype, string arrays ->
    list[str], arrays of arrays -> list. `tensors` is in file order.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self._file = open(self.path, "rb")
        except OSError as exc:
            raise GGUFError(f"{self.path}: cannot open model file: {exc.strerror}") from exc
        try:
            size = self.path.stat().st_size
            if size == 0:
                raise GGUFError(f"{self.path}: file is empty; expected a GGUF model file")
            self._mmap = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
            self._parse(memoryview(self._mmap))
        except BaseException:
            self.close()
            raise

    def _parse(self, buf: memoryview) -> None:
        cur = _Cursor(buf, self.path)
        cur.need(4)
        magic = bytes(buf[:4])
        if magic != GGUF_MAGIC:
            raise GGUFError(
                f"{self.path}: not a GGUF file (magic bytes {magic!r}, expected b'GGUF'); "
                "convert the model to GGUF with llama.cpp's convert_hf_to_gguf.py"
            )
        cur.pos = 4
        cur.what = "field 'version'"
        self.version = cur.scalar("<I")
        if self.version not in SUPPORTED_VERSIONS:
            hint = " (the file may be big-endian)" if self.version > 0xFFFF else ""
            raise GGUFError(
                f"{self.path}: field 'version' is {self.version}{hint}; "
                f"supported GGUF versions are {', '.join(map(str, SUPPORTED_VERSIONS))}"
            )
        cur.what = "field 'n_tensors'"
        n_tensors = cur.scalar("<Q")
        cur.what = "field 'n_kv'"
        n_kv = cur.scalar("<Q")
        self.metadata: dict[str, Any] = {}
        for i in range(n_kv):
            cur.what = f"metadata entry {i} of {n_kv}"
            key = cur.string()
            cur.what = f"metadata value of '{key}'"
            self.metadata[key] = cur.value(cur.scalar("<I"))
        self.alignment = int(self.metadata.get("general.alignment", DEFAULT_ALIGNMENT))
        if self.alignment <= 0 or self.alignment & (self.alignment - 1):
            raise GGUFError(
                f"{self.path}: field 'general.alignment' is {self.alignment}; "
                "it must be a positive power of two"
            )
        infos = []
        for i in range(n_tensors):
            cur.what = f"tensor info {i} of {n_tensors}"
            name = cur.string()
            cur.what = f"tensor info of '{name}'"
            n_dims = cur.scalar("<I")
            if n_dims > 4:
                raise GGUFError(f"{self.path}: tensor '{name}' has {n_dims} dims; at most 4")
            shape = tuple(cur.scalar("<Q") for _ in range(n_dims))
            type_id = cur.scalar("<I")
            offset = cur.scalar("<Q")
            infos.append((name, shape, type_id, offset))
        data_start = -(-cur.pos // self.alignment) * self.alignment
        self.data_offset = data_start
        self.tensors: dict[str, TensorInfo] = {}
        for name, shape, type_id, offset in infos:
            self.tensors[name] = self._tensor_info(name, shape, type_id, data_start + offset)

    def _tensor_info(
        self, name: str, shape: tuple[int, ...], type_id: int, offset: int
    ) -> TensorInfo:
        try:
            ggml_type = GGMLQuantizationType(type_id)
        except ValueError:
            raise GGUFError(
                f"{self.path}: tensor '{name}' has unknown ggml type id {type_id}, perhaps "
                f"from a newer llama.cpp; exactserve supports: {supported_type_names()}"
            ) from None
        block, type_size = GGML_QUANT_SIZES[ggml_type]
        n = int(np.prod(shape, dtype=np.int64))
        if shape and shape[0] % block:
            raise GGUFError(
                f"{self.path}: tensor '{name}' of type {ggml_type.name} has row length "
                f"{shape[0]}, not a multiple of its block size {block}"
            )
        nbytes = n // block * type_size
        if offset + nbytes > len(self._mmap):
            raise GGUFError(
                f"{self.path}: file is truncated: tensor '{name}' needs bytes "
                f"{offset}..{offset + nbytes} but the file has {len(self._mmap)}; "
                "re-download or re-convert it"
            )
        return TensorInfo(name, ggml_type, shape, offset, nbytes)

    def raw(self, name: str) -> np.ndarray:
        """Zero-copy uint8 view of a tensor's bytes in the memory map."""
        info = self.tensors.get(name)
        if info is None:
            raise GGUFError(f"{self.path}: no tensor named '{name}'")
        return np.frombuffer(self._mmap, dtype=np.uint8, count=info.nbytes, offset=info.offset)

    @property
    def architecture(self) -> str | None:
        return self.metadata.get("general.architecture")

    def close(self) -> None:
        """Release the file. Views returned by `raw` must not be used afterwards."""
        mm = getattr(self, "_mmap", None)
        if mm is not None:
            try:
                mm.close()
            except BufferError:
                # Live numpy views still reference the map; it is freed when they die.
                pass
            self._mmap = None
        if getattr(self, "_file", None) is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> GGUFFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_gguf(path: str | Path) -> GGUFFile:
    """Open and parse a GGUF file; raises GGUFError with the file and field at fault."""
    return GGUFFile(path)
