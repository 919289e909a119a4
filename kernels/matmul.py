"""Matrix multiplication y = x @ W^T of the contract (docs/PRECISION.md, 5), twin of
`reference.matmul`. Weights stay in their GGUF encoding (`kernels.quants.WeightMatrix`) and
are decoded inside the kernels: `kernels.matmul_quant` for quantised types,
`kernels.matmul_float` for F32/F16/BF16.

Paths: "decode" (M <= DECODE_MAX_ROWS; each program owns BLOCK_N output features for every
row, so each weight byte is read once per call) and "prefill" (tiles [BLOCK_M, BLOCK_N],
integer dots on tensor cores). Both perform the same operations per output element and
give the same bits; neither splits K.
"""

from __future__ import annotations

import torch
import triton

from exactserve.kernels import INTERPRETED
from exactserve.kernels.matmul_float import _float_decode_kernel, _float_prefill_kernel
from exactserve.kernels.matmul_quant import _decode_kernel, _prefill_kernel
from exactserve.kernels.quantize import QuantizedActivations, quantize_activations
from exactserve.kernels.quants import FLOAT_TYPE_SIZES, T, WeightMatrix, quant_layout
from exactserve.reference.quantize import ACT_BLOCK

DECODE_MAX_ROWS = 8
# Static tiles: (prefill BLOCK_M, prefill BLOCK_N, decode BLOCK_N, decode SPAN: weights per
# row decoded per step). Bits never depend on them: integer sums are exact in any blocking
# and the groups' terms are added one at a time in ascending order whatever the span. The
# interpreter prefers few, large programs (its cost is per operation, not per element); a
# decode step holds [rows, BLOCK_N, SPAN] int32 products, capped at MAX_TILE_ELEMENTS.
TILES = (64, 2048, 4096, 256) if INTERPRETED else (64, 64, 64, 32)
MAX_TILE_ELEMENTS = 1 << 20  # Triton's largest tensor
PATHS = ("prefill", "decode")


def check_operands(acts: QuantizedActivations, w: WeightMatrix, bias: torch.Tensor | None):
    m, k = acts.q.shape
    if k != w.n_cols:
        raise ValueError(f"matmul: input has {k} features, weights expect {w.n_cols}")
    if acts.q.dtype != torch.int16 or tuple(acts.exponent.shape) != (m, k // ACT_BLOCK):
        raise ValueError("matmul: activations must come from kernels.quantize.quantize_activations")
    if acts.q.stride(1) != 1 or acts.exponent.stride(1) != 1:
        raise ValueError("matmul: activation rows must be contiguous")
    if bias is not None and (bias.dtype != torch.float32 or tuple(bias.shape) != (w.n_rows,)):
        raise ValueError(
            f"matmul: bias must be float32 [{w.n_rows}], got {bias.dtype} {tuple(bias.shape)}"
        )


def matmul_quantized(
    acts: QuantizedActivations,
    w: WeightMatrix,
    bias: torch.Tensor | None = None,
    path: str | None = None,
) -> torch.Tensor:
    """Contract 5 for activations rounded by 3.1 (`kernels.quantize.quantize_activations`)
    -> float32 [M, N]. `path` forces "prefill" or "decode" (tests); by default decode
    serves M <= DECODE_MAX_ROWS rows."""
    check_operands(acts, w, bias)
    m, k = acts.q.shape
    y = torch.empty((m, w.n_rows), dtype=torch.float32, device=acts.q.device)
    if m == 0:
        return y
    path = path or ("decode" if m <= DECODE_MAX_ROWS else "prefill")
    if path not in PATHS:
        raise ValueError(f"matmul: unknown path {path!r}; use 'prefill' or 'decode'")
    if path == "decode" and m > DECODE_MAX_ROWS:
        raise ValueError(f"matmul: the decode path takes at most {DECODE_MAX_ROWS} rows, got {m}")
    args = (
        acts.q, acts.exponent, w.raw, y if bias is None else bias.contiguous(), y,
        m, w.n_rows, k, acts.q.stride(0), acts.exponent.stride(0), w.raw.stride(0), y.stride(0),
    )  # fmt: skip
    if w.is_float:
        kernels = (_float_prefill_kernel, _float_decode_kernel)
        meta = dict(ELEMENT_BYTES=FLOAT_TYPE_SIZES[w.ggml_type], IS_BF16=w.ggml_type == T.BF16)
    else:
        kernels = (_prefill_kernel, _decode_kernel)
        layout = quant_layout(w.ggml_type)
        meta = dict(
            QTYPE=layout.qtype, BLOCK_SIZE=layout.block_size, TYPE_SIZE=layout.type_size,
            GROUP=layout.group, HAS_OFFSET=layout.has_offset,
        )  # fmt: skip
    meta.update(HAS_BIAS=bias is not None, enable_fp_fusion=False)
    block_m, block_n, decode_n, span = TILES
    n_pad = max(16, triton.next_power_of_2(w.n_rows))  # no tile wider than the matrix
    if path == "decode":
        m_pad = triton.next_power_of_2(m)
        span = min(span, max(32, triton.next_power_of_2(k)))
        decode_n = min(decode_n, n_pad, MAX_TILE_ELEMENTS // (m_pad * span))
        grid = (triton.cdiv(w.n_rows, decode_n),)
        extra = {} if w.is_float else {"SPAN": span}
        kernels[1][grid](*args, M_PAD=m_pad, BLOCK_N=decode_n, **extra, **meta)
    else:
        block_m = min(block_m, max(16, triton.next_power_of_2(m)))
        block_n = min(block_n, n_pad)
        grid = (triton.cdiv(m, block_m), triton.cdiv(w.n_rows, block_n))
        kernels[0][grid](*args, BLOCK_M=block_m, BLOCK_N=block_n, **meta)
    return y


def matmul(
    x: torch.Tensor, w: WeightMatrix, bias: torch.Tensor | None = None, path: str | None = None
) -> torch.Tensor:
    """Contract 5: x float32 [M, K] times W [N, K]^T -> float32 [M, N]."""
    return matmul_quantized(quantize_activations(x), w, bias, path)
