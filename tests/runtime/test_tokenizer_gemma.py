"""The real Gemma 3 270M demo vocabulary (SentencePiece, 262,144 tokens) against ids that
llama.cpp's llama-tokenize printed (an independent oracle). Each expected list came from

    printf '<text>' > s.txt
    llama-tokenize -m gemma-3-270m-q4_k_m.gguf -f s.txt --no-escape --ids --log-disable \
        [--no-parse-special]

with llama-tokenize built from the pinned llama.cpp source (bench/build_llama_cpp.sh). It
adds BOS (the vocabulary asks for it) and parses special tokens unless told not to, i.e.
encode(text, add_special=True, parse_special=<not --no-parse-special>).
"""

from __future__ import annotations

import pytest

from exactserve.runtime.tokenizer import Tokenizer

pytestmark = pytest.mark.real_model

PROSE = (
    "The quick brown fox jumps over the lazy dog.\n\nSecond paragraph:  two  spaces,\ttab,"
    "   three spaces and 1234567 digits.\n"
)
CHAT = "<start_of_turn>user\nWhat is 2+2?<end_of_turn>\n<start_of_turn>model\n"
RARE = "Rare glyphs: 𓀀 ꙮ 𝕏, emoji 🦙 and €100 in Grüße."
HTML = "<table><tr><td>cell</td></tr></table>\n\n\n<b>bold</b> <unused5> <bos>"

# (text, parse_special, ids printed by llama-tokenize)
CASES = [
    ("Hello world", True, [2, 9259, 1902]),
    (PROSE, True, [
        2, 818, 3823, 8864, 37423, 38167, 1024, 506, 31770, 4799, 236761, 108, 12400, 15649,
        236787, 138, 13498, 138, 35220, 236764, 255968, 4823, 236764, 139, 19891, 9952, 532,
        236743, 236770, 236778, 236800, 236812, 236810, 236825, 236832, 26798, 236761, 107,
    ]),
    (CHAT, True, [2, 105, 2364, 107, 3689, 563, 236743, 236778, 236862, 236778, 236881, 106,
                  107, 105, 4368, 107]),
    (CHAT, False, [
        2, 236820, 3041, 236779, 1340, 236779, 887, 236813, 2364, 107, 3689, 563, 236743,
        236778, 236862, 236778, 145912, 643, 236779, 1340, 236779, 887, 236813, 107, 236820,
        3041, 236779, 1340, 236779, 887, 236813, 4368, 107,
    ]),
    (RARE, True, [
        2, 128280, 53179, 236751, 236787, 236743, 478, 385, 366, 366, 236743, 472, 391, 412,
        236743, 478, 395, 387, 381, 236764, 64334, 236743, 478, 397, 404, 391, 532, 11361,
        236770, 236771, 236771, 528, 212270, 236761,
    ]),
    (HTML, True, [2, 168, 173, 175, 5447, 183, 181, 176, 109, 200, 15640, 209, 236743, 11,
                  236743, 2]),
    (HTML, False, [2, 168, 173, 175, 5447, 183, 181, 176, 109, 200, 15640, 209, 655, 63634,
                   236810, 236813, 655, 46757, 236813]),
]  # fmt: skip
LLAMA_BYTES = [478, 397, 404, 391]  # <0xF0><0x9F><0xA6><0x99>: "🦙" by byte fallback


@pytest.fixture(scope="module")
def tok() -> Tokenizer:
    from exactserve.runtime.assets import demo_model_path

    return Tokenizer.from_gguf(demo_model_path())


@pytest.mark.parametrize(("text", "parse_special", "expected"), CASES)
def test_matches_llama_tokenize(
    tok: Tokenizer, text: str, parse_special: bool, expected: list[int]
) -> None:
    assert tok.encode(text, add_special=True, parse_special=parse_special) == expected
    # Every input here is representable, so detokenizing gives it back after the BOS.
    assert tok.decode(expected) == "<bos>" + text


def test_vocabulary_facts(tok: Tokenizer) -> None:
    assert tok.vocab_size == 262144
    assert (tok.bos_id, tok.eos_id, tok.eot_id) == (2, 1, 106)
    assert tok.token_text(106) == "<end_of_turn>"
    # <eos>, <end_of_turn>, and "</s>" (an HTML tag here, but llama.cpp lists the text).
    assert tok.eog_ids == {1, 106, 212}
    assert tok.is_control(105) and not tok.is_control(168) and tok.is_special(168)


def test_streaming_a_character_split_over_byte_tokens(tok: Tokenizer) -> None:
    ids = tok.encode("a🦙b", add_special=False)
    assert ids[1:5] == LLAMA_BYTES
    decoder = tok.stream_decoder()
    pieces = [decoder.feed(i) for i in ids]
    assert pieces[1:5] == ["", "", "", "🦙"]
    assert "".join(pieces) + decoder.flush() == "a🦙b"
    assert tok.pieces(LLAMA_BYTES) == ["\\xf0", "\\x9f", "\\xa6", "\\x99"]
    # A stream cut inside the character ends with one replacement character.
    decoder = tok.stream_decoder()
    assert [decoder.feed(i) for i in LLAMA_BYTES[:2]] == ["", ""]
    assert decoder.flush() == "\ufffd"
