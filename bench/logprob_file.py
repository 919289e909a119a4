"""llama-perplexity's saved log-probability file, and its KL-divergence statistics.

`llama-perplexity --kl-divergence-base FILE` (without `--kl-divergence`) writes FILE;
with `--kl-divergence` it reads FILE as the base distribution and compares its own
logits with it. Format, from llama.cpp tools/perplexity/perplexity.cpp (`perplexity`,
`log_softmax(n_vocab, logits, uint16_t *, tok)`), all little-endian:

    "_logits_"                          8 bytes
    n_ctx                               uint32
    n_vocab                             int32
    n_chunk                             int32
    tokens[n_chunk * n_ctx]             int32, the tokenised text (BOS not substituted)
    per chunk, n_ctx - 1 - n_ctx//2 rows, one per scored position, each nv = 2*((n_vocab+1)//2) + 4
    uint16 words:
        scale          float32  (words 0-1) = (max_logit - min_logit) / 65535
        min_log_prob   float32  (words 2-3) = min_logit - max_logit - log(sum exp)
        q[n_vocab]     uint16   log p_i ~= scale * q_i + min_log_prob
        padding to an even count of words

min_logit is clamped to max_logit - 16, so log-probabilities below about -16 read back as
the floor. This module writes such files for other engines (the transformers float32 run)
and evaluates KL(base || ours) with llama.cpp's own formula, so the numbers for llama.cpp
(computed by llama-perplexity) and ours (computed here) are the same statistic.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAGIC = b"_logits_"


def row_words(n_vocab: int) -> int:
    return 2 * ((n_vocab + 1) // 2) + 4


def scored_rows(n_ctx: int) -> int:
    """Positions scored per chunk: n_ctx//2 .. n_ctx-2, each predicting the next token."""
    return n_ctx - 1 - n_ctx // 2


@dataclass(frozen=True)
class LogprobFile:
    """A memory-mapped saved log-probability file."""

    path: Path
    n_ctx: int
    n_vocab: int
    n_chunk: int
    tokens: np.ndarray  # int32 [n_chunk * n_ctx]
    rows: np.ndarray  # uint16 [n_chunk, scored_rows(n_ctx), row_words(n_vocab)], memory map

    def base_log_probs(self, chunk: int) -> np.ndarray:
        """float32 [rows, n_vocab]: scale*q + min_log_prob, evaluated in float32 as llama.cpp."""
        rows = np.ascontiguousarray(self.rows[chunk])
        head = rows[:, :4].copy().view(np.float32)  # [rows, 2]: scale, min_log_prob
        q = rows[:, 4 : 4 + self.n_vocab].astype(np.float32)
        return q * head[:, :1] + head[:, 1:2]


def read_logprob_file(path: Path) -> LogprobFile:
    with open(path, "rb") as f:
        if f.read(8) != MAGIC:
            raise ValueError(f"{path}: not a llama-perplexity log-probability file")
        n_ctx = int(np.frombuffer(f.read(4), "<u4")[0])
        n_vocab, n_chunk = (int(v) for v in np.frombuffer(f.read(8), "<i4"))
    header = 8 + 12
    tokens = np.memmap(path, "<i4", "r", header, (n_chunk * n_ctx,))
    shape = (n_chunk, scored_rows(n_ctx), row_words(n_vocab))
    expected = header + 4 * n_chunk * n_ctx + 2 * math.prod(shape)
    if path.stat().st_size != expected:
        raise ValueError(f"{path}: size {path.stat().st_size}, expected {expected} (truncated?)")
    rows = np.memmap(path, "<u2", "r", header + 4 * n_chunk * n_ctx, shape)
    return LogprobFile(path, n_ctx, n_vocab, n_chunk, np.asarray(tokens), rows)


class LogprobWriter:
    """Writes a file in llama-perplexity's format, one chunk of logits at a time."""

    def __init__(self, path: Path, n_ctx: int, n_vocab: int, tokens: np.ndarray) -> None:
        self.n_ctx, self.n_vocab = n_ctx, n_vocab
        self.n_chunk = len(tokens) // n_ctx
        self._file = open(path, "wb")  # noqa: SIM115 - closed by close()
        self._file.write(MAGIC)
        self._file.write(np.array([n_ctx], "<u4").tobytes())
        self._file.write(np.array([n_vocab, self.n_chunk], "<i4").tobytes())
        self._file.write(np.asarray(tokens[: self.n_chunk * n_ctx], "<i4").tobytes())

    def write_chunk(self, logits: np.ndarray) -> None:
        """logits: float32 [scored_rows(n_ctx), n_vocab] of one chunk's scored positions."""
        assert logits.shape == (scored_rows(self.n_ctx), self.n_vocab), logits.shape
        self._file.write(quantize_log_probs(logits).tobytes())

    def close(self) -> None:
        self._file.close()


def quantize_log_probs(logits: np.ndarray) -> np.ndarray:
    """uint16 [rows, row_words]: llama.cpp's log_softmax(..., uint16_t * log_prob, ...)."""
    logits = np.asarray(logits, np.float32)
    n_rows, n_vocab = logits.shape
    out = np.zeros((n_rows, row_words(n_vocab)), np.uint16)
    for r in range(n_rows):
        x = logits[r]
        max_logit = x.max()
        min_logit = max(x.min(), np.float32(max_logit - np.float32(16)))
        sum_exp = float(np.exp(x - max_logit, dtype=np.float32).astype(np.float64).sum())
        log_sum_exp = np.float32(math.log(sum_exp))
        min_log_prob = np.float32(np.float32(min_logit - max_logit) - log_sum_exp)
        scale = np.float32((max_logit - min_logit) / np.float32(65535))
        out[r, :4] = np.array([scale, min_log_prob], np.float32).view(np.uint16)
        if scale:
            inv_scale = np.float32(1) / scale
            # nearest_int(): round half to even, as the 1.5*2^23 trick does.
            q = np.rint(inv_scale * (x - min_logit)).astype(np.int64)
            out[r, 4 : 4 + n_vocab] = np.where(x > min_logit, q, 0).astype(np.uint16)
    return out


@dataclass
class KLStats:
    """Running sums as llama.cpp's kl_divergence_result (only the fields reported here)."""

    count: int = 0
    sum_nll: float = 0.0
    sum_nll_base: float = 0.0
    sum_kld: float = 0.0
    sum_kld2: float = 0.0
    n_same_top: int = 0

    @property
    def ppl(self) -> float:
        return math.exp(self.sum_nll / self.count)

    @property
    def ppl_base(self) -> float:
        return math.exp(self.sum_nll_base / self.count)

    @property
    def mean_kld(self) -> float:
        return self.sum_kld / self.count

    @property
    def kld_uncertainty(self) -> float:
        mean = self.mean_kld
        var = self.sum_kld2 / self.count - mean * mean
        return math.sqrt(var / (self.count - 1)) if var > 0 and self.count > 10 else 0.0

    @property
    def same_top(self) -> float:
        return self.n_same_top / self.count


def accumulate_kl(
    stats: KLStats, logits: np.ndarray, base_log_probs: np.ndarray, next_tokens: np.ndarray
) -> None:
    """Adds one chunk's rows, as llama.cpp's log_softmax(..., base_log_prob, tok, kld).

    logits: float32 [rows, n_vocab] of the engine under test; base_log_probs: float32
    [rows, n_vocab] from LogprobFile.base_log_probs; next_tokens: int [rows].
    """
    for r in range(logits.shape[0]):
        x = np.asarray(logits[r], np.float32)
        imax = int(np.argmax(x))  # first maximum, as the strict `>` scan
        max_logit = x[imax]
        sum_exp = float(np.exp(x - max_logit, dtype=np.float32).astype(np.float64).sum())
        log_sum_exp = np.float32(math.log(sum_exp))
        tok = int(next_tokens[r])
        nll = float(np.float32(np.float32(max_logit + log_sum_exp) - x[tok]))
        base = base_log_probs[r]
        stats.sum_nll += nll
        stats.sum_nll_base += float(-base[tok])
        shifted_max = np.float32(max_logit + log_sum_exp)
        keep = base > np.float32(-16)
        pb = base[keep]
        terms = np.exp(pb, dtype=np.float32) * ((pb - x[keep]) + shifted_max)
        kld = float(terms.astype(np.float64).sum())
        stats.sum_kld += kld
        stats.sum_kld2 += kld * kld
        stats.n_same_top += int(imax == int(np.argmax(base)))
        stats.count += 1
