"""Tokenizers that tokenize exactly like llama.cpp, from a GGUF vocabulary.

    tok = Tokenizer.from_gguf("model.gguf")
    ids = tok.encode("Hello", add_special=True, parse_special=False)
    text = tok.decode(ids)

SentencePiece-style (`tokenizer.ggml.model` = llama), byte-level BPE (gpt2, gemma4, with
the pre-tokenizer `tokenizer.ggml.pre` names) and WordPiece (bert) vocabularies.
"""

from __future__ import annotations

from exactserve.runtime.tokenizer.stream import StreamDecoder
from exactserve.runtime.tokenizer.tokenizer import Tokenizer
from exactserve.runtime.tokenizer.vocab import Vocab, load_vocab

__all__ = ["StreamDecoder", "Tokenizer", "Vocab", "load_vocab"]
