"""Log-probabilities as the contract defines them (docs/SAMPLING.md, "Log-probabilities").

A token's log-probability is the log-softmax of the model's raw float32 logits (before
logit bias, penalties, temperature and truncation), computed with a fixed sequence of
correctly rounded float32 operations, so the values a client receives are as reproducible
as the logits:

    m = max(x);  d_i = fl(x_i - m);  S = tree_sum(exp(d_i));  L = log(S);  lp_i = fl(d_i - L)

with the contract's exp (PRECISION.md 4.1), its summation tree (2.3) over the whole
vocabulary, and `contract_log`, a log built from add, subtract, multiply and divide only.
"""

from __future__ import annotations

import numbers

import numpy as np

from exactserve.reference.activations import LN2_HI, LN2_LO, exp
from exactserve.reference.fp import F32, tree_sum
from exactserve.reference.sampling import sorted_candidates

MAX_TOP_LOGPROBS = 20  # OpenAI's limit for top_logprobs

# contract_log constants (binary32; the hex is exact). SQRT2 is fl32(sqrt 2), just below it.
SQRT2 = np.uint32(0x3FB504F3).view(F32)  # 1.41421354
HALF = F32(0.5)
ONE = F32(1.0)
TWO = F32(2.0)
# R(z) ~ (log(1+s) - log(1-s)) / s - 2 for z = s^2, |s| <= 0.1716: FreeBSD msun's minimax
# coefficients for logf (k_logf.h, |error| < 2^-34.24), highest degree first (Horner order).
LOG_POLY = (
    np.uint32(0x3E789E26).view(F32),  # 0xf89e26p-26 = 0.24279078841
    np.uint32(0x3E91E9EE).view(F32),  # 0x91e9eep-25 = 0.28498786688
    np.uint32(0x3ECCCE13).view(F32),  # 0xccce13p-25 = 0.40000972152
    np.uint32(0x3F2AAAAA).view(F32),  # 0xaaaaaap-24 = 0.66666662693
)
_SMALLEST_NORMAL = F32(2.0**-126)
_LARGEST = np.finfo(F32).max


def contract_log(s: np.float32 | np.ndarray) -> np.float32 | np.ndarray:
    """Natural log of positive normal float32 values, elementwise, as the clause defines it.

    S = 2^e * m with m in [1, 2) (exponent field replaced: exact); if m >= SQRT2 then
    f = m / 2, k = e + 1, else f = m, k = e. With g = f - 1 (exact) and s = g / (2 + g):
        z = s*s;  R = z * P(z)  (Horner);  h = (0.5*g)*g
        log S = k*LN2_HI - ((h - (s*(h + R) + k*LN2_LO)) - g)
    LN2_HI/LN2_LO are exp's split of ln 2 (k*LN2_HI is exact). A scalar in gives a float32
    scalar out; anything but a positive normal finite float32 is a ValueError.
    """
    x = np.atleast_1d(np.asarray(s, dtype=F32))
    if not ((x >= _SMALLEST_NORMAL) & (x <= _LARGEST)).all():  # NaN fails both
        raise ValueError(f"contract_log needs positive normal finite float32 values, got {s}")
    bits = x.view(np.int32)
    e = (bits >> np.int32(23)) - np.int32(127)
    m = ((bits & np.int32(0x007FFFFF)) | np.int32(0x3F800000)).view(F32)  # in [1, 2)
    is_high = m >= SQRT2
    f = np.where(is_high, m * HALF, m)  # in [SQRT2 / 2, SQRT2)
    dk = (e + is_high.astype(np.int32)).astype(F32)
    g = f - ONE  # exact (Sterbenz)
    s_ = g / (TWO + g)
    z = s_ * s_
    p = LOG_POLY[0]
    for c in LOG_POLY[1:]:
        p = p * z + c
    r = z * p
    h = (HALF * g) * g  # the first product is exact
    result = dk * LN2_HI - ((h - (s_ * (h + r) + dk * LN2_LO)) - g)
    return result[0] if np.ndim(s) == 0 else result.reshape(np.shape(s))


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """float32 log-probabilities of `logits`, float32 [n_vocab] or [rows, n_vocab] (per row).

    Nothing is mutated; the result is a new array of the same shape. Logits must be finite.
    An entry is -inf only if the row's logits span more than float32's range (d_i overflows).
    """
    x = np.asarray(logits)
    if x.dtype != F32 or x.ndim not in (1, 2) or x.shape[-1] == 0:
        raise ValueError(
            f"logits must be a float32 array [n_vocab] or [rows, n_vocab] with n_vocab > 0, "
            f"got {x.dtype} {x.shape}"
        )
    if not np.isfinite(x).all():
        raise ValueError("logits contain NaN or infinity")
    with np.errstate(over="ignore"):  # d_i = -inf only when max - x_i exceeds float32's range
        deltas = x - x.max(axis=-1, keepdims=True)  # <= 0, and +0 at the maximum
    total = tree_sum(exp(deltas))  # >= 1 (the maximum's term is exp(0) = 1), <= n_vocab
    log_total = contract_log(total)
    return deltas - np.expand_dims(log_total, -1)


def top_logprobs(logprobs: np.ndarray, n: int) -> list[tuple[int, float]]:
    """The n (0..20) tokens with the largest log-probability, as (token id, value) pairs.

    Ordered by value descending, ties by token id ascending (the sampling clause's candidate
    order); fewer than n pairs only if the vocabulary is smaller. Values are exact.
    """
    x = np.asarray(logprobs)
    if x.dtype != F32 or x.ndim != 1 or x.size == 0:
        raise ValueError(f"logprobs must be a non-empty 1-D float32 array, got {x.dtype} {x.shape}")
    if isinstance(n, bool) or not isinstance(n, numbers.Integral):
        raise ValueError(f"top_logprobs must be an integer in [0, {MAX_TOP_LOGPROBS}], got {n!r}")
    if not 0 <= n <= MAX_TOP_LOGPROBS:
        raise ValueError(f"top_logprobs must be an integer in [0, {MAX_TOP_LOGPROBS}], got {n}")
    if np.isnan(x).any():
        raise ValueError("logprobs contain NaN")
    if n == 0:
        return []
    return [(int(i), float(x[i])) for i in sorted_candidates(x, n)]
