"""RMSNorm of the contract (docs/PRECISION.md, 6.1), twin of `reference.rmsnorm`.

Per row of length n, padded with +0.0 to the power of two N:
    ss = tree_sum(x_i * x_i); mean = ss / n; r = 1 / sqrt(mean + eps); y_i = (x_i * r) * w_i
with `tl.div_rn`, `tl.sqrt_rn`, and the contract tree (reshape + split, never `tl.sum`).
"""

from __future__ import annotations

import numpy as np
import torch
import triton
import triton.language as tl

from exactserve.kernels.fp import tree_sum

ROW_TILE = 4


@triton.jit
def _rmsnorm_kernel(
    x_ptr, w_ptr, y_ptr, n_rows, n, n_float, eps,
    BLOCK_R: tl.constexpr, LOG2_N: tl.constexpr,
):  # fmt: skip
    N_PAD: tl.constexpr = 1 << LOG2_N
    offs_r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    offs_n = tl.arange(0, N_PAD)
    mask = (offs_r[:, None] < n_rows) & (offs_n[None, :] < n)
    at = offs_r[:, None].to(tl.int64) * n + offs_n[None, :]
    x = tl.load(x_ptr + at, mask=mask, other=0.0)
    w = tl.load(w_ptr + offs_n, mask=offs_n < n, other=0.0)
    ss = tree_sum(x * x, LOG2_N)
    mean = tl.div_rn(ss, n_float)  # n_float = float32(n), exact
    r = tl.div_rn(1.0, tl.sqrt_rn(mean + eps))
    tl.store(y_ptr + at, (x * r[:, None]) * w[None, :], mask=mask)


def rmsnorm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """x float32 [..., n], weight float32 [n], eps as stored (rounded to float32)."""
    n = x.shape[-1]
    if x.dtype != torch.float32 or weight.dtype != torch.float32 or weight.shape != (n,):
        raise ValueError(
            f"rmsnorm: need float32 x [..., n] and weight [n]; got {x.dtype} {tuple(x.shape)}, "
            f"{weight.dtype} {tuple(weight.shape)}"
        )
    x = x.contiguous()
    y = torch.empty_like(x)
    rows = x.numel() // max(n, 1)
    if rows:
        log2_n = max(0, (n - 1).bit_length())
        _rmsnorm_kernel[(triton.cdiv(rows, ROW_TILE),)](
            x, weight.contiguous(), y, rows, n, float(n), float(np.float32(eps)),
            BLOCK_R=ROW_TILE, LOG2_N=log2_n, enable_fp_fusion=False,
        )  # fmt: skip
    return y
