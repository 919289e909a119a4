"""Rotary position embeddings of the contract (docs/PRECISION.md, 6.2), twin of
`reference.rope.apply_rope`. The cos/sin tables are data computed on the host by
`reference.rope.rope_table`; this kernel only rotates:
    y0 = x0 * c - x1 * s,  y1 = x0 * s + x1 * c   (four rounded products, two rounded adds)
Pairs: (2i, 2i + 1) in the normal layout, (i, i + n_rot / 2) in NeoX; dims >= n_rot pass.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from exactserve.reference.rope import NEOX, NORMAL

ROW_TILE = 16


@triton.jit
def _rope_kernel(
    x_ptr, cos_ptr, sin_ptr, y_ptr, n_rows, n_heads, head_dim, half,
    IS_NEOX: tl.constexpr, BLOCK_R: tl.constexpr, BLOCK_D: tl.constexpr,
):  # fmt: skip
    # rows r = t * n_heads + h of x [T, H, D]; table row t
    offs_r = tl.program_id(0) * BLOCK_R + tl.arange(0, BLOCK_R)
    offs_d = tl.arange(0, BLOCK_D)[None, :]
    rows = tl.minimum(offs_r, n_rows - 1)[:, None].to(tl.int64)
    t = rows // n_heads
    n_rot = 2 * half
    is_rotated = offs_d < n_rot
    if IS_NEOX:
        is_first = offs_d < half
        i = offs_d % half
        partner = tl.where(is_first, offs_d + half, offs_d - half)
    else:
        is_first = offs_d % 2 == 0
        i = offs_d // 2
        partner = offs_d ^ 1
    i = tl.where(is_rotated, i, 0)
    partner = tl.where(is_rotated, partner, offs_d)
    in_row = offs_d < head_dim
    x = tl.load(x_ptr + rows * head_dim + offs_d, mask=in_row, other=0.0)
    xp = tl.load(x_ptr + rows * head_dim + partner, mask=in_row, other=0.0)
    c = tl.load(cos_ptr + t * half + i)
    s = tl.load(sin_ptr + t * half + i)
    y0 = x * c - xp * s  # this element is x0 of its pair
    y1 = xp * s + x * c  # this element is x1: x0 * s + x1 * c
    y = tl.where(is_rotated, tl.where(is_first, y0, y1), x)
    mask = (offs_r[:, None] < n_rows) & in_row
    tl.store(y_ptr + rows * head_dim + offs_d, y, mask=mask)


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor, layout: str) -> torch.Tensor:
    """Rotate x float32 [T, H, D] by the tables cos, sin float32 [T, n_rot / 2]."""
    if layout not in (NORMAL, NEOX):
        raise ValueError(f"unknown rope layout {layout!r}")
    t, h, d = x.shape
    half = cos.shape[-1]
    if cos.shape != (t, half) or sin.shape != (t, half) or 2 * half > d:
        raise ValueError(f"rope: tables {tuple(cos.shape)} do not fit x {tuple(x.shape)}")
    if x.dtype != torch.float32 or cos.dtype != torch.float32 or sin.dtype != torch.float32:
        raise ValueError("rope: x and the tables must be float32")
    x = x.contiguous()
    y = torch.empty_like(x)
    if x.numel():
        _rope_kernel[(triton.cdiv(t * h, ROW_TILE),)](
            x, cos.contiguous(), sin.contiguous(), y, t * h, h, d, half,
            IS_NEOX=layout == NEOX, BLOCK_R=ROW_TILE, BLOCK_D=triton.next_power_of_2(d),
            enable_fp_fusion=False,
        )  # fmt: skip
    return y
