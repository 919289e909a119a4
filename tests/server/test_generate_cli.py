"""`exactserve generate` as a user runs it: the success path (--chat, --seed, sampling flags,
--backend, --speculative) prints exactly what the runtime generates, and files a user can
get wrong (truncated, an unknown tensor type, an unsupported architecture, a template that
raises) exit with status 2 and one line naming the problem."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest
from gguf import GGMLQuantizationType as T

from exactserve.reference.sampling import SamplingParams
from exactserve.runtime.chat_template import ChatTemplate
from exactserve.runtime.generate import GenerationConfig, generate_text
from exactserve.runtime.gguf_file import open_gguf
from exactserve.runtime.model import load_model
from exactserve.runtime.prompt import encode_chat
from exactserve.runtime.tiny_model import tiny_spec, write_tiny_model
from exactserve.runtime.tokenizer import Tokenizer
from exactserve.server.cli import main

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "runtime"))
from test_gguf_errors import write_model  # noqa: E402

pytestmark = pytest.mark.llama_cpp_data

FLAGS = ["--temperature", "0.9", "--top-k", "20", "--top-p", "0.9", "--min-p", "0.01"]
FLAGS += ["--repeat-penalty", "1.1", "--seed", "42", "-n", "12"]


@pytest.fixture(scope="module")
def qwen(tiny_model):
    return tiny_model("qwen2", T.Q8_0)


def _expected_chat(path: Path, prompt: str, spec=None) -> str:
    tokenizer = Tokenizer.from_gguf(path)
    with open_gguf(path) as gguf:
        template = ChatTemplate.from_gguf(gguf, "qwen2")
    ids = encode_chat(template, tokenizer, [{"role": "user", "content": prompt}]).ids
    sampling = SamplingParams(
        temperature=0.9, top_k=20, top_p=0.9, min_p=0.01, repeat_penalty=1.1, seed=42
    )
    config = GenerationConfig(max_tokens=12, sampling=sampling, speculative=spec)
    return generate_text(load_model(path), tokenizer, ids, config)[0]


@pytest.mark.parametrize(
    "extra",
    [[], ["--backend", "triton"], ["--speculative", "ngram"], ["--threads", "3"]],
)
def test_chat_with_sampling_flags_prints_what_the_runtime_generates(qwen, capsys, extra):
    assert main(["generate", str(qwen), "-p", "Hello there", "--chat", *FLAGS, *extra]) == 0
    captured = capsys.readouterr()
    assert captured.out == _expected_chat(qwen, "Hello there") + "\n"
    assert "12 generated, finish: length" in captured.err
    if extra[:1] == ["--speculative"]:
        assert "speculative ngram:" in captured.err and "tokens per pass" in captured.err


def test_bad_speculative_options_exit_2(qwen, capsys):
    assert main(["generate", str(qwen), "-p", "x", "--speculative", "draft"]) == 2
    assert "--speculative draft needs --draft-model PATH" in capsys.readouterr().err
    assert main(["generate", str(qwen), "-p", "x", "--draft-model", str(qwen)]) == 2
    assert "--draft-model needs --speculative draft" in capsys.readouterr().err


def test_a_bad_thread_count_exits_2(qwen, capsys):
    with pytest.raises(SystemExit) as info:
        main(["generate", str(qwen), "-p", "x", "--threads", "0"])
    assert info.value.code == 2
    assert "argument --threads: must be at least 1, not 0" in capsys.readouterr().err


def test_a_truncated_file_exits_2(qwen, tmp_path, capsys):
    broken = tmp_path / "half.gguf"
    broken.write_bytes(qwen.read_bytes()[: qwen.stat().st_size // 2])
    assert main(["generate", str(broken), "-p", "x"]) == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith(f"exactserve generate: error: {broken}: ")
    assert "re-download or re-convert it" in last


def test_an_unknown_tensor_type_exits_2(tmp_path, capsys):
    path = write_model(tmp_path / "odd.gguf")
    data = bytearray(path.read_bytes())
    name = b"weird_tensor"
    type_at = data.index(struct.pack("<Q", len(name)) + name) + 8 + len(name) + 4 + 8
    struct.pack_into("<I", data, type_at, 99)
    path.write_bytes(bytes(data))
    assert main(["generate", str(path), "-p", "x"]) == 2
    assert "unknown ggml type id 99" in capsys.readouterr().err


def test_an_unsupported_architecture_exits_2(tmp_path, capsys):
    path = write_model(tmp_path / "gpt2.gguf", arch="gpt2")
    assert main(["generate", str(path), "-p", "x"]) == 2
    assert "supported architectures: llama, qwen2, qwen3, gemma3" in capsys.readouterr().err


def test_a_template_that_raises_exits_2(tmp_path, capsys):
    raising = "{{ raise_exception('this template accepts no user turns') }}"
    spec = tiny_spec("qwen2", T.Q8_0, extra_metadata=(("tokenizer.chat_template", raising),))
    path = write_tiny_model(tmp_path / spec.file_name, spec)
    assert main(["generate", str(path), "-p", "x", "--chat"]) == 2
    assert "this template accepts no user turns" in capsys.readouterr().err
