"""The vocabulary as llama.cpp loads it (llama_vocab::impl::load in src/llama-vocab.cpp):
token texts, scores and attributes, the special token ids, the add/strip flags, the
end-of-generation set and the list of tokens the special-token partition looks for.

Defaults and overrides follow llama.cpp step by step; the places where we cannot follow
it exactly are said where they happen.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from exactserve.runtime.errors import GGUFError, UnsupportedError
from exactserve.runtime.tokenizer.pre_types import PRE_TOKENIZERS


class Key:
    """GGUF metadata keys the tokenizer reads (llama-arch.cpp LLM_KV_TOKENIZER_*)."""

    MODEL = "tokenizer.ggml.model"
    PRE = "tokenizer.ggml.pre"
    TOKENS = "tokenizer.ggml.tokens"
    TOKEN_TYPE = "tokenizer.ggml.token_type"
    SCORES = "tokenizer.ggml.scores"
    MERGES = "tokenizer.ggml.merges"
    ADD_BOS = "tokenizer.ggml.add_bos_token"
    ADD_EOS = "tokenizer.ggml.add_eos_token"
    ADD_SEP = "tokenizer.ggml.add_sep_token"
    ADD_PREFIX = "tokenizer.ggml.add_space_prefix"
    LOWERCASE = "tokenizer.ggml.normalizer.lowercase"
    STRIP_ACCENTS = "tokenizer.ggml.normalizer.strip_accents"
    NAME = "general.name"
    ARCH = "general.architecture"
    # Special ids, in llama.cpp's order; later keys overwrite earlier ones (the deprecated
    # prefix/suffix/middle keys come last, as in llama.cpp).
    SPECIAL_IDS = (
        ("bos", "tokenizer.ggml.bos_token_id"),
        ("eos", "tokenizer.ggml.eos_token_id"),
        ("eot", "tokenizer.ggml.eot_token_id"),
        ("eom", "tokenizer.ggml.eom_token_id"),
        ("unk", "tokenizer.ggml.unknown_token_id"),
        ("sep", "tokenizer.ggml.seperator_token_id"),
        ("pad", "tokenizer.ggml.padding_token_id"),
        ("mask", "tokenizer.ggml.mask_token_id"),
        ("fim_pre", "tokenizer.ggml.fim_pre_token_id"),
        ("fim_suf", "tokenizer.ggml.fim_suf_token_id"),
        ("fim_mid", "tokenizer.ggml.fim_mid_token_id"),
        ("fim_pad", "tokenizer.ggml.fim_pad_token_id"),
        ("fim_rep", "tokenizer.ggml.fim_rep_token_id"),
        ("fim_sep", "tokenizer.ggml.fim_sep_token_id"),
        ("fim_pre", "tokenizer.ggml.prefix_token_id"),
        ("fim_suf", "tokenizer.ggml.suffix_token_id"),
        ("fim_mid", "tokenizer.ggml.middle_token_id"),
    )


# llama_token_attr bits.
ATTR_UNDEFINED = 0
ATTR_UNKNOWN = 1 << 0
ATTR_UNUSED = 1 << 1
ATTR_NORMAL = 1 << 2
ATTR_CONTROL = 1 << 3
ATTR_USER_DEFINED = 1 << 4
ATTR_BYTE = 1 << 5
ATTR_LSTRIP = 1 << 7
ATTR_RSTRIP = 1 << 8
# llama_token_type (the GGUF token_type values) -> attribute.
_ATTR_OF_TYPE = np.array(
    [ATTR_UNDEFINED, ATTR_NORMAL, ATTR_UNKNOWN, ATTR_CONTROL, ATTR_USER_DEFINED, ATTR_UNUSED,
     ATTR_BYTE],
    dtype=np.int32,
)  # fmt: skip

# Texts llama.cpp recognises as special tokens when the ids are missing (load(), "auto-detect
# special tokens by text"); the first match fills the id and marks the token CONTROL.
_DETECT_BY_TEXT = {
    "eot": ("<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
            "<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>",
            "<end_of_utterance>"),
    "eom": ("<|eom_id|>",),
    "fim_pre": ("<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>",
                "▁<PRE>", "<|code_prefix|>", "<|prefix|>"),
    "fim_suf": ("<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>",
                "▁<SUF>", "<|code_suffix|>", "<|suffix|>"),
    "fim_mid": ("<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>",
                "▁<MID>", "<|code_middle|>", "<|middle|>"),
    "fim_pad": ("<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"),
    "fim_rep": ("<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"),
    "fim_sep": ("<|file_sep|>",),
}  # fmt: skip
_EOG_TEXTS = (
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
    "<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
    "<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>",
    "<｜end▁of▁sentence｜>", "[e~[",
)  # fmt: skip
_ALWAYS_RENDERED = ("<|channel|>", "<|message|>", "<|start|>", "<|constrain|>")

# Vocabulary type per tokenizer.ggml.model, and llama.cpp's default special ids for it.
_MODEL_TYPES = {"llama": "SPM", "gpt2": "BPE", "gemma4": "BPE", "bert": "WPM"}
_DEFAULT_IDS: dict[str, dict[str, int]] = {
    "SPM": {"bos": 1, "eos": 2, "unk": 0},
    "BPE": {"bos": 11, "eos": 11},
    "WPM": {"bos": 101, "unk": 100, "sep": 102, "pad": 0, "mask": 103},
    "gemma4": {},
}
_UNSUPPORTED_MODELS = {
    "t5": "UGM (T5-style unigram)",
    "rwkv": "RWKV",
    "plamo2": "PLaMo-2",
    "hybriddna": "hybrid DNA",
    "whitespace": "whitespace",
    "no_vocab": "no vocabulary",
    "none": "no vocabulary",
}


@dataclass(frozen=True)
class Vocab:
    """A loaded vocabulary. Containers are shared, never mutated after loading."""

    model: str  # tokenizer.ggml.model
    type: str  # "SPM", "BPE" or "WPM"
    pre_type: str  # llama.cpp pre-tokenizer type name, e.g. "QWEN2" ("DEFAULT" for SPM)
    tokens: list[str]
    token_to_id: dict[str, int]
    scores: np.ndarray  # float32[n]
    attrs: np.ndarray  # int32[n], llama_token_attr bits
    ids: dict[str, int | None]  # "bos", "eos", "eot", "unk", ... -> id or None
    eog_ids: frozenset[int]
    special_ids: tuple[int, ...]  # cache_special_tokens: longest text first
    merge_ranks: dict[str, int]  # "left right" -> rank (BPE only)
    add_space_prefix: bool
    add_bos: bool
    add_eos: bool
    add_sep: bool
    ignore_merges: bool
    clean_spaces: bool
    escape_whitespaces: bool
    lowercase: bool
    strip_accents: bool

    @property
    def num_tokens(self) -> int:
        return len(self.tokens)

    def attr(self, token_id: int) -> int:
        return int(self.attrs[token_id])

    def byte_token(self, byte: int) -> int | None:
        """llama_vocab::byte_to_token for SPM/WPM-style vocabularies: <0xXX>, else the
        byte itself as a one-character token."""
        found = self.token_to_id.get(f"<0x{byte:02X}>")
        if found is None and byte < 0x80:
            found = self.token_to_id.get(chr(byte))
        return found


def _get(metadata: Mapping[str, Any], key: str, kind: type | tuple[type, ...]) -> Any:
    value = metadata.get(key)
    if value is not None and not isinstance(value, kind):
        raise GGUFError(f"metadata field '{key}' has type {type(value).__name__}")
    return value


def _array(metadata: Mapping[str, Any], key: str, n: int, dtype: str) -> np.ndarray | None:
    value = metadata.get(key)
    if value is None:
        return None
    array = np.asarray(value)
    if array.ndim != 1 or array.size < n or not np.issubdtype(array.dtype, np.number):
        raise GGUFError(f"metadata field '{key}' must be a numeric array of at least {n} items")
    return array[:n].astype(dtype)


def load_vocab(metadata: Mapping[str, Any]) -> Vocab:
    """Build the vocabulary from GGUF metadata, as llama_vocab::impl::load does."""
    model = _get(metadata, Key.MODEL, str)
    if model is None:
        raise GGUFError(f"metadata has no '{Key.MODEL}'; the file carries no tokenizer")
    if model in _UNSUPPORTED_MODELS:
        raise UnsupportedError(
            f"tokenizer model '{model}' ({_UNSUPPORTED_MODELS[model]}) is not supported; "
            "supported: llama (SentencePiece), gpt2 and gemma4 (BPE), bert (WordPiece)"
        )
    if model not in _MODEL_TYPES:
        raise UnsupportedError(f"unknown tokenizer model '{model}' in '{Key.MODEL}'")
    vtype = _MODEL_TYPES[model]
    pre = _get(metadata, Key.PRE, str)
    flags = {
        "add_space_prefix": False, "add_bos": False, "add_eos": False, "add_sep": False,
        "ignore_merges": False, "clean_spaces": False, "escape_whitespaces": True,
    }  # fmt: skip
    ids: dict[str, int | None] = dict.fromkeys(dict(Key.SPECIAL_IDS))
    ids.update(_DEFAULT_IDS["gemma4" if model == "gemma4" else vtype])
    pre_type = "DEFAULT"
    if vtype == "BPE":
        pre = "gemma4" if model == "gemma4" else (pre or "default")
        if pre not in PRE_TOKENIZERS:
            raise UnsupportedError(
                f"unknown pre-tokenizer '{pre}' in '{Key.PRE}' (llama.cpp rejects it too)"
            )
        flags.update(add_space_prefix=False, escape_whitespaces=False, clean_spaces=True)
        pre_type, overrides = PRE_TOKENIZERS[pre]
        for name, value in overrides.items():
            if name == "no_bos_id":
                ids["bos"] = None
            else:
                flags[name] = value
    elif vtype == "SPM":
        flags.update(add_space_prefix=True, clean_spaces=False, add_bos=True, add_eos=False)
    else:
        flags.update(add_space_prefix=False, clean_spaces=True, add_bos=True, add_sep=True)
    if (value := _get(metadata, Key.ADD_PREFIX, bool)) is not None:
        flags["add_space_prefix"] = value

    tokens = metadata.get(Key.TOKENS)
    if not isinstance(tokens, list) or not all(isinstance(t, str) for t in tokens[:1]):
        raise GGUFError(f"metadata has no string array '{Key.TOKENS}' (the vocabulary)")
    n = len(tokens)
    if "" in tokens:
        tokens = [t if t else f"[EMPTY_{i}]" for i, t in enumerate(tokens)]
    token_to_id = dict(zip(tokens, range(n), strict=True))
    if len(token_to_id) != n:
        # llama.cpp asserts id_to_token.size() == token_to_id.size().
        raise GGUFError(f"'{Key.TOKENS}' holds duplicate token texts; llama.cpp rejects it")
    scores = _array(metadata, Key.SCORES, n, "float32")
    scores = np.zeros(n, dtype=np.float32) if scores is None else scores
    types = _array(metadata, Key.TOKEN_TYPE, n, "int64")
    if types is None:
        attrs = np.full(n, ATTR_NORMAL, dtype=np.int32)
    else:
        attrs = _ATTR_OF_TYPE[np.where((types >= 0) & (types <= 6), types, 0)]

    merge_ranks: dict[str, int] = {}
    if vtype == "BPE":
        merges = metadata.get(Key.MERGES)
        if not isinstance(merges, list):
            raise GGUFError(f"metadata has no string array '{Key.MERGES}' (BPE merges)")
        # llama.cpp emplaces (first, second) in order, so the first of duplicates wins.
        merge_ranks = dict(zip(reversed(merges), range(len(merges) - 1, -1, -1), strict=True))

    for name, key in Key.SPECIAL_IDS:
        if ids[name] is not None and ids[name] >= n:
            ids[name] = None
        value = _get(metadata, key, (int, np.integer))
        if value is not None and 0 <= value < n:
            ids[name] = value
    for name, key in (("add_bos", Key.ADD_BOS), ("add_eos", Key.ADD_EOS), ("add_sep", Key.ADD_SEP)):
        if (value := _get(metadata, key, bool)) is not None:
            flags[name] = value
    if pre_type == "GEMMA4":
        flags["add_bos"] = True  # llama.cpp's Gemma 4 workaround
    lowercase = _get(metadata, Key.LOWERCASE, bool)
    lowercase = True if lowercase is None else lowercase  # llama.cpp's normalizer default
    strip_accents = _get(metadata, Key.STRIP_ACCENTS, bool)
    strip_accents = lowercase if strip_accents is None else strip_accents

    attrs = attrs.copy()
    eog = _detect_specials(tokens, token_to_id, attrs, ids)
    special_ids = tuple(
        sorted(
            np.flatnonzero(attrs & (ATTR_CONTROL | ATTR_USER_DEFINED | ATTR_UNKNOWN)).tolist(),
            key=lambda i: -len(tokens[i].encode("utf-8", "surrogateescape")),
        )
    )
    _set_strip_attrs(metadata, token_to_id, attrs, special_ids)
    return Vocab(
        model=model, type=vtype, pre_type=pre_type, tokens=tokens, token_to_id=token_to_id,
        scores=scores, attrs=attrs, ids=ids, eog_ids=frozenset(eog), special_ids=special_ids,
        merge_ranks=merge_ranks,
        lowercase=lowercase, strip_accents=bool(strip_accents), **flags,
    )  # fmt: skip


def _detect_specials(
    tokens: list[str], token_to_id: dict[str, int], attrs: np.ndarray, ids: dict[str, int | None]
) -> set[int]:
    """Fill missing special ids from token texts, mark unused tokens, and build the
    end-of-generation set; mutates `attrs` and `ids`. llama.cpp walks an unordered_map, so
    when several texts qualify for one id its pick depends on hash order; we take the text
    listed first (which is llama.cpp's pick for the Llama 3, Phi-3 and Qwen2 vocabularies:
    <|eot_id|>, <|end|>, <|im_end|>). The eog set does not depend on order."""
    for name, texts in _DETECT_BY_TEXT.items():
        if ids[name] is not None:
            continue
        found = [token_to_id[t] for t in texts if t in token_to_id]
        if found:
            ids[name] = found[0]
            attrs[found[0]] |= ATTR_CONTROL
    for i in np.flatnonzero((attrs & ATTR_CONTROL) != 0).tolist():
        if "unused" in tokens[i]:
            attrs[i] |= ATTR_UNUSED
    eog = {ids[k] for k in ("fim_pad", "fim_rep", "fim_sep") if ids[k] is not None}
    for text in _EOG_TEXTS:
        if text in token_to_id:
            eog.add(token_to_id[text])
            attrs[token_to_id[text]] |= ATTR_CONTROL
    for text in _ALWAYS_RENDERED:
        if text in token_to_id:
            attrs[token_to_id[text]] = ATTR_USER_DEFINED
    eog.update(ids[k] for k in ("eos", "eot", "eom") if ids[k] is not None)
    found = {tokens[i] for i in eog}
    if "<|end|>" in found and (
        {"<|return|>", "<|call|>"} <= found or {"<|calls|>", "<|flush|>"} <= found
    ):
        end = token_to_id["<|end|>"]
        eog.discard(end)
        attrs[end] = ATTR_USER_DEFINED
    if "</s>" in found and found & {"<|tool_response>", "<|plamo:eos|>"}:
        eos_s = token_to_id["</s>"]
        eog.discard(eos_s)
        attrs[eos_s] = ATTR_NORMAL
    return eog


def _set_strip_attrs(
    metadata: Mapping[str, Any],
    token_to_id: dict[str, int],
    attrs: np.ndarray,
    special_ids: tuple[int, ...],
) -> None:
    """llama.cpp's per-model LSTRIP/RSTRIP attributes ("Handle per token attributes")."""
    name = str(metadata.get(Key.NAME) or "").lower()
    arch = str(metadata.get(Key.ARCH) or "")
    pre_text = str(metadata.get(Key.PRE) or "")

    def set_attr(text: str, attr: int, value: bool) -> None:
        if text in token_to_id:
            i = token_to_id[text]
            attrs[i] = (attrs[i] | attr) if value else (attrs[i] & ~attr)

    if any(s in pre_text for s in ("jina-v2-de", "jina-v2-es", "jina-v2-code")) or any(
        s in arch for s in ("nomic-bert-moe", "jina-bert-v3")
    ):
        set_attr("<mask>", ATTR_LSTRIP, True)
    elif "phi-3" in name or "phi3" in name:
        for i in special_ids:
            attrs[i] |= ATTR_RSTRIP
        set_attr("</s>", ATTR_RSTRIP, True)
        for text in ("<unk>", "<s>", "<|endoftext|>"):
            set_attr(text, ATTR_RSTRIP, False)
    elif "modern-bert" in name:
        set_attr("[MASK]", ATTR_LSTRIP, True)
