"""Converted weights kept on disk, so a model loads by mapping them instead of converting.

Converting the demo model's 236 tensors into the CPU engine's int8 panels takes about a
second; mapping the converted arrays takes milliseconds. The cache holds, per model file,
one `.bin` (every array, 64-byte aligned) and one `.json` (what each tensor became: the
NamedTuple type and its fields, arrays as offset/dtype/shape), under
~/.cache/exactserve/weights (or $EXACTSERVE_CACHE/weights). Its key is the file's SHA-256,
the contract version, this format's version and the weight layout, so a changed model,
contract or layout never reads stale weights; the SHA-256 is remembered per (path, size,
mtime, inode) and recomputed when any of them changes. The mapped arrays are read-only.

    EXACTSERVE_WEIGHT_CACHE=0       never read or write the cache
    EXACTSERVE_WEIGHT_CACHE=FOLDER  keep it in FOLDER instead
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from exactserve.reference import CONTRACT_VERSION
from exactserve.reference.matmul import PreparedMatrix
from exactserve.reference.quants import IntegerWeights
from exactserve.runtime.cpu.matmul import PackedMatrix

CACHE_ENV = "EXACTSERVE_WEIGHT_CACHE"
FORMAT_VERSION = 1
ALIGN = 64
_TYPES = {t.__name__: t for t in (PackedMatrix, PreparedMatrix, IntegerWeights)}


OFF = ("0", "false", "no", "off")


def cache_root() -> Path:
    """$EXACTSERVE_WEIGHT_CACHE if it names a folder, else weights/ under $EXACTSERVE_CACHE
    (default ~/.cache/exactserve)."""
    chosen = os.environ.get(CACHE_ENV, "").strip()
    if chosen and chosen.lower() not in OFF + ("1", "true", "yes", "on"):
        return Path(chosen)
    root = os.environ.get("EXACTSERVE_CACHE") or Path.home() / ".cache" / "exactserve"
    return Path(root) / "weights"


def file_sha256(path: Path, root: Path | None = None) -> str:
    """The file's SHA-256, remembered by (path, size, mtime, inode) in root/hashes.json."""
    path = Path(path).resolve()
    st = path.stat()
    stamp = [st.st_size, st.st_mtime_ns, st.st_ino]
    index_path = (root or cache_root()) / "hashes.json"
    try:
        index = json.loads(index_path.read_text())
    except (OSError, ValueError):
        index = {}
    known = index.get(str(path))
    if known and known.get("stamp") == stamp:
        return known["sha256"]
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 24):
            digest.update(chunk)
    index[str(path)] = {"stamp": stamp, "sha256": digest.hexdigest()}
    _write_atomic(index_path, json.dumps(index, indent=1).encode())
    return digest.hexdigest()


class WeightCache:
    """The converted tensors of one model file for one weight layout: `get` a tensor the
    cache holds, `put` one it does not; `save` writes what was put, once all were."""

    def __init__(self, key: str, root: Path) -> None:
        self.key = key
        self.root = root
        self.loaded: dict[str, Any] = {}
        self.produced: dict[str, Any] = {}

    @classmethod
    def open(cls, model_path: Path, layout: str) -> WeightCache | None:
        """The cache for `model_path` in `layout` (None when $EXACTSERVE_WEIGHT_CACHE=0 or
        the cache folder cannot be used). A cache on disk is mapped now."""
        if os.environ.get(CACHE_ENV, "").strip().lower() in OFF:
            return None
        root = cache_root()
        try:
            root.mkdir(parents=True, exist_ok=True)
            sha = file_sha256(model_path, root)
        except OSError:
            return None
        cache = cls(f"{sha[:32]}-c{CONTRACT_VERSION}-f{FORMAT_VERSION}-{layout}", root)
        cache.loaded = cache._read()
        return cache

    @property
    def is_complete(self) -> bool:
        return bool(self.loaded)

    def get(self, name: str) -> Any | None:
        return self.loaded.get(name)

    def put(self, name: str, value: Any) -> Any:
        self.produced[name] = value
        return value

    def save(self) -> Path | None:
        """Write the tensors put since `open` (if any, and none was read); returns the data
        file, or None when nothing was written."""
        if self.loaded or not self.produced:
            return None
        data_path = self.root / f"{self.key}.bin"
        tmp = data_path.with_name(f".{data_path.name}.{os.getpid()}.tmp")
        index, offset = {}, 0
        try:
            with tmp.open("wb") as f:  # streamed: no second copy of the weights in memory
                for name, value in self.produced.items():
                    entry, arrays = _encode(value, offset)
                    index[name] = entry
                    for array in arrays:
                        f.write(b"\0" * (-offset % ALIGN))
                        offset += -offset % ALIGN
                        f.write(memoryview(np.ascontiguousarray(array)).cast("B"))
                        offset += array.nbytes
            os.replace(tmp, data_path)
            meta = {"size": offset, "tensors": index}
            _write_atomic(self.root / f"{self.key}.json", json.dumps(meta).encode())
        except OSError:
            tmp.unlink(missing_ok=True)
            return None
        return data_path

    def _read(self) -> dict[str, Any]:
        meta_path, data_path = self.root / f"{self.key}.json", self.root / f"{self.key}.bin"
        try:
            meta = json.loads(meta_path.read_text())
            if data_path.stat().st_size != meta["size"]:
                return {}
            data = np.memmap(data_path, dtype=np.uint8, mode="r")
            return {name: _decode(entry, data) for name, entry in meta["tensors"].items()}
        except (OSError, ValueError, KeyError, TypeError):
            return {}  # absent or unreadable: convert again and rewrite it


def _encode(value: Any, offset: int) -> tuple[dict, list[np.ndarray]]:
    """(JSON entry, arrays in the order their bytes follow `offset`)."""
    arrays: list[np.ndarray] = []

    def array_entry(a: np.ndarray) -> dict:
        nonlocal offset
        offset += -offset % ALIGN
        entry = {"offset": offset, "dtype": a.dtype.str, "shape": list(a.shape)}
        offset += a.nbytes
        arrays.append(a)
        return entry

    if isinstance(value, np.ndarray):
        return {"array": array_entry(value)}, arrays
    fields = {}
    for field, item in zip(value._fields, value, strict=True):
        fields[field] = {"array": array_entry(item)} if isinstance(item, np.ndarray) else item
    return {"type": type(value).__name__, "fields": fields}, arrays


def _decode(entry: dict, data: np.memmap) -> Any:
    def array(spec: dict) -> np.ndarray:
        dtype = np.dtype(spec["dtype"])
        count = int(np.prod(spec["shape"], dtype=np.int64))
        flat = data[spec["offset"] : spec["offset"] + count * dtype.itemsize]
        return flat.view(dtype).reshape(spec["shape"])

    if "array" in entry:
        return array(entry["array"])
    fields = {
        k: array(v["array"]) if isinstance(v, dict) else v for k, v in entry["fields"].items()
    }
    return _TYPES[entry["type"]](**fields)


def _write_atomic(path: Path, payload: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_bytes(payload)
    os.replace(tmp, path)
