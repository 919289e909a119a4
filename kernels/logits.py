"""Greedy choice from logits: the lowest token id among the largest values, per row (twin of
`np.argmax` in `reference.sampling.sample_token`, docs/SAMPLING.md step 2). Only exact
operations: `tl.max` of floats and `tl.min` of indices.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

VOCAB_TILE = 1024


@triton.jit
def _argmax_kernel(x_ptr, out_ptr, n_vocab, stride_xr, BLOCK_V: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_V)
    best_value = tl.full([], float("-inf"), tl.float32)
    best_index = tl.full([], 0, tl.int32)
    for v0 in range(0, n_vocab, BLOCK_V):
        is_valid = v0 + offs < n_vocab
        x = tl.load(x_ptr + row * stride_xr + v0 + offs, mask=is_valid, other=float("-inf"))
        tile_max = tl.max(x, axis=0)
        tile_index = tl.min(tl.where(is_valid & (x == tile_max), v0 + offs, n_vocab), axis=0)
        is_better = (tile_max > best_value) | (v0 == 0)  # strictly larger: earlier ids win ties
        best_index = tl.where(is_better, tile_index, best_index)
        best_value = tl.where(is_better, tile_max, best_value)
    tl.store(out_ptr + row, best_index.to(tl.int64))


def argmax(logits: torch.Tensor) -> torch.Tensor:
    """int64 [R]: per row of float32 logits [R, n_vocab] (finite, no NaN), the lowest index
    holding the row's maximum."""
    if logits.dtype != torch.float32 or logits.dim() != 2 or logits.shape[1] == 0:
        raise ValueError(
            f"argmax: need float32 [R, n_vocab], got {logits.dtype} {tuple(logits.shape)}"
        )
    logits = logits.contiguous()
    out = torch.empty(logits.shape[0], dtype=torch.int64, device=logits.device)
    if logits.shape[0]:
        _argmax_kernel[(logits.shape[0],)](
            logits, out, logits.shape[1], logits.stride(0), BLOCK_V=VOCAB_TILE,
            enable_fp_fusion=False,
        )  # fmt: skip
    return out
