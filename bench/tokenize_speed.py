"""Tokenization speed: exactserve's tokenizer next to llama.cpp's `llama-tokenize`.

Tokenizes 1 MiB of English text (llama.cpp's docs/*.md in name order, then the GPL-3
licence text repeated, cut to 2**20 bytes at a line end) with the qwen2 and llama-spm
vocabularies from llama.cpp's models/ (and the Gemma 3 demo vocabulary if installed), and
prints MB/s for both, plus whether the two produced identical ids.

Both sides tokenize the same way: add_special (BOS if the vocabulary wants it) and
parse_special, which is what llama-tokenize does by default. Times are CPU seconds (user +
system; ours from time.process_time, llama-tokenize's from the children's rusage), which
other load on the machine disturbs far less than wall time. llama-tokenize's time excludes
its start-up and vocabulary load: we time it on the text and on a one-line file and take
the difference (what remains includes printing the ids). "cold" is our first encode of the
text with empty caches; "warm" encodes it again (every word already cached).

    python bench/tokenize_speed.py [--llama-tokenize PATH] [--repeats N]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from exactserve.runtime.assets import cache_dir, demo_model_path, llama_cpp_dir
from exactserve.runtime.tokenizer import Tokenizer

TEXT_BYTES = 1 << 20
GPL = Path("/usr/share/common-licenses/GPL-3")
DEFAULT_LLAMA_TOKENIZE = cache_dir() / "llama.cpp-build" / "bin" / "llama-tokenize"


def build_text() -> str:
    parts = [p.read_text(errors="replace") for p in sorted((llama_cpp_dir() / "docs").glob("*.md"))]
    licence = GPL.read_text() if GPL.exists() else ""
    text = "\n".join(parts)
    while len(text.encode()) < TEXT_BYTES and licence:
        text += "\n" + licence
    data = text.encode()[:TEXT_BYTES]
    data = data[: data.rfind(b"\n") + 1]
    return data.decode("utf-8", errors="ignore")


def time_ours(path: Path, text: str, repeats: int) -> tuple[float, float, float, list[int]]:
    """(load seconds, cold encode seconds, best warm encode seconds, ids)."""
    start = time.process_time()
    tok = Tokenizer.from_gguf(path)
    load = time.process_time() - start
    start = time.process_time()
    ids = tok.encode(text, add_special=True, parse_special=True)
    cold = time.process_time() - start
    warm = float("inf")
    for _ in range(repeats):
        start = time.process_time()
        tok.encode(text, add_special=True, parse_special=True)
        warm = min(warm, time.process_time() - start)
    return load, cold, warm, ids


def _run_llama(binary: Path, model: Path, text_file: Path) -> tuple[float, list[int]]:
    cmd = [str(binary), "-m", str(model), "-f", str(text_file), "--ids", "--log-disable"]
    cmd.append("--no-escape")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, json.loads(out.strip().splitlines()[-1])


def time_llama(
    binary: Path, model: Path, text: str, repeats: int
) -> tuple[float, list[int]] | None:
    """(best seconds for the text minus best seconds for a tiny text, ids)."""
    if not binary.exists():
        return None
    with tempfile.TemporaryDirectory() as tmp:
        big, tiny = Path(tmp) / "text.txt", Path(tmp) / "tiny.txt"
        big.write_bytes(text.encode())
        tiny.write_bytes(b"Hello\n")
        best_big = best_tiny = float("inf")
        ids: list[int] = []
        for _ in range(repeats):
            elapsed, ids = _run_llama(binary, model, big)
            best_big = min(best_big, elapsed)
            best_tiny = min(best_tiny, _run_llama(binary, model, tiny)[0])
    return max(best_big - best_tiny, 1e-9), ids


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--llama-tokenize", type=Path, default=DEFAULT_LLAMA_TOKENIZE)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    text = build_text()
    mb = len(text.encode()) / 1e6
    models = {
        "qwen2": llama_cpp_dir() / "models" / "ggml-vocab-qwen2.gguf",
        "llama-spm": llama_cpp_dir() / "models" / "ggml-vocab-llama-spm.gguf",
    }
    try:
        models["gemma3 (demo)"] = demo_model_path()
    except Exception:  # noqa: BLE001 - the demo model is optional here
        pass
    print(f"text: {mb:.3f} MB, {len(text)} characters")
    header = (
        f"{'vocab':<14} {'tokens':>8} {'load s':>7} {'ours cold MB/s':>15} "
        f"{'ours warm MB/s':>15} {'llama.cpp MB/s':>15}  identical"
    )
    print(header)
    print("-" * len(header))
    for name, path in models.items():
        load, cold, warm, ids = time_ours(path, text, args.repeats)
        llama = time_llama(args.llama_tokenize, path, text, args.repeats)
        llama_rate = f"{mb / llama[0]:15.2f}" if llama else f"{'n/a':>15}"
        same = "n/a" if llama is None else ("yes" if llama[1] == ids else "NO")
        print(
            f"{name:<14} {len(ids):>8} {load:7.2f} {mb / cold:15.2f} {mb / warm:15.2f} "
            f"{llama_rate}  {same}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
