"""`exactserve tokenize` prints one token per line: id, tab, repr of the piece."""

from __future__ import annotations

import pytest

from exactserve.server.cli import main

pytestmark = pytest.mark.llama_cpp_data


@pytest.fixture(scope="module")
def spm_vocab() -> str:
    from exactserve.runtime.assets import llama_cpp_dir

    return str(llama_cpp_dir() / "models" / "ggml-vocab-llama-spm.gguf")


def test_prints_ids_and_pieces(spm_vocab: str, capsys: pytest.CaptureFixture[str]) -> None:
    # llama-spm: BOS is 1 ("<s>"); the space prefix is "▁" (29871); "🦙" has no token and
    # falls back to its UTF-8 bytes F0 9F A6 99, byte token ids 3 + byte (as in llama.cpp's
    # ggml-vocab-llama-spm.gguf.out for " this is 🦙.cpp").
    assert main(["tokenize", spm_vocab, "🦙"]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "1\t'<s>'",
        "29871\t' '",
        "243\tb'\\xf0'",
        "162\tb'\\x9f'",
        "169\tb'\\xa6'",
        "156\tb'\\x99'",
    ]


def test_flags(spm_vocab: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["tokenize", spm_vocab, "</s>", "--no-special", "--parse-special", "--ids"]) == 0
    assert capsys.readouterr().out.strip() == "[2]"
