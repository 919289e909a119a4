"""Transcendentals and gated activations of the contract (docs/PRECISION.md, 4), twin of
`reference.activations`: the same fixed sequence of fp32 operations (no FMA: kernels run
with `enable_fp_fusion=False`; divisions by `tl.div_rn`), never `tl.exp` or `tl.math`.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from exactserve.kernels.fp import neg_f32, pow2_f32, rint_f32
from exactserve.reference import activations as ref

EXP_LO = tl.constexpr(float(ref.EXP_LO))
EXP_HI = tl.constexpr(float(ref.EXP_HI))
LOG2E = tl.constexpr(float(ref.LOG2E))
LN2_HI = tl.constexpr(float(ref.LN2_HI))
LN2_LO = tl.constexpr(float(ref.LN2_LO))
P0, P1, P2, P3, P4, P5 = (tl.constexpr(float(c)) for c in ref.EXP_POLY)
GELU_COEF_A = tl.constexpr(float(ref.GELU_COEF_A))
SQRT_2_OVER_PI = tl.constexpr(float(ref.SQRT_2_OVER_PI))

UNARY = ("exp", "tanh", "silu", "gelu_tanh")
ACTIVATION_IDS = {"silu": 0, "gelu_tanh": 1}
TILE = 1024


@triton.jit
def exp(x):
    """Contract exp (4.1): clamp, Cody-Waite reduction, degree-7 polynomial, 2^k scaling."""
    x = tl.where(x < EXP_LO, EXP_LO, x)
    x = tl.where(x > EXP_HI, EXP_HI, x)
    k = rint_f32(x * LOG2E)
    r = x - k * LN2_HI
    r = r - k * LN2_LO
    p = P0 * r + P1
    p = p * r + P2
    p = p * r + P3
    p = p * r + P4
    p = p * r + P5
    p = (p * (r * r) + r) + 1.0
    ki = k.to(tl.int32)
    k1 = ki >> 1  # floor(k / 2): 2^k = 2^k1 * 2^(k - k1), both factors normal
    return (p * pow2_f32(k1)) * pow2_f32(ki - k1)


@triton.jit
def tanh(x):
    """Contract tanh (4.2): e = exp(-2|x|); sign(x) * (1 - e) / (1 + e)."""
    e = exp(-2.0 * tl.abs(x))
    t = tl.div_rn(1.0 - e, 1.0 + e)
    return tl.where(x < 0, neg_f32(t), t)


@triton.jit
def silu(x):
    """Contract SiLU (4.3): x / (1 + exp(-x))."""
    return tl.div_rn(x, 1.0 + exp(neg_f32(x)))


@triton.jit
def gelu_tanh(x):
    """Contract GELU (4.4): v = 1 + (A x) x; y = (S x) v; x / (1 + exp(-2 y))."""
    v = 1.0 + (GELU_COEF_A * x) * x
    y = (SQRT_2_OVER_PI * x) * v
    return tl.div_rn(x, 1.0 + exp(-2.0 * y))


@triton.jit
def softcap(x, cap):
    """Contract 4.6: cap * tanh(x / cap)."""
    return cap * tanh(tl.div_rn(x, cap))


@triton.jit
def _unary_kernel(x_ptr, y_ptr, n, FN: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    if FN == 0:
        y = exp(x)
    elif FN == 1:
        y = tanh(x)
    elif FN == 2:
        y = silu(x)
    else:
        y = gelu_tanh(x)
    tl.store(y_ptr + offs, y, mask=offs < n)


def unary(x: torch.Tensor, name: str) -> torch.Tensor:
    """Elementwise contract function `name` (exp, tanh, silu, gelu_tanh) of float32 x."""
    if name not in UNARY:
        raise ValueError(f"unknown function {name!r}; known: {', '.join(UNARY)}")
    x = _flat_f32(x)
    y = torch.empty_like(x)
    n = x.numel()
    if n:
        _unary_kernel[(triton.cdiv(n, TILE),)](
            x, y, n, FN=UNARY.index(name), BLOCK=TILE, enable_fp_fusion=False
        )
    return y


@triton.jit
def _gated_kernel(g_ptr, u_ptr, y_ptr, n, ACTIVATION: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    gate = tl.load(g_ptr + offs, mask=offs < n, other=0.0)
    up = tl.load(u_ptr + offs, mask=offs < n, other=0.0)
    if ACTIVATION == 0:
        act = silu(gate)
    else:
        act = gelu_tanh(gate)
    tl.store(y_ptr + offs, act * up, mask=offs < n)


def gated(gate: torch.Tensor, up: torch.Tensor, activation: str) -> torch.Tensor:
    """Contract 4.5: act(gate) * up (one multiply); activation "silu" or "gelu_tanh"."""
    if activation not in ACTIVATION_IDS:
        raise ValueError(f"unknown activation {activation!r}; known: silu, gelu_tanh")
    if gate.shape != up.shape:
        raise ValueError(f"gated: gate {tuple(gate.shape)} and up {tuple(up.shape)} differ")
    g, u = _flat_f32(gate), _flat_f32(up)
    y = torch.empty_like(g)
    n = g.numel()
    if n:
        _gated_kernel[(triton.cdiv(n, TILE),)](
            g, u, y, n, ACTIVATION=ACTIVATION_IDS[activation], BLOCK=TILE, enable_fp_fusion=False
        )
    return y.reshape(gate.shape)


@triton.jit
def _softcap_kernel(x_ptr, y_ptr, n, cap, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    x = tl.load(x_ptr + offs, mask=offs < n, other=0.0)
    tl.store(y_ptr + offs, softcap(x, cap), mask=offs < n)


def softcap_values(x: torch.Tensor, cap: float) -> torch.Tensor:
    """Contract 4.6 elementwise, with the cap rounded to float32 (twin of
    `reference.activations.softcap`)."""
    flat = _flat_f32(x)
    y = torch.empty_like(flat)
    n = flat.numel()
    if n:
        _softcap_kernel[(triton.cdiv(n, TILE),)](
            flat, y, n, float(torch.tensor(cap, dtype=torch.float32)), BLOCK=TILE,
            enable_fp_fusion=False,
        )  # fmt: skip
    return y.reshape(x.shape)


def _flat_f32(x: torch.Tensor) -> torch.Tensor:
    if x.dtype != torch.float32:
        raise ValueError(f"expected float32, got {x.dtype}")
    return x.contiguous().reshape(-1)
