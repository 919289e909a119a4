"""Conformance with llama.cpp's own tokenizer tests (tests/test-tokenizer-0.cpp).

For every models/ggml-vocab-*.gguf with .inp/.out files, every case must tokenize to
exactly the ids llama.cpp's test expects. test-tokenizer-0 calls
common_tokenize(ctx, text, add_special=false, parse_special=false); it keeps cases in a
std::map, so of two cases with the same input only the last counts.

test-tokenizer-0 prints common_detokenize(ids) but compares nothing. We check that the
expected ids detokenize back to the input wherever llama.cpp's detokenizer is lossless:
not for WordPiece (it lowercases, strips accents and drops whitespace), and for vocabularies
with clean_spaces only when the input has none of the sequences that clean-up rewrites.
"""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

import pytest

from exactserve.runtime.tokenizer import Tokenizer

SEPARATOR = "\n__ggml_vocab_test__\n"
# llama_detokenize's clean_spaces rewrites " ?", " !", " .", " ,", " ' " and " 's"-style
# contractions.
CLEANED = re.compile(r" [?!.,']")


def _models_dir() -> Path:
    # The pinned sdist is fetched (and cached) on first use: missing data is an error,
    # never a skip, since every fresh machine can fetch it the same way.
    from exactserve.runtime.assets import llama_cpp_dir

    return llama_cpp_dir() / "models"


def read_cases(vocab_path: Path) -> dict[str, list[int]]:
    """read_tests() of test-tokenizer-0.cpp."""
    raw = Path(f"{vocab_path}.inp").read_bytes().decode("utf-8")
    inputs: list[str] = []
    pos = 0
    while pos < len(raw):
        nxt = raw.find(SEPARATOR, pos)
        if nxt < 0:
            inputs.append(raw[pos:])
            break
        inputs.append(raw[pos:nxt])
        pos = nxt + len(SEPARATOR)
    lines = Path(f"{vocab_path}.out").read_bytes().decode("utf-8").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # std::getline yields no line after the final newline
    assert len(inputs) == len(lines), f"{vocab_path.name}: .inp and .out disagree"
    cases: dict[str, list[int]] = {}
    for text, line in zip(inputs, lines, strict=True):
        cases[text] = [int(tok) for tok in line.strip().split(" ") if tok]
    return cases


def _params(*, round_trip: bool = False) -> list:
    """One param per (vocab, case). With round_trip, only the cases llama.cpp itself can
    decode back to the input: WordPiece normalises text, and clean_spaces vocabularies
    rewrite inputs that have a space before punctuation."""
    params = []
    for inp in sorted(_models_dir().glob("ggml-vocab-*.gguf.inp")):
        vocab = inp.with_suffix("")
        name = vocab.name.removeprefix("ggml-vocab-").removesuffix(".gguf")
        tok = _tokenizer(vocab) if round_trip else None
        for i, text in enumerate(read_cases(vocab)):
            if tok is not None and (
                tok.vocab.type == "WPM" or (tok.vocab.clean_spaces and CLEANED.search(text))
            ):
                continue
            params.append(pytest.param(vocab, text, id=f"{name}-{i}"))
    assert params, f"no tokenizer test cases found under {_models_dir()}"
    return params


@cache
def _tokenizer(path: Path) -> Tokenizer:
    return Tokenizer.from_gguf(path)


@cache
def _cases(path: Path) -> dict[str, list[int]]:
    return read_cases(path)


@pytest.mark.llama_cpp_data
@pytest.mark.parametrize(("vocab", "text"), _params())
def test_matches_llama_cpp(vocab: Path, text: str) -> None:
    expected = _cases(vocab)[text]
    tok = _tokenizer(vocab)
    assert tok.encode(text, add_special=False, parse_special=False) == expected


@pytest.mark.llama_cpp_data
@pytest.mark.parametrize(("vocab", "text"), _params(round_trip=True))
def test_detokenize_round_trip(vocab: Path, text: str) -> None:
    tok = _tokenizer(vocab)
    assert tok.decode(_cases(vocab)[text]) == text
