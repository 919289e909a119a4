"""Token sampling as the precision contract defines it (docs/SAMPLING.md).

Every float operation here is a correctly rounded float32 operation in a fixed order, so
any backend that performs the same sequence gets the same token:

    logit bias -> penalties -> greedy (temperature 0) | top-k -> top-p -> min-p
    -> temperature -> draw

which is llama.cpp's default sampler chain (logit bias first, as common/sampling.cpp adds
it) with its disabled-by-default samplers (DRY, top-n-sigma, typical, XTC) left out.
Candidates are ordered once, by biased and penalised logit descending then token id
ascending, and every later step walks them in that order.

Randomness comes from Philox-4x32-10 keyed by the request's seed with the token's
absolute position as the counter, so a draw depends on (seed, position) only: never on
other requests, on batch composition, or on how many tokens were drawn before.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from exactserve.reference.activations import exp

_MASK32 = 0xFFFFFFFF
# Philox-4x32 round multipliers and Weyl key increments (Salmon et al., SC'11; Random123).
_PHILOX_M0 = 0xD2511F53
_PHILOX_M1 = 0xCD9E8D57
_PHILOX_W0 = 0x9E3779B9
_PHILOX_W1 = 0xBB67AE85
_U24_SCALE = np.float32(2.0**-24)


def philox4x32_10(
    counter: tuple[int, int, int, int], key: tuple[int, int]
) -> tuple[int, int, int, int]:
    """Philox-4x32 with 10 rounds on 32-bit words (Random123's philox4x32_10).

    Each round: (hi0, lo0) = M0 * c0, (hi1, lo1) = M1 * c2 as 64-bit products;
    c = (hi1 ^ c1 ^ k0, lo1, hi0 ^ c3 ^ k1, lo0); then k += (W0, W1) mod 2^32.
    Triton's `tl.philox(seed, c0, c1, c2, c3)` computes the same function with
    key = (seed mod 2^32, seed >> 32).
    """
    c0, c1, c2, c3 = (w & _MASK32 for w in counter)
    k0, k1 = (w & _MASK32 for w in key)
    for _ in range(10):
        p0 = _PHILOX_M0 * c0
        p1 = _PHILOX_M1 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & _MASK32, (p0 >> 32) ^ c3 ^ k1, p0 & _MASK32
        k0 = (k0 + _PHILOX_W0) & _MASK32
        k1 = (k1 + _PHILOX_W1) & _MASK32
    return c0, c1, c2, c3


def uniform(seed: int, position: int) -> np.float32:
    """The draw for the token at absolute `position` of a request seeded with `seed`.

    counter = (position mod 2^32, position >> 32, 0, 0), key = (seed mod 2^32, seed >> 32);
    u = (word0 >> 8) * 2^-24: the top 24 bits of the first output word, a float32 in
    [0, 1 - 2^-24] that is exact (no rounding happens).
    """
    if not 0 <= seed < 2**64:
        raise ValueError(f"seed must be in [0, 2**64), got {seed}")
    if not 0 <= position < 2**64:
        raise ValueError(f"position must be in [0, 2**64), got {position}")
    word0 = philox4x32_10((position, position >> 32, 0, 0), (seed, seed >> 32))[0]
    return np.float32(word0 >> 8) * _U24_SCALE


@dataclass(frozen=True)
class SamplingParams:
    """One request's sampling configuration. The defaults sample the plain distribution.

    temperature: 0 selects greedy decoding; otherwise logits are divided by it last.
    top_k: keep the k best candidates (0: all). top_p: keep the shortest prefix whose
    probability mass reaches p (1: all). min_p: keep candidates whose probability is at
    least min_p times the best one's (0: all). Penalties follow llama.cpp: over the last
    penalty_last_n tokens of the context (0: none, -1: the whole context), each token seen
    c > 0 times has its logit divided (if > 0) or multiplied (if <= 0) by repeat_penalty,
    then decreased by c * frequency_penalty + presence_penalty. logit_bias: (token id, bias)
    pairs added to those tokens' logits before anything else (OpenAI's logit_bias; -100
    all but bans a token), stored as a tuple sorted by token id.
    """

    temperature: float = 1.0
    top_k: int = 0
    top_p: float = 1.0
    min_p: float = 0.0
    repeat_penalty: float = 1.0
    presence_penalty: float = 0.0
    frequency_penalty: float = 0.0
    penalty_last_n: int = 64
    seed: int = 0
    logit_bias: tuple[tuple[int, float], ...] = ()

    def __post_init__(self) -> None:
        problems = []
        if not (math.isfinite(self.temperature) and self.temperature >= 0):
            problems.append(f"temperature must be a finite number >= 0, got {self.temperature}")
        elif not np.isfinite(_as_float32(self.temperature)):
            problems.append(f"temperature {self.temperature} overflows float32")
        if self.top_k < 0:
            problems.append(f"top_k must be >= 0 (0 disables it), got {self.top_k}")
        if not 0 < self.top_p <= 1:
            problems.append(f"top_p must be in (0, 1] (1 disables it), got {self.top_p}")
        if not 0 <= self.min_p <= 1:
            problems.append(f"min_p must be in [0, 1] (0 disables it), got {self.min_p}")
        repeat = _as_float32(self.repeat_penalty)
        if not (np.isfinite(repeat) and repeat > 0):
            problems.append(
                f"repeat_penalty must be > 0 and finite in float32, got {self.repeat_penalty}"
            )
        for name in ("presence_penalty", "frequency_penalty"):
            if not np.isfinite(_as_float32(getattr(self, name))):
                problems.append(f"{name} must be finite in float32, got {getattr(self, name)}")
        if self.penalty_last_n < -1:
            problems.append(f"penalty_last_n must be >= -1, got {self.penalty_last_n}")
        if not 0 <= self.seed < 2**64:
            problems.append(f"seed must be in [0, 2**64), got {self.seed}")
        logit_bias, bias_problems = _canonical_logit_bias(self.logit_bias)
        problems += bias_problems
        if problems:
            raise ValueError("; ".join(problems))
        object.__setattr__(self, "logit_bias", logit_bias)

    @property
    def is_greedy(self) -> bool:
        """Temperature 0, or one so small that it is 0 in float32."""
        return np.float32(self.temperature) == 0

    @property
    def has_penalties(self) -> bool:
        return self.penalty_last_n != 0 and (
            self.repeat_penalty != 1 or self.presence_penalty != 0 or self.frequency_penalty != 0
        )


def _as_float32(value: float) -> np.float32:
    with np.errstate(over="ignore"):
        return np.float32(value)


def _canonical_logit_bias(
    logit_bias: object,
) -> tuple[tuple[tuple[int, float], ...], list[str]]:
    """The pairs as a tuple sorted by token id (equal and hashable whatever order they came
    in), and the problems that make them invalid."""
    try:
        pairs = [tuple(pair) for pair in logit_bias]  # type: ignore[union-attr]
    except TypeError:
        pairs = None
    if pairs is None or any(len(pair) != 2 for pair in pairs):
        return (), [f"logit_bias must be a sequence of (token id, bias) pairs, got {logit_bias!r}"]
    problems, seen = [], set()
    for token, bias in pairs:
        if isinstance(token, bool) or not isinstance(token, numbers.Integral) or token < 0:
            problems.append(f"logit_bias token ids must be integers >= 0, got {token!r}")
            continue
        if int(token) in seen:
            problems.append(f"logit_bias names token {token} more than once")
        seen.add(int(token))
        if not _is_finite_float32(bias):
            problems.append(
                f"logit_bias for token {token} must be a number finite in float32, got {bias!r}"
            )
    if problems:
        return (), problems
    return tuple(sorted(((int(t), b) for t, b in pairs), key=lambda pair: pair[0])), []


def _is_finite_float32(value: object) -> bool:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    try:
        return bool(np.isfinite(_as_float32(value)))
    except OverflowError:  # an int too large for any float
        return False


def apply_logit_bias(logits: np.ndarray, params: SamplingParams) -> np.ndarray:
    """A float32 copy of `logits` with `params.logit_bias` added (docs/SAMPLING.md step 0).

    For each (t, b) in ascending t: x[t] = fl(x[t] + float32(b)). A token id outside the
    vocabulary, or a sum that overflows to infinity, is a ValueError.
    """
    x = np.array(logits, dtype=np.float32)
    if not params.logit_bias:
        return x
    ids = np.array([token for token, _ in params.logit_bias], dtype=np.int64)
    if ids[-1] >= x.size:  # ids are sorted and >= 0 (SamplingParams)
        raise ValueError(
            f"logit_bias names token {ids[-1]} but the vocabulary has {x.size} tokens "
            f"(ids 0..{x.size - 1})"
        )
    biases = np.array([_as_float32(bias) for _, bias in params.logit_bias], dtype=np.float32)
    with np.errstate(over="ignore"):  # reported below
        values = x[ids] + biases
    if not np.isfinite(values).all():
        raise ValueError("the logit bias overflowed a logit to infinity; use smaller biases")
    x[ids] = values
    return x


def apply_penalties(
    logits: np.ndarray, context: Sequence[int], params: SamplingParams
) -> np.ndarray:
    """A float32 copy of `logits` with the repetition, frequency and presence penalties.

    For each distinct token t among the last penalty_last_n context tokens, seen c times:
        x = x * r  if x <= 0  else  x / r         (r = repeat_penalty, float32 rn)
        s = fl(fl(float32(c) * f) + p)             (f = frequency, p = presence penalty)
        x = fl(x - s)
    """
    x = np.array(logits, dtype=np.float32)
    if not params.has_penalties or not len(context):
        return x
    window = context if params.penalty_last_n == -1 else context[-params.penalty_last_n :]
    ids, counts = np.unique(np.asarray(window, dtype=np.int64), return_counts=True)
    if ids[0] < 0 or ids[-1] >= x.size:
        raise ValueError(f"context holds token ids outside the vocabulary [0, {x.size})")
    values = x[ids]
    repeat = np.float32(params.repeat_penalty)
    with np.errstate(over="ignore"):  # reported below
        values = np.where(values <= 0, values * repeat, values / repeat)
        subtract = counts.astype(np.float32) * np.float32(params.frequency_penalty)
        subtract = subtract + np.float32(params.presence_penalty)
        values = values - subtract
    if not np.isfinite(values).all():
        raise ValueError("the penalties overflowed a logit to infinity; use smaller penalties")
    x[ids] = values
    return x


def sorted_candidates(logits: np.ndarray, top_k: int) -> np.ndarray:
    """Token ids ordered by logit descending, then id ascending; the first top_k if > 0.

    Values compare as IEEE numbers (-0 equals +0). Selecting the k best first and sorting
    only those gives the same ids as sorting everything and cutting (ties at the k-th
    value are broken by id ascending in both).
    """
    n = logits.size
    if 0 < top_k < n:
        kth_value = np.partition(logits, n - top_k)[n - top_k]
        above = np.flatnonzero(logits > kth_value)
        ties = np.flatnonzero(logits == kth_value)[: top_k - above.size]
        ids = np.sort(np.concatenate([above, ties]))
    else:
        ids = np.arange(n)
    return ids[np.argsort(-logits[ids], kind="stable")]


def cumulative_sum(values: np.ndarray) -> np.ndarray:
    """float32 prefix sums in index order, each one rounding step: s_i = fl(s_{i-1} + v_i).

    np.add.accumulate is this sequential recurrence (never pairwise); a test pins it.
    """
    return np.add.accumulate(np.asarray(values, dtype=np.float32), dtype=np.float32)


def sample_token(logits: np.ndarray, params: SamplingParams, context: Sequence[int]) -> int:
    """The token drawn from `logits` for a request whose tokens so far are `context`.

    logits: float32 [n_vocab], finite, the model's output for the next position.
    context: every token before the one sampled (prompt then generated); the draw's
    position is len(context), the penalties look at its tail. Nothing is mutated: the
    logit bias and the penalties work on a copy.
    """
    x = np.asarray(logits)
    if x.ndim != 1 or x.dtype != np.float32 or x.size == 0:
        raise ValueError(f"logits must be a non-empty 1-D float32 array, got {x.dtype} {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError("logits contain NaN or infinity")
    x = apply_logit_bias(x, params)
    x = apply_penalties(x, context, params)
    if params.is_greedy:
        return int(np.argmax(x))  # the first maximum: ties go to the lowest id
    ids = sorted_candidates(x, params.top_k)
    sorted_logits = x[ids]
    # d_i = fl(x_i - x_0) <= 0: logits relative to the best candidate, shared by top-p and
    # min-p; e_i = exp(d_i) are the unnormalised untempered probabilities, e_0 = 1.
    deltas = sorted_logits - sorted_logits[0]
    top_p, min_p = np.float32(params.top_p), np.float32(params.min_p)
    if top_p < 1 or min_p > 0:
        weights = exp(deltas)
        if top_p < 1:
            running = cumulative_sum(weights)
            threshold = top_p * running[-1]
            # keep 0..k for the first k with running[k] >= threshold (<= running[-1])
            num_kept = int(np.searchsorted(running, threshold, side="left")) + 1
            ids, deltas, weights = ids[:num_kept], deltas[:num_kept], weights[:num_kept]
        if min_p > 0:
            keep = weights >= min_p
            ids, deltas = ids[keep], deltas[keep]
    temperature = np.float32(params.temperature)  # > 0: greedy returned above
    scaled = deltas if temperature == 1 else deltas / temperature
    running = cumulative_sum(exp(scaled))
    target = uniform(params.seed, len(context)) * running[-1]
    # The first j with running[j] > target. It exists because u <= 1 - 2^-24 makes
    # fl(u * W) < W for every float32 W >= 1 (docs/SAMPLING.md, "The draw").
    chosen = int(np.searchsorted(running, target, side="right"))
    return int(ids[chosen])
