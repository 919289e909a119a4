"""Run one group-loop variant against the reference on random operands (a child process of
runtime/cpu/build.py: an instruction the CPU traps kills this process, not the caller).

    python -m exactserve.runtime.cpu.probe LIBRARY VARIANT    prints "ok" when the bits agree
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from exactserve.reference import matmul as reference
from exactserve.reference.activations import gated as reference_gated
from exactserve.reference.quantize import quantize_activations
from exactserve.reference.quants import IntegerWeights
from exactserve.runtime.cpu.build import Kernel, load_kernel
from exactserve.runtime.cpu.matmul import (
    activations,
    gated,
    matmul_quantized,
    pack,
    quantize,
)


def random_integer_form(rng: np.random.Generator, n: int, k: int, group: int, with_offset: bool):
    """Random weights in integer form with finite, varied scales (and offsets)."""
    q = rng.integers(-128, 128, size=(n, k)).astype(np.int8)
    shape = (n, k // group)
    scale = (rng.standard_normal(shape) * 2.0 ** rng.integers(-12, 4, shape)).astype(np.float32)
    offset = None
    if with_offset:
        offset = (rng.standard_normal(shape) * 2.0 ** rng.integers(-10, 2, shape)).astype(
            np.float32
        )
    return IntegerWeights(q, scale, offset, group)


def awkward_floats(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    """Values over the whole float32 range, with zeros, signed zeros, infinities, NaNs,
    subnormals and exact ties for rounding."""
    x = rng.standard_normal(shape) * 2.0 ** rng.integers(-40, 40, shape)
    x = x.astype(np.float32).reshape(-1)
    n = x.size
    picks = rng.integers(0, n, size=(8, max(1, n // 64)))
    x[picks[0]] = 0.0
    x[picks[1]] = -0.0
    x[picks[2]] = np.inf
    x[picks[3]] = -np.inf
    x[picks[4]] = np.nan
    x[picks[5]] = np.float32(1e-40)  # subnormal
    x[picks[6]] = rng.integers(-200, 200, picks[6].size) + np.float32(0.5)
    x[picks[7]] = rng.uniform(-120, 100, picks[7].size)  # exp's clamps and overflow
    return x.reshape(shape)


def row_op_mismatches(kernel: Kernel, rng: np.random.Generator) -> list[str]:
    """Cases where the kernel's activation rounding or gated activations differ."""
    bad = []
    for m, k in ((1, 32), (3, 640), (7, 96)):
        x = awkward_floats(rng, (m, k))
        x[-1, :32] = rng.standard_normal(32).astype(np.float32)  # a finite block
        if k >= 96:
            x[0, 32:64] = 0.0
            x[0, 64:96] = np.float32(2.0**-110)  # below the contract's floor
        want = activations(quantize_activations(x))
        got = quantize(x, kernel)
        if any(g.tobytes() != w.tobytes() for g, w in zip(got, want, strict=True)):
            bad.append(f"quantize M={m} K={k}")
    for activation in ("silu", "gelu_tanh"):
        gate, up = awkward_floats(rng, (5, 301)), awkward_floats(rng, (5, 301))
        gate[:, :64] = rng.uniform(-30, 30, (5, 64)).astype(np.float32)  # the usual range
        with np.errstate(all="ignore"):
            want = reference_gated(gate, up, activation)
        if gated(gate, up, activation, kernel).tobytes() != want.tobytes():
            bad.append(f"gated {activation}")
    return bad


def mismatches(kernel: Kernel, seed: int = 0) -> list[str]:
    """Cases where the kernel's bits differ from the reference's (empty: all agree)."""
    rng = np.random.default_rng(seed)
    bad = row_op_mismatches(kernel, rng) if kernel.quantize is not None else []
    for m, n, k, group, with_offset in [
        (1, 16, 32, 32, False), (3, 40, 64, 16, True), (5, 33, 96, 32, True),
        (4, 64, 128, 16, False), (9, 48, 64, 32, False), (2, 7, 32, 16, True),
    ]:  # fmt: skip
        iw = random_integer_form(rng, n, k, group, with_offset)
        x = (rng.standard_normal((m, k)) * 2.0 ** rng.integers(-20, 20, (m, 1))).astype(np.float32)
        x[0, :32] = 0.0  # an all-zero block
        acts = quantize_activations(x)
        want = reference.matmul_quantized(
            acts.values, reference.prepare_integer(iw.q, iw.scale, iw.offset, iw.group)
        )
        got = matmul_quantized(activations(acts), pack(iw), kernel)
        if got.tobytes() != want.tobytes():
            bad.append(f"M={m} N={n} K={k} group={group} offset={with_offset}")
    return bad


def main(argv: list[str]) -> int:
    library, variant = Path(argv[0]), argv[1]
    bad = mismatches(load_kernel(library, variant))
    for case in bad:
        print(f"{variant}: bits differ from the reference at {case}")
    print("differs" if bad else "ok")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
