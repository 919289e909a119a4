"""WordPiece (BERT) as llama.cpp's llm_tokenizer_wpm_session (src/llama-vocab.cpp).

Text is normalised (llama.cpp's one-code-point NFD when stripping accents, lowercase),
split on whitespace and around punctuation, ASCII symbols and CJK ideographs; each word,
prefixed with "▁", is covered greedily by the longest matching tokens (compared as UTF-8
bytes); a word that cannot be covered becomes the unknown token.
"""

from __future__ import annotations

from exactserve.runtime.tokenizer import unicode as uni
from exactserve.runtime.tokenizer.vocab import Vocab

_CJK_RANGES = (
    (0x04E00, 0x09FFF), (0x03400, 0x04DBF), (0x20000, 0x2A6DF), (0x2A700, 0x2B73F),
    (0x2B740, 0x2B81F), (0x2B920, 0x2CEAF), (0x0F900, 0x0FAFF), (0x2F800, 0x2FA1F),
)  # fmt: skip


def _is_chinese(cpt: int) -> bool:
    return any(lo <= cpt <= hi for lo, hi in _CJK_RANGES)


class WPM:
    def __init__(self, vocab: Vocab) -> None:
        self.vocab = vocab
        self._by_bytes = {
            t.encode("utf-8", "surrogateescape"): i for i, t in enumerate(vocab.tokens)
        }
        self._max_len = max(map(len, self._by_bytes), default=0)  # llama.cpp's max_token_len

    def words(self, text: str) -> list[str]:
        """llm_tokenizer_wpm_session::preprocess."""
        vocab = self.vocab
        words = [""]
        for ch in text:
            cpt = ord(ch)
            if vocab.strip_accents:
                cpt = uni.normalize_nfd(cpt)
            if uni.is_whitespace(cpt):
                if words[-1]:
                    words.append("")
                continue
            cat = uni.category(cpt)
            if cpt == 0 or cpt == 0xFFFD or cat == uni.CONTROL:
                continue
            if vocab.strip_accents and cat == uni.ACCENT_MARK:
                continue
            s = chr(uni.tolower(cpt) if vocab.lowercase else cpt)
            if cat == uni.PUNCTUATION or (cpt < 0x7F and cat == uni.SYMBOL) or _is_chinese(cpt):
                if words[-1]:
                    words.append("")
                words[-1] = s
                words.append("")
            else:
                words[-1] += s
        if not words[-1]:
            words.pop()
        return words

    def tokenize(self, text: str) -> list[int]:
        out: list[int] = []
        max_len = self._max_len
        unk = self.vocab.ids["unk"]
        for word in self.words(text):
            if not word:
                continue
            data = ("\u2581" + word).encode("utf-8", "surrogatepass")
            n = len(data)
            start = len(out)
            i = 0
            while i < n:
                for j in range(min(n, i + max_len + 1), i, -1):
                    token = self._by_bytes.get(data[i:j])
                    if token is not None:
                        out.append(token)
                        i = j
                        break
                else:
                    del out[start:]  # no token starts here: discard the whole word
                    break
            if len(out) == start and unk is not None:
                out.append(unk)
        return out
