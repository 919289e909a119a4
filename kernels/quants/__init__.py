"""Quantised and float GGUF matrices on the device, decoded inside the kernels.

Twin of `reference.quants`: `to_integer_form` and `dequantize` give the same bits as the
reference's functions of the same names, from the same raw bytes. The device decoders
(`kernels.quants.unpack`) are shared with the matmul and embedding kernels, which never
materialise the integer form.

A matrix stays as stored: `WeightMatrix.raw` is torch.uint8 [n_rows, row_bytes], row r the
n_cols contiguous weights of output r (ggml order: shape (n_cols, n_rows)).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import torch
import triton
import triton.language as tl
from gguf import GGMLQuantizationType

from exactserve.kernels.device import default_device
from exactserve.kernels.fp import load_float
from exactserve.kernels.quants.unpack import unpack_group, unpack_q
from exactserve.reference.quants import (
    FLOAT_TYPE_SIZES,
    QUANT_UNITS,
    block_geometry,
    supported_type_names,
)

T = GGMLQuantizationType

# Types whose integer form has an offset (a "min"): w = scale * q + offset.
OFFSET_TYPES = frozenset({T.Q4_1, T.Q5_1, T.Q2_K, T.Q4_K, T.Q5_K})
# Byte offsets of each block's fp16 fields (ggml-common.h): d, then dmin (or Q4_1/Q5_1's m).
FP16_FIELDS = {
    T.Q4_0: (0,), T.Q4_1: (0, 2), T.Q5_0: (0,), T.Q5_1: (0, 2), T.Q8_0: (0,),
    T.Q2_K: (80, 82), T.Q3_K: (108,), T.Q4_K: (0, 2), T.Q5_K: (0, 2), T.Q6_K: (208,),
    T.IQ4_NL: (0,), T.IQ4_XS: (0,),
}  # fmt: skip
ROW_TILE = 16  # rows per program of the decode kernels (any value gives the same bits)
FLOAT_COL_TILE = 128


class WeightMatrix(NamedTuple):
    """A [n_rows, n_cols] matrix in its GGUF encoding, on the device.

    raw: torch.uint8 [n_rows, row_bytes], rows contiguous; ggml_type: its ggml type.
    """

    raw: torch.Tensor
    ggml_type: GGMLQuantizationType
    n_rows: int
    n_cols: int

    @property
    def is_float(self) -> bool:
        return self.ggml_type in FLOAT_TYPE_SIZES


class QuantLayout(NamedTuple):
    """Compile-time geometry of a quantised type, as the kernels take it."""

    qtype: int
    block_size: int
    type_size: int
    group: int
    has_offset: bool


def quant_layout(ggml_type: GGMLQuantizationType | int) -> QuantLayout:
    qtype = T(int(ggml_type))
    unit = QUANT_UNITS.get(qtype)
    if unit is None:
        raise ValueError(
            f"{qtype.name} is not a quantised type; quantised: {supported_type_names()}"
        )
    return QuantLayout(
        int(qtype), unit.block_size, unit.type_size, unit.group, qtype in OFFSET_TYPES
    )


def weight_matrix(
    raw: np.ndarray | torch.Tensor,
    ggml_type: GGMLQuantizationType | int,
    n_rows: int,
    n_cols: int,
    device: torch.device | str | None = None,
) -> WeightMatrix:
    """Wrap raw GGUF bytes (a NumPy uint8 view of the file, or a uint8 tensor) as a
    WeightMatrix on `device` (default: the kernels' device). The bytes are copied once."""
    qtype = T(int(ggml_type))
    block_size, type_size = block_geometry(qtype)
    if n_cols % block_size:
        raise ValueError(f"row length {n_cols} is not a multiple of the {qtype.name} block size")
    row_bytes = n_cols // block_size * type_size
    if isinstance(raw, np.ndarray):
        raw = torch.from_numpy(np.ascontiguousarray(raw).reshape(-1).copy())
    if raw.dtype != torch.uint8 or raw.numel() != n_rows * row_bytes:
        raise ValueError(
            f"{qtype.name} matrix [{n_rows}, {n_cols}] needs {n_rows * row_bytes} uint8 bytes, "
            f"got {raw.numel()} of {raw.dtype}"
        )
    target = default_device() if device is None else torch.device(device)
    raw = raw.reshape(n_rows, row_bytes).to(target).contiguous()
    return WeightMatrix(raw, qtype, n_rows, n_cols)


@triton.jit
def _integer_form_kernel(
    w_ptr, q_ptr, scale_ptr, offset_ptr,
    n_rows, stride_wr, stride_qr, stride_sr,
    QTYPE: tl.constexpr, BLOCK_SIZE: tl.constexpr, TYPE_SIZE: tl.constexpr,
    GROUP: tl.constexpr, HAS_OFFSET: tl.constexpr, BLOCK_R: tl.constexpr,
):  # fmt: skip
    # program (pid_r, pid_b): rows [pid_r * BLOCK_R, +BLOCK_R), quant block pid_b of each row
    pid_r = tl.program_id(0)
    pid_b = tl.program_id(1)
    N_GROUPS: tl.constexpr = BLOCK_SIZE // GROUP
    offs_r = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    rows = tl.minimum(offs_r, n_rows - 1).to(tl.int64)  # clamped: loads stay in bounds
    blk = w_ptr + rows[:, None] * stride_wr + pid_b * TYPE_SIZE  # [BLOCK_R, 1]
    offs_e = tl.arange(0, BLOCK_SIZE)
    offs_g = tl.arange(0, N_GROUPS)
    q = unpack_q(QTYPE, blk, offs_e[None, :])
    scale, offset = unpack_group(QTYPE, blk, offs_g[None, :])
    is_row = offs_r[:, None] < n_rows
    cols = pid_b * BLOCK_SIZE + offs_e[None, :]
    tl.store(q_ptr + offs_r[:, None].to(tl.int64) * stride_qr + cols, q.to(tl.int8), mask=is_row)
    groups = offs_r[:, None].to(tl.int64) * stride_sr + pid_b * N_GROUPS + offs_g[None, :]
    tl.store(scale_ptr + groups, scale, mask=is_row)
    if HAS_OFFSET:
        tl.store(offset_ptr + groups, offset, mask=is_row)


class IntegerWeights(NamedTuple):
    """Twin of `reference.quants.IntegerWeights`, as torch tensors (q int8, scale/offset
    float32 [n_rows, n_cols // group], offset None for types without a min)."""

    q: torch.Tensor
    scale: torch.Tensor
    offset: torch.Tensor | None
    group: int


def to_integer_form(w: WeightMatrix) -> IntegerWeights:
    """The exact integer form of a quantised matrix (twin of `reference.quants.to_integer_form`)."""
    layout = quant_layout(w.ggml_type)
    n_groups = w.n_cols // layout.group
    dev = w.raw.device
    q = torch.empty((w.n_rows, w.n_cols), dtype=torch.int8, device=dev)
    scale = torch.empty((w.n_rows, n_groups), dtype=torch.float32, device=dev)
    offset = torch.empty_like(scale) if layout.has_offset else scale
    grid = (triton.cdiv(w.n_rows, ROW_TILE), w.n_cols // layout.block_size)
    _integer_form_kernel[grid](
        w.raw, q, scale, offset,
        w.n_rows, w.raw.stride(0), q.stride(0), scale.stride(0),
        QTYPE=layout.qtype, BLOCK_SIZE=layout.block_size, TYPE_SIZE=layout.type_size,
        GROUP=layout.group, HAS_OFFSET=layout.has_offset, BLOCK_R=ROW_TILE,
        enable_fp_fusion=False,
    )  # fmt: skip
    return IntegerWeights(q, scale, offset if layout.has_offset else None, layout.group)


@triton.jit
def _quant_rows_kernel(
    w_ptr, ids_ptr, out_ptr, n_out_rows, stride_wr, stride_or, out_scale,
    QTYPE: tl.constexpr, BLOCK_SIZE: tl.constexpr, TYPE_SIZE: tl.constexpr,
    GROUP: tl.constexpr, HAS_OFFSET: tl.constexpr, HAS_SCALE: tl.constexpr,
    BLOCK_R: tl.constexpr,
):  # fmt: skip
    # out[i, :] = dequantised row ids[i] of w: fl(scale * q + offset) (exact product, one
    # rounded add), then [* out_scale] (one rounded multiply; contract 6.3)
    pid_r = tl.program_id(0)
    pid_b = tl.program_id(1)
    offs_r = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    rows = tl.load(ids_ptr + tl.minimum(offs_r, n_out_rows - 1))
    blk = w_ptr + rows[:, None].to(tl.int64) * stride_wr + pid_b * TYPE_SIZE
    offs_e = tl.arange(0, BLOCK_SIZE)[None, :]
    q = unpack_q(QTYPE, blk, offs_e)
    scale, offset = unpack_group(QTYPE, blk, offs_e // GROUP)
    value = scale * q.to(tl.float32)
    if HAS_OFFSET:
        value = value + offset
    if HAS_SCALE:
        value = value * out_scale
    out = out_ptr + offs_r[:, None].to(tl.int64) * stride_or + pid_b * BLOCK_SIZE + offs_e
    tl.store(out, value, mask=offs_r[:, None] < n_out_rows)


@triton.jit
def _float_rows_kernel(
    w_ptr, ids_ptr, out_ptr, n_out_rows, n_cols, stride_wr, stride_or, out_scale,
    ELEMENT_BYTES: tl.constexpr, IS_BF16: tl.constexpr, HAS_SCALE: tl.constexpr,
    BLOCK_R: tl.constexpr, BLOCK_C: tl.constexpr,
):  # fmt: skip
    # F32 / F16 / BF16 little-endian elements widened exactly to float32, [* out_scale]
    pid_r = tl.program_id(0)
    pid_c = tl.program_id(1)
    offs_r = pid_r * BLOCK_R + tl.arange(0, BLOCK_R)
    offs_c = pid_c * BLOCK_C + tl.arange(0, BLOCK_C)
    cols = tl.minimum(offs_c, n_cols - 1)[None, :]
    rows = tl.load(ids_ptr + tl.minimum(offs_r, n_out_rows - 1))
    at = w_ptr + rows[:, None].to(tl.int64) * stride_wr + cols * ELEMENT_BYTES
    value = load_float(at, ELEMENT_BYTES, IS_BF16)
    if HAS_SCALE:
        value = value * out_scale
    out = out_ptr + offs_r[:, None].to(tl.int64) * stride_or + offs_c[None, :]
    tl.store(out, value, mask=(offs_r[:, None] < n_out_rows) & (offs_c[None, :] < n_cols))


def dequantize_rows(
    w: WeightMatrix, ids: torch.Tensor, out_scale: float | None = None
) -> torch.Tensor:
    """float32 [len(ids), n_cols]: rows `ids` (int64) of w dequantised as ggml does, each
    element then multiplied once by float32 `out_scale` if given."""
    ids = ids.to(device=w.raw.device, dtype=torch.int64).contiguous()
    n = ids.numel()
    out = torch.empty((n, w.n_cols), dtype=torch.float32, device=w.raw.device)
    if n == 0:
        return out
    scale = float(np.float32(1.0 if out_scale is None else out_scale))
    if w.is_float:
        grid = (triton.cdiv(n, ROW_TILE), triton.cdiv(w.n_cols, FLOAT_COL_TILE))
        _float_rows_kernel[grid](
            w.raw, ids, out, n, w.n_cols, w.raw.stride(0), out.stride(0), scale,
            ELEMENT_BYTES=FLOAT_TYPE_SIZES[w.ggml_type], IS_BF16=w.ggml_type == T.BF16,
            HAS_SCALE=out_scale is not None, BLOCK_R=ROW_TILE, BLOCK_C=FLOAT_COL_TILE,
            enable_fp_fusion=False,
        )  # fmt: skip
        return out
    layout = quant_layout(w.ggml_type)
    grid = (triton.cdiv(n, ROW_TILE), w.n_cols // layout.block_size)
    _quant_rows_kernel[grid](
        w.raw, ids, out, n, w.raw.stride(0), out.stride(0), scale,
        QTYPE=layout.qtype, BLOCK_SIZE=layout.block_size, TYPE_SIZE=layout.type_size,
        GROUP=layout.group, HAS_OFFSET=layout.has_offset, HAS_SCALE=out_scale is not None,
        BLOCK_R=ROW_TILE, enable_fp_fusion=False,
    )  # fmt: skip
    return out


def dequantize(w: WeightMatrix) -> torch.Tensor:
    """float32 [n_rows, n_cols]: every weight as ggml's dequantisation rounds it (twin of
    `reference.quants.dequantize`)."""
    ids = torch.arange(w.n_rows, dtype=torch.int64, device=w.raw.device)
    return dequantize_rows(w, ids)
