"""Write tests/golden/digests.json: the logits digests (runtime.conformance.logits_digest)
of the tiny models and the demo model, on the reference backend.

    python tests/golden/make_digests.py

Run it only when a change is meant to move bits; commit the new file in the same commit
and say in its message why the bits moved (and bump reference.CONTRACT_VERSION when the
contract itself changed). tests/golden/test_golden.py checks both backends against it.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gguf import GGMLQuantizationType as T

from exactserve.runtime.assets import demo_model_path, sha256_file
from exactserve.runtime.conformance import logits_digest
from exactserve.runtime.model import load_model
from exactserve.runtime.tiny_model import tiny_spec, write_tiny_model
from exactserve.runtime.tokenizer import Tokenizer

HERE = Path(__file__).resolve().parent
TINY = [("llama", T.Q8_0), ("qwen2", T.Q8_0), ("qwen3", T.Q4_K), ("gemma3", T.Q8_0)]


def tiny_path(arch: str, qtype: T, folder: Path) -> Path:
    spec = tiny_spec(arch, qtype)
    path = folder / spec.file_name
    if not path.exists():
        write_tiny_model(path, spec)
    return path


def digest_of(path: Path, backend: str = "reference") -> dict:
    model, tokenizer = load_model(path, backend=backend), Tokenizer.from_gguf(path)
    return logits_digest(model, tokenizer, path, sha256_file(path))


def main() -> int:
    import tempfile

    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for arch, qtype in TINY:
            out[f"tiny-{arch}-{qtype.name}"] = digest_of(tiny_path(arch, qtype, Path(tmp)))
    out["demo"] = digest_of(demo_model_path())
    (HERE / "digests.json").write_text(json.dumps(out, indent=2) + "\n")
    print(json.dumps({k: v["digest"] for k, v in out.items()}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
