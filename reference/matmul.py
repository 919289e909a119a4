"""Matrix multiplication y = x @ W^T of the contract (docs/PRECISION.md, 5).

Weights arrive in integer form (reference.quants: w = scale[g] * q + offset[g] per group of
16 or 32 along K) or as floats, which `prepare_float` rounds once to 22-bit integers with a
power-of-two scale per 32-group (contract 5.3). Activations are rounded by contract 3.1.
Then, per output element, groups in ascending order:

    isum = sum_k q_w * q_a                        exact integer
    t    = fl(scale * isum * 2^e_a)               one rounding of an exact real
    [u   = fl(offset * psum * 2^e_a); t = fl(t + u)]   (types with an offset)
    acc  = fl(acc + t)                            acc starts at +0.0

The exact parts are computed here with BLAS (np.matmul) on integer-valued float operands
whose partial sums stay below 2^24 (float32) or 2^53 (float64), so BLAS's blocking and FMA
use cannot change them. Nothing depends on the number of rows M: each output row is a
function of its own input row only (batch invariance).
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import NamedTuple

import numpy as np

from exactserve.reference.fp import F32, F64, TINY_F32, exponent_f32, pow2_f32, rint_f32
from exactserve.reference.quantize import ACT_BLOCK, quantize_activations

FLOAT_GROUP = 32  # contract 5.3
FLOAT_BITS = 21  # contract 5.3: |q| <= 2^21
# Tiles of the group loop: bound the [n_groups, rows, cols] temporaries. Any tiling gives the
# same bits (output elements are independent); it only trades cache use against call overhead.
ROW_TILE = 64
COL_TILE = 512
TILE_ELEMENTS = 1 << 18
PARALLEL_TILES = 4  # with an executor: at least this many column tiles when N allows
PARALLEL_WORK = 1 << 24  # rows * weights below which an executor is not used


class PreparedMatrix(NamedTuple):
    """A weight matrix [n_out, n_in] laid out for the group loop.

    q: [n_groups, group, n_out] integer-valued, float32 (quantised types, |q| <= 128) or
    float64 (float types, |q| <= 2^21); scale, offset: [n_groups, n_out], float32 (offset
    None for types without a min; float types: scale holds powers of two as float64).
    """

    q: np.ndarray
    scale: np.ndarray
    offset: np.ndarray | None
    group: int

    @property
    def n_in(self) -> int:
        return self.q.shape[0] * self.group

    @property
    def n_out(self) -> int:
        return self.q.shape[2]


def prepare_integer(q: np.ndarray, scale: np.ndarray, offset: np.ndarray | None, group: int):
    """PreparedMatrix from an integer form (q int8 [N, K], scale/offset float32 [N, K/group])."""
    n, k = q.shape
    if group not in (16, 32) or k % ACT_BLOCK:
        raise ValueError(f"unsupported integer form: group {group}, row length {k}")
    n_groups = k // group
    q3 = np.empty((n_groups, group, n), dtype=F32)
    for start in range(0, n, 256):  # transpose in cache-sized slices: 7x faster than at once
        q3[:, :, start : start + 256] = q[start : start + 256].T.reshape(n_groups, group, -1)
    scale_t = np.ascontiguousarray(scale.T, dtype=F32)
    offset_t = None if offset is None else np.ascontiguousarray(offset.T, dtype=F32)
    return PreparedMatrix(q3, scale_t, offset_t, group)


def float_integer_form(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Contract 5.3: float weights [N, K] -> (q float64 [N, K], scale float64 [N, K/32]).

    Per 32-group: e = floor(log2(max |w|)) - 20, q = rint(w * 2^-e), scale = 2^e; groups
    with max |w| < 2^-100 become zero. F16 and BF16 groups are exact unless their exponents
    span more than 10 (F16) or 13 (BF16) binades.
    """
    w = np.asarray(w, dtype=F32)
    n, k = w.shape
    groups = w.reshape(n, k // FLOAT_GROUP, FLOAT_GROUP)
    amax = np.abs(groups).max(axis=-1)
    is_zero = ~(amax >= TINY_F32)
    e = np.where(is_zero, np.int32(0), exponent_f32(amax) - np.int32(FLOAT_BITS - 1))
    q = rint_f32(groups * pow2_f32(-e)[..., None])
    q = np.where(is_zero[..., None], F32(0), q)
    return q.reshape(n, k).astype(F64), pow2_f32(e).astype(F64)


def prepare_float(w: np.ndarray) -> PreparedMatrix:
    """PreparedMatrix of float32 weights [N, K] (from F32, F16 or BF16 tensors)."""
    n, k = w.shape
    if k % FLOAT_GROUP:
        raise ValueError(f"row length {k} is not a multiple of {FLOAT_GROUP}")
    q, scale = float_integer_form(w)
    n_groups = k // FLOAT_GROUP
    q3 = np.ascontiguousarray(q.reshape(n, n_groups, FLOAT_GROUP).transpose(1, 2, 0))
    return PreparedMatrix(q3, np.ascontiguousarray(scale.T), None, FLOAT_GROUP)


def matmul(
    x: np.ndarray,
    w: PreparedMatrix,
    bias: np.ndarray | None = None,
    executor: Executor | None = None,
) -> np.ndarray:
    """Contract 5: x float32 [M, K] times prepared W [N, K]^T -> float32 [M, N].

    `bias` (float32 [N]) is added last, one fp32 addition (contract 5.4). An `executor`
    (e.g. a thread pool; NumPy and BLAS release the GIL) runs column tiles concurrently; the
    bits do not depend on it.
    """
    x = np.asarray(x, dtype=F32)
    if x.shape[-1] != w.n_in:
        raise ValueError(f"matmul: input has {x.shape[-1]} features, weights expect {w.n_in}")
    return matmul_quantized(quantize_activations(x).values, w, bias, executor)


def matmul_quantized(
    acts: np.ndarray,
    w: PreparedMatrix,
    bias: np.ndarray | None = None,
    executor: Executor | None = None,
) -> np.ndarray:
    """`matmul` for activations already rounded by contract 3.1 (`values` of
    `quantize_activations`), so one rounding serves several matrices (Q, K, V; gate, up)."""
    m, k = acts.shape
    if k != w.n_in:
        raise ValueError(f"matmul: input has {k} features, weights expect {w.n_in}")
    n, n_groups, group = w.n_out, w.q.shape[0], w.group
    exact_dtype = w.q.dtype  # float32: |isum| < 2^23; float64: |isum| < 2^37
    out = np.empty((m, n), dtype=F32)
    rows = min(m, ROW_TILE)
    cols = max(COL_TILE, TILE_ELEMENTS // (rows * n_groups))
    if executor is not None and m * w.q.size < PARALLEL_WORK:
        executor = None  # too little work to pay for handing tiles to threads
    if executor is not None:  # enough column tiles to share out, even for one row
        cols = min(cols, max(COL_TILE // 4, -(-n // PARALLEL_TILES)))

    def run(r0: int, c0: int, grouped: np.ndarray, psums: np.ndarray | None) -> None:
        out[r0 : r0 + rows, c0 : c0 + cols] = _group_loop(grouped, psums, w, c0, cols)

    futures = []
    for r0 in range(0, m, rows):
        tile = acts[r0 : r0 + rows]
        grouped = tile.reshape(len(tile), n_groups, group).transpose(1, 0, 2).astype(exact_dtype)
        psums = None
        if w.offset is not None:
            # psum * 2^e_a per (group, row): exact (|psum| <= 2^16), so BLAS may sum it.
            psums = np.matmul(grouped, np.ones((group, 1), dtype=exact_dtype))
        for c0 in range(0, n, cols):
            if executor is None:
                run(r0, c0, grouped, psums)
            else:
                futures.append(executor.submit(run, r0, c0, grouped, psums))
    for future in futures:
        future.result()
    if bias is not None:
        out += np.asarray(bias, dtype=F32)
    return out


def _group_loop(
    grouped: np.ndarray, psums: np.ndarray | None, w: PreparedMatrix, c0: int, cols: int
) -> np.ndarray:
    """Contract 5.2 for rows `grouped` [n_groups, Mt, group] (values q_a * 2^e_a) and output
    columns [c0, c0 + cols): float32 [Mt, cols]."""
    q, scale = w.q[:, :, c0 : c0 + cols], w.scale[:, c0 : c0 + cols]
    terms = np.matmul(grouped, q)  # [n_groups, Mt, cols] = isum * 2^e_a, exact
    if terms.dtype == F32:
        terms *= scale[:, None, :]  # one rounding each
    else:
        terms = (terms * scale[:, None, :]).astype(F32)  # exact product, then one rounding
    if psums is not None:
        terms += psums * w.offset[:, None, c0 : c0 + cols]  # u rounded, then t + u rounded
    acc = np.zeros(terms.shape[1:], dtype=F32)
    for term in terms:  # ascending groups, one rounded addition each
        acc += term
    return acc
