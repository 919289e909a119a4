"""Tokenizer behaviour on tiny hand-made vocabularies, where every expected result is
worked out by hand from llama.cpp's algorithms (src/llama-vocab.cpp, src/unicode.cpp)."""

from __future__ import annotations

import numpy as np
import pytest

from exactserve.runtime.errors import GGUFError, UnsupportedError
from exactserve.runtime.tokenizer import Tokenizer
from exactserve.runtime.tokenizer.unicode import byte_to_unicode

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, BYTE = 1, 2, 3, 4, 6


def spm(pieces: dict[str, tuple[float, int]], **extra) -> Tokenizer:
    """A SentencePiece vocabulary: <unk> <s> </s>, the 256 byte tokens, then `pieces`."""
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    scores = [0.0] * len(tokens)
    types = [UNKNOWN, CONTROL, CONTROL] + [BYTE] * 256
    for text, (score, kind) in pieces.items():
        tokens.append(text)
        scores.append(score)
        types.append(kind)
    metadata = {
        "tokenizer.ggml.model": "llama",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.scores": np.array(scores, dtype=np.float32),
        "tokenizer.ggml.token_type": np.array(types, dtype=np.int32),
        **extra,
    }
    return Tokenizer.from_metadata(metadata)


def bpe(words: list[str], merges: list[tuple[str, str]], pre: str = "gpt-2", **extra) -> Tokenizer:
    """A byte-level BPE vocabulary: the 256 byte characters, then `words` (given as text
    and stored byte-encoded), then <|endoftext|> as a control token."""
    tokens = list(byte_to_unicode()) + [_byte_level(w) for w in words]
    types = [NORMAL] * len(tokens) + [CONTROL]
    tokens.append("<|endoftext|>")
    metadata = {
        "tokenizer.ggml.model": "gpt2",
        "tokenizer.ggml.pre": pre,
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": np.array(types, dtype=np.int32),
        "tokenizer.ggml.merges": [f"{_byte_level(a)} {_byte_level(b)}" for a, b in merges],
        "tokenizer.ggml.bos_token_id": len(tokens) - 1,
        "tokenizer.ggml.eos_token_id": len(tokens) - 1,
        **extra,
    }
    return Tokenizer.from_metadata(metadata)


def _byte_level(text: str) -> str:
    return "".join(byte_to_unicode()[b] for b in text.encode())


def ids_of(tok: Tokenizer, *texts: str) -> list[int]:
    """Ids of tokens given by their text (byte-level vocabularies store it encoded)."""
    if tok.vocab.type == "BPE":
        texts = tuple(map(_byte_level, texts))
    return [tok.vocab.token_to_id[t] for t in texts]


# -- SentencePiece --------------------------------------------------------------------


SPM_PIECES = {
    "\u2581": (-1.0, NORMAL),
    "a": (-2.0, NORMAL),
    "b": (-2.0, NORMAL),
    "ab": (-1.5, NORMAL),
    "\u2581a": (-1.2, NORMAL),
    "\u2581ab": (-0.5, NORMAL),
    "aa": (-3.0, NORMAL),
    "<tag>": (0.0, USER_DEFINED),
}


def test_spm_prefixes_space_and_merges_by_score() -> None:
    tok = spm(SPM_PIECES)
    # " ab ab" escaped is "▁ab▁ab"; in each half "▁a" (-1.2) beats "ab" (-1.5), then
    # "▁a"+"b" = "▁ab" (-0.5).
    assert tok.encode("ab ab", add_special=False) == ids_of(tok, "\u2581ab", "\u2581ab")
    assert tok.encode("ab ab") == [1, *ids_of(tok, "\u2581ab", "\u2581ab")]


def test_spm_equal_scores_merge_leftmost_first() -> None:
    tok = spm(SPM_PIECES, **{"tokenizer.ggml.add_space_prefix": False})
    assert tok.encode("aaa", add_special=False) == ids_of(tok, "aa", "a")


def test_spm_byte_fallback_for_unknown_characters() -> None:
    tok = spm(SPM_PIECES, **{"tokenizer.ggml.add_space_prefix": False})
    # "é" is U+00E9 = C3 A9 in UTF-8; byte tokens are ids 3 + byte.
    assert tok.encode("é", add_special=False) == [3 + 0xC3, 3 + 0xA9]


def test_spm_parse_special_and_space_prefix_after_special() -> None:
    tok = spm(SPM_PIECES)
    # Without parse_special "<s>" is text: "▁" then "<", "s", ">" by bytes.
    plain = tok.encode("<s>", add_special=False)
    assert plain == [*ids_of(tok, "\u2581"), 3 + ord("<"), 3 + ord("s"), 3 + ord(">")]
    # With it, "<s>" is BOS, and the text after a special token gets the space prefix.
    assert tok.encode("a<s>a", add_special=False, parse_special=True) == [
        *ids_of(tok, "\u2581a"),
        1,
        *ids_of(tok, "\u2581a"),
    ]
    # User-defined tokens are cut out even without parse_special.
    assert tok.encode("<tag>", add_special=False) == ids_of(tok, "<tag>")


def test_spm_keeps_extra_whitespace_even_when_asked_to_remove_it() -> None:
    # llama.cpp applies remove_extra_whitespaces to UGM vocabularies only.
    tok = spm(SPM_PIECES, **{"tokenizer.ggml.remove_extra_whitespaces": True})
    assert tok.encode("a  a", add_special=False) == ids_of(tok, "\u2581a", "\u2581", "\u2581a")


def test_spm_add_eos_from_metadata() -> None:
    tok = spm(SPM_PIECES, **{"tokenizer.ggml.add_eos_token": True})
    assert tok.encode("ab") == [1, *ids_of(tok, "\u2581ab"), 2]


def test_spm_decode_strips_one_leading_space_and_renders_control_tokens() -> None:
    tok = spm(SPM_PIECES)
    ids = [*ids_of(tok, "\u2581ab", "\u2581ab"), 2]
    assert tok.decode(ids) == "ab ab</s>"
    assert tok.decode(ids, skip_special=True) == "ab ab"
    # BOS renders as nothing when skipped, yet it still consumes the space removal; and
    # llama.cpp keeps the space when remove_special drops the BOS.
    assert tok.decode([1, *ids_of(tok, "\u2581ab")], skip_special=True) == " ab"
    assert tok.detokenize([1, *ids_of(tok, "\u2581ab")], remove_special=True) == b" ab"
    assert tok.token_to_piece(1) == b"<s>"
    assert tok.token_to_piece(1, special=False) == b""
    assert tok.token_to_piece(3 + 0xC3) == b"\xc3"


def test_stream_decoder_holds_back_partial_utf8() -> None:
    tok = spm(SPM_PIECES, **{"tokenizer.ggml.add_space_prefix": False})
    ids = tok.encode("a€b", add_special=False)  # € = E2 82 AC, three byte tokens
    assert ids == [*ids_of(tok, "a"), 3 + 0xE2, 3 + 0x82, 3 + 0xAC, *ids_of(tok, "b")]
    decoder = tok.stream_decoder()
    assert [decoder.feed(i) for i in ids] == ["a", "", "", "€", "b"]
    assert decoder.flush() == ""
    decoder.feed(3 + 0xE2)
    assert decoder.flush() == "\ufffd"
    assert decoder.feed(ids_of(tok, "b")[0]) == "b"


def test_stream_decoder_skips_control_tokens_by_default() -> None:
    tok = spm(SPM_PIECES)
    assert tok.stream_decoder().feed(2) == ""
    assert tok.stream_decoder(skip_special=False).feed(2) == "</s>"


# -- byte-level BPE -------------------------------------------------------------------


def test_bpe_merges_lowest_rank_first() -> None:
    # "hello": l+l has rank 0, then h+e (1), he+ll (2), hell+o (3).
    tok = bpe(["ll", "he", "hell", "hello"], [("l", "l"), ("h", "e"), ("he", "ll"), ("hell", "o")])
    assert tok.encode("hello", add_special=False) == ids_of(tok, "hello")
    # Without the last merge the word stops at "hell" + "o".
    tok = bpe(["ll", "he", "hell"], [("l", "l"), ("h", "e"), ("he", "ll")])
    assert tok.encode("hello", add_special=False) == [*ids_of(tok, "hell"), ord("o")]


def test_bpe_equal_rank_merges_leftmost_and_unknown_merge_falls_back_to_bytes() -> None:
    tok = bpe(["ll"], [("l", "l")])
    assert tok.encode("lll", add_special=False) == [*ids_of(tok, "ll"), ord("l")]
    # A merge whose result is not a token: its bytes' one-character tokens instead.
    tok = bpe([], [("a", "b")])
    assert tok.encode("ab", add_special=False) == [ord("a"), ord("b")]


def test_bpe_byte_level_pieces_and_clean_spaces() -> None:
    merges = [(" ", "w"), (" w", "o"), (" wo", "r"), (" wor", "l"), (" worl", "d")]
    tok = bpe([" w", " wo", " wor", " worl", " world"], merges)
    ids = tok.encode("Hi world ?", add_special=False)
    # gpt-2 splits "Hi", " world", " ?"; " ?" has no merge: Ġ (byte 0x20) then "?".
    space = byte_to_unicode().index("\u0120")
    assert ids == [ord("H"), ord("i"), *ids_of(tok, " world"), space, ord("?")]
    assert tok.token_to_piece(space) == b" "
    # clean_spaces (on for gpt-2) removes the space before "?" on decode.
    assert tok.decode(ids) == "Hi world?"


def test_bpe_add_special_follows_vocabulary_flags() -> None:
    tok = bpe([], [])
    assert tok.encode("a") == [ord("a")]  # gpt-2 adds no BOS by default
    tok = bpe([], [], pre="llama-bpe")  # the llama3 pre-tokenizer turns add_bos on
    assert tok.encode("a") == [tok.bos_id, ord("a")]
    tok = bpe([], [], **{"tokenizer.ggml.add_bos_token": False, "tokenizer.ggml.pre": "llama3"})
    assert tok.encode("a") == [ord("a")]


def test_bpe_special_tokens_and_eog() -> None:
    tok = bpe(["<|im_end|>"], [], pre="qwen2")
    im_end = tok.vocab.token_to_id["<|im_end|>"]
    # A normal-typed "<|im_end|>" is made a control, end-of-generation token and the EOT.
    assert tok.is_control(im_end) and tok.eot_id == im_end
    assert tok.eog_ids == {im_end, tok.eos_id}
    assert tok.encode("x<|im_end|>", add_special=False, parse_special=True) == [ord("x"), im_end]
    assert im_end not in tok.encode("x<|im_end|>", add_special=False)
    assert tok.control_token_texts() == ["<|endoftext|>", "<|im_end|>"]


def test_rstrip_attribute_eats_whitespace_after_special_tokens() -> None:
    # llama.cpp gives every special token of a Phi-3 vocabulary RSTRIP (by general.name).
    tok = bpe(["<|end|>"], [], **{"general.name": "Phi3"})
    end = tok.vocab.token_to_id["<|end|>"]
    ids = tok.encode("a<|end|>  \n b", add_special=False, parse_special=True)
    assert ids == [ord("a"), end, ord("b")]


# -- WordPiece ------------------------------------------------------------------------


def test_wpm_lowercases_splits_punctuation_and_uses_unk() -> None:
    tokens = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "\u2581hello", "\u2581,", "\u2581wor", "ld"]
    metadata = {
        "tokenizer.ggml.model": "bert",
        "tokenizer.ggml.tokens": tokens,
        "tokenizer.ggml.token_type": np.array([3, 3, 3, 3, 1, 1, 1, 1], dtype=np.int32),
        "tokenizer.ggml.unknown_token_id": 1,
        "tokenizer.ggml.seperator_token_id": 3,
        "tokenizer.ggml.padding_token_id": 0,
        "tokenizer.ggml.bos_token_id": 2,
    }
    tok = Tokenizer.from_metadata(metadata)
    # Lowercased, accents stripped (llama.cpp's default), "," split off, "xyz" unknown.
    assert tok.encode("HÉllo, World xyz") == [2, 4, 5, 6, 7, 1, 3]


# -- errors ---------------------------------------------------------------------------


def test_unsupported_and_malformed_vocabularies_raise_clear_errors() -> None:
    with pytest.raises(UnsupportedError, match="tokenizer model 't5'"):
        Tokenizer.from_metadata({"tokenizer.ggml.model": "t5", "tokenizer.ggml.tokens": ["a"]})
    with pytest.raises(UnsupportedError, match="unknown pre-tokenizer 'nope'"):
        bpe([], [], pre="nope")
    with pytest.raises(UnsupportedError, match="kimi-k2"):
        bpe([], [], pre="kimi-k2")
    with pytest.raises(GGUFError, match="tokenizer.ggml.tokens"):
        Tokenizer.from_metadata({"tokenizer.ggml.model": "llama"})
    with pytest.raises(GGUFError, match="no 'tokenizer.ggml.model'"):
        Tokenizer.from_metadata({})
    tok = spm(SPM_PIECES)
    with pytest.raises(ValueError, match="token id 9999 is outside the vocabulary"):
        tok.decode([9999])
