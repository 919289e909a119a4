"""The tokenizer's copies of llama.cpp tables equal what llama.cpp's source says today:
the Unicode tables (src/unicode-data.cpp) and the pre-tokenizer regexes and names
(src/llama-vocab.cpp), re-extracted here from the C++ text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from exactserve.runtime.tokenizer import gen_unicode_data
from exactserve.runtime.tokenizer.pre_types import PATTERNS, PRE_TOKENIZERS

pytestmark = pytest.mark.llama_cpp_data


@pytest.fixture(scope="module")
def src() -> Path:
    from exactserve.runtime.assets import llama_cpp_dir

    return llama_cpp_dir() / "src"


def _c_string(body: str) -> str:
    """The value of a C++ string literal's body (the escapes llama-vocab.cpp uses)."""
    escapes = {"n": "\n", "r": "\r", "t": "\t", "\\": "\\", '"': '"', "'": "'"}
    return re.sub(r"\\(.)", lambda m: escapes[m.group(1)], body)


def test_unicode_tables_match_llama_cpp(src: Path) -> None:
    generated = gen_unicode_data.generate(src / "unicode-data.cpp")
    assert generated == gen_unicode_data.OUTPUT.read_text()


def test_pre_tokenizer_patterns_match_llama_cpp(src: Path) -> None:
    text = (src / "llama-vocab.cpp").read_text()
    start = text.index("struct llm_tokenizer_bpe : llm_tokenizer {")
    body = text[start : text.index("std::vector<std::string> regex_exprs;", start)]
    extracted = {}
    for block in re.finditer(
        r"((?:\s*case LLAMA_VOCAB_PRE_TYPE_\w+:)+|\s*default:)(.*?)break;", body, re.S
    ):
        names = re.findall(r"LLAMA_VOCAB_PRE_TYPE_(\w+)", block.group(1)) or ["DEFAULT"]
        code = "\n".join(
            line for line in block.group(2).split("\n") if not line.strip().startswith("//")
        )
        exprs = re.search(r"regex_exprs = \{(.*?)\};", code, re.S).group(1)
        regexes = tuple(_c_string(s) for s in re.findall(r'"((?:[^"\\]|\\.)*)"', exprs))
        for name in names:
            extracted[name] = (regexes, "byte_encode = false" not in code)
    assert extracted == PATTERNS


def test_pre_tokenizer_names_match_llama_cpp(src: Path) -> None:
    text = (src / "llama-vocab.cpp").read_text()
    start = text.index('} else if (tokenizer_pre == "default") {')
    body = text[start : text.index('"unknown pre-tokenizer type', start)]
    values = {"true": True, "false": False}
    extracted = {}
    for branch in re.finditer(r"if \((.*?)\) \{(.*?)\}", body, re.S):
        names = re.findall(r'tokenizer_pre == "([^"]+)"', branch.group(1))
        pre_type = re.search(r"pre_type = LLAMA_VOCAB_PRE_TYPE_(\w+);", branch.group(2)).group(1)
        overrides = {}
        for field, value in re.findall(r"([\w.]+) = (\w+);", branch.group(2)):
            if field == "special_bos_id" and value == "LLAMA_TOKEN_NULL":
                overrides["no_bos_id"] = True
            elif field not in ("pre_type", "normalizer_opts.lowercase"):
                overrides[field] = values[value]
        for name in names:
            extracted[name] = (pre_type, overrides)
    assert extracted == PRE_TOKENIZERS
