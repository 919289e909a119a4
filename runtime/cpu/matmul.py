"""Contract 5.2 on the CPU with int8 weights: the same bits as reference.matmul, a quarter of
the memory traffic.

The reference keeps quantised weights as integer-valued float32 so that BLAS forms the
exact block sums; decoding is bound by reading them (4 bytes a weight). Here the same
integers stay int8, laid out in panels of 16 output rows (group_loop.c draws the layout),
and a compiled loop forms each group's sum in int32, exactly, then runs the contract's
float epilogue in its order. Any exact integer sum gives the same bits, so the result is
reference.matmul's; tests/runtime/test_cpu_matmul.py checks that on every tensor type and
every variant that runs on the machine.

Float weight types (F32, F16, BF16: 22-bit integers, contract 5.3) stay on the reference's
float64 BLAS path.
"""

from __future__ import annotations

from concurrent.futures import Executor
from typing import NamedTuple

import numpy as np

from exactserve.reference.fp import F32, pow2_f32
from exactserve.reference.quantize import ACT_BLOCK, QuantizedActivations
from exactserve.reference.quants import IntegerWeights
from exactserve.runtime.cpu.build import Kernel

LANES = 16  # output rows per panel (group_loop.c)
# rows * weights below which one thread does it all: handing a call to a pool thread and
# back costs ~0.1 ms in Python, more than a decode step's layer matrices take (~0.03 ms)
PARALLEL_WORK = 1 << 23


class PackedMatrix(NamedTuple):
    """A quantised weight matrix [n_out, n_in] in group_loop.c's panel layout.

    w int8 [n_panels, n_in / 2, 16, 2]; scale, offset float32 [n_panels, n_groups, 16]
    (offset None for types without a min). Rows past n_out (padding to whole panels) are
    zero and their outputs are dropped.
    """

    w: np.ndarray
    scale: np.ndarray
    offset: np.ndarray | None
    group: int
    n_out: int

    @property
    def n_in(self) -> int:
        return self.w.shape[1] * 2

    @property
    def n_panels(self) -> int:
        return self.w.shape[0]


class CpuActivations(NamedTuple):
    """Activations rounded by contract 3.1, in the forms the kernels read: q_a int16 [M, K],
    2^e_a float32 [M, K/32], and `values` (q_a * 2^e_a, float32) for float weights."""

    q: np.ndarray
    pow2e: np.ndarray
    values: np.ndarray


def pack(iw: IntegerWeights) -> PackedMatrix:
    """PackedMatrix of an integer form (q int8 [N, K], scale/offset float32 [N, K/group])."""
    n, k = iw.q.shape
    if iw.group not in (16, 32) or k % ACT_BLOCK:
        raise ValueError(f"unsupported integer form: group {iw.group}, row length {k}")
    n_panels = -(-n // LANES)
    pad = n_panels * LANES - n

    def panels(a: np.ndarray, inner: int) -> np.ndarray:
        a = np.pad(a, ((0, pad), (0, 0))) if pad else a
        return a.reshape(n_panels, LANES, -1, inner).transpose(0, 2, 1, 3)

    w = np.ascontiguousarray(panels(iw.q, 2))
    scale = np.ascontiguousarray(panels(iw.scale.astype(F32), 1)[..., 0])
    offset = None
    if iw.offset is not None:
        offset = np.ascontiguousarray(panels(iw.offset.astype(F32), 1)[..., 0])
    return PackedMatrix(w, scale, offset, iw.group, n)


def unpack_rows(m: PackedMatrix, ids: np.ndarray) -> IntegerWeights:
    """Rows `ids` of a PackedMatrix back in integer form (the embedding lookup of a tied
    table)."""
    ids = np.asarray(ids, dtype=np.int64)
    p, lane = ids // LANES, ids % LANES
    q = m.w[p, :, lane, :].reshape(len(ids), m.n_in)
    offset = None if m.offset is None else m.offset[p, :, lane]
    return IntegerWeights(q, m.scale[p, :, lane], offset, m.group)


def activations(a: QuantizedActivations) -> CpuActivations:
    """The kernels' form of `reference.quantize.quantize_activations`' result (exact)."""
    values, e = a.values, a.exponent
    m, k = values.shape
    q = (values.reshape(m, -1, ACT_BLOCK) * pow2_f32(-e)[..., None]).astype(np.int16)
    return CpuActivations(q.reshape(m, k), pow2_f32(e), values)


def quantize(x: np.ndarray, kernel: Kernel) -> CpuActivations:
    """Contract 3.1 on rows x float32 [M, K] in the compiled loop: the bits of
    `activations(reference.quantize.quantize_activations(x))`."""
    x = np.ascontiguousarray(x, dtype=F32)
    m, k = x.shape
    if k % ACT_BLOCK:
        raise ValueError(f"activation length {k} is not a multiple of {ACT_BLOCK}")
    q = np.empty((m, k), dtype=np.int16)
    pow2e = np.empty((m, k // ACT_BLOCK), dtype=F32)
    values = np.empty((m, k), dtype=F32)
    kernel.quantize(x.ctypes.data, m, k, q.ctypes.data, pow2e.ctypes.data, values.ctypes.data)
    return CpuActivations(q, pow2e, values)


ACTIVATION_CODES = {"silu": 0, "gelu_tanh": 1}  # group_loop.c's es_gated


def gated(gate: np.ndarray, up: np.ndarray, activation: str, kernel: Kernel) -> np.ndarray:
    """Contract 4.5, act(gate) * up, in the compiled loop: reference.activations.gated's
    bits."""
    gate = np.ascontiguousarray(gate, dtype=F32)
    up = np.ascontiguousarray(up, dtype=F32)
    if gate.shape != up.shape:
        raise ValueError(f"gated: gate {gate.shape} and up {up.shape} differ")
    out = np.empty_like(gate)
    code = ACTIVATION_CODES[activation]
    kernel.gated(gate.ctypes.data, up.ctypes.data, out.ctypes.data, gate.size, code)
    return out


def matmul_quantized(
    acts: CpuActivations,
    w: PackedMatrix,
    kernel: Kernel,
    bias: np.ndarray | None = None,
    executor: Executor | None = None,
) -> np.ndarray:
    """Contract 5.2 (and 5.4's bias): float32 [M, n_out]. An `executor` with a `threads`
    count (`runtime.model.threads.TilePool`) shares out the panels; the bits do not depend
    on it."""
    m, k = acts.q.shape
    if k != w.n_in:
        raise ValueError(f"matmul: input has {k} features, weights expect {w.n_in}")
    n_groups = k // w.group
    psum = None
    if w.offset is not None:  # (sum of q_a over each group) * 2^e_a: exact in float32
        sums = acts.q.reshape(m, n_groups, w.group).sum(axis=-1, dtype=np.int32)
        psum = sums.astype(F32) * np.repeat(acts.pow2e, ACT_BLOCK // w.group, axis=1)
    ldy = w.n_panels * LANES
    y = np.empty((m, ldy), dtype=F32)
    q, pow2e = np.ascontiguousarray(acts.q), np.ascontiguousarray(acts.pow2e)

    def run(p0: int, p1: int) -> None:
        kernel.function(
            w.w.ctypes.data, w.scale.ctypes.data, 0 if w.offset is None else w.offset.ctypes.data,
            k, w.group, q.ctypes.data, pow2e.ctypes.data, 0 if psum is None else psum.ctypes.data,
            m, p0, p1, y.ctypes.data, ldy,
        )  # fmt: skip

    threads = getattr(executor, "threads", 1)
    if threads <= 1 or m * w.w.size < PARALLEL_WORK:
        run(0, w.n_panels)
    else:
        step = -(-w.n_panels // threads)
        starts = range(0, w.n_panels, step)
        futures = [executor.submit(run, p0, min(p0 + step, w.n_panels)) for p0 in starts[1:]]
        run(0, min(step, w.n_panels))  # this thread takes the first share itself
        for future in futures:
            future.result()
    out = y if ldy == w.n_out else np.ascontiguousarray(y[:, : w.n_out])
    if bias is not None:
        out += np.asarray(bias, dtype=F32)
    return out
