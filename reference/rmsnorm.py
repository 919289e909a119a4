"""RMSNorm of the contract (docs/PRECISION.md, 6.1).

Over the last axis of length n, per row:

    ss   = tree_sum(x_i * x_i)          products rounded, contract tree (2.3)
    mean = ss / n                       correctly rounded division by float32(n)
    r    = 1 / sqrt(mean + eps)         add, correctly rounded sqrt, correctly rounded division
    y_i  = (x_i * r) * w_i              two fp32 multiplies

Gemma's "1 + w" is already folded into the stored weights by the GGUF converter, so every
architecture multiplies by the stored weight as is.
"""

from __future__ import annotations

import numpy as np

from exactserve.reference.fp import F32, tree_sum

ONE = F32(1.0)


def rmsnorm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """x float32 [..., n], weight float32 [n], eps as stored (a float32 value)."""
    x = np.asarray(x, dtype=F32)
    n = x.shape[-1]
    ss = tree_sum(x * x)
    mean = ss / F32(n)
    r = ONE / np.sqrt(mean + F32(eps))
    return (x * r[..., None]) * np.asarray(weight, dtype=F32)
